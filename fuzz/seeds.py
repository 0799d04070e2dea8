#!/usr/bin/env python3
"""Writes the seed corpora under fuzz/corpus/<target>/ from hand-built frames,
the protocol and command examples of ctl's tests and docs, the example
configs, and a saved state. Re-run after changing a seed; the files are
committed (deploy/fuzz.sh copies them into a scratch corpus before a run).
"""
import hashlib
import ipaddress
import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


DMAC = bytes([2, 0, 0, 0, 0, 0xAA])
SMAC = bytes([2, 0, 0, 0, 0, 0x01])


def eth(ethertype, payload, vlans=(), dmac=DMAC):
    tags = b"".join(struct.pack("!HH", tpid, vid) for tpid, vid in vlans)
    f = dmac + SMAC + tags + struct.pack("!H", ethertype) + payload
    return f + b"\0" * max(0, 60 - len(f))


def v4(src, dst, proto, l4, ttl=64, tos=0, frag=0, opts=b"", ident=1):
    ihl = 5 + len(opts) // 4
    h = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, tos, ihl * 4 + len(l4), ident, frag,
                    ttl, proto, 0, ipaddress.IPv4Address(src).packed,
                    ipaddress.IPv4Address(dst).packed) + opts
    h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return h + l4


def l4_v4(src, dst, proto, seg, at):
    ph = ipaddress.IPv4Address(src).packed + ipaddress.IPv4Address(dst).packed
    ph += struct.pack("!BBH", 0, proto, len(seg))
    c = csum(ph + seg)
    return seg[:at] + struct.pack("!H", c) + seg[at + 2:]


def l4_v6(src, dst, nh, seg, at):
    ph = ipaddress.IPv6Address(src).packed + ipaddress.IPv6Address(dst).packed
    ph += struct.pack("!IxxxB", len(seg), nh)
    c = csum(ph + seg)
    return seg[:at] + struct.pack("!H", c) + seg[at + 2:]


def v6(src, dst, nh, payload, hlim=64):
    return struct.pack("!IHBB16s16s", 0x60000000, len(payload), nh, hlim,
                       ipaddress.IPv6Address(src).packed,
                       ipaddress.IPv6Address(dst).packed) + payload


def udp(sp, dp, data):
    return struct.pack("!HHHH", sp, dp, 8 + len(data), 0) + data


def tcp(sp, dp, flags, data=b""):
    # Data offset 5 above the 12-bit flags field (AE/NS is bit 8).
    return struct.pack("!HHIIHHHH", sp, dp, 1, 0, (5 << 12) | (flags & 0xFFF), 65535, 0, 0) + data


def icmp(ty, code, rest, data):
    m = struct.pack("!BBH", ty, code, 0) + rest + data
    return m[:2] + struct.pack("!H", csum(m)) + m[4:]


def frames():
    s4, d4 = "10.0.0.1", "172.16.5.4"
    s6, d6 = "2001:db8::1", "2001:db8::2"
    out = {}
    out["udp4"] = eth(0x0800, v4(s4, d4, 17, l4_v4(s4, d4, 17, udp(1, 2, b"payload"), 6)))
    out["tcp4_syn"] = eth(0x0800, v4(s4, d4, 6, l4_v4(s4, d4, 6, tcp(1234, 80, 0x02), 16)))
    out["tcp4_ae_syn"] = eth(0x0800, v4(s4, d4, 6, l4_v4(s4, d4, 6, tcp(1234, 80, 0x102), 16)))
    out["tcp4_opts_vlan"] = eth(0x0800, v4(s4, d4, 6, tcp(80, 1234, 0x18, b"GET /"),
                                           opts=bytes([1, 1, 0x94, 4, 0, 0, 0, 0])),
                                vlans=[(0x8100, 5)])
    out["icmp4_echo_qinq"] = eth(0x0800, v4(s4, d4, 1, icmp(8, 0, b"\0\1\0\2", b"ping")),
                                 vlans=[(0x88A8, 100), (0x8100, 200)])
    out["icmp4_echo_ttl1"] = eth(0x0800, v4(s4, d4, 1, icmp(8, 0, b"\0\1\0\1", b""), ttl=1))
    out["icmp4_unreach"] = eth(0x0800, v4(s4, d4, 1, icmp(3, 3, b"\0" * 4,
                                                           v4(d4, s4, 17, udp(5, 6, b""))[:28])))
    out["v4_frag_first_df"] = eth(0x0800, v4(s4, d4, 17, udp(9, 9, bytes(600)), frag=0x4000))
    out["v4_frag_more"] = eth(0x0800, v4(s4, d4, 17, udp(9, 9, bytes(1400)), frag=0x2000))
    out["v4_frag_nonfirst"] = eth(0x0800, v4(s4, d4, 17, bytes(30), frag=100))
    out["v4_big"] = eth(0x0800, v4(s4, d4, 17, udp(7, 7, bytes(1472)), frag=0))
    out["v4_sctp"] = eth(0x0800, v4(s4, d4, 132, struct.pack("!HHII", 1, 2, 0, 0)))
    out["v4_dscp_ef"] = eth(0x0800, v4(s4, d4, 17, udp(3, 4, b"x"), tos=0xB8))
    out["udp6_qinq"] = eth(0x86DD, v6(s6, d6, 17, l4_v6(s6, d6, 17, udp(53, 53, b"q"), 6)),
                           vlans=[(0x88A8, 100), (0x8100, 200)])
    out["tcp6"] = eth(0x86DD, v6(s6, d6, 6, tcp(1, 2, 0x12)))
    out["icmp6_echo"] = eth(0x86DD, v6(s6, d6, 58, l4_v6(s6, d6, 58, icmp(128, 0, b"\0\x09\0\x09", bytes(20)), 2)))
    # Extension header chain: hop-by-hop, routing, fragment, destination options.
    chain = (bytes([43, 0, 0, 0, 0, 0, 0, 0]) +            # HBH -> routing
             bytes([44, 0, 0, 0, 0, 0, 0, 0]) +            # routing -> fragment
             struct.pack("!BxHI", 60, 1, 3) +              # fragment (M) -> dest opts
             bytes([6, 0, 0, 0, 0, 0, 0, 0]) +             # dest opts -> TCP
             tcp(1, 2, 0x02))
    out["v6_ext_chain"] = eth(0x86DD, v6(s6, d6, 0, chain))
    out["v6_frag_nonfirst"] = eth(0x86DD, v6(s6, d6, 44, struct.pack("!BxHI", 6, 20 << 3 | 1, 3) + bytes(40)))
    out["v6_ah"] = eth(0x86DD, v6(s6, d6, 51, bytes([17, 1, 0, 0]) + bytes(8) + udp(1, 2, b"")))
    out["v6_nonxt"] = eth(0x86DD, v6(s6, d6, 59, b""))
    # ARP request for 10.0.0.254 and a reply.
    arp = lambda op, tpa: struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, op, SMAC,
                                      ipaddress.IPv4Address(s4).packed, bytes(6),
                                      ipaddress.IPv4Address(tpa).packed)
    out["arp_request"] = eth(0x0806, arp(1, "10.0.0.254"), dmac=b"\xff" * 6)
    out["arp_reply_vlan"] = eth(0x0806, arp(2, "10.0.0.254"), vlans=[(0x8100, 7)])
    # Neighbour discovery: NS with a source link-layer option, NA, RS.
    tgt = "2001:db8::fe"
    snm = "ff02::1:ff00:fe"
    ns = icmp(135, 0, b"\0" * 4, ipaddress.IPv6Address(tgt).packed + bytes([1, 1]) + SMAC)
    out["nd_ns"] = eth(0x86DD, v6(s6, snm, 58, l4_v6(s6, snm, 58, ns, 2), hlim=255),
                       dmac=bytes([0x33, 0x33, 0xFF, 0, 0, 0xFE]))
    na = icmp(136, 0, bytes([0x60, 0, 0, 0]), ipaddress.IPv6Address(s6).packed + bytes([2, 1]) + SMAC)
    out["nd_na"] = eth(0x86DD, v6(s6, d6, 58, l4_v6(s6, d6, 58, na, 2), hlim=255))
    rs = icmp(133, 0, b"\0" * 4, bytes([1, 1]) + SMAC)
    out["nd_rs"] = eth(0x86DD, v6("fe80::1", "ff02::2", 58, l4_v6("fe80::1", "ff02::2", 58, rs, 2), hlim=255))
    out["short"] = bytes(13)
    out["not_ip"] = eth(0x88CC, b"lldp")
    return out


def wire_lines():
    lines = set()
    for path in ("ctl/src/wire/tests.rs", "ctl/PROTOCOL.md", "ctl/src/codec.rs"):
        text = open(os.path.join(ROOT, path)).read()
        for m in re.finditer(r'r#"(\{.*?\})"#', text):
            lines.add(m.group(1))
        for m in re.finditer(r'^(\{"(?:id|hello|error)".*\})$', text, re.M):
            lines.add(m.group(1))
    # Bare requests and changes of the tests, as full request lines too.
    for l in list(lines):
        if not l.startswith('{"id"') and not l.startswith('{"hello"') and not l.startswith('{"error"'):
            key = l[2:l.index('"', 2)]
            if key.endswith(("_add", "_del", "_replace", "_flush")):
                lines.add('{"id":9,"request":{"change":%s}}' % l)
            else:
                lines.add('{"id":9,"request":%s}' % l)
    lines.add('{"id":5,"request":{"batch":{"changes":[{"rule_flush":{}},'
              '{"route_add":{"prefix":"10.0.0.0/8","target":"blackhole"}}]}}}')
    return sorted(lines)


def commands():
    text = open(os.path.join(ROOT, "ctl/src/text/tests.rs")).read()
    cmds = set()
    for m in re.finditer(r'(?:chg|words|cmd|bad|parse_command\(&words)\(\s*"((?:[^"\\]|\\.)*)"', text):
        cmds.add(m.group(1).replace("\\\n", " "))
    for m in re.finditer(r'^\s*"((?:route|rule|neigh|nexthop|group|address|port|nh|ro|ru) [^"]*)"', text, re.M):
        cmds.add(m.group(1))
    return sorted(re.sub(r"\s+", " ", c).strip() for c in cmds)


SAVED = """# fwd running configuration, generation 7
address add 10.0.0.1/24 dev p0
address add 2001:db8::1/64 dev p1
neigh add 10.0.0.2 lladdr 02:00:00:00:00:02 dev p0
neigh add 2001:db8::2 lladdr 02:00:00:00:00:03 dev p1
nexthop add 1 via 10.0.0.2 dev p0
nexthop add 2 via 2001:db8::2 dev p1
nexthop add 3 dev p1
group add 10 members 1:1 3:2
route add 10.1.0.0/16 via 10.0.0.2 dev p0
route add 10.2.0.0/16 nhid 1
route add 10.3.0.0/16 nexthop-group 10 table 5
route add 192.0.2.0/24 blackhole
route add 198.51.100.0/24 reject
route add 2001:db8:1::/48 via 2001:db8::2 dev p1
route add default via 10.0.0.2
rule add id 1 prio 10 src 10.0.0.0/8 dport 80-90 proto tcp action drop
rule add id 2 prio 20 proto udp iif p0 action police rate 10mbit burst 64k permit
rule add id 3 prio 30 dscp ef action set-dscp 0 mark 7 count permit
rule add id 4 prio 40 dst 2001:db8::/32 action redirect p1
port set p1 down
"""


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def main():
    fs = frames()
    for name, f in fs.items():
        write("pkt_parse", name, f)
    # pkt_rewrite: DSCP byte, MTU; pkt_reply: error selector, MTU.
    for i, (name, f) in enumerate(fs.items()):
        write("pkt_rewrite", name, bytes([0x2E, 0x05, 0xDC if i % 2 else 0x40]) + f)
        write("pkt_reply", name, bytes([i % 7, 0x05, 0x00]) + f)
    for i, l in enumerate(wire_lines()):
        name = hashlib.sha1(l.encode()).hexdigest()[:12]
        write("wire_roundtrip", name, l)
        write("wire_decode", name, bytes([0x3F if i % 2 else 0x7F]) + l.encode() + b"\n")
    for c in commands():
        name = hashlib.sha1(c.encode()).hexdigest()[:12]
        write("cmd_parse", name, c + "\n")
        write("cmd_roundtrip", name, c + "\n")
    write("cmd_parse", "saved", SAVED)
    write("cmd_roundtrip", "saved", SAVED)
    write("saved_load", "saved", SAVED)
    for i, line in enumerate(l for l in SAVED.splitlines() if not l.startswith("#")):
        write("saved_load", "line%02d" % i, "address add 10.0.0.1/24 dev p0\n" + line + "\n")
    readme = open(os.path.join(ROOT, "README.md")).read()
    m = re.search(r"## Configuration.*?```yaml\n(.*?)```", readme, re.S)
    write("config_yaml", "readme.yaml", m.group(1))
    for name in sorted(os.listdir(os.path.join(ROOT, "deploy/examples"))):
        if name.endswith(".yaml"):
            write("config_yaml", name, open(os.path.join(ROOT, "deploy/examples", name)).read())
    cfg = open(os.path.join(ROOT, "fwd/src/config.rs")).read()
    m = re.search(r'const GOOD: &str = r#"\n(.*?)"#;', cfg, re.S)
    write("config_yaml", "unit_good.yaml", m.group(1))
    write("config_yaml", "unit_good_ra.yaml", m.group(1).replace(
        "    device: net_null0\n",
        "    device: net_null0\n    ra: {prefixes: ['2001:db8:1::/64'], interval_s: 30}\n"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
