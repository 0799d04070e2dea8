#!/usr/bin/env bash
# ICMP errors while forwarding: the throughput recipe (DESIGN.md) with part
# of the flows unrouted, so the worker answers each of them with ICMP
# "destination unreachable" in a fresh mbuf while it forwards the rest.
#
# Three runs of the same pcap, one worker lcore, side by side:
#   1. every destination routed (no errors): the reference rate;
#   2. 23% of the packets unrouted, default rate limit (1000/s, burst 50);
#   3. the same with the limit lifted: the error rate the data path sustains.
# Rates are read twice, 10 s apart, after a warm-up. Results go to
# bench-results/icmp.md.
#
#   deploy/bench/icmp.sh
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
need_root
OUT="$ROOT/bench-results/icmp.md"

setup_host --hugepages 512
build_release
WORK="$(mktemp -d /tmp/fwd-bench.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
# 4096 flows to 1000 destinations 10.1.0.1 ... 10.1.3.232.
"$REL/fwd-flows" "$WORK/flows.pcap" --flows 4096 --size 64 --dst 10.1.0.1 --dst-count 1000

# Writes a config: routes for the first $2 /24s of 10.1.0.0/16, ICMP $3.
config() {
    local cfg="$1" nroutes="$2" icmp="$3"
    write_replay_config "$WORK/flows.pcap" "$cfg" "$nroutes" "net_null0,no-rx=1" "$BENCH_HUGEPAGES"
    # The replay port answers: give it a sender to answer to.
    echo "icmp: $icmp" >> "$cfg"
}
config "$WORK/all.yaml" 4 "{rate: 1000, burst: 50}"
config "$WORK/limited.yaml" 3 "{rate: 1000, burst: 50}"
config "$WORK/unlimited.yaml" 3 "{rate: 1000000000, burst: 1000000}"

# "in: rx R Mpps tx T Mpps" of the last two 10 s intervals of a 31 s run.
run() {
    timeout -s INT 33 "$REL/fwd" "$1" --stats-interval 10 \
        > "$WORK/run.out" 2> "$WORK/run.err" || true
    grep -o 'in: rx *[0-9.]* Mpps tx *[0-9.]* Mpps' "$WORK/run.out" | tail -n 2 |
        awk '{print $3, $6}'
    grep -o 'out: rx *[0-9.]* Mpps tx *[0-9.]* Mpps' "$WORK/run.out" | tail -n 2 |
        awk '{print $6}' > "$WORK/out.tx"
}
row() {
    local name="$1" cfg="$2"
    local r
    r=$(run "$cfg")
    [ -n "$r" ] || { cat "$WORK/run.err"; echo "bench: no rates for $name" >&2; exit 1; }
    local rx errs fwd
    rx=$(echo "$r" | awk '{printf "%s ", $1}')
    errs=$(echo "$r" | awk '{printf "%.0f ", $2 * 1e6}')
    fwd=$(awk '{printf "%s ", $1}' "$WORK/out.tx")
    echo "| $name | $rx | $fwd | $errs |"
}
{
    echo "# ICMP errors while forwarding, one worker lcore"
    echo
    echo "- command: \`deploy/bench/icmp.sh\`"
    echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(commit_id)"
    echo "- machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; DPDK $(dpdk_version)"
    echo "- recipe: as deploy/bench/throughput.sh (512 x 2 MiB hugepages, net_pcap infinite"
    echo "  replay of 4096 64-byte UDP flows to 1000 destinations -> one worker -> net_null);"
    echo "  with 3 of the 4 /24 routes, 233 of the 1000 destinations (23% of the packets)"
    echo "  have no route and are answered with ICMP net unreachable out of port in."
    echo "  Two 10 s intervals per run (Mpps, errors/s per interval)."
    echo
    echo "| run | received Mpps | forwarded Mpps | ICMP errors/s |"
    echo "|---|---|---|---|"
    row "all routed" "$WORK/all.yaml"
    row "23% unrouted, limit 1000/s burst 50 (default)" "$WORK/limited.yaml"
    row "23% unrouted, no limit" "$WORK/unlimited.yaml"
    echo
    echo "The VM is shared: compare rows of one run only."
} | append_results "$OUT"
