#!/usr/bin/env bash
# Where a forwarded packet's time goes in the real loop, stage by stage: the
# throughput recipe (deploy/bench/throughput.sh: net_pcap replay -> one
# worker -> net_null) run with stage-cutoff builds of fwd beside the real one.
# A cutoff build (FWD_FAST_CUTOFF at compile time, see worker/fast.rs) sends
# what passed the fast path's stages before the cutoff out unchanged:
#
#   rx        every packet as received (the loop, the PMDs, the TX path)
#   parse     + recognising the plain frames
#   classify  + the rule classification (only with LOADED=1)
#   lookup    + the route lookups
#   fwd       the real build: + next hop, checks, rewrite, counting
#
# The difference between neighbouring rows is that stage's cost in
# nanoseconds a packet. testpmd io on the same ports and lcores is the floor. Builds go
# rotated, ROUNDS rounds, 13 s runs, the last two 4 s intervals of each kept;
# medians -> bench-results/stages.md (stages_loaded.md with LOADED=1).
#
#   deploy/bench/stages.sh [ROUNDS]    (default 3)
#
# LOADED=1: with the full IPv4 view of $FWD_DATA and ClassBench acl1_10k
# loaded, as throughput.sh's LOADED=1. FAMILY=6: throughput.sh's IPv6 recipe
# (1000 /64 routes; not with LOADED=1) -> bench-results/stages_v6.md. The
# cutoff builds share one target directory, target/stages (the first run
# builds its dependencies).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
need_root
ROUNDS="${1:-3}"
LOADED="${LOADED:-0}"
replay_family
OUT="$ROOT/bench-results/stages.md"
[ "$FAMILY" = 6 ] && OUT="$ROOT/bench-results/stages_v6.md"
cuts="rx parse lookup"
if [ "$LOADED" = 1 ]; then
    find_corpora || { echo "$0: LOADED=1 needs the corpora: $corpora_missing" >&2; exit 1; }
    ACL_SET="$FWD_DATA/classbench/lyxocs/acl1_10k"
    OUT="$ROOT/bench-results/stages_loaded.md"
    cuts="rx parse classify lookup"
fi

setup_host --hugepages 512
build_release
WORK="$(mktemp -d /tmp/fwd-stages.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
for c in $cuts; do
    (cd "$ROOT" && FWD_FAST_CUTOFF="$c" CARGO_TARGET_DIR="$ROOT/target/stages" \
        cargo build --release -p fwd --bin fwd)
    cp "$ROOT/target/stages/release/fwd" "$WORK/fwd-$c"
done
cp "$REL/fwd" "$WORK/fwd-fwd"

write_replay_recipe "$WORK" 1000
batch=""
if [ "$LOADED" = 1 ]; then
    echo "control: {socket: $WORK/fwd.sock, cpu: 0}" >> "$WORK/fwd.yaml"
    write_loaded_batch "$WORK/tables.batch" "$ACL_SET"
    batch="$WORK/tables.batch"
fi

rows="io $cuts fwd"
read -r -a order <<< "$rows"
n=${#order[@]}
declare -A got
for ((k = 0; k < ROUNDS; k++)); do
    # Rotated, so that each build runs early and late in a round.
    for ((j = 0; j < n; j++)); do
        r=${order[$(((j + k) % n))]}
        if [ "$r" = io ]; then
            got[$r]="${got[$r]:-} $(run_testpmd io "$WORK/flows.pcap" 13 4 "$WORK/io.out" | tr '\n' ' ')"
        else
            got[$r]="${got[$r]:-} $(run_replay "$WORK/fwd-$r" "$WORK/fwd.yaml" "$WORK/run" 13 4 \
                "$batch" "$WORK/fwd.sock" | tr '\n' ' ')"
        fi
    done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else printf "%.3f\n", (v[NR/2]+v[NR/2+1])/2}'; }
label() {
    case "$1" in
        io) echo "dpdk-testpmd io (the floor)" ;;
        rx) echo "fwd, cut after the receive" ;;
        parse) echo "fwd, cut after recognition" ;;
        classify) echo "fwd, cut after the classification" ;;
        lookup) echo "fwd, cut after the route lookup" ;;
        fwd) echo "fwd (the real build)" ;;
    esac
}
{
    if [ "$LOADED" = 1 ]; then
        echo "# Stage costs in the loop: IPv4 forwarding with the full view and a 10k ACL"
    elif [ "$FAMILY" = 6 ]; then
        echo "# Stage costs in the loop: plain IPv6 forwarding"
    else
        echo "# Stage costs in the loop: plain IPv4 forwarding"
    fi
    echo
    if [ "$LOADED" = 1 ]; then
        echo "- command: \`FWD_DATA=<corpora> LOADED=1 deploy/bench/stages.sh $ROUNDS\`"
    elif [ "$FAMILY" = 6 ]; then
        echo "- command: \`FAMILY=6 deploy/bench/stages.sh $ROUNDS\`"
    else
        echo "- command: \`deploy/bench/stages.sh $ROUNDS\`"
    fi
    echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(commit_id)"
    echo "- machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; DPDK $(dpdk_version)"
    if [ "$FAMILY" = 6 ]; then
        echo "- recipe: throughput.sh's FAMILY=6 (net_pcap replay of 4096 64-byte UDP/IPv6 flows"
        echo "  to 1000 /64 routes -> one worker -> net_null); $ROUNDS rotated rounds of 13 s runs, the last"
    else
        echo "- recipe: throughput.sh's (net_pcap replay of 4096 64-byte UDP flows to 1000 /24"
        echo "  routes -> one worker -> net_null); $ROUNDS rotated rounds of 13 s runs, the last"
    fi
    echo "  two 4 s intervals of each"
    echo
    echo "| build | Mpps samples | median Mpps | ns/packet | this stage, ns/packet |"
    echo "|---|---|---|---|---|"
    prev=""
    for r in $rows; do
        m=$(echo "${got[$r]}" | median)
        ns=$(awk -v m="$m" 'BEGIN {if (m > 0) printf "%.1f", 1000 / m; else print "n/a"}')
        step=""
        if [ -n "$prev" ] && [ "$r" != rx ]; then
            step=$(awk -v a="$ns" -v b="$prev" 'BEGIN {printf "%+.1f", a - b}')
        fi
        [ "$r" != io ] && prev="$ns"
        echo "| $(label "$r") | ${got[$r]} | $m | $ns | $step |"
    done
    echo
    echo "A cutoff build forwards without rewriting, and its last stage's loads may"
    echo "overlap what the cut removed: the steps are each stage's cost in this loop,"
    echo "not in isolation. The VM is shared: compare rows of one run."
} | append_results "$OUT"
