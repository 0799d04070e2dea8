"""The reconf recipe of deploy/bench/reconf.sh, in CI: the IPv4 routing
profile's packets replayed endlessly through the plan's tables while
fwd-trex's own reconf batches (route changes via a third port, rule-set
replacements ending in a permit) are applied. What holds regardless of
timing: every batch is accepted, nothing is dropped, the traffic keeps
flowing out of the right port, and not one of its frames leaves on the
third port (its tx pcap). The bench measures the Mpps; this proves the
recipe and the no-wrong-port property.
"""

import ipaddress
import os
import subprocess
import sys
import tempfile
import unittest

import lbr_trex_client  # noqa: F401  (first: puts `trex` on sys.path)
from trex.stl.api import STLProfile

from fwdtrex import appliance, daemon, fwdstats, pcapexport, plans
from tests.test_replay import PROFILES

SKIP = daemon.why_not_runnable()

FWD_TREX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fwd-trex")


@unittest.skipIf(SKIP, SKIP)
class ReconfRecipe(unittest.TestCase):
    def test_churn_under_replay_sends_nothing_to_the_wrong_port(self):
        with tempfile.TemporaryDirectory(prefix="fwdtrex-reconf-") as t:
            os.chmod(t, 0o755)
            prof = STLProfile.load_py(os.path.join(PROFILES, "ip4_routing.py"), direction=0,
                                      port_id=0, size=64, dests=1000, flows=256)
            traffic = os.path.join(t, "traffic.pcap")
            pcapexport.export(prof.get_streams(), 256, traffic)
            saved = os.path.join(t, "tables.conf")
            with open(saved, "w") as f:
                f.write(appliance.saved_state_text(appliance.Test("ip4", directions=(0,))))
            cfg = os.path.join(t, "fwd.yaml")
            sock = os.path.join(t, "fwd.sock")
            wrong = os.path.join(t, "wrong.pcap")
            with open(cfg, "w") as f:
                f.write(appliance.reconf_config(traffic, wrong, sock, saved, t,
                                                tag=f"rc{os.getpid()}", hugepages=False,
                                                memory_mb=256))
            ok, out = daemon.check(cfg)
            self.assertTrue(ok, out)
            batches = {}
            for kind, args in (("routes", ["--routes", "4000", "--via", appliance.WRONG_V4[1],
                                           "--dev", appliance.WRONG_PORT]),
                               ("rules", ["--rules", "500"])):
                batches[kind] = os.path.join(t, kind)
                subprocess.run([sys.executable, FWD_TREX, "batch", kind, *args, "-o", batches[kind]],
                               check=True, capture_output=True, timeout=120)
            with daemon.Fwd(cfg, sock, t) as fwd:
                before = fwd.stats()
                for _ in range(3):
                    fwd.ctl.run(["-b", batches["routes"]])
                    fwd.ctl.run(["-b", batches["rules"]])
                # Traffic flowed after the last change (a deadline, not a sleep
                # that the result depends on).
                mark = fwd.stats()["rx_packets"]
                after = fwd.wait_for(lambda s: s["rx_packets"] > mark + 10_000,
                                     "10,000 more packets after the last change", timeout=120)
                rules = fwd.ctl.json("rule", "show")
            fwd.stop()
            frames = pcapexport.read_pcap(wrong)

        self.assertEqual(len(rules), 500, "the last rule set is in place, whole")
        self.assertEqual(fwdstats.drops(after), {}, "nothing dropped")
        tx = fwdstats.port_tx(after)
        self.assertGreater(tx[plans.PORTS[1]], fwdstats.port_tx(before)[plans.PORTS[1]])
        block = ipaddress.ip_network(plans.dst_block(4, 0))
        misrouted = [f for f in frames if len(f) >= 34 and f[12:14] == b"\x08\x00"
                     and ipaddress.ip_address(f[30:34]) in block]
        self.assertEqual(misrouted, [], "frames of the traffic on the wrong port")
        self.assertEqual(tx.get(appliance.WRONG_PORT, 0), len(frames))


if __name__ == "__main__":
    unittest.main()
