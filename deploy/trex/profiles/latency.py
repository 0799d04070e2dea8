"""A latency stream (flow_stats with a pg_id; TRex measures min/avg/max and
the histogram), run beside a load profile or alone. pg_id = --pg-id +
direction, so both ports' streams are told apart.

  start -f deploy/trex/profiles/latency.py --port 0 1 -t family=4,pps=10000
"""

import _fwd_common as _common  # puts fwdtrex on sys.path
from fwdtrex import streams


class Profile:
    def get_streams(self, tunables, **kwargs):
        p = _common.parser("latency stream")
        p.add_argument("--family", type=int, choices=(4, 6), default=4)
        p.add_argument("--size", type=int, default=None, help="frame size (default: the smallest that holds TRex's latency header: 64 B IPv4, 82 B IPv6)")
        p.add_argument("--pps", type=int, default=1000, help="packets per second")
        p.add_argument("--pg-id", type=int, default=100, help="pg_id of direction 0; direction 1 gets pg_id + 1")
        args = p.parse_args(tunables)
        if args.pps < 1:
            p.error("--pps must be >= 1")
        d = _common.direction_of(kwargs)
        size = args.size if args.size is not None else streams.latency_min_frame(args.family)
        return streams.latency(args.family, d, size, args.pps, args.pg_id + d)


def register():
    return Profile()
