"""The profiles' packets through the real fwd, on net_pcap ports, with the
tables the matching test configures (fwdtrex.appliance, from the same plan).

For each case: export the first packets of both directions' streams to
in0.pcap / in1.pcap (TRex ports 0 and 1), start fwd (finite rx pcaps, read
once; a tx pcap per port), wait until every packet is forwarded or dropped
(a deadline on the counters), read `fwdctl --json stats`, stop it; then
assert the exact forwarded count per port, the exact drops by reason, and
that the tx pcaps hold exactly the input of the other direction rewritten:
the far TRex port's MAC as destination, the appliance port's as source,
TTL / hop limit - 1 (IPv4 checksum updated), nothing else changed.

Needs root (DPDK) and the built binaries (target/debug or $FWD_BIN_DIR).
"""

import os
import struct
import tempfile
import unittest

import lbr_trex_client  # noqa: F401  (first: puts `trex` on sys.path)
from trex.stl.api import STLProfile

from fwdtrex import appliance, daemon, fwdstats, pcapexport, plans

PROFILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "profiles")
CORPUS = {4: "routing/ipv4_fulltable_gaissmai.txt.gz", 6: "routing/ipv6_fulltable_gaissmai.txt"}


SKIP = daemon.why_not_runnable()


def mac_bytes(m):
    return bytes(int(x, 16) for x in m.split(":"))


def ipv4_csum(hdr):
    s = sum(struct.unpack(f"!{len(hdr) // 2}H", hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def forwarded(frame, dst_mac, src_mac):
    """What the appliance must send for `frame`: written independently of
    the code under test."""
    f = bytearray(frame)
    f[0:6] = dst_mac
    f[6:12] = src_mac
    ethertype = struct.unpack("!H", f[12:14])[0]
    if ethertype == 0x0800:
        ihl = (f[14] & 0x0F) * 4
        f[22] -= 1
        f[24:26] = b"\0\0"
        f[24:26] = struct.pack("!H", ipv4_csum(bytes(f[14:14 + ihl])))
    elif ethertype == 0x86DD:
        f[21] -= 1
    else:
        raise AssertionError(f"not IP: {ethertype:#x}")
    return bytes(f)


class Case:
    def __init__(self, name, profile, tunables, test, n, family=4):
        self.name = name
        self.profile = profile
        self.tunables = tunables
        self.test = test
        self.n = n
        self.family = family


@unittest.skipIf(SKIP is not None, SKIP or "")
class Replay(unittest.TestCase):
    def run_case(self, case, expect_drops=None, forwarded_dirs=(0, 1)):
        """Runs one case; returns (stats, inputs, outputs). expect_drops:
        {reason: packets} (default none); forwarded_dirs: the directions
        whose packets must all come out of the far port."""
        with tempfile.TemporaryDirectory(prefix=f"fwdtrex-{case.name}-") as t:
            os.chmod(t, 0o755)
            inputs = []
            for d in (0, 1):
                prof = STLProfile.load_py(os.path.join(PROFILES, case.profile + ".py"), direction=d,
                                          port_id=d, **case.tunables)
                pk = pcapexport.export(prof.get_streams(), case.n, os.path.join(t, f"in{d}.pcap"))
                inputs.append([b for _, _, b in pk])
                self.assertEqual(len(inputs[d]), case.n)
            tag = f"{case.name}{os.getpid()}"
            sock = os.path.join(t, "fwd.sock")
            saved = os.path.join(t, "tables.conf")
            with open(saved, "w") as f:
                f.write(appliance.saved_state_text(case.test))
            cfg = os.path.join(t, "fwd.yaml")
            with open(cfg, "w") as f:
                f.write(appliance.pcap_config(
                    tag, [os.path.join(t, f"in{d}.pcap") for d in (0, 1)],
                    [os.path.join(t, f"out{d}.pcap") for d in (0, 1)], sock, saved, t))
            ok, out = daemon.check(cfg)
            self.assertTrue(ok, out)
            total = 2 * case.n
            with daemon.Fwd(cfg, sock, t) as fwd:
                stats = fwd.wait_accounted(total)
                ports = {p["name"]: p for p in fwd.ctl.json("port", "show")}
            fwd.stop()
            outputs = [pcapexport.read_pcap(os.path.join(t, f"out{d}.pcap")) for d in (0, 1)]

        self.assertEqual(stats["rx_packets"], total)
        self.assertEqual(fwdstats.drops(stats), expect_drops or {}, "drops by reason")
        want_tx = {plans.PORTS[plans.other(d)]: (case.n if d in forwarded_dirs else 0) for d in (0, 1)}
        self.assertEqual(fwdstats.port_tx(stats), want_tx, "forwarded per port")
        for d in (0, 1):
            o = plans.other(d)
            want = []
            if d in forwarded_dirs:
                want = [forwarded(f, mac_bytes(plans.TREX_MAC[o]), mac_bytes(ports[plans.PORTS[o]]["mac"]))
                        for f in inputs[d]]
            self.assertEqual(len(outputs[o]), len(want), f"frames out of {plans.PORTS[o]}")
            for k, (got, exp) in enumerate(zip(outputs[o], want)):
                self.assertEqual(got, exp, f"direction {d}, packet {k}: out of {plans.PORTS[o]}")
        return stats, inputs, outputs

    # Routing.
    def test_ip4_64b_1k_destinations(self):
        self.run_case(Case("r4a", "ip4_routing", dict(size=64, dests=1000, flows=100),
                           appliance.Test("ip4"), 1000))

    def test_ip4_imix_10k_destinations_10k_flows(self):
        self.run_case(Case("r4b", "ip4_routing", dict(size="imix", dests=10000, flows=10000),
                           appliance.Test("ip4"), 600))

    def test_ip4_1m_destinations(self):
        self.run_case(Case("r4c", "ip4_routing", dict(size=64, dests=1000000, flows=100),
                           appliance.Test("ip4"), 512))

    def test_ip6_78b_1k_destinations(self):
        self.run_case(Case("r6a", "ip6_routing", dict(size=78, dests=1000, flows=100),
                           appliance.Test("ip6"), 1000, family=6))

    def test_ip6_imix_1m_destinations_10k_flows(self):
        self.run_case(Case("r6b", "ip6_routing", dict(size="imix", dests=1000000, flows=10000),
                           appliance.Test("ip6"), 600, family=6))

    def test_ip4_with_a_generated_full_view(self):
        fv = plans.generated_full_view(4, 20000)
        self.run_case(Case("fvg", "ip4_routing", dict(size=64, dests=10000, flows=100),
                           appliance.Test("ip4", full_view=fv), 512))

    def test_ip6_with_a_generated_full_view(self):
        fv = plans.generated_full_view(6, 5000)
        self.run_case(Case("fvg6", "ip6_routing", dict(size=78, dests=10000, flows=100),
                           appliance.Test("ip6", full_view=fv), 512, family=6))

    def corpus_full_view(self, family, size):
        data = os.environ.get("FWD_DATA")
        path = os.path.join(data, CORPUS[family]) if data else None
        if not path or not os.path.exists(path):
            self.skipTest(f"the full-view corpus is not here: FWD_DATA unset or without {CORPUS[family]}")
        fv = appliance.read_prefixes(path)
        self.run_case(Case(f"fvc{family}", f"ip{family}_routing", dict(size=size, dests=1000000, flows=100),
                           appliance.Test(f"ip{family}", full_view=fv), 512, family=family))

    def test_ip4_with_the_corpus_full_view(self):
        self.corpus_full_view(4, 64)

    def test_ip6_with_the_corpus_full_view(self):
        self.corpus_full_view(6, 78)

    # The iacl matrix.
    def test_acl_matrix(self):
        for deny, flows in ((1, 100), (10, 100), (50, 100), (50, 10000)):
            with self.subTest(deny=deny, flows=flows):
                self.run_case(Case(f"acl{deny}x{flows}", "acl_iacl", dict(flows=flows),
                                   appliance.Test("acl", deny=deny), 400))

    # Latency streams of both families.
    def test_latency_streams(self):
        for fam in (4, 6):
            with self.subTest(family=fam):
                self.run_case(Case(f"lat{fam}", "latency", dict(family=fam), appliance.Test("latency"), 64,
                                   family=fam))

    # Negative cases: the checks above can fail.
    def test_without_the_permit_everything_drops_as_acl_drop(self):
        self.run_case(Case("aclneg", "acl_iacl", dict(flows=100), appliance.Test("acl", deny=10, permit=False),
                           300), expect_drops={"acl_drop": 600}, forwarded_dirs=())

    def test_a_direction_without_its_routes_drops_as_no_route(self):
        self.run_case(Case("rneg", "ip4_routing", dict(size=64, dests=1000, flows=100),
                           appliance.Test("ip4", directions=(0,)), 300),
                      expect_drops={"no_route": 300}, forwarded_dirs=(0,))


class ApplianceConfig(unittest.TestCase):
    """The bare-metal configs appliance.py writes pass `fwd --check`, and
    what it refuses it refuses with a reason."""

    def fwd_check(self, config_for):
        """`fwd --check` of config_for(socket path), written to a scratch
        directory: (ok, output)."""
        with tempfile.TemporaryDirectory() as t:
            cfg = os.path.join(t, "fwd.yaml")
            with open(cfg, "w") as f:
                f.write(config_for(os.path.join(t, "s")))
            return daemon.check(cfg)

    @unittest.skipIf(not daemon.have_binaries(), "fwd is not built: run `cargo build --workspace --bins`")
    def test_bare_metal_configs_pass_fwd_check(self):
        # fwd --check also checks that the CPUs are this machine's: CPU 1.
        for lcores, cpus, queues, huge in (([1], None, 1, True), ([1, 2, 3], [1, 1, 1], 3, True),
                                           ([2, 3], [1, 1], 4, False)):
            with self.subTest(lcores=lcores, queues=queues, hugepages=huge):
                ok, out = self.fwd_check(lambda sock: appliance.bare_metal_config(
                    ["0000:3b:00.0", "0000:3b:00.1"], lcores, queues, huge, cpus=cpus, socket=sock))
                self.assertTrue(ok, out)

    @unittest.skipIf(not daemon.have_binaries(), "fwd is not built: run `cargo build --workspace --bins`")
    def test_fwd_check_refuses_a_broken_generated_config(self):
        # The check above can fail: a worker polling a queue the port lacks.
        ok, out = self.fwd_check(lambda sock: appliance.bare_metal_config(
            ["0000:3b:00.0", "0000:3b:00.1"], [1, 2], 2, True, cpus=[1, 1], socket=sock
        ).replace("rx_queues: 2", "rx_queues: 1", 1))
        self.assertFalse(ok, out)

    @unittest.skipIf(not daemon.have_binaries(), "fwd is not built: run `cargo build --workspace --bins`")
    def test_the_command_line_writes_a_checked_config_and_the_batch(self):
        with tempfile.TemporaryDirectory() as t:
            fv = os.path.join(t, "view.txt")
            with open(fv, "w") as f:
                f.write("8.8.8.0/24\n16.1.0.0/16\n")
            rc = appliance.main(["acl", "--out", t, "--pci", "0000:3b:00.0", "0000:3b:00.1",
                                 "--lcores", "1", "--deny", "10", "--full-view", fv,
                                 "--socket", os.path.join(t, "s")])
            self.assertEqual(rc, 0)
            ok, out = daemon.check(os.path.join(t, "fwd.yaml"))
            self.assertTrue(ok, out)
            with open(os.path.join(t, "tables.batch")) as f:
                batch = f.read().splitlines()
        self.assertEqual(batch, appliance.table_lines(appliance.Test("acl", full_view=["8.8.8.0/24"], deny=10)))
        self.assertIn("route add 8.8.8.0/24 via 192.168.11.2 dev p1", batch)

    def test_refusals(self):
        with self.assertRaisesRegex(ValueError, "idle"):
            appliance.bare_metal_config(["a", "b"], [2, 3, 4], 2)
        with self.assertRaisesRegex(ValueError, "also a worker"):
            appliance.bare_metal_config(["a", "b"], [0, 1], 2)
        with self.assertRaisesRegex(ValueError, "test must be"):
            appliance.Test("ip5")

    def test_batch_holds_the_plan(self):
        t = appliance.Test("acl", deny=50)
        lines = appliance.table_lines(t)
        self.assertEqual(sum(1 for x in lines if x.startswith("route add")), 2 * 16384)
        rules = [x for x in lines if x.startswith("rule add")]
        self.assertEqual(len(rules), 50 + 2 + 1)
        self.assertTrue(all("action drop" in r for r in rules[:50]))
        self.assertTrue(all("action permit" in r for r in rules[50:52]))
        self.assertTrue(rules[-1].endswith("action drop"))
        fv = appliance.Test("ip4", full_view=["16.0.0.0/8", "16.1.0.0/16", "8.8.8.0/24", "48.0.0.0/24"])
        lines = appliance.table_lines(fv)
        # 16.1.0.0/16 and 48.0.0.0/24 fall inside the blocks: left out; the
        # covering 16.0.0.0/8 stays.
        self.assertIn("route add 16.0.0.0/8 via 192.168.11.2 dev p1", lines)
        self.assertIn("route add 8.8.8.0/24 via 192.168.11.2 dev p1", lines)
        self.assertNotIn("route add 16.1.0.0/16 via 192.168.11.2 dev p1", lines)
        self.assertEqual([x for x in lines if x.startswith("route add 48.0.0.0/24 ")],
                         ["route add 48.0.0.0/24 via 192.168.10.2 dev p0"])


if __name__ == "__main__":
    unittest.main()
