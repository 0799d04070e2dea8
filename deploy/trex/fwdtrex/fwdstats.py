"""The appliance's own counters, read with `fwdctl --json stats`.

On bare metal the appliance is another host, so fwdctl is a command prefix
(`fwdctl`, `ssh dut fwdctl`, `sudo fwdctl`...), never a library call. The
JSON is ctl's wire `Response::Stats` (ctl/src/wire/mod.rs `StatsReport`,
documented in ctl/PROTOCOL.md): externally tagged, `{"stats": {...}}`, with
every drop reason the daemon knows listed, zero or not.

A snapshot is parsed into plain dicts; `diff` of two snapshots says what
happened between them: per port rx/tx/missed..., and drops by reason, so a
loss TRex counts is explained by the appliance's own account of it.
"""

import json
import shlex
import subprocess
import time

# The counters of ctl's `PortStats`, in its order. Fields with serde
# defaults may be absent in an answer from an older daemon: read as 0.
PORT_COUNTERS = (
    "rx_packets",
    "rx_bytes",
    "rx_missed",
    "rx_errors",
    "rx_nombuf",
    "tx_packets",
    "tx_bytes",
    "tx_errors",
    "tx_dropped",
)
# PortStats fields without a serde default: an answer lacking one is not
# ctl's shape.
PORT_REQUIRED = ("rx_packets", "rx_bytes", "tx_packets", "tx_bytes")
# Port counters that mean a packet was lost at the port, not by the pipeline.
PORT_LOSS_COUNTERS = ("rx_missed", "rx_errors", "rx_nombuf", "tx_errors", "tx_dropped")


class FwdctlError(Exception):
    """fwdctl could not be run, failed, or said something unreadable."""


def _u64(obj, key, where, required=True):
    if required and key not in obj:
        raise FwdctlError(f"{where}.{key}: missing")
    v = obj.get(key, 0)
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise FwdctlError(f"{where}.{key}: not a counter: {v!r}")
    return v


def parse_stats(text):
    """Parses the output of `fwdctl --json stats` into a snapshot dict:
    {"uptime_ms", "rx_packets", "tx_packets", "dropped",
     "drops": {reason: packets}, "events": {event: count},
     "ports": {name: {counter: value}}}."""
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise FwdctlError(f"fwdctl --json stats: not JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("stats"), dict):
        raise FwdctlError('fwdctl --json stats: expected {"stats": {...}}')
    try:
        return _snapshot(doc["stats"])
    except (KeyError, TypeError, AttributeError) as e:
        raise FwdctlError(f"fwdctl --json stats: unexpected shape ({type(e).__name__}: {e})") from None


def _snapshot(s):
    snap = {
        "uptime_ms": _u64(s, "uptime_ms", "stats"),
        "rx_packets": _u64(s, "rx_packets", "stats"),
        "tx_packets": _u64(s, "tx_packets", "stats"),
        "dropped": _u64(s, "dropped", "stats"),
        "drops": {},
        "events": {},
        "ports": {},
    }
    for key in ("drops", "ports"):
        if not isinstance(s.get(key), list):
            raise FwdctlError(f"stats.{key}: missing or not a list")
    for i, d in enumerate(s["drops"]):
        snap["drops"][str(d["reason"])] = _u64(d, "packets", f"stats.drops[{i}]")
    for i, e in enumerate(s.get("events", [])):
        snap["events"][str(e["event"])] = _u64(e, "count", f"stats.events[{i}]")
    for i, p in enumerate(s["ports"]):
        snap["ports"][str(p["name"])] = {
            c: _u64(p, c, f"stats.ports[{i}]", c in PORT_REQUIRED) for c in PORT_COUNTERS
        }
    return snap


def diff(before, after):
    """What happened between two snapshots: the same shape as a snapshot
    (without uptime), counters as differences; `interval_ms` is the
    daemon's own clock. Zero drop reasons and events are left out, so what
    remains explains the loss. A counter that went backwards means the
    daemon restarted: that is an error, not a negative count."""
    if after["uptime_ms"] < before["uptime_ms"]:
        raise FwdctlError("the appliance restarted between two stats snapshots")

    def sub(a, b, where):
        d = a - b
        if d < 0:
            raise FwdctlError(f"{where} went backwards ({b} -> {a}): did the appliance restart?")
        return d

    out = {
        "interval_ms": after["uptime_ms"] - before["uptime_ms"],
        "rx_packets": sub(after["rx_packets"], before["rx_packets"], "rx_packets"),
        "tx_packets": sub(after["tx_packets"], before["tx_packets"], "tx_packets"),
        "dropped": sub(after["dropped"], before["dropped"], "dropped"),
        "drops": {},
        "events": {},
        "ports": {},
    }
    for kind in ("drops", "events"):
        for k, v in after[kind].items():
            d = sub(v, before[kind].get(k, 0), f"{kind}.{k}")
            if d:
                out[kind][k] = d
    for name, counters in after["ports"].items():
        old = before["ports"].get(name, {})
        out["ports"][name] = {
            c: sub(v, old.get(c, 0), f"ports.{name}.{c}") for c, v in counters.items()
        }
    return out


def drops(snap):
    """{reason: packets} of a snapshot's non-zero drop counters."""
    return {k: v for k, v in snap["drops"].items() if v}


def port_tx(snap):
    """{port name: tx_packets} of a snapshot."""
    return {name: c["tx_packets"] for name, c in snap["ports"].items()}


def accounted(snap):
    """Packets a snapshot accounts for: sent out of a port or dropped."""
    return sum(port_tx(snap).values()) + sum(drops(snap).values())


def explain(delta):
    """One line naming where packets went, e.g.
    'fwd dropped 12: no_route 10, acl_drop 2; port in rx_missed 5'."""
    parts = []
    if delta["dropped"]:
        reasons = ", ".join(
            f"{k} {v}" for k, v in sorted(delta["drops"].items(), key=lambda kv: -kv[1])
        )
        parts.append(f"fwd dropped {delta['dropped']}: {reasons}")
    for name, c in sorted(delta["ports"].items()):
        lost = [f"{k} {c[k]}" for k in PORT_LOSS_COUNTERS if c.get(k)]
        if lost:
            parts.append(f"port {name} " + ", ".join(lost))
    return "; ".join(parts) if parts else "fwd dropped nothing"


class Fwdctl:
    """Runs fwdctl: `command` is a prefix (a string split like a shell
    would, or a list), `socket` is passed as `-s SOCKET` when given."""

    def __init__(self, command="fwdctl", socket=None, timeout=120):
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not self.argv:
            raise ValueError("the fwdctl command is empty")
        if socket:
            self.argv += ["-s", str(socket)]
        self.timeout = timeout

    def run(self, args, stdin=None):
        """Runs fwdctl ARGS; its stdout. Raises FwdctlError naming the
        command and fwdctl's own message when it fails."""
        argv = self.argv + list(args)
        # Without a batch to send, fwdctl (or ssh) gets no terminal to read.
        feed = {"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}
        try:
            p = subprocess.run(argv, capture_output=True, timeout=self.timeout, **feed)
        except FileNotFoundError:
            raise FwdctlError(f"{argv[0]}: not found (set --fwdctl)") from None
        except subprocess.TimeoutExpired:
            raise FwdctlError(f"{shlex.join(argv)}: no answer in {self.timeout} s") from None
        if p.returncode != 0:
            # fwdctl's message may span lines (the batch line it refused,
            # then "nothing was applied"): all of it, on one line.
            said = (p.stderr or p.stdout).decode(errors="replace").splitlines()
            msg = " / ".join(x.strip() for x in said if x.strip())[:1000] or "no message"
            raise FwdctlError(f"{shlex.join(argv)}: exit {p.returncode}: {msg}")
        return p.stdout.decode(errors="replace")

    def snapshot(self):
        return parse_stats(self.run(["--json", "stats"]))

    def json(self, *args):
        """`fwdctl --json ARGS`: the answer's body (the protocol wraps an
        answer as {"<kind>": body}; a bare list or value is returned as is)."""
        text = self.run(["--json", *args])
        try:
            doc = json.loads(text)
        except ValueError as e:
            raise FwdctlError(f"fwdctl --json {' '.join(args)}: not JSON: {e}") from None
        if isinstance(doc, dict) and len(doc) == 1:
            (body,) = doc.values()
            return body
        return doc

    def version(self):
        """The daemon's version from `fwdctl --json status`."""
        return self.json("status")["version"]

    def apply_batch(self, data):
        """`fwdctl -b -` with the batch on stdin (so a remote fwdctl needs
        no copy of the file): one generation or nothing. Returns the seconds
        the command took, as seen from here."""
        t0 = time.monotonic()
        self.run(["-b", "-"], stdin=data)
        return time.monotonic() - t0
