#!/usr/bin/env bash
# FPM benchmark: a full BGP view (901,899 IPv4 prefixes) announced into FRR
# 8.4, timed until it is in fwd's FIB over FPM, and until it is in the Linux
# kernel's FIB through zebra's own netlink data plane; then fwd's FPM ingest
# alone, replaying a capture of zebra's real FPM stream, beside bench_fpm's
# in-process number. Results: bench-results/fpm.md.
#
#   deploy/bench/fpm.sh [--quick] [--ingest-only] [--shuffle] [--reps N] [--no-hog] [--out FILE]
#
#   --quick        100,000 prefixes (the first 100k of the table): ~2 min
#                  (the full view: ~9 min)
#   --ingest-only  only the replay of the capture into fwd and bench_fpm
#                  (the capture is recorded first if the cache has none): < 1 min
#   --shuffle      the replay sends the capture's frames in a fixed random
#                  order (zebra's real order lies between its table order and
#                  that: bgpd packs the prefixes of one attribute set into an
#                  UPDATE), and bench_fpm runs with --shuffle too
#   --reps N       repetitions of each measurement (default 3)
#   --no-hog       skip the kernel-path variant with CPU 1 kept busy (the CPU
#                  fwd's worker takes away from FRR in the fwd target when it
#                  always polls, FWD_IDLE_SLEEP_US=0)
#   --out FILE     where the Markdown goes (default bench-results/fpm.md;
#                  --quick / --ingest-only: /tmp/fpmbench/fpm-quick.md,
#                  /tmp/fpmbench/fpm-ingest.md, so the full results stay)
#
# Environment: FWD_IDLE_SLEEP_US (fwd's datapath.idle_sleep_us in the fwd
# and replay targets; default: the daemon's own, 50: an idle worker sleeps
# between polls; 0: it always polls, taking CPU 1 from FRR); FWD_DATA (the corpora directory: routing/ holds
# ipv4_fulltable_gaissmai.txt.gz; default ../shared/data beside the repository,
# see find_corpora in deploy/lib.sh); FWD_BIN_DIR (fwd,
# fwdctl, bench_fpm; default target/release, built if missing).
#
# Root. Everything runs in network namespaces named fpmbench-* created here
# (addresses 10.77.1.0/24 inside them only); every namespace and daemon is
# removed on exit (trap). Work files: /tmp/fpmbench/run; the FPM capture
# (about 70 MB for the full view) is kept in /tmp/fpmbench/cache.
#
# Topology, per measurement (fresh appliance namespace and daemons each time):
#
#   fpmbench-spk                          fpmbench-app
#   speaker: bgpd --no_zebra, AS 65002    target fwd:    fwd (net_tap port wan,
#   N `network` lines, 10.77.1.2  ──────    representor wan 10.77.1.1) + zebra
#   (started once, neighbor shut;           -M dplane_fpm_nl + bgpd AS 65001;
#    `no neighbor shutdown` = t0)           BGP crosses fwd's host path
#                                         target kernel: zebra (no FPM) + bgpd,
#                                           plain veth 10.77.1.1
#                                         capture: zebra -M dplane_fpm_nl + bgpd,
#                                           veth, fpm-capture.py as FPM server
#   fpmbench-rep: a fresh fwd, the capture replayed into its FPM listener.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/deploy/lib.sh"
CMDLINE="${FWD_IDLE_SLEEP_US:+FWD_IDLE_SLEEP_US=$FWD_IDLE_SLEEP_US }deploy/bench/fpm.sh $*"
QUICK=0
REPS=3
HOG=1
INGEST_ONLY=0
SHUFFLE=0
OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=1 ;;
        --reps) REPS="$2"; shift ;;
        --no-hog) HOG=0 ;;
        --ingest-only) INGEST_ONLY=1 ;;
        --shuffle) SHUFFLE=1 ;;
        --out) OUT="$2"; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
        *) echo "$0: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[ "$(id -u)" = 0 ] || { echo "$0: run as root (namespaces, FRR, DPDK)" >&2; exit 1; }
if [ -z "$OUT" ]; then
    if [ "$QUICK" = 1 ] || [ "$INGEST_ONLY" = 1 ]; then
        OUT=/tmp/fpmbench/fpm
        [ "$QUICK" = 1 ] && OUT="$OUT-quick"
        [ "$INGEST_ONLY" = 1 ] && OUT="$OUT-ingest"
        [ "$SHUFFLE" = 1 ] && OUT="$OUT-shuffled"
        OUT="$OUT.md"
    else
        OUT="$ROOT/bench-results/fpm.md"
    fi
fi

find_corpora || { echo "$0: the full IPv4 table is needed: $corpora_missing" >&2; exit 3; }
DATA="$FWD_DATA/routing"
TABLE="$DATA/ipv4_fulltable_gaissmai.txt.gz"
if [ ! -f "$TABLE" ]; then
    echo "$0: the full IPv4 table is absent: $TABLE not found (FWD_DATA)." >&2
    exit 3
fi

FRR=/usr/lib/frr
FPM_MODULE=/usr/lib/x86_64-linux-gnu/frr/modules/dplane_fpm_nl.so
for f in "$FRR/zebra" "$FRR/bgpd" "$FPM_MODULE"; do
    [ -e "$f" ] || { echo "$0: $f missing: install Debian's frr (deploy/setup.sh)" >&2; exit 1; }
done
for c in vtysh python3 ip taskset; do
    command -v "$c" > /dev/null || { echo "$0: $c not found" >&2; exit 1; }
done

BIN="${FWD_BIN_DIR:-$REL}"
if [ ! -x "$BIN/fwd" ] || [ ! -x "$BIN/fwdctl" ] || [ ! -x "$BIN/bench_fpm" ]; then
    if [ -n "${FWD_BIN_DIR:-}" ]; then
        echo "$0: FWD_BIN_DIR=$FWD_BIN_DIR lacks fwd, fwdctl or bench_fpm" >&2; exit 1
    fi
    export PATH="$PATH:$HOME/.cargo/bin"
    (cd "$ROOT" && cargo build --release --bin fwd --bin fwdctl --bin bench_fpm)
fi
FWD="$BIN/fwd"
CTL="$BIN/fwdctl"

BASE=/tmp/fpmbench
WORK="$BASE/run"
CACHE="$BASE/cache"
PY="$WORK/py"
SPK_NS=fpmbench-spk
APP_NS=fpmbench-app
REP_NS=fpmbench-rep
SPK_AS=65002
APP_AS=65001
SPK_IP=10.77.1.2
APP_IP=10.77.1.1
FPM_PORT=2620

log() { printf '%s [fpm.sh] %s\n' "$(date +%T)" "$*" >&2; }
now() { date +%s.%N; }

# Every process this script starts runs inside an fpmbench-* namespace:
# cleanup kills exactly those (by pid, from `ip netns pids`), then deletes
# the namespaces, and removes the crash-log dirs FRR leaves for killed
# daemons (/var/tmp/frr/<daemon>.<pid>).
STARTED=()
kill_pid() {  # pid [signal]: signal, wait up to 10 s, then SIGKILL
    local pid="$1" sig="${2:-TERM}" i
    kill -"$sig" "$pid" 2> /dev/null || return 0
    for i in $(seq 1 100); do
        kill -0 "$pid" 2> /dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2> /dev/null || true
    wait "$pid" 2> /dev/null || true
    rm -rf /var/tmp/frr/*."$pid"
}
del_ns() {
    local ns="$1" p
    ip netns list | awk '{print $1}' | grep -qx "$ns" || return 0
    for p in $(ip netns pids "$ns" 2> /dev/null); do
        kill -KILL "$p" 2> /dev/null || true
        rm -rf /var/tmp/frr/*."$p"
    done
    sleep 0.2
    ip netns del "$ns" 2> /dev/null || true
}
cleanup() {
    local ns
    for ns in $(ip netns list | awk '{print $1}' | grep '^fpmbench-' || true); do
        del_ns "$ns"
    done
    for p in "${STARTED[@]}"; do rm -rf /var/tmp/frr/*."$p"; done
}
trap cleanup EXIT
trap 'log interrupted; exit 130' INT TERM

# Waits until the machine is quiet (< 0.25 busy cores over 0.5 s, up to 30 s):
# a deleted namespace frees its routes asynchronously, and other users of
# the machine may be busy. Prints the busy cores it last saw.
settle() {  # [max busy cores, default 0.25]
    local i b=9 max="${1:-0.25}"
    for i in $(seq 1 60); do
        b=$(python3 - << 'PY'
import time
def s():
    v = [int(x) for x in open('/proc/stat').readline().split()[1:]]
    return sum(v[:8]), v[3] + v[4]
a = s(); time.sleep(0.5); b = s()
print(round(((b[0] - a[0]) - (b[1] - a[1])) / 100 / 0.5, 2))
PY
)
        awk -v b="$b" -v m="$max" 'BEGIN { exit !(b < m) }' && break
    done
    echo "$b"
}

new_ns() {
    del_ns "$1"
    ip netns add "$1"
    ip netns exec "$1" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
    ip -n "$1" link set lo up
}

vty() {  # dir daemon commands...
    local d="$1" daemon="$2"; shift 2
    local args=() c
    for c in "$@"; do args+=(-c "$c"); done
    vtysh --config_dir "$d" --vty_socket "$d" -d "$daemon" "${args[@]}"
}

# start_frr NS DIR DAEMON [args]: config DIR/DAEMON.conf must exist; waits
# for its vty; sets FRR_PID.
start_frr() {
    local ns="$1" d="$2" daemon="$3" i; shift 3
    local z=(-z "$d/zserv.api")
    case " $* " in *" --no_zebra "*) z=() ;; esac
    touch "$d/vtysh.conf"
    rm -f "$d/$daemon.vty"
    ip netns exec "$ns" "$FRR/$daemon" -u root -g frrvty -P 0 -f "$d/$daemon.conf" \
        -i "$d/$daemon.pid" --vty_socket "$d" --log "file:$d/$daemon.log" "${z[@]}" "$@" \
        > "$d/$daemon.out" 2>&1 < /dev/null &
    FRR_PID=$!
    disown "$FRR_PID"
    STARTED+=("$FRR_PID")
    for i in $(seq 1 600); do
        kill -0 "$FRR_PID" 2> /dev/null || { tail -20 "$d/$daemon.out" "$d/$daemon.log" >&2; return 1; }
        if [ -S "$d/$daemon.vty" ] && vty "$d" "$daemon" "show version" > /dev/null 2>&1; then
            return 0
        fi
        sleep 0.1
    done
    log "$daemon did not answer on its vty"; return 1
}

# The helpers (Python, standard library), written into $PY at start.
write_helpers() {
    cat > "$PY/mon.py" << 'PYEOF'
#!/usr/bin/env python3
"""fpm.sh's monitor: runs the trigger, then timestamps when each target has
all N routes. Run inside the appliance's namespace (the kernel FIB is
watched through a netlink listener of that namespace).

Watches (each in a thread of its own, so a slow one delays no other):
  bgp     app bgpd `show bgp ipv4 unicast summary json` every 0.2 s until
          Established, then every 0.5 s until pfxRcd == N
  zebra   `show ip route summary json` (ebgp fib == N) every --zebra-every s,
          `show zebra dplane` (route updates), and with --fpm-counters
          `show fpm counters json` (contexts queued, output buffer)
  kernel  RTM_NEWROUTE/RTM_DELROUTE notifications of proto bgp (186) in
          table main (a listener: costs the kernel one skb clone per route;
          counted by nlcount, C with recvmmsg, or in Python when no C
          compiler was found), checked at the end against /proc/net/fib_triestat
  fwd     `fpm show` over one persistent control-socket connection every
          --fwd-every s (installed == N)
Writes a JSON with times relative to t0 (the trigger), samples, and the
CPU seconds each named process (and each fwd thread) used in between.
"""
import argparse
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

A = None
EV = {}
SAMPLES = {"bgp": [], "zebra": [], "kernel": [], "fwd": [], "fpm": []}
LOCK = threading.Lock()
STOP = threading.Event()
T0 = [None]


def now():
    return time.time()


def event(name, t=None):
    with LOCK:
        if name not in EV:
            EV[name] = t if t is not None else now()


def vtysh(daemon, cmds, timeout=60):
    t = now()
    args = []
    for c in [cmds] if isinstance(cmds, str) else cmds:
        args += ["-c", c]
    try:
        o = subprocess.run(["vtysh", "--config_dir", A.frr_dir, "--vty_socket", A.frr_dir,
                            "-d", daemon] + args, capture_output=True, text=True,
                           timeout=timeout)
        return o.stdout, now() - t
    except subprocess.TimeoutExpired:
        return "", now() - t


def bgp_thread():
    while not STOP.is_set():
        out, lat = vtysh("bgpd", "show bgp ipv4 unicast summary json")
        t = now()
        try:
            p = json.loads(out)["peers"][A.peer]
        except Exception:
            p = {}
        st, rcv = p.get("state"), p.get("pfxRcd", 0)
        SAMPLES["bgp"].append((t, rcv, st, round(lat, 3)))
        if st == "Established":
            # peerUptimeMsec counts whole seconds in 8.4: the poll time
            # (every 0.1 s until then) is the better clock.
            event("established", t)
        if rcv >= A.n:
            event("bgp_received", t)
        if "bgp_received" in EV:
            STOP.wait(2.0)
        elif "established" in EV:
            STOP.wait(0.5)
        else:
            STOP.wait(0.2)


def zebra_thread():
    while not STOP.is_set():
        # One vtysh run for both (a vtysh start costs ~30 ms of CPU).
        out, lat = vtysh("zebra", ["show ip route summary json", "show zebra dplane"])
        t = now()
        fib = rib = 0
        dp = ""
        try:
            summary, end = json.JSONDecoder().raw_decode(out.lstrip())
            dp = out.lstrip()[end:]
            for r in summary.get("routes", []):
                if r.get("type") == "ebgp":
                    fib += r.get("fib", 0)
                    rib += r.get("rib", 0)
        except Exception:
            pass
        upd = qd = None
        for line in dp.splitlines():
            if line.startswith("Route updates:"):
                upd = int(line.split(":")[1])
            elif line.startswith("Route update queue depth:"):
                qd = int(line.split(":")[1])
        SAMPLES["zebra"].append((t, rib, fib, upd, qd, round(lat, 3)))
        if rib >= A.n:
            event("zebra_rib", t)
        if fib >= A.n:
            event("zebra_fib", t)
        if A.fpm_counters:
            out, _ = vtysh("zebra", "show fpm counters json")
            try:
                c = json.loads(out)
            except Exception:
                c = {}
            SAMPLES["fpm"].append((now(), c.get("data-plane-contexts"),
                                   c.get("data-plane-contexts-queue"), c.get("obuf-bytes"),
                                   c.get("bytes-sent")))
            if ("zebra_fib" in EV and c.get("data-plane-contexts-queue") == 0
                    and c.get("obuf-bytes") == 0):
                event("zebra_fpm_flushed", now())
        if "zebra_fib" in EV and (not A.fpm_counters or "zebra_fpm_flushed" in EV):
            STOP.wait(2.0)
        else:
            STOP.wait(A.zebra_every)


def fib_triestat(pid):
    """Prefixes in the Main trie of pid's namespace (reads the whole trie: ~0.15 s for 900k)."""
    with open(f"/proc/{pid}/net/fib_triestat") as f:
        main = False
        for line in f:
            if line.startswith("Main:"):
                main = True
            elif main and "Prefixes:" in line:
                return int(line.split(":")[1])
    return None


def kernel_thread(sock):
    added = 0
    overflow = 0
    last_sample = 0
    buf = bytearray(1 << 20)
    while not STOP.is_set():
        try:
            got = sock.recv_into(buf)
            data = memoryview(buf)[:got]
        except socket.timeout:
            continue
        except OSError as e:  # ENOBUFS: notifications lost; fall back to the trie count
            overflow += 1
            EV.setdefault("kernel_overflow", now())
            continue
        t = now()
        off = 0
        while off + 16 <= len(data):
            ln, ty, fl = struct.unpack_from("=IHH", data, off)
            if ln < 16:
                break
            if ty in (24, 25) and off + 28 <= len(data):
                fam, dl, sl, tos, table, proto, scope, rtype = struct.unpack_from("=BBBBBBBB", data, off + 16)
                if fam == 2 and proto == 186 and table == 254:
                    if ty == 24 and not fl & 0x100:
                        added += 1
                    elif ty == 25:
                        added -= 1
            off += (ln + 3) & ~3
        if added >= A.n:
            event("kernel_fib", t)
        if t - last_sample > 0.1:
            SAMPLES["kernel"].append((t, added))
            last_sample = t
    SAMPLES["kernel"].append((now(), added))
    EV["kernel_overflows"] = overflow


def nlcount_thread(proc):
    """Reads the C counter's lines (see nlcount.c)."""
    for line in proc.stdout:
        f = line.split()
        if not f:
            continue
        if f[0] == "C":
            SAMPLES["kernel"].append((float(f[1]), int(f[2])))
        elif f[0] == "ALL":
            SAMPLES["kernel"].append((float(f[1]), int(f[2])))
            event("kernel_fib", float(f[1]))
        elif f[0] == "OVERFLOW":
            EV.setdefault("kernel_overflow", float(f[1]))
            EV["kernel_overflows"] = EV.get("kernel_overflows", 0) + 1


def kernel_poll_thread():
    """Fallback when the listener overflowed: the trie count every second."""
    while not STOP.is_set():
        if "kernel_overflow" in EV and "kernel_fib" not in EV:
            c = fib_triestat(os.getpid())
            if c is not None and c - A.kernel_base >= A.n:
                event("kernel_fib", now())
        STOP.wait(1.0)


class Ctl:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.f = self.s.makefile("rwb")
        self.id = 0
        self.f.write(b'{"hello":{"protocol":1,"client":"fpm.sh monitor"}}\n')
        self.f.flush()
        self.f.readline()

    def fpm(self):
        self.id += 1
        self.f.write(b'{"id":%d,"request":{"fpm_show":{}}}\n' % self.id)
        self.f.flush()
        return json.loads(self.f.readline())["ok"]["fpm"]


def fwd_thread():
    c = Ctl(A.fwd_sock)
    last = None
    while not STOP.is_set():
        f = c.fpm()
        t = now()
        key = (f["installed"], f["batches"], f["messages"])
        if key != last:
            SAMPLES["fwd"].append((t, f["installed"], f["batches"], f["messages"], f["routes"],
                                   f["refused"]))
            last = key
        if f["installed"] > 0:
            event("fwd_first", t)
        if f["installed"] >= A.n:
            event("fwd_fib", t)
            EV["fwd_final"] = f
        EV["fwd_last"] = f
        STOP.wait(A.fwd_every)


def cpu_of(pid):
    """{name: seconds} for a process, and its threads when asked."""
    tck = os.sysconf("SC_CLK_TCK")
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read().rsplit(")", 1)[1].split()
        return (int(s[11]) + int(s[12])) / tck
    except OSError:
        return None


def threads_of(pid):
    tck = os.sysconf("SC_CLK_TCK")
    r = {}
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/stat") as f:
                raw = f.read()
            name = raw[raw.index("(") + 1:raw.rindex(")")]
            s = raw.rsplit(")", 1)[1].split()
            r[name] = r.get(name, 0) + (int(s[11]) + int(s[12])) / tck
    except OSError:
        pass
    return r


def machine():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    tck = os.sysconf("SC_CLK_TCK")
    idle = v[3] + v[4]
    return sum(v[:8]) / tck, idle / tck


def snapshot(pids):
    r = {"machine": machine()}
    for name, pid in pids.items():
        r[name] = cpu_of(pid)
        if name == "fwd":
            r["fwd_threads"] = threads_of(pid)
    return r


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--peer", default="10.77.1.2")
    ap.add_argument("--frr-dir", required=True)
    ap.add_argument("--fwd-sock")
    ap.add_argument("--fwd-every", type=float, default=0.05)
    ap.add_argument("--zebra-every", type=float, default=1.0)
    ap.add_argument("--fpm-counters", action="store_true")
    ap.add_argument("--kernel-base", type=int, default=0)
    ap.add_argument("--nlcount", help="the C counter (nlcount.c); else a Python listener")
    ap.add_argument("--cpu", action="append", default=[], help="name=pid")
    ap.add_argument("--deadline", type=float, default=300)
    ap.add_argument("--out", required=True)
    ap.add_argument("trigger", nargs=argparse.REMAINDER)
    A = ap.parse_args()
    pids = dict(x.split("=", 1) for x in A.cpu)

    counter = None
    if A.nlcount and os.access(A.nlcount, os.X_OK):
        counter = subprocess.Popen([A.nlcount, str(A.n)], stdout=subprocess.PIPE, text=True)
        assert counter.stdout.readline().strip() == "READY"
        kth = threading.Thread(target=nlcount_thread, args=(counter,), daemon=True)
    else:
        nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
        try:
            nl.setsockopt(socket.SOL_SOCKET, 33, 512 << 20)  # SO_RCVBUFFORCE
        except OSError:
            nl.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
        nl.bind((0, 0x40))  # RTMGRP_IPV4_ROUTE
        nl.settimeout(0.2)
        kth = threading.Thread(target=kernel_thread, args=(nl,), daemon=True)
    base = fib_triestat(os.getpid())

    want = ["established", "bgp_received", "zebra_fib", "kernel_fib"]
    if A.fwd_sock:
        want.append("fwd_fib")
    if A.fpm_counters:
        want.append("zebra_fpm_flushed")
    ths = [kth, threading.Thread(target=kernel_poll_thread, daemon=True)]
    cpu0 = snapshot(pids)
    t0 = now()
    T0[0] = t0
    trig = subprocess.run(A.trigger, capture_output=True, text=True)
    ths += [threading.Thread(target=bgp_thread, daemon=True),
            threading.Thread(target=zebra_thread, daemon=True)]
    if A.fwd_sock:
        ths.append(threading.Thread(target=fwd_thread, daemon=True))
    for t in ths:
        t.start()
    deadline = t0 + A.deadline
    while now() < deadline and not all(w in EV for w in want):
        time.sleep(0.05)
    t_end = now()
    cpu1 = snapshot(pids)
    STOP.set()
    if counter:
        counter.terminate()
        counter.wait()
    for t in ths:
        t.join(timeout=70)
    trie = fib_triestat(os.getpid())
    rel = {k: round(v - t0, 3) for k, v in EV.items() if isinstance(v, float) and v > 1e9}
    cpu = {}
    for k in pids:
        if cpu0.get(k) is not None and cpu1.get(k) is not None:
            cpu[k] = round(cpu1[k] - cpu0[k], 2)
    if "fwd_threads" in cpu1:
        cpu["fwd_threads"] = {k: round(v - cpu0.get("fwd_threads", {}).get(k, 0), 2)
                              for k, v in cpu1["fwd_threads"].items()}
    wall = t_end - t0
    (m0, i0), (m1, i1) = cpu0["machine"], cpu1["machine"]
    ours = sum(v for k, v in cpu.items() if isinstance(v, float))
    import resource
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # vtysh and nlcount
    res = {
        "kernel_counter": "nlcount" if counter else "python",
        "monitor_cpu_s": round(me.ru_utime + me.ru_stime, 2),
        "vtysh_cpu_s": round(kids.ru_utime + kids.ru_stime, 2),
        "n": A.n, "t0": t0, "wall": round(wall, 3), "events": rel,
        "missing": [w for w in want if w not in EV],
        "trigger_rc": trig.returncode, "trigger_out": (trig.stdout + trig.stderr)[-500:],
        "kernel": {"trie_prefixes_before": base, "trie_prefixes_after": trie,
                   "trie_added": None if base is None or trie is None else trie - base,
                   "listener_overflows": EV.get("kernel_overflows")},
        "cpu_s": cpu,
        "machine_busy_s": round((m1 - m0) - (i1 - i0), 2),
        "machine_cores_busy": round(((m1 - m0) - (i1 - i0)) / wall, 2) if wall > 0 else None,
        "others_busy_s": round((m1 - m0) - (i1 - i0) - ours, 2),
        "fwd_final": EV.get("fwd_final") or EV.get("fwd_last"),
        "samples": {k: [[round(x[0] - t0, 3)] + list(x[1:]) for x in v] for k, v in SAMPLES.items()},
    }
    with open(A.out, "w") as f:
        json.dump(res, f)
    print(json.dumps({k: res[k] for k in ("events", "missing", "cpu_s", "machine_cores_busy")}))
    return 0 if not res["missing"] else 1


if __name__ == "__main__":
    sys.exit(main())
PYEOF
    cat > "$PY/replay.py" << 'PYEOF'
#!/usr/bin/env python3
"""Replays a recorded FPM stream into fwd's FPM listener as fast as TCP takes
it, and times until `fpm show` reports every route installed.

    replay.py CAPTURE HOST PORT FWD_SOCK N OUT.json

A thread polls `fpm show` every 2 ms over one control-socket connection
(the daemon answers from a status copy, not the control lcore).
"""
import json
import socket
import sys
import threading
import time


def main():
    cap, host, port, sock, n, out = sys.argv[1:7]
    n = int(n)
    with open(cap, "rb") as f:
        data = f.read()
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(sock)
    cf = c.makefile("rwb")
    cf.write(b'{"hello":{"protocol":1,"client":"fpm.sh replay"}}\n')
    cf.flush()
    cf.readline()
    state = {"i": 0}

    def fpm():
        state["i"] += 1
        cf.write(b'{"id":%d,"request":{"fpm_show":{}}}\n' % state["i"])
        cf.flush()
        return json.loads(cf.readline())["ok"]["fpm"]

    f0 = fpm()
    ev = {}
    samples = []
    done = threading.Event()

    def poll():
        last = None
        while not done.is_set():
            f = fpm()
            t = time.time()
            k = (f["installed"], f["batches"])
            if k != last:
                samples.append((t, f["installed"], f["batches"], f["messages"]))
                last = k
            if f["connects"] > f0["connects"] and "accepted" not in ev:
                ev["accepted"] = t
            if f["installed"] > 0 and "first" not in ev:
                ev["first"] = t
            if f["installed"] >= n:
                ev["all"] = t
                ev["final"] = f
                done.set()
                return
            ev["last"] = f
            time.sleep(0.002)

    s = socket.create_connection((host, int(port)))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    th = threading.Thread(target=poll, daemon=True)
    t0 = time.time()
    th.start()
    s.sendall(data)
    t_sent = time.time()
    done.wait(120)
    t_end = time.time()
    s.close()
    r = {
        "bytes": len(data), "n": n, "connects_before": f0["connects"],
        "sent_s": round(t_sent - t0, 4),
        "accepted_s": round(ev["accepted"] - t0, 4) if "accepted" in ev else None,
        "first_s": round(ev["first"] - t0, 4) if "first" in ev else None,
        "all_s": round(ev["all"] - t0, 4) if "all" in ev else None,
        "routes_per_s": round(n / (ev["all"] - t0)) if "all" in ev else None,
        "routes_per_s_from_accept": round(n / (ev["all"] - ev["accepted"]))
        if "all" in ev and "accepted" in ev else None,
        "fpm": ev.get("final") or ev.get("last"),
        "samples": [[round(x[0] - t0, 4)] + list(x[1:]) for x in samples],
        "timed_out": "all" not in ev, "waited_s": round(t_end - t0, 3),
    }
    with open(out, "w") as f:
        json.dump(r, f)
    print(json.dumps({k: r[k] for k in ("sent_s", "accepted_s", "first_s", "all_s", "routes_per_s", "routes_per_s_from_accept", "timed_out")}))
    return 0 if "all" in ev else 1


if __name__ == "__main__":
    sys.exit(main())
PYEOF
    cat > "$PY/shuffle.py" << 'PYEOF'
#!/usr/bin/env python3
"""A recorded FPM stream with its frames in a fixed random order.

    shuffle.py CAPTURE OUT
"""
import random
import struct
import sys


def main():
    data = open(sys.argv[1], "rb").read()
    frames, off = [], 0
    while off + 4 <= len(data):
        flen = struct.unpack_from("!H", data, off + 2)[0]
        if flen < 4 or off + flen > len(data):
            sys.exit(f"{sys.argv[1]}: a malformed frame at byte {off}")
        frames.append(data[off:off + flen])
        off += flen
    random.Random(20261207).shuffle(frames)
    with open(sys.argv[2], "wb") as f:
        f.write(b"".join(frames))


if __name__ == "__main__":
    main()
PYEOF
    cat > "$PY/capstat.py" << 'PYEOF'
#!/usr/bin/env python3
"""What a recorded FPM stream holds: frames, netlink messages by type,
RTM_NEWROUTE by protocol, distinct IPv4 BGP prefixes (the replay's target).

    capstat.py CAPTURE OUT.json
"""
import importlib.util
import json
import os
import struct
import sys


def main():
    # The frame walk is deploy/frr/fpm-capture.py's (FPM_CAPTURE names it).
    spec = importlib.util.spec_from_file_location("fpm_capture", os.environ["FPM_CAPTURE"])
    cap = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cap)
    data = open(sys.argv[1], "rb").read()
    fr, used = cap.frames(data)
    types, protos = {}, {}
    bgp4 = set()
    per_frame = {}
    for msgs in fr:
        per_frame[len(msgs)] = per_frame.get(len(msgs), 0) + 1
        for ntype, p, nlen in msgs:
            types[ntype] = types.get(ntype, 0) + 1
            if ntype not in (24, 25) or p + 28 > p + nlen:
                continue
            fam, dl, _, _, table, proto = struct.unpack_from("=BBBBBB", data, p + 16)
            if ntype == 24:
                protos[proto] = protos.get(proto, 0) + 1
            if fam == 2 and proto == 186:
                q, dst = p + 28, None
                while q + 4 <= p + nlen:  # RTA_DST (1)
                    alen, atype = struct.unpack_from("=HH", data, q)
                    if alen < 4:
                        break
                    if atype == 1:
                        dst = data[q + 4:q + alen]
                    q += (alen + 3) & ~3
                (bgp4.add if ntype == 24 else bgp4.discard)((dst, dl))
    r = {"bytes": len(data), "frames": len(fr), "messages": sum(per_frame[k] * k for k in per_frame),
         "trailing": len(data) - used,
         "types": {cap.NAMES.get(t, str(t)): c for t, c in sorted(types.items())},
         "newroute_by_proto": {str(p): c for p, c in sorted(protos.items())},
         "bgp_ipv4_prefixes": len(bgp4),
         "messages_per_frame": {str(k): v for k, v in sorted(per_frame.items())}}
    with open(sys.argv[2], "w") as f:
        json.dump(r, f)
    print(json.dumps(r))


if __name__ == "__main__":
    main()
PYEOF
    cat > "$PY/report.py" << 'PYEOF'
#!/usr/bin/env python3
"""fpm.sh's report: the run directory's JSON files to Markdown (stdout)."""
import glob
import json
import os
import re
import statistics
import sys

W = sys.argv[1]


def load(p):
    try:
        with open(p) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


meta = dict(l.rstrip("\n").split("=", 1) for l in open(f"{W}/meta.txt") if "=" in l)
N = int(meta["n"])
spk = load(f"{W}/speaker.json") or {}
cap = load(f"{W}/capture.json") or {}


def runs(target):
    r = []
    for d in sorted(glob.glob(f"{W}/{target}-[0-9]*")):
        m = load(f"{d}/mon.json")
        if m:
            m["_dir"] = d
            r.append(m)
    return r


T = {t: runs(t) for t in ("fwd", "kernel", "kernel-hog", "sink")}


def mmm(xs, fmt="{:.1f}"):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "n/a"
    if len(xs) == 1:
        return fmt.format(xs[0]) + " (n=1)"
    return " / ".join(fmt.format(v) for v in (min(xs), statistics.median(xs), max(xs)))


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def ev(m, k):
    return m["events"].get(k)


def since_est(m, k):
    a, b = ev(m, k), ev(m, "established")
    return None if a is None or b is None else b and a - b


out = []
p = out.append
p(f"# FPM: a full BGP view into fwd's FIB vs the Linux kernel's, and FPM ingest alone\n")
p(f"- command: `{meta['cmd'].strip()}` (as root; binaries from `{meta['bin']}`)")
p(f"- date: {meta['date']}; repository at {meta['commit']}; binaries: {meta.get('binsrc', '?')}")
p(f"- machine: {meta['cpu']}, {meta['mem']} memory, kernel {meta['kernel']}; a shared VM "
  f"(2 vCPU, noisy: other users' builds and tests may run beside it; each measurement "
  f"waits for < 0.25 busy cores before it starts and reports the CPU others used during it)")
p(f"- FRR: {meta['frr']} (Debian 12 package); speaker: FRR bgpd `--no_zebra` "
  f"(AS 65002, one `network` line per prefix, all with the same attributes, so bgpd packs "
  f"them into full 4 KB UPDATEs: the fastest feed, the hardest case for the receiver)")
p(f"- data: the first {N:,} prefixes of ipv4_fulltable_gaissmai.txt.gz "
  f"($FWD_DATA/routing); {meta['reps']} repetitions of each measurement, interleaved; "
  f"min / median / max shown")
p("")
p("## End to end: from the speaker's `no neighbor shutdown` (t0) until all routes are in\n")
p(f"Speaker start (not in the times below): bgpd --no_zebra answered its vty "
  f"{spk.get('vty_s')} s after start and had all {N:,} networks in its table after "
  f"{spk.get('loaded_s')} s (RSS {spk.get('rss_kb', 0) // 1024} MiB); it is started once, "
  f"its neighbor shut, and each measurement begins with `no neighbor shutdown`.\n")
p("Seconds after t0 (min / median / max):\n")
cols = [("established", "session Established"), ("bgp_received", "bgpd received all"),
        ("zebra_rib", "zebra RIB all"), ("zebra_fib", "zebra FIB all (installed)"),
        ("kernel_fib", "kernel FIB all"), ("fwd_fib", "fwd FIB all (FPM)"),
        ("zebra_fpm_flushed", "zebra FPM output flushed")]
names = {"fwd": "**fwd target**: zebra -M dplane_fpm_nl + bgpd beside fwd, BGP through fwd's port",
         "kernel": "**kernel target**: zebra (no FPM) + bgpd, plain veth",
         "kernel-hog": "kernel target, CPU 1 kept busy (as a worker that always polls keeps it)",
         "sink": "zebra -M dplane_fpm_nl into fpm-capture.py (a sink that only records; veth)"}
p("| target | " + " | ".join(c[1] for c in cols) + " |")
p("|---|" + "---|" * len(cols))
for t, ms in T.items():
    if not ms:
        continue
    row = [mmm([ev(m, k) for m in ms]) if any(ev(m, k) is not None for m in ms) else "–"
           for k, _ in cols]
    p(f"| {names[t]} | " + " | ".join(row) + " |")
p("")
p("Same, counted from session Established (median):\n")
p("| target | bgpd received all | zebra FIB all | kernel FIB all | fwd FIB all | FPM flushed |")
p("|---|---|---|---|---|---|")
for t, ms in T.items():
    if not ms:
        continue
    row = []
    for k in ("bgp_received", "zebra_fib", "kernel_fib", "fwd_fib", "zebra_fpm_flushed"):
        v = med([since_est(m, k) for m in ms])
        row.append("–" if v is None else f"{v:.1f}")
    p(f"| {t} | " + " | ".join(row) + " |")
p("")
miss = {t: [m["missing"] for m in ms if m["missing"]] for t, ms in T.items()}
if any(miss.values()):
    p(f"Targets not reached before the deadline: {miss}\n")

# Average rates and a decomposition of the fwd target's extra time.
rates_ = []
for t, ms in T.items():
    k = "fwd_fib" if t == "fwd" else "kernel_fib"
    v = med([N / since_est(m, k) for m in ms if since_est(m, k)])
    if v:
        rates_.append(f"{t} {v / 1e3:.0f}k")
if rates_:
    p("Average install rate from Established to the target's last route (median, routes/s): "
      + ", ".join(rates_) + ".\n")
mf = lambda t, k: med([ev(m, k) for m in T[t]]) if T[t] else None
fwd_all, k_all, kh_all, s_all = mf("fwd", "fwd_fib"), mf("kernel", "kernel_fib"), \
    mf("kernel-hog", "kernel_fib"), mf("sink", "kernel_fib")
if None not in (fwd_all, k_all, kh_all, s_all):
    p("Where the fwd target's extra time comes from (differences of medians, seconds; "
      "rough, the parts interact):\n")
    p("| part | s |")
    p("|---|---|")
    p(f"| kernel target, all in the kernel FIB | {k_all:.1f} |")
    p(f"| + CPU 1 taken by a busy loop (kernel-hog − kernel) | {kh_all - k_all:+.1f} |")
    p(f"| + zebra's FPM module, into a sink (sink − kernel, kernel FIB all) | {s_all - k_all:+.1f} |")
    p(f"| + the rest: fwd's own threads, BGP through fwd's host path, interactions | "
      f"{fwd_all - kh_all - (s_all - k_all):+.1f} |")
    p(f"| = fwd target, all in fwd's FIB | {fwd_all:.1f} |")
    p("")

how = ("read with recvmmsg by a small C counter" if any(
    m.get("kernel_counter") == "nlcount" for ms in T.values() for m in ms)
    else "read one recv per notification by the Python monitor (~4 s of its CPU for 900k)")
p("Observation: the kernel FIB is counted with a netlink listener of the namespace "
  f"(RTM_NEWROUTE/RTM_DELROUTE notifications, proto bgp, table main, {how}; zebra already "
  "subscribes to them, so the kernel only clones one more skb per route) and checked "
  "at the end against /proc/net/fib_triestat; zebra is polled with "
  "`show ip route summary json` and `show zebra dplane` every second (one vtysh run; the summary walks "
  "zebra's table in its main thread); bgpd with `show bgp ipv4 unicast summary json` every "
  "0.2 s until Established, then every 0.5 s; fwd with `fpm show` every 50 ms over one control-socket connection (served "
  "from a status copy, not by the control lcore). `ip route show proto bgp | wc -l` was "
  "not used: on this VM it costs 4-5 s of CPU per call at 900k routes "
  "(/proc/net/fib_triestat: 0.15 s).\n")
chk = []
for t, ms in T.items():
    for m in ms:
        k = m.get("kernel", {})
        if k.get("trie_added") is not None:
            chk.append(f"{os.path.basename(m['_dir'])}: {k['trie_added']}")
if chk:
    p("Kernel routes added per fib_triestat at the end (want " + f"{N:,}): " + ", ".join(chk) + "\n")

p("## Where the time goes: CPU seconds between t0 and the last target (median)\n")
procs = ["zebra", "bgpd", "speaker", "fwd", "fpm-capture", "hog"]
p("| target | wall s | " + " | ".join(procs) + " | fwd threads | machine busy cores | others (monitor, vtysh, kernel work, other users) |")
p("|---|---|" + "---|" * len(procs) + "---|---|---|")
for t, ms in T.items():
    if not ms:
        continue
    row = [f"{med([m['wall'] for m in ms]):.1f}"]
    for pr in procs:
        v = med([m["cpu_s"].get(pr) for m in ms])
        row.append("–" if v is None else f"{v:.1f}")
    th = [m["cpu_s"].get("fwd_threads") for m in ms if m["cpu_s"].get("fwd_threads")]
    if th:
        keys = sorted(th[0])
        row.append(", ".join(f"{k} {med([x.get(k) for x in th]):.1f}" for k in keys
                             if med([x.get(k) for x in th]) >= 0.05))
    else:
        row.append("–")
    row.append(f"{med([m['machine_cores_busy'] for m in ms]):.2f}")
    row.append(f"{med([m['others_busy_s'] for m in ms]):.1f} (monitor {med([m.get('monitor_cpu_s') for m in ms]) or 0:.1f}, vtysh and nlcount {med([m.get('vtysh_cpu_s') for m in ms]) or 0:.1f})")
    p(f"| {t} | " + " | ".join(row) + " |")
p("")

if T["fwd"]:
    p("## fwd's FPM ingest during the end-to-end runs\n")
    p("| rep | messages | batches | routes per batch | refused | ignored | installed | "
      "first route in fwd (s after t0) | zebra FIB all -> fwd FIB all (s) | kernel FIB all -> fwd FIB all (s) | punt drops |")
    p("|---|---|---|---|---|---|---|---|---|---|---|")
    for m in T["fwd"]:
        f = m.get("fwd_final") or {}
        st = load(f"{m['_dir']}/stats.json") or {}
        drops = "?"
        try:
            drops = sum(e["packets"] for e in st["stats"]["drops"] if e["reason"].startswith("punt"))
        except Exception:
            pass
        zf, kf, ff = ev(m, "zebra_fib"), ev(m, "kernel_fib"), ev(m, "fwd_fib")
        b = f.get("batches") or 0
        p(f"| {os.path.basename(m['_dir'])} | {f.get('messages')} | {b} | "
          f"{(f.get('messages', 0) / b) if b else 0:.0f} | {f.get('refused')} | {f.get('ignored')} | "
          f"{f.get('installed')} | {ev(m, 'fwd_first')} | "
          f"{'n/a' if None in (zf, ff) else f'{ff - zf:+.1f}'} | "
          f"{'n/a' if None in (kf, ff) else f'{ff - kf:+.1f}'} | {drops} |")
    rss = [open(x).read().strip() for x in sorted(glob.glob(f"{W}/fwd-*/fwd-rss-kb"))]
    if rss:
        p(f"\nfwd's resident memory with the full table (per rep, MiB): "
          + ", ".join(f"{int(x) / 1024:.0f}" for x in rss if x.isdigit()) + ".")
    diffs = [open(x).read().strip() for x in glob.glob(f"{W}/fwd-*/fwd-bgp.diff")]
    if diffs:
        p(f"\nCorrectness (rep 1): `fwdctl route show proto bgp` vs the announced set: "
          f"{diffs[0]} prefixes differ.")
    fc = load(f"{T['fwd'][0]['_dir']}/fpm-counters.json")
    if fc:
        p(f"\nzebra's `show fpm counters json` after rep 1: " + json.dumps(fc))
    p("")
    # fwd's ingest rate over time, rep 1: installed per second
    s = T["fwd"][0]["samples"]["fwd"]
    if s:
        p("fwd's FIB over time (rep 1, `installed` sampled every 50 ms; s after t0: routes):\n")
        marks, nxt = [], 0.0
        for x in s:
            if x[0] >= nxt:
                marks.append(f"{x[0]:.1f}: {x[1]:,}")
                nxt = x[0] + max(1.0, (s[-1][0] - s[0][0]) / 12)
        marks.append(f"{s[-1][0]:.1f}: {s[-1][1]:,}")
        p("`" + "` · `".join(marks) + "`\n")
    z = T["fwd"][0]["samples"]["zebra"]
    k = T["fwd"][0]["samples"]["kernel"]
    if z:
        p("zebra (same run; s after t0: RIB / FIB / dplane route updates): `" + "` · `".join(
            f"{x[0]:.1f}: {x[1]:,}/{x[2]:,}/{x[3] if x[3] is not None else '?'}" for x in z[::max(1, len(z) // 12)]) + "`\n")
    if k:
        p("kernel FIB of the appliance namespace (same run): `" + "` · `".join(
            f"{x[0]:.1f}: {x[1]:,}" for x in k[::max(1, len(k) // 12)]) + "`\n")

shuffled = (open(f"{W}/shuffled").read().strip() == "1") if os.path.exists(f"{W}/shuffled") else False
p("## FPM ingest alone: zebra's real stream replayed into a fresh fwd"
  + (", its frames in a fixed random order (--shuffle)" if shuffled else "") + "\n")
if cap:
    p(f"The capture (fpm-capture.py, zebra -M dplane_fpm_nl fed by the same speaker): "
      f"{cap['bytes']:,} bytes, {cap['frames']:,} FPM frames, {cap['messages']:,} netlink "
      f"messages ({cap['types']}), RTM_NEWROUTE by protocol {cap['newroute_by_proto']} "
      f"(186 = BGP, 2 = connected), {cap['bgp_ipv4_prefixes']:,} distinct BGP prefixes. "
      f"Messages per frame: {cap['messages_per_frame']}.\n")
rp = [load(x) for x in sorted(glob.glob(f"{W}/replay-*/replay.json"))]
rp = [r for r in rp if r]
if rp:
    p("A client in fwd's namespace connects to its FPM listener and writes the file with one "
      "`sendall`; the time runs from the connect until `fpm show` says every BGP route is "
      "installed (polled every 2 ms).\n")
    p("| measure | min / median / max |")
    p("|---|---|")
    p(f"| client done writing (s) | {mmm([r['sent_s'] for r in rp], '{:.3f}')} |")
    p(f"| fwd accepted the connection (s; its FPM thread polls accept() every 100 ms) | {mmm([r.get('accepted_s') for r in rp], '{:.3f}')} |")
    p(f"| first route installed (s) | {mmm([r['first_s'] for r in rp], '{:.3f}')} |")
    p(f"| all {rp[0]['n']:,} installed (s) | {mmm([r['all_s'] for r in rp], '{:.3f}')} |")
    p(f"| **routes/s** (BGP routes / time to all installed) | "
      f"{mmm([r['routes_per_s'] / 1e6 if r['routes_per_s'] else None for r in rp], '{:.2f} M')} |")
    p(f"| **routes/s counted from the accept** | "
      f"{mmm([r['routes_per_s_from_accept'] / 1e6 if r.get('routes_per_s_from_accept') else None for r in rp], '{:.2f} M')} |")
    p(f"| batches (generations) | {mmm([(r['fpm'] or {}).get('batches') for r in rp], '{:.0f}')} |")
    th = [load(x) for x in sorted(glob.glob(f"{W}/replay-*/fwd-threads.json"))]
    th = [x for x in th if x]
    if th:
        p(f"| CPU s of thread fwd-fpm (read, decode, translate), whole life of the replay's fwd | "
          f"{mmm([x.get('fwd-fpm') for x in th], '{:.2f}')} |")
        p(f"| CPU s of thread fwd-control (apply, publish), whole life of the replay's fwd | "
          f"{mmm([x.get('fwd-control') for x in th], '{:.2f}')} |")
    p("")
bf = ""
try:
    bf = open(f"{W}/bench_fpm.md").read()
except OSError:
    pass
rates = [float(x) for x in re.findall(r"^\| \d+ \| [\d.]+ \| ([\d.]+) ", bf, re.M)]
if bf:
    p("`bench_fpm` (in-process: decode + translate + apply of a synthetic stream of the same "
      "table, 1 MiB reads, one generation each, no socket"
      + (", in a random order" if shuffled else "") + "), same run:\n")
    p("```")
    p(bf.strip())
    p("```\n")
if rp and rates:
    rr = med([r["routes_per_s"] for r in rp if r["routes_per_s"]])
    if rr:
        p(f"Ratio replay over TCP / bench_fpm in-process (medians): "
          f"{rr / 1e6:.2f} / {med(rates):.2f} M routes/s = {rr / 1e6 / med(rates):.2f}.\n")

# --- every measurement ------------------------------------------------------
p("## Every measurement (seconds after t0)\n")
p("'foreign CPU-s' is the machine's busy time during the measurement minus the CPU of "
  "every process of the benchmark (daemons, fwd, hog, monitor, vtysh, nlcount): other users of the "
  "VM and kernel work not charged to a process. 'busy before' is what the machine did in "
  "the 0.5 s before t0 (the hog accounts for 1.0, and so does fwd's worker when it always "
  "polls, FWD_IDLE_SLEEP_US=0).\n")
p("| measurement | Established | bgpd all | zebra FIB all | kernel FIB all | fwd FIB all | foreign CPU-s | busy before |")
p("|---|---|---|---|---|---|---|---|")
for t, ms in T.items():
    for m in ms:
        d = m["_dir"]
        bb = ""
        try:
            bb = open(f"{d}/busy_before").read().strip()
        except OSError:
            pass
        foreign = m["others_busy_s"] - (m.get("monitor_cpu_s") or 0) - (m.get("vtysh_cpu_s") or 0)
        cells = [ev(m, k) for k in ("established", "bgp_received", "zebra_fib", "kernel_fib", "fwd_fib")]
        p(f"| {os.path.basename(d)} | " + " | ".join("–" if c is None else f"{c:.1f}" for c in cells)
          + f" | {foreign:.1f} | {bb} |")
for r in sorted(glob.glob(f"{W}/replay-*/replay.json")):
    x = load(r)
    if x:
        bb = ""
        try:
            bb = open(os.path.join(os.path.dirname(r), "busy_before")).read().strip()
        except OSError:
            pass
        p(f"| {os.path.basename(os.path.dirname(r))} (all installed) | | | | | "
          f"{x['all_s'] if x['all_s'] is not None else '–'} | | {bb} |")
p("")

# --- verdict ---------------------------------------------------------------
p("## Verdict (computed from the numbers above)\n")
fw, kn, kh, sk = (T[t] for t in ("fwd", "kernel", "kernel-hog", "sink"))
if fw and kn:
    a, b = med([ev(m, "fwd_fib") for m in fw]), med([ev(m, "kernel_fib") for m in kn])
    if a is not None and b is not None:
        p(f"- End to end, fwd target vs kernel target (medians from t0): {a:.1f} s vs {b:.1f} s: "
          + ("**fwd's path converges first**" if a < b else "**the kernel path converges first**")
          + f" (ratio {a / b:.2f}).")
    if kh:
        c = med([ev(m, "kernel_fib") for m in kh])
        if a is not None and c is not None:
            p(f"- The kernel target with CPU 1 kept busy (what a worker that always polls costs FRR): "
              f"{c:.1f} s; fwd {a:.1f} s (ratio {a / c:.2f}).")
    lag = med([ev(m, "fwd_fib") - ev(m, "zebra_fib") for m in fw
               if ev(m, "fwd_fib") is not None and ev(m, "zebra_fib") is not None])
    klag = med([ev(m, "fwd_fib") - ev(m, "kernel_fib") for m in fw
                if ev(m, "fwd_fib") is not None and ev(m, "kernel_fib") is not None])
    if lag is not None:
        p(f"- In the fwd target, fwd had everything {lag:+.1f} s after zebra reported all "
          f"installed, and {klag:+.1f} s after the same namespace's kernel had all (zebra's FPM "
          f"module is a data-plane provider that runs *after* the kernel provider: each route "
          f"reaches FPM only once it was written to the kernel).")
if sk and fw:
    s_ = med([ev(m, "zebra_fpm_flushed") for m in sk])
    a = med([ev(m, "fwd_fib") for m in fw])
    if s_ is not None and a is not None:
        p(f"- zebra feeding a sink that does nothing flushed its FPM output {s_:.1f} s after t0 "
          f"(median); fwd had all routes at {a:.1f} s.")
if fw:
    own = med([sum(m["cpu_s"].get("fwd_threads", {}).get(k, 0) for k in ("fwd-control", "fwd-fpm", "fwd-host"))
               for m in fw])
    ctl = med([m["cpu_s"].get("fwd_threads", {}).get("fwd-control") for m in fw])
    wall = med([m["wall"] for m in fw])
    bat = med([(m.get("fwd_final") or {}).get("batches") for m in fw])
    wk = med([m["cpu_s"].get("fwd_threads", {}).get("rte-worker-1") for m in fw])
    if wk is not None:
        p(f"- fwd's worker (rte-worker-1) used {wk:.1f} CPU-s of the {wall:.0f} s "
          f"(datapath.idle_sleep_us: {os.environ.get('FWD_IDLE_SLEEP_US') or 'the default'}; "
          f"a worker that always polls uses about one CPU-s a second).")
    if own is not None:
        p(f"- fwd is not the bottleneck end to end: its control threads (fwd-control {ctl:.1f}, plus "
          f"fwd-fpm and fwd-host: {own:.1f} CPU-s in all) were busy a fraction of the {wall:.0f} s, "
          f"it applied zebra's stream in {bat:.0f} small generations as it came (zebra's output, "
          f"not fwd, sets the pace), and it had every route within the 50 ms poll of the kernel "
          f"FIB beside it.")
if rp:
    rr = med([r["routes_per_s"] for r in rp if r["routes_per_s"]])
    ra = med([r.get("routes_per_s_from_accept") for r in rp if r.get("routes_per_s_from_accept")])
    if ra:
        p(f"- FPM ingest from zebra's real stream, counted from fwd's accept: {ra / 1e6:.2f} M routes/s (median): "
          f"**{'meets' if ra >= 1e6 else 'misses'}** the goal of >= 1 M routes/s.")
    if rr:
        p(f"- FPM ingest from zebra's real stream: {rr / 1e6:.2f} M routes/s (median) against "
          f"the goal of >= 1 M routes/s, counted from the client's connect: **{'met' if rr >= 1e6 else 'not met'}**.")
p("")
p("""## What bounds each (structure, from the sources and the samples above)

- **zebra's data plane order.** In FRR 8.4 `dplane_fpm_nl` registers as a
  `DPLANE_PRIO_POSTPROCESS` provider (zebra/dplane_fpm_nl.c, `fpm_nl_new`), after the
  kernel provider: a route is encoded for FPM only once zebra has written it to the
  kernel. In the fwd target, fwd's FIB can therefore at best tie the kernel FIB of its
  own namespace, never lead it; it ties it (column "kernel FIB all -> fwd FIB all").
- **No kernel-less variant in 8.4.** zebra 8.4's options are -a, -e, -r, -K, -A
  (`--asic-offload`: still writes the kernel, then waits for offload flags), -s, -n,
  `--v6-rr-semantics`; the context flag `skip_kernel` exists
  (`dplane_ctx_set_skip_kernel`) but only a provider plugin running before the kernel
  could set it, and none ships (FRR PR #5235 `-X` was closed unmerged, issue #4799 is
  open). So "variant 1 with kernel install disabled" cannot be run with Debian's FRR
  8.4 without writing a zebra plugin.
- **The kernel's FIB insert rate bounds every target.** zebra's RIB has all routes
  well before its FIB does; meanwhile zebra's dplane queue sits at its limit
  (`Route update queue depth` ~200 in the zebra samples): the main thread waits for
  the kernel provider. On this VM `ip -batch` of the same 901,899 `route add` lines
  takes ~26 s (20 s of it in the kernel), i.e. ~35k routes/s.
- **The FPM module itself.** Whether loading `dplane_fpm_nl` (into a sink that only
  records) costs zebra time: compare the sink and kernel rows (zebra CPU-s, kernel FIB
  all). In the runs of 2026-11-30 the difference was within the run-to-run noise
  (between +4.8 s and -1.7 s on ~21-28 s).
- **fwd's worker and CPU 1.** A worker that always polls (`datapath.idle_sleep_us:
  0`) keeps CPU 1 busy, about one CPU-second per second, and on 2 vCPUs FRR then
  keeps about one core; the kernel-hog row gives the kernel path that handicap (a
  busy loop on CPU 1). By default an idle worker sleeps between polls (up to 50 us,
  fwd/src/worker/idle.rs): what it still uses here is the BGP session's packets
  through the host path and the sleeps' own cost (`bench-results/idle.md`).
- **fwd's ingest alone is CPU-bound on one core.** Every fwd thread but the worker
  (fwd-control, fwd-fpm, fwd-host, fwd-ctl-*) runs with `Cpus_allowed_list: 0`
  (inherited from the EAL main lcore). So decode+translate (fwd-fpm) and
  apply+publish (fwd-control) cannot run at the same time, even where the FPM thread
  reads and decodes the next batch while one is applied (since a85ab8e; before it, it
  waited): in the replay their CPU-seconds add up to about the wall time, 1 MiB
  (16,384 routes) per generation at a flat ~1.4-1.6 us per route, not growing with
  the table. 1 M routes/s on this machine needs <= 1 us per route for both together.

## Choice of speaker (measured once by hand, 2026-11-30, same VM, 901,899 prefixes)

| speaker | how the routes get in | time until all loaded | RSS | notes |
|---|---|---|---|---|
| FRR bgpd 8.4 `--no_zebra` (already installed) | 901,899 `network` lines in bgpd.conf, `no bgp network import-check` | vty up 10-11 s, table complete 11-15 s | 0.95 GB | chosen: fastest, no extra package, packs full UPDATEs |
| gobgpd 3.10 (Debian `gobgpd`) | `gobgp mrt inject global` of a TABLE_DUMP_V2 file (written by a script, 7 s) | 50.3 s | 1.5 GB | only 900,687 routes arrived: the last 1,212 of the file were dropped by the inject |
| exabgp 4.2.21 (Debian `exabgp`) | 901,899 `route ... next-hop self` in the config | 61 s just to parse (`exabgp --validate`), before any session | 1.2 GB | 100k: 8.1 s |

The speaker's start is outside the measured times either way: it is loaded once, with
its neighbor shut, and every measurement starts at `no neighbor shutdown`.
""")
print("\n".join(out))
PYEOF
    cat > "$PY/nlcount.c" << 'CEOF'
/* fpm.sh's kernel-FIB counter: listens to the namespace's IPv4 route
 * notifications (RTNLGRP_IPV4_ROUTE) and counts proto-bgp (186) routes of
 * table main: +1 per RTM_NEWROUTE that is not a replace, -1 per
 * RTM_DELROUTE. recvmmsg takes up to 64 notifications per system call,
 * and it sleeps 5 ms whenever the socket is empty, so a busy zebra does not
 * wake it per route (a blocking reader or a Python listener pays a wakeup
 * per notification: 3-5 s of CPU for 900k routes).
 * Prints "READY", then "C <unix time> <count>" at every 1% of N and
 * "ALL <unix time> <count>" once the count reaches N; "OVERFLOW <time>"
 * when notifications were lost (ENOBUFS).
 *
 *   nlcount N
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define V 64
#define BUF 16384

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    long n = atol(argv[1]);
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0)
        return perror("socket"), 1;
    int sz = 512 << 20;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof sz) < 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
    struct sockaddr_nl a = {.nl_family = AF_NETLINK, .nl_groups = RTMGRP_IPV4_ROUTE};
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
        return perror("bind"), 1;
    static char bufs[V][BUF];
    struct mmsghdr m[V];
    struct iovec io[V];
    memset(m, 0, sizeof m);
    for (int i = 0; i < V; i++) {
        io[i].iov_base = bufs[i];
        io[i].iov_len = BUF;
        m[i].msg_hdr.msg_iov = &io[i];
        m[i].msg_hdr.msg_iovlen = 1;
    }
    printf("READY\n");
    fflush(stdout);
    long added = 0, step = n / 100 > 0 ? n / 100 : 1, next = step;
    int done = 0;
    for (;;) {
        int r = recvmmsg(fd, m, V, MSG_DONTWAIT, NULL);
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                /* Let notifications pile up: one wakeup per 5 ms, not one
                 * per route (times are at most 5 ms late). */
                struct timespec d = {0, 5 * 1000 * 1000};
                nanosleep(&d, NULL);
                continue;
            }
            if (errno == EINTR)
                continue;
            if (errno == ENOBUFS) {
                printf("OVERFLOW %.6f\n", now());
                fflush(stdout);
                continue;
            }
            perror("recvmmsg");
            return 1;
        }
        for (int i = 0; i < r; i++) {
            int len = m[i].msg_len;
            for (struct nlmsghdr *h = (struct nlmsghdr *)bufs[i]; NLMSG_OK(h, len);
                 h = NLMSG_NEXT(h, len)) {
                if (h->nlmsg_type != RTM_NEWROUTE && h->nlmsg_type != RTM_DELROUTE)
                    continue;
                struct rtmsg *rt = NLMSG_DATA(h);
                if (rt->rtm_family != AF_INET || rt->rtm_protocol != 186 ||
                    rt->rtm_table != RT_TABLE_MAIN)
                    continue;
                if (h->nlmsg_type == RTM_DELROUTE)
                    added--;
                else if (!(h->nlmsg_flags & NLM_F_REPLACE))
                    added++;
            }
        }
        double t = now();
        if (added >= next) {
            printf("C %.6f %ld\n", t, added);
            fflush(stdout);
            while (next <= added)
                next += step;
        }
        if (!done && added >= n) {
            printf("ALL %.6f %ld\n", t, added);
            fflush(stdout);
            done = 1;
        }
    }
}
CEOF
}

# ---------------------------------------------------------------------------
rm -rf "$WORK"
mkdir -p "$WORK" "$PY" "$CACHE"
cleanup
write_helpers
NLCOUNT=""
if command -v cc > /dev/null && cc -O2 -o "$PY/nlcount" "$PY/nlcount.c" 2> "$WORK/nlcount.cc.log"; then
    NLCOUNT="$PY/nlcount"
else
    log "no C compiler (cc): the kernel FIB is counted in Python (~4 s of CPU per 900k routes)"
fi
exec 3> "$WORK/run.log"

if [ "$QUICK" = 1 ]; then N=100000; else N=$(zcat "$TABLE" | grep -c .); fi
zcat "$TABLE" | awk -v n="$N" 'NF && c < n { print $1; c++ }' > "$WORK/prefixes.txt"
N=$(wc -l < "$WORK/prefixes.txt")
log "$N prefixes from $TABLE; binaries from $BIN; $REPS reps"
{
    echo "date=$(date -u +%Y-%m-%dT%H:%MZ)"
    echo "commit=$(cd "$ROOT" && git rev-parse --short HEAD 2> /dev/null || echo '?')$(cd "$ROOT" && [ -n "$(git status --porcelain --untracked-files=no 2> /dev/null)" ] && echo +dirty)"
    echo "bin=$BIN"
    if [ -f "$BIN/SOURCE_STATE.txt" ]; then
        echo "binsrc=$(tr '\n' ' ' < "$BIN/SOURCE_STATE.txt" | cut -c1-300)"
    else
        echo "binsrc=fwd $(stat -c %y "$BIN/fwd" | cut -c1-19), sha256 $(sha256sum "$BIN/fwd" | cut -c1-12)"
    fi
    echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs"
    echo "mem=$(free -g | awk '/Mem:/ {print $2}') GiB"
    echo "kernel=$(uname -r)"
    echo "frr=$("$FRR/zebra" -v 2> /dev/null | head -1)"
    echo "n=$N"
    echo "quick=$QUICK"
    echo "reps=$REPS"
    echo "cmd=$CMDLINE"
} > "$WORK/meta.txt"

# --- the speaker: bgpd --no_zebra with N `network` lines, loaded once -------
SPK="$WORK/spk"
SPK_PID=""
start_speaker() {
    [ -n "$SPK_PID" ] && return 0
    local v t_spk t_vty t_loaded
    new_ns "$SPK_NS"
    SPK="$WORK/spk"
    mkdir -p "$SPK"
    {
        printf 'hostname speaker\nrouter bgp %s\n bgp router-id %s\n' "$SPK_AS" "$SPK_IP"
        printf ' no bgp ebgp-requires-policy\n no bgp default ipv4-unicast\n no bgp network import-check\n'
        printf ' neighbor %s remote-as %s\n neighbor %s timers connect 1\n neighbor %s shutdown\n' \
            "$APP_IP" "$APP_AS" "$APP_IP" "$APP_IP"
        printf ' address-family ipv4 unicast\n  neighbor %s activate\n' "$APP_IP"
        awk '{ print "  network " $1 }' "$WORK/prefixes.txt"
        printf ' exit-address-family\n'
    } > "$SPK/bgpd.conf"
    t_spk=$(now)
    start_frr "$SPK_NS" "$SPK" bgpd --no_zebra
    SPK_PID=$FRR_PID
    t_vty=$(now)
    while :; do
        v=$(vty "$SPK" bgpd "show bgp ipv4 unicast summary json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tableVersion"])' 2> /dev/null || echo 0)
        [ "$v" -ge "$N" ] && break
        sleep 0.2
    done
    t_loaded=$(now)
    python3 -c "import json; json.dump({'vty_s': round($t_vty - $t_spk, 2), 'loaded_s': round($t_loaded - $t_spk, 2), 'rss_kb': int(open('/proc/$SPK_PID/status').read().split('VmRSS:')[1].split()[0])}, open('$WORK/speaker.json', 'w'))"
    log "speaker: $N prefixes loaded in $(cat "$WORK/speaker.json")"
}

spk_neighbor() {  # shutdown | "no shutdown"
    vty "$SPK" bgpd "configure terminal" "router bgp $SPK_AS" "$1"
}
TRIGGER=(vtysh --config_dir "$SPK" --vty_socket "$SPK" -d bgpd -c "configure terminal"
    -c "router bgp $SPK_AS" -c "no neighbor $APP_IP shutdown")

fwd_config() {  # dir
    cat > "$1/fwd.yaml" << YAML
eal: {main_lcore: 0, memory_mb: 256, file_prefix: fpmbench-$$-$(basename "$1")}
ports:
  - name: wan
    device: net_tap_fpmb0,iface=fpmbw,mac=02:00:00:77:01:01
    addresses: [$APP_IP/24]
workers:
  - {lcore: 1, cpu: 1, rx: [{port: wan}]}
control: {cpu: 0, socket: $1/fwd.sock}
host: {punt_rate: 20000, punt_burst: 2000}
fpm: {listen: "127.0.0.1:$FPM_PORT", stale_ms: 60000}
${FWD_IDLE_SLEEP_US:+datapath: {idle_sleep_us: $FWD_IDLE_SLEEP_US\}}
YAML
}

# start_fwd NS DIR: sets FWD_PID; waits until it forwards.
start_fwd() {
    local ns="$1" d="$2" i
    fwd_config "$d"
    RUNTIME_DIRECTORY="$d" ip netns exec "$ns" "$FWD" "$d/fwd.yaml" > "$d/fwd.log" 2>&1 < /dev/null &
    FWD_PID=$!
    disown "$FWD_PID"
    STARTED+=("$FWD_PID")
    for i in $(seq 1 300); do
        grep -q "forwarding with" "$d/fwd.log" && return 0
        kill -0 "$FWD_PID" 2> /dev/null || break
        sleep 0.1
    done
    cat "$d/fwd.log" >&2; log "fwd did not start"; return 1
}

app_frr_configs() {  # dir fpm(0|1)
    local d="$1"
    printf 'hostname app\n' > "$d/zebra.conf"
    if [ "$2" = 1 ]; then
        printf 'fpm address 127.0.0.1 port %s\nno fpm use-next-hop-groups\n' "$FPM_PORT" >> "$d/zebra.conf"
    fi
    cat > "$d/bgpd.conf" << CONF
hostname app
router bgp $APP_AS
 bgp router-id $APP_IP
 no bgp ebgp-requires-policy
 no bgp default ipv4-unicast
 neighbor $SPK_IP remote-as $SPK_AS
 neighbor $SPK_IP timers connect 1
 address-family ipv4 unicast
  neighbor $SPK_IP activate
 exit-address-family
CONF
}

veth_link() {
    ip -n "$APP_NS" link add fpmbk0 type veth peer name fpmbk1 netns "$SPK_NS"
    ip -n "$APP_NS" addr add "$APP_IP/24" dev fpmbk0
    ip -n "$SPK_NS" addr add "$SPK_IP/24" dev fpmbk1
    ip -n "$APP_NS" link set fpmbk0 up
    ip -n "$SPK_NS" link set fpmbk1 up
}

# One measurement: target fwd | kernel | kernel-hog | sink (the capture).
measure() {
    local target="$1" rep="$2"
    local d="$WORK/$target-$rep" fpm=0 zebra_args=() mon_args=() cpu_args=() hog="" cap=""
    mkdir -p "$d/frr"
    new_ns "$APP_NS"
    case "$target" in
        fwd)
            fpm=1
            start_fwd "$APP_NS" "$d"
            ip -n "$APP_NS" link set fpmbw netns "$SPK_NS"
            ip -n "$SPK_NS" addr add "$SPK_IP/24" dev fpmbw
            ip -n "$SPK_NS" link set fpmbw up
            mon_args+=(--fwd-sock "$d/fwd.sock")
            cpu_args+=(--cpu "fwd=$FWD_PID")
            ;;
        sink)
            fpm=1
            veth_link
            cap="$CACHE/fpm-capture-$N.bin"
            rm -f "$cap" "$d/cap.ready"
            ip netns exec "$APP_NS" python3 "$ROOT/deploy/frr/fpm-capture.py" -o "$cap" \
                --port "$FPM_PORT" --idle 3600 --max 3600 --ready "$d/cap.ready" \
                > "$d/capture.log" 2>&1 < /dev/null &
            CAP_PID=$!
            disown "$CAP_PID"
            STARTED+=("$CAP_PID")
            while [ ! -e "$d/cap.ready" ]; do sleep 0.1; done
            mon_args+=(--fpm-counters)
            cpu_args+=(--cpu "fpm-capture=$CAP_PID")
            ;;
        kernel|kernel-hog)
            veth_link
            if [ "$target" = kernel-hog ]; then
                ip netns exec "$APP_NS" taskset -c 1 bash -c 'while :; do :; done' &
                hog=$!
                disown "$hog"
                STARTED+=("$hog")
                cpu_args+=(--cpu "hog=$hog")
            fi
            ;;
    esac
    [ "$fpm" = 1 ] && zebra_args=(-M dplane_fpm_nl)
    app_frr_configs "$d/frr" "$fpm"
    start_frr "$APP_NS" "$d/frr" zebra "${zebra_args[@]}"
    local zpid=$FRR_PID
    start_frr "$APP_NS" "$d/frr" bgpd
    local bpid=$FRR_PID
    # zebra's FPM client connects ~3 s after its start: wait, so the
    # measurement starts with the connection up.
    local i
    if [ "$target" = fwd ]; then
        for i in $(seq 1 300); do
            "$CTL" -s "$d/fwd.sock" --json fpm show | grep -q '"connects":1' && break
            sleep 0.1
        done
    elif [ "$target" = sink ]; then
        for i in $(seq 1 300); do
            grep -q "connection 1 from" "$d/capture.log" && break
            sleep 0.1
        done
    fi
    sleep 1
    local busy
    if [ "$target" = fwd ] || [ "$target" = kernel-hog ]; then busy=$(settle 1.25); else busy=$(settle); fi
    log "$target rep $rep: machine busy $busy cores before; announcing $N prefixes"
    local base
    base=$(ip netns exec "$APP_NS" awk '/^Main:/ {m=1} m && /Prefixes:/ {print $2; exit}' /proc/net/fib_triestat)
    ip netns exec "$APP_NS" python3 "$PY/mon.py" --n "$N" --peer "$SPK_IP" --frr-dir "$d/frr" \
        --kernel-base "$base" ${NLCOUNT:+--nlcount "$NLCOUNT"} --cpu "zebra=$zpid" --cpu "bgpd=$bpid" --cpu "speaker=$SPK_PID" \
        "${cpu_args[@]}" "${mon_args[@]}" --deadline "$DEADLINE" --out "$d/mon.json" \
        "${TRIGGER[@]}" > "$d/mon.out" 2> "$d/mon.err" || log "$target rep $rep: not every target reached (see $d/mon.json)"
    log "$target rep $rep: $(cat "$d/mon.out")"
    echo "$busy" > "$d/busy_before"
    vty "$d/frr" zebra "show zebra dplane" > "$d/zebra-dplane.txt" 2>&1 || true
    vty "$d/frr" zebra "show ip route summary" > "$d/zebra-summary.txt" 2>&1 || true
    if [ "$target" = fwd ]; then
        "$CTL" -s "$d/fwd.sock" --json fpm show > "$d/fpm-show.json" || true
        "$CTL" -s "$d/fwd.sock" --json stats > "$d/stats.json" || true
        "$CTL" -s "$d/fwd.sock" --json status > "$d/status.json" || true
        grep VmRSS "/proc/$FWD_PID/status" | awk '{print $2}' > "$d/fwd-rss-kb" || true
        if [ "$rep" = 1 ]; then  # correctness, once: exactly the announced set
            "$CTL" -s "$d/fwd.sock" --json route show proto bgp > "$d/fwd-bgp.json" || true
            python3 -c "import json, sys
got = {r['route']['prefix'] for r in json.load(open(sys.argv[1]))}
want = {l.strip() for l in open(sys.argv[2]) if l.strip()}
print(len(got ^ want))" "$d/fwd-bgp.json" "$WORK/prefixes.txt" > "$d/fwd-bgp.diff" || true
            rm -f "$d/fwd-bgp.json"
        fi
        vty "$d/frr" zebra "show fpm counters json" > "$d/fpm-counters.json" 2>&1 || true
    fi
    if [ "$target" = sink ]; then
        vty "$d/frr" zebra "show fpm counters json" > "$d/fpm-counters.json" 2>&1 || true
    fi
    # Teardown: zebra and bgpd killed outright (a clean stop would first
    # withdraw N routes from the kernel and over FPM), the speaker's session
    # shut, fwd stopped, the namespace (and the kernel's N routes) deleted.
    kill_pid "$zpid" KILL
    kill_pid "$bpid" KILL
    spk_neighbor "neighbor $APP_IP shutdown" > /dev/null
    [ -n "$hog" ] && kill_pid "$hog" KILL
    if [ "$target" = fwd ]; then kill_pid "$FWD_PID" TERM; fi
    if [ "$target" = sink ]; then
        kill_pid "$CAP_PID" TERM
        FPM_CAPTURE="$ROOT/deploy/frr/fpm-capture.py" python3 "$PY/capstat.py" "$cap" "$WORK/capture.json" > /dev/null
        cp "$WORK/capture.json" "$CACHE/fpm-capture-$N.json"
        log "capture: $(cat "$WORK/capture.json" | head -c 400)"
    fi
    del_ns "$APP_NS"
    settle > /dev/null
}

replay() {
    local rep="$1" d="$WORK/replay-$rep" cap="$CACHE/fpm-capture-$N.bin" want
    mkdir -p "$d"
    if [ "$SHUFFLE" = 1 ]; then
        [ -s "$WORK/shuffled.bin" ] || python3 "$PY/shuffle.py" "$cap" "$WORK/shuffled.bin"
        cap="$WORK/shuffled.bin"
    fi
    want=$(python3 -c "import json; print(json.load(open('$WORK/capture.json'))['bgp_ipv4_prefixes'])")
    new_ns "$REP_NS"
    start_fwd "$REP_NS" "$d"
    sleep 1
    local busy
    busy=$(settle 1.25)
    echo "$busy" > "$d/busy_before"
    ip netns exec "$REP_NS" python3 "$PY/replay.py" "$cap" 127.0.0.1 "$FPM_PORT" "$d/fwd.sock" \
        "$want" "$d/replay.json" > "$d/replay.out" 2>&1 || log "replay $rep: timed out"
    log "replay $rep: $(cat "$d/replay.out")"
    "$CTL" -s "$d/fwd.sock" --json fpm show > "$d/fpm-show.json" || true
    python3 - "$FWD_PID" > "$d/fwd-threads.json" << 'PY'
import os, sys, json
pid = sys.argv[1]; tck = os.sysconf("SC_CLK_TCK"); r = {}
for t in os.listdir(f"/proc/{pid}/task"):
    raw = open(f"/proc/{pid}/task/{t}/stat").read()
    s = raw.rsplit(")", 1)[1].split()
    r[raw[raw.index("(") + 1:raw.rindex(")")]] = round((int(s[11]) + int(s[12])) / tck, 2)
print(json.dumps(r))
PY
    kill_pid "$FWD_PID" TERM
    del_ns "$REP_NS"
}

if [ "$QUICK" = 1 ]; then DEADLINE=120; else DEADLINE=400; fi
if [ "$INGEST_ONLY" = 1 ]; then
    # The cached capture of this N, or a new one (one sink measurement).
    if [ -s "$CACHE/fpm-capture-$N.bin" ] && [ -s "$CACHE/fpm-capture-$N.json" ]; then
        cp "$CACHE/fpm-capture-$N.json" "$WORK/capture.json"
        log "using the cached capture $CACHE/fpm-capture-$N.bin"
    else
        start_speaker
        measure sink 1
    fi
else
    # sink: zebra feeding a trivial FPM server (fpm-capture.py), timed like
    # the others; its recording (the last rep's) is what the replay sends.
    start_speaker
    TARGETS=(fwd kernel)
    [ "$HOG" = 1 ] && TARGETS+=(kernel-hog)
    TARGETS+=(sink)
    for rep in $(seq 1 "$REPS"); do
        for t in "${TARGETS[@]}"; do
            measure "$t" "$rep"
        done
    done
fi
echo "$SHUFFLE" > "$WORK/shuffled"
for rep in $(seq 1 "$REPS"); do
    replay "$rep"
done
bench_args=(--data "$DATA" --rounds "$REPS")
[ "$SHUFFLE" = 1 ] && bench_args+=(--shuffle)
log "bench_fpm ${bench_args[*]}"
settle > /dev/null
"$BIN/bench_fpm" "${bench_args[@]}" > "$WORK/bench_fpm.md" 2>&1 || log "bench_fpm failed"
[ -n "$SPK_PID" ] && kill_pid "$SPK_PID" TERM
del_ns "$SPK_NS"
python3 "$PY/report.py" "$WORK" | append_results "$OUT" > /dev/null
log "results: $OUT"
