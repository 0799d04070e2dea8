#!/usr/bin/env bash
# Installs what the appliance needs to build, run and test, and nothing more.
# Idempotent: re-running it changes nothing once everything is present.
#
#   deploy/setup.sh                 # packages only
#   deploy/setup.sh --hugepages 512 # also reserve 512 x 2 MiB hugepages
#
# Must run as root (it calls apt-get and writes /proc/sys/vm/nr_hugepages).
set -euo pipefail

HUGEPAGES=""
while [ $# -gt 0 ]; do
    case "$1" in
        --hugepages) HUGEPAGES="${2:?--hugepages needs a count}"; shift 2 ;;
        -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
        *) echo "setup: unknown argument $1" >&2; exit 2 ;;
    esac
done

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: ERROR: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root: it installs packages"

# Build: DPDK headers/libs (>= 22.11) and bindgen's libclang. Run: the DPDK
# runtime with its PMDs (net_pcap, net_null, net_tap, net_ring). Tests:
# iproute2 (namespaces), the tools hosts debug a router with (ping,
# traceroute/traceroute6, tracepath), python3 (a UDP sender in a namespace),
# tcpdump (reads what `fwdctl capture` writes; pcap handling is otherwise our
# own code). FRR (zebra with dplane_fpm_nl, bgpd): the
# routing daemons that feed the FIB over FPM, and the BGP peer of the tests.
# python3-venv: the virtual environment of the TRex tooling (deploy/trex).
# systemd: systemd-analyze, which checks deploy/fwd.service (the test runs
# it without systemd as PID 1, so containers are fine).
PACKAGES=(dpdk dpdk-dev libdpdk-dev clang libclang-dev pkg-config gcc libc6-dev
          iproute2 iputils-ping iputils-tracepath traceroute python3 python3-venv procps kmod
          tcpdump frr systemd)

missing=()
for p in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -gt 0 ]; then
    say "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || die "apt-get update failed (is a Debian mirror reachable?)"
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
        || die "apt-get install ${missing[*]} failed"
else
    say "packages already installed: ${PACKAGES[*]}"
fi

ver=$(pkg-config --modversion libdpdk 2>/dev/null) || die "libdpdk-dev installed but pkg-config cannot find libdpdk"
major=${ver%%.*}; rest=${ver#*.}; minor=${rest%%.*}
if [ "$major" -lt 22 ] || { [ "$major" -eq 22 ] && [ "$minor" -lt 11 ]; }; then
    die "DPDK $ver is too old; 22.11 or newer is required (Debian 12 ships 22.11)"
fi
say "DPDK $ver"

if ! command -v cargo >/dev/null 2>&1; then
    [ -x "$HOME/.cargo/bin/cargo" ] \
        || die "no Rust toolchain: install one with rustup (Rust >= 1.88); the scripts look in PATH and ~/.cargo/bin"
    say "cargo: $HOME/.cargo/bin/cargo (the run and test scripts add it to PATH)"
fi

# Fuzzing (deploy/fuzz.sh, run by deploy/test.sh --short): cargo fuzz needs
# a nightly toolchain (sanitizers, -Z flags) and the cargo-fuzz subcommand,
# pinned so every host fuzzes with the same libFuzzer driver.
CARGO_FUZZ_VERSION=0.13.2
export PATH="$PATH:$HOME/.cargo/bin"
command -v rustup >/dev/null 2>&1 \
    || die "no rustup: the fuzz targets need a nightly toolchain; install Rust with rustup"
if ! cargo +nightly --version >/dev/null 2>&1; then
    say "installing the nightly toolchain (for cargo fuzz)"
    rustup toolchain install nightly --profile minimal >/dev/null 2>&1 \
        || die "rustup toolchain install nightly failed"
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    say "installing cargo-fuzz $CARGO_FUZZ_VERSION (a few minutes)"
    cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --quiet \
        || die "cargo install cargo-fuzz failed (is crates.io reachable?)"
fi
say "fuzzing: $(cargo fuzz --version) with $(cargo +nightly --version | cut -d' ' -f1-2)"

source "$(dirname "$0")/lib.sh"
trex_venv || die "could not make the TRex virtual environment $TREX_VENV (is PyPI reachable?)"
say "TRex tooling: $("$TREX_PY" -m pip list --format=freeze 2>/dev/null | grep -Ei '^(lbr[-_]trex[-_]client|mlrsearch)=' | tr '\n' ' ')"

if [ -n "$HUGEPAGES" ]; then
    echo "$HUGEPAGES" > /proc/sys/vm/nr_hugepages
    got=$(cat /proc/sys/vm/nr_hugepages)
    [ "$got" -ge "$HUGEPAGES" ] || die "asked for $HUGEPAGES hugepages, the kernel gave $got (memory fragmented?)"
    say "hugepages: $got x 2 MiB reserved"
fi
say "ready"
