#!/usr/bin/env bash
# A self-contained copy of the benches' programs, for a quiet or larger
# machine that has neither DPDK, cargo nor a package registry: the release
# binaries and DPDK's tools (dpdk-testpmd, dpdk-test-fib, dpdk-test-acl),
# every shared library they load (ldd), the vdev PMDs the recipes use and
# glibc's own loader, which runs each program so that the host's libc is
# never mixed in.
#
#   deploy/bench/bundle.sh DIR [NAME=PATH...]
#
# NAME=PATH adds another build of one of our programs under NAME (e.g.
# fwd-base=/tmp/base/target/release/fwd, the baseline of dumps.sh).
#
# Then, on that machine, in a copy of this repository:
#
#   FWD_BUNDLE=DIR FWD_DATA=... deploy/bench/throughput.sh
#
# deploy/lib.sh sees FWD_BUNDLE: the benches take their programs from DIR,
# install nothing and build nothing (see setup_host there).
#
# DIR/exe holds the programs, DIR/lib their libraries and the loader,
# DIR/pmds links to the PMDs there (the EAL loads them as plugins from the
# directory it was built with, which setup_host makes from these links),
# DIR/release and DIR/bin small scripts that run each program through the
# loader. An existing DIR is replaced only if it is a bundle.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
DIR="${1:?usage: deploy/bench/bundle.sh DIR [NAME=PATH...]}"
shift
EXTRA=("$@")

if [ -e "$DIR" ] && [ ! -f "$DIR/pmd-dir" ]; then
    echo "$0: $DIR exists and is not a bundle: not replacing it" >&2
    exit 1
fi
setup_host > /dev/null
build_release
rm -rf "$DIR"
mkdir -p "$DIR/exe" "$DIR/lib" "$DIR/pmds" "$DIR/release" "$DIR/bin"
DIR="$(cd "$DIR" && pwd)"

OURS=(fwd fwdctl fwd-flows bench_route bench_pkt bench_acl)
TOOLS=(dpdk-testpmd dpdk-test-fib dpdk-test-acl)
# The EAL's plugin directory, and the PMDs of the recipes: the vdev bus, the
# ring mempool (every mbuf pool), net_null, net_pcap and net_ring.
PMD_DIR="$(pkg-config --variable=pmdsdir libdpdk 2> /dev/null || true)"
[ -n "$PMD_DIR" ] || PMD_DIR="$(dirname "$(find /usr/lib -path '*dpdk/pmds-*/librte_net_null.so' | head -n 1)")"
[ -d "$PMD_DIR" ] || { echo "$0: no DPDK PMD directory found" >&2; exit 1; }
PMDS=(bus_vdev mempool_ring net_null net_pcap net_ring)

objects=()
for b in "${OURS[@]}"; do
    cp "$REL/$b" "$DIR/exe/"
    objects+=("$DIR/exe/$b")
done
for e in "${EXTRA[@]}"; do
    name="${e%%=*}"
    [ "$name" != "$e" ] && [ -f "${e#*=}" ] || { echo "$0: $e is not NAME=PATH of a file" >&2; exit 1; }
    cp "${e#*=}" "$DIR/exe/$name"
    objects+=("$DIR/exe/$name")
    OURS+=("$name")
done
for t in "${TOOLS[@]}"; do
    cp "$(command -v "$t")" "$DIR/exe/"
    objects+=("$DIR/exe/$t")
done
# Each PMD once, in lib/ under its soname (some are linked by fwd itself);
# pmds/ links to those copies, so that the EAL's plugin loading finds the
# file that is already loaded (one file: the loader maps it once).
for p in "${PMDS[@]}"; do
    so="$(readlink "$PMD_DIR/librte_$p.so")"
    cp -L "$PMD_DIR/librte_$p.so" "$DIR/lib/$so"
    ln -s "../lib/$so" "$DIR/pmds/librte_$p.so"
    objects+=("$DIR/lib/$so")
done
# Our release builds carry debug info (Cargo.toml): not needed to run.
strip --strip-debug "${objects[@]:0:${#OURS[@]}}"
# Every library any of them loads, one copy each, and the loader.
for o in "${objects[@]}"; do
    ldd "$o" | awk '/=> \// {print $3} /^\t\/.*ld-linux/ {print $1}'
done | sort -u | while read -r lib; do
    cp -L "$lib" "$DIR/lib/"
done
# fib.sh's shim that hands dpdk-test-fib's bulks to rte_fib in halves.
cc -O2 -shared -fPIC -o "$DIR/lib/libfib_bulk.so" "$ROOT/deploy/bench/fib_bulk.c" -ldl
LOADER="$(basename "$(ldd "$DIR/exe/fwd" | awk '/ld-linux/ {print $1}')")"
[ -f "$DIR/lib/$LOADER" ] || { echo "$0: the loader $LOADER was not copied" >&2; exit 1; }

for b in "${OURS[@]}" "${TOOLS[@]}"; do
    for w in "$DIR/release/$b" "$DIR/bin/$b"; do
        cat > "$w" << EOF
#!/bin/sh
# $b through the bundle's own loader and libraries (deploy/bench/bundle.sh).
D="\$(cd "\$(dirname "\$0")/.." && pwd)"
exec "\$D/lib/$LOADER" --library-path "\$D/lib" "\$D/exe/$b" "\$@"
EOF
        chmod +x "$w"
    done
done
echo "$PMD_DIR" > "$DIR/pmd-dir"
pkg-config --modversion libdpdk > "$DIR/dpdk-version"
echo "$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo +dirty)" > "$DIR/commit"
echo "bundle: $DIR ($(du -sh "$DIR" | cut -f1)): ${OURS[*]} ${TOOLS[*]}; PMDs ${PMDS[*]}"
