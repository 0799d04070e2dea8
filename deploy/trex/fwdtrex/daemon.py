"""Start and stop the real `fwd` for the replay tests, and read its
counters with `fwdctl --json stats`.

The binaries are found under the repository's target/debug (what
`cargo build --workspace --bins` makes), or in $FWD_BIN_DIR.
"""

import json
import os
import signal
import subprocess
import threading
import time

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))


def bin_dir():
    return os.environ.get("FWD_BIN_DIR") or os.path.join(REPO, "target", "debug")


def binary(name):
    """The path of `fwd` or `fwdctl`, or FileNotFoundError saying how to
    build it."""
    p = os.path.join(bin_dir(), name)
    if not os.access(p, os.X_OK):
        raise FileNotFoundError(
            f"{p} missing: run `cargo build --workspace --bins` (or point FWD_BIN_DIR at the binaries)")
    return p


def have_binaries():
    return all(os.access(os.path.join(bin_dir(), b), os.X_OK) for b in ("fwd", "fwdctl"))


def is_root():
    return os.geteuid() == 0


def check(config_path):
    """`fwd --check CONFIG`: (ok, output)."""
    r = subprocess.run([binary("fwd"), config_path, "--check"], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=600)
    return r.returncode == 0, r.stdout + r.stderr


class Fwd:
    """A running `fwd` (stopped with SIGTERM on stop() or on leaving a
    `with`). Its output is kept in `self.output`."""

    def __init__(self, config_path, socket, rundir, ready_timeout=120):
        self.socket = socket
        self.output = []
        env = dict(os.environ, RUNTIME_DIRECTORY=rundir)
        self.proc = subprocess.Popen([binary("fwd"), config_path], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, env=env)
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + ready_timeout
        while not self._ready.wait(0.1):
            if self.proc.poll() is not None:
                self._reader.join(5)
                raise RuntimeError(f"fwd exited ({self.proc.returncode}) before forwarding:\n{self.text()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"fwd did not start forwarding in {ready_timeout} s:\n{self.text()}")

    def _read(self):
        for line in self.proc.stdout:
            self.output.append(line)
            if "fwd: forwarding with" in line:
                self._ready.set()

    def text(self):
        return "".join(self.output)

    def fwdctl(self, *args):
        r = subprocess.run([binary("fwdctl"), "-s", self.socket, *args], capture_output=True,
                           text=True, stdin=subprocess.DEVNULL, timeout=600)
        if r.returncode != 0:
            raise RuntimeError(f"fwdctl {' '.join(args)} failed ({r.returncode}): {r.stderr}{r.stdout}")
        return r.stdout

    def stats(self):
        """`fwdctl --json stats` as a dict (the wire protocol's StatsReport)."""
        return self.json("stats")

    def json(self, what, *args):
        """`fwdctl --json WHAT ARGS`: the answer's body (the protocol wraps
        an answer as {"<kind>": body})."""
        doc = json.loads(self.fwdctl("--json", what, *args))
        if isinstance(doc, dict) and len(doc) == 1:
            (body,) = doc.values()
            return body
        return doc

    def wait_accounted(self, n, timeout=300):
        """Waits until the daemon has received n packets and every one is
        forwarded or dropped; returns the last stats. A deadline, never a
        sleep that the result depends on: the check is on the counters."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            last = self.stats()
            if last["rx_packets"] >= n and accounted(last) >= n:
                return last
            if self.proc.poll() is not None:
                raise RuntimeError(f"fwd exited while packets were outstanding:\n{self.text()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"after {timeout} s: {accounted(last)} of {n} packets accounted for: {last}")
            time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(5)
        if self.proc.stdout and not self._reader.is_alive():
            self.proc.stdout.close()
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def drops(stats):
    """{reason: packets} of the non-zero drop counters."""
    return {d["reason"]: d["packets"] for d in stats["drops"] if d["packets"]}


def port_tx(stats):
    """{port name: tx_packets}."""
    return {p["name"]: p["tx_packets"] for p in stats["ports"]}


def accounted(stats):
    return sum(port_tx(stats).values()) + sum(drops(stats).values())
