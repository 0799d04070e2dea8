#!/usr/bin/env bash
# Throughput of plain IPv4 forwarding, with dpdk-testpmd on the same ports in
# the same run (DESIGN.md's recipe): 2 MiB hugepages, net_pcap replaying a few
# thousand 64-byte UDP flows endlessly into the appliance, net_null as the
# sink, one worker lcore on its own CPU. Rates are read twice, 10 s apart,
# after a warm-up. Results go to bench-results/throughput.md.
#
#   deploy/bench/throughput.sh [ROUTES]     (default 1000 routes)
#
# BASELINE_FWD=/path/to/another/fwd (BASELINE_LABEL=name) adds a row for
# that binary (e.g. the previous commit's release build) on the same recipe
# in the same run.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
need_root
ROUTES="${1:-1000}"
OUT="$ROOT/bench-results/throughput.md"

"$ROOT/deploy/setup.sh" --hugepages 512
build_release
WORK="$(mktemp -d /tmp/fwd-bench.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
"$ROOT/target/release/fwd-flows" "$WORK/flows.pcap" --flows 4096 --size 64 --dst 10.1.0.1 --dst-count "$ROUTES"
write_replay_config "$WORK/flows.pcap" "$WORK/fwd.yaml" "$ROUTES" "net_null0,no-rx=1" true

# fwd: stats every 10 s for 31 s; the first line includes start-up, the
# next two are steady state.
timeout -s INT 33 "$ROOT/target/release/fwd" "$WORK/fwd.yaml" --stats-interval 10 \
    > "$WORK/fwd.out" 2> "$WORK/fwd.err" || true
fwd_rates=$(grep -o 'in: rx *[0-9.]* Mpps' "$WORK/fwd.out" | awk '{print $3}' | tail -n 2)
[ -n "$fwd_rates" ] || { cat "$WORK/fwd.err"; echo "bench: fwd produced no rates" >&2; exit 1; }
base_rates=""
if [ -n "${BASELINE_FWD:-}" ]; then
    timeout -s INT 33 "$BASELINE_FWD" "$WORK/fwd.yaml" --stats-interval 10 \
        > "$WORK/base.out" 2> "$WORK/base.err" || true
    base_rates=$(grep -o 'in: rx *[0-9.]* Mpps' "$WORK/base.out" | awk '{print $3}' | tail -n 2)
fi

# testpmd: same vdevs, same lcores, its own stats period.
run_testpmd() {
    local mode="$1"
    timeout -s INT 33 dpdk-testpmd -l 0,1 --in-memory --no-pci --no-telemetry \
        --file-prefix "tpmd$$" \
        --vdev "net_pcap0,rx_pcap=$WORK/flows.pcap,infinite_rx=1" --vdev "net_null0,no-rx=1" \
        -- --forward-mode="$mode" --auto-start --stats-period 10 --nb-cores=1 \
        --rxq=1 --txq=1 --burst=32 < /dev/null > "$WORK/tpmd-$mode.out" 2>&1 || true
    # Port 0's Rx-pps lines, steady state only.
    awk '/NIC statistics for port/ {p = ($6 == "0")} p && /Rx-pps:/ {print $2/1e6}' \
        "$WORK/tpmd-$mode.out" | tail -n 2
}
macswap=$(run_testpmd macswap)
io=$(run_testpmd io)

avg() { awk '{s+=$1; n++} END {if (n) printf "%.2f", s/n; else print "n/a"}'; }
fwd_avg=$(echo "$fwd_rates" | avg)
mac_avg=$(echo "$macswap" | avg)
io_avg=$(echo "$io" | avg)
ratio=$(awk -v a="$fwd_avg" -v b="$mac_avg" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
nspp=$(awk -v a="$fwd_avg" 'BEGIN { if (a > 0) printf "%.1f", 1000 / a; else print "n/a" }')

{
    echo "# Throughput: plain IPv4 forwarding, one worker lcore"
    echo
    echo "- command: \`deploy/bench/throughput.sh $ROUTES\`"
    echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo '+dirty')"
    echo "- machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; DPDK $(pkg-config --modversion libdpdk)"
    echo "- recipe: 512 x 2 MiB hugepages, net_pcap infinite replay of 4096 64-byte UDP flows"
    echo "  to $ROUTES destinations -> one worker lcore (CPU 1) -> net_null; $ROUTES /24 routes;"
    echo "  rates of the last two 10 s intervals of a 31 s run (the first includes start-up)"
    echo
    echo "| program | Mpps (per 10 s interval) | mean Mpps | ns/packet |"
    echo "|---|---|---|---|"
    echo "| fwd (parse + LPM + TTL/checksum + MAC rewrite) | $(echo $fwd_rates) | $fwd_avg | $nspp |"
    if [ -n "$base_rates" ]; then
        base_avg=$(echo "$base_rates" | avg)
        echo "| baseline fwd (${BASELINE_LABEL:-$BASELINE_FWD}) | $(echo $base_rates) | $base_avg | $(awk -v a="$base_avg" 'BEGIN{ if (a>0) printf "%.1f", 1000/a}') |"
    fi
    echo "| dpdk-testpmd macswap | $(echo $macswap) | $mac_avg | $(awk -v a="$mac_avg" 'BEGIN{ if (a>0) printf "%.1f", 1000/a}') |"
    echo "| dpdk-testpmd io | $(echo $io) | $io_avg | $(awk -v a="$io_avg" 'BEGIN{ if (a>0) printf "%.1f", 1000/a}') |"
    echo
    echo "fwd / testpmd macswap = **$ratio** (goal >= 0.67, l3fwd-LPM's ratio here)."
    echo
    echo "The recipe itself (pcap copy + free) costs ~10 ns/packet; the VM is shared, so"
    echo "compare rows of the same run only."
} > "$OUT"
cat "$OUT"
