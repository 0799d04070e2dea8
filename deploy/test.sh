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

"$ROOT/deploy/setup.sh"
cd "$ROOT"
echo "test: cargo fmt --check"
cargo fmt --all -- --check
echo "test: cargo clippy"
cargo clippy --workspace --all-targets --quiet -- -D warnings
echo "test: cargo doc (the internals' documentation: no broken link)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --document-private-items --quiet
echo "test: cargo build (the end-to-end tests run the real fwd and fwdctl binaries)"
cargo build --workspace --bins
echo "test: cargo test"
cargo test --workspace --no-fail-fast 2>&1
# The tests that need the published corpora are ignored by a plain `cargo
# test`; they run here when the data is there (FWD_DATA, see deploy/lib.sh).
corpus_tests="$(cargo test -p fwd --lib corpus_ -- --ignored --list 2>/dev/null | grep -c ': test$' || true)"
if find_corpora; then
    echo "test: $corpus_tests corpus tests with FWD_DATA=$FWD_DATA"
    cargo test -p fwd --lib corpus_ -- --ignored 2>&1
else
    echo "test: SKIPPED $corpus_tests corpus tests (ClassBench sets, full routing tables): $corpora_missing"
    echo "test: the generated-data tests (generated_classbench_*, generated_full_tables_*) ran above"
fi
echo "test: TRex profiles, search driver and replay through fwd (deploy/trex/tests)"
(cd "$ROOT/deploy/trex" && "$TREX_PY" -m unittest discover -s tests -t . -v 2>&1)
echo "test: fuzz targets, a short run each (deploy/fuzz.sh --short)"
"$ROOT/deploy/fuzz.sh" --short
echo "test: loom models of publish / quiesce / reclaim"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR="$ROOT/target/loom" \
    cargo test -p fwd --release --lib qsbr::loom 2>&1
