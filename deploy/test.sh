#!/usr/bin/env bash
# Sets up what is missing and runs every test: unit and property tests,
# end-to-end tests with the real daemon on pcap and tap ports in network
# namespaces, formatting, lint and documentation gates, and a short run of
# every fuzz target.
#
#   deploy/test.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_root

# Each stage says when it starts; at the end (or at a failure) the seconds
# each took, so a slow CI run says where its time went.
STAGES=() STAGE_START=$(date +%s) TEST_START=$(date +%s)
stage_close() {
    local now
    now=$(date +%s)
    [ ${#STAGES[@]} -eq 0 ] || STAGES[-1]+=" $((now - STAGE_START)) s"
    STAGE_START=$now
}
stage() {
    stage_close
    STAGES+=("$1:")
    echo "test: $1"
}
stage_times() {
    stage_close
    echo "test: seconds per stage ($(( $(date +%s) - TEST_START )) s in all):"
    printf 'test:   %s\n' "${STAGES[@]}"
}
trap stage_times EXIT

stage "setup (deploy/setup.sh)"
"$ROOT/deploy/setup.sh"
cd "$ROOT"
stage "cargo fmt --check"
cargo fmt --all -- --check
stage "cargo clippy"
cargo clippy --workspace --all-targets --quiet -- -D warnings
stage "cargo doc (the internals' documentation: no broken link)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --document-private-items --quiet
# One build of the whole workspace with the tests' feature set: it also makes
# target/debug/fwd and fwdctl, which the end-to-end tests and the TRex tests
# run. (A separate `cargo build` resolves features without the
# dev-dependencies and so compiles fwd and several crates a second time.)
stage "cargo test --no-run (every test, and the fwd and fwdctl binaries)"
cargo test --workspace --no-run 2>&1
stage "cargo test"
cargo test --workspace --no-fail-fast 2>&1
# The tests that need the published corpora are ignored by a plain `cargo
# test`; they run here when the data is there (FWD_DATA, see deploy/lib.sh).
# --workspace, as above, so that they reuse its build.
corpus_tests="$(cargo test --workspace --lib corpus_ -- --ignored --list 2>/dev/null | grep -c ': test$' || true)"
if find_corpora; then
    stage "$corpus_tests corpus tests with FWD_DATA=$FWD_DATA"
    cargo test --workspace --lib corpus_ -- --ignored 2>&1
else
    echo "test: SKIPPED $corpus_tests corpus tests (ClassBench sets, full routing tables): $corpora_missing"
    echo "test: the generated-data tests (generated_classbench_*, generated_full_tables_*) ran above"
fi
stage "TRex profiles, search driver and replay through fwd (deploy/trex/tests)"
(cd "$ROOT/deploy/trex" && "$TREX_PY" -m unittest discover -s tests -t . -v 2>&1)
stage "fuzz targets, a short run each (deploy/fuzz.sh --short)"
"$ROOT/deploy/fuzz.sh" --short
# The loom profile (Cargo.toml): optimized, without the release profile's LTO.
stage "loom models of publish / quiesce / reclaim"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR="$ROOT/target/loom" \
    cargo test -p qsbr --profile loom --lib 2>&1
