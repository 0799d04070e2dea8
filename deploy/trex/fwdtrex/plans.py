"""The address plan of every load test: one source of truth.

The TRex profiles (deploy/trex/profiles) take their packets' addresses from
here and appliance.py takes the appliance's config from here, so what TRex
sends and what the appliance routes cannot drift apart.

Cabling: TRex port 0 <-> appliance port p0, TRex port 1 <-> appliance p1.
Direction d: TRex port d sends into appliance port p<d>; the appliance
routes the traffic out of p<1-d> to TRex port 1-d (its neighbour there).

Destinations ("1k / 10k / 1M destinations spread across a loaded full
view"): each direction owns one block, IPv4 a /10 routed as 16,384 /24s and
IPv6 a /34 routed as 16,384 /48s, every route via the far TRex port. The
N destinations of a run are spread evenly over the whole block (stride =
block size / N), so 1k destinations touch 1k different /24s (or /48s) and
1M destinations touch every one of them: the lookups hit many FIB entries
rather than one. The full view (a real Internet table from FWD_DATA, or a
generated stand-in) is loaded beside them with every route via the far TRex
port of direction 0; its prefixes that fall inside a block are left out so
that the block's own routes decide every generated destination (a full-view
/24 equal to a block route would be a duplicate, and one more specific would
steer direction 1's traffic the wrong way). The blocks stay as deep in the
FIB as the full view makes them: the full view's covering prefixes
(e.g. a 16.0.0.0/8) remain.
"""

import ipaddress
import random

# TRex side: the MACs TRex sends from (trex_cfg.yaml `src_mac`) and the
# addresses the appliance uses as next hops.
TREX_MAC = ("02:00:00:00:00:10", "02:00:00:00:00:11")
TREX_V4 = ("192.168.10.2", "192.168.11.2")
TREX_V6 = ("fd00:10::2", "fd00:11::2")

# Appliance side.
PORTS = ("p0", "p1")
APPLIANCE_V4 = ("192.168.10.1/24", "192.168.11.1/24")
APPLIANCE_V6 = ("fd00:10::1/64", "fd00:11::1/64")
# The MAC written as destination in the profiles' packets. On bare metal
# TRex's port config replaces it (trex_cfg.yaml `dest_mac` = the appliance
# port's MAC); fwd forwards whatever the destination MAC (promiscuous).
APPLIANCE_MAC = ("02:00:00:00:01:00", "02:00:00:00:01:01")

# Each direction's destination block and the length of its routes.
DST_V4 = (ipaddress.ip_network("16.0.0.0/10"), ipaddress.ip_network("48.0.0.0/10"))
DST_V6 = (
    ipaddress.ip_network("2001:db8::/34"),
    ipaddress.ip_network("2001:db8:4000::/34"),
)
ROUTE_LEN = {4: 24, 6: 48}
# Sources: the flows of direction d come from this block (not routed: the
# appliance only routes on the destination).
SRC_V4 = (ipaddress.ip_network("100.64.0.0/16"), ipaddress.ip_network("100.65.0.0/16"))
SRC_V6 = (ipaddress.ip_network("fd00:64::/64"), ipaddress.ip_network("fd00:65::/64"))
UDP_SPORT = 1024
UDP_DPORT = 1024

DESTINATIONS = (1000, 10000, 1000000)
FLOWS = (100, 10000)
ACL_DENY_RULES = (1, 10, 50)
# CSIT's IMIX: 64, 570 and 1518 byte frames (FCS included), 7:4:1
# (IPv6: 78, 570, 1518).
IMIX = ((64, 28), (570, 16), (1518, 4))
FCS = 4
# The IPv6 minimum: Ethernet + IPv6 + UDP is 62 bytes; CSIT uses 78.
MIN_FRAME = {4: 64, 6: 78}


def other(direction):
    """The port a direction's traffic leaves the appliance by."""
    check_direction(direction)
    return 1 - direction


def far_hop(direction, family=4):
    """(address, appliance port) of the far TRex port of a direction: the
    next hop the appliance sends that direction's traffic to."""
    o = other(direction)
    return (TREX_V4[o] if family == 4 else TREX_V6[o]), PORTS[o]


def check_direction(direction):
    if direction not in (0, 1):
        raise ValueError(f"direction must be 0 or 1, not {direction!r}")


def dst_block(family, direction):
    check_direction(direction)
    if family == 4:
        return DST_V4[direction]
    if family == 6:
        return DST_V6[direction]
    raise ValueError(f"family must be 4 or 6, not {family!r}")


class DstRange:
    """N destinations spread over a direction's block: base + k * stride.

    `var_offset` is where in the destination address the 32-bit field-engine
    variable sits (0 for IPv4, bytes 4..7 for IPv6), `var_min`/`var_max`/
    `step` are that variable's bounds: max is set one stride short of the
    next value so that TRex's wrap-around (inc_mod: min + step - left - 1)
    lands exactly on min again.
    """

    def __init__(self, family, direction, count):
        if count < 1:
            raise ValueError(f"the number of destinations must be >= 1, not {count}")
        block = dst_block(family, direction)
        self.family = family
        self.block = block
        self.count = count
        if family == 4:
            self.var_offset = 0
            first = int(block.network_address)
            span = block.num_addresses
        else:
            # The variable is address bits 32..63: the block's prefix
            # (a /34) lies in the first 32 + 2 bits.
            self.var_offset = 4
            first = (int(block.network_address) >> 64) & 0xFFFFFFFF
            span = 1 << (64 - block.prefixlen)
        if count > span:
            raise ValueError(f"{count} destinations do not fit in {block}")
        self.stride = span // count
        self.var_min = first
        self.var_max = first + count * self.stride - 1
        self.step = self.stride
        self._first = int(block.network_address)

    def address(self, k):
        """The k-th destination (k in 0..count)."""
        if not 0 <= k < self.count:
            raise IndexError(k)
        if self.family == 4:
            return ipaddress.IPv4Address(self._first + k * self.stride)
        return ipaddress.IPv6Address(self._first + ((k * self.stride) << 64))

    def addresses(self):
        return [self.address(k) for k in range(self.count)]


class SrcRange:
    """The flows' sources: base + k, k < flows."""

    def __init__(self, family, direction, flows):
        check_direction(direction)
        block = SRC_V4[direction] if family == 4 else SRC_V6[direction]
        if not 1 <= flows <= min(block.num_addresses - 2, 1 << 16):
            raise ValueError(f"flows must be 1..{min(block.num_addresses - 2, 1 << 16)}, not {flows}")
        self.family = family
        self.flows = flows
        self.first = block.network_address + 1
        # Like the destinations, a 32-bit variable: the low 32 bits.
        low = int(self.first) & 0xFFFFFFFF
        self.var_offset = 0 if family == 4 else 12
        self.var_min = low
        self.var_max = low + flows - 1

    def address(self, k):
        return self.first + (k % self.flows)


def frame_sizes(size, family):
    """The frame sizes (FCS included) and their rate weights for a `size`
    tunable: an integer or 'imix'."""
    if isinstance(size, str) and size.lower() == "imix":
        # IPv6's smallest frame is 78 B (CSIT's IPv6 IMIX too).
        return [(max(f, MIN_FRAME[family]), w) for f, w in IMIX]
    try:
        n = int(size)
    except (TypeError, ValueError):
        raise ValueError(f"size must be a frame size in bytes or 'imix', not {size!r}") from None
    if not MIN_FRAME[family] <= n <= 9018:
        raise ValueError(
            f"size {n}: IPv{family} UDP frames are {MIN_FRAME[family]}..9018 bytes"
            f" (FCS included)"
        )
    return [(n, 1)]


def link_routes():
    """The appliance's interface addresses: (port, cidr) both families."""
    out = []
    for i, p in enumerate(PORTS):
        out.append((p, APPLIANCE_V4[i]))
        out.append((p, APPLIANCE_V6[i]))
    return out


def neighbours():
    """The TRex ports as the appliance's static neighbours: (ip, mac, port)."""
    out = []
    for i, p in enumerate(PORTS):
        out.append((TREX_V4[i], TREX_MAC[i], p))
        out.append((TREX_V6[i], TREX_MAC[i], p))
    return out


def block_routes(family, directions=(0, 1)):
    """Every route of the destination blocks: (prefix, via, dev)."""
    out = []
    for d in directions:
        via, dev = far_hop(d, family)
        for net in dst_block(family, d).subnets(new_prefix=ROUTE_LEN[family]):
            out.append((str(net), via, dev))
    return out


def full_view_routes(prefixes, family):
    """The full view as routes via direction 0's far TRex port, leaving out
    what falls inside a destination block or a link subnet (see the module
    doc). `prefixes`: an iterable of CIDR strings."""
    skip = [dst_block(family, d) for d in (0, 1)]
    skip += [ipaddress.ip_interface(a).network for _, a in link_routes()]
    skip = [n for n in skip if n.version == family]
    via, dev = far_hop(0, family)
    out = []
    seen = set()
    for text in prefixes:
        text = text.strip()
        if not text or text.startswith("#"):
            continue
        net = ipaddress.ip_network(text, strict=True)
        if net.version != family or net in seen:
            continue
        if net.prefixlen == 0 or any(net.subnet_of(s) for s in skip):
            continue
        seen.add(net)
        out.append((str(net), via, dev))
    return out


def generated_full_view(family, count, seed=13):
    """A stand-in full view: `count` distinct random prefixes of the usual
    lengths (IPv4 /8../24, IPv6 /16../48), deterministic for a seed."""
    rng = random.Random(seed)
    bits = 32 if family == 4 else 128
    lens = range(8, 25) if family == 4 else range(16, 49)
    out = set()
    while len(out) < count:
        ln = rng.choice(lens)
        addr = rng.getrandbits(ln) << (bits - ln)
        if family == 4:
            net = ipaddress.IPv4Network((addr, ln))
        else:
            net = ipaddress.IPv6Network((addr, ln))
        out.add(str(net))
    return sorted(out)


class AclPlan:
    """CSIT's iacl matrix: `deny` rules that match none of the traffic, in
    front of the permits that match it (one per direction), and a last rule
    dropping everything else, which makes the rule set a whitelist as a
    VPP ACL is (fwd routes what no verdict stopped: without that last rule
    a missing permit would go unnoticed).

    The deny rules differ from the traffic in the source (172.16.0.0/12 is
    never a TRex source), with varied destinations, protocols and ports so
    that the classifier cannot dismiss them on one field.
    """

    def __init__(self, deny, permit=True):
        if deny < 0 or deny > 10000:
            raise ValueError(f"deny rules must be 0..10000, not {deny}")
        self.deny = deny
        self.permit = permit

    def rules(self):
        """fwdctl `rule add` arguments, in precedence order."""
        out = []
        for i in range(self.deny):
            src = ipaddress.ip_network((int(ipaddress.ip_address("172.16.0.0")) + (i << 8), 24))
            d = i % 2
            dst = dst_block(4, d)
            proto = ("udp", "tcp")[i % 3 == 2]
            out.append(
                f"prio {10 + i} src {src} dst {dst} proto {proto}"
                f" dport {1000 + i}-{2000 + i} action drop"
            )
        prio = 10 + self.deny
        if self.permit:
            for d in (0, 1):
                out.append(
                    f"prio {prio + d} src {SRC_V4[d]} dst {dst_block(4, d)} proto udp"
                    f" dport {UDP_DPORT} action permit"
                )
        out.append(f"prio {prio + 2} action drop")
        return out
