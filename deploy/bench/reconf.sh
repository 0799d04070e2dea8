#!/usr/bin/env bash
# The "reconf" test (FD.io CSIT's name) on the pcap recipe: one worker
# forwards an endless replay of TRAFFIC_PCAP while the control plane
#   - applies ROUTE_CHANGES route changes per second (`fwdctl -b`: the
#     add half and the delete half of a set of /24s in 20.0.0.0/7, via a
#     third port), and
#   - replaces a RULES-rule set every second (`rule flush` and the adds in
#     one batch, alternating between two sets; none matches the traffic).
# It reports the worker's Mpps per second in ROUNDS rounds of BLOCK_S quiet
# seconds then BLOCK_S churn seconds (the first second of each block, which
# straddles the switch, is left out of the quiet side), the dip of the median, and proves that no
# packet went to a wrong port: the third port is a net_pcap whose tx file
# must hold none of the traffic's frames. A control phase runs a busy loop on
# the churn's CPU instead, to tell the machine's own effect from the churn's; and the right port must have sent
# every packet the worker received (fwdctl --json stats, drops by reason).
# Results go to bench-results/reconf.md.
#
#   deploy/bench/reconf.sh [TRAFFIC_PCAP]
#
# Without TRAFFIC_PCAP the traffic is the TRex IPv4 routing profile's first
# packets (deploy/trex/profiles, exported by deploy/trex/export-pcap with the
# TRex library), routed by the matching plan's /24 routes.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
need_root
OUT="${RECONF_OUT:-$ROOT/bench-results/reconf.md}"
ROUTE_CHANGES="${ROUTE_CHANGES:-100000}"
RULES="${RULES:-10000}"
ROUNDS="${ROUNDS:-4}"
BLOCK_S="${BLOCK_S:-6}"

"$ROOT/deploy/setup.sh" --hugepages 512 > /dev/null
build_release
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release"
WORK="$(mktemp -d /tmp/fwd-reconf.XXXXXX)"
FWD_PID=""
cleanup() {
    [ -n "$FWD_PID" ] && kill -INT "$FWD_PID" 2> /dev/null && wait "$FWD_PID" 2> /dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

TRAFFIC="${1:-}"
if [ -z "$TRAFFIC" ]; then
    TRAFFIC="$WORK/traffic.pcap"
    "$BIN/fwd-flows" "$TRAFFIC" --flows 4096 --size 64 --dst 10.1.0.1 --dst-count 1000 > /dev/null
fi

# Ports: in (the replay), out (the right port: net_null counts what it is
# given), wrong (where the churned routes point; its tx pcap must stay free of
# the traffic).
write_replay_config "$TRAFFIC" "$WORK/fwd.yaml" 1000 "net_null0,no-rx=1" true
python3 - "$WORK/fwd.yaml" "$WORK" <<'EOF'
import sys
cfg, work = sys.argv[1], sys.argv[2]
s = open(cfg).read()
s = s.replace("workers:\n", f"""  - name: wrong
    device: net_pcap1,tx_pcap={work}/wrong.pcap
    addresses: [10.8.0.1/24]
control: {{socket: {work}/fwd.sock, cpu: 0}}
workers:
""")
s = s.replace("neighbours:\n", """neighbours:
  - {ip: 10.8.0.2, mac: "02:00:00:00:08:02", port: wrong}
""")
s = s.replace("rx: [{port: in}, {port: out}]", "rx: [{port: in}, {port: out}, {port: wrong}]")
open(cfg, "w").write(s)
EOF

# The churn batches: A adds ROUTE_CHANGES/2 /24s, B deletes them and adds as
# many others, C deletes those and adds the first ones back... alternating
# A' = B's inverse, so every batch is ROUTE_CHANGES changes and the table size
# stays put. The rule sets R0 and R1: RULES drop rules on sources the traffic
# never has (198.18.0.0/15, two disjoint halves).
half=$((ROUTE_CHANGES / 2))
awk -v n="$half" 'BEGIN { for (i = 0; i < n; i++)
    printf "route add 20.%d.%d.0/24 via 10.8.0.2 dev wrong\n", int(i / 256) % 256, i % 256 }' > "$WORK/add0"
awk -v n="$half" 'BEGIN { for (i = 0; i < n; i++)
    printf "route add 21.%d.%d.0/24 via 10.8.0.2 dev wrong\n", int(i / 256) % 256, i % 256 }' > "$WORK/add1"
sed 's/^route add \([^ ]*\).*/route del \1/' "$WORK/add0" > "$WORK/del0"
sed 's/^route add \([^ ]*\).*/route del \1/' "$WORK/add1" > "$WORK/del1"
cat "$WORK/del0" "$WORK/add1" > "$WORK/swap01"
cat "$WORK/del1" "$WORK/add0" > "$WORK/swap10"
for k in 0 1; do
    { echo "rule flush"
      awk -v n="$RULES" -v k="$k" 'BEGIN { for (i = 0; i < n; i++)
          printf "rule add prio %d src 198.%d.%d.%d/32 proto udp action drop\n",
                 i + 1, 18 + k, int(i / 256) % 256, i % 256 }'
    } > "$WORK/rules$k"
done

"$BIN/fwd" "$WORK/fwd.yaml" --stats-interval 1 > "$WORK/fwd.out" 2> "$WORK/fwd.log" &
FWD_PID=$!
for _ in $(seq 1 300); do
    grep -q "forwarding with" "$WORK/fwd.log" && break
    sleep 0.1
done
grep -q "forwarding with" "$WORK/fwd.log" || { cat "$WORK/fwd.log" >&2; exit 1; }
CTL=("$BIN/fwdctl" -s "$WORK/fwd.sock")
# fwdctl and the churn share CPU 0 with the control lcore; CPU 1 is the worker's.
pin=(taskset -c 0)
"${pin[@]}" "${CTL[@]}" -b "$WORK/add0" > /dev/null
"${pin[@]}" "${CTL[@]}" -b "$WORK/rules0" > /dev/null

mark() { wc -l < "$WORK/fwd.out"; }
# Rounds of BLOCK_S quiet seconds then BLOCK_S churn seconds, so that the
# shared machine's drift hits both phases alike. Churn: one route batch and one
# rule-set swap per second, each timed.
route_s=()
rule_s=()
k=0
quiet_lines=()
churn_lines=()
burn_lines=()
sleep 2
for ((round = 0; round < ROUNDS; round++)); do
    a=$(mark)
    sleep "$BLOCK_S"
    b=$(mark)
    quiet_lines+=("$a:$b")
    end=$((SECONDS + BLOCK_S))
    while [ "$SECONDS" -lt "$end" ]; do
        t0=$(date +%s.%N)
        if [ $((k % 2)) = 0 ]; then r=swap01; s=rules1; else r=swap10; s=rules0; fi
        "${pin[@]}" "${CTL[@]}" -b "$WORK/$r" > /dev/null
        t1=$(date +%s.%N)
        "${pin[@]}" "${CTL[@]}" -b "$WORK/$s" > /dev/null
        t2=$(date +%s.%N)
        route_s+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')")
        rule_s+=("$(awk -v a="$t1" -v b="$t2" 'BEGIN {printf "%.3f", b - a}')")
        k=$((k + 1))
        rest=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {r = 1 - (b - a); print (r > 0 ? r : 0)}')
        sleep "$rest"
    done
    # The interval line that straddles the end of the churn counts as churn.
    sleep 1
    c=$(mark)
    churn_lines+=("$b:$c")
    # Control: a busy loop on CPU 0 that touches no memory, for as long. If the
    # worker dips as much here, the dip is the machine (CPU 0 and 1 sharing a
    # host core, or other tenants pushed onto CPU 1), not the churn.
    timeout "$BLOCK_S" "${pin[@]}" sh -c 'while :; do :; done' || true
    sleep 1
    burn_lines+=("$c:$(mark)")
done
stats="$("${CTL[@]}" --json stats)"
kill -INT "$FWD_PID"
wait "$FWD_PID" || true
FWD_PID=""

rates() {
    local r
    for r in "$@"; do
        sed -n "$((${r%%:*} + 2)),${r##*:}p" "$WORK/fwd.out" | grep -o 'in: rx *[0-9.]*' | awk '{print $3}'
    done
}
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.3f", (a[NR/2]+a[NR/2+1])/2}'; }
base="$(rates "${quiet_lines[@]}" | tr '\n' ' ')"
churn="$(rates "${churn_lines[@]}" | tr '\n' ' ')"
burn="$(rates "${burn_lines[@]}" | tr '\n' ' ')"
mb=$(echo "$base" | tr ' ' '\n' | grep . | median)
mc=$(echo "$churn" | tr ' ' '\n' | grep . | median)
minc=$(echo "$churn" | tr ' ' '\n' | grep . | sort -n | head -1)
mu=$(echo "$burn" | tr ' ' '\n' | grep . | median)
burndip=$(awk -v b="$mb" -v c="$mu" 'BEGIN {printf "%.1f", 100 * (1 - c / b)}')
dip=$(awk -v b="$mb" -v c="$mc" 'BEGIN {printf "%.1f", 100 * (1 - c / b)}')
mindip=$(awk -v b="$mb" -v c="$minc" 'BEGIN {printf "%.1f", 100 * (1 - c / b)}')

# Wrong-port check: every frame in wrong.pcap, and how many were the traffic's
# (IPv4 destination in 10.1.0.0/16).
read -r wrong_all wrong_traffic < <(python3 - "$WORK/wrong.pcap" <<'EOF'
import struct, sys
d = open(sys.argv[1], "rb").read()
le = d[:4] == b"\xd4\xc3\xb2\xa1"
o, n, t = 24, 0, 0
while o + 16 <= len(d):
    incl = struct.unpack("<I" if le else ">I", d[o + 8:o + 12])[0]
    f = d[o + 16:o + 16 + incl]
    n += 1
    if len(f) >= 34 and f[12:14] == b"\x08\x00" and f[30] == 10 and f[31] == 1:
        t += 1
    o += 16 + incl
print(n, t)
EOF
)
read -r rx_in tx_out drops < <(python3 - "$stats" <<'EOF'
import json, sys
s = json.loads(sys.argv[1])["stats"]
ports = {p["name"]: p for p in s["ports"]}
drops = ",".join(f"{d['reason']}={d['packets']}" for d in s["drops"] if d["packets"]) or "none"
print(ports["in"]["rx_packets"], ports["out"]["tx_packets"], drops)
EOF
)

{
    echo "# Reconf: route and rule churn under load, pcap recipe, one worker"
    echo
    echo "- command: \`deploy/bench/reconf.sh${1:+ $1}\` (ROUTE_CHANGES=$ROUTE_CHANGES RULES=$RULES ROUNDS=$ROUNDS BLOCK_S=$BLOCK_S)"
    echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo '+dirty')"
    echo "- machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; DPDK $(pkg-config --modversion libdpdk)"
    echo "- traffic: ${1:-4096 64-byte UDP flows to 1000 /24s (fwd-flows)}, replayed endlessly into port in;"
    echo "  routed to port out (net_null); the churned routes point to port wrong (net_pcap tx file)"
    echo "- $ROUNDS rounds of $BLOCK_S s quiet, then $BLOCK_S s of churn; churn, once a second: one \`fwdctl -b\` of $ROUTE_CHANGES route changes"
    echo "  ($half deletes + $half adds of /24s in 20.0.0.0/7), then one of \`rule flush\` + $RULES rule adds"
    echo "  (two alternating sets; none matches the traffic). fwdctl runs on CPU 0 with the control lcore;"
    echo "  the worker has CPU 1."
    echo
    echo "| phase | worker Mpps, per second | median |"
    echo "|---|---|---|"
    echo "| quiet | $base | $mb |"
    echo "| churn | $churn | $mc |"
    echo "| control: busy loop on CPU 0, no churn | $burn | $mu |"
    echo
    echo "Dip of the median under churn: **${dip}%** (goal < 2%); worst second: ${mindip}%."
    echo "Dip of the median under the control busy loop: ${burndip}%."
    echo
    echo "| batches applied | route batch wall time, s | rule-set swap wall time, s |"
    echo "|---|---|---|"
    echo "| $k route + $k rule | ${route_s[*]} | ${rule_s[*]} |"
    echo
    echo "Wrong port: $wrong_traffic of the traffic's frames left on port wrong ($wrong_all frames in its pcap)."
    echo "Counters at the end: in rx $rx_in, out tx $tx_out, drops $drops (fwdctl --json stats)."
} > "$OUT"
cat "$OUT"
[ "$wrong_traffic" = 0 ] || { echo "reconf: packets went to the wrong port" >&2; exit 1; }
