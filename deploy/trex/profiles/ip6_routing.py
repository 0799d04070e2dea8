"""IPv6 routing: UDP to N destinations spread over the direction's block
(routed via the far TRex port, beside a loaded full view), from --flows
sources. Frame size 64-style integer (FCS included) or imix.

  start -f deploy/trex/profiles/ip6_routing.py --port 0 1 -m 10mpps \
        -t size=78,dests=10000,flows=1000
"""

import _fwd_common as _common  # puts fwdtrex on sys.path
from fwdtrex import streams


class Profile:
    def get_streams(self, tunables, **kwargs):
        p = _common.parser("IPv6 routing over the plan's destination block")
        p.add_argument("--size", default="78", help="frame size in bytes (FCS included) or imix")
        p.add_argument("--dests", type=int, default=10000, help="destinations: 1000, 10000 or 1000000 in the test matrix")
        p.add_argument("--flows", type=int, default=1000, help="source addresses")
        args = p.parse_args(tunables)
        return streams.routing(6, _common.direction_of(kwargs), args.size, args.dests, args.flows)


def register():
    return Profile()
