"""The streams of the load-test profiles, built from plans.py.

The profile files in deploy/trex/profiles are thin: they parse their
tunables and call these builders. Needs the TRex client library
(`trex.stl.api`): on a TRex server it is there; elsewhere `lbr_trex_client`
provides it (imported first, it puts `trex` on sys.path).

Frame sizes are given the way TRex counts them, FCS included: a 64 B frame
is a 60-byte packet (TRex's packet builder leaves the FCS to the NIC).
"""

try:
    from trex.stl.api import (  # noqa: F401
        IP, UDP, STLFlowLatencyStats, STLPktBuilder, STLStream, STLTXCont, STLVM,
        CTRexVmInsFixHwCs, Ether, IPv6,
    )
except ImportError:
    import lbr_trex_client  # noqa: F401  (puts `trex` on sys.path)
    from trex.stl.api import (  # noqa: F401
        IP, UDP, STLFlowLatencyStats, STLPktBuilder, STLStream, STLTXCont, STLVM,
        CTRexVmInsFixHwCs, Ether, IPv6,
    )

from . import plans


def _base(family, direction, dst, src, frame):
    d = direction
    l2 = Ether(src=plans.TREX_MAC[d], dst=plans.APPLIANCE_MAC[d])
    if family == 4:
        l3 = IP(src=str(src), dst=str(dst), ttl=64)
    else:
        l3 = IPv6(src=str(src), dst=str(dst), hlim=64)
    pkt = l2 / l3 / UDP(sport=plans.UDP_SPORT, dport=plans.UDP_DPORT)
    pad = frame - plans.FCS - len(pkt)
    if pad < 0:
        raise ValueError(f"a {frame} B frame cannot hold IPv{family}/UDP ({len(pkt) + plans.FCS} B)")
    return pkt / (b"\x00" * pad)


def _vm(family, dsts, srcs):
    l3 = "IP" if family == 4 else "IPv6"
    vm = STLVM()
    if dsts.count > 1:
        vm.var(name="dst", min_value=dsts.var_min, max_value=dsts.var_max,
               step=dsts.step, size=4, op="inc")
        vm.write(fv_name="dst", pkt_offset=f"{l3}.dst", offset_fixup=dsts.var_offset)
    if srcs.flows > 1:
        vm.var(name="src", min_value=srcs.var_min, max_value=srcs.var_max,
               step=1, size=4, op="inc")
        vm.write(fv_name="src", pkt_offset=f"{l3}.src", offset_fixup=srcs.var_offset)
    # The NIC fills in the IPv4 header and UDP checksums (mlx5, i40e and
    # ice all offload both).
    vm.fix_chksum_hw(l3_offset=l3, l4_offset="UDP", l4_type=CTRexVmInsFixHwCs.L4_TYPE_UDP)
    return vm


def routing(family, direction, size, dests, flows):
    """One stream per frame size (IMIX: three, rates 7:4:1), destinations
    spread over the direction's block, sources over `flows` addresses."""
    dsts = plans.DstRange(family, direction, dests)
    srcs = plans.SrcRange(family, direction, flows)
    out = []
    for frame, weight in plans.frame_sizes(size, family):
        pkt = _base(family, direction, dsts.address(0), srcs.address(0), frame)
        out.append(STLStream(
            name=f"ip{family}-d{direction}-{frame}B",
            packet=STLPktBuilder(pkt=pkt, vm=_vm(family, dsts, srcs)),
            mode=STLTXCont(pps=weight),
        ))
    return out


def acl(direction, size, flows):
    """CSIT iacl traffic: UDP from `flows` sources of the direction's source
    block to one destination of its block (the permit matches it all)."""
    return routing(4, direction, size, 1, flows)


# TRex writes its latency header (16 bytes) at the end of a latency
# stream's packet: the UDP payload must hold it.
LATENCY_HEADER = 16


def latency_min_frame(family):
    return max(plans.MIN_FRAME[family], 14 + (20 if family == 4 else 40) + 8 + LATENCY_HEADER + plans.FCS)


def latency(family, direction, size, pps, pg_id):
    """One latency stream (flow_stats with pg_id): fixed addresses, routed
    like the first destination of the direction's block."""
    dsts = plans.DstRange(family, direction, 1)
    srcs = plans.SrcRange(family, direction, 1)
    (frame, _), = plans.frame_sizes(size, family)
    if frame < latency_min_frame(family):
        raise ValueError(f"a latency frame of IPv{family} must be >= {latency_min_frame(family)} B"
                         f" (TRex's {LATENCY_HEADER}-byte latency header goes in the UDP payload)")
    pkt = _base(family, direction, dsts.address(0), srcs.address(0), frame)
    return [STLStream(
        name=f"latency-ip{family}-d{direction}",
        packet=STLPktBuilder(pkt=pkt, vm=_vm(family, dsts, srcs)),
        mode=STLTXCont(pps=pps),
        flow_stats=STLFlowLatencyStats(pg_id=pg_id),
    )]
