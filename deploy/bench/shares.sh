#!/usr/bin/env bash
# Where a forwarded packet's time goes, by shared object: fwd, dpdk-testpmd
# (io and macswap) and DPDK's l3fwd (LPM mode) on throughput.sh's recipe
# (net_pcap replaying 4096 64-byte UDP flows to ROUTES destinations -> one
# forwarding lcore on CPU 1 -> net_null), each sampled by `perf record -e
# cpu-clock -C 1` for 10 s after a 12 s warm-up. Each object's share of the
# samples times the program's ns/packet (its rate over the same run) gives
# what the PMDs cost in that program and what is left for the program's own
# work: the budget behind the goal of 0.67x testpmd macswap. Appends a
# section to bench-results/shares.md.
#
#   deploy/bench/shares.sh [ROUTES]     (default 1000)
#
# FAMILY=6: the IPv6 recipe (l3fwd in LPM mode, rte_lpm6). Installs
# linux-perf when perf is missing.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
need_root
ROUTES="${1:-1000}"
replay_family
OUT="$ROOT/bench-results/shares.md"
command -v perf > /dev/null || apt_install linux-perf
setup_host --hugepages 512
build_release
WORK="$(mktemp -d /tmp/fwd-shares.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
write_replay_recipe "$WORK" "$ROUTES"

# Samples CPU 1 for 10 s after 12 s, into $1, while the caller's program
# runs in the background.
sample() {
    sleep 12
    perf record -q -e cpu-clock -C 1 -o "$1" -- sleep 10 > /dev/null 2>&1
}

# One table row: $1 label, $2 perf data, $3 the program's own objects (a
# pattern: l3fwd's lookups are in librte_lpm), $4 its mean rate (Mpps).
row() {
    local label="$1" data="$2" own="$3" mpps="$4"
    perf report -i "$data" --no-children --sort dso -g none --stdio 2> /dev/null |
        awk -v label="$label" -v own="$own" -v mpps="$mpps" '
            /%/ {
                pct = $1; sub(/%/, "", pct); obj = $2
                if (obj ~ own) p += pct
                else if (obj ~ /net_pcap/) pcap += pct
                else if (obj ~ /net_null/) null += pct
                else if (obj ~ /^ld-linux/) ld += pct
                else other += pct
            }
            END {
                ns = (mpps > 0) ? 1000 / mpps : 0
                printf "| %s | %.2f | %.1f | %.1f | %.1f | %.2f | %.2f | **%.1f** |\n", label, mpps, ns,
                    ns * pcap / 100, ns * null / 100, ns * ld / 100, ns * other / 100, ns * p / 100
            }'
}

rows=()
# fwd
sample "$WORK/fwd.data" &
fwd_rates=$(run_replay "$REL/fwd" "$WORK/fwd.yaml" "$WORK/fwd" 25 6)
wait
rows+=("$(row "fwd (this build)" "$WORK/fwd.data" '^fwd$' "$(echo "$fwd_rates" | mean)")")
# testpmd
for mode in io macswap; do
    sample "$WORK/$mode.data" &
    rates=$(run_testpmd "$mode" "$WORK/flows.pcap" 25 6 "$WORK/tpmd-$mode.out")
    wait
    rows+=("$(row "dpdk-testpmd $mode" "$WORK/$mode.data" 'testpmd' "$(echo "$rates" | mean)")")
done
# l3fwd, LPM mode: it prints the rates of two 10 s intervals from 11 s on.
sample "$WORK/l3fwd.data" &
l3=$(env FAMILY="$FAMILY" "$ROOT/deploy/bench/l3fwd.sh" "$WORK/flows.pcap" "$ROUTES") || l3=""
wait
if [ -n "$l3" ]; then
    rows+=("$(row "dpdk-l3fwd LPM mode" "$WORK/l3fwd.data" 'l3fwd|librte_lpm' "$(echo $l3 | tr ' ' '\n' | mean)")")
else
    rows+=("| dpdk-l3fwd LPM mode | (failed) | | | | | | |")
fi

{
    echo "# Where a packet's time goes, by shared object (deploy/bench/shares.sh)"
    echo
    echo "- IPv$FAMILY, $ROUTES routes; commit $(commit_id); command: \`$( [ "$FAMILY" = 6 ] && echo "FAMILY=6 ")deploy/bench/shares.sh $ROUTES\`"
    echo "- machine: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) CPUs; DPDK $(dpdk_version)"
    echo
    echo "ns/packet: the rate's inverse, split by the share of perf's samples on CPU 1 in each object."
    echo "\"loader\" is ld.so (\`__tls_get_addr\`: the PMDs' per-lcore variables); \"other\" libc, ethdev, the kernel;"
    echo "l3fwd's own code includes librte_lpm (its lookups)."
    echo
    echo "| program | Mpps | ns/packet | net_pcap RX | net_null TX | loader | other | the program's own code |"
    echo "|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
} | append_results "$OUT"
tail -n 12 "$OUT"
