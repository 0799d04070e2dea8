#!/usr/bin/env bash
# The "reconf" test (FD.io CSIT's name) on the pcap recipe: one worker
# forwards an endless replay of the TRex IPv4 routing profile's packets
# (deploy/trex/profiles/ip4_routing.py, direction 0: 64 B, 1000
# destinations, 4096 flows, exported with the TRex library) through the
# matching address plan's tables, while the control plane, once a second,
#   - applies ROUTE_CHANGES route changes (`fwdctl -b`: `route replace` of
#     ROUTE_CHANGES/2 /24s from 20.0.0.0 via a third port, then their
#     deletes: the batch leaves the table as it found it), and
#   - replaces a RULES-rule set (`rule flush`, RULES-1 deny rules the traffic
#     does not match and a final permit, in one batch);
# both batches are `fwd-trex batch`'s, the TRex driver's reconf actions.
# It reports the worker's Mpps per second in ROUNDS rounds of BLOCK_S quiet
# seconds, BLOCK_S churn seconds and, as a control, BLOCK_S seconds of a
# busy loop on the churn's CPU that touches no memory (it tells the
# machine's own effect from the churn's), and the dip of the medians. It
# proves that no packet went to a wrong port: the third port is a net_pcap
# whose tx file must hold none of the traffic's frames, and the right port
# must have sent every packet the worker received (fwdctl --json stats,
# drops by reason). Results go to bench-results/reconf.md.
#
#   deploy/bench/reconf.sh
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
need_root
OUT="${RECONF_OUT:-$ROOT/bench-results/reconf.md}"
ROUTE_CHANGES="${ROUTE_CHANGES:-100000}"
RULES="${RULES:-10000}"
ROUNDS="${ROUNDS:-4}"
BLOCK_S="${BLOCK_S:-6}"

setup_host --hugepages 512 > /dev/null
build_release
BIN="$REL"
TREX="$ROOT/deploy/trex"
WORK="$(mktemp -d /tmp/fwd-reconf.XXXXXX)"
FWD_PID=""
cleanup() {
    stop_fwd
    rm -rf "$WORK"
}
trap cleanup EXIT

# The traffic, the config (ports p0 <- replay, p1 -> net_null, wrong -> tx
# pcap) and the tables (the plan's, as a saved state loaded at start).
TUNABLES="size=64,dests=1000,flows=4096"
(cd "$TREX" && "$TREX_PY" -m fwdtrex.pcapexport -n 4096 -d 0 -t "$TUNABLES" \
    -o "$WORK/traffic.pcap" profiles/ip4_routing.py) > /dev/null
(cd "$TREX" && "$TREX_PY" - "$WORK" <<'EOF'
import os, sys
from fwdtrex import appliance
w = sys.argv[1]
with open(os.path.join(w, "tables.conf"), "w") as f:
    f.write(appliance.saved_state_text(appliance.Test("ip4", directions=(0,))))
with open(os.path.join(w, "fwd.yaml"), "w") as f:
    f.write(appliance.reconf_config(
        os.path.join(w, "traffic.pcap"), os.path.join(w, "wrong.pcap"),
        os.path.join(w, "fwd.sock"), os.path.join(w, "tables.conf"), w))
EOF
)
read -r WRONG_NH < <(cd "$TREX" && "$TREX_PY" -c 'from fwdtrex import appliance; print(appliance.WRONG_V4[1])')
"$TREX/fwd-trex" batch routes --routes "$ROUTE_CHANGES" --route-base 20.0.0.0 \
    --via "$WRONG_NH" --dev wrong -o "$WORK/routes" > /dev/null
"$TREX/fwd-trex" batch rules --rules "$RULES" -o "$WORK/rules" > /dev/null

"$BIN/fwd" "$WORK/fwd.yaml" --stats-interval 1 > "$WORK/fwd.out" 2> "$WORK/fwd.log" &
FWD_PID=$!
wait_forwarding "$WORK/fwd.log"
CTL=("$BIN/fwdctl" -s "$WORK/fwd.sock")
# fwdctl and the churn share CPU 0 with the control lcore; CPU 1 is the worker's.
pin=(taskset -c 0)

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
        "${pin[@]}" "${CTL[@]}" -b "$WORK/routes" > /dev/null
        t1=$(date +%s.%N)
        "${pin[@]}" "${CTL[@]}" -b "$WORK/rules" > /dev/null
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
stop_fwd

rates() {
    local r
    for r in "$@"; do
        sed -n "$((${r%%:*} + 2)),${r##*:}p" "$WORK/fwd.out" | grep -o 'p0: rx *[0-9.]*' | awk '{print $3}'
    done
}
base="$(rates "${quiet_lines[@]}" | tr '\n' ' ')"
churn="$(rates "${churn_lines[@]}" | tr '\n' ' ')"
burn="$(rates "${burn_lines[@]}" | tr '\n' ' ')"
mb=$(echo "$base" | median)
mc=$(echo "$churn" | median)
minc=$(echo "$churn" | tr ' ' '\n' | grep . | sort -n | head -1)
mu=$(echo "$burn" | median)
burndip=$(awk -v b="$mb" -v c="$mu" 'BEGIN {printf "%.1f", 100 * (1 - c / b)}')
dip=$(awk -v b="$mb" -v c="$mc" 'BEGIN {printf "%.1f", 100 * (1 - c / b)}')
mindip=$(awk -v b="$mb" -v c="$minc" 'BEGIN {printf "%.1f", 100 * (1 - c / b)}')

# Wrong-port check: every frame in wrong.pcap, and how many were the traffic's
# (IPv4 destination in the plan's direction-0 block).
read -r wrong_all wrong_traffic < <(cd "$TREX" && "$TREX_PY" - "$WORK/wrong.pcap" <<'EOF'
import ipaddress, sys
from fwdtrex import pcapexport, plans
block = ipaddress.ip_network(plans.dst_block(4, 0))
frames = pcapexport.read_pcap(sys.argv[1])
ours = [f for f in frames if len(f) >= 34 and f[12:14] == b"\x08\x00"
        and ipaddress.ip_address(f[30:34]) in block]
print(len(frames), len(ours))
EOF
)
read -r rx_in tx_out drops < <(python3 - "$stats" <<'EOF'
import json, sys
s = json.loads(sys.argv[1])["stats"]
ports = {p["name"]: p for p in s["ports"]}
drops = ",".join(f"{d['reason']}={d['packets']}" for d in s["drops"] if d["packets"]) or "none"
print(ports["p0"]["rx_packets"], ports["p1"]["tx_packets"], drops)
EOF
)

{
    echo "# Reconf: route and rule churn under load, pcap recipe, one worker"
    echo
    echo "- command: \`deploy/bench/reconf.sh\` (ROUTE_CHANGES=$ROUTE_CHANGES RULES=$RULES ROUNDS=$ROUNDS BLOCK_S=$BLOCK_S)"
    echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(commit_id)"
    echo "- machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; DPDK $(dpdk_version)"
    echo "- traffic: deploy/trex/profiles/ip4_routing.py -t $TUNABLES, direction 0, its first 4096 packets"
    echo "  (fwdtrex.pcapexport), replayed endlessly into p0, routed by the plan's /24s to p1 (net_null);"
    echo "  the churned routes point to port wrong (net_pcap tx file)"
    echo "- $ROUNDS rounds of $BLOCK_S s quiet, $BLOCK_S s of churn, $BLOCK_S s of the control busy loop;"
    echo "  churn, once a second: one \`fwdctl -b\` of $ROUTE_CHANGES route changes (\`fwd-trex batch routes\`:"
    echo "  replace then delete $((ROUTE_CHANGES / 2)) /24s from 20.0.0.0), then one of \`rule flush\` + $RULES rules"
    echo "  (\`fwd-trex batch rules\`; none but the last, a permit, matches the traffic). fwdctl runs on"
    echo "  CPU 0 with the control lcore; the worker has CPU 1."
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
    echo "Counters at the end: p0 rx $rx_in, p1 tx $tx_out, drops $drops (fwdctl --json stats)."
} | append_results "$OUT"
[ "$wrong_traffic" = 0 ] || { echo "reconf: packets went to the wrong port" >&2; exit 1; }
