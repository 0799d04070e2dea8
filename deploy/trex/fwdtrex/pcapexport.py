"""Export the first packets of a loaded profile's streams to a pcap.

The base packet of each stream is the TRex library's own (the stream's
compiled packet, `to_json()["packet"]`); packet k of a stream is that base
with the stream's field-engine program (`to_json()["vm"]["instructions"]`)
executed k+1 times, as the TRex server does on one core:

- `flow_var` with op inc/dec: the first packet carries init_value; each
  next one steps with TRex's wrap-around (inc_mod / dec_mod in trex-core's
  trex_stl_stream_vm.h: past max the value restarts at min, and the restart
  consumes one of the step's units);
- `write_flow_var`: (value + add_value) modulo the variable's size, written
  big- or little-endian at pkt_offset;
- `fix_checksum_ipv4`: the IPv4 header checksum at pkt_offset;
- `fix_checksum_hw`: what the NIC offload does: the IPv4 header checksum
  (when L3 is IPv4) and the UDP/TCP checksum (l4_type 11/13; 17 is IP only).

Any other instruction (random variables, whose sequence depends on the
server's per-core seeds, value lists, next_var chains, trim_pkt_size, tuple
generators, masked writes, ...) is refused with VmError naming it: a packet
that the interpreter cannot compute exactly is never emitted as its base.
With several TRex cores (split_to_cores) each core walks its share of the
range; the export is the single-core order.

Streams are interleaved by their rates (packets per second; IMIX 7:4:1
gives 7:4:1 in the pcap): packet j of a stream at rate r is due at j / r
and the pcap is the merge of those timelines (ties: stream order).
"""

import base64
import heapq
import struct
from fractions import Fraction


class VmError(ValueError):
    """A stream whose packets the interpreter cannot compute exactly."""


_SIZES = (1, 2, 4, 8)


def _inc_mod(lo, hi, cur, step):
    left = hi - cur
    return cur + step if step <= left else lo + (step - left - 1)


def _dec_mod(lo, hi, cur, step):
    left = cur - lo
    return cur - step if step <= left else hi - (step - left - 1)


def _csum(data):
    if len(data) % 2:
        data += b"\x00"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def _fix_ipv4(pkt, off, what):
    if off + 20 > len(pkt) or pkt[off] >> 4 != 4:
        raise VmError(f"{what}: no IPv4 header at offset {off}")
    ihl = (pkt[off] & 0x0F) * 4
    if ihl < 20 or off + ihl > len(pkt):
        raise VmError(f"{what}: bad IPv4 header length at offset {off}")
    pkt[off + 10:off + 12] = b"\x00\x00"
    pkt[off + 10:off + 12] = struct.pack("!H", _csum(bytes(pkt[off:off + ihl])))


def _fix_l4(pkt, l3, l4, proto):
    """UDP (17) or TCP (6) checksum with the IPv4/IPv6 pseudo header."""
    version = pkt[l3] >> 4
    if version == 4:
        total = struct.unpack("!H", pkt[l3 + 2:l3 + 4])[0]
        end = l3 + total
        pseudo = bytes(pkt[l3 + 12:l3 + 20]) + struct.pack("!BBH", 0, proto, end - l4)
    elif version == 6:
        plen = struct.unpack("!H", pkt[l3 + 4:l3 + 6])[0]
        end = l3 + 40 + plen
        pseudo = bytes(pkt[l3 + 8:l3 + 40]) + struct.pack("!IxxxB", end - l4, proto)
    else:
        raise VmError(f"fix_checksum_hw: no IP header at offset {l3}")
    if end > len(pkt) or l4 >= end:
        raise VmError("fix_checksum_hw: L4 header beyond the IP payload")
    at = l4 + (6 if proto == 17 else 16)
    pkt[at:at + 2] = b"\x00\x00"
    c = _csum(pseudo + bytes(pkt[l4:end]))
    if proto == 17 and c == 0:
        c = 0xFFFF
    pkt[at:at + 2] = struct.pack("!H", c)


class Program:
    """One stream's base packet and field-engine program, checked at
    construction: every instruction is one the interpreter executes."""

    def __init__(self, base, instructions, name="stream"):
        self.base = bytes(base)
        self.name = name
        self.vars = {}
        self.ops = []
        for i, ins in enumerate(instructions):
            t = ins.get("type")
            where = f"{name}: instruction {i} ({t})"
            if t == "flow_var":
                self._flow_var(ins, where)
            elif t == "write_flow_var":
                if ins["name"] not in self.vars:
                    raise VmError(f"{where}: writes undefined variable {ins['name']!r}")
                size = self.vars[ins["name"]]["size"]
                if ins["pkt_offset"] < 0 or ins["pkt_offset"] + size > len(self.base):
                    raise VmError(f"{where}: offset {ins['pkt_offset']} + {size} outside the {len(self.base)}-byte packet")
                self.ops.append(("write", ins["name"], ins["pkt_offset"], ins.get("add_value", 0),
                                 ins.get("is_big_endian", True), size))
            elif t == "fix_checksum_ipv4":
                self.ops.append(("ipv4", ins["pkt_offset"]))
            elif t == "fix_checksum_hw":
                l4 = {11: 17, 13: 6, 17: None}.get(ins["l4_type"], "bad")
                if l4 == "bad":
                    raise VmError(f"{where}: l4_type {ins['l4_type']} is not UDP (11), TCP (13) or IP (17)")
                self.ops.append(("hw", ins["l2_len"], ins["l3_len"], l4))
            else:
                raise VmError(f"{where}: not supported by the pcap export (it would not be exact)")

    def _flow_var(self, ins, where):
        if ins.get("op") not in ("inc", "dec"):
            raise VmError(f"{where}: op {ins.get('op')!r} is not supported (only inc and dec are reproducible)")
        if ins.get("next_var") is not None:
            raise VmError(f"{where}: next_var chains are not supported")
        if "value_list" in ins:
            raise VmError(f"{where}: value_list is not supported")
        if ins["size"] not in _SIZES:
            raise VmError(f"{where}: size {ins['size']}")
        lo, hi, init, step = ins["min_value"], ins["max_value"], ins["init_value"], ins["step"]
        if not (0 <= lo <= init <= hi < 1 << (8 * ins["size"])) or step < 1:
            raise VmError(f"{where}: bounds min {lo} init {init} max {hi} step {step}")
        if ins["name"] in self.vars:
            raise VmError(f"{where}: variable {ins['name']!r} defined twice")
        self.vars[ins["name"]] = dict(ins)
        self.ops.append(("var", ins["name"]))

    def values(self, k):
        """The variables' values for packet k (0 = the first)."""
        out = {}
        for name, v in self.vars.items():
            lo, hi, step = v["min_value"], v["max_value"], v["step"]
            span = hi - lo + 1
            # k steps of inc_mod from init, in closed form (inc_mod is
            # addition modulo the range's size).
            if v["op"] == "inc":
                out[name] = lo + (v["init_value"] - lo + k * step) % span
            else:
                out[name] = lo + (v["init_value"] - lo - k * step) % span
        return out

    def packet(self, k):
        vals = self.values(k)
        pkt = bytearray(self.base)
        for op in self.ops:
            if op[0] == "write":
                _, name, off, add, big, size = op
                v = (vals[name] + add) % (1 << (8 * size))
                pkt[off:off + size] = v.to_bytes(size, "big" if big else "little")
            elif op[0] == "ipv4":
                _fix_ipv4(pkt, op[1], f"{self.name}: fix_checksum_ipv4")
            elif op[0] == "hw":
                _, l2, l3len, l4 = op
                if pkt[l2] >> 4 == 4:
                    _fix_ipv4(pkt, l2, f"{self.name}: fix_checksum_hw")
                if l4 is not None:
                    _fix_l4(pkt, l2, l2 + l3len, l4)
        return bytes(pkt)


def program_of(stream):
    """The Program of an STLStream (from its compiled JSON)."""
    j = stream.to_json()
    base = base64.b64decode(j["packet"]["binary"])
    return Program(base, j.get("vm", {}).get("instructions", []), stream.get_name() or "stream")


def rate_of(stream):
    rate = stream.to_json()["mode"]["rate"]
    if rate["type"] != "pps":
        raise VmError(f"{stream.get_name()}: rate type {rate['type']!r}; the export interleaves by pps")
    if rate["value"] <= 0:
        raise VmError(f"{stream.get_name()}: rate {rate['value']}")
    return Fraction(rate["value"]).limit_denominator(1 << 20)


def packets(streams, n):
    """The first n packets of the streams interleaved by rate:
    [(stream index, packet index, bytes)]."""
    progs = [program_of(s) for s in streams]
    rates = [rate_of(s) for s in streams]
    heap = [(Fraction(0), i, 0) for i in range(len(progs))]
    heapq.heapify(heap)
    out = []
    while heap and len(out) < n:
        _, i, j = heapq.heappop(heap)
        out.append((i, j, progs[i].packet(j)))
        heapq.heappush(heap, (Fraction(j + 1) / rates[i], i, j + 1))
    return out


def write_pcap(path, frames):
    """A classic pcap (microseconds, Ethernet); frames are bytes."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", i // 1000000, i % 1000000, len(fr), len(fr)))
            f.write(fr)


def read_pcap(path):
    """The frames of a classic pcap (either byte order, us or ns)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        raise ValueError(f"{path}: not a pcap (too short)")
    magic = struct.unpack("<I", data[:4])[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        e = "<"
    elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
        e = ">"
    else:
        raise ValueError(f"{path}: not a pcap (magic {magic:#x})")
    out, off = [], 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(e + "IIII", data[off:off + 16])
        off += 16
        out.append(data[off:off + incl])
        off += incl
    return out


def export(streams, n, path):
    """Writes the first n packets to `path`; returns packets()'s list."""
    pk = packets(streams, n)
    write_pcap(path, [p for _, _, p in pk])
    return pk


def main(argv=None):
    """python3 -m fwdtrex.pcapexport PROFILE -n N -o OUT.pcap [-d DIR] [-t k=v,...]
    (with the TRex tooling's python: it loads the profile with the library)."""
    import argparse
    import sys

    ap = argparse.ArgumentParser(prog="python3 -m fwdtrex.pcapexport",
                                 description="Export the first N packets of a TRex profile to a pcap.")
    ap.add_argument("profile", help="a profile file, e.g. deploy/trex/profiles/ip4_routing.py")
    ap.add_argument("-n", "--count", type=int, required=True, help="packets to export")
    ap.add_argument("-o", "--out", required=True, help="the pcap to write")
    ap.add_argument("-d", "--direction", type=int, choices=(0, 1), default=0,
                    help="the TRex port's direction (port_id %% 2)")
    ap.add_argument("-t", "--tunables", default="", help="the profile's tunables: k=v,k=v")
    a = ap.parse_args(argv)
    if a.count < 1:
        ap.error("--count must be >= 1")
    tun = {}
    for tok in filter(None, a.tunables.split(",")):
        k, sep, v = tok.partition("=")
        if not sep or not k:
            ap.error(f"bad tunable {tok!r}: expected k=v")
        tun[k] = v
    import lbr_trex_client  # noqa: F401  (puts `trex` on sys.path)
    from trex.stl.api import STLProfile

    prof = STLProfile.load_py(a.profile, direction=a.direction, port_id=a.direction, **tun)
    try:
        pk = export(prof.get_streams(), a.count, a.out)
    except VmError as e:
        print(f"pcapexport: {e}", file=sys.stderr)
        return 1
    print(f"wrote {len(pk)} packets to {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
