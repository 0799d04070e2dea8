"""What the profiles share: finding the fwdtrex package of this checkout
(TRex loads a profile by path, with only the profile's directory on
sys.path), the tunables' parser and the routing profile of either family."""

import argparse
import os
import sys

_TREX_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
if _TREX_DIR not in sys.path:
    sys.path.insert(0, _TREX_DIR)

from fwdtrex import plans, streams  # noqa: E402


def parser(description):
    return argparse.ArgumentParser(
        description=description,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )


def direction_of(kwargs):
    """TRex passes `direction` (port_id % 2 unless told otherwise)."""
    d = kwargs.get("direction", 0)
    if d not in (0, 1):
        raise ValueError(f"direction must be 0 or 1, not {d!r}")
    return d


class RoutingProfile:
    """UDP to N destinations spread over the direction's block of the plan
    (ip4_routing.py, ip6_routing.py): tunables size (FCS included, or imix;
    default the family's smallest frame), dests, flows."""

    def __init__(self, family):
        self.family = family

    def get_streams(self, tunables, **kwargs):
        p = parser(f"IPv{self.family} routing over the plan's destination block")
        p.add_argument("--size", default=str(plans.MIN_FRAME[self.family]),
                       help="frame size in bytes (FCS included) or imix")
        p.add_argument("--dests", type=int, default=10000,
                       help="destinations: 1000, 10000 or 1000000 in the test matrix")
        p.add_argument("--flows", type=int, default=1000, help="source addresses")
        args = p.parse_args(tunables)
        return streams.routing(self.family, direction_of(kwargs), args.size, args.dests, args.flows)
