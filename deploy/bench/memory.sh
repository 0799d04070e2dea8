#!/usr/bin/env bash
# What tables cost in the daemon's memory: each workload is one `fwdctl -b`
# into a fresh daemon (two net_null ports, no traffic), and the daemon's
# resident set is read before and after (and its peak). Workloads, N each
# (default 100,000; seeded, the same on every run):
#   - IPv4 /32 host routes at random addresses (blackhole);
#   - IPv6 /64 routes at random prefixes inside 2000::/3;
#   - IPv6 /128 host routes at random addresses inside 2000::/3;
#   - N/2 UDP rules exact on a random source port, N/2 exact on a random
#     destination port, addresses wild (the set crossed on the ports that
#     the classifier's build budget is for).
# The full views' cost is in route.md (the routing tables' own accounting).
# These run with room for them (`limits.routing_mb` 16384). Then, at the
# default limits (`limits` in the config), two batches that go past them:
#   - N routes, each in a table of its own (past `limits.tables`);
#   - 500,000 IPv6 /128s scattered as above (past `limits.routing_mb`;
#     150,000 were enough before the FIB's pairs, `fwd/src/route/fib.rs`);
#   - N static neighbours off any subnet (past `limits.neighbours`);
#   - N addresses on one port (past `limits.addresses`);
# each must be refused whole; the line refused, the time and the RSS before,
# after and at the peak are recorded.
# Results go to bench-results/memory.md.
#
#   deploy/bench/memory.sh [N]
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
need_root
N="${1:-100000}"
OUT="$ROOT/bench-results/memory.md"

setup_host
build_release
WORK="$(mktemp -d /tmp/fwd-membench.XXXXXX)"
cleanup() {
    pkill -f "$WORK/fwd.yaml" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# Distinct random addresses: awk's seeded rand(), duplicates skipped.
awk -v n="$N" 'BEGIN { srand(1); while (k < n) {
    a = 1 + int(rand() * 223); if (a == 127) continue
    p = sprintf("%d.%d.%d.%d", a, int(rand() * 256), int(rand() * 256), int(rand() * 256))
    if (p in seen) continue; seen[p] = 1; k++
    print "route add " p "/32 blackhole" } }' > "$WORK/v4_32.batch"
# Distinct random IPv6 prefixes inside 2000::/3: $1 seed, $2 groups of 16
# bits given (the rest zero), $3 prefix length, $4 how many (default N).
v6_routes() {
    awk -v n="${4:-$N}" -v seed="$1" -v groups="$2" -v len="$3" 'BEGIN { srand(seed); while (k < n) {
        p = sprintf("%x", 8192 + int(rand() * 8192))
        for (i = 1; i < groups; i++) p = p sprintf(":%x", int(rand() * 65536))
        if (groups < 8) p = p "::"
        if (p in seen) continue; seen[p] = 1; k++
        print "route add " p "/" len " blackhole" } }'
}
v6_routes 2 4 64 > "$WORK/v6_64.batch"
v6_routes 3 8 128 > "$WORK/v6_128.batch"
v6_routes 5 8 128 500000 > "$WORK/over_memory.batch"
awk -v n="$N" 'BEGIN { for (i = 1; i <= n; i++)
    print "route add 10.0.0.0/8 blackhole table " i }' > "$WORK/over_tables.batch"
awk -v n="$N" 'BEGIN { for (i = 0; i < n; i++)
    printf "neigh add 172.%d.%d.%d lladdr 02:00:00:00:00:01 dev p1\n",
        16 + int(i / 65536) % 16, int(i / 256) % 256, i % 256 }' > "$WORK/over_neighbours.batch"
awk -v n="$N" 'BEGIN { for (i = 0; k < n; i++) { if (i % 256 == 0 || i % 256 == 255) continue; k++
    printf "address add 11.%d.%d.%d/8 dev p0\n", int(i / 65536) % 256, int(i / 256) % 256, i % 256 } }' > "$WORK/over_addresses.batch"
awk -v n="$N" 'BEGIN { srand(4); for (i = 0; i < n; i++)
    printf "rule add prio %d proto udp %s %d action drop\n", 1000 + i,
           (i % 2 ? "dport" : "sport"), 1 + int(rand() * 65535) }' > "$WORK/crossed.batch"

rss_kb() { awk -v k="$2" '$1 == k ":" { print $2 }' "/proc/$1/status"; }

rows=""
for w in v4_32 v6_64 v6_128 crossed; do
    write_ctl_config "$WORK/fwd.yaml" "$WORK/fwd.sock" "fwdmem$$"
    # What items cost, not where the limits are: room for N of the costliest.
    echo "limits: {routing_mb: 16384}" >> "$WORK/fwd.yaml"
    "$REL/fwd" "$WORK/fwd.yaml" > "$WORK/log" 2>&1 &
    pid=$!
    wait_forwarding "$WORK/log"
    before=$(rss_kb "$pid" VmRSS)
    t0=$(date +%s.%N)
    "$REL/fwdctl" -s "$WORK/fwd.sock" -b "$WORK/$w.batch" > /dev/null
    t1=$(date +%s.%N)
    after=$(rss_kb "$pid" VmRSS)
    peak=$(rss_kb "$pid" VmHWM)
    kill -INT "$pid"
    wait "$pid" || true
    row=$(awk -v w="$w" -v n="$N" -v b="$before" -v a="$after" -v p="$peak" -v t0="$t0" -v t1="$t1" \
        'BEGIN { printf "| %s | %d | %.1f s | %.0f MB | %.0f MB | %.0f MB | %.0f B |", w, n, t1 - t0, b / 1024, a / 1024, p / 1024, (a - b) * 1024 / n }')
    echo "$row"
    rows="$rows$row"$'\n'
done

# At the default limits: each batch must be refused, nothing applied.
limit_rows=""
for w in over_tables over_memory over_neighbours over_addresses; do
    write_ctl_config "$WORK/fwd.yaml" "$WORK/fwd.sock" "fwdmem$$"
    "$REL/fwd" "$WORK/fwd.yaml" > "$WORK/log" 2>&1 &
    pid=$!
    wait_forwarding "$WORK/log"
    before=$(rss_kb "$pid" VmRSS)
    t0=$(date +%s.%N)
    if "$REL/fwdctl" -s "$WORK/fwd.sock" -b "$WORK/$w.batch" > "$WORK/out" 2>&1; then
        echo "memory: $w was applied, not refused" >&2
        exit 1
    fi
    t1=$(date +%s.%N)
    after=$(rss_kb "$pid" VmRSS)
    peak=$(rss_kb "$pid" VmHWM)
    kill -INT "$pid"
    wait "$pid" || true
    grep -q "nothing was applied" "$WORK/out" || { cat "$WORK/out" >&2; exit 1; }
    why=$(sed -n 's/^fwdctl: [^:]*: line \([0-9]*\): too_large: \(.*[^ ]\) *(the config.*$/line \1: \2/p' "$WORK/out")
    [ -n "$why" ] || { cat "$WORK/out" >&2; exit 1; }
    row=$(awk -v w="$w" -v n="$(wc -l < "$WORK/$w.batch")" -v why="$why" -v b="$before" -v a="$after" -v p="$peak" -v t0="$t0" -v t1="$t1" \
        'BEGIN { printf "| %s | %d | %s | %.1f s | %.0f MB | %.0f MB | %.0f MB |", w, n, why, t1 - t0, b / 1024, a / 1024, p / 1024 }')
    echo "$row"
    limit_rows="$limit_rows$row"$'\n'
done

{
    echo "# What tables cost in the daemon's memory"
    echo
    echo "- commit $(commit_id); command: \`deploy/bench/memory.sh $N\`"
    echo "- machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
    echo
    echo "| workload | items | fwdctl -b | RSS before | after | peak | RSS an item |"
    echo "|---|---|---|---|---|---|---|"
    printf "%s" "$rows"
    echo
    echo "At the default limits, batches past them (each refused whole):"
    echo
    echo "| batch | lines | refused at | fwdctl -b | RSS before | after | peak |"
    echo "|---|---|---|---|---|---|---|"
    printf "%s" "$limit_rows"
} | append_results "$OUT" > /dev/null
echo "memory: appended to $OUT"
