//! The inverse of the parser: every [`Change`] prints as the canonical
//! command line that parses back to it (`parse_change(format(c)) == c`), so
//! a saved configuration is a batch file.
//!
//! Names (ports) are printed as they are; they must be single words
//! without `#` for the round trip to hold (the parser has no quoting).

use std::fmt::{self, Display, Formatter};

use super::parse::{PROTOCOLS, TCP_FLAGS_ALL};
use crate::wire::{
    Action, Change, Family, Group, GroupMember, Masked, Masked16, Neigh, Nexthop, PortRange, Rate,
    Route, RouteDel, RouteFilter, RouteTarget, Rule, RuleMatch,
};

impl Display for Change {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Change::RuleAdd(r) => write!(f, "rule add {r}"),
            Change::RuleReplace(r) => write!(f, "rule replace {r}"),
            Change::RuleDel { id } => write!(f, "rule del id {id}"),
            Change::RuleFlush {} => f.write_str("rule flush"),
            Change::RouteAdd(r) => write!(f, "route add {r}"),
            Change::RouteReplace(r) => write!(f, "route replace {r}"),
            Change::RouteDel(d) => write!(f, "route del {d}"),
            Change::RouteFlush(s) => write!(f, "route flush{s}"),
            Change::NexthopAdd(n) => write!(f, "nexthop add {n}"),
            Change::NexthopReplace(n) => write!(f, "nexthop replace {n}"),
            Change::NexthopDel { id } => write!(f, "nexthop del id {id}"),
            Change::GroupAdd(g) => write!(f, "group add {g}"),
            Change::GroupReplace(g) => write!(f, "group replace {g}"),
            Change::GroupDel { id } => write!(f, "group del id {id}"),
            Change::NeighAdd(n) => write!(f, "neigh add {n}"),
            Change::NeighReplace(n) => write!(f, "neigh replace {n}"),
            Change::NeighDel { addr, dev } => write!(f, "neigh del {addr} dev {dev}"),
            Change::AddressAdd(a) => write!(f, "address add {} dev {}", a.addr, a.dev),
            Change::AddressDel(a) => write!(f, "address del {} dev {}", a.addr, a.dev),
            Change::PortSet { dev, up } => {
                write!(f, "port set {dev} {}", if *up { "up" } else { "down" })
            }
        }
    }
}

/// `[id N] prio P MATCH action ACTIONS [continue]`: `continue` ends the
/// list of a rule without a verdict ([`Rule::continues`]), so a `count` or
/// `mirror` rule cannot be read as the end of evaluation.
impl Display for Rule {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if let Some(id) = self.id {
            write!(f, "id {id} ")?;
        }
        write!(f, "prio {}", self.priority)?;
        if !self.matches.is_any() {
            write!(f, " {}", self.matches)?;
        }
        f.write_str(" action")?;
        for a in &self.actions {
            write!(f, " {a}")?;
        }
        if self.continues() {
            f.write_str(" continue")?;
        }
        Ok(())
    }
}

/// `src P dst P proto tcp sport A-B dport A-B iif NAME vlan N dscp N
/// tcp_flags V/M`, wildcards omitted; `*` when everything is a wildcard.
impl Display for RuleMatch {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        let mut item = |f: &mut Formatter<'_>, k: &str, v: &dyn Display| {
            let r = write!(f, "{sep}{k} {v}");
            sep = " ";
            r
        };
        if let Some(p) = self.src {
            item(f, "src", &p)?;
        }
        if let Some(p) = self.dst {
            item(f, "dst", &p)?;
        }
        if let Some(p) = self.proto {
            item(f, "proto", &ProtoText(p))?;
        }
        if let Some(r) = self.sport {
            item(f, "sport", &r)?;
        }
        if let Some(r) = self.dport {
            item(f, "dport", &r)?;
        }
        if let Some(n) = &self.in_port {
            item(f, "iif", n)?;
        }
        if let Some(v) = self.vlan {
            item(f, "vlan", &v)?;
        }
        if let Some(d) = self.dscp {
            item(f, "dscp", &d)?;
        }
        if let Some(t) = self.tcp_flags {
            item(f, "tcp_flags", &HexMasked(t))?;
        }
        if sep.is_empty() {
            f.write_str("*")?;
        }
        Ok(())
    }
}

struct ProtoText(Masked);

impl Display for ProtoText {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let Masked { value, mask } = self.0;
        match PROTOCOLS.iter().find(|p| p.1 == value) {
            Some((name, _)) if mask == 0xff => f.write_str(name),
            _ if mask == 0xff => write!(f, "{value}"),
            _ => write!(f, "{value}/{mask:#04x}"),
        }
    }
}

/// TCP flags as hex: `0x12` (exact: all 12 bits), or `0x02/0x12` with a
/// mask (`0x12/0xff` leaves AE and the reserved bits free).
struct HexMasked(Masked16);

impl Display for HexMasked {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let Masked16 { value, mask } = self.0;
        if mask == TCP_FLAGS_ALL {
            write!(f, "{value:#04x}")
        } else {
            write!(f, "{value:#04x}/{mask:#04x}")
        }
    }
}

impl Display for PortRange {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.lo == self.hi {
            write!(f, "{}", self.lo)
        } else {
            write!(f, "{}-{}", self.lo, self.hi)
        }
    }
}

impl Display for Action {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Action::Permit => f.write_str("permit"),
            Action::Drop => f.write_str("drop"),
            Action::Count => f.write_str("count"),
            Action::Redirect(p) => write!(f, "redirect {p}"),
            Action::Mirror(p) => write!(f, "mirror {p}"),
            Action::Nexthop(n) => write!(f, "nexthop {n}"),
            Action::Table(t) => write!(f, "table {t}"),
            Action::Police(p) => write!(f, "police rate {} burst {}", p.rate, p.burst),
            Action::SetDscp(d) => write!(f, "set-dscp {d}"),
            Action::Mark(m) => write!(f, "mark {m}"),
        }
    }
}

/// The largest unit that divides the rate exactly: `10mbit`, `1500pps`.
impl Display for Rate {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let (n, units): (u64, [&str; 5]) = match *self {
            Rate::Bps(n) => (n, ["bit", "kbit", "mbit", "gbit", "tbit"]),
            Rate::Pps(n) => (n, ["pps", "kpps", "mpps", "", ""]),
        };
        let mut v = n;
        let mut u = 0;
        while v != 0 && v % 1000 == 0 && u + 1 < units.len() && !units[u + 1].is_empty() {
            v /= 1000;
            u += 1;
        }
        write!(f, "{v}{}", units[u])
    }
}

/// `PREFIX [table N] TARGET`
impl Display for Route {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.prefix)?;
        if self.table != 0 {
            write!(f, " table {}", self.table)?;
        }
        write!(f, " {}", self.target)?;
        match self.proto.as_deref() {
            None | Some("static") => Ok(()),
            Some(p) => write!(f, " proto {p}"),
        }
    }
}

impl Display for RouteDel {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.prefix)?;
        if self.table != 0 {
            write!(f, " table {}", self.table)?;
        }
        if let Some(t) = &self.target {
            write!(f, " {t}")?;
        }
        Ok(())
    }
}

/// The selectors, each with a leading space (none: empty).
impl Display for RouteFilter {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if let Some(t) = self.table {
            write!(f, " table {t}")?;
        }
        match self.family {
            Some(Family::Ipv4) => f.write_str(" v4")?,
            Some(Family::Ipv6) => f.write_str(" v6")?,
            None => {}
        }
        if let Some(p) = &self.proto {
            write!(f, " proto {p}")?;
        }
        if let Some(n) = self.within {
            write!(f, " within {n}")?;
        }
        Ok(())
    }
}

impl Display for RouteTarget {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            RouteTarget::Gateway { via, dev } => {
                match (via, dev) {
                    (Some(v), Some(d)) => write!(f, "via {v} dev {d}"),
                    (Some(v), None) => write!(f, "via {v}"),
                    (None, Some(d)) => write!(f, "dev {d}"),
                    // Not valid on the wire; printed so a dump still shows it.
                    (None, None) => f.write_str("via ?"),
                }
            }
            RouteTarget::Nhid(n) => write!(f, "nhid {n}"),
            RouteTarget::Group(g) => write!(f, "nexthop-group {g}"),
            RouteTarget::Multipath(paths) => {
                for (i, p) in paths.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" ")?;
                    }
                    f.write_str("nexthop")?;
                    if let Some(v) = p.via {
                        write!(f, " via {v}")?;
                    }
                    if let Some(d) = &p.dev {
                        write!(f, " dev {d}")?;
                    }
                    if p.weight != 1 {
                        write!(f, " weight {}", p.weight)?;
                    }
                }
                Ok(())
            }
            RouteTarget::Blackhole => f.write_str("blackhole"),
            RouteTarget::Reject => f.write_str("reject"),
            RouteTarget::Local => f.write_str("local"),
        }
    }
}

/// `id N [via ADDR] dev PORT`
impl Display for Nexthop {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "id {}", self.id)?;
        if let Some(v) = self.via {
            write!(f, " via {v}")?;
        }
        write!(f, " dev {}", self.dev)
    }
}

/// `id N members M[:W] ...`
impl Display for Group {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "id {} members", self.id)?;
        for m in &self.members {
            write!(f, " {m}")?;
        }
        Ok(())
    }
}

impl Display for GroupMember {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.weight == 1 {
            write!(f, "{}", self.id)
        } else {
            write!(f, "{}:{}", self.id, self.weight)
        }
    }
}

/// `ADDR lladdr MAC dev PORT`
impl Display for Neigh {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{} lladdr {} dev {}", self.addr, self.lladdr, self.dev)
    }
}
