#!/usr/bin/env bash
# Multi-worker scaling of plain IPv4 forwarding, beside dpdk-testpmd with as
# many forwarding cores, in the same run: throughput.sh's recipe (net_pcap
# replaying 4096 64-byte UDP flows endlessly, ROUTES /24 routes via one
# gateway on a net_null port) with N = 1..MAX workers, each worker polling an
# input port of its own (the same flows) and sending on its own TX queue of
# the one output port; testpmd macswap on N such port pairs with N cores.
# Worker / core k runs on CPU k mod the CPU count (CPU 0 is the main
# lcore's): on a 2-CPU machine the second worker shares CPU 0 with the main
# lcore and the control thread, so only the machine's own spread shows there;
# with more CPUs than workers every worker has a CPU of its own.
#
#   deploy/bench/scaling.sh [MAX_WORKERS] [ROUNDS] [ROUTES]
#
# MAX_WORKERS defaults to the CPU count minus one (at least 2), ROUNDS to 2
# (each round runs every N, fwd then testpmd), ROUTES to 1000. SECS (33)
# and EVERY (10): each run's length and stats interval; the last two
# intervals of a run are its rates. Results go to bench-results/scaling.md
# (SCALING_OUT=FILE elsewhere). What it shows: whether the workers share
# anything that costs as they are added (counters, the QSBR slots, the
# tables' cache lines): fwd's rate with N workers over its rate with one,
# next to testpmd's same ratio.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
need_root
ncpu=$(nproc)
MAX="${1:-$((ncpu > 3 ? ncpu - 1 : 2))}"
ROUNDS="${2:-2}"
ROUTES="${3:-1000}"
SECS="${SECS:-33}"
EVERY="${EVERY:-10}"
OUT="${SCALING_OUT:-$ROOT/bench-results/scaling.md}"
[ "$MAX" -ge 1 ] && [ "$ROUNDS" -ge 1 ] || { echo "$0: MAX_WORKERS and ROUNDS must be at least 1" >&2; exit 1; }

setup_host --hugepages 1024
build_release
WORK="$(mktemp -d /tmp/fwd-scaling.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
"$REL/fwd-flows" "$WORK/flows.pcap" --flows 4096 --size 64 --dst 10.1.0.1 --dst-count "$ROUTES"

# samples[PROG:N] = the rates of every round, one per interval.
declare -A samples
for ((r = 1; r <= ROUNDS; r++)); do
    for ((n = 1; n <= MAX; n++)); do
        echo "round $r, $n worker(s)" >&2
        write_replay_config "$WORK/flows.pcap" "$WORK/fwd$n.yaml" "$ROUTES" "net_null0,no-rx=1" \
            "$BENCH_HUGEPAGES" 4 "$n"
        rates=$(run_replay "$REL/fwd" "$WORK/fwd$n.yaml" "$WORK/fwd$n" "$SECS" "$EVERY")
        [ -n "$rates" ] || { cat "$WORK/fwd$n.err" >&2; echo "$0: fwd with $n workers gave no rates" >&2; exit 1; }
        samples[fwd:$n]+=" $(echo $rates)"
        rates=$(run_testpmd macswap "$WORK/flows.pcap" "$SECS" "$EVERY" "$WORK/tpmd$n.out" "$n")
        [ -n "$rates" ] || { tail -20 "$WORK/tpmd$n.out" >&2; echo "$0: testpmd with $n cores gave no rates" >&2; exit 1; }
        samples[tpmd:$n]+=" $(echo $rates)"
    done
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
{
    echo "# Multi-worker scaling: plain IPv4 forwarding beside testpmd macswap"
    echo
    echo "- command: \`deploy/bench/scaling.sh $MAX $ROUNDS $ROUTES\` (SECS=$SECS EVERY=$EVERY)"
    echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(commit_id)"
    pages="1024 x 2 MiB hugepages"
    [ "$BENCH_HUGEPAGES" = true ] || pages="4 KiB pages for every program (--no-huge: no hugepages on this host)"
    echo "- machine: $(lscpu | sed -n 's/^Model name: *//p'), $ncpu CPUs; DPDK $(dpdk_version)"
    echo "- recipe: $pages; per worker (per testpmd core) one net_pcap port replaying 4096"
    echo "  64-byte UDP flows to $ROUTES destinations; fwd: $ROUTES /24 routes via one gateway"
    echo "  on one net_null port (a TX queue per worker); testpmd: N net_pcap -> net_null pairs;"
    echo "  worker / core k on CPU k mod $ncpu (the main lcore on CPU 0); $ROUNDS rounds, the"
    echo "  last two $EVERY s intervals of each ${SECS} s run"
    echo
    echo "| workers | fwd Mpps (every interval) | fwd median | fwd x (vs 1) | testpmd macswap Mpps | testpmd median | testpmd x (vs 1) | fwd / testpmd |"
    echo "|---|---|---|---|---|---|---|---|"
    f1=$(echo "${samples[fwd:1]}" | median)
    t1=$(echo "${samples[tpmd:1]}" | median)
    for ((n = 1; n <= MAX; n++)); do
        f=$(echo "${samples[fwd:$n]}" | median)
        t=$(echo "${samples[tpmd:$n]}" | median)
        echo "| $n |${samples[fwd:$n]} | $f | $(ratio "$f" "$f1") |${samples[tpmd:$n]} | $t | $(ratio "$t" "$t1") | $(ratio "$f" "$t") |"
    done
    if [ "$MAX" -ge "$ncpu" ]; then
        echo
        echo "With $ncpu CPUs, $ncpu or more workers share CPU 0 with the main lcore (and"
        echo "several workers a CPU): those rows show the machine, not the design."
    fi
} | append_results "$OUT"
