#![doc = include_str!("../../PROTOCOL.md")]

use std::fmt;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

mod net;
#[cfg(test)]
mod tests;
mod trace;

pub(crate) use net::parse_addr;
pub use net::{IpNet, Mac, NetParseError};
pub use trace::{
    CaptureSummary, Direction, PcapChunk, TraceLost, TraceNexthop, TracePacket, TraceRecord,
    TraceRoute, DEFAULT_CAPTURE_RATE, DEFAULT_SNAPLEN, MAX_CAPTURE_PACKETS, MAX_CAPTURE_RATE,
    MAX_SNAPLEN, MAX_TRACE_PACKETS,
};

/// The protocol version this crate speaks. Bumped on any incompatible
/// change of the types below (including a new field in a request type,
/// since requests reject unknown fields).
pub const PROTOCOL_VERSION: u32 = 1;

/// The oldest protocol version this build still speaks: a daemon answers
/// clients down to it, a client accepts daemons down to it. Versions in
/// between are negotiated in the hello (see [`HelloReply::answer`]).
pub const MIN_PROTOCOL_VERSION: u32 = 1;

/// The versions this build speaks.
pub const PROTOCOLS: std::ops::RangeInclusive<u32> = MIN_PROTOCOL_VERSION..=PROTOCOL_VERSION;

/// The `client` string `fwdctl` sends in its hello.
pub const CLIENT_NAME: &str = concat!("fwdctl ", env!("CARGO_PKG_VERSION"));

fn is_one(v: &u32) -> bool {
    *v == 1
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

fn one() -> u32 {
    1
}

// ---------------------------------------------------------------- handshake

/// The client's first line: `{"hello":{"protocol":1,"client":"fwdctl 0.1.0"}}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelloLine {
    pub hello: Hello,
}

/// What a client says about itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// The newest protocol version the client speaks.
    pub protocol: u32,
    /// Free text for logs, e.g. `"fwdctl 0.1.0"`.
    pub client: String,
    /// The oldest version it still speaks (absent: only `protocol`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_protocol: Option<u32>,
}

impl Hello {
    /// The hello of a client speaking `versions`.
    pub fn new(client: &str, versions: std::ops::RangeInclusive<u32>) -> Hello {
        Hello {
            protocol: *versions.end(),
            client: client.to_string(),
            min_protocol: (versions.start() != versions.end()).then_some(*versions.start()),
        }
    }

    /// The versions the client speaks.
    pub fn versions(&self) -> std::ops::RangeInclusive<u32> {
        self.min_protocol
            .unwrap_or(self.protocol)
            .min(self.protocol)..=self.protocol
    }
}

/// The server's answer to a hello: `{"hello":{...}}` or `{"error":{...}}`
/// (after an error the server closes the connection).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HelloReply {
    Hello(ServerHello),
    Error(ErrorBody),
}

/// What the daemon says about itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerHello {
    /// The version the session speaks: the newest both sides speak.
    pub protocol: u32,
    /// Free text, e.g. `"fwd 0.1.0"`.
    pub daemon: String,
}

impl HelloReply {
    /// The server side of the handshake for a daemon speaking [`PROTOCOLS`].
    pub fn answer(hello: &Hello, daemon: &str) -> HelloReply {
        HelloReply::negotiate(hello, daemon, PROTOCOLS)
    }

    /// The newest version both the client and a daemon speaking `ours`
    /// speak, or [`ErrorKind::Unsupported`] naming both ranges when there
    /// is none.
    pub fn negotiate(
        hello: &Hello,
        daemon: &str,
        ours: std::ops::RangeInclusive<u32>,
    ) -> HelloReply {
        let theirs = hello.versions();
        let v = (*theirs.end()).min(*ours.end());
        if v >= *theirs.start() && v >= *ours.start() {
            HelloReply::Hello(ServerHello {
                protocol: v,
                daemon: daemon.to_string(),
            })
        } else {
            HelloReply::Error(ErrorBody::new(
                ErrorKind::Unsupported,
                format!(
                    "protocol versions {}..={} are not supported; this daemon speaks {}..={}",
                    theirs.start(),
                    theirs.end(),
                    ours.start(),
                    ours.end()
                ),
            ))
        }
    }
}

// ---------------------------------------------------------------- requests

/// One request line: `{"id":N,"request":{...}}`. The client picks `id`
/// (echoed on every line of the answer); `0` is reserved for "unknown".
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestLine {
    pub id: u64,
    pub request: Request,
}

/// Everything a client can ask. Variants marked *stream* are answered by
/// `item` lines and an `end` line; the others by one `ok` line. Either may
/// instead be answered by one `error` line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// One change, applied as its own generation. Answer: [`Response::Done`].
    Change(Change),
    /// Changes applied as ONE generation, or none of them. On failure the
    /// error's `index` is the 1-based position of the offending change.
    /// Answer: [`Response::Done`].
    Batch { changes: Vec<Change> },
    /// *stream* of [`Item::Rule`] in classification order (priority, id).
    RuleShow {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u32>,
    },
    /// *stream* of [`Item::RuleCounters`], same order.
    RuleCounters {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u32>,
    },
    /// *stream* of [`Item::Route`]: by table, then family (IPv4 first), then
    /// prefix order (address, then length). The selectors are those of
    /// [`Change::RouteFlush`] (same JSON body as before: `{"table"?,...}`).
    RouteShow(RouteFilter),
    /// Longest-prefix match of `addr` in `table`. Answer:
    /// [`Response::RouteLookup`], or `not_found` when nothing matches.
    RouteGet {
        addr: IpAddr,
        #[serde(default, skip_serializing_if = "is_zero")]
        table: u32,
    },
    /// *stream* of [`Item::Nexthop`].
    NexthopShow {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u32>,
    },
    /// *stream* of [`Item::Group`].
    GroupShow {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u32>,
    },
    /// *stream* of [`Item::Neigh`]: static and learned entries with their
    /// state.
    NeighShow {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dev: Option<String>,
    },
    /// Forget learned neighbours (of one port); statics stay. Answer:
    /// [`Response::Done`].
    NeighFlush {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dev: Option<String>,
    },
    /// *stream* of [`Item::Address`].
    AddressShow {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dev: Option<String>,
    },
    /// Answer: [`Response::Ports`] (all ports when `port` is absent).
    PortShow {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        port: Option<String>,
    },
    /// Answer: [`Response::PortStats`].
    PortStats {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        port: Option<String>,
    },
    /// Answer: [`Response::PortXstats`].
    PortXstats {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        port: Option<String>,
    },
    /// Answer: [`Response::Stats`].
    Stats {},
    /// Answer: [`Response::Status`].
    Status {},
    /// The FPM session with zebra. Answer: [`Response::Fpm`].
    FpmShow {},
    /// Write the running tables to `path` (absolute, on the daemon's host)
    /// in the batch text format, so the daemon can load it at start.
    /// Answer: [`Response::Saved`].
    ConfigSave { path: String },
    /// *stream* of [`Item::Rates`], one every `interval_ms`, with an
    /// [`Item::Event`] before it for each link or admin change since the
    /// previous one; endless unless `count` is given (the client closes the
    /// connection to stop).
    Watch {
        interval_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        count: Option<u64>,
    },
    /// *stream* of [`Item::Trace`], one per packet, for the next `count`
    /// packets (1..=[`MAX_TRACE_PACKETS`]) received on `port` (any port
    /// when absent) that match `filter` (a rule's match); then
    /// [`Item::TraceLost`] if records were lost. One trace at a time: a
    /// second one gets `busy`. Closing the connection ends it.
    Trace {
        count: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        port: Option<String>,
        #[serde(default, skip_serializing_if = "RuleMatch::is_any")]
        filter: RuleMatch,
    },
    /// *stream* of [`Item::Pcap`] (concatenated: a classic pcap file) of
    /// the next `count` packets (1..=[`MAX_CAPTURE_PACKETS`]) of `port` in
    /// `direction` that match `filter`, each cut to `snaplen` bytes
    /// (1..=[`MAX_SNAPLEN`], default [`DEFAULT_SNAPLEN`]), at most `rate`
    /// packets per second (1..=[`MAX_CAPTURE_RATE`], default
    /// [`DEFAULT_CAPTURE_RATE`]); then one [`Item::CaptureSummary`]. One
    /// capture at a time: a second one gets `busy`. Closing the connection
    /// ends it.
    Capture {
        port: String,
        #[serde(default)]
        direction: Direction,
        #[serde(default, skip_serializing_if = "RuleMatch::is_any")]
        filter: RuleMatch,
        count: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        snaplen: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rate: Option<u32>,
    },
}

impl Request {
    /// True when the answer is a stream (`item`... `end`) rather than `ok`.
    pub fn is_stream(&self) -> bool {
        matches!(
            self,
            Request::RuleShow { .. }
                | Request::RuleCounters { .. }
                | Request::RouteShow(..)
                | Request::NexthopShow { .. }
                | Request::GroupShow { .. }
                | Request::NeighShow { .. }
                | Request::AddressShow { .. }
                | Request::Watch { .. }
                | Request::Trace { .. }
                | Request::Capture { .. }
        )
    }
}

/// Address family filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    Ipv4,
    Ipv6,
}

/// A change to the tables. Alone ([`Request::Change`]) or in a
/// [`Request::Batch`], a change applies completely or not at all.
///
/// Keys: rules by `id`; routes by `(table, prefix)`; next hops and groups by
/// `id` (one id space for both); neighbours by `(dev, addr)`; addresses by
/// `(dev, addr)`. `add` of an existing key fails with `exists`, `del` or
/// `replace` of a missing one with `not_found` (`replace` of a route or a
/// neighbour adds it when missing, like `ip route replace`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Change {
    /// Without an `id` the daemon assigns one (returned in `Done.rule_ids`).
    RuleAdd(Box<Rule>),
    /// Replaces rule `id` (required) as one step: no packet sees neither.
    RuleReplace(Box<Rule>),
    RuleDel {
        id: u32,
    },
    /// Deletes every rule. In a batch followed by `rule_add`s it swaps the
    /// whole rule set atomically.
    RuleFlush {},
    RouteAdd(Route),
    RouteReplace(Route),
    RouteDel(RouteDel),
    /// Deletes every static route the filter selects (all of them when it
    /// is empty), as one step. Routes derived from addresses and neighbours
    /// (`kernel`) and zebra's are not the operator's to flush: a `proto`
    /// naming them is refused.
    RouteFlush(RouteFilter),
    NexthopAdd(Nexthop),
    /// Every route using the next hop follows it in the same generation.
    NexthopReplace(Nexthop),
    /// Fails with `conflict` while a route or group uses it.
    NexthopDel {
        id: u32,
    },
    GroupAdd(Group),
    GroupReplace(Group),
    /// Fails with `conflict` while a route uses it.
    GroupDel {
        id: u32,
    },
    NeighAdd(Neigh),
    NeighReplace(Neigh),
    NeighDel {
        addr: IpAddr,
        dev: String,
    },
    AddressAdd(Address),
    AddressDel(Address),
    /// Administrative state of a port (`port set NAME up|down`). A down
    /// port receives and sends nothing; its next hops leave every ECMP
    /// group in the same generation and come back when it is up.
    PortSet {
        dev: String,
        up: bool,
    },
}

/// A classifier rule. Lower `priority` wins; ties go to the lower id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Stable identifier; absent in a `rule_add` that lets the daemon choose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u32>,
    pub priority: u32,
    /// Absent or `{}` matches every packet.
    #[serde(rename = "match", default, skip_serializing_if = "RuleMatch::is_any")]
    pub matches: RuleMatch,
    /// Applied in order; a terminal action (permit, drop, redirect) ends the
    /// list. Never empty. Without a verdict ([`Rule::continues`]) the
    /// packet goes on to the next matching rule.
    pub actions: Vec<Action>,
}

impl Rule {
    /// True when the rule has no verdict ([`Action::is_verdict`]): a packet
    /// it matches gets its actions and goes on to the next matching rule
    /// (the daemon's `acl::Rule::has_verdict`, negated; an empty list is
    /// permit, a verdict).
    pub fn continues(&self) -> bool {
        !self.actions.is_empty() && !self.actions.iter().any(Action::is_verdict)
    }
}

/// What a rule matches; every absent field is a wildcard.
///
/// Family: with `src` and `dst` both absent the rule matches IPv4 and IPv6;
/// otherwise only their family (so `"0.0.0.0/0"` means "any IPv4 packet").
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleMatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src: Option<IpNet>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst: Option<IpNet>,
    /// IP protocol / IPv6 next header, `x & mask == value`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proto: Option<Masked>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sport: Option<PortRange>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dport: Option<PortRange>,
    /// Ingress port name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_port: Option<String>,
    /// 802.1Q VLAN id, 0..=4095.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan: Option<u16>,
    /// 0..=63.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dscp: Option<u8>,
    /// TCP flags, the 12-bit field below the data offset (3 reserved bits,
    /// AE/NS, CWR ECE URG ACK PSH RST SYN FIN), `x & mask == value`; value
    /// and mask at most 0xfff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_flags: Option<Masked16>,
}

impl RuleMatch {
    /// True when every field is a wildcard.
    pub fn is_any(&self) -> bool {
        *self == RuleMatch::default()
    }
}

/// `x & mask == value` on one byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Masked {
    pub value: u8,
    pub mask: u8,
}

/// `x & mask == value` on a 16-bit field (the TCP flags: at most 0xfff).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Masked16 {
    pub value: u16,
    pub mask: u16,
}

/// Inclusive port range; `lo <= hi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortRange {
    pub lo: u16,
    pub hi: u16,
}

/// One action of a rule. Unit variants are strings (`"drop"`), the others
/// one-key objects (`{"redirect":"p2"}`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// Terminal: continue to routing.
    Permit,
    /// Terminal.
    Drop,
    /// Count only (every rule counts anyway); no verdict.
    Count,
    /// Terminal: out of this port, bypassing routing.
    Redirect(String),
    /// A copy out of this port; no verdict.
    Mirror(String),
    /// Policy routing: forward via this next hop (or group) id.
    Nexthop(u32),
    /// Policy routing: look the destination up in this table.
    Table(u32),
    /// Token bucket; non-conforming packets are dropped.
    Police(Police),
    /// Rewrite DSCP (0..=63).
    SetDscp(u8),
    /// Set the packet mark.
    Mark(u32),
}

impl Action {
    /// Decides the packet's fate, so it ends rule evaluation: permit, drop,
    /// redirect, nexthop, table and police (pass or drop). The others
    /// (count, mirror, set-dscp, mark) apply and evaluation goes on.
    pub fn is_verdict(&self) -> bool {
        matches!(
            self,
            Action::Permit
                | Action::Drop
                | Action::Redirect(_)
                | Action::Nexthop(_)
                | Action::Table(_)
                | Action::Police(_)
        )
    }
}

/// Token-bucket policer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Police {
    pub rate: Rate,
    /// Bucket depth: bytes for a `bps` rate, packets for a `pps` rate.
    pub burst: u32,
}

/// A rate. `bps` is bits per second everywhere in this protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Rate {
    Bps(u64),
    Pps(u64),
}

/// A route: also the item of a route dump.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// A network prefix (host bits zero).
    pub prefix: IpNet,
    /// Routing table (VRF); 0, the default, is omitted on the wire.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub table: u32,
    pub target: RouteTarget,
    /// In dumps: every path of the route leads to a down port.
    #[serde(default, skip_serializing_if = "is_false")]
    pub linkdown: bool,
    /// In dumps: who installed the route, as `ip route` names protocols:
    /// `static` (config, fwdctl), `kernel` (connected, local, attached
    /// neighbours), or what zebra reported over FPM (`bgp`, `ospf`, ...).
    /// In changes: absent or `static`. (Boxed: a 900k-route batch is held
    /// as `Change`s, see the size test.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proto: Option<Box<str>>,
}

/// Where a route sends packets.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RouteTarget {
    /// An unnamed next hop: `via` a gateway and/or out of `dev`; at least
    /// one is present. Without `via` the destination is on-link. Without
    /// `dev` the daemon picks the port whose address covers `via`.
    Gateway {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        via: Option<IpAddr>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dev: Option<String>,
    },
    /// A next hop object by id.
    Nhid(u32),
    /// An ECMP group by id.
    Group(u32),
    /// Drop silently.
    Blackhole,
    /// Drop; ICMP unreachable (when implemented).
    Reject,
    /// Addressed to the appliance.
    Local,
    /// Several unnamed next hops, flows spread by weight (an ECMP group the
    /// daemon creates and deletes with its last route, like `ip route add
    /// ... nexthop via A nexthop via B`).
    Multipath(Vec<NextHopSpec>),
}

/// One path of a multipath route: as [`RouteTarget::Gateway`], plus a
/// weight.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NextHopSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<IpAddr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dev: Option<String>,
    /// 1 to 255; 1 is omitted on the wire.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub weight: u32,
}

/// Route deletion key; with `target` present the route is deleted only if
/// its target equals it (else `not_found`), like `ip route del ... via ...`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteDel {
    pub prefix: IpNet,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub table: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<RouteTarget>,
}

/// Which routes a `route show` or `route flush` selects, each selector
/// narrowing the set when present.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteFilter {
    /// Only this table; all tables when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<Family>,
    /// Only routes equal to or more specific than this prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within: Option<IpNet>,
    /// Only routes of this protocol (`bgp`, `static`, `kernel`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proto: Option<String>,
}

/// A named next hop.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Nexthop {
    pub id: u32,
    /// Gateway; absent for an on-link next hop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<IpAddr>,
    pub dev: String,
}

/// An ECMP group of next hops; flows are spread by a 5-tuple hash in
/// proportion to the weights.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    pub id: u32,
    /// Never empty; each member a next hop id (not a group).
    pub members: Vec<GroupMember>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupMember {
    pub id: u32,
    /// >= 1; 1 when absent on input, always present on output.
    #[serde(default = "one")]
    pub weight: u32,
}

/// A static neighbour entry (the MAC a next hop's gateway resolves to).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Neigh {
    pub addr: IpAddr,
    pub lladdr: Mac,
    pub dev: String,
}

/// An interface address of a port (host bits set, e.g. `"10.0.1.1/24"`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Address {
    pub addr: IpNet,
    pub dev: String,
}

// ---------------------------------------------------------------- answers

/// One line from the server after the hello: `{"id":N,<kind>:<body>}`.
/// Its JSON form is written by hand in [`crate::codec`] (two keys, no
/// buffering) because a dump of a full table is a million of these.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResponseLine {
    pub id: u64,
    pub body: Reply,
}

/// The body of a [`ResponseLine`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// `"ok"`: the single answer of a non-stream request.
    Ok(Response),
    /// `"error"`: the request failed (and changed nothing); ends a stream too.
    Error(ErrorBody),
    /// `"item"`: one element of a stream.
    Item(Item),
    /// `"end"`: the stream is complete.
    End(End),
}

impl ResponseLine {
    pub fn ok(id: u64, r: Response) -> Self {
        ResponseLine {
            id,
            body: Reply::Ok(r),
        }
    }

    pub fn error(id: u64, e: ErrorBody) -> Self {
        ResponseLine {
            id,
            body: Reply::Error(e),
        }
    }

    pub fn item(id: u64, i: Item) -> Self {
        ResponseLine {
            id,
            body: Reply::Item(i),
        }
    }

    pub fn end(id: u64, count: u64) -> Self {
        ResponseLine {
            id,
            body: Reply::End(End { count }),
        }
    }
}

/// End of a stream: how many items were sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct End {
    pub count: u64,
}

/// A failed request. The tables are untouched.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub kind: ErrorKind,
    /// One sentence naming the offending field, value or object.
    pub message: String,
    /// For a batch: the 1-based position of the change that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u64>,
}

impl ErrorBody {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ErrorBody {
            kind,
            message: message.into(),
            index: None,
        }
    }

    /// The same error, attributed to change `index` (1-based) of a batch.
    pub fn at(mut self, index: u64) -> Self {
        self.index = Some(index);
        self
    }
}

impl fmt::Display for ErrorBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(i) = self.index {
            write!(f, "change {i}: ")?;
        }
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for ErrorBody {}

/// Why a request failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Malformed line: not JSON, unknown request or field, wrong type,
    /// request before hello.
    BadRequest,
    /// The object a del/replace/get/show names does not exist.
    NotFound,
    /// `add` of a key that exists.
    Exists,
    /// Valid alone but conflicts with the state, e.g. deleting a next hop
    /// that routes use.
    Conflict,
    /// Well-formed but semantically wrong: host bits set, value out of
    /// range, unknown port, contradictory actions.
    Invalid,
    /// Protocol version mismatch, or a request this daemon does not implement.
    Unsupported,
    /// Over a size bound (line length, batch size, table capacity).
    TooLarge,
    /// The peer's credentials do not allow the request.
    PermissionDenied,
    /// Too many clients, or reclamation backpressure did not clear in time.
    Busy,
    /// A daemon bug or shutdown.
    Internal,
}

impl ErrorKind {
    /// The wire name, e.g. `"not_found"`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::BadRequest => "bad_request",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Exists => "exists",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Invalid => "invalid",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::TooLarge => "too_large",
            ErrorKind::PermissionDenied => "permission_denied",
            ErrorKind::Busy => "busy",
            ErrorKind::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The `ok` answer of a non-stream request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Response {
    /// A change or batch was published.
    Done(Done),
    RouteLookup(RouteLookup),
    Ports(Vec<PortInfo>),
    PortStats(Vec<PortStats>),
    PortXstats(Vec<PortXstats>),
    Stats(StatsReport),
    Status(StatusReport),
    Saved(Saved),
    Fpm(FpmStatus),
}

/// The FPM server: routes zebra installs in the appliance.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FpmStatus {
    /// Where it listens; absent when FPM is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen: Option<String>,
    /// zebra's address while it is connected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    pub connects: u64,
    /// FPM frames read.
    pub messages: u64,
    /// Reads turned into table generations (one per read burst).
    pub batches: u64,
    pub routes_added: u64,
    pub routes_deleted: u64,
    /// Messages of other kinds (links, neighbours, next-hop objects).
    pub ignored: u64,
    /// Routes refused (unknown interface or table, unusable next hop): see
    /// `last_error`.
    pub refused: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Routes zebra holds in the appliance now.
    pub routes: u64,
    /// Of those, installed in the FIB (the others are beneath a route of
    /// the operator's at the same prefix).
    pub installed: u64,
    /// After a reconnect: routes of the previous session not yet replayed,
    /// removed when the replay window ends.
    pub stale: u64,
    /// Milliseconds until that sweep; absent when none is pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_in_ms: Option<u64>,
    /// Routes removed by sweeps.
    pub swept: u64,
}

/// A published change or batch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Done {
    /// The generation that made the change visible.
    pub generation: u64,
    /// How many changes it applied.
    pub changes: u64,
    /// Ids the daemon assigned to `rule_add`s without an id, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rule_ids: Vec<u32>,
}

/// Result of [`Request::RouteGet`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteLookup {
    pub addr: IpAddr,
    #[serde(default)]
    pub table: u32,
    /// The longest matching route.
    pub route: Route,
    /// Its resolved next hops (several for a group; none for blackhole,
    /// reject, local).
    #[serde(default)]
    pub paths: Vec<Path>,
}

/// One resolved next hop.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Path {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nhid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<IpAddr>,
    pub dev: String,
    #[serde(default = "one")]
    pub weight: u32,
    /// The neighbour's MAC; absent while unresolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lladdr: Option<Mac>,
}

/// One port as configured.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortInfo {
    pub index: u32,
    pub name: String,
    #[serde(default)]
    pub driver: String,
    pub mac: Mac,
    /// Carrier (true where the driver cannot tell, e.g. a `net_tap` whose
    /// interface is in another network namespace).
    pub link_up: bool,
    /// Set down by the operator (`port set NAME down`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub admin_down: bool,
    #[serde(default)]
    pub speed_mbps: u32,
    #[serde(default)]
    pub mtu: u32,
    #[serde(default)]
    pub rx_queues: u32,
    #[serde(default)]
    pub tx_queues: u32,
    /// The routing table its received packets are looked up in.
    #[serde(default)]
    pub table: u32,
    #[serde(default)]
    pub addresses: Vec<IpNet>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Counters of one port. `rx_missed`, `rx_errors`, `rx_nombuf`, `tx_errors`
/// come from the NIC, `tx_dropped` from the workers (TX ring full).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortStats {
    pub name: String,
    pub rx_packets: u64,
    pub rx_bytes: u64,
    #[serde(default)]
    pub rx_missed: u64,
    #[serde(default)]
    pub rx_errors: u64,
    #[serde(default)]
    pub rx_nombuf: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    #[serde(default)]
    pub tx_errors: u64,
    #[serde(default)]
    pub tx_dropped: u64,
}

/// Driver extended statistics of one port.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortXstats {
    pub name: String,
    pub xstats: Vec<Xstat>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Xstat {
    pub name: String,
    pub value: u64,
}

/// Global, per-lcore, per-port and per-drop-reason counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatsReport {
    pub uptime_ms: u64,
    pub rx_packets: u64,
    pub tx_packets: u64,
    /// Sum of `drops`.
    pub dropped: u64,
    /// Every drop reason the daemon knows, zero or not, in a fixed order.
    pub drops: Vec<DropCount>,
    /// What the data path did besides forwarding (replies, ICMP errors,
    /// packets held for neighbours...), and the neighbour side's counters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<EventCount>,
    pub lcores: Vec<LcoreStats>,
    pub ports: Vec<PortStats>,
    /// Rates over the daemon's last sampling period, when it keeps one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rates: Option<RateSample>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DropCount {
    /// e.g. `"no_route"`, `"acl_drop"`.
    pub reason: String,
    pub packets: u64,
}

/// One event counter (`"icmp_errors"`, `"neigh_probes"`...).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventCount {
    pub event: String,
    pub count: u64,
}

/// Counters of one worker lcore.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LcoreStats {
    pub lcore: u32,
    /// Poll loop iterations, and those that received at least one packet.
    pub polls: u64,
    pub busy_polls: u64,
    /// Time slept between polls while idle (`datapath.idle_sleep_us`).
    #[serde(default)]
    pub idle_sleep_ms: u64,
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub dropped: u64,
}

/// Rates over one interval (a [`Request::Watch`] item; also in stats).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateSample {
    /// Daemon uptime at the end of the interval.
    pub uptime_ms: u64,
    /// The interval actually measured.
    pub interval_ms: u64,
    pub rx_pps: u64,
    pub tx_pps: u64,
    pub drop_pps: u64,
    /// Bits per second.
    pub rx_bps: u64,
    pub tx_bps: u64,
    #[serde(default)]
    pub ports: Vec<PortRates>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortRates {
    pub name: String,
    pub rx_pps: u64,
    pub tx_pps: u64,
    pub rx_bps: u64,
    pub tx_bps: u64,
}

/// Versioning and health of the daemon.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusReport {
    /// Daemon version, e.g. `"fwd 0.1.0"`.
    pub version: String,
    pub uptime_ms: u64,
    /// The current published generation.
    pub generation: u64,
    pub workers: Vec<WorkerStatus>,
    /// Retired objects (and their bytes) waiting for quiescence.
    pub pending_objects: u64,
    pub pending_bytes: u64,
    pub reclaimed_objects: u64,
    pub reclaimed_bytes: u64,
    /// Stalled workers detected since start.
    pub stalls: u64,
    /// Publishes that found pending memory over its bound and waited, and
    /// of those the waits that ended still over the bound.
    pub backpressure_events: u64,
    pub backpressure_overruns: u64,
    /// Time from a publish until every online worker reported it.
    pub publish_to_quiescent: Latency,
    /// Connected clients, this one included.
    #[serde(default)]
    pub clients: u32,
    /// The routing tables against their limits (absent from a daemon
    /// older than the limits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing: Option<RoutingUsage>,
}

/// The routing tables against the config's `limits`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutingUsage {
    /// Routing tables (VRFs), and `limits.tables`.
    pub tables: u64,
    pub tables_limit: u64,
    /// The memory the tables are charged, and `limits.routing_mb` in bytes.
    pub bytes: u64,
    pub bytes_limit: u64,
}

/// One worker as the writer last saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerStatus {
    pub name: String,
    pub online: bool,
    /// The last generation it reported; absent while offline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_generation: Option<u64>,
    pub stalled: bool,
    /// Milliseconds since it last made progress.
    pub last_progress_ms: u64,
}

/// Latency percentiles in nanoseconds over `count` samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Latency {
    pub count: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

/// Result of [`Request::ConfigSave`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Saved {
    pub path: String,
    /// The generation whose tables were written.
    pub generation: u64,
    /// Number of change lines written.
    pub lines: u64,
}

/// One element of a stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Item {
    Rule(Rule),
    RuleCounters(RuleCounters),
    Route(Route),
    Nexthop(NexthopEntry),
    Group(GroupEntry),
    Neigh(NeighEntry),
    Address(Address),
    Rates(RateSample),
    /// A link or admin state change, in a [`Request::Watch`] stream.
    Event(LoggedEvent),
    /// One packet of a [`Request::Trace`].
    Trace(TraceRecord),
    /// Records a trace lost (sent before its end, only when some were).
    TraceLost(TraceLost),
    /// The next bytes of a [`Request::Capture`]'s pcap stream.
    Pcap(PcapChunk),
    /// The last item of a capture.
    CaptureSummary(CaptureSummary),
}

/// An event the daemon logged (`port b: carrier down`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoggedEvent {
    pub uptime_ms: u64,
    pub message: String,
}

/// A neighbour in `neigh show`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NeighEntry {
    pub addr: IpAddr,
    /// Absent while unresolved (incomplete, failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lladdr: Option<Mac>,
    pub dev: String,
    /// `permanent` (static), `reachable`, `stale`, `probe`, `incomplete`
    /// or `failed`, as Linux's `ip neigh` says.
    pub state: String,
    /// Milliseconds since the entry was last confirmed or changed.
    #[serde(default)]
    pub age_ms: u64,
    /// Probes sent in the current state.
    #[serde(default)]
    pub probes: u32,
    /// Packets held waiting for it.
    #[serde(default)]
    pub held: u32,
}

/// Hit counters of one rule, summed over workers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleCounters {
    pub id: u32,
    pub priority: u32,
    pub packets: u64,
    pub bytes: u64,
    /// Milliseconds since the last hit; absent if never hit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_ms: Option<u64>,
}

/// A next hop in a dump.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NexthopEntry {
    pub id: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<IpAddr>,
    pub dev: String,
    /// Routes, groups and classifier rules (`action nexthop`) using it.
    #[serde(default)]
    pub refs: u64,
    /// The gateway's (or on-link destination's) MAC when resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lladdr: Option<Mac>,
}

/// A group in a dump.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupEntry {
    pub id: u32,
    pub members: Vec<GroupMember>,
    /// Routes using it.
    #[serde(default)]
    pub refs: u64,
}
