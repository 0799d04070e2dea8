#!/usr/bin/env bash
# The main job: set up what is missing, build, and run the appliance on DPDK
# virtual ports with real traffic flowing through it.
#
#   deploy/run.sh [SECONDS]
#
# 4096 UDP flows (64-byte frames) to 1000 destinations are generated into a
# pcap that net_pcap replays endlessly into port `in`; 1000 static /24 routes
# send them via a neighbour out of port `out` (net_null, a sink). The daemon
# prints per-port packets/s every second. Ctrl-C (or SECONDS) stops it and
# prints the final counters.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_root
DURATION="${1:-}"

"$ROOT/deploy/setup.sh"
echo "run: building (release)..."
build_release

tables_heap_thp
WORK="$(mktemp -d /tmp/fwd-run.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
"$REL/fwd-flows" "$WORK/flows.pcap" --flows 4096 --size 64 --dst 10.1.0.1 --dst-count 1000
write_replay_config "$WORK/flows.pcap" "$WORK/fwd.yaml" 1000 "net_null0,no-rx=1"
# What would break the start (the config, hugepages, CPUs, a socket in use),
# each with its fix; warnings (e.g. CPUs not isolated) do not stop the run.
"$REL/fwd" preflight "$WORK/fwd.yaml"
echo "run: config in $WORK/fwd.yaml; starting fwd (Ctrl-C to stop)"
echo "run: from another shell: $REL/fwdctl stats | status | route show | watch"
if [ -n "$DURATION" ]; then
    timeout -s INT "$DURATION" "$REL/fwd" "$WORK/fwd.yaml" --stats-interval 1 || true
else
    "$REL/fwd" "$WORK/fwd.yaml" --stats-interval 1
fi
