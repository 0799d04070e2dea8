"""IPv6 routing: UDP to N destinations spread over the direction's block
(routed via the far TRex port, beside a loaded full view), from --flows
sources. Frame size 64-style integer (FCS included) or imix.

  start -f deploy/trex/profiles/ip6_routing.py --port 0 1 -m 10mpps \
        -t size=78,dests=10000,flows=1000
"""

import _fwd_common as _common  # puts fwdtrex on sys.path


def register():
    return _common.RoutingProfile(6)
