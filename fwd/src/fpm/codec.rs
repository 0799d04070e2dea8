//! FPM stream codec: FRR zebra's `dplane_fpm_nl` byte stream to route updates,
//! and back.
//!
//! # Contract
//!
//! [`Decoder`] takes the TCP stream in whatever pieces the socket hands over
//! ([`Decoder::feed`]) and gives back one [`FpmMsg`] per netlink message
//! ([`Decoder::next`]), in stream order. For *any* input bytes it does not
//! panic (the decode path denies indexing, `unwrap`, `expect` and `panic`, and
//! a property test throws random and mutated streams at it), and it never
//! loops without consuming input. Errors come in two kinds
//! ([`DecodeError::is_fatal`]):
//!
//! - **the stream is broken** (bad FPM version, length below the header or
//!   above the limit): framing is lost, nothing after it can be trusted. The
//!   decoder stays put and keeps answering the same error; the caller closes
//!   the connection (zebra reconnects and replays its whole table).
//! - **one message is lost** (undecodable netlink, a route this data plane
//!   cannot express, a frame of another encoding): the decoder has already
//!   stepped over it, the next call goes on with the stream. A route error
//!   names the route ([`DecodeError::Unsupported`]) so the caller can withdraw
//!   what it had for that prefix rather than keep a stale next hop.
//!
//! Messages that decode but are none of our business (nexthop objects, EVPN
//! neighbours, MPLS LSPs, ...) are [`FpmMsg::Ignored`], with their netlink
//! type for the counters.
//!
//! The netlink layer is parsed and emitted with `netlink-packet-route`; only
//! the 4-byte FPM header is ours. A route message's attributes are parsed
//! one at a time with the crate's attribute parser and used as they come,
//! not collected into its `RouteMessage` first (a `Vec` per message); a
//! property test holds the two to the same answers.
//!
//! # What zebra sends (FRR 8.4)
//!
//! From `zebra/dplane_fpm_nl.c` (`fpm_nl_enqueue`), `fpm/fpm.h` and
//! `zebra/rt_netlink.c` (`netlink_route_multipath_msg_encode` and its
//! `_netlink_route_build_singlepath` / `_build_multipath` helpers):
//!
//! - **Frame:** version 1, type 1 (netlink), big-endian length counting the
//!   header, at most `u16::MAX` (zebra asserts it). One frame may hold *two*
//!   netlink messages: a route update without `fpm use-route-replace` (which
//!   FRR 8.4 does not have yet; 9.1 added it, on by default) is an
//!   `RTM_DELROUTE` followed by an `RTM_NEWROUTE` in the same frame.
//! - **Route header:** `NLM_F_CREATE | NLM_F_REQUEST`, plus `NLM_F_REPLACE` on
//!   IPv4 `RTM_NEWROUTE` (IPv6 only with zebra's `--v6-rr-semantics`);
//!   sequence 0; `rtm_scope` universe; `rtm_protocol` from `zebra2proto`
//!   (see [`crate::route::proto_name`]); `rtm_table` the table id, or 0 with `RTA_TABLE`
//!   when it is 256 or more; `rtm_type` unicast, or blackhole / unreachable /
//!   prohibit for the three blackhole flavours, and 0 on `RTM_DELROUTE`.
//! - **Attributes:** `RTA_DST` always (4 zero bytes for a default route),
//!   `RTA_PRIORITY` always 20 (`NL_DEFAULT_ROUTE_METRIC`: zebra does not pass
//!   the protocol's metric down). A delete stops there. A blackhole stops there
//!   too (maybe after an `RTA_METRICS` MTU). With next-hop groups
//!   (`fpm use-next-hop-groups`, **on by default in 8.4**) the route carries
//!   only `RTA_NH_ID` (and perhaps `RTA_PREFSRC`); the group itself comes as
//!   `RTM_NEWNEXTHOP`, which this codec ignores. Otherwise one next hop is
//!   `RTA_GATEWAY` + `RTA_OIF` (`RTA_OIF` alone for a connected route), several
//!   are `RTA_MULTIPATH` (flagged `NLA_F_NESTED`) of `rtnexthop`s with
//!   `rtnh_ifindex`, `rtnh_hops` = weight − 1 and a nested `RTA_GATEWAY`.
//! - **IPv4 over an IPv6 next hop (RFC 5549):** not `RTA_VIA` but gateway
//!   169.254.0.1 with `RTNH_F_ONLINK` (in `rtm_flags`, or `rtnh_flags` in a
//!   multipath) and the interface; zebra installs a kernel neighbour entry for
//!   169.254.0.1 → the peer's MAC, which FPM does not carry. [`Path::onlink`]
//!   tells such paths apart. `RTA_VIA` only appears in MPLS (`AF_MPLS`) LSP
//!   messages, which are ignored; on an IP route it is reported unsupported.
//! - **Also possible and reported [`DecodeError::Unsupported`]:** MPLS label
//!   push, SRv6 and EVPN VXLAN next hops (`RTA_ENCAP_TYPE` / `RTA_ENCAP`), and
//!   IPv6 source-specific routes (`RTA_SRC`).
//! - **Dropped silently:** `RTA_PREFSRC`, `RTA_METRICS` (MTU), `RTA_FLOW`
//!   (route tag as realm), netlink flags and port id.
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use netlink_packet_core::{
    Emitable, NetlinkBuffer, NetlinkHeader, Nla, NlasIterator, ParseableParametrized, NLM_F_CREATE,
    NLM_F_REPLACE, NLM_F_REQUEST,
};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteFlags, RouteHeader, RouteLwEnCapType, RouteNextHop,
    RouteNextHopFlags, RouteProtocol, RouteScope, RouteType,
};
use netlink_packet_route::AddressFamily;

/// The FPM header's version byte (`FPM_PROTO_VERSION`).
pub const FPM_VERSION: u8 = 1;
/// The FPM header's type for a netlink payload (`FPM_MSG_TYPE_NETLINK`).
pub const FPM_MSG_TYPE_NETLINK: u8 = 1;
/// Bytes of the FPM header: version, type, length (u16, big endian).
pub const FPM_HEADER_LEN: usize = 4;

/// Netlink message types zebra puts in FPM frames, for counters.
pub const RTM_NEWROUTE: u16 = 24;
/// See [`RTM_NEWROUTE`].
pub const RTM_DELROUTE: u16 = 25;
/// EVPN MACs (`netlink_macfdb_update_ctx`, family `AF_BRIDGE`).
pub const RTM_NEWNEIGH: u16 = 28;
/// See [`RTM_NEWNEIGH`].
pub const RTM_DELNEIGH: u16 = 29;
/// Next-hop group objects (`netlink_nexthop_msg_encode`), when zebra uses them.
pub const RTM_NEWNEXTHOP: u16 = 104;
/// See [`RTM_NEWNEXTHOP`].
pub const RTM_DELNEXTHOP: u16 = 105;

/// The metric zebra puts on every route it hands down (`NL_DEFAULT_ROUTE_METRIC`).
pub const ZEBRA_METRIC: u32 = 20;

const NLMSG_HDR_LEN: usize = 16;

/// One decoded netlink message of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FpmMsg {
    /// An IPv4 or IPv6 route added, replaced or deleted.
    Route(RouteUpdate),
    /// A message we do not act on (nexthop object, neighbour, MPLS LSP, ...):
    /// its netlink type, for counters.
    Ignored { nl_type: u16 },
}

/// What happens to the route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RouteOp {
    /// `RTM_NEWROUTE`, with or without `NLM_F_REPLACE`: zebra's route for the
    /// prefix is now this one (it has at most one per prefix and table).
    Add,
    /// `RTM_DELROUTE`: the prefix is gone from the table.
    Del,
}

/// The route's `rtm_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RouteKind {
    /// `RTN_UNSPEC`: what zebra sends on every `RTM_DELROUTE`.
    Unspec,
    /// `RTN_UNICAST`: forward along [`RouteUpdate::paths`] (or the group
    /// [`RouteUpdate::nh_id`]).
    Unicast,
    /// `RTN_BLACKHOLE`: drop silently.
    Blackhole,
    /// `RTN_UNREACHABLE`: drop, ICMP unreachable (zebra's "reject").
    Unreachable,
    /// `RTN_PROHIBIT`: drop, ICMP administratively prohibited.
    Prohibit,
    /// Any other `RTN_*` (local, broadcast, ...), which zebra does not send.
    Other(u8),
}

/// One route message: the destination, what to do with it and its next hops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteUpdate {
    pub op: RouteOp,
    /// `RTA_TABLE` if present, else `rtm_table`: the kernel table id of the VRF
    /// (254 for the default VRF).
    pub table: u32,
    /// The destination prefix as sent (zebra sends it masked); the address
    /// family is the route's. Unspecified address when there is no `RTA_DST`.
    pub dst: IpAddr,
    pub len: u8,
    /// `rtm_protocol` as sent; see [`crate::route::proto_name`].
    pub proto: u8,
    pub kind: RouteKind,
    /// `RTA_PRIORITY`. Zebra always sends [`ZEBRA_METRIC`].
    pub metric: Option<u32>,
    /// Empty for blackholes, deletes, next-hop-group routes and a unicast
    /// route without an active next hop; one entry for a single path; one per
    /// `rtnexthop` of `RTA_MULTIPATH`.
    pub paths: Vec<Path>,
    /// `RTA_NH_ID`: the next-hop group (sent as `RTM_NEWNEXTHOP`) the route
    /// uses, when zebra runs with next-hop groups.
    pub nh_id: Option<u32>,
}

/// One next hop of a route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path {
    /// `RTA_GATEWAY`, same family as the route; `None` for a connected route.
    pub gateway: Option<IpAddr>,
    /// `RTA_OIF` or `rtnh_ifindex` (zebra's kernel ifindex); `None` when 0 or
    /// absent.
    pub ifindex: Option<u32>,
    /// ECMP weight, `rtnh_hops + 1` (1 to 256); always 1 for a single path.
    pub weight: u32,
    /// `RTNH_F_ONLINK`: the gateway need not be in a connected subnet. With
    /// gateway 169.254.0.1 on an IPv4 route it marks an IPv6 next hop
    /// (RFC 5549) whose MAC zebra resolves outside FPM.
    pub onlink: bool,
}

/// Why a frame or message could not be decoded. See the module doc for the
/// two kinds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Fatal: the FPM header's version byte is not 1.
    #[error("FPM header: version {0}, expected {FPM_VERSION}")]
    Version(u8),
    /// Fatal: the FPM header's length is below 4 or above the decoder's limit.
    #[error("FPM header: frame length {len} outside 4..={max}")]
    Length { len: u16, max: u16 },
    /// One frame skipped: its payload is not netlink (2 is protobuf, which
    /// `dplane_fpm_nl` never sends).
    #[error("FPM frame of type {0} is not netlink; skipped")]
    FrameType(u8),
    /// One message (or, when the netlink header itself is broken, the rest of
    /// its frame) skipped: the netlink bytes do not decode.
    #[error("netlink message{}: {reason}", .nl_type.map(|t| format!(" type {t}")).unwrap_or_default())]
    Netlink {
        nl_type: Option<u16>,
        reason: String,
    },
    /// One route skipped: it decodes, but needs something this data plane
    /// does not do. The route is named so the caller can withdraw it.
    #[error("route {dst}/{len} table {table}: {what} not supported")]
    Unsupported {
        op: RouteOp,
        table: u32,
        dst: IpAddr,
        len: u8,
        what: &'static str,
    },
}

impl DecodeError {
    /// True when the stream cannot go on: close the connection.
    pub fn is_fatal(&self) -> bool {
        matches!(self, Self::Version(_) | Self::Length { .. })
    }
}

/// Incremental FPM stream decoder: feed bytes as they come from the socket (any
/// split), take out complete messages.
#[derive(Debug)]
pub struct Decoder {
    buf: Vec<u8>,
    /// First byte not consumed yet: a frame header, or inside a frame the next
    /// netlink message.
    head: usize,
    /// End of the frame being split into netlink messages; `<= head` between
    /// frames.
    frame_end: usize,
    max_frame: u16,
}

impl Default for Decoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Decoder {
    /// A decoder that accepts every frame length the header can express.
    pub fn new() -> Self {
        Self::with_max_frame_len(u16::MAX)
    }

    /// A decoder that calls a frame longer than `max` bytes (header included)
    /// a broken stream. FRR 8.4 builds a frame in an 8 KiB buffer plus the
    /// header, so 8196 is enough for it; later versions may send more.
    pub fn with_max_frame_len(max: u16) -> Self {
        Self {
            buf: Vec::new(),
            head: 0,
            frame_end: 0,
            max_frame: max,
        }
    }

    /// Appends bytes read from the stream.
    pub fn feed(&mut self, bytes: &[u8]) {
        // Consumed bytes go before new ones come in: the buffer holds at most
        // one partial frame plus what the caller has not taken out yet.
        if self.head > 0 {
            self.buf.drain(..self.head);
            self.frame_end = self.frame_end.saturating_sub(self.head);
            self.head = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes fed and not yet consumed.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.head
    }

    /// The next decoded message; `Ok(None)` when no complete frame is buffered.
    ///
    /// # Errors
    ///
    /// A [`DecodeError`]: when [fatal](DecodeError::is_fatal) the decoder is
    /// stuck on it (every later call answers it again); otherwise the bad
    /// message or frame has been skipped and the next call continues.
    // Not an Iterator: a fatal error repeats forever, `Ok(None)` only means "feed more".
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<FpmMsg>, DecodeError> {
        loop {
            if self.head < self.frame_end {
                return self.next_in_frame().map(Some);
            }
            let Some(hdr) = self
                .buf
                .get(self.head..)
                .and_then(|b| b.first_chunk::<FPM_HEADER_LEN>())
            else {
                return Ok(None);
            };
            let [version, kind, l0, l1] = *hdr;
            if version != FPM_VERSION {
                return Err(DecodeError::Version(version));
            }
            let len = u16::from_be_bytes([l0, l1]);
            if usize::from(len) < FPM_HEADER_LEN || len > self.max_frame {
                return Err(DecodeError::Length {
                    len,
                    max: self.max_frame,
                });
            }
            if self.buffered() < usize::from(len) {
                return Ok(None);
            }
            let end = self.head + usize::from(len);
            if kind != FPM_MSG_TYPE_NETLINK {
                self.head = end;
                return Err(DecodeError::FrameType(kind));
            }
            self.head += FPM_HEADER_LEN;
            self.frame_end = end;
            // An empty frame (length 4) falls through to the next header.
        }
    }

    /// Decodes the netlink message at `head`, inside the current frame.
    fn next_in_frame(&mut self) -> Result<FpmMsg, DecodeError> {
        let rest = self.buf.get(self.head..self.frame_end).unwrap_or_default();
        let len = match NetlinkBuffer::new_checked(rest) {
            Ok(nl) => nl.length() as usize,
            Err(e) => {
                // Without a trustworthy nlmsg_len the rest of the frame cannot
                // be split; the FPM framing around it is still good.
                self.head = self.frame_end;
                return Err(DecodeError::Netlink {
                    nl_type: None,
                    reason: e.to_string(),
                });
            }
        };
        // Messages in a frame are NLMSG_ALIGNed (zebra returns the aligned
        // length of each); the last one may end the frame unaligned.
        self.head = (self.head + len.next_multiple_of(4)).min(self.frame_end);
        match rest.get(..len) {
            Some(msg) => decode_netlink(msg),
            None => Err(DecodeError::Netlink {
                nl_type: None,
                reason: "nlmsg_len beyond the frame".into(),
            }),
        }
    }
}

/// Decodes one whole netlink message (`bytes` is exactly `nlmsg_len` long).
fn decode_netlink(bytes: &[u8]) -> Result<FpmMsg, DecodeError> {
    decode_route(bytes, each_attribute)
}

/// [`decode_netlink`], with `walk` feeding a route message's attributes
/// (given its header and attribute bytes) to the callback it is handed.
fn decode_route(
    bytes: &[u8],
    walk: impl FnOnce(
        &RouteHeader,
        &[u8],
        Attributes<'_>,
    ) -> Result<(), netlink_packet_core::DecodeError>,
) -> Result<FpmMsg, DecodeError> {
    let nl = NetlinkBuffer::new_checked(bytes).map_err(|e| DecodeError::Netlink {
        nl_type: None,
        reason: e.to_string(),
    })?;
    let nl_type = nl.message_type();
    let err = |e: netlink_packet_core::DecodeError| DecodeError::Netlink {
        nl_type: Some(nl_type),
        reason: e.to_string(),
    };
    if nl_type != RTM_NEWROUTE && nl_type != RTM_DELROUTE {
        // Not parsed at all: the crate does not know nexthop objects, and an
        // EVPN neighbour we would drop anyway must not count as an error.
        return Ok(FpmMsg::Ignored { nl_type });
    }
    // MPLS LSPs travel as route messages too; their attributes are not ours
    // to judge.
    let payload = nl.payload();
    let header = RouteHeader::parse(payload).map_err(err)?;
    let family = header.address_family;
    if family != AddressFamily::Inet && family != AddressFamily::Inet6 {
        return Ok(FpmMsg::Ignored { nl_type });
    }
    let op = if nl_type == RTM_NEWROUTE {
        RouteOp::Add
    } else {
        RouteOp::Del
    };
    let attrs = payload.get(ROUTE_HEADER_LEN..).unwrap_or_default();
    route_update(op, &header, |f| walk(&header, attrs, f), err).map(FpmMsg::Route)
}

/// [`decode_netlink`] as it was before [`each_attribute`], the tests'
/// reference for it: the crate parses the whole message into a
/// `RouteMessage` (a `Vec` of attributes) first.
#[cfg(test)]
fn decode_netlink_collected(bytes: &[u8]) -> Result<FpmMsg, DecodeError> {
    use netlink_packet_core::{NetlinkMessage, NetlinkPayload};
    use netlink_packet_route::RouteNetlinkMessage;
    decode_route(bytes, |_, _, f| {
        let msg = NetlinkMessage::<RouteNetlinkMessage>::deserialize(bytes)?;
        if let NetlinkPayload::InnerMessage(
            RouteNetlinkMessage::NewRoute(m) | RouteNetlinkMessage::DelRoute(m),
        ) = msg.payload
        {
            m.attributes.into_iter().for_each(f);
        }
        Ok(())
    })
}

/// The route header's size (`struct rtmsg`); its attributes follow.
const ROUTE_HEADER_LEN: usize = 12;

/// The attributes of `attrs`, parsed one at a time as
/// `netlink-packet-route` parses a route message's (the encapsulation
/// type first, which `RTA_ENCAP` needs), without collecting them: a route
/// message costs no allocation beyond its paths.
fn each_attribute(
    h: &RouteHeader,
    attrs: &[u8],
    f: &mut dyn FnMut(RouteAttribute),
) -> Result<(), netlink_packet_core::DecodeError> {
    let param = |encap| (h.address_family, h.kind, encap);
    let mut encap = RouteLwEnCapType::None;
    for nla in NlasIterator::new(attrs).flatten() {
        if nla.kind() == libc::RTA_ENCAP_TYPE {
            if let Ok(RouteAttribute::EncapType(t)) =
                RouteAttribute::parse_with_param(&nla, param(encap))
            {
                encap = t;
                break;
            }
        }
    }
    for nla in NlasIterator::new(attrs) {
        f(RouteAttribute::parse_with_param(&nla?, param(encap))?);
    }
    Ok(())
}

fn ip_of(addr: &RouteAddress) -> Option<IpAddr> {
    match addr {
        RouteAddress::Inet(a) => Some(IpAddr::V4(*a)),
        RouteAddress::Inet6(a) => Some(IpAddr::V6(*a)),
        _ => None,
    }
}

const ENCAP: &str = "an encapsulated next hop (RTA_ENCAP: MPLS labels, SRv6, VXLAN)";
const VIA: &str = "a next hop of another address family (RTA_VIA)";

/// The callback that takes each attribute of a route message.
type Attributes<'a> = &'a mut dyn FnMut(RouteAttribute);

/// Turns an IPv4/IPv6 route message (its header, and `attrs`, which feeds
/// its attributes) into an update; `attr_err` names the error of an
/// attribute that does not parse.
fn route_update(
    op: RouteOp,
    h: &RouteHeader,
    attrs: impl FnOnce(Attributes<'_>) -> Result<(), netlink_packet_core::DecodeError>,
    attr_err: impl FnOnce(netlink_packet_core::DecodeError) -> DecodeError,
) -> Result<RouteUpdate, DecodeError> {
    let v4 = h.address_family == AddressFamily::Inet;
    let (bits, unspecified) = if v4 {
        (32, IpAddr::V4(Ipv4Addr::UNSPECIFIED))
    } else {
        (128, IpAddr::V6(Ipv6Addr::UNSPECIFIED))
    };
    let mut dst = None;
    let mut table = None;
    let mut metric = None;
    let mut nh_id = None;
    let mut gateway = None;
    let mut oif = None;
    let mut multipath = None;
    let mut unsupported = (h.source_prefix_length != 0).then_some("a source-specific route");
    attrs(&mut |attr| match attr {
        RouteAttribute::Destination(a) => dst = ip_of(&a),
        RouteAttribute::Table(t) => table = Some(t),
        RouteAttribute::Priority(p) => metric = Some(p),
        RouteAttribute::NhId(id) => nh_id = Some(id),
        RouteAttribute::Gateway(a) => gateway = ip_of(&a),
        RouteAttribute::Oif(i) => oif = Some(i),
        RouteAttribute::MultiPath(nhs) => multipath = Some(nhs),
        RouteAttribute::Via(_) => unsupported = Some(VIA),
        RouteAttribute::Encap(_) | RouteAttribute::EncapType(_) => unsupported = Some(ENCAP),
        RouteAttribute::Source(_) => unsupported = Some("a source-specific route (RTA_SRC)"),
        RouteAttribute::NewDestination(_) | RouteAttribute::NewDestinationAddress(_) => {
            unsupported = Some("a label swap (RTA_NEWDST)")
        }
        // RTA_PREFSRC, RTA_METRICS (MTU), RTA_FLOW (tag), ...
        _ => {}
    })
    .map_err(attr_err)?;
    let nl_err = |reason: String| DecodeError::Netlink {
        nl_type: Some(match op {
            RouteOp::Add => RTM_NEWROUTE,
            RouteOp::Del => RTM_DELROUTE,
        }),
        reason,
    };
    if h.destination_prefix_length > bits {
        return Err(nl_err(format!(
            "prefix length {} for a {bits}-bit address",
            h.destination_prefix_length
        )));
    }
    let mut update = RouteUpdate {
        op,
        table: table.unwrap_or(u32::from(h.table)),
        dst: dst.unwrap_or(unspecified),
        len: h.destination_prefix_length,
        proto: h.protocol.into(),
        kind: kind_of(h.kind),
        metric,
        paths: Vec::new(),
        nh_id,
    };
    let paths = match multipath {
        Some(nhs) => nhs
            .iter()
            .map(|nh| path_of(nh).map_err(|what| unsupported_err(&update, what)))
            .collect::<Result<Vec<_>, _>>()?,
        None => {
            let ifindex = oif.filter(|&i| i != 0);
            if gateway.is_some() || ifindex.is_some() {
                vec![Path {
                    gateway,
                    ifindex,
                    weight: 1,
                    onlink: h.flags.contains(RouteFlags::Onlink),
                }]
            } else {
                Vec::new()
            }
        }
    };
    if let Some(what) = unsupported {
        return Err(unsupported_err(&update, what));
    }
    update.paths = paths;
    Ok(update)
}

fn unsupported_err(u: &RouteUpdate, what: &'static str) -> DecodeError {
    DecodeError::Unsupported {
        op: u.op,
        table: u.table,
        dst: u.dst,
        len: u.len,
        what,
    }
}

/// One `rtnexthop` of `RTA_MULTIPATH`.
fn path_of(nh: &RouteNextHop) -> Result<Path, &'static str> {
    let mut gateway = None;
    for attr in &nh.attributes {
        match attr {
            RouteAttribute::Gateway(a) => gateway = ip_of(a),
            RouteAttribute::Via(_) => return Err(VIA),
            RouteAttribute::Encap(_) | RouteAttribute::EncapType(_) => return Err(ENCAP),
            // RTA_FLOW (tag), ...
            _ => {}
        }
    }
    Ok(Path {
        gateway,
        ifindex: (nh.interface_index != 0).then_some(nh.interface_index),
        weight: u32::from(nh.hops) + 1,
        onlink: nh.flags.contains(RouteNextHopFlags::Onlink),
    })
}

fn kind_of(t: RouteType) -> RouteKind {
    match t {
        RouteType::Unspec => RouteKind::Unspec,
        RouteType::Unicast => RouteKind::Unicast,
        RouteType::BlackHole => RouteKind::Blackhole,
        RouteType::Unreachable => RouteKind::Unreachable,
        RouteType::Prohibit => RouteKind::Prohibit,
        other => RouteKind::Other(other.into()),
    }
}

fn route_type(k: RouteKind) -> RouteType {
    match k {
        RouteKind::Unspec => RouteType::Unspec,
        RouteKind::Unicast => RouteType::Unicast,
        RouteKind::Blackhole => RouteType::BlackHole,
        RouteKind::Unreachable => RouteType::Unreachable,
        RouteKind::Prohibit => RouteType::Prohibit,
        RouteKind::Other(t) => t.into(),
    }
}

/// What the encoder cannot put on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    #[error("frame of {0} bytes exceeds the FPM length field")]
    TooLong(usize),
    #[error("prefix length {len} for a {bits}-bit address")]
    PrefixLen { len: u8, bits: u8 },
    #[error("gateway {0} is not of the route's address family")]
    GatewayFamily(IpAddr),
}

/// Appends one FPM frame holding `update` as zebra (FRR 8.4 `dplane_fpm_nl`,
/// without next-hop groups unless `nh_id` is set) would send it. The netlink
/// sequence number is `seq` (zebra leaves it 0), the port id 0.
///
/// # Errors
///
/// See [`encode_frame`]; `out` is unchanged on error.
pub fn encode(update: &RouteUpdate, seq: u32, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    encode_frame(std::slice::from_ref(update), seq, out)
}

/// Appends one FPM frame holding one netlink message per update (sequence
/// numbers `seq`, `seq + 1`, ...), as zebra 8.4 sends a route update: the
/// `RTM_DELROUTE` and the `RTM_NEWROUTE` in one frame.
///
/// Zebra's encoding keeps less than a [`RouteUpdate`] holds: a delete goes
/// out with type [`RouteKind::Unspec`] and no next hop; a blackhole, or a
/// route with `nh_id`, without paths; a single path without its weight.
///
/// # Errors
///
/// A prefix longer than its family, a gateway of the other family, or a frame
/// over `u16::MAX` bytes. `out` is unchanged on error.
pub fn encode_frame(
    updates: &[RouteUpdate],
    seq: u32,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    let start = out.len();
    let result = encode_into(updates, seq, out);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

fn encode_into(updates: &[RouteUpdate], seq: u32, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    let start = out.len();
    out.extend_from_slice(&[FPM_VERSION, FPM_MSG_TYPE_NETLINK, 0, 0]);
    for (i, u) in (0u32..).zip(updates) {
        encode_route(u, seq.wrapping_add(i), out)?;
    }
    let total = out.len() - start;
    let len = u16::try_from(total).map_err(|_| EncodeError::TooLong(total))?;
    if let Some(l) = out.get_mut(start + 2..start + FPM_HEADER_LEN) {
        l.copy_from_slice(&len.to_be_bytes());
    }
    Ok(())
}

/// A route attribute as zebra's `nl_attr_nest` emits it: `RTA_MULTIPATH`
/// carries `NLA_F_NESTED`, which the crate's own emitter leaves out.
struct Nested<'a>(&'a RouteAttribute);

impl Nla for Nested<'_> {
    fn value_len(&self) -> usize {
        self.0.value_len()
    }
    fn kind(&self) -> u16 {
        self.0.kind()
    }
    fn emit_value(&self, buffer: &mut [u8]) {
        self.0.emit_value(buffer);
    }
    fn is_nested(&self) -> bool {
        matches!(self.0, RouteAttribute::MultiPath(_)) || self.0.is_nested()
    }
}

/// Appends `e` as the crate emits it.
fn emit<E: Emitable + ?Sized>(e: &E, out: &mut Vec<u8>) {
    let at = out.len();
    out.resize(at + e.buffer_len(), 0);
    if let Some(buf) = out.get_mut(at..) {
        e.emit(buf);
    }
}

/// Appends the netlink message of `netlink_route_multipath_msg_encode`.
fn encode_route(u: &RouteUpdate, seq: u32, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    let (family, bits) = match u.dst {
        IpAddr::V4(_) => (AddressFamily::Inet, 32),
        IpAddr::V6(_) => (AddressFamily::Inet6, 128),
    };
    if u.len > bits {
        return Err(EncodeError::PrefixLen { len: u.len, bits });
    }
    let add = u.op == RouteOp::Add;
    let mut header = RouteHeader {
        address_family: family,
        destination_prefix_length: u.len,
        table: u8::try_from(u.table).unwrap_or(RouteHeader::RT_TABLE_UNSPEC),
        protocol: RouteProtocol::from(u.proto),
        scope: RouteScope::Universe,
        kind: if add {
            route_type(u.kind)
        } else {
            RouteType::Unspec
        },
        ..RouteHeader::default()
    };
    let mut attrs = vec![RouteAttribute::Destination(u.dst.into())];
    if let Some(m) = u.metric {
        attrs.push(RouteAttribute::Priority(m));
    }
    if u.table > 255 {
        attrs.push(RouteAttribute::Table(u.table));
    }
    let blackhole = matches!(
        u.kind,
        RouteKind::Blackhole | RouteKind::Unreachable | RouteKind::Prohibit
    );
    if add && !blackhole {
        if let Some(id) = u.nh_id {
            attrs.push(RouteAttribute::NhId(id));
        } else {
            next_hops(u, &mut header, &mut attrs)?;
        }
    }
    let attrs: Vec<Nested> = attrs.iter().map(Nested).collect();
    let attrs = attrs.as_slice();

    let mut nl = NetlinkHeader::default();
    nl.length =
        u32::try_from(NLMSG_HDR_LEN + header.buffer_len() + attrs.buffer_len()).unwrap_or(u32::MAX);
    nl.message_type = if add { RTM_NEWROUTE } else { RTM_DELROUTE };
    nl.flags = NLM_F_CREATE | NLM_F_REQUEST;
    if add && family == AddressFamily::Inet {
        nl.flags |= NLM_F_REPLACE;
    }
    nl.sequence_number = seq;
    emit(&nl, out);
    emit(&header, out);
    emit(&attrs, out);
    Ok(())
}

/// The next-hop attributes of an installed unicast route.
fn next_hops(
    u: &RouteUpdate,
    header: &mut RouteHeader,
    attrs: &mut Vec<RouteAttribute>,
) -> Result<(), EncodeError> {
    let gateway = |p: &Path| -> Result<Option<RouteAttribute>, EncodeError> {
        match p.gateway {
            Some(gw) if gw.is_ipv4() != u.dst.is_ipv4() => Err(EncodeError::GatewayFamily(gw)),
            gw => Ok(gw.map(|gw| RouteAttribute::Gateway(gw.into()))),
        }
    };
    match u.paths.as_slice() {
        [] => {}
        [p] => {
            if p.onlink {
                header.flags |= RouteFlags::Onlink;
            }
            attrs.extend(gateway(p)?);
            attrs.extend(p.ifindex.map(RouteAttribute::Oif));
        }
        paths => {
            let mut nhs = Vec::with_capacity(paths.len());
            for p in paths {
                let mut nh = RouteNextHop::default();
                if p.onlink {
                    nh.flags |= RouteNextHopFlags::Onlink;
                }
                nh.hops = u8::try_from(p.weight.saturating_sub(1)).unwrap_or(u8::MAX);
                nh.interface_index = p.ifindex.unwrap_or(0);
                nh.attributes.extend(gateway(p)?);
                nhs.push(nh);
            }
            attrs.push(RouteAttribute::MultiPath(nhs));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "codec_tests.rs"]
mod tests;
