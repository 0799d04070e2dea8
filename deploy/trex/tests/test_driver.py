"""fwd-trex, the driver: dry runs as a subprocess against the library's API
objects (no server); every mode end to end against a FAKE STLClient (a
test double standing in for a TRex server, with a hard capacity); and
fwdstats / the reconf batches against the REAL fwd daemon on pcap ports
(root and the built binaries; fwdtrex.daemon starts it: FWD_BIN_DIR
overrides target/debug)."""

import contextlib
import glob
import importlib.machinery
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import lbr_trex_client  # noqa: F401  (puts `trex` on sys.path)
from trex.utils.parsing_opts import decode_multiplier

from fwdtrex import daemon, fwdstats, measure, reconf

HERE = os.path.dirname(os.path.abspath(__file__))
TREX_DIR = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(TREX_DIR))
FWD_TREX = os.path.join(TREX_DIR, "fwd-trex")
PROFILES = os.path.join(TREX_DIR, "profiles")

TINY = '''
import argparse
from trex.stl.api import *

class Tiny:
    """Test profile: one UDP stream per direction and a latency stream."""
    def get_streams(self, tunables=(), direction=0, port_id=0, **kwargs):
        p = argparse.ArgumentParser(prog="tiny")
        p.add_argument("--size", type=int, default=64)
        p.add_argument("--latency", type=int, default=1)
        p.add_argument("--traffic", type=int, default=1)
        a = p.parse_args(list(tunables))
        src, dst = ("16.0.0.1", "10.1.0.1") if direction == 0 else ("10.1.0.1", "16.0.0.1")
        base = Ether() / IP(src=src, dst=dst) / UDP(sport=1025, dport=12)
        pkt = STLPktBuilder(pkt=base / ("x" * max(0, a.size - 4 - len(base))))
        s = [STLStream(packet=pkt, mode=STLTXCont(pps=900), name="udp")] if a.traffic else []
        if a.latency:
            s.append(STLStream(packet=pkt, mode=STLTXCont(pps=100), name="lat",
                               flow_stats=STLFlowLatencyStats(pg_id=7 + direction)))
        return s

def register():
    return Tiny()
'''

# A real hdrh string (see test_search.HDRH_A): p99 100 usec, p99.99 778239.
HDRH_A = "HISTFAAAADB4nJNpmSzMwMAgwAABzFCaEUzOmNZg/wEiwHmBn/sF+1rGlJuCTNunMDIBAL7BCWY="


def fwd_trex(*args, cwd=None):
    return subprocess.run(
        [sys.executable, FWD_TREX, *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


class Scratch(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="fwd-trex-test-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.tiny = os.path.join(self.dir, "tiny.py")
        with open(self.tiny, "w") as f:
            f.write(TINY)


class DryRun(Scratch):
    def test_ndrpdr_dry_run_shows_streams_and_the_search(self):
        r = fwd_trex("ndrpdr", "--profile", self.tiny, "-t", "size=128", "--dry-run",
                     "--min-rate", "1k", "--max-rate", "2M")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        # The library built the packets: 128 B with the tunable.
        self.assertIn("port 0: udp: 128 B", out)
        self.assertIn("port 1: udp: 128 B", out)
        self.assertIn("2 latency stream(s) left out", out)
        self.assertIn("client: STLClient for localhost:4501", out)
        self.assertIn("1,000 to 2,000,000 pps", out)
        self.assertEqual(out.count("(final)"), 2)
        self.assertIn("fwdctl --json stats", out)

    def test_latency_and_reconf_dry_runs(self):
        r = fwd_trex("latency", "--profile", self.tiny, "--pdr", "1M", "--dry-run")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("latency trial: 0.9 x 1,000,000 pps, 10 s, pg_id [7, 8]", r.stdout)
        self.assertNotIn("targets", r.stdout)  # the PDR is given: no search
        # Latency streams from a profile of their own, beside traffic without any.
        r = fwd_trex("latency", "--profile", self.tiny, "-t", "latency=0", "--pdr", "1M",
                     "--latency-profile", self.tiny, "-l", "size=100", "-l", "traffic=0",
                     "--pg-id", "8",
                     "--dry-run")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("port 1: lat: 100 B", r.stdout)
        self.assertNotIn("port 0: lat", r.stdout)  # pg_id 7 was not asked for
        self.assertIn("pg_id [8]", r.stdout)
        r = fwd_trex("latency", "--profile", self.tiny, "--pdr", "1M",
                     "--latency-profile", self.tiny, "--dry-run")
        self.assertEqual(r.returncode, 2, r.stdout)
        self.assertIn("has streams without latency flow stats", r.stderr)
        r = fwd_trex("reconf", "--profile", self.tiny, "--rate", "500k", "--via", "10.9.0.2",
                     "--dev", "out", "--dir", "ab", "--dry-run")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("senders [0]", r.stdout)
        self.assertIn("100000 route changes from 20.0.0.0/24 (100000 lines)", r.stdout)
        self.assertIn("rule set of 10000 replaced (10001 lines)", r.stdout)
        self.assertIn("no action (baseline)", r.stdout)

    def test_bad_input_is_one_line_and_exit_2(self):
        cases = [
            (["ndrpdr", "--profile", self.tiny, "-t", "bogus=1"],
             "refused the tunables {'bogus': '1'}: tiny: error: unrecognized arguments: --bogus 1"),
            (["ndrpdr", "--profile", self.tiny, "-t", "size"], "expected NAME=VALUE"),
            (["ndrpdr", "--profile", os.path.join(self.dir, "none.py")], "does not exist"),
            (["ndrpdr", "--profile", self.tiny, "--min-rate", "5M", "--max-rate", "1M"], "rates"),
            (["ndrpdr", "--profile", self.tiny, "--width", "2"], "width"),
            (["latency", "--profile", self.tiny, "-t", "latency=0"], "no latency stream"),
            (["reconf", "--profile", self.tiny, "--rate", "1M"], "--via and --dev"),
            (["latency", "--profile", self.tiny, "--duration", "0"], "--duration 0: must be"),
            (["reconf", "--profile", self.tiny, "--rate", "1M", "--via", "10.9.0.2",
              "--dev", "out", "--settle", "-1"], "--settle -1: must be"),
            (["reconf", "--profile", self.tiny, "--rate", "1M", "--via", "10.9.0.2",
              "--dev", "out", "--settle", "40"], "must be shorter than --duration"),
            (["reconf", "--profile", self.tiny, "--rate", "1M", "--routes-batch",
              os.path.join(self.dir, "none.batch")], "No such file"),
        ]
        for argv, word in cases:
            with self.subTest(argv=argv):
                r = fwd_trex(*argv, "--dry-run")
                self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                said = r.stderr.strip().splitlines()
                self.assertEqual(len(said), 1, r.stderr)
                last = said[0]
                self.assertTrue(last.startswith("fwd-trex: "), last)
                self.assertIn(word, last)

    def test_an_unwritable_results_path_is_refused_before_any_trial(self):
        blocker = os.path.join(self.dir, "file")
        open(blocker, "w").close()
        r = fwd_trex("ndrpdr", "--profile", self.tiny, "--no-fwd-stats",
                     "--sync-port", "9", "--out", os.path.join(blocker, "sub", "r"))
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("Not a directory", r.stderr)
        self.assertNotIn("cannot reach", r.stderr)  # refused before connecting
        r = fwd_trex("batch", "rules", "-o", os.path.join(blocker, "x.batch"))
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        r = fwd_trex("batch", "rules", "--rules", "3", "-o", "-")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines()[0], "rule flush")
        self.assertEqual(len(r.stdout.splitlines()), 4)

    def test_the_route_changes_take_their_next_hop_from_the_plan(self):
        ip4 = os.path.join(PROFILES, "ip4_routing.py")

        def first_route(*argv):
            r = fwd_trex("batch", "routes", "--routes", "2", "-o", "-", *argv)
            self.assertEqual(r.returncode, 0, r.stderr)
            return r.stdout.splitlines()[0]

        # Direction 0 (A) sends first: its traffic leaves by p1 to TRex port 1.
        self.assertEqual(first_route("--profile", ip4),
                         "route replace 20.0.0.0/24 via 192.168.11.2 dev p1")
        self.assertEqual(first_route("--profile", ip4, "--dir", "ab"),
                         "route replace 20.0.0.0/24 via 192.168.11.2 dev p1")
        self.assertEqual(first_route("--profile", ip4, "--dir", "ba"),
                         "route replace 20.0.0.0/24 via 192.168.10.2 dev p0")
        # The options override the plan, each on its own.
        self.assertEqual(first_route("--profile", ip4, "--via", "10.9.0.2", "--dev", "out"),
                         "route replace 20.0.0.0/24 via 10.9.0.2 dev out")
        self.assertEqual(first_route("--profile", ip4, "--via", "192.168.11.3"),
                         "route replace 20.0.0.0/24 via 192.168.11.3 dev p1")
        # Not one of ours (or no profile at all): nothing to default from.
        for argv in (["--profile", self.tiny], []):
            with self.subTest(argv=argv):
                r = fwd_trex("batch", "routes", "-o", "-", *argv)
                self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                self.assertIn("--via and --dev", r.stderr)
                self.assertEqual(r.stdout, "")
        # reconf with one of ours needs neither.
        r = fwd_trex("reconf", "--profile", ip4, "--rate", "500k", "--dry-run")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("100000 route changes from 20.0.0.0/24", r.stdout)

    def test_unreachable_server_is_exit_1(self):
        # Port 9 (discard): nothing answers TRex's RPC there.
        r = fwd_trex("ndrpdr", "--profile", self.tiny, "--server", "127.0.0.1",
                     "--sync-port", "9", "--async-port", "10", "--no-fwd-stats",
                     "--out", os.path.join(self.dir, "r"))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("cannot reach the TRex server at 127.0.0.1:9", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "r.json")))

    def test_without_the_library_it_says_what_to_run(self):
        # A copy of the script where no target/trex-venv exists, run by a
        # Python without the TRex library: a clear error, exit 2.
        py = shutil.which("python3")
        if not py:
            self.skipTest("no python3 on PATH")
        probe = subprocess.run([py, "-c", "import lbr_trex_client"], capture_output=True)
        if probe.returncode == 0:
            self.skipTest(f"{py} has the TRex library installed: nothing to refuse")
        where = os.path.join(self.dir, "deploy", "trex")
        os.makedirs(where)
        shutil.copy(FWD_TREX, where)
        r = subprocess.run([py, os.path.join(where, "fwd-trex"), "ndrpdr", "--dry-run"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("run deploy/setup.sh", r.stderr)
        self.assertIn("target/trex-venv/bin/python", r.stderr)

    def test_the_repository_profiles_dry_run(self):
        found = sorted(p for p in glob.glob(os.path.join(PROFILES, "*.py"))
                       if not os.path.basename(p).startswith("_"))
        if not found:
            self.skipTest(f"no profiles in {PROFILES} yet (another part of issue 13 writes them)")
        for prof in found:
            with self.subTest(profile=os.path.basename(prof)):
                r = fwd_trex("ndrpdr", "--profile", prof, "--dry-run")
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertIn("(final)", r.stdout)


def load_cli():
    """fwd-trex as a module (it has no .py suffix)."""
    loader = importlib.machinery.SourceFileLoader("fwd_trex_cli", FWD_TREX)
    spec = importlib.util.spec_from_loader("fwd_trex_cli", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


class FakeTrex:
    """TEST DOUBLE for STLClient: ports 0 and 1 joined by a device that
    forwards at most `capacity` pps in all; loss is shared by the senders
    in proportion. Latency pg_ids get a fixed summary with a real hdrh."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.streams = {}
        self.stats = {}
        self.calls = []
        self.running = None
        self.latency_started = []

    def connect(self):
        self.calls.append("connect")

    def disconnect(self):
        self.calls.append("disconnect")

    def get_server_version(self):
        return {"version": "fake-trex"}

    def reset(self, ports):
        self.streams = {p: [] for p in ports}
        self.calls.append(("reset", tuple(ports)))

    def set_port_attr(self, ports, promiscuous):
        self.calls.append(("promiscuous", tuple(ports), promiscuous))

    def add_streams(self, streams, ports):
        for p in ports:
            self.streams.setdefault(p, []).extend(streams)

    def clear_stats(self, ports):
        self.stats = {p: {"opackets": 0, "ipackets": 0} for p in ports}

    def start(self, ports, mult, total, duration, force):
        if all(isinstance(p, str) and p.endswith(".lat") for p in ports):
            # The latency profiles: at their configured rate, under load.
            assert mult == "1" and not total and self.running, (ports, mult)
            self.latency_started.append(list(ports))
            return
        m = decode_multiplier(mult, allow_update=False, divide_count=len(ports))
        assert m and m["type"] == "pps" and total, mult
        self.running = (list(ports), m["value"], duration)

    def wait_on_traffic(self, ports, timeout, rx_delay_ms):
        senders, per_port, duration = self.running
        offered = per_port * len(senders)
        share = min(1.0, self.capacity / offered)
        for p in senders:
            sent = int(round(per_port * duration))
            self.stats[p]["opackets"] += sent
            self.stats[1 - p]["ipackets"] += int(sent * share)
        self.running = None

    def get_stats(self, ports):
        out = {p: dict(self.stats[p]) for p in ports}
        pgs = {s.get_pg_id() for p in (self.latency_started[-1] if self.latency_started else [])
               for s in self.streams[p]
               if s.has_flow_stats() and s.get_flow_stats_type() == "latency"}
        out["latency"] = {"global": {"old_flow": 0, "bad_hdr": 0}}
        for pg in pgs:
            out["latency"][pg] = {
                "err_cntrs": {"dropped": 0, "dup": 0},
                "latency": {"total_min": 3, "total_max": 800000, "average": 9.5,
                            "jitter": 1, "histogram": {10: 5}, "hdrh": HDRH_A},
            }
        return out

    def stop(self, ports):
        self.calls.append("stop")


class AgainstAFakeServer(Scratch):
    CAP = 1_000_000
    # 1 s trials, decided after 1 s of them; a generous bound on the search.
    SHORT_TRIALS = ("--final-duration", "1", "--duration-sum", "1", "--max-search-time", "300")

    def run_cli(self, fake, *argv):
        cli = load_cli()
        orig = measure.make_client
        measure.make_client = lambda *a, **k: fake
        self.addCleanup(setattr, measure, "make_client", orig)
        base = os.path.join(self.dir, "out")
        with contextlib.redirect_stdout(io.StringIO()) as out:
            rc = cli.main(list(argv) + ["--profile", self.tiny, "--out", base])
        self.assertIn(f"results: {base}.json", out.getvalue())
        self.assertEqual(rc, 0)
        with open(base + ".json") as f:
            doc = json.load(f)
        with open(base + ".md") as f:
            md = f.read()
        return doc, md

    def test_ndrpdr(self):
        fake = FakeTrex(self.CAP)
        doc, md = self.run_cli(
            fake, "ndrpdr", "--no-fwd-stats", "--min-rate", "10k", "--max-rate", "4M",
            "--initial-duration", "1", *self.SHORT_TRIALS,
        )
        ndr = doc["search"]["ndr"]
        self.assertLessEqual(ndr["lower_bound"], self.CAP)
        self.assertGreater(ndr["upper_bound"], self.CAP)
        self.assertGreaterEqual(ndr["rate"], self.CAP * (1 - 0.005))
        self.assertEqual(doc["versions"]["trex_server"], "fake-trex")
        self.assertEqual(doc["versions"]["trex_client"], "3.4.0")
        self.assertEqual(doc["command"][:2], ["fwd-trex", "ndrpdr"])
        # The search ran traffic streams only, on both ports.
        self.assertEqual(sorted(s.get_name() for s in fake.streams[0]), ["udp"])
        self.assertEqual(fake.calls[-2:], ["stop", "disconnect"])
        self.assertIn("| NDR | 0 |", md)
        self.assertIn("| PDR | 0.005 |", md)

    def test_an_unreadable_appliance_fails_before_any_traffic(self):
        fake = FakeTrex(self.CAP)
        cli = load_cli()
        orig = measure.make_client
        measure.make_client = lambda *a, **k: fake
        self.addCleanup(setattr, measure, "make_client", orig)
        with self.assertRaisesRegex(cli.Failed, "not found"):
            with contextlib.redirect_stdout(io.StringIO()):
                cli.main(["ndrpdr", "--profile", self.tiny, "--out", os.path.join(self.dir, "r"),
                          "--fwdctl", os.path.join(self.dir, "no-such-fwdctl")])
        self.assertIsNone(fake.running)
        self.assertNotIn("reset", [c[0] for c in fake.calls if isinstance(c, tuple)])
        self.assertEqual(fake.calls[-2:], ["stop", "disconnect"])

    def test_one_direction_counts_what_the_peer_received(self):
        # Only A sends; everything below capacity arrives at B: no loss even
        # at the maximum rate. (Reading A's own RX would be 100 % loss.)
        fake = FakeTrex(self.CAP)
        doc, _ = self.run_cli(
            fake, "ndrpdr", "--no-fwd-stats", "--dir", "ab", "--min-rate", "10k",
            "--max-rate", "900k", *self.SHORT_TRIALS,
        )
        for goal in ("ndr", "pdr"):
            self.assertEqual(doc["search"][goal]["limit"], "clean_at_max", goal)
        t = doc["search"]["trials"][0]
        self.assertEqual(t["directions"], [
            {"tx_port": 0, "rx_port": 1, "offered": 900_000, "received": 900_000}
        ])
        self.assertNotIn(1, fake.streams and [p for p, ss in fake.streams.items() if ss])

    def test_latency_at_fractions_of_the_pdr_searched(self):
        fake = FakeTrex(self.CAP)
        doc, _ = self.run_cli(fake, "latency", "--no-fwd-stats", "--max-rate", "4M",
                              "--fractions", "0.5", "--max-search-time", "300")
        pdr = doc["search"]["pdr"]["rate"]
        self.assertEqual(doc["pdr"], pdr)
        self.assertGreaterEqual(pdr, self.CAP * (1 - 0.005))
        self.assertLessEqual(pdr, self.CAP / (1 - 0.005))
        self.assertEqual([r["rate"] for r in doc["latency"]], [round(0.5 * pdr, 3)])
        # The search ran without the latency streams, the latency trial with.
        self.assertEqual(fake.latency_started, [["0.lat", "1.lat"]])

    def test_latency_at_fractions_of_a_given_pdr(self):
        fake = FakeTrex(self.CAP)
        doc, md = self.run_cli(fake, "latency", "--no-fwd-stats", "--pdr", "800k",
                               "--duration", "2")
        self.assertNotIn("search", doc)
        rates = [r["rate"] for r in doc["latency"]]
        self.assertEqual(rates, [80_000.0, 400_000.0, 720_000.0])
        first = doc["latency"][0]
        self.assertEqual(sorted(first["latency"]), ["7", "8"])
        lat = first["latency"]["7"]
        self.assertEqual(lat["percentiles_from"], "hdrh")
        self.assertEqual(lat["percentiles_us"]["p99"], 100)
        self.assertEqual(lat["max_us"], 800000)
        # Latency streams ran beside the traffic, in their own TRex profile.
        self.assertEqual([s.get_name() for s in fake.streams[1]], ["udp"])
        self.assertEqual([s.get_name() for s in fake.streams["1.lat"]], ["lat"])
        self.assertEqual(fake.latency_started, [["0.lat", "1.lat"]] * 3)
        self.assertIn("| 0.9 | 720,000 | 8 |", md)


class FwdstatsInput(unittest.TestCase):
    """What fwdctl prints is data: a shape that is not ctl's StatsReport is
    a one-line FwdctlError, never a traceback or a guessed zero."""

    GOOD = {"stats": {"uptime_ms": 5, "rx_packets": 3, "tx_packets": 2, "dropped": 1,
                      "drops": [{"reason": "no_route", "packets": 1}],
                      "lcores": [],
                      "ports": [{"name": "p0", "rx_packets": 3, "rx_bytes": 180,
                                 "tx_packets": 2, "tx_bytes": 120}]}}

    def test_optional_fields_default_to_zero(self):
        s = fwdstats.parse_stats(json.dumps(self.GOOD))
        self.assertEqual(s["ports"]["p0"]["rx_missed"], 0)
        self.assertEqual(s["events"], {})
        self.assertEqual(s["drops"], {"no_route": 1})

    def test_drops_port_tx_and_accounted(self):
        # Zero reasons are left out; ICMP errors sent count as port TX.
        s = fwdstats.parse_stats(json.dumps({"stats": dict(
            self.GOOD["stats"],
            drops=[{"reason": "no_route", "packets": 1}, {"reason": "acl_drop", "packets": 0}],
            ports=self.GOOD["stats"]["ports"] + [{"name": "p1", "rx_packets": 0, "rx_bytes": 0,
                                                  "tx_packets": 4, "tx_bytes": 240}])}))
        self.assertEqual(fwdstats.drops(s), {"no_route": 1})
        self.assertEqual(fwdstats.port_tx(s), {"p0": 2, "p1": 4})
        self.assertEqual(fwdstats.accounted(s), 7)

    def test_bad_shapes(self):
        def without(path):
            doc = json.loads(json.dumps(self.GOOD))
            obj = doc
            for k in path[:-1]:
                obj = obj[k]
            del obj[path[-1]]
            return json.dumps(doc)

        cases = [
            ("not json", "not JSON"),
            ("[]", "expected"),
            ('{"status": {}}', "expected"),
            (without(["stats", "uptime_ms"]), "uptime_ms: missing"),
            (without(["stats", "drops"]), "stats.drops"),
            (without(["stats", "ports", 0, "tx_bytes"]), "tx_bytes: missing"),
            (without(["stats", "drops", 0, "reason"]), "unexpected shape"),
            (json.dumps({"stats": dict(self.GOOD["stats"], rx_packets=-1)}), "not a counter"),
            (json.dumps({"stats": dict(self.GOOD["stats"], rx_packets="3")}), "not a counter"),
            (json.dumps({"stats": dict(self.GOOD["stats"], drops=[7])}), "unexpected shape"),
        ]
        for text, word in cases:
            with self.subTest(text=text[:60]):
                with self.assertRaisesRegex(fwdstats.FwdctlError, word):
                    fwdstats.parse_stats(text)


def write_pcap(path, frames):
    from scapy.utils import wrpcap

    wrpcap(path, frames)


@unittest.skipIf(daemon.why_not_runnable(), daemon.why_not_runnable() or "")
class AgainstTheRealDaemon(unittest.TestCase):
    """fwd on two net_pcap ports: `in` reads a finite pcap once, `out`
    holds the neighbour of 10.1.0.0/16. 5 packets are routed, 3 have no
    route, 2 are not IP: the counters must say exactly that."""

    ROUTED, NO_ROUTE, NOT_IP = 5, 3, 2

    @classmethod
    def setUpClass(cls):
        from trex.stl.api import IP, UDP, Ether

        cls.dir = tempfile.mkdtemp(prefix="fwd-trex-daemon-")
        cls.addClassCleanup(shutil.rmtree, cls.dir, True)
        os.chmod(cls.dir, 0o755)
        d = cls.dir
        ingress = "02:00:00:00:00:01"
        frames = []
        for i in range(cls.ROUTED):
            frames.append(Ether(dst=ingress) / IP(src="10.0.0.10", dst=f"10.1.0.{i + 1}")
                          / UDP(sport=1000, dport=2000) / ("x" * 18))
        for i in range(cls.NO_ROUTE):
            frames.append(Ether(dst=ingress) / IP(src="10.0.0.10", dst=f"10.99.0.{i + 1}")
                          / UDP(sport=1000, dport=2000) / ("x" * 18))
        for _ in range(cls.NOT_IP):
            frames.append(Ether(dst=ingress, type=0x88B5) / ("y" * 46))
        write_pcap(os.path.join(d, "in.pcap"), frames)
        write_pcap(os.path.join(d, "empty.pcap"), [])
        cls.sock = os.path.join(d, "fwd.sock")
        tag = f"fwdtrex{os.getpid()}"
        cfg = f"""eal:
  main_lcore: 0
  memory_mb: 256
  file_prefix: {tag}
ports:
  - {{name: in, device: 'net_pcap_in_{tag},rx_pcap={d}/in.pcap,tx_pcap={d}/in-tx.pcap', addresses: [10.0.0.1/24]}}
  - {{name: out, device: 'net_pcap_out_{tag},rx_pcap={d}/empty.pcap,tx_pcap={d}/out.pcap', addresses: [10.9.0.1/24]}}
workers:
  - {{lcore: 1, rx: [{{port: in}}, {{port: out}}]}}
neighbours:
  - {{ip: 10.9.0.2, mac: "02:00:00:00:09:02", port: out}}
routes:
  - {{prefix: 10.1.0.0/16, via: 10.9.0.2, dev: out}}
control:
  socket: {cls.sock}
"""
        with open(os.path.join(d, "fwd.yaml"), "w") as f:
            f.write(cfg)
        cls.fwd = daemon.Fwd(os.path.join(d, "fwd.yaml"), cls.sock, d)
        cls.addClassCleanup(cls.fwd.stop)
        cls.ctl = cls.fwd.ctl
        # Wait (generously) until every packet of the finite pcap was read.
        total = cls.ROUTED + cls.NO_ROUTE + cls.NOT_IP
        cls.fwd.wait_for(lambda s: s["ports"]["in"]["rx_packets"] >= total and s["rx_packets"] >= total,
                         f"all {total} packets of in.pcap read", timeout=120)

    def settled(self):
        """A snapshot once the worker has accounted every packet (drops and
        TX land a moment after RX)."""
        return self.fwd.wait_for(
            lambda s: s["ports"]["out"]["tx_packets"] >= self.ROUTED
            and s["ports"]["in"]["tx_packets"] >= self.NO_ROUTE
            and s["dropped"] >= self.NO_ROUTE + self.NOT_IP,
            "every packet accounted for", timeout=60)

    def test_the_real_stats_parse_to_exact_counts(self):
        s = self.settled()
        self.assertEqual(s["ports"]["in"]["rx_packets"], 10)
        self.assertEqual(s["ports"]["out"]["tx_packets"], self.ROUTED)
        # Each packet without a route is answered by an ICMP error on `in`.
        self.assertEqual(s["ports"]["in"]["tx_packets"], self.NO_ROUTE)
        self.assertEqual(s["events"]["icmp_errors"], self.NO_ROUTE)
        self.assertEqual(s["tx_packets"], self.ROUTED + self.NO_ROUTE)
        self.assertEqual(s["dropped"], self.NO_ROUTE + self.NOT_IP)
        nonzero = {k: v for k, v in s["drops"].items() if v}
        self.assertEqual(nonzero, {"no_route": self.NO_ROUTE, "not_ip": self.NOT_IP})
        # Every reason the daemon knows is listed, zero or not.
        self.assertIn("acl_drop", s["drops"])
        self.assertEqual(set(s["ports"]["in"]), set(fwdstats.PORT_COUNTERS))

    def test_diff_of_real_snapshots(self):
        s = self.settled()
        zero = dict(s, drops={k: 0 for k in s["drops"]}, events={k: 0 for k in s["events"]},
                    ports={p: {c: 0 for c in v} for p, v in s["ports"].items()},
                    rx_packets=0, tx_packets=0, dropped=0, uptime_ms=0)
        d = fwdstats.diff(zero, s)
        self.assertEqual(d["drops"], {"no_route": self.NO_ROUTE, "not_ip": self.NOT_IP})
        self.assertEqual(d["ports"]["out"]["tx_packets"], self.ROUTED)
        self.assertEqual(fwdstats.explain(d), "fwd dropped 5: no_route 3, not_ip 2")
        # Nothing new arrives: a later snapshot differs by nothing.
        later = self.ctl.snapshot()
        d = fwdstats.diff(s, later)
        self.assertEqual((d["dropped"], d["drops"], d["rx_packets"]), (0, {}, 0))
        self.assertGreaterEqual(d["interval_ms"], 0)
        self.assertEqual(fwdstats.explain(d), "fwd dropped nothing")
        # The other way round is a restart, not negative counts.
        with self.assertRaises(fwdstats.FwdctlError):
            fwdstats.diff(later, zero)

    def test_version_and_a_refusing_daemon(self):
        self.assertTrue(self.ctl.version().startswith("fwd"), self.ctl.version())
        with self.assertRaisesRegex(fwdstats.FwdctlError, "exit 1"):
            self.ctl.apply_batch(b"route del 10.250.0.0/16\n")
        gone = fwdstats.Fwdctl([daemon.binary("fwdctl")],
                               os.path.join(self.dir, "none.sock"))
        with self.assertRaisesRegex(fwdstats.FwdctlError, "none.sock"):
            gone.snapshot()

    def test_generated_batches_are_accepted_whole(self):
        # The sizes of issue 13, as fwd-trex makes them by default: within
        # the daemon's bounds (request size, batch size, rule capacity).
        routes_before = self.ctl.run(["route", "show"])
        # Adds then deletes: the tables end as they were.
        self.ctl.apply_batch(reconf.route_batch(100_000, "20.0.0.0", via="10.9.0.2", dev="out"))
        self.assertEqual(self.ctl.run(["route", "show"]), routes_before)
        self.ctl.apply_batch(reconf.rule_batch(10_000))
        rules = json.loads(self.ctl.run(["--json", "rule", "show"]))
        self.assertEqual(len(rules), 10_000)
        # Replacing it again is one flush + adds: still 10k.
        self.ctl.apply_batch(reconf.rule_batch(10_000))
        self.assertEqual(len(json.loads(self.ctl.run(["--json", "rule", "show"]))), 10_000)
        self.ctl.apply_batch(b"rule flush\n")

    def test_reconf_mode_with_a_fake_server_and_the_real_fwdctl(self):
        with tempfile.TemporaryDirectory() as d:
            tiny = os.path.join(d, "tiny.py")
            with open(tiny, "w") as f:
                f.write(TINY)
            cli = load_cli()
            orig = measure.make_client
            measure.make_client = lambda *a, **k: FakeTrex(10_000_000)
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    rc = cli.main([
                        "reconf", "--profile", tiny, "--rate", "100k", "--duration", "1",
                        "--settle", "0", "--routes", "1000", "--via", "10.9.0.2",
                        "--dev", "out", "--rules", "100",
                        "--fwdctl", daemon.binary("fwdctl"),
                        "--fwd-socket", self.sock, "--out", os.path.join(d, "r"),
                    ])
            finally:
                measure.make_client = orig
                self.ctl.apply_batch(b"rule flush\n")
            self.assertEqual(rc, 0)
            with open(os.path.join(d, "r.json")) as f:
                doc = json.load(f)
            with open(os.path.join(d, "r.md")) as f:
                md = f.read()
        self.assertEqual([r["action"] for r in doc["reconf"]], ["baseline", "routes", "rules"])
        for r in doc["reconf"]:
            # The fake device loses nothing below its capacity: zero blocked.
            self.assertEqual(r["blocked"]["lost"], 0)
            self.assertEqual(r["blocked"]["offered"], 100_000)
            self.assertEqual(r["trial"]["fwd"]["dropped"], 0)
        self.assertTrue(doc["versions"]["fwd"].startswith("fwd"))
        self.assertIn("| routes | 1000 route changes from 20.0.0.0/24 | 100,000 |", md)

    def test_reconf_holds_the_ndr_found_and_keeps_results_when_a_batch_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            tiny = os.path.join(d, "tiny.py")
            with open(tiny, "w") as f:
                f.write(TINY)
            bad = os.path.join(d, "bad.batch")
            with open(bad, "w") as f:
                f.write("route del 10.250.0.0/16\n")
            cli = load_cli()
            orig = measure.make_client
            measure.make_client = lambda *a, **k: FakeTrex(150_000)
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    with self.assertRaisesRegex(cli.Failed, "exit 1"):
                        cli.main([
                            "reconf", "--profile", tiny, "--max-rate", "200k",
                            "--duration", "1", "--settle", "0", "--action", "routes",
                            "--routes-batch", bad, "--max-search-time", "300",
                            "--fwdctl", daemon.binary("fwdctl"),
                            "--fwd-socket", self.sock, "--out", os.path.join(d, "r"),
                        ])
            finally:
                measure.make_client = orig
            with open(os.path.join(d, "r.json")) as f:
                doc = json.load(f)
        # The NDR of a 150 kpps device, held; the baseline lost nothing.
        self.assertLessEqual(doc["held_rate"], 150_000)
        self.assertGreaterEqual(doc["held_rate"], 150_000 * (1 - 0.005))
        self.assertEqual([r["action"] for r in doc["reconf"]], ["baseline"])
        self.assertEqual(doc["reconf"][0]["blocked"]["lost"], 0)
        self.assertIn("route del 10.250.0.0/16", doc["error"] + " ")  # fwdctl names the line


if __name__ == "__main__":
    unittest.main()
