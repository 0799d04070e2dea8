"""The appliance's side of a load test, written from plans.py: the fwd
config (YAML) and its tables as `fwdctl -b` change lines.

Two targets:
- bare metal (`bare_metal_config`): the two ports are PCI devices, with
  lcores, RX queues (RSS spreads the flows over them), hugepages; the
  addresses and neighbours are in the config and the routes and rules (up to
  a full view: too large for YAML) are applied after start with
  `fwdctl -b tables.batch`, one generation;
- CI (`pcap_config`): net_pcap ports (a finite rx_pcap read once, a tx_pcap
  per port), no PCI, no hugepages, and the whole tables as a saved state
  (`control.load`) so that they are in place before the first packet is
  read.

CLI: python3 -m fwdtrex.appliance TEST --out DIR [--pci A B] [--lcores ..]
(see `--help`) writes fwd.yaml and tables.batch for a test.
"""

import argparse
import json
import os
import sys

from . import plans

TESTS = ("ip4", "ip6", "acl", "latency")


class Test:
    """One cell of the matrix, as far as the appliance is concerned.

    kind: ip4 / ip6 (routing), acl (the iacl matrix, IPv4), latency
    (routes of both families). full_view: prefixes (CIDR text) loaded as
    routes via direction 0's far TRex port, or None. deny: the ACL's
    non-matching deny rules; permit=False leaves the permits out (a
    negative test: all traffic must then drop as acl_drop). directions: the
    directions whose block routes are installed (a negative test leaves one
    out: its traffic must drop as no_route).
    """

    def __init__(self, kind, full_view=None, deny=1, permit=True, directions=(0, 1)):
        if kind not in TESTS:
            raise ValueError(f"test must be one of {', '.join(TESTS)}, not {kind!r}")
        self.kind = kind
        self.full_view = full_view
        self.acl = plans.AclPlan(deny, permit) if kind == "acl" else None
        self.directions = tuple(directions)
        for d in self.directions:
            plans.check_direction(d)

    def families(self):
        return {"ip4": (4,), "ip6": (6,), "acl": (4,), "latency": (4, 6)}[self.kind]


def address_lines():
    return [f"address add {cidr} dev {port}" for port, cidr in plans.link_routes()]


def neighbour_lines():
    return [f"neigh add {ip} lladdr {mac} dev {port}" for ip, mac, port in plans.neighbours()]


def table_lines(test):
    """Routes and rules: the part of the tables that goes in a batch."""
    out = []
    for fam in test.families():
        if test.full_view is not None:
            out += [f"route add {p} via {v} dev {d}" for p, v, d in
                    plans.full_view_routes(test.full_view, fam)]
        out += [f"route add {p} via {v} dev {d}" for p, v, d in
                plans.block_routes(fam, test.directions)]
    if test.acl is not None:
        out += [f"rule add {r}" for r in test.acl.rules()]
    return out


def batch_text(test):
    """`fwdctl -b` input: routes and rules (addresses and neighbours are in
    the config)."""
    return "".join(line + "\n" for line in table_lines(test))


def saved_state_text(test):
    """The whole tables as a saved state for `control.load`."""
    lines = address_lines() + neighbour_lines() + table_lines(test)
    n = len(lines)
    body = "".join(line + "\n" for line in lines)
    return f"# fwd running configuration, generation 1, {n} changes\n{body}# end, {n} changes\n"


def _q(s):
    return json.dumps(str(s))


def _ports_yaml(devices, queues):
    out = ["ports:"]
    for i, p in enumerate(plans.PORTS):
        out.append(f"  - name: {p}")
        out.append(f"    device: {_q(devices[i])}")
        if queues > 1:
            out.append(f"    rx_queues: {queues}")
        out.append(f"    addresses: [{_q(plans.APPLIANCE_V4[i])}, {_q(plans.APPLIANCE_V6[i])}]")
    return out


def _neigh_yaml():
    out = ["neighbours:"]
    for ip, mac, port in plans.neighbours():
        out.append(f"  - {{ip: {_q(ip)}, mac: {_q(mac)}, port: {port}}}")
    return out


def bare_metal_config(pci, lcores, queues=1, hugepages=True, memory_mb=4096,
                      mbufs=65535, main_lcore=0, socket="/run/fwd/fwd.sock",
                      socket_group=None, cpus=None):
    """fwd.yaml for two PCI ports. `lcores`: the worker lcores (also their
    CPUs: isolate them with isolcpus/nohz_full); queue q of every port is
    polled by lcores[q % len(lcores)]. `cpus`: the CPU of each worker
    lcore when the lcore ids are not the CPU ids."""
    if len(pci) != 2:
        raise ValueError("two PCI addresses: appliance p0 then p1")
    if not lcores:
        raise ValueError("at least one worker lcore")
    cpus = list(lcores) if cpus is None else list(cpus)
    if len(cpus) != len(lcores):
        raise ValueError(f"{len(cpus)} CPUs for {len(lcores)} worker lcores")
    if main_lcore in lcores:
        raise ValueError(f"main lcore {main_lcore} is also a worker")
    if queues < 1 or queues < len(lcores):
        raise ValueError(f"{queues} RX queues per port leave some of {len(lcores)} workers idle")
    out = [
        "eal:",
        f"  main_lcore: {main_lcore}",
        f"  hugepages: {'true' if hugepages else 'false'}",
        f"  memory_mb: {memory_mb}",
        f"mempool: {{mbufs: {mbufs}, cache: 256}}",
    ]
    out += _ports_yaml(pci, queues)
    out.append("workers:")
    for w, lc in enumerate(lcores):
        rx = [f"{{port: {p}, queue: {q}}}" for q in range(queues) if q % len(lcores) == w
              for p in plans.PORTS]
        out.append(f"  - {{lcore: {lc}, cpu: {cpus[w]}, rx: [{', '.join(rx)}]}}")
    out += ["control:", f"  cpu: {main_lcore}", f"  socket: {_q(socket)}"]
    if socket_group:
        out.append(f"  socket_group: {_q(socket_group)}")
    # The appliance answers nothing during a load test but what it must.
    out += ["icmp: {rate: 0}"]
    out += _neigh_yaml()
    return "\n".join(out) + "\n"


def pcap_config(tag, rx, tx, socket, load, save_dir):
    """fwd.yaml for CI: net_pcap ports (rx[i] read once, tx[i] written),
    one worker on lcore 1, the tables from the saved state `load`."""
    devices = [f"net_pcap_{tag}{i},rx_pcap={rx[i]},tx_pcap={tx[i]}" for i in range(2)]
    out = [
        "eal:",
        "  main_lcore: 0",
        "  hugepages: false",
        "  memory_mb: 256",
        f"  file_prefix: fwdtrex-{tag}",
    ]
    out += _ports_yaml(devices, 1)
    out.append("workers:")
    out.append(f"  - {{lcore: 1, rx: [{', '.join('{port: %s}' % p for p in plans.PORTS)}]}}")
    out += ["control:", f"  socket: {_q(socket)}", f"  load: {_q(load)}", f"  save_dir: {_q(save_dir)}"]
    out += ["icmp: {rate: 0}"]
    out += _neigh_yaml()
    return "\n".join(out) + "\n"


# The reconf bench's third port, where its churned routes point: its tx pcap
# must never hold a packet of the test traffic.
WRONG_PORT = "wrong"
WRONG_V4 = ("10.8.0.1/24", "10.8.0.2", "02:00:00:00:08:02")


def reconf_config(traffic, wrong_tx, socket, load, save_dir, tag="reconf", hugepages=True,
                  memory_mb=1024):
    """fwd.yaml for deploy/bench/reconf.sh (and its CI twin,
    tests/test_reconf_recipe.py): `traffic` replayed endlessly into p0, p1 a
    net_null (the right port: it counts and discards), a third port
    WRONG_PORT writing `wrong_tx`; one worker on lcore 1, the control lcore
    on CPU 0, the tables from the saved state `load`."""
    devices = [f"net_pcap_{tag}0,rx_pcap={traffic},infinite_rx=1", f"net_null_{tag}0,no-rx=1"]
    addr, nh, mac = WRONG_V4
    out = [
        "eal:",
        "  main_lcore: 0",
        f"  hugepages: {'true' if hugepages else 'false'}",
        f"  memory_mb: {memory_mb}",
        f"  file_prefix: fwdtrex-{tag}",
    ]
    out += _ports_yaml(devices, 1)
    out += [
        f"  - name: {WRONG_PORT}",
        f"    device: {_q(f'net_pcap_{tag}1,tx_pcap={wrong_tx}')}",
        f"    addresses: [{_q(addr)}]",
        "workers:",
        f"  - {{lcore: 1, rx: [{', '.join('{port: %s}' % p for p in plans.PORTS + (WRONG_PORT,))}]}}",
        "control:",
        "  cpu: 0",
        f"  socket: {_q(socket)}",
        f"  load: {_q(load)}",
        f"  save_dir: {_q(save_dir)}",
        "icmp: {rate: 0}",
    ]
    out += _neigh_yaml()
    out.append(f"  - {{ip: {_q(nh)}, mac: {_q(mac)}, port: {WRONG_PORT}}}")
    return "\n".join(out) + "\n"


def read_prefixes(path):
    """The prefixes of a routing-table file (one CIDR a line, .gz too)."""
    import gzip
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return [line.strip() for line in f if line.strip()]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m fwdtrex.appliance",
                                 description="Write fwd.yaml and tables.batch for a load test.")
    ap.add_argument("test", choices=TESTS)
    ap.add_argument("--out", required=True, help="directory for fwd.yaml and tables.batch")
    ap.add_argument("--pci", nargs=2, required=True, metavar=("P0", "P1"))
    ap.add_argument("--lcores", type=int, nargs="+", required=True, help="worker lcores (isolated CPUs)")
    ap.add_argument("--main-lcore", type=int, default=0)
    ap.add_argument("--queues", type=int, default=None, help="RX queues per port (default: one per worker)")
    ap.add_argument("--memory-mb", type=int, default=4096)
    ap.add_argument("--no-hugepages", action="store_true")
    ap.add_argument("--full-view", action="append", default=[],
                    help="routing-table file(s), one prefix a line (e.g. $FWD_DATA/routing/*)")
    ap.add_argument("--deny", type=int, default=1, help="acl: non-matching deny rules (1, 10, 50)")
    ap.add_argument("--socket", default="/run/fwd/fwd.sock")
    a = ap.parse_args(argv)
    fv = None
    if a.full_view:
        fv = [p for f in a.full_view for p in read_prefixes(f)]
    test = Test(a.test, full_view=fv, deny=a.deny)
    cfg = bare_metal_config(a.pci, a.lcores, a.queues or len(a.lcores), not a.no_hugepages,
                            a.memory_mb, main_lcore=a.main_lcore, socket=a.socket)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "fwd.yaml"), "w") as f:
        f.write(cfg)
    with open(os.path.join(a.out, "tables.batch"), "w") as f:
        f.write(batch_text(test))
    print(f"wrote {a.out}/fwd.yaml and {a.out}/tables.batch ({len(table_lines(test))} changes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
