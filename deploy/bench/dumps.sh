#!/usr/bin/env bash
# Do dumps slow the writer? The full IPv4 view is loaded, then deleted in one
# `fwdctl -b` batch, alone and while DUMPERS clients dump every route in a
# loop; this build and BASELINE_FWD interleaved for ROUNDS rounds. Reports
# the delete batch's wall time and the control lcore thread's CPU time
# during it (from /proc), so that a slower batch can be told apart as the
# writer starved of CPU (same CPU time, longer wall) or slowed down while it
# runs (more CPU time: shared caches, allocator, cache lines).
# Results go to bench-results/dumps.md.
#
#   deploy/bench/dumps.sh BASELINE_FWD [LABEL] [ROUNDS] [DUMPERS]
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
need_root
BASE="${1:?usage: deploy/bench/dumps.sh BASELINE_FWD [LABEL] [ROUNDS] [DUMPERS]}"
LABEL="${2:-$BASE}"
ROUNDS="${3:-3}"
DUMPERS="${4:-5}"
OUT="${DUMPS_OUT:-$ROOT/bench-results/dumps.md}"
find_corpora || { echo "$0: $corpora_missing" >&2; exit 1; }

setup_host > /dev/null
build_release
BIN="$REL"
CTL="$BIN/fwdctl"
WORK="$(mktemp -d /tmp/fwd-dumps.XXXXXX)"
P=""
cleanup() {
    pkill -f "fwdctl -s $WORK/fwd.sock route show" 2> /dev/null || true
    [ -n "$P" ] && kill -INT "$P" 2> /dev/null && wait "$P" 2> /dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

full_view_batches "$WORK"
write_ctl_config "$WORK/fwd.yaml" "$WORK/fwd.sock" "dumps$$"

# cpu PID TID: the thread's CPU time so far (user + system), in seconds.
cpu() {
    awk -v hz="$(getconf CLK_TCK)" '{sub(/.*\) /, ""); printf "%.2f\n", ($12 + $13) / hz}' "/proc/$1/task/$2/stat"
}

# one FWD N: prints "WALL CPU" of the delete batch with N dumpers.
one() {
    "$1" "$WORK/fwd.yaml" > "$WORK/log" 2>&1 &
    P=$!
    wait_forwarding "$WORK/log"
    "$CTL" -s "$WORK/fwd.sock" -b "$WORK/routes.add" > /dev/null
    local i
    for ((i = 0; i < $2; i++)); do
        ( while "$CTL" -s "$WORK/fwd.sock" route show > /dev/null 2>&1; do :; done ) &
    done
    sleep 2
    local tid
    tid=$(ps -T -p "$P" -o spid=,comm= | awk '$2 == "fwd-control" {print $1}')
    local t0 t1 c0 c1
    c0=$(cpu "$P" "$tid")
    t0=$(date +%s.%N)
    "$CTL" -s "$WORK/fwd.sock" -b "$WORK/routes.del" > /dev/null
    t1=$(date +%s.%N)
    c1=$(cpu "$P" "$tid")
    pkill -f "fwdctl -s $WORK/fwd.sock route show" || true
    kill -INT "$P"
    wait "$P" || true
    P=""
    wait 2> /dev/null || true
    awk -v a="$t0" -v b="$t1" -v c="$c0" -v d="$c1" 'BEGIN {printf "%.2f %.2f\n", b - a, d - c}'
}

rows=""
for ((r = 1; r <= ROUNDS; r++)); do
    for side in this base; do
        bin="$BIN/fwd"
        [ "$side" = base ] && bin="$BASE"
        read -r w0 c0 < <(one "$bin" 0)
        read -r w1 c1 < <(one "$bin" "$DUMPERS")
        ratio=$(awk -v a="$w1" -v b="$w0" 'BEGIN {printf "%.2f", a / b}')
        rows="$rows| $r | $side | $w0 | $c0 | $w1 | $c1 | x$ratio |
"
    done
done
{
    echo "# Dumps vs the writer: the full view deleted in one batch, alone and under $DUMPERS dumping clients"
    echo
    echo "- command: \`deploy/bench/dumps.sh $BASE \"$LABEL\" $ROUNDS $DUMPERS\`"
    echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(commit_id); baseline: $LABEL"
    echo "- machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; DPDK $(dpdk_version)"
    echo "- $(wc -l < "$WORK/v4.txt") IPv4 routes (\$FWD_DATA/routing) added, then deleted by one \`fwdctl -b\`;"
    echo "  the dumpers loop on \`fwdctl route show\`. The control lcore is on CPU 0, the worker on CPU 1."
    echo "- wall: the delete's \`fwdctl -b\` (parse, send, apply, publish); control CPU: the fwd-control"
    echo "  thread's CPU time (user + system, /proc) over the same span."
    echo
    echo "| round | build | delete alone: wall s | control CPU s | with $DUMPERS dumpers: wall s | control CPU s | wall ratio |"
    echo "|---|---|---|---|---|---|---|"
    printf '%s' "$rows"
} > "$OUT"
cat "$OUT"
