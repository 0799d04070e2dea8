#!/usr/bin/env python3
"""A stand-in FPM server: records zebra's raw FPM byte stream to a file.

Listens on ADDR:PORT (run it inside the namespace zebra runs in), accepts
zebra's `dplane_fpm_nl` connections one after another, and appends every
byte received to OUTPUT, untouched (FPM frames: version 1, type 1 = netlink,
16-bit big-endian length including the 4-byte header, then netlink
messages). It stops once nothing has arrived for --idle seconds after the
first byte, after --max seconds in all, or on SIGTERM/SIGINT, and prints a one-line summary per
connection to stderr. Standard library only.

    ip netns exec NS python3 fpm-capture.py -o out.bin --port 2620 --idle 5

--ready FILE is created once the socket listens, so a script can wait for
it instead of sleeping. --summary prints the netlink message counts.
--split writes connection N (N >= 2) to OUTPUT.N instead of appending, so
a reconnect's replay (zebra restarted) lands in a file of its own.
"""
import argparse
import os
import selectors
import signal
import socket
import struct
import sys
import time


def frames(data):
    """The FPM frames of a recorded stream, each as a list of its netlink
    messages `(nlmsg_type, offset, nlmsg_len)` (an independent parse);
    stops at the first malformed frame. Returns (frames, bytes used)."""
    out = []
    off = 0
    while off + 4 <= len(data):
        ver, _typ, flen = struct.unpack_from("!BBH", data, off)
        if ver != 1 or flen < 4 or off + flen > len(data):
            break
        end = off + flen
        p = off + 4
        msgs = []
        while p + 16 <= end:
            nlen, ntype = struct.unpack_from("=IH", data, p)
            if nlen < 16:
                break
            msgs.append((ntype, p, nlen))
            p += (nlen + 3) & ~3
        out.append(msgs)
        off = end
    return out, off


NAMES = {24: "RTM_NEWROUTE", 25: "RTM_DELROUTE", 104: "RTM_NEWNEXTHOP", 105: "RTM_DELNEXTHOP"}


def summarize(data):
    """Counts of FPM frames and netlink message types (an independent parse)."""
    fr, used = frames(data)
    types = {}
    for msgs in fr:
        for ntype, _, _ in msgs:
            types[ntype] = types.get(ntype, 0) + 1
    parts = ", ".join(f"{NAMES.get(t, t)}={n}" for t, n in sorted(types.items()))
    n = sum(len(m) for m in fr)
    return f"{len(fr)} frames, {n} netlink messages ({parts}), {len(data) - used} trailing bytes"


STOP = []


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", required=True, help="file for the raw stream")
    ap.add_argument("--addr", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=2620)
    ap.add_argument("--idle", type=float, default=5.0,
                    help="stop after this many seconds without data (after the first byte)")
    ap.add_argument("--max", type=float, default=600.0, help="stop after this many seconds in all")
    ap.add_argument("--ready", help="file to create once listening")
    ap.add_argument("--summary", action="store_true", help="print message counts at the end")
    ap.add_argument("--split", action="store_true",
                    help="connection N >= 2 goes to OUTPUT.N (default: all appended to OUTPUT)")
    a = ap.parse_args()

    srv = socket.socket(socket.AF_INET6 if ":" in a.addr else socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((a.addr, a.port))
    srv.listen(4)
    srv.setblocking(False)
    if a.ready:
        with open(a.ready, "w") as f:
            f.write(f"{os.getpid()}\n")

    # SIGTERM/SIGINT end the capture cleanly: files closed, summary printed.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: STOP.append(1))

    sel = selectors.DefaultSelector()
    sel.register(srv, selectors.EVENT_READ)
    out = open(a.output, "wb")
    files = {1: (a.output, out)}
    start = time.monotonic()
    last = None
    data = {}
    conns = {}
    nconn = 0
    while True:
        now = time.monotonic()
        if STOP or now - start > a.max or (last is not None and now - last > a.idle):
            break
        for key, _ in sel.select(timeout=0.2):
            if key.fileobj is srv:
                c, peer = srv.accept()
                c.setblocking(False)
                nconn += 1
                conns[c] = [nconn, 0, time.monotonic()]
                key_n = nconn if a.split else 1
                if key_n not in files:
                    name = f"{a.output}.{key_n}"
                    files[key_n] = (name, open(name, "wb"))
                conns[c].append(key_n)
                sel.register(c, selectors.EVENT_READ)
                print(f"fpm-capture: connection {nconn} from {peer[0]}:{peer[1]}", file=sys.stderr)
                continue
            c = key.fileobj
            try:
                b = c.recv(1 << 16)
            except BlockingIOError:
                continue
            except ConnectionError:
                b = b""
            if not b:
                n, got, t0, _ = conns.pop(c)
                print(f"fpm-capture: connection {n} closed after {got} bytes, "
                      f"{time.monotonic() - t0:.3f} s", file=sys.stderr)
                sel.unregister(c)
                c.close()
                continue
            conns[c][1] += len(b)
            key_n = conns[c][3]
            f = files[key_n][1]
            f.write(b)
            f.flush()
            data.setdefault(key_n, bytearray()).extend(b)
            last = time.monotonic()
    for c, (n, got, _, _) in conns.items():
        print(f"fpm-capture: connection {n} still open, {got} bytes", file=sys.stderr)
        c.close()
    for key_n, (name, f) in sorted(files.items()):
        f.close()
        got = data.get(key_n, b"")
        print(f"fpm-capture: {len(got)} bytes written to {name}", file=sys.stderr)
        if a.summary:
            print(f"fpm-capture: {name}: " + summarize(bytes(got)), file=sys.stderr)


if __name__ == "__main__":
    main()
