"""The NDR/PDR search logic against FAKE measurers (test doubles with known
loss curves), the reconf arithmetic and the results writers. No TRex server
and no appliance: what is tested is what fwd-trex does with numbers."""

import json
import os
import random
import tempfile
import unittest

import lbr_trex_client  # noqa: F401  (puts `trex` on sys.path)
from MLRsearch import AbstractMeasurer, MeasurementResult

from fwdtrex import latency, reconf, results
from fwdtrex.search import PDR_LOSS, SearchSettings, search_ndr_pdr


class FakeDevice(AbstractMeasurer):
    """TEST DOUBLE: a device whose loss ratio at a load is `curve(load, n)`
    (n: the trial's number). Counts are what a trial at that loss gives."""

    def __init__(self, curve):
        self.curve = curve
        self.loads = []

    def measure(self, intended_duration, intended_load):
        self.loads.append(intended_load)
        offered = int(round(intended_load * intended_duration))
        lost = int(round(offered * self.curve(intended_load, len(self.loads))))
        self.last_details = {"fake": True}
        return MeasurementResult(
            intended_duration=intended_duration,
            intended_load=intended_load,
            offered_count=offered,
            loss_count=lost,
        )


def hard_capacity(cap):
    """Forwards at most `cap` pps: loss = max(0, 1 - cap/load)."""
    return lambda load, _n: max(0.0, 1.0 - cap / load)


WIDTH = 0.005


def settings(**kw):
    s = dict(
        min_rate=10_000,
        max_rate=20_000_000,
        initial_duration=0.5,
        final_duration=2.0,
        duration_sum=4.0,
        width=WIDTH,
    )
    s.update(kw)
    return SearchSettings(**s)


class HardCapacity(unittest.TestCase):
    CAP = 1_000_000.0

    def test_ndr_is_within_the_width_below_capacity(self):
        r = search_ndr_pdr(FakeDevice(hard_capacity(self.CAP)), settings())
        ndr = r["ndr"]
        self.assertIsNone(ndr["limit"])
        # No loss at or below CAP, loss above: the bounds straddle CAP.
        self.assertLessEqual(ndr["lower_bound"], self.CAP)
        self.assertGreater(ndr["upper_bound"], self.CAP)
        self.assertLessEqual((ndr["upper_bound"] - ndr["lower_bound"]) / ndr["upper_bound"], WIDTH)
        self.assertGreaterEqual(ndr["rate"], self.CAP * (1 - WIDTH))
        self.assertEqual(ndr["rate"], ndr["lower_bound"])

    def test_pdr_is_near_capacity_over_one_minus_the_loss(self):
        r = search_ndr_pdr(FakeDevice(hard_capacity(self.CAP)), settings())
        pdr = r["pdr"]
        edge = self.CAP / (1 - PDR_LOSS)  # the load whose loss is exactly 0.5 %
        self.assertIsNone(pdr["limit"])
        self.assertLessEqual(pdr["lower_bound"], edge * (1 + 1e-9))
        self.assertGreater(pdr["upper_bound"], edge)
        self.assertGreaterEqual(pdr["rate"], edge * (1 - WIDTH))
        self.assertGreater(pdr["rate"], r["ndr"]["rate"])

    def test_deciding_trials_are_at_the_bounds_and_agree_with_the_curve(self):
        r = search_ndr_pdr(FakeDevice(hard_capacity(self.CAP)), settings())
        trials = {t["n"]: t for t in r["trials"]}
        for goal in ("ndr", "pdr"):
            rep = r[goal]
            self.assertTrue(rep["deciding_trials"], goal)
            for n in rep["deciding_trials"]:
                t = trials[n]
                if t["rate"] == rep["lower_bound"]:
                    self.assertLessEqual(t["loss_ratio"], rep["loss_ratio"])
                else:
                    self.assertEqual(t["rate"], rep["upper_bound"])
                    self.assertGreater(t["loss_ratio"], rep["loss_ratio"])
        # Every trial recorded the inner measurer's details.
        self.assertTrue(all(t.get("fake") for t in r["trials"]))

    def test_pdr_capped_at_max_rate(self):
        # CAP just under max: the PDR edge (CAP/0.995) is above max, so the
        # maximum rate itself is clean enough for PDR but not for NDR.
        cap = 19_950_000.0
        r = search_ndr_pdr(FakeDevice(hard_capacity(cap)), settings())
        self.assertEqual(r["pdr"]["limit"], "clean_at_max")
        self.assertEqual(r["pdr"]["rate"], 20_000_000)
        self.assertIsNone(r["pdr"]["upper_bound"])
        self.assertLessEqual(r["ndr"]["lower_bound"], cap)
        self.assertGreater(r["ndr"]["upper_bound"], cap)


class NoisyCurve(unittest.TestCase):
    """Deterministic noise (seeded): clean below 0.9 C; between 0.9 C and C,
    about half the trials lose up to 0.4 %; above C, 1 - C/load plus the
    same noise. Whatever the noise, NDR cannot be below 0.9 C by more than
    the width (those loads never lose), nor above C (those always lose);
    PDR cannot be below C (at most 0.4 % loss there) by more than the
    width, nor above the load where loss is surely over 0.5 %."""

    CAP = 2_000_000.0

    def curve(self, seed):
        rng = random.Random(seed)

        def f(load, _n):
            noise = rng.uniform(0.0, 0.004) if rng.random() < 0.5 else 0.0
            if load <= 0.9 * self.CAP:
                return 0.0
            return min(1.0, max(0.0, 1.0 - self.CAP / load) + noise)

        return f

    def test_bounds_within_the_band_for_several_seeds(self):
        for seed in (1, 2, 3, 42):
            with self.subTest(seed=seed):
                r = search_ndr_pdr(FakeDevice(self.curve(seed)), settings())
                ndr, pdr = r["ndr"], r["pdr"]
                self.assertGreaterEqual(ndr["rate"], 0.9 * self.CAP * (1 - WIDTH))
                self.assertLessEqual(ndr["rate"], self.CAP)
                self.assertGreaterEqual(pdr["rate"], self.CAP * (1 - WIDTH))
                # loss >= 1 - C/load > 0.5 % for every load above C/0.995.
                self.assertLessEqual(pdr["rate"], self.CAP / (1 - PDR_LOSS))
                self.assertLessEqual(
                    (pdr["upper_bound"] - pdr["lower_bound"]) / pdr["upper_bound"], WIDTH
                )


class Irregular(unittest.TestCase):
    def test_loss_even_at_the_minimum_rate(self):
        # Capacity far below min: 1 - 1000/10000 = 90 % loss at min.
        dev = FakeDevice(hard_capacity(1_000.0))
        r = search_ndr_pdr(dev, settings())
        for goal in ("ndr", "pdr"):
            self.assertEqual(r[goal]["limit"], "lost_at_min", goal)
            self.assertEqual(r[goal]["rate"], 10_000, goal)
            self.assertIsNone(r[goal]["lower_bound"], goal)
            self.assertEqual(r[goal]["upper_bound"], 10_000, goal)
        self.assertIn(10_000.0, dev.loads)

    def test_no_loss_up_to_the_maximum_rate(self):
        dev = FakeDevice(lambda _load, _n: 0.0)
        r = search_ndr_pdr(dev, settings())
        for goal in ("ndr", "pdr"):
            self.assertEqual(r[goal]["limit"], "clean_at_max", goal)
            self.assertEqual(r[goal]["rate"], 20_000_000, goal)
            self.assertIsNone(r[goal]["upper_bound"], goal)
        self.assertEqual(max(dev.loads), 20_000_000)


class Settings(unittest.TestCase):
    def test_bad_settings_are_refused_by_name(self):
        for kw, word in (
            (dict(min_rate=5, max_rate=5), "rates"),
            (dict(min_rate=-1), "rates"),
            (dict(initial_duration=3, final_duration=2), "durations"),
            (dict(duration_sum=1), "duration sum"),
            (dict(width=0), "width"),
            (dict(exceed_ratio=1), "exceed"),
            (dict(pdr_loss=0), "loss ratios"),
        ):
            with self.subTest(kw=kw):
                with self.assertRaisesRegex(ValueError, word):
                    settings(**kw).validate()


class ReconfArithmetic(unittest.TestCase):
    def test_blocked_time_is_lost_over_offered_rate(self):
        # 10 Mpps offered for 20 s (200 M packets), 25,000 lost: 2.5 ms blocked.
        r = reconf.blocked(offered=200_000_000, received=199_975_000, duration=20.0)
        self.assertEqual(r["lost"], 25_000)
        self.assertAlmostEqual(r["offered_rate"], 10_000_000.0)
        self.assertAlmostEqual(r["blocked_s"], 0.0025)

    def test_no_loss_is_zero_blocked_time(self):
        r = reconf.blocked(offered=1000, received=1000, duration=1.0)
        self.assertEqual(r["blocked_s"], 0.0)

    def test_nothing_offered_is_an_error_not_a_division(self):
        with self.assertRaisesRegex(ValueError, "nothing was offered"):
            reconf.blocked(offered=0, received=0, duration=1.0)

    def test_more_received_than_offered_is_not_negative_loss(self):
        with self.assertRaisesRegex(ValueError, "received more"):
            reconf.blocked(offered=100, received=101, duration=1.0)

    def test_route_batch(self):
        text = reconf.route_batch(6, "20.0.0.0", via="10.9.0.2", dev="out").decode()
        lines = text.splitlines()
        self.assertEqual(len(lines), 6)
        self.assertEqual(lines[0], "route replace 20.0.0.0/24 via 10.9.0.2 dev out")
        self.assertEqual(lines[2], "route replace 20.0.2.0/24 via 10.9.0.2 dev out")
        self.assertEqual(lines[3], "route del 20.0.0.0/24")
        self.assertEqual(lines[5], "route del 20.0.2.0/24")
        # 300 /24s cross into the next /16.
        lines = reconf.route_batch(600, "20.0.0.0", via="10.9.0.2", dev="out").decode().splitlines()
        self.assertEqual(lines[299], "route replace 20.1.43.0/24 via 10.9.0.2 dev out")

    def test_route_batch_refuses_what_it_cannot_make(self):
        with self.assertRaisesRegex(ValueError, "even"):
            reconf.route_batch(5, "20.0.0.0", via="10.9.0.2", dev="out")
        with self.assertRaisesRegex(ValueError, "past"):
            reconf.route_batch(2_000_000, "250.0.0.0", via="10.9.0.2", dev="out")
        with self.assertRaisesRegex(ValueError, "route base"):
            reconf.route_batch(2, "20.0.0.1", via="10.9.0.2", dev="out")

    def test_rule_batch(self):
        lines = reconf.rule_batch(4).decode().splitlines()
        self.assertEqual(lines[0], "rule flush")
        self.assertEqual(len(lines), 1 + 4)
        self.assertTrue(lines[-1].endswith("action permit"), lines[-1])
        self.assertIn("action drop", lines[1])
        # Distinct matches: no two deny rules are the same.
        self.assertEqual(len(set(lines[1:-1])), 3)


class Results(unittest.TestCase):
    def test_json_round_trip_and_markdown_table(self):
        with tempfile.TemporaryDirectory() as d:
            doc = {
                "mode": "ndrpdr",
                "profile": "ip4-64b",
                "command": ["fwd-trex", "ndrpdr", "--profile", "x.py"],
                "versions": {"trex_client": "3.4.0", "fwd": "fwd 0.1.0"},
                "client_host": {"name": "tg1", "cpu": "Xeon", "cores": 32},
                "ndr": {"rate": 1234567.0, "limit": None},
            }
            rows = [
                {"goal": "NDR", "rate_pps": 1234567.0, "note": "a|b"},
                {"goal": "PDR", "rate_pps": 1240000.0, "note": ""},
            ]
            base = os.path.join(d, "bench-results", "trex", "ndrpdr-ip4-64b")
            jpath, mpath = results.write(base, doc, rows, title="NDR/PDR ip4-64b")
            with open(jpath) as f:
                self.assertEqual(json.load(f), doc)
            with open(mpath) as f:
                md = f.read()
            self.assertIn("# NDR/PDR ip4-64b", md)
            self.assertIn("`fwd-trex ndrpdr --profile x.py`", md)
            self.assertIn("| goal | rate_pps | note |", md)
            self.assertIn("| NDR | 1,234,567 | a\\|b |", md)
            self.assertIn("| PDR | 1,240,000 |  |", md)
            self.assertIn("- fwd: fwd 0.1.0", md)
            self.assertIn("- client host: tg1, Xeon, 32 cores", md)

    def test_client_host(self):
        h = results.client_host()
        self.assertEqual(h["cores"], os.cpu_count())
        self.assertTrue(h["name"])

    def test_default_path(self):
        self.assertEqual(
            results.default_base("/repo", "latency", "/x/profiles/ip4.py"),
            os.path.join("/repo", "bench-results", "trex", "latency-ip4"),
        )


# Produced by the reference implementation (PyPI `hdrhistogram`, module
# hdrh, HdrHistogram(1, 10_000_000, 3) with 5 x1000, 12 x500, 100 x50,
# 1234 x1, 777777 x1; and HdrHistogram(1, 3_600_000_000, 2) with 20000
# seeded log-normal values), with the percentiles it computed. Not a
# dependency: only these strings and numbers are kept.
HDRH_A = "HISTFAAAADB4nJNpmSzMwMAgwAABzFCaEUzOmNZg/wEiwHmBn/sF+1rGlJuCTNunMDIBAL7BCWY="
HDRH_A_P = {50: 5, 90: 12, 99: 100, 99.9: 100, 99.99: 778239, 100: 778239}
HDRH_B = (
    "HISTFAAAATZ4nC2MMUvDUBCAc/cuL5eXEEItNUgJ4lAcnIo4dNBQJEhxEBHB1cHJ3yAZQimllGKXzFLEwUEcHYqIOHQs0h8gIh2"
    "KFPEH+NJ6x/vu3sfdldP+imHArrEM/K+QY9IfGHvzpRDHbfwSXTnijt21n9RQ3Tip01M/9sy+Vi0ecsYf1rf1Yk1lYs3l2Pw1m2Z"
    "mjmlIPXoWE5HQWKRijom4xwec4p3mDDr4DhmO4BMe4RVuNd+gBRmk0IU2XKVwftqEi5PL+OigcbhTj+JovxY14lq9Wq1UtoOtzY3"
    "yelgMAn+tGBZKYegWSkHgEftewfN8Rb7LxIoUS+mSZPaJiZBJIhIjMBJJSRp6LK9IKFAH6GfqnkA6lP9JK9BrQieQQAsXAnJqZWI"
    "+KKRYaEQHbVzVJ/Asxx/Hqzzs"
)
HDRH_B_P = {50: 21, 90: 56, 99: 127, 99.9: 250, 99.99: 437, 100: 447}


class Latency(unittest.TestCase):
    def test_hdrh_decodes_to_the_reference_percentiles(self):
        for text, want, total, lo, hi in (
            (HDRH_A, HDRH_A_P, 1552, 5, 778239),
            (HDRH_B, HDRH_B_P, 20000, 2, 447),
        ):
            h = latency.decode_hdrh(text)
            self.assertEqual(h.total, total)
            self.assertEqual((h.min(), h.max()), (lo, hi))
            self.assertEqual({p: h.value_at_percentile(p) for p in want}, want)

    def test_bad_hdrh_is_refused(self):
        for bad, word in (("!!", "base64"), ("AAAAAAAAAAA=", "cookie"), (HDRH_A[:30] + "AAAA", "")):
            with self.subTest(bad=bad):
                with self.assertRaisesRegex(latency.HdrhError, word):
                    latency.decode_hdrh(bad)

    def test_hostile_hdrh_is_bounded(self):
        import base64
        import struct
        import zlib

        def encoded(payload):
            z = zlib.compress(payload)
            return base64.b64encode(struct.pack(">iI", 0x1C849314, len(z)) + z).decode()

        header = struct.pack(">iiiiqqd", 0x1C849313, 0, 0, 3, 1, 10_000_000, 1.0)
        # A run of 2^62 zero counters: refused, not allocated.
        zigzag = (((1 << 62) << 1) - 1)  # -(2^62) in ZigZag
        leb = bytearray()
        while True:
            b = zigzag & 0x7F
            zigzag >>= 7
            if zigzag:
                leb.append(b | 0x80)
            else:
                leb.append(b)
                break
        body = bytes(leb)
        text = encoded(header[:4] + struct.pack(">i", len(body)) + header[8:] + body)
        with self.assertRaisesRegex(latency.HdrhError, "more than"):
            latency.decode_hdrh(text)
        # A payload that inflates past the bound.
        bomb = encoded(header + b"\x00" * (latency.MAX_PAYLOAD + 1))
        with self.assertRaisesRegex(latency.HdrhError, "inflates past"):
            latency.decode_hdrh(bomb)

    def test_summary_of_a_pg_id(self):
        pg = {
            "err_cntrs": {"dropped": 0, "dup": 0, "out_of_order": 2},
            "latency": {
                "total_min": 4, "total_max": 900, "average": 7.5, "jitter": 1,
                "histogram": {10: 90, 20: 9, 900: 1},
                "hdrh": HDRH_A,
            },
        }
        s = latency.summarize(pg)
        self.assertEqual((s["min_us"], s["avg_us"], s["max_us"]), (4, 7.5, 900))
        self.assertEqual(s["errors"], {"out_of_order": 2})
        self.assertEqual(s["percentiles_from"], "hdrh")
        self.assertEqual(s["percentiles_us"]["p99.99"], 778239)
        # Without hdrh: the log histogram's bucket edges, named as such.
        del pg["latency"]["hdrh"]
        s = latency.summarize(pg)
        self.assertIn("bucket", s["percentiles_from"])
        self.assertEqual(
            s["percentiles_us"], {"p50": 10, "p90": 10, "p99": 20, "p99.9": 900, "p99.99": 900}
        )


if __name__ == "__main__":
    unittest.main()
