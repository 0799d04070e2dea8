#!/usr/bin/env bash
# Control-plane throughput through the real CLI and daemon, side by side with
# Linux in a network namespace created here (no traffic is sent anywhere):
#   - the full IPv4 view (\$FWD_DATA/routing) as one `fwdctl -b` batch,
#     alone and while five other clients dump every route in a loop;
#     `ip -batch` with the same routes;
#   - 100k `rule add` lines in one batch; `tc -b` with 100k u32 filters.
# Results go to bench-results/ctl.md.
#
#   deploy/bench/ctl.sh
#   CTL_LINUX=0 deploy/bench/ctl.sh    # without the Linux references (tc -b takes minutes)
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
need_root
OUT="$ROOT/bench-results/ctl.md"
find_corpora || { echo "$0: $corpora_missing" >&2; exit 1; }
DATA="$FWD_DATA"
[ -f "$DATA/routing/ipv4_fulltable_gaissmai.txt.gz" ] || { echo "no $DATA/routing" >&2; exit 1; }

setup_host
build_release
FWD="$REL/fwd"
CTL="$REL/fwdctl"
WORK="$(mktemp -d /tmp/fwd-ctlbench.XXXXXX)"
NS="fwdbench$$"
cleanup() {
    pkill -f "$WORK/fwd.yaml" 2>/dev/null || true
    pkill -f "$CTL -s $WORK/fwd.sock" 2>/dev/null || true
    ip netns del "$NS" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

full_view_batches "$WORK"
NROUTES=$(wc -l < "$WORK/v4.txt")
awk '{print "route add " $1 " via 10.0.1.2 dev dummy0"}' "$WORK/v4.txt" > "$WORK/routes.ip"
# 100k distinct rules: /24 sources x destination ports.
awk 'BEGIN { for (i = 0; i < 100000; i++)
    printf "rule add prio %d src 10.%d.%d.0/24 dst 192.0.2.0/24 proto tcp dport %d action drop\n",
           i, int(i / 256) % 256, i % 256, 1 + int(i / 65536) }' > "$WORK/rules.batch"
awk 'BEGIN { for (i = 0; i < 100000; i++)
    printf "filter add dev dummy0 parent ffff: protocol ip prio 1 u32 match ip src 10.%d.%d.0/24 match ip dst 192.0.2.0/24 match ip protocol 6 0xff match ip dport %d 0xffff classid :1\n",
           int(i / 256) % 256, i % 256, 1 + int(i / 65536) }' > "$WORK/filters.tc"

start_fwd() {
    write_ctl_config "$WORK/fwd.yaml" "$WORK/fwd.sock" "ctlbench$$"
    "$FWD" "$WORK/fwd.yaml" > "$WORK/fwd.log" 2>&1 &
    wait_forwarding "$WORK/fwd.log"
}
stop_fwd() {
    pkill -INT -f "$WORK/fwd.yaml" || true
    while pgrep -f "$WORK/fwd.yaml" > /dev/null; do sleep 0.1; done
}
secs() { local s e; s=$(date +%s.%N); "$@" > /dev/null; e=$(date +%s.%N); awk -v a="$s" -v b="$e" 'BEGIN { printf "%.2f", b - a }'; }

start_fwd
t_alone=$(secs "$CTL" -s "$WORK/fwd.sock" -b "$WORK/routes.add")
count=$("$CTL" -s "$WORK/fwd.sock" --json route show | grep -o '"prefix"' | wc -l)
t_dump=$(secs "$CTL" -s "$WORK/fwd.sock" route show)
t_del_alone=$(secs "$CTL" -s "$WORK/fwd.sock" -b "$WORK/routes.del")
stop_fwd

start_fwd
for i in 1 2 3 4 5; do
    ( while "$CTL" -s "$WORK/fwd.sock" route show > /dev/null 2>&1; do :; done ) &
done
sleep 1
t_busy=$(secs "$CTL" -s "$WORK/fwd.sock" -b "$WORK/routes.add")
sleep 2
t_del_busy=$(secs "$CTL" -s "$WORK/fwd.sock" -b "$WORK/routes.del")
pkill -f "$CTL -s $WORK/fwd.sock route show" || true
stop_fwd
wait 2>/dev/null || true

start_fwd
t_rules=$(secs "$CTL" -s "$WORK/fwd.sock" -b "$WORK/rules.batch")
nrules=$("$CTL" -s "$WORK/fwd.sock" --json rule show | grep -o '"priority"' | wc -l)
stop_fwd

t_ip="(not run: CTL_LINUX=0)"
t_tc="(not run: CTL_LINUX=0)"
ntc="-"
if [ "${CTL_LINUX:-1}" != 0 ]; then
    ip netns add "$NS"
    ip -n "$NS" link add dummy0 type veth peer name dummy1  # no dummy module here
    ip -n "$NS" link set dummy1 up
    ip -n "$NS" addr add 10.0.1.1/24 dev dummy0
    ip -n "$NS" link set dummy0 up
    t_ip=$(secs ip -n "$NS" -batch "$WORK/routes.ip")
    tc -n "$NS" qdisc add dev dummy0 ingress
    # This kernel has no TC action modules (act_gact): the filters classify
    # (classid) instead of dropping, which is the same insert work.
    t_tc=$(secs tc -n "$NS" -b "$WORK/filters.tc")
    ntc=$(tc -n "$NS" filter show dev dummy0 ingress | grep -c "flowid")
fi

ratio=$(awk -v a="$t_busy" -v b="$t_alone" 'BEGIN { printf "%.2f", a / b }')
del_ratio=$(awk -v a="$t_del_busy" -v b="$t_del_alone" 'BEGIN { printf "%.2f", a / b }')
{
    echo "# Control plane: full-view route batch and 100k-rule batch through fwdctl"
    echo
    echo "- command: \`${CTL_LINUX:+CTL_LINUX=$CTL_LINUX }deploy/bench/ctl.sh\`"
    echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(commit_id)"
    echo "- machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; DPDK $(dpdk_version); kernel $(uname -r)"
    echo "- data: $NROUTES IPv4 prefixes (\$FWD_DATA/routing), each \`via 10.0.1.2 dev p1\`"
    echo "- times are wall clock of the whole \`fwdctl\` process: parse, send, apply as one generation, publish"
    echo
    echo "| what | time (s) | goal |"
    echo "|---|---|---|"
    echo "| fwdctl -b, $NROUTES route add, alone ($count routes dumped after) | $t_alone | < 2 |"
    echo "| same, while 5 clients dump all routes in a loop | $t_busy (x$ratio) | <= 1.1 x alone |"
    echo "| fwdctl -b, $NROUTES route del, alone | $t_del_alone | |"
    echo "| same, while 5 clients dump all routes in a loop | $t_del_busy (x$del_ratio) | <= 1.1 x alone |"
    echo "| one full dump (fwdctl route show) | $t_dump | |"
    echo "| fwdctl -b, 100000 rule add ($nrules rules after) | $t_rules | < 1 |"
    echo "| Linux ip -batch, same $NROUTES routes (netns, veth) | $t_ip | (reference) |"
    echo "| Linux tc -b, 100000 u32 filters ($ntc installed) | $t_tc | (reference) |"
} | append_results "$OUT"
