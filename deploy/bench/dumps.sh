#!/usr/bin/env bash
# Do dumps slow the writer? The full IPv4 view is loaded, then deleted in one
# `fwdctl -b` batch, alone and while DUMPERS clients dump every route in a
# loop; this build and BASELINE_FWD interleaved for ROUNDS rounds. Reports
# the delete batch's wall time and, over the same span, the control lcore
# thread's CPU time and its run-queue wait (/proc/.../schedstat), so that a
# slower batch can be told apart as the writer kept from its CPU (more
# wait), or slowed down while it runs (more CPU time: shared caches,
# allocator, cache lines), or neither (the batch's client and session).
# Results go to bench-results/dumps.md.
#
#   deploy/bench/dumps.sh BASELINE_FWD [LABEL] [ROUNDS] [DUMPERS]
#
# DUMPER_CPUS=LIST pins the dumping clients there (taskset), e.g. away from
# the control lcore's CPU on a small machine. BASELINE_CTL=PATH: the
# baseline's rounds use that fwdctl (its dumping clients and its batches).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
need_root
BASE="${1:?usage: deploy/bench/dumps.sh BASELINE_FWD [LABEL] [ROUNDS] [DUMPERS]}"
LABEL="${2:-$BASE}"
ROUNDS="${3:-3}"
DUMPERS="${4:-5}"
OUT="${DUMPS_OUT:-$ROOT/bench-results/dumps.md}"
DUMPER_CPUS="${DUMPER_CPUS:-}"
BASELINE_CTL="${BASELINE_CTL:-}"
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

# thread_times PID TID: "CPU WAIT" of the thread so far, in seconds: its time on a
# CPU, and its time runnable but waiting for one (the scheduler's run-queue
# delay, /proc/.../schedstat).
thread_times() {
    awk '{printf "%.3f %.3f\n", $1 / 1e9, $2 / 1e9}' "/proc/$1/task/$2/schedstat"
}

# one FWD N CTL: prints "WALL CPU WAIT" of the delete batch with N dumpers,
# CTL the fwdctl of the batches and the dumpers.
one() {
    local ctl="$3"
    "$1" "$WORK/fwd.yaml" > "$WORK/log" 2>&1 &
    P=$!
    wait_forwarding "$WORK/log"
    "$ctl" -s "$WORK/fwd.sock" -b "$WORK/routes.add" > /dev/null
    local i
    local pin=()
    [ -n "$DUMPER_CPUS" ] && pin=(taskset -c "$DUMPER_CPUS")
    for ((i = 0; i < $2; i++)); do
        ( while "${pin[@]}" "$ctl" -s "$WORK/fwd.sock" route show > /dev/null 2>&1; do :; done ) &
    done
    sleep 2
    local tid
    tid=$(ps -T -p "$P" -o spid=,comm= | awk '$2 == "fwd-control" {print $1}')
    local t0 t1 c0 c1 q0 q1
    read -r c0 q0 < <(thread_times "$P" "$tid")
    t0=$(date +%s.%N)
    "$ctl" -s "$WORK/fwd.sock" -b "$WORK/routes.del" > /dev/null
    t1=$(date +%s.%N)
    read -r c1 q1 < <(thread_times "$P" "$tid")
    pkill -f "fwdctl -s $WORK/fwd.sock route show" || true
    kill -INT "$P"
    wait "$P" || true
    P=""
    wait 2> /dev/null || true
    awk -v a="$t0" -v b="$t1" -v c="$c0" -v d="$c1" -v e="$q0" -v f="$q1" \
        'BEGIN {printf "%.2f %.2f %.3f\n", b - a, d - c, f - e}'
}

rows=""
for ((r = 1; r <= ROUNDS; r++)); do
    for side in this base; do
        bin="$BIN/fwd" ctl="$CTL"
        [ "$side" = base ] && bin="$BASE" ctl="${BASELINE_CTL:-$CTL}"
        read -r w0 c0 q0 < <(one "$bin" 0 "$ctl")
        read -r w1 c1 q1 < <(one "$bin" "$DUMPERS" "$ctl")
        ratio=$(awk -v a="$w1" -v b="$w0" 'BEGIN {printf "%.2f", a / b}')
        rows="$rows| $r | $side | $w0 | $c0 | $q0 | $w1 | $c1 | $q1 | x$ratio |
"
    done
done
{
    echo "# Dumps vs the writer: the full view deleted in one batch, alone and under $DUMPERS dumping clients"
    echo
    echo "- command: \`${DUMPER_CPUS:+DUMPER_CPUS=$DUMPER_CPUS }${BASELINE_CTL:+BASELINE_CTL=$BASELINE_CTL }deploy/bench/dumps.sh $BASE \"$LABEL\" $ROUNDS $DUMPERS\`"
    echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(commit_id); baseline: $LABEL"
    echo "- machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; DPDK $(dpdk_version)"
    echo "- $(wc -l < "$WORK/v4.txt") IPv4 routes (\$FWD_DATA/routing) added, then deleted by one \`fwdctl -b\`;"
    echo "  the dumpers loop on \`fwdctl route show\`. The control lcore is on CPU 0, the worker on CPU 1."
    echo "- wall: the delete's \`fwdctl -b\` (parse, send, apply, publish); control CPU and wait: the"
    echo "  fwd-control thread's time on a CPU and its run-queue wait over the same span (schedstat)."
    [ -n "$DUMPER_CPUS" ] && echo "- the dumping clients pinned to CPUs $DUMPER_CPUS (DUMPER_CPUS)."
    [ -n "$BASELINE_CTL" ] && echo "- the baseline's rounds with the fwdctl $BASELINE_CTL (BASELINE_CTL)."
    echo
    echo "| round | build | delete alone: wall s | control CPU s | control wait s | with $DUMPERS dumpers: wall s | control CPU s | control wait s | wall ratio |"
    echo "|---|---|---|---|---|---|---|---|---|"
    printf '%s' "$rows"
} | append_results "$OUT"
