"""Every profile loads with every tunable combination of the test matrix
through the TRex client library, builds its streams (frame sizes, rates,
pg_id), and exports; the exported destinations are exactly the plan's.
Also the field-engine interpreter of the pcap export against hand-computed
packets."""

import ipaddress
import itertools
import os
import struct
import tempfile
import unittest

import lbr_trex_client  # noqa: F401  (first: puts `trex` on sys.path)
from trex.stl.api import STLProfile, STLStream, STLPktBuilder, STLTXCont, STLVM, Ether, IP, UDP

from fwdtrex import pcapexport, plans
from fwdtrex.pcapexport import Program, VmError

PROFILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "profiles")


def load(name, direction, **tunables):
    return STLProfile.load_py(os.path.join(PROFILES, name + ".py"), direction=direction,
                              port_id=direction, **tunables)


def l3(frame):
    return Ether(frame).payload


def routing_matrix():
    for fam, size, dests, flows, d in itertools.product(
            (4, 6), ("min", "imix"), plans.DESTINATIONS, plans.FLOWS, (0, 1)):
        yield fam, (plans.MIN_FRAME[fam] if size == "min" else "imix"), dests, flows, d


class ProfileMatrix(unittest.TestCase):
    def check_frames(self, streams, size, fam):
        want = plans.frame_sizes(size, fam)
        self.assertEqual([(s.get_pkt_len(), s.to_json()["mode"]["rate"]["value"]) for s in streams], want)
        for s, (frame, _) in zip(streams, want):
            self.assertEqual(len(s.get_pkt()), frame - plans.FCS, "TRex counts the FCS; the packet lacks it")
            self.assertEqual(s.to_json()["mode"]["rate"]["type"], "pps")

    def test_routing_profiles_over_the_matrix(self):
        for fam, size, dests, flows, d in routing_matrix():
            with self.subTest(family=fam, size=size, dests=dests, flows=flows, direction=d):
                p = load(f"ip{fam}_routing", d, size=size, dests=dests, flows=flows)
                streams = p.get_streams()
                self.check_frames(streams, size, fam)
                rng = plans.DstRange(fam, d, dests)
                srcs = plans.SrcRange(fam, d, flows)
                prog = pcapexport.program_of(streams[0])
                # The first destinations, the last, and the wrap-around.
                ks = list(range(min(dests, 64))) + [dests - 1, dests, dests + 1]
                for k in ks:
                    pkt = l3(prog.packet(k))
                    self.assertEqual(ipaddress.ip_address(pkt.dst), rng.address(k % dests), k)
                    self.assertEqual(ipaddress.ip_address(pkt.src), srcs.address(k), k)
                    self.assertIn(ipaddress.ip_address(pkt.dst), plans.dst_block(fam, d))
                # Export: interleaved by rate, and every packet in the plan.
                with tempfile.TemporaryDirectory() as t:
                    pk = pcapexport.export(streams, 48, os.path.join(t, "x.pcap"))
                    frames = pcapexport.read_pcap(os.path.join(t, "x.pcap"))
                self.assertEqual(frames, [b for _, _, b in pk])
                counts = [sum(1 for i, _, _ in pk if i == s) for s in range(len(streams))]
                if size == "imix":
                    self.assertEqual(counts, [28, 16, 4])
                for i, j, b in pk:
                    self.assertEqual(len(b), streams[i].get_pkt_len() - plans.FCS)
                    self.assertEqual(ipaddress.ip_address(l3(b).dst), rng.address(j % dests))

    def test_whole_destination_range_is_exported_exactly(self):
        # 1k and 10k: every destination of the plan exactly once per pass.
        for fam, dests in itertools.product((4, 6), (1000, 10000)):
            with self.subTest(family=fam, dests=dests):
                streams = load(f"ip{fam}_routing", 1, size=plans.MIN_FRAME[fam], dests=dests,
                               flows=100).get_streams()
                pk = pcapexport.packets(streams, dests)
                got = [ipaddress.ip_address(l3(b).dst) for _, _, b in pk]
                self.assertEqual(got, plans.DstRange(fam, 1, dests).addresses())
                self.assertEqual(len(set(got)), dests)

    def test_every_destination_is_routed_by_the_plan(self):
        for fam in (4, 6):
            routes = [ipaddress.ip_network(p) for p, _, _ in plans.block_routes(fam)]
            self.assertEqual(len(routes), 2 * 16384)
            for d in (0, 1):
                rng = plans.DstRange(fam, d, 1000000)
                for k in (0, 1, 4095, 999999):
                    a = rng.address(k)
                    via = [r for r in routes if a in r]
                    self.assertEqual(len(via), 1, a)

    def test_acl_profile(self):
        for flows, d in itertools.product(plans.FLOWS, (0, 1)):
            with self.subTest(flows=flows, direction=d):
                streams = load("acl_iacl", d, flows=flows).get_streams()
                self.check_frames(streams, 64, 4)
                prog = pcapexport.program_of(streams[0])
                srcs = {l3(prog.packet(k)).src for k in range(flows + 5)}
                self.assertEqual(len(srcs), flows)
                permit = plans.SRC_V4[d]
                self.assertTrue(all(ipaddress.ip_address(s) in permit for s in srcs))

    def test_latency_profile(self):
        for fam, d in itertools.product((4, 6), (0, 1)):
            with self.subTest(family=fam, direction=d):
                streams = load("latency", d, family=fam, pps=5000, **{"pg-id": 7}).get_streams()
                self.assertEqual(len(streams), 1)
                j = streams[0].to_json()
                self.assertEqual(j["flow_stats"]["rule_type"], "latency")
                self.assertEqual(j["flow_stats"]["stream_id"], 7 + d)
                self.assertEqual(j["mode"]["rate"], {"type": "pps", "value": 5000})
                # 64 B (IPv4) and 82 B (IPv6): room for TRex's 16-byte latency header.
                self.assertEqual(streams[0].get_pkt_len(), {4: 64, 6: 82}[fam])

    def test_the_command_line_exports_what_the_library_builds(self):
        with tempfile.TemporaryDirectory() as t:
            out = os.path.join(t, "x.pcap")
            rc = pcapexport.main([os.path.join(PROFILES, "ip6_routing.py"), "-n", "20", "-o", out, "-d", "1",
                                  "-t", "size=imix,dests=1000,flows=100"])
            self.assertEqual(rc, 0)
            got = pcapexport.read_pcap(out)
        streams = load("ip6_routing", 1, size="imix", dests=1000, flows=100).get_streams()
        self.assertEqual(got, [b for _, _, b in pcapexport.packets(streams, 20)])
        self.assertEqual(len(got), 20)

    def test_bad_tunables_are_refused(self):
        from trex.common.trex_exceptions import TRexError
        for name, t in (("ip4_routing", {"size": 63}), ("ip6_routing", {"size": 64}),
                        ("ip4_routing", {"dests": 0}), ("ip4_routing", {"size": "jumbo"}),
                        ("acl_iacl", {"flows": 70000}), ("latency", {"family": 6, "size": 78})):
            with self.subTest(profile=name, tunables=t):
                with self.assertRaises(TRexError):
                    load(name, 0, **t)


class TrexConfigs(unittest.TestCase):
    def test_trex_cfg_src_macs_are_the_plans(self):
        import glob
        import re
        files = glob.glob(os.path.join(PROFILES, "..", "trex_cfg", "*.yaml"))
        self.assertGreaterEqual(len(files), 2)
        for f in files:
            with open(f) as fh:
                macs = re.findall(r'src_mac:\s*"([0-9a-f:]+)"', fh.read())
            self.assertEqual(tuple(macs), plans.TREX_MAC, f)


def ipv4_csum(hdr):
    s = sum(struct.unpack("!10H", hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


class Interpreter(unittest.TestCase):
    """The field-engine interpreter on hand-computed values."""

    def var(self, **kw):
        d = dict(type="flow_var", name="v", size=4, op="inc", next_var=None, split_to_cores=True,
                 init_value=10, min_value=10, max_value=20, step=4)
        d.update(kw)
        return d

    def write(self, off=0, add=0, big=True):
        return dict(type="write_flow_var", name="v", pkt_offset=off, add_value=add, is_big_endian=big)

    def test_inc_first_and_wrap_around(self):
        p = Program(bytes(4), [self.var(), self.write()])
        # 10, 14, 18; then past 20: inc_mod restarts at min and the restart
        # consumes one unit: 18 + 4 -> 10 + (4 - 2 - 1) = 11.
        self.assertEqual([int.from_bytes(p.packet(k), "big") for k in range(6)], [10, 14, 18, 11, 15, 19])

    def test_dec_wraps_to_max(self):
        p = Program(bytes(4), [self.var(op="dec", init_value=10, min_value=0, max_value=10, step=3), self.write()])
        # 10, 7, 4, 1, then 1 - 3 -> 10 - (3 - 1 - 1) = 9.
        self.assertEqual([int.from_bytes(p.packet(k), "big") for k in range(5)], [10, 7, 4, 1, 9])

    def test_plan_stride_wraps_to_the_first_destination(self):
        r = plans.DstRange(4, 0, 3)
        p = Program(bytes(4), [self.var(init_value=r.var_min, min_value=r.var_min, max_value=r.var_max,
                                        step=r.step), self.write()])
        got = [str(ipaddress.IPv4Address(p.packet(k))) for k in range(4)]
        self.assertEqual(got, ["16.0.0.0", "16.21.85.85", "16.42.170.170", "16.0.0.0"])

    def test_write_add_value_wraps_at_the_size_and_little_endian(self):
        p = Program(bytes(3), [self.var(size=1, init_value=250, min_value=250, max_value=255, step=1),
                               self.write(off=1, add=10)])
        self.assertEqual(p.packet(0), bytes([0, 4, 0]))  # 250 + 10 = 260 = 4 (mod 256)
        p = Program(bytes(2), [self.var(size=2, init_value=0x1234, min_value=0, max_value=0xFFFF),
                               self.write(big=False)])
        self.assertEqual(p.packet(0), bytes([0x34, 0x12]))

    def test_checksums_against_hand_computed(self):
        base = bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") /
                     IP(src="1.2.3.4", dst="5.6.7.8", ttl=64, chksum=0) / UDP(sport=1, dport=2, chksum=0) / b"ab")
        p = Program(base, [dict(type="fix_checksum_hw", l2_len=14, l3_len=20, l4_type=11)])
        out = p.packet(0)
        self.assertEqual(struct.unpack("!H", out[24:26])[0], ipv4_csum(out[14:24] + b"\0\0" + out[26:34]))
        # UDP over the pseudo header, by hand.
        pseudo = bytes([1, 2, 3, 4, 5, 6, 7, 8, 0, 17, 0, 10])
        udp = bytes([0, 1, 0, 2, 0, 10, 0, 0]) + b"ab"
        words = pseudo + udp
        s = sum(struct.unpack("!11H", words))
        while s >> 16:
            s = (s & 0xFFFF) + (s >> 16)
        self.assertEqual(struct.unpack("!H", out[40:42])[0], ~s & 0xFFFF)
        q = Program(base, [dict(type="fix_checksum_ipv4", pkt_offset=14)])
        self.assertEqual(q.packet(0)[24:26], out[24:26])
        self.assertEqual(q.packet(0)[40:42], b"\0\0", "fix_checksum_ipv4 leaves UDP alone")

    def test_the_librarys_own_packet_and_program(self):
        vm = STLVM()
        vm.var(name="d", min_value=1, max_value=3, size=4, op="inc")
        vm.write(fv_name="d", pkt_offset="IP.dst")
        vm.fix_chksum()
        s = STLStream(packet=STLPktBuilder(pkt=Ether() / IP(src="9.9.9.9", dst="0.0.0.0") / UDP(), vm=vm),
                      mode=STLTXCont(pps=1))
        p = pcapexport.program_of(s)
        for k, want in enumerate(["0.0.0.1", "0.0.0.2", "0.0.0.3", "0.0.0.1"]):
            ip = l3(p.packet(k))
            self.assertEqual(ip.dst, want)
            ref = IP(bytes(ip))
            del ref.chksum
            self.assertEqual(ip.chksum, IP(bytes(ref)).chksum)

    def test_other_instructions_are_refused(self):
        bad = [
            [self.var(op="random")],
            [self.var(next_var="w")],
            [dict(type="trim_pkt_size", name="v")],
            [dict(type="flow_var_rand_limit", name="v")],
            [dict(type="write_mask_flow_var", name="v")],
            [self.var(), self.write(off=2)],  # 4 bytes at offset 2 of 4
            [self.write()],  # undefined variable
            [dict(type="fix_checksum_hw", l2_len=14, l3_len=20, l4_type=99)],
        ]
        for prog in bad:
            with self.subTest(prog=prog):
                with self.assertRaises(VmError):
                    Program(bytes(4), prog)

    def test_a_random_stream_is_refused_not_exported_as_its_base(self):
        vm = STLVM()
        vm.var(name="d", min_value=1, max_value=3, size=4, op="random")
        vm.write(fv_name="d", pkt_offset="IP.dst")
        s = STLStream(packet=STLPktBuilder(pkt=Ether() / IP() / UDP(), vm=vm), mode=STLTXCont(pps=1))
        with self.assertRaisesRegex(VmError, "random"):
            pcapexport.packets([s], 1)


if __name__ == "__main__":
    unittest.main()
