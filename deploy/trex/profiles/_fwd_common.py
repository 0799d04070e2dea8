"""What the profiles share: finding the fwdtrex package of this checkout
(TRex loads a profile by path, with only the profile's directory on
sys.path) and the tunables' parser."""

import argparse
import os
import sys

_TREX_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
if _TREX_DIR not in sys.path:
    sys.path.insert(0, _TREX_DIR)


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
