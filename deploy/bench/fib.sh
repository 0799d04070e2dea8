#!/usr/bin/env bash
# FIB lookups beside DPDK's: our burst lookups (bench_route --only lookup)
# and dpdk-test-fib (rte_fib DIR24_8 for IPv4, rte_fib6 TRIE and rte_lpm6
# for IPv6) on the same full tables of $FWD_DATA and the same 2^20 lookup
# addresses (uniform random, and drawn from the table), run in alternation
# for ROUNDS rounds on one CPU. Reports every round, the medians and the
# spread. Results go to bench-results/fib.md.
#
#   deploy/bench/fib.sh [ROUNDS] [BASE_BENCH_ROUTE]
#
# BASE_BENCH_ROUTE: another build's bench_route, measured in the same
# rounds (an A/B of our side). LPM=1 adds rte_lpm for IPv4 (dpdk-test-fib
# -c: rte_lpm takes about 5 minutes to load the IPv4 table, every round).
# CPU (default 1) is the CPU every program is pinned to. LARGE=1 runs both
# sides on large pages, as deployed: ours with the heap on transparent huge
# pages (GLIBC_TUNABLES=glibc.malloc.hugetlb=1, as deploy/fwd.service runs
# fwd), DPDK on 2 MiB hugepages (reserved here, 1600 of them).
#
# Method: dpdk-test-fib times one pass of rte_fib_lookup_bulk over its 2^20
# addresses in bulks of 64 and prints the mean in TSC cycles (converted
# here with the TSC rate the EAL reports); bench_route prints the best of 5
# passes per burst size. rte_fib also runs at the worker's burst of 32:
# dpdk-test-fib again with deploy/bench/fib_bulk.c preloaded, which hands
# its bulks of 64 to rte_fib as two of 32 (rte_lpm's bulk lookup is inline
# in the tool: 64 only). Both sides use 4 KiB pages (DPDK with --no-huge,
# our FIB in ordinary heap memory), or both large pages with LARGE=1.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
ROUNDS="${1:-3}"
BASE="${2:-}"
CPU="${CPU:-1}"
LPM="${LPM:-0}"
LARGE="${LARGE:-0}"
OUT="${FIB_OUT:-$ROOT/bench-results/fib.md}"
find_corpora || { echo "$0: $corpora_missing" >&2; exit 1; }
command -v dpdk-test-fib > /dev/null || { echo "$0: needs dpdk-test-fib (dpdk-dev)" >&2; exit 1; }
build_release
OURS="$REL/bench_route"
WORK="$(mktemp -d /tmp/fwd-fib.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT

"$OURS" --only lookup --dpdk-files "$WORK" > /dev/null
# The bulk-splitting shim: compiled here, or the bundle's (bundle.sh).
SHIM=""
if [ -n "${FWD_BUNDLE:-}" ]; then
    [ -f "$FWD_BUNDLE/lib/libfib_bulk.so" ] && SHIM="$FWD_BUNDLE/lib/libfib_bulk.so"
elif cc -O2 -shared -fPIC -o "$WORK/libfib_bulk.so" "$ROOT/deploy/bench/fib_bulk.c" -ldl; then
    SHIM="$WORK/libfib_bulk.so"
fi
[ -n "$SHIM" ] || echo "$0: no deploy/bench/fib_bulk.c shim: rte_fib at bulks of 64 only" >&2

EAL=(--no-pci --no-huge -m 3000 --no-shconf --no-telemetry --file-prefix "fib$$" -l "$CPU")
pages="4 KiB pages on both sides"
if [ "$LARGE" != 1 ]; then
    setup_host > /dev/null
else
    setup_host --hugepages 1600 > /dev/null
    EAL=(--no-pci --in-memory -m 3000 --no-telemetry --file-prefix "fib$$" -l "$CPU")
    tables_heap_thp
    pages="large pages on both sides (LARGE=1): ours with the heap on transparent huge pages, DPDK on 2 MiB hugepages"
fi
# dpdk FILE [ARGS...]: "FIB_CYCLES [LPM_CYCLES]" of one dpdk-test-fib run.
dpdk() {
    local t="$1"
    shift
    taskset -c "$CPU" dpdk-test-fib "${EAL[@]}" -- "$@" -t "$WORK/$t" 2>&1 \
        | awk '/AVG FIB lookup/ {f = $4} /AVG LPM lookup/ {l = $4} END {print f, l}'
}
tsc_khz=$(taskset -c "$CPU" dpdk-test-fib "${EAL[@]}" --log-level=lib.eal:debug -- \
    -f "$WORK/v6_routes.txt" -6 -g 400000 -t "$WORK/v6_lookup_rand.txt" 2>&1 \
    | sed -n 's/.*TSC frequency is ~\([0-9]*\) KHz.*/\1/p')
[ -n "$tsc_khz" ] || { echo "$0: no TSC rate from the EAL" >&2; exit 1; }
ns() { awk -v c="$1" -v k="$tsc_khz" 'BEGIN { if (c == "") print "-"; else printf "%.1f", c * 1e6 / k }'; }

# ours BIN: the 4 rows "name|b32|b64" of one bench_route run.
ours() {
    taskset -c "$CPU" "$1" --only lookup 2>/dev/null \
        | awk -F'|' '/^\| IPv[46] (uniform|drawn)/ {gsub(/^ +| +$/, "", $2); gsub(/ /, "", $4); gsub(/ /, "", $5); print $2 "|" $4 "|" $5}'
}

declare -A samples
add() { samples["$1"]="${samples["$1"]:-} $2"; }
V4=(-f "$WORK/v4_routes.txt")
[ "$LPM" = 1 ] && V4+=(-c)
V6=(-6 -g 400000 -f "$WORK/v6_routes.txt" -c)
for ((r = 1; r <= ROUNDS; r++)); do
    echo "round $r" >&2
    sides=(ours)
    [ -n "$BASE" ] && sides+=(base)
    for side in "${sides[@]}"; do
        bin="$OURS"
        [ "$side" = base ] && bin="$BASE"
        while IFS='|' read -r name b32 b64; do
            add "$side|$name|32" "$b32"
            add "$side|$name|64" "$b64"
        done < <(ours "$bin")
    done
    for t in rand table; do
        label="uniform random"
        [ "$t" = table ] && label="drawn from the table"
        read -r f l < <(dpdk "v4_lookup_$t.txt" "${V4[@]}")
        add "dpdk fib|IPv4 $label|64" "$(ns "$f")"
        [ "$LPM" = 1 ] && add "dpdk lpm|IPv4 $label|64" "$(ns "$l")"
        read -r f l < <(dpdk "v6_lookup_$t.txt" "${V6[@]}")
        add "dpdk fib|IPv6 $label|64" "$(ns "$f")"
        add "dpdk lpm|IPv6 $label|64" "$(ns "$l")"
        if [ -n "$SHIM" ]; then
            read -r f _ < <(LD_PRELOAD="$SHIM" FIB_BULK=32 dpdk "v4_lookup_$t.txt" -f "$WORK/v4_routes.txt")
            add "dpdk fib|IPv4 $label|32" "$(ns "$f")"
            read -r f _ < <(LD_PRELOAD="$SHIM" FIB_BULK=32 dpdk "v6_lookup_$t.txt" -6 -g 400000 -f "$WORK/v6_routes.txt")
            add "dpdk fib|IPv6 $label|32" "$(ns "$f")"
        fi
    done
done

# stat "v1 v2 ...": "median (min-max)"
stat() { tr ' ' '\n' <<< "$1" | grep -v '^$' | sort -g | awk '{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.1f (%s-%s)", m, v[1], v[NR]}'; }
med() { stat "$1" | cut -d' ' -f1; }

{
    echo "# FIB lookups beside dpdk-test-fib (ns per lookup)"
    echo
    echo "- command: \`deploy/bench/fib.sh $ROUNDS${BASE:+ $BASE}\`$([ "$LPM" = 1 ] && echo " (LPM=1)")$([ "$LARGE" = 1 ] && echo " (LARGE=1)")"
    echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(commit_id)"
    echo "- machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; TSC $((tsc_khz / 1000)) MHz; DPDK $(dpdk_version); CPU $CPU for every program"
    echo "- tables: $FWD_DATA/routing (901,899 IPv4 and 160,147 IPv6 prefixes), 2^20 addresses per row, the same files for both sides"
    echo "- ours: \`*_burst\` of 32 (the worker's burst) and of 64, best of 5 passes; DPDK: rte_fib_lookup_bulk in bulks of 64$([ -n "$SHIM" ] && echo " and of 32 (deploy/bench/fib_bulk.c)"), rte_lpm's in bulks of 64, mean of one pass (dpdk-test-fib, default lookup function); $pages"
    echo
    echo "Median (min-max) of $ROUNDS alternating rounds:"
    echo
    echo "| addresses | ours, burst 32 | ours, burst 64 |${BASE:+ base, burst 32 | base, burst 64 |} rte_fib / rte_fib6, bulk 32 | rte_fib / rte_fib6, bulk 64 | rte_lpm / rte_lpm6 | ours / rte_fib, 32 | ours / rte_fib, 64 |"
    echo "|---|---|---|${BASE:+---|---|}---|---|---|---|---|"
    for name in "IPv4 uniform random" "IPv4 drawn from the table" "IPv6 uniform random" "IPv6 drawn from the table"; do
        row="| $name | $(stat "${samples["ours|$name|32"]}") | $(stat "${samples["ours|$name|64"]}") |"
        [ -n "$BASE" ] && row="$row $(stat "${samples["base|$name|32"]}") | $(stat "${samples["base|$name|64"]}") |"
        lpm="${samples["dpdk lpm|$name|64"]:-}"
        f32="${samples["dpdk fib|$name|32"]:-}"
        ratio=$(awk -v a="$(med "${samples["ours|$name|64"]}")" -v b="$(med "${samples["dpdk fib|$name|64"]}")" 'BEGIN {printf "%.2fx", a / b}')
        ratio32="-"
        [ -n "$f32" ] && ratio32=$(awk -v a="$(med "${samples["ours|$name|32"]}")" -v b="$(med "$f32")" 'BEGIN {printf "%.2fx", a / b}')
        echo "$row $([ -n "$f32" ] && stat "$f32" || echo "not run (no shim)") | $(stat "${samples["dpdk fib|$name|64"]}") | $([ -n "$lpm" ] && stat "$lpm" || echo "not run (needs LPM=1)") | $ratio32 | $ratio |"
    done
    echo
    echo "Every sample, in round order:"
    echo
    for k in $(printf '%s\n' "${!samples[@]}" | sort | tr ' ' '_'); do
        k="${k//_/ }"
        echo "- $k:${samples["$k"]}"
    done
} | append_results "$OUT"
