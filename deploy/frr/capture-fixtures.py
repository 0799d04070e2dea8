#!/usr/bin/env python3
"""Records zebra's real FPM stream for the decoder's test fixtures.

Runs FRR 8.4 (zebra -M dplane_fpm_nl, bgpd, staticd) in throw-away network
namespaces (frrkit-<pid>-*), everything private to a temp dir, points
zebra's FPM client at fpm-capture.py, drives each scenario, and writes:

    OUT/bgp.bin        1000 IPv4 + 200 IPv6 prefixes from an eBGP peer, then 100 withdrawn
    OUT/ecmp.bin       the same prefixes from two eBGP peers, maximum-paths 2, then one peer shut
    OUT/static.bin     static routes: blackhole, reject, gateways, ECMP, tables 100 and 1000
    OUT/static-replay.bin  what zebra sends when restarted with the static config (the replay)
    OUT/restart-findings.json  zebra / bgpd restart timings with 10,000 BGP routes (no capture kept)
    OUT/facts.json     the facts of each file, from an independent parse of the stream,
                       cross-checked against zebra's own view (vtysh ... json)

Facts come from this script's own netlink parser (below, stdlib only), not
from the appliance's decoder, and every capture is checked against zebra's
RIB at the moment it settled: the set of routes the stream leaves installed
must equal `show ip[v6] route [table N] json`'s installed routes, with the
same number of next hops. A mismatch aborts.

    deploy/frr/capture-fixtures.py --out fwd/tests/data/fpm       # as root
    deploy/frr/capture-fixtures.py --facts fwd/tests/data/fpm/bgp.bin   # parse one file

Needs root, iproute2, FRR 8.4 (Debian package `frr`). Leaves nothing
behind: namespaces deleted, daemons stopped, temp dir removed (--keep keeps it).
"""
import argparse
import ipaddress
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

FRR = "/usr/lib/frr"
HERE = os.path.dirname(os.path.abspath(__file__))

# --------------------------------------------------------------------------
# An independent FPM / rtnetlink parser (for the facts).
# --------------------------------------------------------------------------

RTM_NEWROUTE, RTM_DELROUTE = 24, 25
MSG_NAMES = {24: "RTM_NEWROUTE", 25: "RTM_DELROUTE", 104: "RTM_NEWNEXTHOP", 105: "RTM_DELNEXTHOP"}
RTN_NAMES = {1: "unicast", 6: "blackhole", 7: "unreachable", 8: "prohibit"}
RTA_DST, RTA_OIF, RTA_GATEWAY, RTA_PRIORITY, RTA_PREFSRC = 1, 4, 5, 6, 7
RTA_MULTIPATH, RTA_TABLE, RTA_NH_ID = 9, 15, 30


def attrs(buf, off, end):
    """(type, payload) of each rtattr in buf[off:end]."""
    out = []
    while off + 4 <= end:
        alen, atype = struct.unpack_from("=HH", buf, off)
        if alen < 4 or off + alen > end:
            raise ValueError(f"bad rtattr at {off}")
        out.append((atype & 0x3FFF, buf[off + 4:off + alen]))
        off += (alen + 3) & ~3
    return out


def addr(family, raw):
    return str(ipaddress.ip_address(bytes(raw))) if family in (2, 10) else raw.hex()


def parse_route(buf, off, nlen):
    """One RTM_*ROUTE netlink message at buf[off:off+nlen] as a dict."""
    ntype, nflags = struct.unpack_from("=HH", buf, off + 4)
    fam, dlen, slen, tos, table, proto, scope, rtype, rflags = struct.unpack_from(
        "=BBBBBBBBI", buf, off + 16)
    r = {"type": MSG_NAMES.get(ntype, ntype), "flags": nflags, "family": fam,
         "dst_len": dlen, "table": table, "protocol": proto, "scope": scope,
         "rtm_type": RTN_NAMES.get(rtype, rtype), "nexthops": []}
    for at, pl in attrs(buf, off + 28, off + nlen):
        if at == RTA_DST:
            r["dst"] = addr(fam, pl)
        elif at == RTA_TABLE:
            r["rta_table"] = struct.unpack("=I", pl)[0]
            r["table"] = r["rta_table"]
        elif at == RTA_PRIORITY:
            r["priority"] = struct.unpack("=I", pl)[0]
        elif at == RTA_PREFSRC:
            r["prefsrc"] = addr(fam, pl)
        elif at == RTA_GATEWAY:
            r.setdefault("_single", {})["gateway"] = addr(fam, pl)
        elif at == RTA_OIF:
            r.setdefault("_single", {})["oif"] = struct.unpack("=i", pl)[0]
        elif at == RTA_NH_ID:
            r["nh_id"] = struct.unpack("=I", pl)[0]
        elif at == RTA_MULTIPATH:
            r["multipath"] = True
            p = 0
            while p + 8 <= len(pl):
                rlen, rfl, hops, ifi = struct.unpack_from("=HBBi", pl, p)
                nh = {"oif": ifi, "weight": hops + 1}
                for nat, npl in attrs(pl, p + 8, p + rlen):
                    if nat == RTA_GATEWAY:
                        nh["gateway"] = addr(fam, npl)
                r["nexthops"].append(nh)
                p += (rlen + 3) & ~3
    if "_single" in r:
        r["nexthops"].append(r.pop("_single"))
    r.setdefault("dst", "0.0.0.0" if fam == 2 else "::")
    r["prefix"] = f"{r['dst']}/{dlen}"
    return r


def parse_stream(data):
    """[(frame_index, message_dict)] of a raw FPM byte stream; strict."""
    msgs = []
    off = frame = 0
    while off < len(data):
        if off + 4 > len(data):
            raise ValueError(f"truncated FPM header at {off}")
        ver, typ, flen = struct.unpack_from("!BBH", data, off)
        if ver != 1 or typ != 1 or flen < 4 or off + flen > len(data):
            raise ValueError(f"bad FPM frame at {off}: {ver} {typ} {flen}")
        p, end = off + 4, off + flen
        while p < end:
            nlen, ntype = struct.unpack_from("=IH", data, p)
            if nlen < 16 or p + nlen > end:
                raise ValueError(f"bad netlink message at {p}")
            if ntype in (RTM_NEWROUTE, RTM_DELROUTE):
                m = parse_route(data, p, nlen)
            else:
                m = {"type": MSG_NAMES.get(ntype, ntype)}
            m["offset"] = p
            msgs.append((frame, m))
            p += (nlen + 3) & ~3
        frame += 1
        off = end
    return msgs, frame


def apply(msgs):
    """The routes a stream leaves installed: {(table, prefix): message}."""
    state = {}
    for _, m in msgs:
        if "prefix" not in m:
            continue
        k = (m["table"], m["prefix"])
        if m["type"] == "RTM_NEWROUTE":
            state[k] = m
        elif m["type"] == "RTM_DELROUTE":
            state.pop(k, None)
    return state


def fam_name(f):
    return {2: "ipv4", 10: "ipv6"}.get(f, str(f))


def count(items):
    out = {}
    for i in items:
        out[str(i)] = out.get(str(i), 0) + 1
    return dict(sorted(out.items()))


def facts_of(data):
    """The facts of a raw stream (what tests check a decoder against)."""
    msgs, frames = parse_stream(data)
    routes = [m for _, m in msgs if "prefix" in m]
    per_frame = count(f for f, _ in msgs)
    state = apply(msgs)
    fin = list(state.values())
    f = {
        "bytes": len(data),
        "fpm_frames": frames,
        "netlink_messages": len(msgs),
        "frames_with_two_messages": sum(1 for n in per_frame.values() if n == 2),
        "messages": count(m["type"] for _, m in msgs),
        "by_type_family": count(f"{m['type']} {fam_name(m['family'])}" for m in routes),
        "protocols": count(f"{m['type']} {m['protocol']}" for m in routes),
        "tables": count(f"{m['type']} {m['table']}" for m in routes),
        "rta_table_used": sorted({m["table"] for m in routes if "rta_table" in m}),
        "rtm_types": count(f"{m['type']} {m['rtm_type']}" for m in routes),
        "multipath_newroutes": sum(1 for m in routes if m["type"] == "RTM_NEWROUTE" and m.get("multipath")),
        "nlm_flags": count(f"{m['type']} {fam_name(m['family'])} 0x{m['flags']:x}" for m in routes),
        "nh_id_present": sum(1 for m in routes if "nh_id" in m),
        "final": {
            "routes": len(fin),
            "by_family": count(fam_name(m["family"]) for m in fin),
            "by_table": count(m["table"] for m in fin),
            "by_protocol": count(m["protocol"] for m in fin),
            "by_rtm_type": count(m["rtm_type"] for m in fin),
            "multipath": sum(1 for m in fin if len(m["nexthops"]) > 1),
            "nexthop_counts": count(len(m["nexthops"]) for m in fin),
        },
    }
    return f, state


def route_brief(m):
    b = {"table": m["table"], "prefix": m["prefix"], "protocol": m["protocol"],
         "rtm_type": m["rtm_type"]}
    if m["nexthops"]:
        b["nexthops"] = [{k: v for k, v in nh.items() if k != "weight"} for nh in m["nexthops"]]
    return b


# --------------------------------------------------------------------------
# Namespaces and FRR daemons.
# --------------------------------------------------------------------------

def sh(*cmd, check=True):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{cmd}: {r.stdout}{r.stderr}")
    return r.stdout


def wait_for(what, cond, timeout=60.0, every=0.2):
    end = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > end:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(every)


class Lab:
    """Namespaces and daemons of one run; stop() undoes everything."""

    def __init__(self, root):
        self.root = root
        self.prefix = f"frrkit-{os.getpid()}"
        self.namespaces = []
        self.procs = []  # (name, Popen)
        self.links = 0

    def netns(self, name):
        ns = f"{self.prefix}-{name}"
        sh("ip", "netns", "add", ns)
        self.namespaces.append(ns)
        # No DAD: addresses usable at once (BGP over IPv6 needs its link-local).
        for k in ("all", "default"):
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{k}.accept_dad=0")
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        return ns

    def link(self, ns1, if1, addrs1, ns2, if2, addrs2):
        self.links += 1
        tmp1, tmp2 = (f"fk{os.getpid() % 100000}a{self.links}", f"fk{os.getpid() % 100000}b{self.links}")
        sh("ip", "link", "add", tmp1, "netns", ns1, "type", "veth", "peer", "name", tmp2, "netns", ns2)
        for ns, tmp, ifn, addrs in ((ns1, tmp1, if1, addrs1), (ns2, tmp2, if2, addrs2)):
            sh("ip", "-n", ns, "link", "set", tmp, "name", ifn)
            for a in addrs:
                sh("ip", "-n", ns, "addr", "add", a, "dev", ifn, *(["nodad"] if ":" in a else []))
            sh("ip", "-n", ns, "link", "set", ifn, "up")

    def spawn(self, name, ns, argv, log):
        p = subprocess.Popen(["ip", "netns", "exec", ns, *argv], stdin=subprocess.DEVNULL,
                             stdout=open(log, "ab"), stderr=subprocess.STDOUT)
        self.procs.append((name, p))
        return p

    def stop_proc(self, p, sig=signal.SIGTERM, timeout=15):
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        # FRR's per-process crash-log dir (/var/tmp/frr/<daemon>.<pid>) stays
        # behind when a daemon is killed; remove ours only.
        for d in ("zebra", "bgpd", "staticd"):
            shutil.rmtree(f"/var/tmp/frr/{d}.{p.pid}", ignore_errors=True)

    def stop(self):
        for _, p in reversed(self.procs):
            self.stop_proc(p)
        for ns in self.namespaces:
            sh("ip", "netns", "del", ns, check=False)


class Frr:
    """FRR daemons of one namespace, private to DIR (no /etc/frr, no /var/run/frr)."""

    def __init__(self, lab, ns, name):
        self.lab, self.ns, self.name = lab, ns, name
        self.dir = os.path.join(lab.root, name)
        os.makedirs(self.dir, exist_ok=True)
        open(os.path.join(self.dir, "vtysh.conf"), "w").close()
        self.procs = {}

    def start(self, daemon, conf, *extra):
        cfg = os.path.join(self.dir, f"{daemon}.conf")
        with open(cfg, "w") as f:
            f.write(conf)
        vty = os.path.join(self.dir, f"{daemon}.vty")
        if os.path.exists(vty):
            os.unlink(vty)
        argv = [f"{FRR}/{daemon}", "-u", "root", "-g", "frrvty", "-P", "0",
                "-f", cfg, "-i", os.path.join(self.dir, f"{daemon}.pid"),
                "--vty_socket", self.dir, "--log", f"file:{self.dir}/{daemon}.log"]
        if "--no_zebra" not in extra:
            argv += ["-z", os.path.join(self.dir, "zserv.api")]
        p = self.lab.spawn(f"{self.name}/{daemon}", self.ns, argv + list(extra),
                           os.path.join(self.dir, f"{daemon}.out"))
        self.procs[daemon] = p
        wait_for(f"{self.name} {daemon} vty", lambda: self._alive(daemon) and os.path.exists(vty), 30)
        wait_for(f"{self.name} {daemon} answers", lambda: self.vtysh("show version", daemon=daemon, check=False), 30)
        return p

    def _alive(self, daemon):
        p = self.procs[daemon]
        if p.poll() is not None:
            out = open(os.path.join(self.dir, f"{daemon}.out")).read()
            raise RuntimeError(f"{self.name} {daemon} exited {p.returncode}: {out}")
        return True

    def stop(self, daemon):
        self.lab.stop_proc(self.procs.pop(daemon))

    def vtysh(self, *cmds, daemon=None, check=True):
        argv = ["vtysh", "--config_dir", self.dir, "--vty_socket", self.dir]
        if daemon:
            argv += ["-d", daemon]
        for c in cmds:
            argv += ["-c", c]
        r = subprocess.run(argv, capture_output=True, text=True)
        if r.returncode != 0:
            if check:
                raise RuntimeError(f"vtysh {cmds}: {r.stdout}{r.stderr}")
            return None
        return r.stdout

    def json(self, cmd, daemon=None):
        return json.loads(self.vtysh(cmd, daemon=daemon))

    def config(self, *lines, daemon=None):
        return self.vtysh("configure terminal", *lines, daemon=daemon)


class Capture:
    """fpm-capture.py listening in NS (zebra's FPM server)."""

    def __init__(self, lab, ns, path, port):
        self.path, self.log = path, path + ".log"
        ready = path + ".ready"
        self.p = lab.spawn("capture", ns, [sys.executable, os.path.join(HERE, "fpm-capture.py"),
                                           "-o", path, "--port", str(port), "--idle", "3600",
                                           "--split", "--summary", "--ready", ready], self.log)
        wait_for("capture listening", lambda: os.path.exists(ready), 10)
        self.lab = lab

    def connected(self, n):
        return f"fpm-capture: connection {n} from" in open(self.log).read()

    def size(self, n=1):
        p = self.path if n == 1 else f"{self.path}.{n}"
        return os.path.getsize(p) if os.path.exists(p) else 0

    def stop(self):
        self.lab.stop_proc(self.p, signal.SIGTERM)


# --------------------------------------------------------------------------
# Zebra's view, and the settle condition.
# --------------------------------------------------------------------------

def fpm_counters(dut):
    return dut.json("show fpm counters json", daemon="zebra")


def settled(dut, cap, conn=1, base=0):
    """True once zebra has nothing queued for FPM and the listener holds
    every byte zebra says it sent on this connection (bytes-sent counts
    from zebra's start; `base` is what earlier connections took)."""
    c = fpm_counters(dut)
    return (c["obuf-bytes"] == 0 and c["data-plane-contexts-queue"] == 0
            and c["bytes-sent"] - base == cap.size(conn) and cap.size(conn) > 0)


def wait_settled(dut, cap, what, conn=1, base=0, timeout=90):
    """Settled twice in a row, one second apart (BGP may still be sending)."""
    def both():
        if not settled(dut, cap, conn, base):
            return False
        s = cap.size(conn)
        time.sleep(1.0)
        return settled(dut, cap, conn, base) and cap.size(conn) == s
    wait_for(f"FPM stream settled ({what})", both, timeout, 0.3)
    return cap.size(conn)


def zebra_routes(dut, tables=(254,)):
    """{(table, prefix): (protocol, FIB next hops or "blackhole"/"unreachable")}
    of zebra's installed routes, from vtysh's JSON."""
    out = {}
    for fam in ("ip", "ipv6"):
        for t in tables:
            cmd = f"show {fam} route json" if t == 254 else f"show {fam} route table {t} json"
            for prefix, entries in dut.json(cmd, daemon="zebra").items():
                for e in entries:
                    if not (e.get("installed") and e.get("selected")):
                        continue
                    nhs = [n for n in e.get("nexthops", []) if n.get("fib")]
                    bh = [n for n in nhs if n.get("unreachable") or n.get("blackhole")]
                    if bh:
                        kind = "unreachable" if bh[0].get("reject") else "blackhole"
                    else:
                        kind = len(nhs)
                    out[(t, prefix)] = (e["protocol"], kind)
    return out


def zebra_fib(dut, tables=(254,), protocol=None):
    return {k: v for k, v in zebra_routes(dut, tables).items() if protocol in (None, v[0])}


PROTO = {"connected": 2, "kernel": 2, "bgp": 186, "static": 196}


def check_against_zebra(state, dut, tables=(254,)):
    want = {k: (PROTO.get(p, p), n) for k, (p, n) in zebra_routes(dut, tables).items()}
    got = {k: (m["protocol"], len(m["nexthops"]) if m["rtm_type"] == "unicast" else m["rtm_type"])
           for k, m in state.items()}
    if got != want:
        only_s = sorted(set(got) - set(want))[:10]
        only_z = sorted(set(want) - set(got))[:10]
        diff = sorted(k for k in set(got) & set(want) if got[k] != want[k])[:10]
        raise AssertionError(f"stream vs zebra: only in stream {only_s}, only in zebra {only_z}, "
                             f"next hops differ {[(k, got[k], want[k]) for k in diff]}")
    return len(want)


def route_count(dut, fam, proto):
    s = dut.json(f"show {fam} route summary json", daemon="zebra")
    return sum(r["fib"] for r in s["routes"] if r["type"] == proto)


def multipath_count(dut, fam):
    n = 0
    for _, entries in dut.json(f"show {fam} route json", daemon="zebra").items():
        for e in entries:
            if e.get("installed") and sum(1 for x in e.get("nexthops", []) if x.get("fib")) > 1:
                n += 1
    return n


# --------------------------------------------------------------------------
# Configurations.
# --------------------------------------------------------------------------

def zebra_conf(port):
    return f"""hostname dut
fpm address 127.0.0.1 port {port}
no fpm use-next-hop-groups
"""


def v4_prefixes(n):
    return [f"10.{128 + i // 256}.{i % 256}.0/24" for i in range(n)]


def v6_prefixes(n):
    return [f"fd00:100:{i:x}::/48" for i in range(n)]


def peer_conf(asn, rid, nbr4, nbr6, dut_as, n4, n6):
    """A bgpd --no_zebra peer announcing n4 + n6 prefixes with `network`
    lines; route-map WITHDRAW (deny what prefix-list W matches) is applied
    outbound to withdraw some."""
    lines = [f"hostname peer{rid}", "ip prefix-list W seq 5 deny any", "route-map ALL permit 10",
             "route-map WITHDRAW deny 10", " match ip address prefix-list W",
             "route-map WITHDRAW permit 20",
             f"router bgp {asn}", f" bgp router-id {rid}", " no bgp ebgp-requires-policy",
             " no bgp default ipv4-unicast", " no bgp network import-check",
             f" neighbor {nbr4} remote-as {dut_as}", f" neighbor {nbr6} remote-as {dut_as}",
             " address-family ipv4 unicast", f"  neighbor {nbr4} activate"]
    lines += [f"  network {p}" for p in v4_prefixes(n4)]
    lines += [" exit-address-family", " address-family ipv6 unicast", f"  neighbor {nbr6} activate"]
    lines += [f"  network {p}" for p in v6_prefixes(n6)]
    lines += [" exit-address-family", ""]
    return "\n".join(lines)


def dut_bgp_conf(neighbors, maxpaths=1):
    """neighbors: [(ipv4, ipv6, asn)]."""
    lines = ["hostname dut", "router bgp 65001", " bgp router-id 10.77.0.1",
             " no bgp ebgp-requires-policy", " no bgp default ipv4-unicast"]
    for v4, v6, asn in neighbors:
        lines += [f" neighbor {v4} remote-as {asn}", f" neighbor {v6} remote-as {asn}"]
    lines += [" address-family ipv4 unicast"] + [f"  neighbor {v4} activate" for v4, _, _ in neighbors]
    if maxpaths > 1:
        lines.append(f"  maximum-paths {maxpaths}")
    lines += [" exit-address-family", " address-family ipv6 unicast"]
    lines += [f"  neighbor {v6} activate" for _, v6, _ in neighbors]
    if maxpaths > 1:
        lines.append(f"  maximum-paths {maxpaths}")
    lines += [" exit-address-family", ""]
    return "\n".join(lines)


def topology(lab, peers):
    """DUT with ethN to peer N (10.77.N.1/24, fd77:N::1/64; peer .2, ::2)."""
    dut_ns = lab.netns("dut")
    peer_ns = []
    for n in range(1, peers + 1):
        ns = lab.netns(f"p{n}")
        lab.link(dut_ns, f"eth{n}", [f"10.77.{n}.1/24", f"fd77:{n}::1/64"],
                 ns, "eth0", [f"10.77.{n}.2/24", f"fd77:{n}::2/64"])
        peer_ns.append(ns)
    return dut_ns, peer_ns


def start_dut(lab, dut_ns, out, name, port):
    cap = Capture(lab, dut_ns, os.path.join(out, name), port)
    dut = Frr(lab, dut_ns, "dut")
    dut.start("zebra", zebra_conf(port), "-M", "dplane_fpm_nl")
    wait_for("zebra connects to the FPM listener", lambda: cap.connected(1), 30)
    return dut, cap


def established(frr, peer, afi="ipv4"):
    d = frr.json(f"show bgp {afi} unicast summary json", daemon="bgpd")
    p = d.get("peers", {}).get(peer, {})
    return p.get("state") == "Established"


# --------------------------------------------------------------------------
# Scenarios.
# --------------------------------------------------------------------------

def scenario_bgp(lab, out, port):
    dut_ns, (p1_ns,) = topology(lab, 1)
    dut, cap = start_dut(lab, dut_ns, out, "bgp.bin", port)
    phases = []
    mark = wait_settled(dut, cap, "connected routes")
    phases.append({"name": "connected", "end_offset": mark,
                   "note": "zebra's initial walk: connected routes of eth1 only"})
    dut.start("bgpd", dut_bgp_conf([("10.77.1.2", "fd77:1::2", 65002)]))
    peer = Frr(lab, p1_ns, "p1")
    t0 = time.monotonic()
    peer.start("bgpd", peer_conf(65002, "10.77.1.2", "10.77.1.1", "fd77:1::1", 65001, 1000, 200), "--no_zebra")
    wait_for("1000 + 200 BGP routes installed",
             lambda: route_count(dut, "ip", "ebgp") == 1000 and route_count(dut, "ipv6", "ebgp") == 200, 120)
    t_inst = time.monotonic() - t0
    mark = wait_settled(dut, cap, "announced")
    st = facts_of(open(cap.path, "rb").read()[:mark])[1]
    check_against_zebra(st, dut)
    phases.append({"name": "announced", "end_offset": mark, "routes_installed": len(st),
                   "note": f"peer bgpd started to 1200 installed: {t_inst:.1f} s"})
    withdrawn = v4_prefixes(100)
    peer.config(*[f"ip prefix-list W seq {10 + i} permit {p}" for i, p in enumerate(withdrawn)],
                "no ip prefix-list W seq 5 deny any",
                "router bgp 65002", "address-family ipv4 unicast",
                "neighbor 10.77.1.1 route-map WITHDRAW out", daemon="bgpd")
    wait_for("900 BGP IPv4 routes", lambda: route_count(dut, "ip", "ebgp") == 900, 60)
    mark = wait_settled(dut, cap, "withdrawn")
    st = facts_of(open(cap.path, "rb").read()[:mark])[1]
    check_against_zebra(st, dut)
    phases.append({"name": "withdrawn", "end_offset": mark, "routes_installed": len(st),
                   "note": "peer applied an outbound route-map denying 10.128.0.0/24 .. 10.128.99.0/24"})
    cap.stop()
    return {
        "scenario": "eBGP peer (AS 65002, bgpd --no_zebra, `network` lines) announces 1000 IPv4 "
                    "/24s (10.128.0.0/24 ..) over 10.77.1.2 and 200 IPv6 /48s (fd00:100:0::/48 ..) over "
                    "fd77:1::2 to the DUT (AS 65001, zebra -M dplane_fpm_nl, no fpm use-next-hop-groups); "
                    "then withdraws the first 100 IPv4 prefixes.",
        "frr_commands": {
            "dut zebra": zebra_conf(port).strip().splitlines(),
            "dut bgpd": dut_bgp_conf([("10.77.1.2", "fd77:1::2", 65002)]).strip().splitlines(),
            "peer bgpd": ["router bgp 65002", " no bgp network import-check",
                          " address-family ipv4 unicast", "  network 10.128.0.0/24", "  ... (1000)",
                          " address-family ipv6 unicast", "  network fd00:100::/48", "  ... (200)"],
            "withdraw": ["ip prefix-list W seq 10 permit 10.128.0.0/24", "... (100)",
                         "router bgp 65002", " address-family ipv4 unicast",
                         "  neighbor 10.77.1.1 route-map WITHDRAW out"],
        },
        "phases": phases,
        "withdrawn": withdrawn,
    }


def scenario_ecmp(lab, out, port):
    dut_ns, (p1_ns, p2_ns) = topology(lab, 2)
    dut, cap = start_dut(lab, dut_ns, out, "ecmp.bin", port)
    phases = []
    mark = wait_settled(dut, cap, "connected routes")
    phases.append({"name": "connected", "end_offset": mark})
    nbrs = [("10.77.1.2", "fd77:1::2", 65002), ("10.77.2.2", "fd77:2::2", 65002)]
    dut.start("bgpd", dut_bgp_conf(nbrs, maxpaths=2))
    p1, p2 = Frr(lab, p1_ns, "p1"), Frr(lab, p2_ns, "p2")
    p1.start("bgpd", peer_conf(65002, "10.77.1.2", "10.77.1.1", "fd77:1::1", 65001, 100, 20), "--no_zebra")
    wait_for("120 single-path routes", lambda: route_count(dut, "ip", "ebgp") == 100
             and route_count(dut, "ipv6", "ebgp") == 20, 60)
    mark = wait_settled(dut, cap, "one peer")
    st = facts_of(open(cap.path, "rb").read()[:mark])[1]
    check_against_zebra(st, dut)
    phases.append({"name": "one_peer", "end_offset": mark, "routes_installed": len(st),
                   "note": "peer 1 only: 100 IPv4 + 20 IPv6 single-path"})
    p2.start("bgpd", peer_conf(65002, "10.77.2.2", "10.77.2.1", "fd77:2::1", 65001, 100, 20), "--no_zebra")
    wait_for("120 multipath routes", lambda: multipath_count(dut, "ip") == 100
             and multipath_count(dut, "ipv6") == 20, 60)
    mark = wait_settled(dut, cap, "two peers")
    st = facts_of(open(cap.path, "rb").read()[:mark])[1]
    check_against_zebra(st, dut)
    phases.append({"name": "two_peers", "end_offset": mark, "routes_installed": len(st),
                   "note": "peer 2 up: the 120 prefixes become 2-way ECMP (RTA_MULTIPATH)"})
    dut.config("router bgp 65001", "neighbor 10.77.2.2 shutdown", "neighbor fd77:2::2 shutdown", daemon="bgpd")
    wait_for("back to single path", lambda: multipath_count(dut, "ip") == 0
             and multipath_count(dut, "ipv6") == 0 and route_count(dut, "ip", "ebgp") == 100, 60)
    mark = wait_settled(dut, cap, "peer 2 shut")
    st = facts_of(open(cap.path, "rb").read()[:mark])[1]
    check_against_zebra(st, dut)
    phases.append({"name": "peer2_shut", "end_offset": mark, "routes_installed": len(st),
                   "note": "DUT shuts the sessions to peer 2: back to single path via peer 1"})
    cap.stop()
    return {
        "scenario": "Two eBGP peers (both AS 65002; 10.77.1.2/fd77:1::2 on eth1, 10.77.2.2/fd77:2::2 "
                    "on eth2) announce the same 100 IPv4 /24s and 20 IPv6 /48s; DUT has maximum-paths 2. "
                    "Peer 1 first (single path), then peer 2 (every prefix updated to 2 next hops), then "
                    "the DUT shuts the sessions to peer 2 (back to one).",
        "frr_commands": {
            "dut zebra": zebra_conf(port).strip().splitlines(),
            "dut bgpd": dut_bgp_conf(nbrs, maxpaths=2).strip().splitlines(),
            "shut": ["router bgp 65001", " neighbor 10.77.2.2 shutdown", " neighbor fd77:2::2 shutdown"],
        },
        "phases": phases,
    }


STATIC = [
    "ip route 192.0.2.0/24 blackhole",
    "ip route 198.18.0.0/15 Null0",
    "ip route 198.51.100.0/24 reject",
    "ip route 203.0.113.0/24 10.77.1.2",
    "ip route 0.0.0.0/0 10.77.1.2",
    "ip route 203.0.113.128/25 10.77.1.2",
    "ip route 203.0.113.128/25 10.77.2.2",
    "ip route 10.200.0.0/16 blackhole table 100",
    "ip route 10.201.0.0/16 10.77.1.2 table 100",
    "ip route 10.202.0.0/16 10.77.2.2 table 1000",
    "ipv6 route 2001:db8:dead::/48 blackhole",
    "ipv6 route 2001:db8:beef::/48 reject",
    "ipv6 route 2001:db8:1::/48 fd77:1::2",
    "ipv6 route 2001:db8:2::/48 fd77:1::2",
    "ipv6 route 2001:db8:2::/48 fd77:2::2",
    "ipv6 route ::/0 fd77:1::2",
    "ipv6 route 2001:db8:100::/48 fd77:1::2 table 100",
]
STATIC_REMOVE = [
    "no ip route 198.51.100.0/24 reject",
    "no ip route 203.0.113.128/25 10.77.2.2",
    "no ipv6 route 2001:db8:beef::/48 reject",
    "no ip route 10.200.0.0/16 blackhole table 100",
]


def scenario_static(lab, out, port):
    dut_ns, _ = topology(lab, 2)
    dut, cap = start_dut(lab, dut_ns, out, "static.bin", port)
    tables = (254, 100, 1000)
    phases = []
    mark = wait_settled(dut, cap, "connected routes")
    phases.append({"name": "connected", "end_offset": mark})
    dut.start("staticd", "hostname dut\n")
    dut.config(*STATIC, daemon="staticd")
    wait_for("static routes", lambda: len(zebra_fib(dut, tables, "static")) == 15, 30)
    mark = wait_settled(dut, cap, "static added")
    st = facts_of(open(cap.path, "rb").read()[:mark])[1]
    check_against_zebra(st, dut, tables)
    phases.append({"name": "added", "end_offset": mark, "routes_installed": len(st)})
    dut.config(*STATIC_REMOVE, daemon="staticd")
    wait_for("static routes removed", lambda: len(zebra_fib(dut, tables, "static")) == 12
             and zebra_fib(dut, tables)[(254, "203.0.113.128/25")][1] == 1, 30)
    mark = wait_settled(dut, cap, "static removed")
    st = facts_of(open(cap.path, "rb").read()[:mark])[1]
    check_against_zebra(st, dut, tables)
    phases.append({"name": "removed", "end_offset": mark, "routes_installed": len(st),
                   "note": "3 prefixes deleted, 203.0.113.128/25 back to one next hop"})
    cap.stop()

    # The same config, zebra restarted: what does the replay look like?
    rcap = Capture(lab, dut_ns, os.path.join(out, "static-replay.bin"), port + 1)
    base = fpm_counters(dut)["bytes-sent"]
    dut.config(f"fpm address 127.0.0.1 port {port + 1}", daemon="zebra")
    wait_for("zebra connects to the second listener", lambda: rcap.connected(1), 30)
    wait_settled(dut, rcap, "reconnect walk", base=base)
    walk = facts_of(open(rcap.path, "rb").read())[1]
    # Zebra 8.4's reconnect walk (fpm_rib_send, rib_tables_iter_next) visits
    # each VRF's main tables only: `table N` routes of the default VRF are
    # not replayed. Check the main table; record what is missing.
    check_against_zebra({k: v for k, v in walk.items() if k[0] == 254}, dut)
    not_replayed = sorted(f"table {t} {p}" for (t, p) in set(zebra_routes(dut, tables)) - set(walk))
    reconnect_bytes = rcap.size(1)
    # Now restart zebra itself; the listener keeps listening (connection 2).
    with open(os.path.join(dut.dir, "zebra.conf"), "w") as f:
        f.write(zebra_conf(port + 1))
    t0 = time.monotonic()
    dut.stop("zebra")
    t_stop = time.monotonic() - t0
    after_stop = rcap.size(1)
    t0 = time.monotonic()
    dut.start("zebra", zebra_conf(port + 1), "-M", "dplane_fpm_nl")
    wait_for("zebra reconnects", lambda: rcap.connected(2), 30)
    t_conn = time.monotonic() - t0
    wait_for("staticd's routes back", lambda: len(zebra_fib(dut, tables, "static")) == 12, 60)
    t_static = time.monotonic() - t0
    wait_settled(dut, rcap, "replay after restart", conn=2)
    st2 = facts_of(open(f"{rcap.path}.2", "rb").read())[1]
    check_against_zebra(st2, dut, tables)
    rcap.stop()
    # Keep only the restart's replay (connection 2) as the fixture.
    os.replace(f"{rcap.path}.2", rcap.path)
    findings = {
        "fpm_reconnect_walk_bytes": reconnect_bytes,
        "fpm_reconnect_walk_routes": len(walk),
        "fpm_reconnect_walk_not_replayed": not_replayed,
        "bytes_sent_during_zebra_stop": after_stop - reconnect_bytes,
        "zebra_sigterm_exit_s": round(t_stop, 2),
        "restart_to_fpm_connection_s": round(t_conn, 2),
        "restart_to_static_routes_back_s": round(t_static, 2),
    }
    return {
        "scenario": "staticd routes: blackhole, Null0, reject (unreachable), gateways, a 2-way ECMP "
                    "static, a default route, IPv4 and IPv6; some in kernel table 100 and 1000 "
                    "(`table N`: this kernel has no VRF device support, so non-default tables of the "
                    "default VRF stand in for a VRF's table). Then 3 removed and one ECMP member removed.",
        "frr_commands": {"dut zebra": zebra_conf(port).strip().splitlines(),
                         "add (staticd)": STATIC, "remove (staticd)": STATIC_REMOVE},
        "phases": phases,
        "replay": findings,
    }


def scenario_restart(lab, out, port, n=10000):
    """Findings only (no fixture): zebra and bgpd restarts with n BGP routes."""
    tmp = os.path.join(lab.root, "restart.bin")
    dut_ns, (p1_ns,) = topology(lab, 1)
    dut, cap = start_dut(lab, dut_ns, lab.root, "restart.bin", port)
    wait_settled(dut, cap, "connected routes")
    dut.start("staticd", "hostname dut\nip route 192.0.2.0/24 blackhole\n")
    dut.start("bgpd", dut_bgp_conf([("10.77.1.2", "fd77:1::2", 65002)]))
    peer = Frr(lab, p1_ns, "p1")
    f = {"bgp_prefixes": n}
    t0 = time.monotonic()
    peer.start("bgpd", peer_conf(65002, "10.77.1.2", "10.77.1.1", "fd77:1::1", 65001, n, 0), "--no_zebra")
    wait_for("established", lambda: established(dut, "10.77.1.2"), 60)
    f["peer_start_to_established_s"] = round(time.monotonic() - t0, 2)
    wait_for(f"{n} installed", lambda: route_count(dut, "ip", "ebgp") == n, 120, 0.1)
    f["peer_start_to_installed_s"] = round(time.monotonic() - t0, 2)
    wait_settled(dut, cap, "announced")
    f["peer_start_to_fpm_settled_s"] = round(time.monotonic() - t0, 2)
    f["fpm_bytes_full_table"] = cap.size(1)

    # 1. zebra restart (SIGTERM, start again); bgpd and staticd keep running.
    t0 = time.monotonic()
    dut.stop("zebra")
    f["zebra_stop_s"] = round(time.monotonic() - t0, 2)
    f["fpm_bytes_sent_while_zebra_stopped"] = cap.size(1) - f["fpm_bytes_full_table"]
    t0 = time.monotonic()
    dut.start("zebra", zebra_conf(port), "-M", "dplane_fpm_nl")
    wait_for("FPM reconnect", lambda: cap.connected(2), 30, 0.05)
    f["zebra_start_to_fpm_connection_s"] = round(time.monotonic() - t0, 2)
    wait_for("bgpd client back", lambda: "bgp" in dut.vtysh("show zebra client summary", daemon="zebra"), 30)
    f["zebra_start_to_bgpd_reconnected_s"] = round(time.monotonic() - t0, 2)
    wait_for("static back", lambda: len(zebra_fib(dut, protocol="static")) == 1, 60)
    f["zebra_start_to_static_back_s"] = round(time.monotonic() - t0, 2)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and route_count(dut, "ip", "ebgp") == 0:
        time.sleep(0.5)
    f["bgp_routes_in_zebra_30s_after_restart"] = route_count(dut, "ip", "ebgp")
    f["fpm_replay_connection_bytes_after_30s"] = cap.size(2)
    dut.vtysh("clear bgp ipv4 unicast * soft in", daemon="bgpd")
    time.sleep(3)
    f["bgp_routes_after_soft_in"] = route_count(dut, "ip", "ebgp")
    t0 = time.monotonic()
    dut.vtysh("clear bgp *", daemon="bgpd")
    wait_for("hard clear reinstalls", lambda: route_count(dut, "ip", "ebgp") == n, 120, 0.1)
    f["hard_clear_to_installed_s"] = round(time.monotonic() - t0, 2)
    wait_settled(dut, cap, "after hard clear", conn=2)

    # 2. bgpd restart (zebra keeps running): zebra deletes bgp's routes.
    before = cap.size(2)
    t0 = time.monotonic()
    dut.stop("bgpd")
    wait_for("bgp routes gone", lambda: route_count(dut, "ip", "ebgp") == 0, 60, 0.1)
    wait_settled(dut, cap, "bgpd stopped", conn=2)
    f["bgpd_stop_to_routes_deleted_s"] = round(time.monotonic() - t0, 2)
    msgs, _ = parse_stream(open(f"{tmp}.2", "rb").read()[before:])
    f["fpm_messages_when_bgpd_stopped"] = count(m["type"] for _, m in msgs)
    t0 = time.monotonic()
    dut.start("bgpd", dut_bgp_conf([("10.77.1.2", "fd77:1::2", 65002)]))
    wait_for(f"{n} installed again", lambda: route_count(dut, "ip", "ebgp") == n, 180, 0.1)
    f["bgpd_start_to_installed_s"] = round(time.monotonic() - t0, 2)
    cap.stop()
    return {"findings": f}


SCENARIOS = {"bgp": scenario_bgp, "ecmp": scenario_ecmp, "static": scenario_static,
             "restart": scenario_restart}


def facts_entry(path, meta):
    data = open(path, "rb").read()
    f, state = facts_of(data)
    phases = []
    for ph in meta.get("phases", []):
        pf, pst = facts_of(data[:ph["end_offset"]])
        phases.append({**ph, "messages": pf["messages"], "final": pf["final"],
                       "final_routes_sample": sample(pst, 0)})
    f["phases"] = phases
    f["final_routes" if len(state) <= 64 else "final_routes_sample"] = sample(state)
    return {k: v for k, v in meta.items() if k != "phases"} | f


def route_key(m):
    return (m["table"], m["family"], ipaddress.ip_network(m["prefix"]))


def sample(state, per_group=64):
    """Every route when few; else the first 3 of each (table, family,
    protocol, next-hop count) group, in address order."""
    ms = sorted(state.values(), key=route_key)
    if len(ms) <= per_group:
        return [route_brief(m) for m in ms]
    out, seen = [], {}
    for m in ms:
        g = (m["table"], m["family"], m["protocol"], len(m["nexthops"]))
        seen[g] = seen.get(g, 0) + 1
        if seen[g] <= 3:
            out.append(route_brief(m))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(HERE, "..", "..", "fwd", "tests", "data", "fpm"))
    ap.add_argument("--only", action="append", choices=sorted(SCENARIOS))
    ap.add_argument("--port", type=int, default=2620, help="FPM port inside the namespaces")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (logs, configs)")
    ap.add_argument("--facts", help="only print the facts of this capture file")
    a = ap.parse_args()
    if a.facts:
        print(json.dumps(facts_of(open(a.facts, "rb").read())[0], indent=2))
        return
    if os.geteuid() != 0:
        sys.exit("capture-fixtures: needs root (network namespaces)")
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    facts_path = os.path.join(out, "facts.json")
    facts = json.load(open(facts_path)) if os.path.exists(facts_path) else {}
    version = sh(f"{FRR}/zebra", "--version").splitlines()[0]
    for name in a.only or sorted(SCENARIOS):
        root = tempfile.mkdtemp(prefix=f"frrkit-{name}-")
        lab = Lab(root)
        try:
            print(f"capture-fixtures: {name} ...", file=sys.stderr)
            meta = SCENARIOS[name](lab, out, a.port)
        finally:
            lab.stop()
            if a.keep:
                print(f"capture-fixtures: kept {root}", file=sys.stderr)
            else:
                shutil.rmtree(root, ignore_errors=True)
        if name == "restart":
            meta["frr"] = version
            with open(os.path.join(out, "restart-findings.json"), "w") as f:
                json.dump(meta, f, indent=1)
                f.write("\n")
            print(f"capture-fixtures: restart: {json.dumps(meta['findings'], indent=1)}", file=sys.stderr)
            continue
        entry = facts_entry(os.path.join(out, f"{name}.bin"), meta)
        entry["frr"] = version
        facts[f"{name}.bin"] = entry
        if name == "static":
            rp = os.path.join(out, "static-replay.bin")
            r = facts_entry(rp, {"scenario": "zebra restarted (SIGTERM, start again) with the "
                                             "static.bin config at its end; connection 2's bytes: "
                                             "the replay (no marker at its end)"})
            r["frr"] = version
            facts["static-replay.bin"] = r
        for ext in (".log", ".ready"):
            for f in os.listdir(out):
                if f.endswith(ext) and f.startswith(name):
                    os.unlink(os.path.join(out, f))
        print(f"capture-fixtures: {name}.bin: {entry['messages']}", file=sys.stderr)
    with open(facts_path, "w") as f:
        json.dump(dict(sorted(facts.items())), f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
