"""Start and stop the real `fwd` for the tests on net_pcap ports, and wait
on its counters.

The binaries are found in $FWD_BIN_DIR, else under the repository's
target/debug (what `cargo build --workspace --bins` makes). fwdctl is run,
and its `--json stats` read, by fwdstats: this module only starts, waits
on and stops the daemon.
"""

import os
import signal
import subprocess
import threading
import time

from fwdtrex import fwdstats

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


def why_not_runnable():
    """Why the real daemon cannot run here (a skip reason), or None."""
    if not is_root():
        return "the real daemon runs DPDK: run the tests as root (deploy/test.sh does)"
    for b in ("fwd", "fwdctl"):
        try:
            binary(b)
        except FileNotFoundError as e:
            return str(e)
    return None


def check(config_path):
    """`fwd --check CONFIG`: (ok, output)."""
    r = subprocess.run([binary("fwd"), config_path, "--check"], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=600)
    return r.returncode == 0, r.stdout + r.stderr


class Fwd:
    """A running `fwd` (stopped with SIGTERM on stop() or on leaving a
    `with`). Its output is kept in `self.output`; `self.ctl` is a
    fwdstats.Fwdctl on its socket."""

    def __init__(self, config_path, socket, rundir, ready_timeout=120):
        self.socket = socket
        self.output = []
        self.ctl = fwdstats.Fwdctl([binary("fwdctl")], socket, timeout=600)
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

    def stats(self):
        """A fwdstats snapshot of `fwdctl --json stats`."""
        return self.ctl.snapshot()

    def wait_for(self, done, what, timeout=300):
        """Polls the stats until done(snapshot); returns that snapshot. A
        deadline, never a sleep that the result depends on: the check is on
        the counters. TimeoutError names `what` and the last stats."""
        deadline = time.monotonic() + timeout
        while True:
            last = self.stats()
            if done(last):
                return last
            if self.proc.poll() is not None:
                raise RuntimeError(f"fwd exited while waiting for {what}:\n{self.text()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"after {timeout} s, not yet {what}: {last}")
            time.sleep(0.05)

    def wait_accounted(self, n, timeout=300):
        """Waits until the daemon has received n packets and every one is
        forwarded or dropped; returns the last stats."""
        return self.wait_for(
            lambda s: s["rx_packets"] >= n and fwdstats.accounted(s) >= n,
            f"{n} packets received and accounted for", timeout)

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
