#!/usr/bin/env bash
# Coverage-guided fuzzing (cargo fuzz, libFuzzer, AddressSanitizer) of every
# parser: packets, the wire protocol, the command language, the config and
# the saved state. The targets are in fuzz/fuzz_targets/, their seeds in
# fuzz/corpus/<target>/ (each run starts from a scratch copy, fuzz/work/).
#
#   deploy/fuzz.sh --short                  # every target, 20000 runs; fails on a crash
#   deploy/fuzz.sh --long [RUNS]            # 10^7 runs each (default), one after the
#                                           # other; appends to bench-results/fuzz.md
#   deploy/fuzz.sh --long RUNS --max-time S # ... at most S seconds per target
#   deploy/fuzz.sh --short pkt_parse ...    # only these targets
#
# Needs the nightly toolchain and cargo-fuzz (deploy/setup.sh installs both).
# A crash leaves its input in fuzz/artifacts/<target>/; replay it with
# `cargo +nightly fuzz run <target> <file>` in fuzz/.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

MODE="" RUNS="" MAX_TIME=0 TARGETS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --short) MODE=short; shift ;;
        --long)
            MODE=long; shift
            if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; then RUNS="$1"; shift; fi ;;
        --max-time) MAX_TIME="${2:?--max-time needs seconds}"; shift 2 ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        -*) echo "fuzz: unknown argument $1" >&2; exit 2 ;;
        *) TARGETS+=("$1"); shift ;;
    esac
done
[ -n "$MODE" ] || { echo "fuzz: say --short or --long (see --help)" >&2; exit 2; }
if [ -z "$RUNS" ]; then
    if [ "$MODE" = short ]; then RUNS=20000; else RUNS=10000000; fi
fi

cargo +nightly --version >/dev/null 2>&1 \
    || { echo "fuzz: no nightly toolchain; run deploy/setup.sh (as root)" >&2; exit 1; }
cargo +nightly fuzz --version >/dev/null 2>&1 \
    || { echo "fuzz: cargo-fuzz is missing; run deploy/setup.sh (as root)" >&2; exit 1; }

cd "$ROOT/fuzz"
ALL=$(cargo +nightly fuzz list)
[ ${#TARGETS[@]} -gt 0 ] || mapfile -t TARGETS <<<"$ALL"
for t in "${TARGETS[@]}"; do
    grep -qx "$t" <<<"$ALL" || { echo "fuzz: no target $t (have: $(echo $ALL))" >&2; exit 2; }
done

start=$(date +%s)
echo "fuzz: building ${#TARGETS[@]} targets (nightly, AddressSanitizer)"
mkdir -p work
cargo +nightly fuzz build >work/build.log 2>&1 \
    || { tail -40 work/build.log >&2; echo "fuzz: build failed (fuzz/work/build.log)" >&2; exit 1; }

# libFuzzer: -runs bounds the executions, -max_total_time (when set) the
# seconds; one process, one job. -timeout: an input taking 10 s is a hang.
ARGS=(-runs="$RUNS" -timeout=10 -print_final_stats=1)
[ "$MAX_TIME" -gt 0 ] && ARGS+=(-max_total_time="$MAX_TIME")

rows=() failed=()
for t in "${TARGETS[@]}"; do
    rm -rf "work/$t"
    mkdir -p "work/$t"
    cp corpus/"$t"/* "work/$t/"
    log="work/$t.log"
    t0=$(date +%s)
    rc=0
    cargo +nightly fuzz run "$t" "work/$t" -- "${ARGS[@]}" >"$log" 2>&1 || rc=$?
    wall=$(( $(date +%s) - t0 ))
    # The last status line: "#N DONE cov: C ft: F corp: K/..." (or the
    # last "#N pulse/NEW ..." line before a crash).
    last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
    execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || true)
    [ -n "$execs" ] || execs=$(sed -nE 's/^#([0-9]+).*/\1/p' <<<"$last")
    cov=$(grep -oE 'cov: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || echo "?")
    ft=$(grep -oE 'ft: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || echo "?")
    corp=$(ls "work/$t" | wc -l)
    eps=$(( ${execs:-0} / (wall > 0 ? wall : 1) ))
    if [ "$rc" = 0 ]; then
        crash="none"
    else
        crash=$(grep -oE 'Test unit written to [^ ]+' "$log" | sed 's/Test unit written to //' | tail -1)
        crash="${crash#"$ROOT/"}"
        crash="${crash:-exit $rc, see fuzz/$log}"
        failed+=("$t")
    fi
    printf 'fuzz: %-15s %10s runs %5ss %8s/s cov %5s ft %6s corpus %5s  crash: %s\n' \
        "$t" "${execs:-?}" "$wall" "$eps" "$cov" "$ft" "$corp" "$crash"
    rows+=("| $t | ${execs:-?} | $wall | $eps | $corp | $cov | $ft | $crash |")
done
echo "fuzz: ${#TARGETS[@]} targets in $(( $(date +%s) - start )) s (build included)"

if [ "$MODE" = long ]; then
    out="$ROOT/bench-results/fuzz.md"
    cpu=$(lscpu | sed -nE 's/^Model name: *//p' | head -1)
    {
        echo "# Fuzzing: cargo fuzz (libFuzzer + AddressSanitizer), one target after another"
        echo
        echo "- command: \`deploy/fuzz.sh --long $RUNS$([ "$MAX_TIME" -gt 0 ] && echo " --max-time $MAX_TIME")$([ ${#TARGETS[@]} -lt $(wc -l <<<"$ALL") ] && echo " ${TARGETS[*]}")\`"
        echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo +dirty)"
        echo "- machine: $cpu, $(nproc) CPUs (shared with other builds); $(cargo +nightly --version)"
        echo "- libFuzzer: ${ARGS[*]}, one job, starting from fuzz/corpus/<target>/"
        echo
        echo "| target | executions | wall s | exec/s | corpus | cov | ft | crash |"
        echo "|---|---|---|---|---|---|---|---|"
        printf '%s\n' "${rows[@]}"
        echo
        echo "cov: code edges covered; ft: libFuzzer features (edges x hit counts);"
        echo "both from the final status line. exec/s: executions / wall time."
    } | append_results "$out" > /dev/null
    echo "fuzz: appended to $out"
fi

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: CRASH in ${failed[*]} (inputs in fuzz/artifacts/, logs in fuzz/work/)" >&2
    exit 1
fi
