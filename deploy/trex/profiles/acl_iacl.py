"""CSIT's iacl matrix traffic (stateless): UDP from --flows sources (100 or
10000) to the direction's first destination. The rule set (1, 10 or 50
non-matching deny rules, then the permit) is the appliance's side:
fwdtrex.appliance writes it from the same plan.

  start -f deploy/trex/profiles/acl_iacl.py --port 0 1 -m 10mpps -t flows=10000
"""

import _fwd_common as _common  # puts fwdtrex on sys.path
from fwdtrex import streams


class Profile:
    def get_streams(self, tunables, **kwargs):
        p = _common.parser("ACL iacl matrix traffic")
        p.add_argument("--size", default="64", help="frame size in bytes (FCS included) or imix")
        p.add_argument("--flows", type=int, default=100, help="flows (source addresses): 100 or 10000")
        args = p.parse_args(tunables)
        return streams.acl(_common.direction_of(kwargs), args.size, args.flows)


def register():
    return Profile()
