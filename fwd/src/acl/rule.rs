//! Rule model: match fields, actions, validation.
//!
//! Precedence: a **lower `priority` value wins**; equal priorities are ordered
//! by the lower rule id. The pair is folded into one `u64` ([`Rule::order`])
//! so every comparison in the classifier is a single integer compare.

use std::net::{Ipv4Addr, Ipv6Addr};

/// Caller-chosen, stable rule identifier.
pub type RuleId = u32;

/// Maximum number of actions one rule may carry.
pub const MAX_ACTIONS: usize = 8;

/// Key value of `vlan` for an untagged packet.
pub const VLAN_NONE: u16 = 0xFFFF;

/// An IPv4 or IPv6 prefix. Host bits must be zero (validation rejects them
/// rather than silently normalising: a typo'd prefix should not become a
/// different, wider rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IpPrefix {
    /// IPv4 prefix; `len <= 32`.
    V4 { addr: Ipv4Addr, len: u8 },
    /// IPv6 prefix; `len <= 128`.
    V6 { addr: Ipv6Addr, len: u8 },
}

impl IpPrefix {
    /// Address as a `u128` (IPv4 in the low 32 bits) and the prefix length.
    pub fn to_bits(self) -> (u128, u8) {
        match self {
            IpPrefix::V4 { addr, len } => (u32::from(addr) as u128, len),
            IpPrefix::V6 { addr, len } => (u128::from(addr), len),
        }
    }

    /// Width of the address family in bits.
    pub fn width(self) -> u8 {
        match self {
            IpPrefix::V4 { .. } => 32,
            IpPrefix::V6 { .. } => 128,
        }
    }

    fn is_v6(self) -> bool {
        matches!(self, IpPrefix::V6 { .. })
    }
}

/// Mask of the top `len` bits of a `width`-bit address held in a `u128`.
pub(crate) fn prefix_mask(width: u8, len: u8) -> u128 {
    if len == 0 {
        return 0;
    }
    let all: u128 = if width == 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    };
    all & !((1u128 << (width - len)) - 1) & all
}

/// Inclusive port range; `PortRange::ANY` is the wildcard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PortRange {
    pub lo: u16,
    pub hi: u16,
}

impl PortRange {
    /// Every port.
    pub const ANY: PortRange = PortRange {
        lo: 0,
        hi: u16::MAX,
    };

    /// One port.
    pub fn exact(p: u16) -> Self {
        PortRange { lo: p, hi: p }
    }
}

impl Default for PortRange {
    fn default() -> Self {
        PortRange::ANY
    }
}

/// `value/mask` match on a byte: matches when `x & mask == value`.
/// `mask == 0` is the wildcard.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Masked8 {
    pub value: u8,
    pub mask: u8,
}

impl Masked8 {
    /// Wildcard.
    pub const ANY: Masked8 = Masked8 { value: 0, mask: 0 };

    /// Exact byte.
    pub fn exact(v: u8) -> Self {
        Masked8 {
            value: v,
            mask: 0xFF,
        }
    }
}

/// The TCP flags field: the 12 bits after the data offset (RFC 9293's
/// 4-bit data offset is the top of the same 16-bit word). Bits 0..=7 are
/// FIN SYN RST PSH ACK URG ECE CWR, bit 8 is AE (Accurate ECN, RFC 9768;
/// it was NS, RFC 3540) and bits 9..=11 are reserved. The whole 12-bit
/// field is kept, as Open vSwitch (`tcp_flags`) and Linux flower
/// (`TCA_FLOWER_KEY_TCP_FLAGS`) do: a rule can then also catch packets with
/// reserved bits set, which a 9-bit field would silently ignore.
pub const TCP_FLAGS_MAX: u16 = 0x0FFF;

/// `value/mask` match on a 16-bit field: matches when `x & mask == value`.
/// `mask == 0` is the wildcard. Used for [`RuleMatch::tcp_flags`], whose
/// value and mask must stay within [`TCP_FLAGS_MAX`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Masked16 {
    pub value: u16,
    pub mask: u16,
}

impl Masked16 {
    /// Wildcard.
    pub const ANY: Masked16 = Masked16 { value: 0, mask: 0 };
}

/// What a rule matches. Every field defaults to the wildcard.
///
/// Address family: a rule whose `src` and `dst` are both `None` matches IPv4
/// and IPv6 packets; otherwise it matches only the family of its prefix(es)
/// (so `0.0.0.0/0` means "any IPv4 packet").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RuleMatch {
    pub src: Option<IpPrefix>,
    pub dst: Option<IpPrefix>,
    /// IP protocol / IPv6 next header (after extension headers).
    pub proto: Masked8,
    pub sport: PortRange,
    pub dport: PortRange,
    pub in_port: Option<u16>,
    /// 802.1Q VLAN id (0..=4095); `None` matches tagged and untagged packets.
    pub vlan: Option<u16>,
    /// DSCP (0..=63).
    pub dscp: Option<u8>,
    /// TCP flags, the 12-bit field of [`TCP_FLAGS_MAX`] (AE/NS, CWR ECE URG
    /// ACK PSH RST SYN FIN and three reserved bits); the key carries 0 for
    /// non-TCP packets.
    pub tcp_flags: Masked16,
}

/// Address family a rule applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    Any,
    V4,
    V6,
}

impl RuleMatch {
    /// The family this match applies to (call after validation).
    pub fn family(&self) -> Family {
        match (self.src, self.dst) {
            (None, None) => Family::Any,
            (Some(p), _) | (None, Some(p)) => {
                if p.is_v6() {
                    Family::V6
                } else {
                    Family::V4
                }
            }
        }
    }
}

/// Police rate unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PoliceRate {
    /// Bits per second.
    Bps(u64),
    /// Packets per second.
    Pps(u64),
}

/// One action of a rule's action list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Terminal: continue to routing (also the implicit end of a list that
    /// ends in a non-terminal action).
    Permit,
    /// Terminal: drop the packet.
    Drop,
    /// Only count (every rule counts anyway); continues as Permit.
    Count,
    /// Terminal: send out of `port`, bypassing routing.
    Redirect { port: u16 },
    /// Send a copy out of `port` and continue.
    Mirror { port: u16 },
    /// Policy routing: use next hop `nh`.
    SetNextHop { nh: u32 },
    /// Policy routing: look the destination up in table `vrf`.
    SetTable { vrf: u32 },
    /// Token bucket; each of `n` workers enforces `rate / n`, `burst / n`.
    /// Non-conforming packets are dropped.
    Police { rate: PoliceRate, burst: u32 },
    /// Rewrite DSCP.
    SetDscp { dscp: u8 },
    /// Set the packet mark (metadata for later stages).
    Mark { mark: u32 },
}

impl Action {
    /// Decides the packet's fate, so the first matching rule with such an
    /// action ends evaluation: Permit, Drop, Redirect, SetNextHop and
    /// SetTable (policy routing), Police (passes or drops). Count, Mirror,
    /// SetDscp and Mark are not verdicts. (`ctl::wire::Action::is_verdict`
    /// is the same list on the wire side.)
    pub fn is_verdict(self) -> bool {
        match self {
            Action::Permit
            | Action::Drop
            | Action::Redirect { .. }
            | Action::SetNextHop { .. }
            | Action::SetTable { .. }
            | Action::Police { .. } => true,
            Action::Count
            | Action::Mirror { .. }
            | Action::SetDscp { .. }
            | Action::Mark { .. } => false,
        }
    }

    /// Must be last in a list (nothing can follow it). Every terminal
    /// action is a verdict; not every verdict is terminal.
    fn is_terminal(self) -> bool {
        matches!(
            self,
            Action::Permit | Action::Drop | Action::Redirect { .. }
        )
    }

    fn kind(self) -> u8 {
        match self {
            Action::Permit => 0,
            Action::Drop => 1,
            Action::Count => 2,
            Action::Redirect { .. } => 3,
            Action::Mirror { .. } => 4,
            Action::SetNextHop { .. } => 5,
            Action::SetTable { .. } => 6,
            Action::Police { .. } => 7,
            Action::SetDscp { .. } => 8,
            Action::Mark { .. } => 9,
        }
    }
}

/// A rule as the control plane hands it in.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Rule {
    pub id: RuleId,
    /// Lower value = higher precedence; ties broken by lower `id`.
    pub priority: u32,
    pub matches: RuleMatch,
    /// Applied in order when this rule matches and evaluation reaches it.
    /// Empty = Permit. At most one terminal action (Permit/Drop/Redirect),
    /// and only last. Without a verdict ([`Rule::has_verdict`]) evaluation
    /// goes on to the next matching rule.
    pub actions: Vec<Action>,
}

impl Rule {
    /// Total order key: smaller wins.
    pub fn order(&self) -> u64 {
        order_key(self.priority, self.id)
    }

    /// True when a match ends evaluation: the list has a verdict
    /// ([`Action::is_verdict`]) or is empty (= Permit).
    pub fn has_verdict(&self) -> bool {
        self.actions.is_empty() || self.actions.iter().any(|a| a.is_verdict())
    }

    /// True when a match ends evaluation and only lets the packet on to
    /// routing: the actions are permit, count and mark (or none).
    pub fn only_permits(&self) -> bool {
        self.has_verdict()
            && self
                .actions
                .iter()
                .all(|a| matches!(a, Action::Permit | Action::Count | Action::Mark { .. }))
    }
}

/// `(priority, id)` folded into one `u64`; smaller wins.
pub fn order_key(priority: u32, id: RuleId) -> u64 {
    ((priority as u64) << 32) | id as u64
}

/// Why a rule was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("{field}: prefix length {len} exceeds {max}")]
    PrefixTooLong {
        field: &'static str,
        len: u8,
        max: u8,
    },
    #[error("{field}: prefix has host bits set beyond /{len}")]
    PrefixHostBits { field: &'static str, len: u8 },
    #[error("src and dst prefixes are of different address families")]
    FamilyMismatch,
    #[error("{field}: port range {lo}-{hi} is empty (lo > hi)")]
    PortRange {
        field: &'static str,
        lo: u16,
        hi: u16,
    },
    #[error("{field}: value {value:#x} has bits outside mask {mask:#x}")]
    ValueOutsideMask {
        field: &'static str,
        value: u16,
        mask: u16,
    },
    #[error(
        "{field}: {value:#x}/{mask:#x} has bits above the 12-bit TCP flags field (max {max:#x})"
    )]
    FlagsTooWide {
        field: &'static str,
        value: u16,
        mask: u16,
        max: u16,
    },
    #[error("vlan {0} out of range 0..=4095")]
    Vlan(u16),
    #[error("{field}: dscp {value} out of range 0..=63")]
    Dscp { field: &'static str, value: u8 },
    #[error("too many actions ({0}, max {MAX_ACTIONS})")]
    TooManyActions(usize),
    #[error("terminal action {0:?} is not the last action")]
    TerminalNotLast(Action),
    #[error("action {0:?} appears more than once")]
    DuplicateAction(Action),
    #[error("actions {0:?} and {1:?} contradict each other")]
    Contradictory(Action, Action),
    #[error("police rate must be > 0")]
    PoliceZeroRate,
    #[error("police burst must be > 0")]
    PoliceZeroBurst,
}

fn check_prefix(field: &'static str, p: IpPrefix) -> Result<(), RuleError> {
    let (bits, len) = p.to_bits();
    let w = p.width();
    if len > w {
        return Err(RuleError::PrefixTooLong { field, len, max: w });
    }
    if bits & !prefix_mask(w, len) != 0 {
        return Err(RuleError::PrefixHostBits { field, len });
    }
    Ok(())
}

fn check_masked(field: &'static str, value: u16, mask: u16) -> Result<(), RuleError> {
    if value & !mask != 0 {
        return Err(RuleError::ValueOutsideMask { field, value, mask });
    }
    Ok(())
}

impl RuleMatch {
    /// Check every field; see [`RuleError`].
    pub fn validate(&self) -> Result<(), RuleError> {
        if let Some(p) = self.src {
            check_prefix("src", p)?;
        }
        if let Some(p) = self.dst {
            check_prefix("dst", p)?;
        }
        if let (Some(s), Some(d)) = (self.src, self.dst) {
            if s.is_v6() != d.is_v6() {
                return Err(RuleError::FamilyMismatch);
            }
        }
        for (field, r) in [("sport", self.sport), ("dport", self.dport)] {
            if r.lo > r.hi {
                return Err(RuleError::PortRange {
                    field,
                    lo: r.lo,
                    hi: r.hi,
                });
            }
        }
        check_masked("proto", self.proto.value.into(), self.proto.mask.into())?;
        let Masked16 { value, mask } = self.tcp_flags;
        if (value | mask) & !TCP_FLAGS_MAX != 0 {
            return Err(RuleError::FlagsTooWide {
                field: "tcp_flags",
                value,
                mask,
                max: TCP_FLAGS_MAX,
            });
        }
        check_masked("tcp_flags", value, mask)?;
        if let Some(v) = self.vlan {
            if v > 4095 {
                return Err(RuleError::Vlan(v));
            }
        }
        if let Some(d) = self.dscp {
            if d > 63 {
                return Err(RuleError::Dscp {
                    field: "dscp",
                    value: d,
                });
            }
        }
        Ok(())
    }
}

/// Check an action list; see [`Rule::actions`] for the rules.
pub fn validate_actions(actions: &[Action]) -> Result<(), RuleError> {
    if actions.len() > MAX_ACTIONS {
        return Err(RuleError::TooManyActions(actions.len()));
    }
    for (i, a) in actions.iter().enumerate() {
        if a.is_terminal() && i + 1 != actions.len() {
            return Err(RuleError::TerminalNotLast(*a));
        }
        match *a {
            Action::Police { rate, burst } => {
                if matches!(rate, PoliceRate::Bps(0) | PoliceRate::Pps(0)) {
                    return Err(RuleError::PoliceZeroRate);
                }
                if burst == 0 {
                    return Err(RuleError::PoliceZeroBurst);
                }
            }
            Action::SetDscp { dscp } if dscp > 63 => {
                return Err(RuleError::Dscp {
                    field: "set-dscp",
                    value: dscp,
                });
            }
            _ => {}
        }
        for b in &actions[..i] {
            let dup = match (*a, *b) {
                (Action::Mirror { port: x }, Action::Mirror { port: y }) => x == y,
                _ => a.kind() == b.kind(),
            };
            if dup {
                return Err(RuleError::DuplicateAction(*a));
            }
            let contradicts = |x: Action, y: Action| match (x, y) {
                (Action::SetNextHop { .. }, Action::SetTable { .. }) => true,
                // Nothing that only matters to a forwarded packet may precede Drop.
                (
                    Action::Drop,
                    Action::SetNextHop { .. }
                    | Action::SetTable { .. }
                    | Action::SetDscp { .. }
                    | Action::Mark { .. }
                    | Action::Police { .. },
                ) => true,
                // Redirect bypasses routing: a routing choice is meaningless.
                (Action::Redirect { .. }, Action::SetNextHop { .. } | Action::SetTable { .. }) => {
                    true
                }
                _ => false,
            };
            if contradicts(*a, *b) || contradicts(*b, *a) {
                return Err(RuleError::Contradictory(*b, *a));
            }
        }
    }
    Ok(())
}

impl Rule {
    /// Validate match and actions.
    ///
    /// # Errors
    /// The first problem found, as a [`RuleError`].
    pub fn validate(&self) -> Result<(), RuleError> {
        self.matches.validate()?;
        validate_actions(&self.actions)
    }
}

/// The packet fields the classifier looks at. Built by the parser stage.
///
/// Addresses are host-order integers; IPv4 addresses live in the low 32 bits
/// (`is_v6 == false`). Ports are 0 for protocols without ports, `tcp_flags`
/// (12 bits, see [`TCP_FLAGS_MAX`]) is 0 for non-TCP packets, `vlan` is [`VLAN_NONE`] when untagged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub src: u128,
    pub dst: u128,
    pub is_v6: bool,
    pub proto: u8,
    pub sport: u16,
    pub dport: u16,
    pub in_port: u16,
    pub vlan: u16,
    pub dscp: u8,
    pub tcp_flags: u16,
}

impl Default for Key {
    fn default() -> Self {
        Key {
            src: 0,
            dst: 0,
            is_v6: false,
            proto: 0,
            sport: 0,
            dport: 0,
            in_port: 0,
            vlan: VLAN_NONE,
            dscp: 0,
            tcp_flags: 0,
        }
    }
}

impl Key {
    /// An IPv4 5-tuple key (other fields: port 0, untagged, DSCP 0, no flags).
    pub fn v4(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, sport: u16, dport: u16) -> Self {
        Key {
            src: u32::from(src) as u128,
            dst: u32::from(dst) as u128,
            proto,
            sport,
            dport,
            ..Key::default()
        }
    }

    /// An IPv6 5-tuple key.
    pub fn v6(src: Ipv6Addr, dst: Ipv6Addr, proto: u8, sport: u16, dport: u16) -> Self {
        Key {
            src: u128::from(src),
            dst: u128::from(dst),
            is_v6: true,
            proto,
            sport,
            dport,
            ..Key::default()
        }
    }
}

impl RuleMatch {
    /// Reference semantics of a match: the definition every structure is
    /// tested against.
    pub fn matches(&self, k: &Key) -> bool {
        let fam_ok = match self.family() {
            Family::Any => true,
            Family::V4 => !k.is_v6,
            Family::V6 => k.is_v6,
        };
        let pfx_ok = |p: Option<IpPrefix>, a: u128| match p {
            None => true,
            Some(p) => {
                let (bits, len) = p.to_bits();
                a & prefix_mask(p.width(), len) == bits
            }
        };
        fam_ok
            && pfx_ok(self.src, k.src)
            && pfx_ok(self.dst, k.dst)
            && k.proto & self.proto.mask == self.proto.value
            && (self.sport.lo..=self.sport.hi).contains(&k.sport)
            && (self.dport.lo..=self.dport.hi).contains(&k.dport)
            && self.in_port.is_none_or(|p| p == k.in_port)
            && self.vlan.is_none_or(|v| v == k.vlan)
            && self.dscp.is_none_or(|d| d == k.dscp)
            && k.tcp_flags & self.tcp_flags.mask == self.tcp_flags.value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(a: [u8; 4], len: u8) -> Option<IpPrefix> {
        Some(IpPrefix::V4 {
            addr: Ipv4Addr::from(a),
            len,
        })
    }

    #[test]
    fn prefix_mask_edges() {
        assert_eq!(prefix_mask(32, 0), 0);
        assert_eq!(prefix_mask(32, 32), 0xFFFF_FFFF);
        assert_eq!(prefix_mask(32, 8), 0xFF00_0000);
        assert_eq!(prefix_mask(128, 128), u128::MAX);
        assert_eq!(prefix_mask(128, 1), 1u128 << 127);
    }

    #[test]
    fn match_errors() {
        let ok = RuleMatch::default();
        assert_eq!(ok.validate(), Ok(()));
        let m = RuleMatch {
            src: v4([10, 0, 0, 1], 8),
            ..ok
        };
        assert_eq!(
            m.validate(),
            Err(RuleError::PrefixHostBits {
                field: "src",
                len: 8
            })
        );
        let m = RuleMatch {
            dst: v4([10, 0, 0, 0], 33),
            ..ok
        };
        assert!(matches!(
            m.validate(),
            Err(RuleError::PrefixTooLong { field: "dst", .. })
        ));
        let m = RuleMatch {
            src: v4([10, 0, 0, 0], 8),
            dst: Some(IpPrefix::V6 {
                addr: Ipv6Addr::UNSPECIFIED,
                len: 0,
            }),
            ..ok
        };
        assert_eq!(m.validate(), Err(RuleError::FamilyMismatch));
        let m = RuleMatch {
            dport: PortRange { lo: 80, hi: 79 },
            ..ok
        };
        assert!(matches!(
            m.validate(),
            Err(RuleError::PortRange { field: "dport", .. })
        ));
        let m = RuleMatch {
            dscp: Some(64),
            ..ok
        };
        assert!(matches!(m.validate(), Err(RuleError::Dscp { .. })));
        let m = RuleMatch {
            vlan: Some(4096),
            ..ok
        };
        assert_eq!(m.validate(), Err(RuleError::Vlan(4096)));
        let m = RuleMatch {
            proto: Masked8 {
                value: 6,
                mask: 0xF0,
            },
            ..ok
        };
        assert!(matches!(
            m.validate(),
            Err(RuleError::ValueOutsideMask { field: "proto", .. })
        ));
        let m = RuleMatch {
            tcp_flags: Masked16 {
                value: 0x12,
                mask: 0x02,
            },
            ..ok
        };
        assert!(matches!(
            m.validate(),
            Err(RuleError::ValueOutsideMask {
                field: "tcp_flags",
                ..
            })
        ));
    }

    #[test]
    fn tcp_flags_beyond_12_bits_refused() {
        for (value, mask) in [(0x1000, 0x1000), (0, 0x1FFF), (0, 0x8000)] {
            let m = RuleMatch {
                tcp_flags: Masked16 { value, mask },
                ..RuleMatch::default()
            };
            let e = m.validate().unwrap_err();
            assert!(matches!(e, RuleError::FlagsTooWide { .. }), "{e:?}");
            assert!(e.to_string().contains("12-bit"), "{e}");
        }
        let full = RuleMatch {
            tcp_flags: Masked16 {
                value: 0x0FFF,
                mask: 0x0FFF,
            },
            ..RuleMatch::default()
        };
        assert_eq!(full.validate(), Ok(()));
    }

    #[test]
    fn tcp_flags_match_sees_ae_bit() {
        // AE/NS (bit 8) alone, masked over the high bits only.
        let m = RuleMatch {
            tcp_flags: Masked16 {
                value: 0x100,
                mask: 0xF00,
            },
            ..RuleMatch::default()
        };
        let k = |f: u16| Key {
            tcp_flags: f,
            ..Key::v4(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST, 6, 1, 2)
        };
        assert!(m.matches(&k(0x100)));
        assert!(m.matches(&k(0x1FF)));
        assert!(!m.matches(&k(0x0FF)));
        assert!(!m.matches(&k(0x300)));
    }

    #[test]
    fn action_errors() {
        use Action::*;
        assert_eq!(validate_actions(&[]), Ok(()));
        assert_eq!(
            validate_actions(&[Mirror { port: 2 }, SetDscp { dscp: 10 }]),
            Ok(())
        );
        assert_eq!(validate_actions(&[Mirror { port: 2 }, Drop]), Ok(()));
        assert_eq!(
            validate_actions(&[Drop, Redirect { port: 1 }]),
            Err(RuleError::TerminalNotLast(Drop))
        );
        assert_eq!(
            validate_actions(&[Permit, Drop]),
            Err(RuleError::TerminalNotLast(Permit))
        );
        assert_eq!(
            validate_actions(&[Mark { mark: 1 }, Mark { mark: 2 }]),
            Err(RuleError::DuplicateAction(Mark { mark: 2 }))
        );
        assert_eq!(
            validate_actions(&[Mirror { port: 1 }, Mirror { port: 2 }]),
            Ok(())
        );
        assert!(matches!(
            validate_actions(&[Mirror { port: 1 }, Mirror { port: 1 }]),
            Err(RuleError::DuplicateAction(_))
        ));
        assert!(matches!(
            validate_actions(&[SetNextHop { nh: 1 }, SetTable { vrf: 2 }]),
            Err(RuleError::Contradictory(..))
        ));
        assert!(matches!(
            validate_actions(&[SetDscp { dscp: 1 }, Drop]),
            Err(RuleError::Contradictory(..))
        ));
        assert!(matches!(
            validate_actions(&[SetTable { vrf: 1 }, Redirect { port: 3 }]),
            Err(RuleError::Contradictory(..))
        ));
        assert_eq!(
            validate_actions(&[Police {
                rate: PoliceRate::Bps(0),
                burst: 10
            }]),
            Err(RuleError::PoliceZeroRate)
        );
        assert_eq!(
            validate_actions(&[Police {
                rate: PoliceRate::Pps(10),
                burst: 0
            }]),
            Err(RuleError::PoliceZeroBurst)
        );
        assert!(matches!(
            validate_actions(&[SetDscp { dscp: 64 }]),
            Err(RuleError::Dscp { .. })
        ));
        assert_eq!(
            validate_actions(&[Count; 9]),
            Err(RuleError::TooManyActions(9))
        );
    }

    #[test]
    fn family_semantics() {
        let any = RuleMatch::default();
        let k4 = Key::v4(
            Ipv4Addr::new(1, 2, 3, 4),
            Ipv4Addr::new(5, 6, 7, 8),
            6,
            1,
            2,
        );
        let k6 = Key::v6(Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST, 6, 1, 2);
        assert!(any.matches(&k4) && any.matches(&k6));
        let all4 = RuleMatch {
            src: v4([0, 0, 0, 0], 0),
            ..any
        };
        assert!(all4.matches(&k4) && !all4.matches(&k6));
        assert_eq!(all4.family(), Family::V4);
    }
}
