"""The "reconf" test (FD.io CSIT's): hold a rate while the configuration
changes, and turn the loss into the time the data path was effectively
blocked: lost packets / offered rate. The goal is zero: a table generation
is published atomically and workers never wait for the writer.

The two actions of issue 13, as `fwdctl -b` batches (one generation each):
- routes: N route changes, /24s from a base address: N/2 `route replace`
  (which adds when missing) then the N/2 `route del` of the same prefixes,
  so the batch leaves the tables as it found them and can be repeated;
- rules: a rule-set replacement: `rule flush`, N-1 deny rules that the
  test traffic does not match (src in 192.0.2.0/24, TEST-NET-1, by UDP
  port) and a final match-all permit, so the set the traffic meets after
  the swap forwards it.
Either can be given as a file instead (the plan's own changes).
"""

import ipaddress


def blocked(offered, received, duration):
    """Blocked time of one held trial: {"offered", "received", "lost",
    "offered_rate", "blocked_s"}. `duration` is the trial's duration in
    seconds; the offered rate is offered / duration."""
    if offered <= 0 or duration <= 0:
        raise ValueError("nothing was offered: no blocked time can be computed")
    if received > offered:
        raise ValueError(
            f"received more ({received}) than offered ({offered}): "
            "stray traffic reached the receiving port"
        )
    lost = offered - received
    rate = offered / duration
    return {
        "offered": offered,
        "received": received,
        "lost": lost,
        "offered_rate": rate,
        "blocked_s": lost / rate,
    }


def route_batch(n, base, via, dev):
    """`n` route changes (n even): n/2 `route replace` of consecutive /24s
    from `base`, via `via` dev `dev`, then their n/2 `route del`."""
    if n <= 0 or n % 2:
        raise ValueError(f"route changes: {n}: must be a positive even number (adds + deletes)")
    try:
        start = ipaddress.IPv4Network(f"{base}/24")
    except ValueError:
        raise ValueError(f"route base {base}: not the first address of an IPv4 /24") from None
    half = n // 2
    first = int(start.network_address)
    if first + (half << 8) > 1 << 32:
        raise ValueError(f"route base {base}: {half} /24s run past 255.255.255.0")
    nets = [ipaddress.IPv4Address(first + (i << 8)) for i in range(half)]
    lines = [f"route replace {a}/24 via {via} dev {dev}" for a in nets]
    lines += [f"route del {a}/24" for a in nets]
    return ("\n".join(lines) + "\n").encode()


def rule_batch(n):
    """A rule-set replacement of `n` rules: `rule flush`, n-1 deny rules
    the test traffic does not match, then a match-all permit."""
    if not 1 <= n <= 131_072:
        raise ValueError(f"rules: {n}: must be 1 to 131072 (the appliance's limit)")
    lines = ["rule flush"]
    for i in range(n - 1):
        lines.append(
            f"rule add prio {i + 1} src 192.0.2.{i % 256}/32 proto udp "
            f"dport {1 + i // 256} action drop"
        )
    lines.append(f"rule add prio {n} action permit")
    return ("\n".join(lines) + "\n").encode()
