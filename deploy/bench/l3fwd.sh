#!/usr/bin/env bash
# DPDK's l3fwd on the throughput recipe: the anchor that the forwarding goal
# names ("l3fwd LPM's ratio to testpmd macswap").
#
#   deploy/bench/l3fwd.sh PCAP ROUTES [CLASSBENCH_RULES]
#
# Replays PCAP on net_pcap (port 0) with ROUTES /24 routes to net_null
# (port 1), the daemon's routes in the same recipe (lib.sh's replay_prefix4), one lcore (CPU 1) polling both ports, and prints the Rx rates
# (Mpps) of port 0 over two 10 s intervals, read with dpdk-proc-info.
# FAMILY=6: the IPv6 recipe's ROUTES /64 routes instead (replay_prefix6),
# for an IPv6 PCAP.
#
# Without CLASSBENCH_RULES: LPM mode (rte_lpm, rte_lpm6 for IPv6), or with
# LOOKUP=fib FIB mode (rte_fib DIR24_8, rte_fib6 TRIE: the anchors of
# deploy/bench/fib.sh). With them (IPv4 only): ACL mode, where
# l3fwd classifies every packet with rte_acl against its route rules and the
# set's rules together (the rule set of the loaded recipe). Its set rules can
# only drop, so the routes are listed first, as the higher priorities: every
# packet is forwarded, after a classification over all of them (rte_acl
# finds the highest-priority match whatever it is).
#
# l3fwd is built from Debian's copy of DPDK's examples (dpdk-doc, installed
# here with make if missing) into target/l3fwd, with one change: it asks
# every port for the Rx checksum offloads, which net_pcap does not have, so
# the request is masked to the port's capabilities. l3fwd trusts the NIC's
# checksum verdict and checks nothing in software when there is none; the
# daemon verifies the IPv4 header checksum itself (as Linux and VPP do), so
# the two are not doing quite the same work per packet.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
need_root
PCAP="${1:?usage: deploy/bench/l3fwd.sh PCAP ROUTES [CLASSBENCH_RULES]}"
ROUTES="${2:?usage: deploy/bench/l3fwd.sh PCAP ROUTES [CLASSBENCH_RULES]}"
RULES="${3:-}"
LOOKUP="${LOOKUP:-lpm}"
replay_family
case "$LOOKUP" in
    lpm | fib) ;;
    *) echo "$0: LOOKUP must be lpm or fib" >&2; exit 1 ;;
esac
if [ -n "$RULES" ] && { [ "$FAMILY" = 6 ] || [ "$LOOKUP" != lpm ]; }; then
    echo "$0: CLASSBENCH_RULES (ACL mode) is IPv4 only, without LOOKUP" >&2
    exit 1
fi
if [ -n "${FWD_BUNDLE:-}" ]; then
    echo "$0: not from a bundle (l3fwd is built here, and read by a secondary process on hugetlbfs)" >&2
    exit 1
fi
EX=/usr/share/dpdk/examples
BUILD="$ROOT/target/l3fwd"

setup_host --hugepages 512 >&2

# The examples' sources and make (the examples' Makefile; the rest of the
# toolchain is setup.sh's).
if [ ! -f "$EX/l3fwd/main.c" ] || ! command -v make > /dev/null; then
    apt_install dpdk-doc make
fi
if [ ! -x "$BUILD/l3fwd/build/l3fwd" ] || [ "$EX/l3fwd/main.c" -nt "$BUILD/l3fwd/build/l3fwd" ]; then
    rm -rf "$BUILD"
    mkdir -p "$BUILD"
    cp -r "$EX/l3fwd" "$EX/common" "$BUILD/"
    # The one change (see above), after the line that masks the RSS hash
    # functions to the port's.
    sed -i '/local_port_conf.rx_adv_conf.rss_conf.rss_hf &=/{n;s/$/\n\t\tlocal_port_conf.rxmode.offloads \&= dev_info.rx_offload_capa;\n\t\tport_conf.rxmode.offloads \&= dev_info.rx_offload_capa;/}' \
        "$BUILD/l3fwd/main.c"
    grep -q 'rxmode.offloads &= dev_info.rx_offload_capa' "$BUILD/l3fwd/main.c" \
        || { echo "$0: could not patch l3fwd's main.c (another DPDK version?)" >&2; exit 1; }
    make -s -C "$BUILD/l3fwd" > "$BUILD/make.log" 2>&1 \
        || { cat "$BUILD/make.log" >&2; echo "$0: building l3fwd failed" >&2; exit 1; }
fi

WORK="$(mktemp -d /tmp/fwd-l3fwd.XXXXXX)"
# A secondary process (dpdk-proc-info) needs the primary's hugepage files.
mkdir "$WORK/huge"
mount -t hugetlbfs nodev "$WORK/huge"
pid=""
cleanup() {
    [ -n "$pid" ] && kill -INT "$pid" 2> /dev/null && wait "$pid" 2> /dev/null
    umount "$WORK/huge" 2> /dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
if [ -z "$RULES" ] && [ "$FAMILY" = 6 ]; then
    mode=(--lookup="$LOOKUP")
    echo "R192.0.2.0/24 1" > "$WORK/v4.cfg"
    for ((i = 0; i < ROUTES; i++)); do
        echo "R$(replay_prefix6 "$i") 1"
    done > "$WORK/v6.cfg"
elif [ -z "$RULES" ]; then
    mode=(--lookup="$LOOKUP")
    for ((i = 0; i < ROUTES; i++)); do
        echo "R$(replay_prefix4 "$i") 1"
    done > "$WORK/v4.cfg"
    echo "R2001:db8::/32 1" > "$WORK/v6.cfg"
else
    mode=(--lookup=acl)
    {
        for ((i = 0; i < ROUTES; i++)); do
            echo "R0.0.0.0/0 $(replay_prefix4 "$i") 0 : 65535 0 : 65535 0x0/0x0 1"
        done
        # The ClassBench lines as they are ('@' rules; l3fwd reads the first
        # five fields and ignores the flags column).
        grep '^@' "$RULES"
    } > "$WORK/v4.cfg"
    echo "R0:0:0:0:0:0:0:0/0 2001:db8:0:0:0:0:0:0/32 0 : 65535 0 : 65535 0x0/0x0 1" > "$WORK/v6.cfg"
fi
prefix="l3fwd$$"
"$BUILD/l3fwd/build/l3fwd" -l 1 --no-pci --no-telemetry --huge-dir "$WORK/huge" \
    --file-prefix "$prefix" \
    --vdev "net_pcap0,rx_pcap=$PCAP,infinite_rx=1" --vdev "net_null0,no-rx=1" \
    -- -p 0x3 -P --config="(0,0,1),(1,0,1)" --parse-ptype "${mode[@]}" \
    --rule_ipv4="$WORK/v4.cfg" --rule_ipv6="$WORK/v6.cfg" \
    --eth-dest=1,02:00:00:00:09:02 > "$WORK/l3fwd.out" 2>&1 < /dev/null &
pid=$!
# Port 0's Rx packets, port 1's Tx packets and the time they were read.
sample() {
    local n
    n=$(dpdk-proc-info --file-prefix "$prefix" --no-pci --huge-dir "$WORK/huge" -- --stats 2> /dev/null |
        awk '/statistics for port/ {p = $(NF - 1)} p == "0" && /^ *RX-packets/ {rx = $2}
             p == "1" && /^ *TX-packets/ {tx = $2} END {if (rx != "" && tx != "") print rx, tx}')
    echo "${n:-x x} $(date +%s.%N)"
}
sleep 11
s0=$(sample)
sleep 10
s1=$(sample)
sleep 10
s2=$(sample)
kill -0 "$pid" 2> /dev/null || { tail -n 5 "$WORK/l3fwd.out" >&2; echo "$0: l3fwd exited early" >&2; exit 1; }
# Every packet received must have been forwarded (the rate is of forwarding).
echo "$s0 $s1 $s2" | awk '$1 == "x" || $4 == "x" || $7 == "x" {exit 1}
    $8 < 0.99 * $7 {printf "l3fwd forwarded %d of %d packets\n", $8, $7 > "/dev/stderr"; exit 1}
    {printf "%.3f %.3f\n", ($4 - $1) / ($6 - $3) / 1e6, ($7 - $4) / ($9 - $6) / 1e6}' \
    || { tail -n 5 "$WORK/l3fwd.out" >&2; echo "$0: could not read l3fwd's port stats, or it dropped" >&2; exit 1; }
