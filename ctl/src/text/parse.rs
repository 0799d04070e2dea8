//! The keyword parser: words in, typed [`Request`] / [`Change`] out.
//!
//! Hand-written over `&[&str]` (no regex, no clap per line): a batch line
//! costs one whitespace split, a few string compares and the address
//! parses, so a full-table batch parses in a fraction of a second.

use std::fmt;
use std::net::IpAddr;

use crate::wire::{
    parse_addr, Action, Address, Change, Direction, Family, Group, GroupMember, IpNet, Mac, Masked,
    Masked16, Neigh, NextHopSpec, Nexthop, Police, PortRange, Rate, Request, Route, RouteDel,
    RouteFilter, RouteTarget, Rule, RuleMatch, MAX_CAPTURE_PACKETS, MAX_CAPTURE_RATE, MAX_SNAPLEN,
    MAX_TRACE_PACKETS,
};

/// A command line or batch line that does not parse. The message names the
/// command and quotes the offending word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    message: String,
    word: Option<String>,
}

impl ParseError {
    fn new(message: String, word: Option<&str>) -> Self {
        ParseError {
            message,
            word: word.map(str::to_string),
        }
    }

    /// The offending word, when one word is to blame.
    pub fn word(&self) -> Option<&str> {
        self.word.as_deref()
    }

    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ParseError {}

/// A batch file line that does not parse (1-based `line`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchError {
    pub line: usize,
    pub error: ParseError,
}

impl fmt::Display for BatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.error)
    }
}

impl std::error::Error for BatchError {}

/// A parsed batch file: the changes and, for each, its 1-based file line
/// (to name the line when the daemon rejects change number `index`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParsedBatch {
    pub changes: Vec<Change>,
    pub lines: Vec<usize>,
}

impl ParsedBatch {
    /// The file line of the 1-based change `index` a daemon error names.
    pub fn line_of(&self, index: u64) -> Option<usize> {
        let i = usize::try_from(index).ok()?.checked_sub(1)?;
        self.lines.get(i).copied()
    }
}

/// What a command line asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Request(Request),
    /// `help [TOPIC]`, `OBJECT help`: print [`super::usage`] for the topic.
    Help(Option<String>),
    /// A [`Request::Capture`] and the file the client writes the pcap
    /// stream to (`-` for stdout).
    Capture {
        request: Request,
        file: String,
    },
}

/// Parses one command (`route add 10.0.0.0/8 via 10.0.1.2 dev p1`, without
/// the leading `fwdctl`).
///
/// # Errors
/// A [`ParseError`] naming the command and the offending word.
pub fn parse_command(words: &[&str]) -> Result<Command, ParseError> {
    match parse_words(words)? {
        Parsed::Change(c) => Ok(Command::Request(Request::Change(c))),
        Parsed::Query(r) => Ok(Command::Request(r)),
        Parsed::Help(t) => Ok(Command::Help(t.map(str::to_string))),
        Parsed::Capture(request, file) => Ok(Command::Capture { request, file }),
    }
}

/// Parses one change command (the only kind a batch holds).
///
/// # Errors
/// A [`ParseError`]; also for a valid command that is not a change.
pub fn parse_change(words: &[&str]) -> Result<Change, ParseError> {
    match parse_words(words)? {
        Parsed::Change(c) => Ok(c),
        Parsed::Query(_) | Parsed::Help(_) | Parsed::Capture(..) => Err(ParseError::new(
            format!(
                "'{}' is not a change (a batch holds add, del, replace and flush commands)",
                words.join(" ")
            ),
            words.first().copied(),
        )),
    }
}

/// Splits a line into words: whitespace separated, a word starting with
/// `#` starts a comment.
pub fn split_words<'a>(line: &'a str, out: &mut Vec<&'a str>) {
    out.clear();
    for w in line.split_ascii_whitespace() {
        if w.starts_with('#') {
            break;
        }
        out.push(w);
    }
}

/// Parses a whole batch file. Blank lines and comments are skipped; every
/// other line must be a change. All lines are parsed before anything is
/// returned, so an error on the last line still yields no changes.
///
/// # Errors
/// The first bad line, 1-based.
pub fn parse_batch(text: &str) -> Result<ParsedBatch, BatchError> {
    let mut out = ParsedBatch::default();
    for_each_change(text, |line, c| {
        out.changes.push(c);
        out.lines.push(line);
    })?;
    Ok(out)
}

/// [`parse_batch`] without collecting: hands each change and its 1-based
/// line to `f` (e.g. to encode it at once); returns the number of changes.
/// On error, the changes already handed over must be discarded.
///
/// # Errors
/// The first bad line.
pub fn for_each_change<F: FnMut(usize, Change)>(text: &str, mut f: F) -> Result<usize, BatchError> {
    let mut words = Vec::with_capacity(24);
    let mut n = 0;
    for (i, line) in text.lines().enumerate() {
        split_words(line, &mut words);
        if words.is_empty() {
            continue;
        }
        let c = parse_change(&words).map_err(|error| BatchError { line: i + 1, error })?;
        f(i + 1, c);
        n += 1;
    }
    Ok(n)
}

// ------------------------------------------------------------ dispatch

enum Parsed<'a> {
    Change(Change),
    Query(Request),
    Help(Option<&'a str>),
    Capture(Request, String),
}

/// The words of one command and the command's name for error messages.
struct Words<'a, 'w> {
    w: &'w [&'a str],
    i: usize,
    ctx: &'static str,
}

impl<'a> Words<'a, '_> {
    fn next(&mut self) -> Option<&'a str> {
        let w = self.w.get(self.i).copied();
        self.i += usize::from(w.is_some());
        w
    }

    fn peek(&self) -> Option<&'a str> {
        self.w.get(self.i).copied()
    }

    /// The value after keyword `kw`.
    fn value(&mut self, kw: &str) -> Result<&'a str, ParseError> {
        self.next()
            .ok_or_else(|| ParseError::new(format!("{}: '{kw}' needs a value", self.ctx), Some(kw)))
    }

    fn done(&mut self) -> Result<(), ParseError> {
        match self.next() {
            None => Ok(()),
            Some(w) => Err(self.unexpected(w)),
        }
    }

    fn unexpected(&self, w: &str) -> ParseError {
        ParseError::new(format!("{}: unexpected word '{w}'", self.ctx), Some(w))
    }

    fn unknown(&self, w: &str, expected: &str) -> ParseError {
        // One word for a routing table everywhere (config, CLI, output), as
        // iproute2 has it; operators coming from VPP or grout type `vrf`.
        let hint = if w == "vrf" {
            "; routing tables (VRFs) are named 'table N' here"
        } else {
            ""
        };
        ParseError::new(
            format!(
                "{}: unknown keyword '{w}' (expected {expected}){hint}",
                self.ctx
            ),
            Some(w),
        )
    }

    fn invalid(&self, what: &str, w: &str, why: impl fmt::Display) -> ParseError {
        ParseError::new(
            format!("{}: invalid {what} '{w}': {why}", self.ctx),
            Some(w),
        )
    }

    fn missing(&self, what: &str) -> ParseError {
        ParseError::new(format!("{}: missing {what}", self.ctx), None)
    }

    fn twice(&self, kw: &str) -> ParseError {
        ParseError::new(format!("{}: '{kw}' given twice", self.ctx), Some(kw))
    }

    fn conflict(&self, a: &str, b: &str) -> ParseError {
        ParseError::new(format!("{}: '{a}' conflicts with '{b}'", self.ctx), Some(a))
    }

    fn set<T>(&self, slot: &mut Option<T>, kw: &str, v: T) -> Result<(), ParseError> {
        if slot.is_some() {
            return Err(self.twice(kw));
        }
        *slot = Some(v);
        Ok(())
    }

    // ----- value parsers

    fn uint(&self, what: &str, w: &str, max: u64) -> Result<u64, ParseError> {
        match uint(w) {
            Some(v) if v <= max => Ok(v),
            Some(_) => Err(self.invalid(what, w, format_args!("out of range (max {max})"))),
            None => Err(self.invalid(what, w, "not a number")),
        }
    }

    fn u32(&mut self, kw: &str) -> Result<u32, ParseError> {
        let w = self.value(kw)?;
        self.uint(kw, w, u64::from(u32::MAX)).map(|v| v as u32)
    }

    fn addr(&mut self, kw: &str) -> Result<IpAddr, ParseError> {
        let w = self.value(kw)?;
        parse_addr(w).ok_or_else(|| self.invalid(kw, w, "not an IPv4 or IPv6 address"))
    }

    fn name(&mut self, kw: &str) -> Result<String, ParseError> {
        Ok(self.value(kw)?.to_string())
    }

    /// A network prefix: `ADDR/LEN`, a bare address (host prefix) or
    /// `default` (0.0.0.0/0). Host bits are an error, not truncated.
    fn prefix(&self, what: &str, w: &str) -> Result<IpNet, ParseError> {
        let p = if w == "default" {
            IpNet::DEFAULT_V4
        } else if w.contains('/') {
            w.parse::<IpNet>().map_err(|e| self.invalid(what, w, e))?
        } else {
            IpNet::host(
                parse_addr(w)
                    .ok_or_else(|| self.invalid(what, w, "not an IPv4 or IPv6 address"))?,
            )
        };
        if !p.is_network() {
            return Err(self.invalid(
                what,
                w,
                format_args!("host bits set (the network is {})", p.network()),
            ));
        }
        Ok(p)
    }

    /// An interface address: `ADDR/LEN` (host bits allowed) or bare (host).
    fn cidr(&self, what: &str, w: &str) -> Result<IpNet, ParseError> {
        if w.contains('/') {
            w.parse::<IpNet>().map_err(|e| self.invalid(what, w, e))
        } else {
            parse_addr(w)
                .map(IpNet::host)
                .ok_or_else(|| self.invalid(what, w, "not an IPv4 or IPv6 address"))
        }
    }
}

/// Decimal or `0x` hex, no sign.
pub(crate) fn uint(w: &str) -> Option<u64> {
    let (digits, radix) = match w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")) {
        Some(h) => (h, 16),
        None => (w, 10),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

const OBJECTS: &str = "rule, route, nexthop, group, neigh, address, port, stats, status, \
     config, watch, trace, capture or help";

fn parse_words<'a>(words: &[&'a str]) -> Result<Parsed<'a>, ParseError> {
    let Some(&object) = words.first() else {
        return Err(ParseError::new(
            format!("missing command (one of {OBJECTS})"),
            None,
        ));
    };
    let verb = words.get(1).copied();
    if object == "help" {
        return Ok(Parsed::Help(verb));
    }
    if verb == Some("help") {
        return Ok(Parsed::Help(Some(object)));
    }
    let mut w = Words {
        w: words,
        i: 2,
        ctx: "",
    };
    match object {
        "route" | "ro" | "r" | "routes" => route(&mut w, verb),
        "rule" | "ru" | "rules" => rule(&mut w, verb),
        "nexthop" | "nh" => nexthop(&mut w, verb),
        "group" | "nhg" => group(&mut w, verb),
        "neigh" | "neighbor" | "neighbour" | "n" => neigh(&mut w, verb),
        "address" | "addr" | "a" => address(&mut w, verb),
        "port" | "ports" | "p" => port(&mut w, verb),
        "stats" => {
            w.ctx = "stats";
            w.i = 1;
            w.done()?;
            Ok(Parsed::Query(Request::Stats {}))
        }
        "status" => {
            w.ctx = "status";
            w.i = 1;
            w.done()?;
            Ok(Parsed::Query(Request::Status {}))
        }
        "fpm" => {
            w.ctx = "fpm show";
            match verb {
                None | Some("show" | "ls" | "list") => {}
                Some(v) => return Err(w.unknown(v, "show")),
            }
            w.done()?;
            Ok(Parsed::Query(Request::FpmShow {}))
        }
        "config" => config(&mut w, verb),
        "trace" => {
            w.ctx = "trace";
            w.i = 1;
            trace(&mut w)
        }
        "capture" => {
            w.ctx = "capture";
            w.i = 1;
            capture(&mut w)
        }
        "watch" => {
            w.ctx = "watch";
            w.i = 1;
            watch(&mut w)
        }
        "fwdctl" => Err(ParseError::new(
            "unknown command 'fwdctl' (batch lines omit the leading 'fwdctl')".into(),
            Some(object),
        )),
        _ => Err(ParseError::new(
            format!("unknown command '{object}' (expected {OBJECTS})"),
            Some(object),
        )),
    }
}

/// Normalises a verb; `None` (no verb) means show.
fn verb_of(object: &'static str, verb: Option<&str>) -> Result<&'static str, ParseError> {
    let allowed = super::grammar::verbs(object);
    let v = match verb {
        None | Some("show" | "list" | "ls" | "sh") => "show",
        Some("add") => "add",
        Some("del" | "delete") => "del",
        Some("replace") => "replace",
        Some(other) => allowed.iter().copied().find(|a| *a == other).unwrap_or(""),
    };
    if allowed.contains(&v) {
        Ok(v)
    } else {
        let w = verb.unwrap_or("");
        Err(ParseError::new(
            format!(
                "{object}: unknown verb '{w}' (expected {})",
                allowed.join(", ")
            ),
            Some(w),
        ))
    }
}

// ------------------------------------------------------------ route

const ROUTE_KEYS: &str = "table, via, dev, nhid, nexthop-group, blackhole, reject or local";

fn route<'a>(w: &mut Words<'a, '_>, verb: Option<&'a str>) -> Result<Parsed<'a>, ParseError> {
    let v = verb_of("route", verb)?;
    w.ctx = match v {
        "add" => "route add",
        "del" => "route del",
        "replace" => "route replace",
        "get" => "route get",
        _ => "route show",
    };
    match v {
        "add" | "replace" | "del" => {
            let (prefix, table, target) = route_spec(w, v == "del")?;
            Ok(Parsed::Change(match (v, target) {
                ("del", target) => Change::RouteDel(RouteDel {
                    prefix,
                    table,
                    target,
                }),
                (_, Some(target)) => {
                    let r = Route {
                        linkdown: false,
                        proto: None,
                        prefix,
                        table,
                        target,
                    };
                    if v == "add" {
                        Change::RouteAdd(r)
                    } else {
                        Change::RouteReplace(r)
                    }
                }
                (_, None) => return Err(w.missing(&format!("target ({ROUTE_KEYS})"))),
            }))
        }
        "get" => {
            let addr = w.addr("address")?;
            let mut table = None;
            while let Some(k) = w.next() {
                match k {
                    "table" => {
                        let t = w.u32(k)?;
                        w.set(&mut table, k, t)?;
                    }
                    _ => return Err(w.unknown(k, "table")),
                }
            }
            Ok(Parsed::Query(Request::RouteGet {
                addr,
                table: table.unwrap_or(0),
            }))
        }
        "flush" => Ok(Parsed::Change(Change::RouteFlush(route_filter(w)?))),
        _ => Ok(Parsed::Query(Request::RouteShow(route_filter(w)?))),
    }
}

/// The selectors of `route show` and `route flush`:
/// `[table N|all] [v4|v6] [proto P] [within] PREFIX`.
fn route_filter(w: &mut Words<'_, '_>) -> Result<RouteFilter, ParseError> {
    let (mut table, mut family, mut within, mut proto) = (None, None, None, None);
    while let Some(k) = w.next() {
        match k {
            "table" => {
                let t = w.value(k)?;
                if t != "all" {
                    let t = w.uint(k, t, u64::from(u32::MAX))? as u32;
                    w.set(&mut table, k, t)?;
                }
            }
            "v4" | "-4" | "inet" | "ipv4" => w.set(&mut family, k, Family::Ipv4)?,
            "v6" | "-6" | "inet6" | "ipv6" => w.set(&mut family, k, Family::Ipv6)?,
            "proto" | "protocol" => {
                let p = w.name(k)?;
                w.set(&mut proto, k, p)?;
            }
            "within" | "root" => {
                let p = w.value(k)?;
                let p = w.prefix("prefix", p)?;
                w.set(&mut within, k, p)?;
            }
            _ if k.contains('/') || parse_addr(k).is_some() || k == "default" => {
                let p = w.prefix("prefix", k)?;
                w.set(&mut within, "within", p)?;
            }
            _ => return Err(w.unknown(k, "table, v4, v6, proto or a prefix")),
        }
    }
    Ok(RouteFilter {
        table,
        family,
        within,
        proto,
    })
}

const SPECIAL: [&str; 5] = ["blackhole", "reject", "unreachable", "prohibit", "local"];

fn special(k: &str) -> Option<RouteTarget> {
    match k {
        "blackhole" => Some(RouteTarget::Blackhole),
        "reject" | "unreachable" | "prohibit" => Some(RouteTarget::Reject),
        "local" => Some(RouteTarget::Local),
        _ => None,
    }
}

/// `[TYPE] PREFIX [table N] [via ADDR] [dev PORT] | nhid N | nexthop-group N | TYPE`
type RouteSpec = (IpNet, u32, Option<RouteTarget>);

fn route_spec(w: &mut Words<'_, '_>, is_del: bool) -> Result<RouteSpec, ParseError> {
    // `ip route add blackhole 10.0.0.0/8` puts the type first.
    let mut kind: Option<(&str, RouteTarget)> = None;
    if let Some(k) = w.peek().filter(|k| SPECIAL.contains(k)) {
        w.next();
        kind = special(k).map(|t| (k, t));
    }
    let p = w.next().ok_or_else(|| w.missing("prefix"))?;
    let prefix = w.prefix("prefix", p)?;
    let mut table = None;
    let mut via: Option<(&str, IpAddr)> = None;
    let mut dev: Option<(&str, String)> = None;
    let mut obj: Option<(&str, RouteTarget)> = None;
    let mut paths: Vec<NextHopSpec> = Vec::new();
    while let Some(k) = w.next() {
        match k {
            // `nexthop via A [dev P] [weight W] nexthop ...` (iproute2's
            // multipath form); each path ends at the next `nexthop` or at a
            // keyword of the route itself.
            "nexthop" => {
                if via.is_some() || dev.is_some() {
                    return Err(w.conflict("via/dev", k));
                }
                paths.push(next_hop_spec(w)?);
            }
            "table" => {
                let t = w.u32(k)?;
                w.set(&mut table, k, t)?;
            }
            "via" => {
                let a = w.addr(k)?;
                w.set(&mut via, k, (k, a))?;
            }
            "dev" | "oif" => {
                let d = w.name(k)?;
                w.set(&mut dev, k, (k, d))?;
            }
            "nhid" => {
                let id = w.u32(k)?;
                w.set(&mut obj, k, (k, RouteTarget::Nhid(id)))?;
            }
            "nexthop-group" | "group" => {
                let id = w.u32(k)?;
                w.set(&mut obj, k, (k, RouteTarget::Group(id)))?;
            }
            _ => match special(k) {
                Some(t) => w.set(&mut kind, k, (k, t))?,
                None => return Err(w.unknown(k, ROUTE_KEYS)),
            },
        }
    }
    if !paths.is_empty() {
        if let Some((a, _)) = kind.as_ref().or(obj.as_ref()) {
            return Err(w.conflict(a, "nexthop"));
        }
        if via.is_some() || dev.is_some() {
            return Err(w.conflict("via/dev", "nexthop"));
        }
        if paths.len() == 1 && paths[0].weight == 1 {
            let p = paths.remove(0);
            return Ok((
                prefix,
                table.unwrap_or(0),
                Some(RouteTarget::Gateway {
                    via: p.via,
                    dev: p.dev,
                }),
            ));
        }
        return Ok((
            prefix,
            table.unwrap_or(0),
            Some(RouteTarget::Multipath(paths)),
        ));
    }
    let gw = via.map(|v| v.0).or(dev.as_ref().map(|d| d.0));
    let target = match (kind, obj, gw) {
        (Some((a, _)), Some((b, _)), _)
        | (Some((a, _)), None, Some(b))
        | (None, Some((a, _)), Some(b)) => return Err(w.conflict(a, b)),
        (Some((_, t)), None, None) | (None, Some((_, t)), None) => Some(t),
        (None, None, Some(_)) => Some(RouteTarget::Gateway {
            via: via.map(|v| v.1),
            dev: dev.map(|d| d.1),
        }),
        (None, None, None) if is_del => None,
        (None, None, None) => return Err(w.missing(&format!("target ({ROUTE_KEYS})"))),
    };
    Ok((prefix, table.unwrap_or(0), target))
}

/// One path after `nexthop`: `[via ADDRESS] [dev PORT] [weight 1-255]`,
/// at least one of via and dev.
fn next_hop_spec(w: &mut Words<'_, '_>) -> Result<NextHopSpec, ParseError> {
    let (mut via, mut dev, mut weight) = (None, None, None);
    while let Some(k) = w.peek() {
        match k {
            "via" => {
                w.next();
                let a = w.addr(k)?;
                w.set(&mut via, k, a)?;
            }
            "dev" | "oif" => {
                w.next();
                let d = w.name(k)?;
                w.set(&mut dev, k, d)?;
            }
            "weight" => {
                w.next();
                let v = w.value(k)?;
                let n = w.uint(k, v, 255)? as u32;
                if n == 0 {
                    return Err(w.invalid(k, v, "a weight is 1 to 255"));
                }
                w.set(&mut weight, k, n)?;
            }
            _ => break,
        }
    }
    if via.is_none() && dev.is_none() {
        return Err(w.missing("via or dev after nexthop"));
    }
    Ok(NextHopSpec {
        via,
        dev,
        weight: weight.unwrap_or(1),
    })
}

// ------------------------------------------------------------ rule

const MATCH_KEYS: &str =
    "id, prio, src, dst, proto, sport, dport, iif, vlan, dscp, tcp_flags or action";
const MATCH_WORDS: [&str; 22] = [
    "id",
    "handle",
    "prio",
    "priority",
    "pref",
    "src",
    "from",
    "dst",
    "to",
    "proto",
    "ip_proto",
    "sport",
    "src_port",
    "dport",
    "dst_port",
    "iif",
    "in_port",
    "dev",
    "vlan",
    "dscp",
    "tcp_flags",
    "flags",
];
const ACTION_KEYS: &str =
    "permit, drop, count, redirect, mirror, nexthop, table, police, set-dscp or mark";

fn rule<'a>(w: &mut Words<'a, '_>, verb: Option<&'a str>) -> Result<Parsed<'a>, ParseError> {
    let v = verb_of("rule", verb)?;
    match v {
        "add" | "replace" => {
            w.ctx = if v == "add" {
                "rule add"
            } else {
                "rule replace"
            };
            let r = rule_spec(w)?;
            if v == "add" {
                Ok(Parsed::Change(Change::RuleAdd(Box::new(r))))
            } else if r.id.is_none() {
                Err(w.missing("'id' (replace names the rule it replaces)"))
            } else {
                Ok(Parsed::Change(Change::RuleReplace(Box::new(r))))
            }
        }
        "del" => {
            w.ctx = "rule del";
            let id = opt_id(w)?.ok_or_else(|| w.missing("rule id"))?;
            w.done()?;
            Ok(Parsed::Change(Change::RuleDel { id }))
        }
        "flush" => {
            w.ctx = "rule flush";
            w.done()?;
            Ok(Parsed::Change(Change::RuleFlush {}))
        }
        "counters" => {
            w.ctx = "rule counters";
            let id = opt_id(w)?;
            w.done()?;
            Ok(Parsed::Query(Request::RuleCounters { id }))
        }
        _ => {
            w.ctx = "rule show";
            let id = opt_id(w)?;
            w.done()?;
            Ok(Parsed::Query(Request::RuleShow { id }))
        }
    }
}

/// `[id|handle] N`: an optional id, the keyword optional too.
fn opt_id(w: &mut Words<'_, '_>) -> Result<Option<u32>, ParseError> {
    match w.peek() {
        None => Ok(None),
        Some(k @ ("id" | "handle")) => {
            w.next();
            w.u32(k).map(Some)
        }
        Some(n) if uint(n).is_some() => {
            w.next();
            w.uint("id", n, u64::from(u32::MAX)).map(|v| Some(v as u32))
        }
        Some(other) => Err(w.unknown(other, "id")),
    }
}

fn rule_spec(w: &mut Words<'_, '_>) -> Result<Rule, ParseError> {
    let (mut id, mut prio) = (None, None);
    let mut m = RuleMatch::default();
    let mut actions = Vec::new();
    while let Some(k) = w.next() {
        match k {
            "id" | "handle" => {
                let v = w.u32(k)?;
                w.set(&mut id, k, v)?;
            }
            "prio" | "priority" | "pref" => {
                let v = w.u32(k)?;
                w.set(&mut prio, k, v)?;
            }
            "action" | "actions" => {
                actions_list(w, &mut actions)?;
            }
            _ => {
                if !match_word(w, k, &mut m)? {
                    return Err(w.unknown(k, MATCH_KEYS));
                }
            }
        }
    }
    match_families(w, &m)?;
    let priority = prio.ok_or_else(|| w.missing("'prio'"))?;
    if actions.is_empty() {
        return Err(w.missing(&format!("'action' ({ACTION_KEYS})")));
    }
    Ok(Rule {
        id,
        priority,
        matches: m,
        actions,
    })
}

/// One MATCH keyword (`src`, `dport`, ...) and its value into `m`; false
/// when `k` is not one. Rules, traces and captures share it: one way to
/// say which packets.
fn match_word(w: &mut Words<'_, '_>, k: &str, m: &mut RuleMatch) -> Result<bool, ParseError> {
    match k {
        "src" | "from" => {
            let p = w.value(k)?;
            let p = w.prefix(k, p)?;
            w.set(&mut m.src, k, p)?;
        }
        "dst" | "to" => {
            let p = w.value(k)?;
            let p = w.prefix(k, p)?;
            w.set(&mut m.dst, k, p)?;
        }
        "proto" | "ip_proto" => {
            let v = w.value(k)?;
            let p = masked(w, k, v)?;
            w.set(&mut m.proto, k, p)?;
        }
        "sport" | "src_port" => {
            let v = w.value(k)?;
            let r = port_range(w, k, v)?;
            w.set(&mut m.sport, k, r)?;
        }
        "dport" | "dst_port" => {
            let v = w.value(k)?;
            let r = port_range(w, k, v)?;
            w.set(&mut m.dport, k, r)?;
        }
        "iif" | "in_port" | "dev" => {
            let n = w.name(k)?;
            w.set(&mut m.in_port, k, n)?;
        }
        "vlan" => {
            let v = w.value(k)?;
            let v = w.uint(k, v, 4095)? as u16;
            w.set(&mut m.vlan, k, v)?;
        }
        "dscp" => {
            let v = w.value(k)?;
            let d = dscp(w, k, v)?;
            w.set(&mut m.dscp, k, d)?;
        }
        "tcp_flags" | "flags" => {
            let v = w.value(k)?;
            let f = flags_masked(w, k, v)?;
            w.set(&mut m.tcp_flags, k, f)?;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// `src` and `dst` of one family.
fn match_families(w: &Words<'_, '_>, m: &RuleMatch) -> Result<(), ParseError> {
    if let (Some(s), Some(d)) = (m.src, m.dst) {
        if s.is_ipv4() != d.is_ipv4() {
            return Err(ParseError::new(
                format!(
                    "{}: 'src' {s} and 'dst' {d} are of different address families",
                    w.ctx
                ),
                Some("dst"),
            ));
        }
    }
    Ok(())
}

/// The words after `action`: actions until the end of the command. A last
/// word `continue` is the printed marker of a rule without a verdict
/// ([`Rule::continues`]); it adds nothing, and is refused where it would
/// be false.
fn actions_list(w: &mut Words<'_, '_>, out: &mut Vec<Action>) -> Result<(), ParseError> {
    while let Some(k) = w.next() {
        let a = match k {
            "action" | "actions" => continue,
            "continue" => {
                if let Some(after) = w.next() {
                    return Err(ParseError::new(
                        format!(
                            "{}: '{after}' after 'continue' (it must end the action list)",
                            w.ctx
                        ),
                        Some(after),
                    ));
                }
                if out.is_empty() || out.iter().any(Action::is_verdict) {
                    return Err(ParseError::new(
                        format!(
                            "{}: 'continue' is only for rules without a verdict \
                             (only count, mirror, set-dscp, mark): permit, drop, redirect, \
                             nexthop, table and police end evaluation",
                            w.ctx
                        ),
                        Some(k),
                    ));
                }
                return Ok(());
            }
            "permit" | "accept" | "pass" => Action::Permit,
            "drop" | "deny" | "discard" => Action::Drop,
            "count" => Action::Count,
            "redirect" => Action::Redirect(w.name(k)?),
            "mirror" => Action::Mirror(w.name(k)?),
            "nexthop" | "nhid" => Action::Nexthop(w.u32(k)?),
            "table" => Action::Table(w.u32(k)?),
            "set-dscp" | "set_dscp" => {
                let v = w.value(k)?;
                Action::SetDscp(dscp(w, k, v)?)
            }
            "mark" | "set-mark" | "set_mark" => Action::Mark(w.u32(k)?),
            "police" => Action::Police(police(w)?),
            _ if MATCH_WORDS.contains(&k) => {
                return Err(ParseError::new(
                    format!(
                    "{}: match keyword '{k}' after the action list (put matches before 'action')",
                    w.ctx
                ),
                    Some(k),
                ))
            }
            _ => return Err(w.unknown(k, ACTION_KEYS)),
        };
        out.push(a);
    }
    Ok(())
}

fn police(w: &mut Words<'_, '_>) -> Result<Police, ParseError> {
    let (mut rate, mut burst) = (None, None);
    while let Some(k) = w.peek() {
        match k {
            "rate" => {
                w.next();
                let v = w.value(k)?;
                let r = rate_value(w, v)?;
                w.set(&mut rate, k, (v, r))?;
            }
            "burst" => {
                w.next();
                let v = w.value(k)?;
                w.set(&mut burst, k, v)?;
            }
            _ => break,
        }
    }
    let (_, rate) = rate.ok_or_else(|| w.missing("'rate' after 'police'"))?;
    let b = burst.ok_or_else(|| w.missing("'burst' after 'police'"))?;
    let burst = match rate {
        Rate::Bps(_) => size_value(b),
        Rate::Pps(_) => uint(b),
    }
    .filter(|&v| v > 0 && v <= u64::from(u32::MAX))
    .ok_or_else(|| {
        w.invalid(
            "burst",
            b,
            match rate {
                Rate::Bps(_) => "expected bytes > 0, e.g. 1500, 64k, 1m",
                Rate::Pps(_) => "expected packets > 0",
            },
        )
    })? as u32;
    Ok(Police { rate, burst })
}

/// `10mbit`, `1gbit`, `500kbit`, `1000bit`, `100kpps`, `1000pps`.
fn rate_value(w: &Words<'_, '_>, v: &str) -> Result<Rate, ParseError> {
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let unit = unit.to_ascii_lowercase();
    let n = uint(num).filter(|&n| n > 0);
    let (mul, pps) = match unit.as_str() {
        "bit" => (1, false),
        "kbit" => (1_000, false),
        "mbit" => (1_000_000, false),
        "gbit" => (1_000_000_000, false),
        "tbit" => (1_000_000_000_000, false),
        "pps" => (1, true),
        "kpps" => (1_000, true),
        "mpps" => (1_000_000, true),
        u if u.ends_with("bps") => {
            return Err(w.invalid(
                "rate",
                v,
                "ambiguous unit (tc reads 'bps' as bytes/s): use bit, kbit, mbit, gbit or pps",
            ))
        }
        _ => {
            return Err(w.invalid(
                "rate",
                v,
                "expected a number with a unit: bit, kbit, mbit, gbit, tbit, pps, kpps, mpps",
            ))
        }
    };
    let total = n
        .and_then(|n| n.checked_mul(mul))
        .ok_or_else(|| w.invalid("rate", v, "expected a positive number with a unit"))?;
    Ok(if pps {
        Rate::Pps(total)
    } else {
        Rate::Bps(total)
    })
}

/// Bytes with an optional `b`, `k`/`kb` (1024) or `m`/`mb` (1024²) suffix.
fn size_value(v: &str) -> Option<u64> {
    let lower = v.to_ascii_lowercase();
    let (num, mul) = if let Some(n) = lower.strip_suffix("kb").or(lower.strip_suffix('k')) {
        (n, 1024)
    } else if let Some(n) = lower.strip_suffix("mb").or(lower.strip_suffix('m')) {
        (n, 1024 * 1024)
    } else if let Some(n) = lower.strip_suffix('b') {
        (n, 1)
    } else {
        (lower.as_str(), 1)
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    num.parse::<u64>().ok()?.checked_mul(mul)
}

/// `80` or `80-90`.
fn port_range(w: &Words<'_, '_>, kw: &str, v: &str) -> Result<PortRange, ParseError> {
    let (lo, hi) = v.split_once('-').unwrap_or((v, v));
    let p = |s: &str| uint(s).filter(|&x| x <= 65535).map(|x| x as u16);
    match (p(lo), p(hi)) {
        (Some(lo), Some(hi)) if lo <= hi => Ok(PortRange { lo, hi }),
        (Some(_), Some(_)) => Err(w.invalid(kw, v, "the low end is above the high end")),
        _ => Err(w.invalid(kw, v, "expected PORT or LOW-HIGH, ports 0..=65535")),
    }
}

/// `VALUE[/MASK]` where each side is a number `0..=max` or, via `named`, a
/// name; no mask means exact (`max`, all bits). Value bits outside the mask
/// are an error.
fn masked_bits(
    w: &Words<'_, '_>,
    kw: &str,
    v: &str,
    max: u16,
    named: fn(&str) -> Option<u16>,
) -> Result<(u16, u16), ParseError> {
    let (val, mask) = v.split_once('/').map_or((v, None), |(a, b)| (a, Some(b)));
    let side = |s: &str| {
        uint(s)
            .filter(|&x| x <= u64::from(max))
            .map(|x| x as u16)
            .or_else(|| named(s))
    };
    let bad = |s: &str| {
        w.invalid(
            kw,
            v,
            format_args!("'{s}' is not a number 0..={max:#x} or a known name"),
        )
    };
    let value = side(val).ok_or_else(|| bad(val))?;
    let mask = match mask {
        None => max,
        Some(m) => side(m).ok_or_else(|| bad(m))?,
    };
    if value & !mask != 0 {
        return Err(w.invalid(kw, v, "the value has bits outside the mask"));
    }
    Ok((value, mask))
}

/// A masked byte (`proto`): numbers 0..=0xff or protocol names.
fn masked(w: &Words<'_, '_>, kw: &str, v: &str) -> Result<Masked, ParseError> {
    let (value, mask) = masked_bits(w, kw, v, 0xff, |s| proto_number(s).map(u16::from))?;
    // masked_bits keeps both within 0xff.
    Ok(Masked {
        value: value as u8,
        mask: mask as u8,
    })
}

/// The 12-bit TCP flags field: numbers 0..=0xfff or flag names; no mask
/// means all 12 bits.
fn flags_masked(w: &Words<'_, '_>, kw: &str, v: &str) -> Result<Masked16, ParseError> {
    let (value, mask) = masked_bits(w, kw, v, TCP_FLAGS_ALL, tcp_flag_bits)?;
    Ok(Masked16 { value, mask })
}

/// IP protocol numbers by name.
pub(crate) const PROTOCOLS: [(&str, u8); 8] = [
    ("icmp", 1),
    ("tcp", 6),
    ("udp", 17),
    ("gre", 47),
    ("esp", 50),
    ("ah", 51),
    ("icmpv6", 58),
    ("sctp", 132),
];

fn proto_number(s: &str) -> Option<u8> {
    if s == "ipv6-icmp" {
        return Some(58);
    }
    PROTOCOLS.iter().find(|(n, _)| *n == s).map(|p| p.1)
}

/// The TCP flags field: 12 bits below the data offset.
pub(crate) const TCP_FLAGS_ALL: u16 = 0xfff;

/// TCP flag bits by name (`ae` is bit 8, RFC 9768's Accurate ECN bit,
/// RFC 3540's `ns`; bits 9..=11 are reserved and have no name).
pub(crate) const TCP_FLAGS: [(&str, u16); 10] = [
    ("fin", 0x01),
    ("syn", 0x02),
    ("rst", 0x04),
    ("psh", 0x08),
    ("ack", 0x10),
    ("urg", 0x20),
    ("ece", 0x40),
    ("cwr", 0x80),
    ("ae", 0x100),
    ("ns", 0x100),
];

/// `syn`, `syn,ack`, `syn|ack`.
fn tcp_flag_bits(s: &str) -> Option<u16> {
    let mut bits = 0;
    for name in s.split([',', '|']) {
        bits |= TCP_FLAGS.iter().find(|(n, _)| *n == name)?.1;
    }
    Some(bits)
}

/// 0..=63, or a PHB name: `ef`, `cs0`..`cs7`, `af11`..`af43`.
fn dscp(w: &Words<'_, '_>, kw: &str, v: &str) -> Result<u8, ParseError> {
    let named = match v.as_bytes() {
        b"ef" => Some(46),
        [b'c', b's', d @ b'0'..=b'7'] => Some((d - b'0') * 8),
        [b'a', b'f', c @ b'1'..=b'4', p @ b'1'..=b'3'] => Some((c - b'0') * 8 + (p - b'0') * 2),
        _ => None,
    };
    match named.or_else(|| uint(v).filter(|&x| x <= 63).map(|x| x as u8)) {
        Some(d) => Ok(d),
        None => Err(w.invalid(kw, v, "expected 0..=63 or ef, cs0..cs7, af11..af43")),
    }
}

// ------------------------------------------------------------ nexthop, group

fn nexthop<'a>(w: &mut Words<'a, '_>, verb: Option<&'a str>) -> Result<Parsed<'a>, ParseError> {
    let v = verb_of("nexthop", verb)?;
    match v {
        "add" | "replace" => {
            w.ctx = if v == "add" {
                "nexthop add"
            } else {
                "nexthop replace"
            };
            let id = opt_id(w)?.ok_or_else(|| w.missing("next hop id"))?;
            let (mut via, mut dev) = (None, None);
            while let Some(k) = w.next() {
                match k {
                    "via" => {
                        let a = w.addr(k)?;
                        w.set(&mut via, k, a)?;
                    }
                    "dev" | "oif" => {
                        let d = w.name(k)?;
                        w.set(&mut dev, k, d)?;
                    }
                    _ => return Err(w.unknown(k, "via or dev")),
                }
            }
            let dev = dev.ok_or_else(|| w.missing("'dev'"))?;
            let nh = Nexthop { id, via, dev };
            Ok(Parsed::Change(if v == "add" {
                Change::NexthopAdd(nh)
            } else {
                Change::NexthopReplace(nh)
            }))
        }
        "del" => {
            w.ctx = "nexthop del";
            let id = opt_id(w)?.ok_or_else(|| w.missing("next hop id"))?;
            w.done()?;
            Ok(Parsed::Change(Change::NexthopDel { id }))
        }
        _ => {
            w.ctx = "nexthop show";
            let id = opt_id(w)?;
            w.done()?;
            Ok(Parsed::Query(Request::NexthopShow { id }))
        }
    }
}

fn group<'a>(w: &mut Words<'a, '_>, verb: Option<&'a str>) -> Result<Parsed<'a>, ParseError> {
    let v = verb_of("group", verb)?;
    match v {
        "add" | "replace" => {
            w.ctx = if v == "add" {
                "group add"
            } else {
                "group replace"
            };
            let id = opt_id(w)?.ok_or_else(|| w.missing("group id"))?;
            let mut members: Vec<GroupMember> = Vec::new();
            while let Some(k) = w.next() {
                if matches!(k, "members" | "member" | "group") {
                    continue;
                }
                for m in k.split(',').filter(|m| !m.is_empty()) {
                    let (i, wt) = m.split_once(':').map_or((m, None), |(a, b)| (a, Some(b)));
                    let bad = || {
                        w.invalid(
                            "member",
                            k,
                            "expected NEXTHOP_ID[:WEIGHT], weight 1..=65535",
                        )
                    };
                    let id = uint(i)
                        .filter(|&x| x <= u64::from(u32::MAX))
                        .ok_or_else(bad)? as u32;
                    let weight = match wt {
                        None => 1,
                        Some(x) => uint(x)
                            .filter(|&x| (1..=65535).contains(&x))
                            .ok_or_else(bad)? as u32,
                    };
                    if members.iter().any(|m| m.id == id) {
                        return Err(w.invalid(
                            "member",
                            k,
                            format_args!("next hop {id} listed twice"),
                        ));
                    }
                    members.push(GroupMember { id, weight });
                }
            }
            if members.is_empty() {
                return Err(w.missing("members (NEXTHOP_ID[:WEIGHT] ...)"));
            }
            let g = Group { id, members };
            Ok(Parsed::Change(if v == "add" {
                Change::GroupAdd(g)
            } else {
                Change::GroupReplace(g)
            }))
        }
        "del" => {
            w.ctx = "group del";
            let id = opt_id(w)?.ok_or_else(|| w.missing("group id"))?;
            w.done()?;
            Ok(Parsed::Change(Change::GroupDel { id }))
        }
        _ => {
            w.ctx = "group show";
            let id = opt_id(w)?;
            w.done()?;
            Ok(Parsed::Query(Request::GroupShow { id }))
        }
    }
}

// ------------------------------------------------------------ neigh, address

fn neigh<'a>(w: &mut Words<'a, '_>, verb: Option<&'a str>) -> Result<Parsed<'a>, ParseError> {
    let v = verb_of("neigh", verb)?;
    w.ctx = match v {
        "add" => "neigh add",
        "replace" => "neigh replace",
        "del" => "neigh del",
        "flush" => "neigh flush",
        _ => "neigh show",
    };
    if v == "show" {
        let dev = dev_filter(w)?;
        return Ok(Parsed::Query(Request::NeighShow { dev }));
    }
    if v == "flush" {
        let dev = dev_filter(w)?;
        return Ok(Parsed::Query(Request::NeighFlush { dev }));
    }
    let addr = w.addr("address")?;
    let (mut lladdr, mut dev) = (None, None);
    while let Some(k) = w.next() {
        match k {
            "lladdr" | "mac" if v != "del" => {
                let m = w.value(k)?;
                let m = m.parse::<Mac>().map_err(|e| w.invalid(k, m, e))?;
                w.set(&mut lladdr, k, m)?;
            }
            "dev" => {
                let d = w.name(k)?;
                w.set(&mut dev, k, d)?;
            }
            _ if v == "del" => return Err(w.unknown(k, "dev")),
            _ => return Err(w.unknown(k, "lladdr or dev")),
        }
    }
    let dev = dev.ok_or_else(|| w.missing("'dev'"))?;
    if v == "del" {
        return Ok(Parsed::Change(Change::NeighDel { addr, dev }));
    }
    let lladdr = lladdr.ok_or_else(|| w.missing("'lladdr'"))?;
    let n = Neigh { addr, lladdr, dev };
    Ok(Parsed::Change(if v == "add" {
        Change::NeighAdd(n)
    } else {
        Change::NeighReplace(n)
    }))
}

fn dev_filter(w: &mut Words<'_, '_>) -> Result<Option<String>, ParseError> {
    let mut dev = None;
    while let Some(k) = w.next() {
        match k {
            "dev" => {
                let d = w.name(k)?;
                w.set(&mut dev, k, d)?;
            }
            _ => return Err(w.unknown(k, "dev")),
        }
    }
    Ok(dev)
}

fn address<'a>(w: &mut Words<'a, '_>, verb: Option<&'a str>) -> Result<Parsed<'a>, ParseError> {
    let v = verb_of("address", verb)?;
    if v == "show" {
        w.ctx = "address show";
        let dev = dev_filter(w)?;
        return Ok(Parsed::Query(Request::AddressShow { dev }));
    }
    w.ctx = if v == "add" {
        "address add"
    } else {
        "address del"
    };
    let a = w.next().ok_or_else(|| w.missing("address"))?;
    let addr = w.cidr("address", a)?;
    let mut dev = None;
    while let Some(k) = w.next() {
        match k {
            "dev" => {
                let d = w.name(k)?;
                w.set(&mut dev, k, d)?;
            }
            _ => return Err(w.unknown(k, "dev")),
        }
    }
    let dev = dev.ok_or_else(|| w.missing("'dev'"))?;
    let a = Address { addr, dev };
    Ok(Parsed::Change(if v == "add" {
        Change::AddressAdd(a)
    } else {
        Change::AddressDel(a)
    }))
}

// ------------------------------------------------------------ port, config, watch

fn port<'a>(w: &mut Words<'a, '_>, verb: Option<&'a str>) -> Result<Parsed<'a>, ParseError> {
    let v = verb_of("port", verb)?;
    w.ctx = match v {
        "stats" => "port stats",
        "xstats" => "port xstats",
        "set" => "port set",
        _ => "port show",
    };
    if v == "set" {
        let dev = w.name("port")?;
        let up = match w.next() {
            Some("up") => true,
            Some("down") => false,
            Some(x) => return Err(w.unknown(x, "up or down")),
            None => return Err(w.missing("'up' or 'down'")),
        };
        w.done()?;
        return Ok(Parsed::Change(Change::PortSet { dev, up }));
    }
    let port = w.next().map(str::to_string);
    w.done()?;
    Ok(Parsed::Query(match v {
        "stats" => Request::PortStats { port },
        "xstats" => Request::PortXstats { port },
        _ => Request::PortShow { port },
    }))
}

fn config<'a>(w: &mut Words<'a, '_>, verb: Option<&'a str>) -> Result<Parsed<'a>, ParseError> {
    match verb {
        Some("save") => {
            w.ctx = "config save";
            let path = w.next().ok_or_else(|| w.missing("file name"))?.to_string();
            w.done()?;
            Ok(Parsed::Query(Request::ConfigSave { path }))
        }
        _ => {
            let v = verb.unwrap_or("");
            Err(ParseError::new(
                format!("config: unknown verb '{v}' (expected save)"),
                Some(v),
            ))
        }
    }
}

fn watch<'a>(w: &mut Words<'a, '_>) -> Result<Parsed<'a>, ParseError> {
    let (mut interval, mut count) = (None, None);
    while let Some(k) = w.next() {
        match k {
            "interval" | "every" => {
                let v = w.value(k)?;
                let ms = duration_ms(v)
                    .filter(|&ms| ms >= 10)
                    .ok_or_else(|| w.invalid(k, v, "expected a duration >= 10ms: 1, 2s, 500ms"))?;
                w.set(&mut interval, k, ms)?;
            }
            "count" => {
                let v = w.value(k)?;
                let n = w.uint(k, v, u64::MAX)?;
                w.set(&mut count, k, n)?;
            }
            _ => return Err(w.unknown(k, "interval or count")),
        }
    }
    Ok(Parsed::Query(Request::Watch {
        interval_ms: interval.unwrap_or(1000),
        count,
    }))
}

/// `2` (seconds), `2s`, `500ms`.
fn duration_ms(v: &str) -> Option<u64> {
    if let Some(ms) = v.strip_suffix("ms") {
        return ms
            .parse()
            .ok()
            .filter(|_| ms.bytes().all(|b| b.is_ascii_digit()));
    }
    let s = v.strip_suffix('s').unwrap_or(v);
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u64>().ok()?.checked_mul(1000)
}

// ------------------------------------------------------------ trace, capture

/// `trace N [port P] [MATCH...]`.
fn trace<'a>(w: &mut Words<'a, '_>) -> Result<Parsed<'a>, ParseError> {
    let max = u64::from(MAX_TRACE_PACKETS);
    let count = match w.next() {
        Some(v) => w.uint("packet count", v, max)? as u32,
        None => return Err(w.missing("packet count (1 to 10000)")),
    };
    if count == 0 {
        return Err(w.invalid("packet count", "0", "must be 1 or more"));
    }
    let (mut port, mut filter) = (None, RuleMatch::default());
    while let Some(k) = w.next() {
        if k == "port" {
            let p = w.name(k)?;
            w.set(&mut port, k, p)?;
        } else if !match_word(w, k, &mut filter)? {
            return Err(w.unknown(k, &format!("port or {MATCH_KEYS}")));
        }
    }
    if port.is_some() && filter.in_port.is_some() {
        return Err(w.conflict("iif", "port"));
    }
    match_families(w, &filter)?;
    Ok(Parsed::Query(Request::Trace {
        count,
        port,
        filter,
    }))
}

/// `capture port P [in|out] [MATCH...] [snaplen N] [rate N] -c N -w FILE`.
fn capture<'a>(w: &mut Words<'a, '_>) -> Result<Parsed<'a>, ParseError> {
    let (mut port, mut direction, mut count, mut snaplen, mut rate, mut file) =
        (None, None, None, None, None, None);
    let mut filter = RuleMatch::default();
    while let Some(k) = w.next() {
        match k {
            "port" => {
                let p = w.name(k)?;
                w.set(&mut port, k, p)?;
            }
            "in" | "out" => {
                let d = if k == "in" {
                    Direction::In
                } else {
                    Direction::Out
                };
                w.set(&mut direction, k, d)?;
            }
            "-c" | "count" => {
                let v = w.value(k)?;
                let n = w.uint(k, v, u64::from(MAX_CAPTURE_PACKETS))? as u32;
                if n == 0 {
                    return Err(w.invalid(k, v, "must be 1 or more"));
                }
                w.set(&mut count, k, n)?;
            }
            "snaplen" | "-s" => {
                let v = w.value(k)?;
                let n = w.uint(k, v, u64::from(MAX_SNAPLEN))? as u32;
                if n == 0 {
                    return Err(w.invalid(k, v, "must be 1 or more"));
                }
                w.set(&mut snaplen, k, n)?;
            }
            "rate" => {
                let v = w.value(k)?;
                let v = v.strip_suffix("pps").unwrap_or(v);
                let n = w.uint(k, v, u64::from(MAX_CAPTURE_RATE))? as u32;
                if n == 0 {
                    return Err(w.invalid(k, v, "must be 1 or more"));
                }
                w.set(&mut rate, k, n)?;
            }
            "-w" | "write" => {
                let f = w.name(k)?;
                w.set(&mut file, k, f)?;
            }
            _ => {
                if !match_word(w, k, &mut filter)? {
                    return Err(w.unknown(
                        k,
                        &format!("port, in, out, -c, -w, snaplen, rate or {MATCH_KEYS}"),
                    ));
                }
            }
        }
    }
    if filter.in_port.is_some() {
        return Err(w.conflict("iif", "port"));
    }
    match_families(w, &filter)?;
    let port = port.ok_or_else(|| w.missing("'port PORT'"))?;
    let count = count.ok_or_else(|| w.missing("'-c N' (packets to capture)"))?;
    let file = file.ok_or_else(|| w.missing("'-w FILE' (the pcap file, - for stdout)"))?;
    Ok(Parsed::Capture(
        Request::Capture {
            port,
            direction: direction.unwrap_or_default(),
            filter,
            count,
            snaplen,
            rate,
        },
        file,
    ))
}
