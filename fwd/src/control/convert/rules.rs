//! Classifier rules between the wire (`ctl::wire::Rule`) and the classifier
//! (`acl::Rule`): port names become port indexes, prefixes must be networks.

use std::net::IpAddr;

use ctl::wire::{self, ErrorBody, ErrorKind, IpNet};

use crate::acl;
use crate::tables::Tables;

fn invalid(msg: impl Into<String>) -> ErrorBody {
    ErrorBody::new(ErrorKind::Invalid, msg)
}

fn prefix(net: IpNet, what: &str) -> Result<acl::IpPrefix, ErrorBody> {
    if !net.is_network() {
        return Err(invalid(format!("{what} {net} has host bits set")));
    }
    Ok(match net.addr() {
        IpAddr::V4(addr) => acl::IpPrefix::V4 {
            addr,
            len: net.prefix_len(),
        },
        IpAddr::V6(addr) => acl::IpPrefix::V6 {
            addr,
            len: net.prefix_len(),
        },
    })
}

/// Converts and validates a wire rule; `port` resolves port names.
///
/// # Errors
/// `invalid` naming the field.
pub fn rule_from_wire(
    id: u32,
    r: &wire::Rule,
    port: impl Fn(&str) -> Result<u16, ErrorBody>,
) -> Result<acl::Rule, ErrorBody> {
    let m = &r.matches;
    let matches = acl::RuleMatch {
        src: m.src.map(|n| prefix(n, "src")).transpose()?,
        dst: m.dst.map(|n| prefix(n, "dst")).transpose()?,
        proto: m.proto.map_or(acl::Masked8::ANY, |p| acl::Masked8 {
            value: p.value,
            mask: p.mask,
        }),
        sport: m.sport.map_or(acl::PortRange::ANY, |p| acl::PortRange {
            lo: p.lo,
            hi: p.hi,
        }),
        dport: m.dport.map_or(acl::PortRange::ANY, |p| acl::PortRange {
            lo: p.lo,
            hi: p.hi,
        }),
        in_port: m.in_port.as_deref().map(&port).transpose()?,
        vlan: m.vlan,
        dscp: m.dscp,
        tcp_flags: m.tcp_flags.map_or(acl::Masked16::ANY, |p| acl::Masked16 {
            value: p.value,
            mask: p.mask,
        }),
    };
    let mut actions = Vec::with_capacity(r.actions.len());
    for a in &r.actions {
        actions.push(match a {
            wire::Action::Permit => acl::Action::Permit,
            wire::Action::Drop => acl::Action::Drop,
            wire::Action::Count => acl::Action::Count,
            wire::Action::Redirect(p) => acl::Action::Redirect { port: port(p)? },
            wire::Action::Mirror(p) => acl::Action::Mirror { port: port(p)? },
            wire::Action::Nexthop(nh) => acl::Action::SetNextHop { nh: *nh },
            wire::Action::Table(vrf) => acl::Action::SetTable { vrf: *vrf },
            wire::Action::Police(p) => acl::Action::Police {
                rate: match p.rate {
                    wire::Rate::Bps(b) => acl::PoliceRate::Bps(b),
                    wire::Rate::Pps(n) => acl::PoliceRate::Pps(n),
                },
                burst: p.burst,
            },
            wire::Action::SetDscp(d) => acl::Action::SetDscp { dscp: *d },
            wire::Action::Mark(m) => acl::Action::Mark { mark: *m },
        });
    }
    let rule = acl::Rule {
        id,
        priority: r.priority,
        matches,
        actions,
    };
    rule.validate()
        .map_err(|e| invalid(format!("rule {id}: {e}")))?;
    Ok(rule)
}

fn net(p: acl::IpPrefix) -> IpNet {
    match p {
        acl::IpPrefix::V4 { addr, len } => IpNet::new(IpAddr::V4(addr), len),
        acl::IpPrefix::V6 { addr, len } => IpNet::new(IpAddr::V6(addr), len),
    }
    .expect("validated prefix")
}

/// The wire view of a classifier rule, for dumps and `config save`.
pub fn rule_to_wire(t: &Tables, r: &acl::Rule) -> wire::Rule {
    let name = |p: u16| {
        t.ports
            .get(usize::from(p))
            .map_or_else(|| format!("#{p}"), |x| x.name.clone())
    };
    let m = &r.matches;
    let masked = |x: acl::Masked8| {
        (x.mask != 0).then_some(wire::Masked {
            value: x.value,
            mask: x.mask,
        })
    };
    let range = |x: acl::PortRange| {
        (x != acl::PortRange::ANY).then_some(wire::PortRange { lo: x.lo, hi: x.hi })
    };
    wire::Rule {
        id: Some(r.id),
        priority: r.priority,
        matches: wire::RuleMatch {
            src: m.src.map(net),
            dst: m.dst.map(net),
            proto: masked(m.proto),
            sport: range(m.sport),
            dport: range(m.dport),
            in_port: m.in_port.map(name),
            vlan: m.vlan,
            dscp: m.dscp,
            tcp_flags: (m.tcp_flags.mask != 0).then_some(wire::Masked16 {
                value: m.tcp_flags.value,
                mask: m.tcp_flags.mask,
            }),
        },
        actions: r
            .actions
            .iter()
            .map(|a| match *a {
                acl::Action::Permit => wire::Action::Permit,
                acl::Action::Drop => wire::Action::Drop,
                acl::Action::Count => wire::Action::Count,
                acl::Action::Redirect { port } => wire::Action::Redirect(name(port)),
                acl::Action::Mirror { port } => wire::Action::Mirror(name(port)),
                acl::Action::SetNextHop { nh } => wire::Action::Nexthop(nh),
                acl::Action::SetTable { vrf } => wire::Action::Table(vrf),
                acl::Action::Police { rate, burst } => wire::Action::Police(wire::Police {
                    rate: match rate {
                        acl::PoliceRate::Bps(b) => wire::Rate::Bps(b),
                        acl::PoliceRate::Pps(n) => wire::Rate::Pps(n),
                    },
                    burst,
                }),
                acl::Action::SetDscp { dscp } => wire::Action::SetDscp(dscp),
                acl::Action::Mark { mark } => wire::Action::Mark(mark),
            })
            .collect(),
    }
}

/// Maps a classifier update error to the protocol's kinds.
pub fn update_error(e: &acl::UpdateError) -> ErrorBody {
    let kind = match e {
        acl::UpdateError::Invalid { .. } => ErrorKind::Invalid,
        acl::UpdateError::DuplicateId(_) => ErrorKind::Exists,
        acl::UpdateError::UnknownId(_) => ErrorKind::NotFound,
        acl::UpdateError::Capacity(_) => ErrorKind::TooLarge,
        // Clears once the workers pass a quiescent point: a retry succeeds.
        acl::UpdateError::SlotsPending { .. } => ErrorKind::Busy,
    };
    ErrorBody::new(kind, e.to_string())
}
