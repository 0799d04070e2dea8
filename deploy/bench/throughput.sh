#!/usr/bin/env bash
# Throughput of plain IPv4 forwarding, with dpdk-testpmd on the same ports in
# the same run (DESIGN.md's recipe): 2 MiB hugepages, net_pcap replaying a few
# thousand 64-byte UDP flows endlessly into the appliance, net_null as the
# sink, one worker lcore on its own CPU. Rates are read twice, 10 s apart,
# after a warm-up. Results go to bench-results/throughput.md. DPDK's l3fwd
# runs on the same traffic too (deploy/bench/l3fwd.sh: LPM mode; with
# LOADED=1 ACL mode over the same routes and rule set; with FAMILY=6 LPM
# mode and FIB mode).
#
#   deploy/bench/throughput.sh [ROUTES]     (default 1000 routes)
#
# BASELINE_FWD=/path/to/another/fwd (BASELINE_LABEL=name) adds a row for
# that binary (e.g. the previous commit's release build) on the same recipe
# in the same run.
#
# LOADED=1: the same traffic with the full IPv4 view of $FWD_DATA beside the
# ROUTES routes (902k, via the same neighbour) and a 10k ACL (ClassBench
# lyxocs acl1_10k, every rule a permit, then a final permit), loaded with
# fwdctl -b once the daemon forwards, before the measured intervals
# (-> bench-results/throughput_loaded.md).
#
# FAMILY=6: the same recipe in IPv6 (64-byte UDP/IPv6 frames, fwd-flows --v6,
# each destination in a /64 of its own and ROUTES /64 routes, one per
# destination) -> bench-results/throughput_v6.md. Not with LOADED=1.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
need_root
ROUTES="${1:-1000}"
LOADED="${LOADED:-0}"
replay_family
OUT="$ROOT/bench-results/throughput.md"
[ "$FAMILY" = 6 ] && OUT="$ROOT/bench-results/throughput_v6.md"
if [ "$LOADED" = 1 ]; then
    find_corpora || { echo "$0: LOADED=1 needs the corpora: $corpora_missing" >&2; exit 1; }
    # The rule set of the loaded recipe, for the daemon and for l3fwd.
    ACL_SET="$FWD_DATA/classbench/lyxocs/acl1_10k"
    OUT="$ROOT/bench-results/throughput_loaded.md"
fi

setup_host --hugepages 512
build_release
WORK="$(mktemp -d /tmp/fwd-bench.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
write_replay_recipe "$WORK" "$ROUTES"
load_note=""
if [ "$LOADED" = 1 ]; then
    echo "control: {socket: $WORK/fwd.sock, cpu: 0}" >> "$WORK/fwd.yaml"
    write_loaded_batch "$WORK/tables.batch" "$ACL_SET"
    load_note="$(grep -c '^route add' "$WORK/tables.batch") routes and $(grep -c '^rule add' "$WORK/tables.batch") rules"
fi

# fwd: stats every 10 s for 31 s; the first line includes start-up (and,
# with LOADED=1, the table load), the next two are steady state.
run_fwd() {
    local batch=""
    if [ "$3" = 1 ]; then batch="$WORK/tables.batch"; fi
    run_replay "$1" "$WORK/fwd.yaml" "$2" 33 10 "$batch" "$WORK/fwd.sock"
}
fwd_rates=$(run_fwd "$REL/fwd" "$WORK/fwd" "$LOADED") || { echo "bench: loading the tables failed" >&2; exit 1; }
[ -n "$fwd_rates" ] || { cat "$WORK/fwd.err"; echo "bench: fwd produced no rates" >&2; exit 1; }
base_rates=""
if [ -n "${BASELINE_FWD:-}" ]; then
    base_rates=$(run_fwd "$BASELINE_FWD" "$WORK/base" "$LOADED") || { echo "bench: loading the tables failed" >&2; exit 1; }
fi
# With LOADED=1, the same binary without the load, in the same run.
bare_rates=""
if [ "$LOADED" = 1 ]; then
    bare_rates=$(run_fwd "$REL/fwd" "$WORK/bare" 0)
fi

# testpmd: same vdevs, same lcores, its own stats period.
macswap=$(run_testpmd macswap "$WORK/flows.pcap" 33 10 "$WORK/tpmd-macswap.out")
io=$(run_testpmd io "$WORK/flows.pcap" 33 10 "$WORK/tpmd-io.out")
# DPDK's l3fwd on the same traffic (deploy/bench/l3fwd.sh): LPM mode with the
# same routes; with LOADED=1, ACL mode with the same routes and rule set; for
# IPv6, LPM mode (rte_lpm6) and FIB mode (rte_fib6 TRIE) with the same /64s.
# One label and one line of rates per mode that ran.
l3_labels=()
l3_rates=()
l3fwd_mode() {
    local label="$1" rates
    shift
    if rates=$("$@"); then
        l3_labels+=("$label")
        l3_rates+=("$(echo $rates)")
    fi
}
if [ "$LOADED" = 1 ]; then
    l3fwd_mode "dpdk-l3fwd ACL mode (rte_acl over the $ROUTES routes and acl1_10k)" \
        env FAMILY="$FAMILY" "$ROOT/deploy/bench/l3fwd.sh" "$WORK/flows.pcap" "$ROUTES" "$ACL_SET"
elif [ "$FAMILY" = 6 ]; then
    l3fwd_mode "dpdk-l3fwd LPM mode (rte_lpm6, the same $ROUTES /64 routes)" \
        env FAMILY="$FAMILY" "$ROOT/deploy/bench/l3fwd.sh" "$WORK/flows.pcap" "$ROUTES"
    l3fwd_mode "dpdk-l3fwd FIB mode (rte_fib6 TRIE, the same $ROUTES /64 routes)" \
        env FAMILY="$FAMILY" LOOKUP=fib "$ROOT/deploy/bench/l3fwd.sh" "$WORK/flows.pcap" "$ROUTES"
else
    l3fwd_mode "dpdk-l3fwd LPM mode (the same $ROUTES routes)" \
        env FAMILY="$FAMILY" "$ROOT/deploy/bench/l3fwd.sh" "$WORK/flows.pcap" "$ROUTES"
fi

fwd_avg=$(echo "$fwd_rates" | mean)
mac_avg=$(echo "$macswap" | mean)
io_avg=$(echo "$io" | mean)
ratio=$(awk -v a="$fwd_avg" -v b="$mac_avg" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
# Each l3fwd mode's mean, once for the table and the ratios below.
l3_avgs=()
for k in "${!l3_labels[@]}"; do
    l3_avgs+=("$(echo "${l3_rates[$k]}" | tr ' ' '\n' | mean)")
done
nspp=$(awk -v a="$fwd_avg" 'BEGIN { if (a > 0) printf "%.1f", 1000 / a; else print "n/a" }')

{
    if [ "$LOADED" = 1 ]; then
        echo "# Throughput: IPv4 forwarding with the full view and a 10k ACL loaded, one worker lcore"
        echo
        echo "- command: \`LOADED=1 deploy/bench/throughput.sh $ROUTES\`"
        echo "- loaded with one \`fwdctl -b\` after start-up: $load_note (ClassBench lyxocs"
        echo "  acl1_10k, each rule a permit, then a final permit: a packet walks the trees to"
        echo "  a leaf whichever rule it matches); load took $(cat "$WORK/fwd.load_s") s"
    elif [ "$FAMILY" = 6 ]; then
        echo "# Throughput: plain IPv6 forwarding, one worker lcore"
        echo
        echo "- command: \`FAMILY=6 deploy/bench/throughput.sh $ROUTES\`"
    else
        echo "# Throughput: plain IPv4 forwarding, one worker lcore"
        echo
        echo "- command: \`deploy/bench/throughput.sh $ROUTES\`"
    fi
    echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(commit_id)"
    pages="512 x 2 MiB hugepages"
    [ "$BENCH_HUGEPAGES" = true ] || pages="4 KiB pages for every program (--no-huge: no hugepages on this host)"
    echo "- machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; DPDK $(dpdk_version)"
    if [ "$FAMILY" = 6 ]; then
        echo "- recipe: $pages, net_pcap infinite replay of 4096 64-byte UDP/IPv6"
        echo "  flows to $ROUTES destinations -> one worker lcore (CPU 1) -> net_null; $ROUTES /64 routes,"
        echo "  one per destination;"
    else
        echo "- recipe: $pages, net_pcap infinite replay of 4096 64-byte UDP flows"
        echo "  to $ROUTES destinations -> one worker lcore (CPU 1) -> net_null; $ROUTES /24 routes;"
    fi
    echo "  rates of the last two 10 s intervals of a 31 s run (the first includes start-up)"
    echo
    echo "| program | Mpps (per 10 s interval) | mean Mpps | ns/packet |"
    echo "|---|---|---|---|"
    if [ "$LOADED" = 1 ]; then
        echo "| fwd, full view + 10k ACL loaded | $(echo $fwd_rates) | $fwd_avg | $nspp |"
        bare_avg=$(echo "$bare_rates" | mean)
        echo "| fwd, $ROUTES routes only (same binary, same run) | $(echo $bare_rates) | $bare_avg | $(awk -v a="$bare_avg" 'BEGIN{ if (a>0) printf "%.1f", 1000/a}') |"
    else
        echo "| fwd (parse + LPM + TTL/checksum + MAC rewrite) | $(echo $fwd_rates) | $fwd_avg | $nspp |"
    fi
    if [ -n "$base_rates" ]; then
        base_avg=$(echo "$base_rates" | mean)
        echo "| baseline fwd (${BASELINE_LABEL:-$BASELINE_FWD}) | $(echo $base_rates) | $base_avg | $(awk -v a="$base_avg" 'BEGIN{ if (a>0) printf "%.1f", 1000/a}') |"
    fi
    echo "| dpdk-testpmd macswap | $(echo $macswap) | $mac_avg | $(awk -v a="$mac_avg" 'BEGIN{ if (a>0) printf "%.1f", 1000/a}') |"
    echo "| dpdk-testpmd io | $(echo $io) | $io_avg | $(awk -v a="$io_avg" 'BEGIN{ if (a>0) printf "%.1f", 1000/a}') |"
    for k in "${!l3_labels[@]}"; do
        l3_avg="${l3_avgs[$k]}"
        echo "| ${l3_labels[$k]} | ${l3_rates[$k]} | $l3_avg | $(awk -v a="$l3_avg" 'BEGIN{ if (a>0) printf "%.1f", 1000/a}') |"
    done
    echo
    echo "fwd / testpmd macswap = **$ratio** (goal >= 0.67, l3fwd-LPM's ratio on the anchor machine)."
    for k in "${!l3_labels[@]}"; do
        l3_avg="${l3_avgs[$k]}"
        echo
        echo "${l3_labels[$k]} / testpmd macswap = $(awk -v a="$l3_avg" -v b="$mac_avg" 'BEGIN {printf "%.2f", a / b}');"
        echo "fwd / that l3fwd = **$(awk -v a="$fwd_avg" -v b="$l3_avg" 'BEGIN {printf "%.2f", a / b}')**."
    done
    if [ "${#l3_labels[@]}" -gt 0 ] && [ "$FAMILY" = 4 ]; then
        echo
        echo "(l3fwd checks no IPv4 header checksum without the NIC's offload; fwd"
        echo "verifies it in software. See deploy/bench/l3fwd.sh.)"
    elif [ "${#l3_labels[@]}" -eq 0 ]; then
        echo
        echo "dpdk-l3fwd did not run (see the bench's output)."
    fi
    echo
    echo "The recipe itself (pcap copy + free) costs ~10 ns/packet; the VM is shared, so"
    echo "compare rows of the same run only."
} | append_results "$OUT"
