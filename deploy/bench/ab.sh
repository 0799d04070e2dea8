#!/usr/bin/env bash
# A/B of two fwd builds on the throughput recipe (DESIGN.md), interleaved so
# that the shared VM's drift hits both alike: ROUNDS x (this build, then the
# baseline), 13 s each, the last two 4 s intervals of every run kept.
# Reports each side's samples, medians and the median ratio to
# bench-results/ab.md.
#
#   deploy/bench/ab.sh BASELINE_FWD [LABEL] [ROUNDS]    (default 6 rounds)
#
# e.g. build the previous commit in a worktree:
#   git worktree add /tmp/base HEAD~1
#   (cd /tmp/base && cargo build --release -p fwd --bin fwd)
#   deploy/bench/ab.sh /tmp/base/target/release/fwd "HEAD~1"
#
# Honours CARGO_TARGET_DIR (this build's binaries are looked for there);
# AB_OUT=FILE writes the report elsewhere than bench-results/ab.md;
# FAMILY=6 runs throughput.sh's IPv6 recipe (1000 /64 routes) instead;
# LOADED=1 its loaded one (the full IPv4 view of $FWD_DATA and ClassBench
# acl1_10k, loaded over the control socket in every run; 18 s a run);
# HOPS=K the routes via K next hops in turn (write_replay_config).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
need_root
BASE="${1:?usage: deploy/bench/ab.sh BASELINE_FWD [LABEL] [ROUNDS]}"
LABEL="${2:-$BASE}"
ROUNDS="${3:-6}"
OUT="${AB_OUT:-$ROOT/bench-results/ab.md}"
BIN="$REL"
LOADED="${LOADED:-0}"
replay_family
what="plain IPv4 forwarding" routes="/24" env="" loaded=""
if [ "$FAMILY" = 6 ]; then
    what="plain IPv6 forwarding" routes="/64" env="FAMILY=6 "
fi
if [ "$LOADED" = 1 ]; then
    find_corpora || { echo "$0: LOADED=1 needs the corpora: $corpora_missing" >&2; exit 1; }
    what="IPv4 forwarding with the full view and acl1_10k loaded" env="FWD_DATA=<corpora> LOADED=1 "
    loaded=", with the full IPv4 view and ClassBench acl1_10k loaded over the control socket in every run"
fi
hops=""
if [ "${HOPS:-1}" != 1 ]; then
    env="${env}HOPS=$HOPS " hops=" via $HOPS next hops in turn"
fi

setup_host --hugepages 512
build_release
WORK="$(mktemp -d /tmp/fwd-bench.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
write_replay_recipe "$WORK" 1000
batch="" secs=13
if [ "$LOADED" = 1 ]; then
    echo "control: {socket: $WORK/fwd.sock, cpu: 0}" >> "$WORK/fwd.yaml"
    write_loaded_batch "$WORK/tables.batch" "$FWD_DATA/classbench/lyxocs/acl1_10k"
    batch="$WORK/tables.batch" secs=18
fi

run() {
    run_replay "$1" "$WORK/fwd.yaml" "$WORK/run" "$secs" 4 "$batch" "$WORK/fwd.sock" | tr '\n' ' '
}
new=""
old=""
for ((k = 0; k < ROUNDS; k++)); do
    new="$new $(run "$BIN/fwd")"
    old="$old $(run "$BASE")"
done
mn=$(echo "$new" | median)
mo=$(echo "$old" | median)
{
    echo "# A/B: this build vs $LABEL, $what, one worker"
    echo
    echo "- command: \`${env}deploy/bench/ab.sh $BASE \"$LABEL\" $ROUNDS\`${AB_OUT:+ (AB_OUT=$AB_OUT)}"
    echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(commit_id)"
    echo "- machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; DPDK $(dpdk_version)"
    echo "- recipe: deploy/bench/throughput.sh's (hugepages, net_pcap replay of 4096 64-byte"
    echo "  flows to 1000 $routes routes$hops -> one worker -> net_null$loaded), $ROUNDS interleaved rounds"
    echo
    echo "| build | Mpps samples | median Mpps |"
    echo "|---|---|---|"
    echo "| this build | $new | $mn |"
    echo "| $LABEL | $old | $mo |"
    echo
    echo "median ratio this / baseline = **$(awk -v a="$mn" -v b="$mo" 'BEGIN {printf "%.3f", a / b}')**"
} | append_results "$OUT"
