#!/usr/bin/env bash
# What an idle worker costs and what its sleeping costs packets
# (`datapath.idle_sleep_us`, fwd/src/worker/idle.rs): for each bound in
# VALUES (0: always poll), a fresh daemon with two net_tap ports, each
# moved into a network namespace created here (10.77.1.0/24 and
# 10.77.2.0/24, nothing leaves them), measured for
#   - the worker lcore's CPU time (utime + stime of its thread, rte-worker-1)
#     over IDLE_S seconds with no traffic, as a share of one CPU;
#   - ping's round trip from one namespace to the other through the
#     appliance (each ping crosses the worker twice): 20 pings 0.2 s apart
#     (the worker is asleep when each arrives) and 500 pings 2 ms apart.
# The values are rotated over ROUNDS rounds. Results: bench-results/idle.md.
#
#   deploy/bench/idle.sh
#   VALUES="0 50 200 1000" ROUNDS=3 IDLE_S=5 (the defaults)
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
need_root
OUT="${IDLE_OUT:-$ROOT/bench-results/idle.md}"
read -r -a VALUES <<< "${VALUES:-0 50 200 1000}"
ROUNDS="${ROUNDS:-3}"
IDLE_S="${IDLE_S:-5}"

setup_host --hugepages 256 > /dev/null
build_release
WORK="$(mktemp -d /tmp/fwd-idle.XXXXXX)"
NS_A="idlebench-a-$$"
NS_B="idlebench-b-$$"
FWD_PID=""
cleanup() {
    stop_fwd
    ip netns del "$NS_A" 2> /dev/null || true
    ip netns del "$NS_B" 2> /dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# start VALUE: a daemon whose worker sleeps at most VALUE us, its taps in
# the two namespaces (made anew).
start() {
    local v="$1" ns iface mac addr gw gwmac
    cat > "$WORK/fwd.yaml" << YAML
eal: {main_lcore: 0, memory_mb: 256, hugepages: $BENCH_HUGEPAGES, file_prefix: idlebench-$$}
ports:
  - {name: a, device: "net_tap_ia$$,iface=fidla$$,mac=02:00:00:77:01:01", addresses: [10.77.1.1/24]}
  - {name: b, device: "net_tap_ib$$,iface=fidlb$$,mac=02:00:00:77:02:01", addresses: [10.77.2.1/24]}
workers:
  - {lcore: 1, cpu: 1, rx: [{port: a}, {port: b}]}
neighbours:
  - {ip: 10.77.1.2, mac: "02:00:00:77:01:02", port: a}
  - {ip: 10.77.2.2, mac: "02:00:00:77:02:02", port: b}
control: {cpu: 0, socket: $WORK/fwd.sock}
datapath: {idle_sleep_us: $v}
YAML
    "$REL/fwd" "$WORK/fwd.yaml" > "$WORK/fwd.log" 2>&1 &
    FWD_PID=$!
    wait_forwarding "$WORK/fwd.log"
    for ns in "$NS_A" "$NS_B"; do
        ip netns del "$ns" 2> /dev/null || true
        ip netns add "$ns"
        ip -n "$ns" link set lo up
    done
    while read -r ns iface mac addr gw gwmac; do
        ip link set "$iface" netns "$ns"
        ip -n "$ns" link set "$iface" address "$mac"
        ip -n "$ns" addr add "$addr" dev "$iface"
        ip -n "$ns" link set "$iface" up
        ip -n "$ns" route add default via "$gw"
        ip -n "$ns" neigh replace "$gw" lladdr "$gwmac" dev "$iface" nud permanent
    done << EOF
$NS_A fidla$$ 02:00:00:77:01:02 10.77.1.2/24 10.77.1.1 02:00:00:77:01:01
$NS_B fidlb$$ 02:00:00:77:02:02 10.77.2.2/24 10.77.2.1 02:00:00:77:02:01
EOF
    # Link-local chatter (router solicitations, MLD) dies down first.
    sleep 2
}

# The worker thread's CPU seconds so far.
worker_cpu() {
    local t
    for t in /proc/"$FWD_PID"/task/*; do
        if [ "$(cat "$t/comm")" = rte-worker-1 ]; then
            awk -v hz="$(getconf CLK_TCK)" '{printf "%.4f\n", ($14 + $15) / hz}' "$t/stat"
            return
        fi
    done
    echo "no rte-worker-1 thread in $FWD_PID" >&2
    return 1
}

# ping COUNT INTERVAL: "avg max lost" of the round trips (ms).
pingrtt() {
    ip netns exec "$NS_A" ping -q -c "$1" -i "$2" -W 1 10.77.2.2 | awk '
        / packets transmitted/ {sent = $1; got = $4}
        /^rtt/ {split($4, r, "/"); avg = r[2]; max = r[3]}
        END {printf "%s %s %d\n", avg, max, sent - got}'
}

# The round trips of one bound's runs ("avg max lost;" each) as a table cell.
rtt_cell() {
    tr ';' '\n' | grep . | awk '{s = $1 " / " $2; if ($3 > 0) s = s " (" $3 " lost)"; o = o (NR > 1 ? ", " : "") s} END {print o}'
}

declare -A CPU RTT_Q RTT_F
for r in $(seq 1 "$ROUNDS"); do
    n=${#VALUES[@]}
    for k in $(seq 0 $((n - 1))); do
        v=${VALUES[$(((k + r - 1) % n))]}
        start "$v"
        c0=$(worker_cpu)
        sleep "$IDLE_S"
        c1=$(worker_cpu)
        cpu=$(awk -v a="$c0" -v b="$c1" -v s="$IDLE_S" 'BEGIN {printf "%.3f", (b - a) / s}')
        q=$(pingrtt 20 0.2)
        f=$(pingrtt 500 0.002)
        stop_fwd
        CPU[$v]+="$cpu "
        RTT_Q[$v]+="$q;"
        RTT_F[$v]+="$f;"
        echo "round $r idle_sleep_us $v: worker CPU $cpu; ping 0.2 s apart avg/max/lost $q; 2 ms apart $f" >&2
    done
done

{
    echo "# Idle workers: their CPU and the latency their sleeping adds"
    echo
    echo "- commit $(commit_id); command: \`deploy/bench/idle.sh\` (VALUES=\"${VALUES[*]}\" ROUNDS=$ROUNDS IDLE_S=$IDLE_S)"
    echo "- machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; DPDK $(dpdk_version)"
    echo "- two net_tap ports in network namespaces, one worker on CPU 1; the worker's CPU"
    echo "  over ${IDLE_S} s without traffic (share of one CPU), then ping's round trip"
    echo "  through the appliance (ms, avg / max of each run; lost in brackets when any)"
    echo
    echo "| idle_sleep_us | worker CPU while idle (each round) | 20 pings 0.2 s apart: avg / max | 500 pings 2 ms apart: avg / max |"
    echo "|---|---|---|---|"
    for v in "${VALUES[@]}"; do
        echo "| $v | ${CPU[$v]% } | $(printf '%s' "${RTT_Q[$v]}" | rtt_cell) | $(printf '%s' "${RTT_F[$v]}" | rtt_cell) |"
    done
} | append_results "$OUT" > /dev/null
echo "results: $OUT" >&2
