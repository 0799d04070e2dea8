"""Trials on a TRex server: the MLRsearch measurer, the held-rate trial of
the reconf test, and the latency numbers TRex reports.

Ports come as a pair A,B cabled through the appliance (A -> appliance ->
B and back). The direction picks who sends: `bi` both (A with the
profile's direction 0, B with direction 1, as TRex's own console does),
`ab` only A, `ba` only B. A load is aggregate packets per second over the
sending ports; TRex splits it (`start(mult="Npps", total=True)`), and scales
every stream of a port by the same factor, so a profile's own stream
weights (IMIX) hold.

Each trial: clear TRex's counters, snapshot the appliance's counters
(fwdctl), start for the intended duration, wait for the end, read TRex's
port counters (and latency, when the streams carry it), snapshot the
appliance again. Offered = packets the sending ports sent, received =
packets their peers received; the appliance's diff says where the
difference went.
"""

import contextlib
import io
import time

import lbr_trex_client  # noqa: F401  (puts `trex` on sys.path)
from MLRsearch import AbstractMeasurer, MeasurementResult
from trex.stl.api import STLClient, STLProfile, TRexError

from . import fwdstats, latency

DIRECTIONS = ("bi", "ab", "ba")
# The TRex profile id (per port) the latency streams run in.
LATENCY_PROFILE = "lat"


class ProfileError(Exception):
    """The profile could not be loaded or built with the tunables given."""


def parse_tunables(items):
    """['frame=64', 'flows=10000'] -> {'frame': '64', 'flows': '10000'}."""
    out = {}
    for it in items or []:
        k, sep, v = it.partition("=")
        if not sep or not k or not k.replace("_", "").replace("-", "").isalnum():
            raise ProfileError(f"tunable {it!r}: expected NAME=VALUE")
        if k in out:
            raise ProfileError(f"tunable {k!r} given twice")
        out[k] = v
    return out


def tx_ports(pair, direction):
    a, b = pair
    return {"bi": [a, b], "ab": [a], "ba": [b]}[direction]


def peer(pair, port):
    a, b = pair
    return b if port == a else a


def load_streams(path, tunables, pair, direction):
    """{port: [STLStream]} for the sending ports, built by the library from
    the profile file with the tunables. Raises ProfileError naming the file."""
    out = {}
    for port in tx_ports(pair, direction):
        d = 0 if port == pair[0] else 1
        said = io.StringIO()
        try:
            # A profile's argument parser complains on stderr: keep it for
            # the one-line error below.
            with contextlib.redirect_stderr(said):
                prof = STLProfile.load_py(path, direction=d, port_id=port, **tunables)
        except TRexError as e:
            msg = str(e).strip().splitlines()
            raise ProfileError(f"{path}: {msg[-1] if msg else 'cannot be loaded'}") from None
        if prof is None:
            # The profile's argument parser refused the tunables (or was
            # asked for --help).
            why = said.getvalue().strip().splitlines()
            raise ProfileError(f"{path}: the profile refused the tunables {tunables}"
                               + (f": {why[-1]}" if why else ""))
        streams = prof.get_streams()
        if not streams:
            raise ProfileError(f"{path}: no streams for port {port} (direction {d})")
        for s in streams:
            # Building the packet is where a bad field shows: do it now.
            try:
                s.to_json()
            except Exception as e:  # the builder raises many types
                raise ProfileError(f"{path}: stream {s.get_name()}: {e}") from None
        out[port] = streams
    return out


def latency_pg_ids(port_streams):
    """The pg_ids of the latency streams (flow_stats of type latency)."""
    ids = []
    for streams in port_streams.values():
        for s in streams:
            if s.has_flow_stats() and s.get_flow_stats_type() == "latency":
                ids.append(s.get_pg_id())
    return ids


def split_latency(port_streams, pg_ids=None):
    """(traffic streams, latency streams) per port. A latency stream is one
    carrying latency flow stats (with pg_id in pg_ids when given)."""
    traffic, lat = {}, {}
    for port, streams in port_streams.items():
        traffic[port], lat[port] = [], []
        for s in streams:
            is_lat = s.has_flow_stats() and s.get_flow_stats_type() == "latency"
            if is_lat and (pg_ids is None or s.get_pg_id() in pg_ids):
                lat[port].append(s)
            else:
                traffic[port].append(s)
    return traffic, lat


def make_client(server, sync_port=4501, async_port=4500, verbose="error"):
    """The STLClient object; nothing is connected until connect()."""
    return STLClient(
        server=server, sync_port=sync_port, async_port=async_port, verbose_level=verbose
    )


def port_counts(stats, pair, senders):
    """Per direction and in total: what the senders sent and their peers
    received (TRex's `opackets`/`ipackets`)."""
    dirs = []
    for p in senders:
        q = peer(pair, p)
        dirs.append(
            {
                "tx_port": p,
                "rx_port": q,
                "offered": int(stats[p]["opackets"]),
                "received": int(stats[q]["ipackets"]),
            }
        )
    offered = sum(d["offered"] for d in dirs)
    received = sum(d["received"] for d in dirs)
    return dirs, offered, received


class TrexTrials:
    """A connected STLClient, the pair, the direction, the streams, and
    optionally the appliance's fwdctl. `streams` is {port: [STLStream]}."""

    def __init__(self, client, pair, direction, streams, fwdctl=None, rx_delay_ms=None,
                 promiscuous=False):
        self.client = client
        self.pair = list(pair)
        self.senders = tx_ports(pair, direction)
        self.fwdctl = fwdctl
        self.rx_delay_ms = rx_delay_ms
        self.streams = streams
        self.promiscuous = promiscuous
        self.loaded = None
        self.latency_ports = []

    def install(self, streams, latency=None):
        """Reset and acquire both ports; add the traffic `streams` ({port:
        [...]}) to each port's default TRex profile and the `latency`
        streams to a profile of their own (PORT.lat). TRex scales all the
        streams of one profile by one multiplier: in their own profile the
        latency streams keep their configured rate whatever the load."""
        c = self.client
        c.reset(ports=self.pair)
        if self.promiscuous:
            c.set_port_attr(ports=self.pair, promiscuous=True)
        for port, ss in streams.items():
            if ss:
                c.add_streams(ss, ports=[port])
        self.latency_ports = []
        for port, ss in (latency or {}).items():
            if ss:
                c.add_streams(ss, ports=[f"{port}.{LATENCY_PROFILE}"])
                self.latency_ports.append(f"{port}.{LATENCY_PROFILE}")
        self.loaded = streams

    def trial(self, duration, rate, during=None):
        """Sends at `rate` pps (aggregate) for `duration` s; `during`, when
        given, is called once the traffic runs (the reconf action) and its
        result kept. Returns a dict with the counts, TRex's latency stats
        (when any pg_id runs) and the appliance's diff."""
        c = self.client
        if self.loaded is None:
            self.install(self.streams)
        before = self.fwdctl.snapshot() if self.fwdctl else None
        c.clear_stats(ports=self.pair)
        t0 = time.monotonic()
        c.start(ports=self.senders, mult=f"{rate:.3f}pps", total=True, duration=duration,
                force=True)
        if self.latency_ports:
            # As configured, under the load just started.
            c.start(ports=self.latency_ports, mult="1", total=False, duration=duration,
                    force=True)
        action = None
        try:
            if during is not None:
                action = during()
        finally:
            # Even when the action failed, the traffic ends and is counted.
            c.wait_on_traffic(ports=self.pair, timeout=duration + 60,
                              rx_delay_ms=self.rx_delay_ms)
        elapsed = time.monotonic() - t0
        stats = c.get_stats(ports=self.pair)
        after = self.fwdctl.snapshot() if self.fwdctl else None
        dirs, offered, received = port_counts(stats, self.pair, self.senders)
        out = {
            "rate": float(rate),
            "duration": float(duration),
            "elapsed": elapsed,
            "directions": dirs,
            "offered": offered,
            "received": received,
            "action": action,
        }
        lat = stats.get("latency") or {}
        pgs = {k: v for k, v in lat.items() if k != "global" and isinstance(v, dict)}
        if pgs:
            out["latency"] = {str(k): latency.summarize(v) for k, v in pgs.items()}
        if before is not None:
            d = fwdstats.diff(before, after)
            out["fwd"] = d
            out["fwd_explains"] = fwdstats.explain(d)
        return out


class TrexMeasurer(AbstractMeasurer):
    """MLRsearch's measurer over TrexTrials: one trial per measure() call;
    the trial's details (directions, the appliance's drops by reason) are
    left in `last_details` for the search's record."""

    def __init__(self, trials):
        self.trials = trials
        self.last_details = None

    def measure(self, intended_duration, intended_load):
        t = self.trials.trial(intended_duration, intended_load)
        # Stray frames (the appliance's ARP/ND towards the TRex ports) can
        # make a peer receive more than was sent: that is not negative loss.
        lost = max(0, t["offered"] - t["received"])
        self.last_details = {
            "received": t["received"],
            "extra_received": max(0, t["received"] - t["offered"]),
            # TRex's own rounding of rate x duration: informative only (a
            # count of it as loss would fail every zero-loss trial).
            "unsent": int(round(intended_duration * intended_load)) - t["offered"],
            "directions": t["directions"],
        }
        if "fwd" in t:
            self.last_details["fwd"] = t["fwd"]
            self.last_details["fwd_explains"] = t["fwd_explains"]
        return MeasurementResult(
            intended_duration=intended_duration,
            intended_load=intended_load,
            offered_count=t["offered"],
            loss_count=lost,
            offered_duration=intended_duration,
            # MLRsearch sums this towards a target's duration sum: never
            # less than the traffic itself ran.
            duration_with_overheads=max(t["elapsed"], intended_duration),
        )
