//! What a route holds and what a lookup answers: targets, origins, the
//! RIB's entries, and how a target is written into a 4-byte FIB entry.

use super::nexthop::MAX_ID;

/// Next-hop id.
pub type NhId = u32;
/// ECMP group id.
pub type GroupId = u32;
/// VRF (routing table) id.
pub type Vrf = u32;

/// What a route points to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// One next hop.
    NextHop(NhId),
    /// An ECMP group, resolved per flow.
    Group(GroupId),
    /// Drop silently.
    Blackhole,
    /// Drop and answer with ICMP unreachable.
    Reject,
    /// Deliver to the host.
    Local,
}

/// Who put a route in the table, and the routing protocol it reports.
///
/// `proto` uses Linux's `rtm_protocol` numbers, as `ip route` and zebra do
/// (2 kernel, 4 static, 186 bgp, 188 ospf, ...). `fpm` marks the routes
/// zebra installed over FPM: they give way to every other route at the
/// same prefix (see `control::fpm` for the precedence).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Origin {
    /// Routing protocol (`rtm_protocol`).
    pub proto: u8,
    /// Installed by zebra over FPM.
    pub fpm: bool,
}

impl Origin {
    /// What the appliance derives itself: connected and local routes of
    /// port addresses, host routes to attached neighbours (Linux: kernel).
    pub const KERNEL: Origin = Origin {
        proto: 2,
        fpm: false,
    };
    /// The operator's: the config file and `fwdctl`.
    pub const STATIC: Origin = Origin {
        proto: 4,
        fpm: false,
    };

    /// A route from zebra over FPM, reported as `proto`.
    pub const fn fpm(proto: u8) -> Origin {
        Origin { proto, fpm: true }
    }
}

/// Names of routing protocols (`rtm_protocol`), as iproute2's
/// `rt_protos` and FRR's `rt_netlink.h` number them. zebra sends its own
/// static routes as 196 (`RTPROT_ZSTATIC`): "zstatic", so that "static"
/// stays the operator's (config and fwdctl, 4); zebra sends OSPFv2 and
/// OSPFv3 both as 188 and connected routes as 2 (kernel).
const PROTOS: [(u8, &str); 22] = [
    (1, "redirect"),
    (2, "kernel"),
    (3, "boot"),
    (4, "static"),
    (11, "zebra"),
    (12, "bird"),
    (16, "dhcp"),
    (42, "babel"),
    (186, "bgp"),
    (187, "isis"),
    (188, "ospf"),
    (189, "rip"),
    (190, "ripng"),
    (191, "nhrp"),
    (192, "eigrp"),
    (193, "ldp"),
    (194, "sharp"),
    (195, "pbr"),
    (196, "zstatic"),
    (197, "openfabric"),
    (198, "srte"),
    (0, "unspec"),
];

/// The name of routing protocol `proto`; its number when it has none.
pub fn proto_name(proto: u8) -> std::borrow::Cow<'static, str> {
    PROTOS
        .iter()
        .find(|(n, _)| *n == proto)
        .map_or_else(|| proto.to_string().into(), |(_, s)| (*s).into())
}

/// The number of a protocol name (any case), or of a number written out.
pub fn proto_from_name(name: &str) -> Option<u8> {
    PROTOS
        .iter()
        .find(|(_, s)| s.eq_ignore_ascii_case(name))
        .map(|(n, _)| *n)
        .or_else(|| name.parse().ok())
}

/// A route as the RIB holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Entry {
    /// Where it sends packets (all the FIB knows of it).
    pub target: Target,
    /// Who installed it.
    pub origin: Origin,
}

/// The outcome of a lookup with ECMP resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Resolved {
    /// Forward via this next hop.
    Forward(NhId),
    /// Drop silently.
    Blackhole,
    /// Drop and answer with ICMP unreachable.
    Reject,
    /// Deliver to the host.
    Local,
    /// No route matched.
    #[default]
    NoRoute,
}

/// A target's kind sits above the 24 bits of its id ([`MAX_ID`]), so a
/// plain FIB entry never sets bits 27..32: the FIB's burst lookups tell
/// its pair entries from plain ones by bit 30 alone (`fib.rs`).
pub(super) const KIND_SHIFT: u32 = 24;
static_assertions::const_assert!(MAX_ID < 1 << KIND_SHIFT && K_LOCAL < 1 << (27 - KIND_SHIFT));
pub(super) const ID_MASK: u32 = (1 << KIND_SHIFT) - 1;
pub(super) const K_NH: u32 = 1;
pub(super) const K_GROUP: u32 = 2;
pub(super) const K_BLACKHOLE: u32 = 3;
pub(super) const K_REJECT: u32 = 4;
pub(super) const K_LOCAL: u32 = 5;

/// FIB entry of a target (never 0, never has `fib::EXT`).
#[inline]
pub(super) fn encode(t: Target) -> u32 {
    match t {
        Target::NextHop(id) => (K_NH << KIND_SHIFT) | id,
        Target::Group(id) => (K_GROUP << KIND_SHIFT) | id,
        Target::Blackhole => K_BLACKHOLE << KIND_SHIFT,
        Target::Reject => K_REJECT << KIND_SHIFT,
        Target::Local => K_LOCAL << KIND_SHIFT,
    }
}

#[inline]
pub(super) fn decode(e: u32) -> Option<Target> {
    match e >> KIND_SHIFT {
        K_NH => Some(Target::NextHop(e & ID_MASK)),
        K_GROUP => Some(Target::Group(e & ID_MASK)),
        K_BLACKHOLE => Some(Target::Blackhole),
        K_REJECT => Some(Target::Reject),
        K_LOCAL => Some(Target::Local),
        _ => None,
    }
}
