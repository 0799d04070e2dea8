#!/usr/bin/env bash
# Sets up what is missing and runs every test: unit and property tests,
# end-to-end tests with the real daemon on pcap and tap ports in network
# namespaces, formatting and lint gates, and a short run of every fuzz
# target.
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
echo "test: cargo build (the end-to-end tests run the real fwd and fwdctl binaries)"
cargo build --workspace --bins
echo "test: cargo test"
cargo test --workspace --no-fail-fast 2>&1
echo "test: fuzz targets, a short run each (deploy/fuzz.sh --short)"
"$ROOT/deploy/fuzz.sh" --short
echo "test: loom models of publish / quiesce / reclaim"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR="$ROOT/target/loom" \
    cargo test -p fwd --release --lib qsbr::loom 2>&1
