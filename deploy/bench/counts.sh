#!/usr/bin/env bash
# Instructions of the hot paths, counted by valgrind's callgrind: a count
# does not move with a shared host's load, so a change of a few percent
# shows in one run, where a wall-clock A/B on these VMs needs many rounds to
# see x1.1 (a 1.18x slower full-view load went unnoticed for three days,
# bench-results/route.md, 2026-12-06). Counted:
#   - a route of the full IPv4 and IPv6 views, each loaded as one version
#     (bench_route --only load1, 2 loads, only inside Routing::apply);
#   - a one-change version with both views loaded, writer alone
#     (bench_route --only churn, "1 change": 20,000 versions less 10,000,
#     so that the load cancels out);
#   - a packet through the worker's fast path, IPv4 and IPv6 (bench_pkt's
#     "worker fast path" cases: 20 blocks less 0, 140,800 packets), its
#     routes via one next hop, via 16 in turn, and each ECMP over 4; and
#     an ESP packet through the whole pipeline (bench_pkt's "worker
#     pipeline" case: the fast path takes it since e378291); and an IPv4
#     and an IPv6 packet with 10,000 rules loaded, its key answered by the
#     worker's flow cache. bench_pkt runs a tenth more blocks than asked (its
#     warm-up): 20 blocks are 22 x 200 x 32 packets (until 2026-12-06 this
#     script divided by 20, so its earlier fast path columns are 1.1x the
#     instructions of a packet);
#   - a classifier lookup on lyxocs' acl1_10k and acl2_10k, keys inside
#     random rules, in bursts (bench_acl with BENCH_ACL_PASSES: 2 passes
#     of 100,000 keys less 0), on the SIMD path the classifier picks under
#     valgrind;
#   - the daemon's poll loop on the replay recipe (throughput.sh's:
#     net_pcap replaying 4096 64-byte UDP flows to 1000 routes -> one
#     worker -> net_null), IPv4 and IPv6: fwd under callgrind, forwarding
#     for LOOP_SECS (default 20) and for twice that, the instructions of
#     each object (fwd's binary, the two PMDs, the rest: the dynamic
#     loader's TLS lookups, libc, the EAL) over the packets the longer run
#     forwarded more, so that start-up cancels out; and dpdk-testpmd
#     macswap on the same recipe, counted the same way: the anchor's own
#     instructions a packet beside ours. bench_pkt counts the fast path on
#     frames in memory; this is the whole loop on mbufs, receive and send
#     included. (--fair-sched: without it the worker's busy poll starved
#     the other threads, and start-up and the stop took a minute or more.)
#
#   deploy/bench/counts.sh [BASE_DIR]
#
# BASE_DIR: a directory holding another build's bench_route, bench_pkt,
# bench_acl and fwd, counted the same way in the same run (an A/B; "n/a"
# where that build's bench has no such mode). COUNTS_LOOP_ONLY=1: the
# loop table alone (~2 minutes a row; no corpora needed). The rows go to
# bench-results/counts.md (COUNTS_OUT). Counts depend on the compiler:
# compare rows of one rustc. Takes ~5 minutes a build on 2 vCPUs.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
BASE="${1:-}"
OUT="${COUNTS_OUT:-$ROOT/bench-results/counts.md}"
if [ "${COUNTS_LOOP_ONLY:-0}" != 1 ]; then
    find_corpora || { echo "$0: $corpora_missing" >&2; exit 1; }
fi
command -v valgrind > /dev/null || apt_install valgrind
if [ -n "$BASE" ]; then
    bins=(bench_route bench_pkt bench_acl fwd)
    [ "${COUNTS_LOOP_ONLY:-0}" != 1 ] || bins=(fwd)
    for b in "${bins[@]}"; do
        [ -x "$BASE/$b" ] || { echo "$0: no $b in $BASE" >&2; exit 1; }
    done
fi
(cd "$ROOT" && cargo build --release -p fwd --bin bench_route --bin bench_pkt --bin bench_acl \
    --bin fwd --bin fwd-flows)
LOOP_SECS="${LOOP_SECS:-20}"
# Under valgrind, the EAL's memory without hugepages.
BENCH_HUGEPAGES=false
WORK="$(mktemp -d /tmp/fwd-counts.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
ROUTING="${FWD_DATA:-}/routing"

# count NAME CMD...: runs CMD under callgrind (VG_ARGS: more valgrind
# options), its output in $WORK/NAME.out; prints the instructions counted.
count() {
    local name="$1"
    shift
    valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        --log-file="$WORK/$name.vg" ${VG_ARGS:-} "$@" > "$WORK/$name.out"
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$WORK/$name.vg"
}

# per A B N: (A - B) / N, to one decimal.
per() {
    awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN {printf "%.1f", (a - b) / n}'
}

# row LABEL DIR: one table row for the bench_route, bench_pkt and
# bench_acl in DIR.
row() {
    local label="$1" br="$2/bench_route" bp="$2/bench_pkt" ba="$2/bench_acl" cells=() f c n c10 c20
    for f in 4 6; do
        c="$(VG_ARGS="--toggle-collect=*Routing::apply*" BENCH_LOAD_FAMILY=$f BENCH_LOAD_ROUNDS=2 \
            count "load$f" "$br" --data "$ROUTING" --only load1)"
        n="$(sed -n "s/^| IPv$f \([0-9]*\) |.*/\1/p" "$WORK/load$f.out")"
        [ -n "$c" ] && [ -n "$n" ] || { echo "$0: no load count for IPv$f ($label)" >&2; exit 1; }
        cells+=("$(per "$c" 0 $((2 * n)))")
    done
    # The two churn runs are independent: one a CPU.
    for n in 10000 20000; do
        BENCH_SINGLE=$n BENCH_ALONE_ONLY=1 BENCH_CHURN="1 change" \
            count "churn$n" "$br" --data "$ROUTING" --only churn > "$WORK/churn$n.c" &
    done
    wait
    c10="$(cat "$WORK/churn10000.c")"
    c20="$(cat "$WORK/churn20000.c")"
    cells+=("$(per "$c20" "$c10" 10000)")
    local k=0 case
    for case in "worker fast path (udp4" "worker fast path (udp6" \
        "worker fast path, 16 next hops (udp4" "worker fast path, 16 next hops (udp6" \
        "worker fast path, ECMP over 4 next hops (udp4" "worker fast path, ECMP over 4 next hops (udp6" \
        "worker pipeline, esp (ip4" "worker pipeline, esp (ip6" \
        "worker fast path, 10k rules via the flow cache (udp4" \
        "worker fast path, 10k rules via the flow cache (udp6"; do
        k=$((k + 1))
        c10="$(BENCH_PKT_ONLY="$case" count "pkt0-$k" "$bp" 0)"
        c20="$(BENCH_PKT_ONLY="$case" count "pkt20-$k" "$bp" 20)"
        if grep -qF "$case" "$WORK/pkt20-$k.out"; then
            # 20 blocks run 22: bench_pkt warms up on a tenth more.
            cells+=("$(per "$c20" "$c10" $((22 * 200 * 32)))")
        else
            cells+=("n/a")
        fi
    done
    for f in acl1_10k acl2_10k; do
        c10="$(BENCH_ACL_SET=$f BENCH_ACL_PASSES=0 count "acl0$f" "$ba" "$FWD_DATA/classbench")"
        c20="$(BENCH_ACL_SET=$f BENCH_ACL_PASSES=2 count "acl2$f" "$ba" "$FWD_DATA/classbench")"
        if grep -q "^passes 2 of 100000 keys" "$WORK/acl2$f.out"; then
            cells+=("$(per "$c20" "$c10" 200000)")
        else
            cells+=("n/a")
        fi
    done
    printf '| %s |' "$label"
    printf ' %s |' "${cells[@]}"
    echo
}

# by_object CALLGRIND_OUT: each object's own instructions ("COUNT PATH"
# lines), from callgrind's output file (its cost lines, less the inclusive
# cost line after each `calls=`; object names are defined at their first
# `ob=` or `cob=`).
by_object() {
    awk 'function ref(s,  id, rest) {
            if (!match(s, /^\([0-9]+\)/)) return s
            id = substr(s, 1, RLENGTH); rest = substr(s, RLENGTH + 2)
            if (rest != "") name[id] = rest
            return name[id]
        }
        /^ob=/ { ob = ref(substr($0, 4)); next }
        /^cob=/ { ref(substr($0, 5)); next }
        /^calls=/ { skip = 1; next }
        /^[+*0-9-]/ { if (skip) { skip = 0; next } cost[ob] += $2; next }
        END { for (o in cost) printf "%.0f %s\n", cost[o], o }' "$1"
}

# loop_run NAME SECS KIND BIN: the replay recipe in $WORK/loop-$FAMILY
# through KIND (fwd: the daemon BIN; testpmd: dpdk-testpmd macswap) under
# callgrind, SIGINT once it has forwarded for SECS seconds (start-up under
# valgrind takes a while; testpmd has a stats period, so that it runs
# until the signal instead of stopping at the end of its stdin); prints
# "PACKETS OWN PMDS ALL" (instructions of the program's own object, of the
# net_pcap and net_null PMDs, of every object).
loop_run() {
    local name="$1" secs="$2" kind="$3" bin="$4" dir="$WORK/loop-$FAMILY" pkts pid ready _
    local cg="$WORK/$name.cg" out="$WORK/$name.out"
    local vg=(valgrind --tool=callgrind --fair-sched=yes --callgrind-out-file="$cg"
        --log-file="$WORK/$name.vg")
    if [ "$kind" = fwd ]; then
        ready="forwarding with"
        "${vg[@]}" "$bin" "$dir/fwd.yaml" > "$out" 2>&1 &
    else
        ready="Start automatic packet forwarding"
        bin="$(command -v dpdk-testpmd)"
        testpmd_args macswap "$dir/flows.pcap"
        "${vg[@]}" "$bin" "${TESTPMD_ARGS[@]}" --stats-period 3600 < /dev/null > "$out" 2>&1 &
    fi
    pid=$!
    for _ in $(seq 1 600); do
        grep -q "$ready" "$out" && break
        sleep 0.2
    done
    sleep "$secs"
    kill -INT "$pid"
    wait "$pid" || true
    if [ "$kind" = fwd ]; then
        # The input port's received packets in the final counters.
        pkts="$(awk '/^final counters/ {f = 1} f && $1 == "in" {print $2; exit}' "$out")"
    else
        # The last RX-packets line: the accumulated statistics at exit.
        pkts="$(awk '/RX-packets:/ {n = $2} END {print n}' "$out")"
    fi
    [ -n "$pkts" ] && [ -s "$cg" ] || { echo "$0: no loop count for $name (see $out)" >&2; return 1; }
    by_object "$cg" | awk -v p="$pkts" -v bin="$(readlink -f "$bin")" '
        {all += $1} $2 == bin {own += $1} $2 ~ /librte_net_(pcap|null)/ {pmds += $1}
        END {printf "%s %.0f %.0f %.0f\n", p, own, pmds, all}'
    rm -f "$cg"
}

# loop_cells KIND BIN: three cells a family (own, PMDs, all: instructions a
# packet, the longer run less the shorter), IPv4 then IPv6.
loop_cells() {
    local kind="$1" bin="$2" a b
    for FAMILY in 4 6; do
        replay_family
        [ -s "$WORK/loop-$FAMILY/fwd.yaml" ] || {
            mkdir -p "$WORK/loop-$FAMILY"
            write_replay_recipe "$WORK/loop-$FAMILY" 1000 > /dev/null
        }
        a="$(loop_run "loop$FAMILY-short" "$LOOP_SECS" "$kind" "$bin")" || a=""
        b="$(loop_run "loop$FAMILY-long" $((2 * LOOP_SECS)) "$kind" "$bin")" || b=""
        echo "$a $b" | awk '{n = $5 - $1; if (NF != 8 || n <= 0) {print "n/a n/a n/a"; exit}
            printf "%.1f %.1f %.1f\n", ($6 - $2) / n, ($7 - $3) / n, ($8 - $4) / n}'
    done | tr '\n' ' '
}

# loop_row LABEL KIND BIN: one row of the loop table.
loop_row() {
    local cells
    read -ra cells <<< "$(loop_cells "$2" "$3")"
    printf '| %s |' "$1"
    printf ' %s |' "${cells[@]}"
    echo
}

this="$(commit_id)"
{
    echo "# Instructions of the hot paths (deploy/bench/counts.sh)"
    echo
    echo "- commit $this; command: \`deploy/bench/counts.sh${BASE:+ $BASE}\`"
    echo "- $(rustc --version); $(valgrind --version); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
    echo
    if [ "${COUNTS_LOOP_ONLY:-0}" != 1 ]; then
        echo "| build | IPv4 view, instructions a route | IPv6 view, a route | one-change version | fast path, an IPv4 packet | an IPv6 packet | the same via 16 next hops in turn: IPv4 | IPv6 | every route ECMP over 4 next hops: IPv4 | IPv6 | ESP through the pipeline: IPv4 | IPv6 | 10k rules via the flow cache: IPv4 | IPv6 | acl1_10k, a lookup | acl2_10k, a lookup |"
        echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        row "$this" "$REL"
        [ -z "$BASE" ] || row "base: $BASE" "$BASE"
        echo
    fi
    echo "The daemon's poll loop on the replay recipe (1000 routes, 64-byte UDP), instructions a packet under callgrind: $((2 * LOOP_SECS)) s of forwarding less ${LOOP_SECS} s (start-up cancels out):"
    echo
    echo "| build | IPv4: the program's own | the PMDs (net_pcap + net_null) | all | IPv6: the program's own | the PMDs | all |"
    echo "|---|---|---|---|---|---|---|"
    loop_row "$this" fwd "$REL/fwd"
    [ -z "$BASE" ] || loop_row "base: $BASE" fwd "$BASE/fwd"
    loop_row "dpdk-testpmd macswap (the anchor)" testpmd ""
} | append_results "$OUT"
