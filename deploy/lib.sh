# Shared by the run, test and bench scripts: find cargo, build, make temp dirs.
# shellcheck shell=bash

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="$PATH:$HOME/.cargo/bin"

# The external corpora (ClassBench sets, full routing tables) are found through
# one variable, FWD_DATA: a directory holding classbench/ and routing/. When it
# is unset, the conventional place beside the repository is used if present.
# On success FWD_DATA is exported; otherwise corpora_missing says why and the
# status is non-zero.
find_corpora() {
    if [ -z "${FWD_DATA:-}" ] && [ -d "$ROOT/../shared/data" ]; then
        FWD_DATA="$(cd "$ROOT/../shared/data" && pwd)"
    fi
    if [ -z "${FWD_DATA:-}" ]; then
        corpora_missing="FWD_DATA is not set and there is no ../shared/data beside the repository"
        return 1
    fi
    if [ ! -d "$FWD_DATA" ]; then
        corpora_missing="FWD_DATA=$FWD_DATA is not a directory"
        return 1
    fi
    export FWD_DATA
}

# The Python virtual environment of the TRex tooling (deploy/trex): the TRex
# client library and MLRsearch, pinned with hashes in requirements.txt. Made
# (or remade when requirements.txt changes) by deploy/setup.sh; TREX_PY is its
# interpreter.
TREX_VENV="$ROOT/target/trex-venv"
TREX_PY="$TREX_VENV/bin/python"
trex_venv() {
    local req="$ROOT/deploy/trex/requirements.txt" stamp="$TREX_VENV/.requirements"
    if [ -x "$TREX_PY" ] && cmp -s "$req" "$stamp"; then
        return 0
    fi
    rm -rf "$TREX_VENV"
    python3 -m venv "$TREX_VENV" || return 1
    "$TREX_PY" -m pip install --quiet --disable-pip-version-check \
        --require-hashes --no-deps -r "$req" || return 1
    cp "$req" "$stamp"
}

# FWD_BUNDLE=DIR: the benches run on a machine that has neither DPDK nor
# cargo, from a bundle that deploy/bench/bundle.sh made (the programs, their
# libraries and glibc's loader). Their programs come from DIR, setup_host
# installs nothing and build_release builds nothing. REL is the folder of
# the release binaries either way; DIR/bin (DPDK's tools) goes first on PATH.
REL="${CARGO_TARGET_DIR:-$ROOT/target}/release"
if [ -n "${FWD_BUNDLE:-}" ]; then
    FWD_BUNDLE="$(cd "$FWD_BUNDLE" && pwd)"
    REL="$FWD_BUNDLE/release"
    export PATH="$FWD_BUNDLE/bin:$PATH"
fi

# setup_host [--hugepages N]: deploy/setup.sh (packages, and N 2 MiB
# hugepages reserved). From a bundle: no packages; links to the bundle's PMDs
# are put where the EAL loads its plugins from (unless that directory exists:
# then it is the host's own DPDK, whose PMDs would clash), and N
# hugepages are asked of the kernel. Sets BENCH_HUGEPAGES to true when N
# pages are free, else false (a container may grant none): the recipes then
# run every program --no-huge, ours and DPDK's alike.
BENCH_HUGEPAGES=true
setup_host() {
    if [ -z "${FWD_BUNDLE:-}" ]; then
        "$ROOT/deploy/setup.sh" "$@"
        return
    fi
    local pmd_dir
    pmd_dir="$(cat "$FWD_BUNDLE/pmd-dir")"
    if [ ! -d "$pmd_dir" ]; then
        mkdir -p "$pmd_dir"
        local so
        for so in "$FWD_BUNDLE"/pmds/*.so; do
            ln -s "$(readlink -f "$so")" "$pmd_dir/$(basename "$so")"
        done
    fi
    if [ "${1:-}" = --hugepages ]; then
        local want="$2" free
        # Only ever more: a larger reservation stays as it is.
        if [ "$(cat /proc/sys/vm/nr_hugepages)" -lt "$want" ]; then
            echo "$want" > /proc/sys/vm/nr_hugepages 2> /dev/null || true
        fi
        free=$(awk '/^HugePages_Free/ {print $2}' /proc/meminfo)
        if [ "${free:-0}" -lt "$want" ]; then
            echo "$0: only ${free:-0} of $want hugepages: every program runs --no-huge" >&2
            BENCH_HUGEPAGES=false
        fi
    fi
}

# The DPDK version and the commit the reports name (a bundle's own, since a
# copy of the tree may have no .git). "+dirty" when the tree differs from the
# commit outside bench-results/: the results an earlier run of the same
# session appended there do not change what is measured.
dpdk_version() {
    if [ -n "${FWD_BUNDLE:-}" ]; then cat "$FWD_BUNDLE/dpdk-version"; else pkg-config --modversion libdpdk; fi
}
commit_id() {
    if [ -n "${FWD_BUNDLE:-}" ]; then
        echo "$(cat "$FWD_BUNDLE/commit") (bundle)"
    else
        echo "$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet -- . ':!bench-results' || echo '+dirty')"
    fi
}

# append_results FILE: appends the report on stdin to the results file
# FILE as a section of its own, below the earlier runs' (a bench's report
# is kept, never replaced: its file is the measure's history). The report's
# first line is its "# title": it starts FILE when FILE is new, and heads
# the section, dated, otherwise. The file is written only once the report
# is whole, so a commit id the report reads is not "+dirty" from it. The
# section goes to stdout too.
append_results() {
    local out="$1" report title
    report="$(cat)"
    title="$(printf '%s\n' "$report" | head -n 1)"
    mkdir -p "$(dirname "$out")"
    [ -f "$out" ] || printf '%s\n' "$title" > "$out"
    printf '\n## %s: %s\n%s\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "${title#\# }" \
        "$(printf '%s\n' "$report" | tail -n +2)" | tee -a "$out"
}

# median: the median of the numbers on stdin (separated by spaces or
# newlines); the mean of the middle two, to 3 decimals, for an even count.
median() {
    tr -s ' \t' '\n' | grep . | sort -g \
        | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# mean: the mean of the numbers on stdin, one a line, to 2 decimals ("n/a"
# for none).
mean() {
    awk '{s += $1; n++} END {if (n) printf "%.2f", s / n; else print "n/a"}'
}

# apt_install PKG...: installs Debian packages a bench needs beyond
# setup.sh's, refreshing the package lists only when a first try fails;
# exits with a message when it cannot.
apt_install() {
    local inst=(apt-get install -y -qq --no-install-recommends "$@")
    DEBIAN_FRONTEND=noninteractive "${inst[@]}" > /dev/null \
        || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive "${inst[@]}" > /dev/null; } \
        || { echo "$0: apt-get install $* failed" >&2; exit 1; }
}

need_root() {
    [ "$(id -u)" = 0 ] || { echo "$0: run as root (DPDK, apt-get and network namespaces need it)" >&2; exit 1; }
}

# Stops the daemon a bench started as FWD_PID (SIGINT: it flushes and prints
# its final counters), waits for it and forgets it; nothing when none runs.
stop_fwd() {
    if [ -n "${FWD_PID:-}" ]; then
        kill -INT "$FWD_PID" 2> /dev/null || true
        wait "$FWD_PID" 2> /dev/null || true
    fi
    FWD_PID=""
}

# Release build of the daemon, the CLI and the tools.
build_release() {
    [ -n "${FWD_BUNDLE:-}" ] && return 0
    (cd "$ROOT" && cargo build --release --bins "$@")
}

# The routing and rule tables' heap on transparent huge pages, as
# deploy/fwd.service runs fwd (preflight's `heap` check): exported for what
# this shell starts next; a setting already in the environment wins.
tables_heap_thp() {
    export GLIBC_TUNABLES="glibc.malloc.hugetlb=1${GLIBC_TUNABLES:+:$GLIBC_TUNABLES}"
}

# The control-plane benches' daemon (ctl.sh, dumps.sh): two net_null ports,
# p1's neighbour 10.0.1.2, the control lcore on CPU 0, the worker on 1.
# $1 = config path, $2 = control socket, $3 = EAL file prefix.
write_ctl_config() {
    cat > "$1" <<YAML
eal: {main_lcore: 0, memory_mb: 1024, file_prefix: $3}
ports:
  - {name: p0, device: net_null0, addresses: [10.0.0.1/24]}
  - {name: p1, device: net_null1, addresses: [10.0.1.1/24]}
workers:
  - {lcore: 1, rx: [{port: p0}, {port: p1}]}
neighbours:
  - {ip: 10.0.1.2, mac: "02:00:00:00:01:02", port: p1}
control: {socket: $2, cpu: 0}
YAML
}

# The full IPv4 view of $FWD_DATA as fwdctl batches in directory $1:
# v4.txt (the prefixes), routes.add (each via 10.0.1.2 dev p1), routes.del.
full_view_batches() {
    zcat "$FWD_DATA/routing/ipv4_fulltable_gaissmai.txt.gz" > "$1/v4.txt"
    awk '{print "route add " $1 " via 10.0.1.2 dev p1"}' "$1/v4.txt" > "$1/routes.add"
    awk '{print "route del " $1}' "$1/v4.txt" > "$1/routes.del"
}

# Waits (30 s at most) until the daemon logging to $1 forwards; on timeout
# prints the log and fails.
wait_forwarding() {
    local _
    for _ in $(seq 1 300); do
        grep -q "forwarding with" "$1" && return 0
        sleep 0.1
    done
    cat "$1" >&2
    return 1
}

# The loaded recipe's tables as one fwdctl batch file $1: the full IPv4 view
# of $FWD_DATA via the replay recipe's gateway (10.9.0.2 on `out`), then the
# ClassBench set $2 with every rule a permit, then a final permit (a packet
# walks the trees to a leaf whichever rule it matches).
write_loaded_batch() {
    local out="$1" set="$2"
    zcat "$FWD_DATA/routing/ipv4_fulltable_gaissmai.txt.gz" \
        | awk '{print "route add " $1 " via 10.9.0.2 dev out"}' > "$out"
    # ClassBench: @src dst sport_lo : sport_hi dport_lo : dport_hi proto/mask ...
    awk -F'\t' 'function hex(s,  i, n) {
        s = tolower(s); sub(/^0x/, "", s); n = 0;
        for (i = 1; i <= length(s); i++) n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1;
        return n
    } {
        sub(/^@/, "", $1); split($3, sp, " : "); split($4, dp, " : "); split($5, pr, "/");
        m = "";
        if ($1 !~ /\/0$/) m = m " src " $1;
        if ($2 !~ /\/0$/) m = m " dst " $2;
        if (sp[1] + 0 != 0 || sp[2] + 0 != 65535) m = m " sport " sp[1] "-" sp[2];
        if (dp[1] + 0 != 0 || dp[2] + 0 != 65535) m = m " dport " dp[1] "-" dp[2];
        if (tolower(pr[2]) == "0xff") m = m " proto " hex(pr[1]);
        print "rule add prio " NR m " action permit"
    } END { print "rule add prio 1000000 action permit" }' \
        "$set" >> "$out"
}

# Runs the fwd binary $1 on config $2 for $4 s with stats every $5 s, its
# output in $3.out / $3.err; with a batch file $6, loads it over the control
# socket $7 once the daemon forwards (the seconds it took in $3.load_s).
# Prints the rates of the last two intervals (Mpps, summed over the input
# ports; the first interval includes start-up and the load).
run_replay() {
    local bin="$1" cfg="$2" out="$3" secs="$4" every="$5" batch="${6:-}" sock="${7:-}"
    timeout -s INT "$secs" "$bin" "$cfg" --stats-interval "$every" > "$out.out" 2> "$out.err" &
    local pid=$!
    if [ -n "$batch" ]; then
        wait_forwarding "$out.err" || { kill "$pid"; return 1; }
        local t0 t1
        t0=$(date +%s.%N)
        if ! "$REL/fwdctl" -s "$sock" -b "$batch" > "$out.load" 2>&1; then
            kill "$pid"
            cat "$out.load" >&2
            return 1
        fi
        t1=$(date +%s.%N)
        awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}' > "$out.load_s"
    fi
    wait "$pid" || true
    # The sum over the input ports (`in`, and `in1`... with more workers).
    awk '/(^| )in: rx/ {s = 0; for (i = 1; i < NF; i++) if ($i ~ /^in[0-9]*:$/ && $(i + 1) == "rx") s += $(i + 2); print s}' \
        "$out.out" | tail -n 2
}

# testpmd_args MODE PCAP [CORES]: dpdk-testpmd's arguments (TESTPMD_ARGS)
# for forward mode MODE on the replay recipe's vdevs and lcores: net_pcap
# replaying PCAP endlessly -> net_null, one forwarding core on CPU 1; with
# CORES = N (default 1), N such port pairs (net_pcapK -> net_nullK, ports 2K
# and 2K+1), lcore k on CPU k mod the CPU count, as write_replay_config
# places fwd's workers. Hugepages as BENCH_HUGEPAGES says; testpmd's own
# options last, so that a caller may add more.
testpmd_args() {
    local mode="$1" pcap="$2" cores="${3:-1}"
    local mem=(--in-memory) vdevs=() lcores="0@0" ncpu k
    [ "$BENCH_HUGEPAGES" = true ] || mem=(--no-huge -m 1024)
    ncpu=$(nproc)
    for ((k = 0; k < cores; k++)); do
        vdevs+=(--vdev "net_pcap$k,rx_pcap=$pcap,infinite_rx=1" --vdev "net_null$k,no-rx=1")
        lcores="$lcores,$((k + 1))@$(((k + 1) % ncpu))"
    done
    TESTPMD_ARGS=(--lcores "$lcores" "${mem[@]}" --no-pci --no-telemetry --file-prefix "tpmd$$"
        "${vdevs[@]}" -- --forward-mode="$mode" --auto-start --nb-cores="$cores"
        --rxq=1 --txq=1 --burst=32)
}

# dpdk-testpmd (testpmd_args MODE PCAP CORES) for $3 s with stats every $4
# s, its output in $5. Prints the Rx rates of the last two periods (Mpps;
# the first includes start-up); with $6 = N forwarding cores, the sums over
# the N net_pcap ports.
run_testpmd() {
    local mode="$1" pcap="$2" secs="$3" every="$4" out="$5" cores="${6:-1}"
    testpmd_args "$mode" "$pcap" "$cores"
    timeout -s INT "$secs" dpdk-testpmd "${TESTPMD_ARGS[@]}" --stats-period "$every" \
        < /dev/null > "$out" 2>&1 || true
    awk -v last=$((2 * cores - 1)) '/NIC statistics for port/ {port = $6}
        /Rx-pps:/ && port % 2 == 0 {s += $2}
        /Tx-pps:/ && port == last {print s / 1e6; s = 0}' "$out" | tail -n 2
}

# The replay recipe's address family, from $FAMILY (4, the default, or 6):
# sets FAMILY and flows_opt (fwd-flows' option for it); exits on anything
# else, and on FAMILY=6 with LOADED=1 (the loaded recipe is IPv4 only).
replay_family() {
    FAMILY="${FAMILY:-4}"
    case "$FAMILY" in
        4) flows_opt="" ;;
        6) flows_opt="--v6" ;;
        *) echo "$0: FAMILY must be 4 or 6" >&2; exit 1 ;;
    esac
    if [ "$FAMILY" = 6 ] && [ "${LOADED:-0}" = 1 ]; then
        echo "$0: LOADED=1 is IPv4 only" >&2
        exit 1
    fi
}

# Writes a daemon config with N /24 routes 10.1.x.0/24 and 10.2.x.0/24.. via
# a neighbour on port `out`, replaying $1 (pcap) endlessly into port `in`.
# HOPS=K (default 1): K neighbours on `out` (10.9.0.2, 10.9.0.3, ...; IPv6
# fd09::2, fd09::3, ...), route i via the (i mod K)-th, so that the flows'
# packets go to next hops in turn, as a router's to several upstreams do.
# $2 = output config path, $3 = number of routes, $4 = output device devargs,
# $5 = hugepages (true/false), $6 = 6 for IPv6 instead: the N /64 routes
# fd01:0:a01:1::/64.. that `fwd-flows --v6 --dst 10.1.0.1 --dst-count N`
# sends to, via fd09::2 on `out`.
# The replay recipe's i-th IPv4 route: 10.1.0.0/24, 10.1.1.0/24, ...; the
# daemon's config and the l3fwd anchor (deploy/bench/l3fwd.sh) both take it
# from here. `fwd-flows --dst 10.1.0.1 --dst-count N` draws N consecutive
# addresses, so the traffic reaches the first ceil((N + 1) / 256) of these
# routes (4 of 1000), where the IPv6 recipe's reaches all N.
replay_prefix4() {
    echo "10.$((1 + $1 / 256)).$(($1 % 256)).0/24"
}

# The IPv6 recipe's i-th route: fd01:0:a01:1::/64, fd01:0:a01:2::/64, ...
# (one per destination `fwd-flows --v6 --dst 10.1.0.1 --dst-count N` draws).
replay_prefix6() {
    local d=$((0x0a010001 + $1))
    printf 'fd01:0:%x:%x::/64\n' $((d >> 16)) $((d & 0xffff))
}

# write_replay_recipe DIR ROUTES: the benches' plain recipe in DIR:
# flows.pcap, 4096 64-byte UDP flows to ROUTES destinations from 10.1.0.1
# on (IPv6 with FAMILY=6: $flows_opt, see replay_family), and fwd.yaml
# replaying it into one worker with ROUTES routes, out of net_null.
write_replay_recipe() {
    local dir="$1" routes="$2"
    # shellcheck disable=SC2086 # flows_opt is empty or one option
    "$REL/fwd-flows" "$dir/flows.pcap" --flows 4096 --size 64 --dst 10.1.0.1 --dst-count "$routes" $flows_opt
    write_replay_config "$dir/flows.pcap" "$dir/fwd.yaml" "$routes" "net_null0,no-rx=1" "$BENCH_HUGEPAGES" "$FAMILY"
}

# write_replay_config PCAP CFG ROUTES OUTDEV [HUGEPAGES] [FAMILY] [WORKERS]:
# the replay recipe's daemon config. WORKERS (default 1) worker lcores,
# each with an input port of its own replaying PCAP (`in`, then `in1`,
# `in2`...: net_pcap0, net_pcap1...) and its own TX queue on `out`; worker k
# is lcore k+1 on CPU (k+1) mod the CPU count, so with as many workers as
# CPUs the last shares CPU 0 with the main lcore (deploy/bench/scaling.sh).
write_replay_config() {
    local pcap="$1" cfg="$2" nroutes="$3" outdev="$4" hugepages="${5:-false}" family="${6:-4}"
    local workers="${7:-1}" ncpu k txq=""
    ncpu=$(nproc)
    # Every worker has a TX queue on every port; net_pcap has one per
    # tx_pcap (without any, one that drops what it is given).
    if [ "$workers" -gt 1 ]; then
        for ((k = 0; k < workers; k++)); do
            txq="$txq,tx_pcap=/dev/null"
        done
    fi
    local in_addr="10.0.0.254/16" out_addr="10.9.0.1/24" hops="${HOPS:-1}" g
    local gws=()
    [[ "$hops" =~ ^[1-9][0-9]*$ ]] && [ "$hops" -le 200 ] \
        || { echo "$0: HOPS must be 1..200" >&2; exit 1; }
    if [ "$family" = 6 ]; then
        in_addr="'fd00::ffff:fffe/64'" out_addr="'fd09::1/64'"
    fi
    for ((g = 0; g < hops; g++)); do
        if [ "$family" = 6 ]; then
            gws+=("'fd09::$(printf %x $((2 + g)))'")
        else
            gws+=("10.9.0.$((2 + g))")
        fi
    done
    {
        echo "eal:"
        echo "  main_lcore: 0"
        echo "  hugepages: $hugepages"
        echo "  memory_mb: 1024"
        echo "ports:"
        echo "  - name: in"
        echo "    device: net_pcap0,rx_pcap=$pcap,infinite_rx=1$txq"
        echo "    addresses: [$in_addr]"
        for ((k = 1; k < workers; k++)); do
            echo "  - name: in$k"
            echo "    device: net_pcap$k,rx_pcap=$pcap,infinite_rx=1$txq"
        done
        echo "  - name: out"
        echo "    device: $outdev"
        echo "    addresses: [$out_addr]"
        echo "workers:"
        echo "  - lcore: 1"
        echo "    cpu: $((1 % ncpu))"
        echo "    rx: [{port: in}, {port: out}]"
        for ((k = 1; k < workers; k++)); do
            echo "  - lcore: $((k + 1))"
            echo "    cpu: $(((k + 1) % ncpu))"
            echo "    rx: [{port: in$k}]"
        done
        echo "neighbours:"
        for ((g = 0; g < hops; g++)); do
            echo "  - {ip: ${gws[g]}, mac: \"02:00:00:00:09:$(printf %02x $((2 + g)))\", port: out}"
        done
        echo "routes:"
        local i
        for ((i = 0; i < nroutes; i++)); do
            if [ "$family" = 6 ]; then
                echo "  - {prefix: '$(replay_prefix6 "$i")', via: ${gws[i % hops]}, dev: out}"
            else
                echo "  - {prefix: $(replay_prefix4 "$i"), via: ${gws[i % hops]}, dev: out}"
            fi
        done
    } > "$cfg"
}
