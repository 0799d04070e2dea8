"""TRex's latency statistics, summarized: min/avg/max, jitter, the error
counters, and percentiles.

The library's shape (trex.stl trex_stl_stats.py, lbr-trex-client 3.4.0):
stats['latency'][pg_id] = {'err_cntrs': {...}, 'latency': {'total_min',
'total_max', 'average', 'jitter', 'last_max', 'histogram': {usec: count},
and 'hdrh' when the server sends it}}. Times are microseconds.

Percentiles come from the HDR histogram when the server sends one ('hdrh':
a base64 HdrHistogram V2 compressed encoding, decoded here with the
standard library), otherwise from TRex's coarse log histogram, where they
are reported as the bucket holding the percentile (lower edge; the bucket
{100: 13} holds 13 packets between 100 and 200 usec), and named so.
"""

import base64
import struct
import zlib

PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99)

# A histogram from the server is data, not trusted: bounded when inflated.
# (TRex's, 1 usec to hours at 3 digits, has some 50k counters.)
MAX_COUNTERS = 1 << 22
MAX_PAYLOAD = 64 << 20

_COMPRESSED_COOKIE = 0x1C849304
_ENCODING_COOKIE = 0x1C849303


class HdrhError(ValueError):
    pass


def _varints(buf):
    """HdrHistogram's ZigZag LEB128 64-bit integers (at most 9 bytes each:
    the 9th carries 8 bits)."""
    i, n = 0, len(buf)
    while i < n:
        value, shift = 0, 0
        for k in range(9):
            if i >= n:
                raise HdrhError("hdrh: truncated counter")
            b = buf[i]
            i += 1
            if k == 8:
                value |= b << shift
                break
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        yield (value >> 1) ^ -(value & 1)


class HdrHistogram:
    """The counts of a decoded histogram and the index -> value mapping of
    HdrHistogram (lowest trackable value, significant figures)."""

    def __init__(self, lowest, highest, digits, counts):
        if lowest < 1 or not 0 <= digits <= 5 or highest < 2 * lowest:
            raise HdrhError(f"hdrh: bad header (lowest {lowest}, highest {highest}, digits {digits})")
        largest_single = 2 * 10**digits
        sub_bucket_count_magnitude = (largest_single - 1).bit_length()
        self.sub_half_mag = max(sub_bucket_count_magnitude, 1) - 1
        self.sub_count = 1 << (self.sub_half_mag + 1)
        self.sub_half = self.sub_count // 2
        self.unit_mag = lowest.bit_length() - 1
        self.sub_mask = (self.sub_count - 1) << self.unit_mag
        self.counts = counts
        self.total = sum(counts)

    def value_at_index(self, index):
        bucket = (index >> self.sub_half_mag) - 1
        sub = (index & (self.sub_half - 1)) + self.sub_half
        if bucket < 0:
            sub -= self.sub_half
            bucket = 0
        return sub << (bucket + self.unit_mag)

    def _range(self, value):
        bucket = (value | self.sub_mask).bit_length() - self.unit_mag - (self.sub_half_mag + 1)
        sub = value >> (bucket + self.unit_mag)
        if sub >= self.sub_count:
            bucket += 1
        return 1 << (self.unit_mag + bucket)

    def highest_equivalent(self, value):
        lowest = value & ~(self._range(value) - 1)
        return lowest + self._range(value) - 1

    def value_at_percentile(self, p):
        if not self.total:
            return 0
        want = max(1, int(p * self.total / 100 + 0.5))
        seen = 0
        for i, c in enumerate(self.counts):
            seen += c
            if seen >= want:
                return self.highest_equivalent(self.value_at_index(i))
        return 0

    def min(self):
        for i, c in enumerate(self.counts):
            if c:
                return self.value_at_index(i)
        return 0

    def max(self):
        for i in range(len(self.counts) - 1, -1, -1):
            if self.counts[i]:
                return self.highest_equivalent(self.value_at_index(i))
        return 0


def decode_hdrh(text):
    """A base64 HdrHistogram V2 compressed encoding -> HdrHistogram."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (ValueError, TypeError) as e:
        raise HdrhError(f"hdrh: not base64: {e}") from None
    if len(raw) < 8:
        raise HdrhError("hdrh: too short")
    cookie, length = struct.unpack(">iI", raw[:8])
    if cookie & ~0xF0 != _COMPRESSED_COOKIE:
        raise HdrhError(f"hdrh: not a compressed V2 histogram (cookie {cookie:#x})")
    try:
        z = zlib.decompressobj()
        payload = z.decompress(raw[8 : 8 + length], MAX_PAYLOAD)
    except zlib.error as e:
        raise HdrhError(f"hdrh: {e}") from None
    if z.unconsumed_tail:
        raise HdrhError(f"hdrh: inflates past {MAX_PAYLOAD} bytes")
    if len(payload) < 40:
        raise HdrhError("hdrh: payload too short")
    cookie, counts_len, norm, digits, lowest, highest, _ratio = struct.unpack(
        ">iiiiqqd", payload[:40]
    )
    if cookie & ~0xF0 != _ENCODING_COOKIE:
        raise HdrhError(f"hdrh: not a V2 encoding (cookie {cookie:#x})")
    if norm != 0:
        raise HdrhError("hdrh: shifted histograms (normalizing offset) are not supported")
    body = payload[40 : 40 + counts_len]
    counts = []
    for v in _varints(body):
        n = -v if v < 0 else 1
        if len(counts) + n > MAX_COUNTERS:
            raise HdrhError(f"hdrh: more than {MAX_COUNTERS} counters")
        if v < 0:
            counts.extend([0] * n)
        else:
            counts.append(v)
    return HdrHistogram(lowest, highest, digits, counts)


def log_histogram_percentiles(hist, percentiles=PERCENTILES):
    """From TRex's {usec_lower_edge: count}: the lower edge of the bucket
    holding each percentile."""
    items = sorted((int(k), int(v)) for k, v in hist.items() if int(v) > 0)
    total = sum(v for _, v in items)
    out = {}
    if not total:
        return out
    for p in percentiles:
        want = max(1, int(p * total / 100 + 0.5))
        seen = 0
        for edge, count in items:
            seen += count
            if seen >= want:
                out[_pname(p)] = edge
                break
    return out


def _pname(p):
    return "p" + (f"{p:g}")


def summarize(pg):
    """One pg_id's latency stats -> a flat summary dict (usec)."""
    lat = pg.get("latency", {})
    out = {
        "min_us": lat.get("total_min"),
        "avg_us": lat.get("average"),
        "max_us": lat.get("total_max"),
        "jitter_us": lat.get("jitter"),
        "errors": {k: v for k, v in (pg.get("err_cntrs") or {}).items() if v},
    }
    hdrh = lat.get("hdrh")
    if hdrh:
        h = decode_hdrh(hdrh)
        out["samples"] = h.total
        out["percentiles_from"] = "hdrh"
        out["percentiles_us"] = {_pname(p): h.value_at_percentile(p) for p in PERCENTILES}
    elif lat.get("histogram"):
        out["percentiles_from"] = "log histogram (bucket lower edge)"
        out["percentiles_us"] = log_histogram_percentiles(lat["histogram"])
    else:
        out["percentiles_from"] = None
        out["percentiles_us"] = {}
    return out
