//! FRR 8.4 zebra's real FPM streams (`tests/data/fpm`, see its README)
//! replayed through the appliance's own pipeline: `Ingest` (decode and
//! translate, in the read sizes a socket hands over), `FpmControl` (the
//! FPM rib, precedence, mark and sweep) and a qsbr writer publishing the
//! tables, exactly as the daemon strings them together.
//!
//! Every expectation comes from `facts.json` (written by the capture
//! script's own parser and checked against zebra's RIB at capture time)
//! or from the capture's README, never from the pipeline's output. Where
//! a full route set is not listed in `facts.json` (the BGP and ECMP
//! captures list samples), it is generated from the README's description
//! and then checked against every count and every sample `facts.json` has
//! for that state before it is used.
//!
//! The fixture is the capture's topology: port 0 "eth1" (zebra's ifindex
//! 2) with 10.77.1.1/24 and fd77:1::1/64, port 1 "eth2" (ifindex 3) with
//! 10.77.2.1/24 and fd77:2::1/64; zebra's tables 254, 100 and 1000 map to
//! our 0, 100 and 1000.
//!
//! zebra also sends each interface's IPv6 link-local route (fe80::/64, a
//! connected route). Link-local destinations are never forwarded: the
//! appliance ignores those messages (counted in `Chunk::ignored`), and
//! neither holds nor installs them. The expected states are zebra's (as
//! `facts.json` has them, checked whole) less the fe80::/10 prefixes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use ctl::wire::{self, Change, FpmStatus, IpNet, NextHopSpec, RouteTarget};
use fwd::acl;
use fwd::control::fpm::{FpmControl, FpmEvent, FpmSettings, Ingest, SharedStatus, Translate};
use fwd::control::{apply_changes, net_of, prefix_of, route_to_wire, target_to_wire};
use fwd::fpm::codec::{self, FpmMsg, RouteUpdate};
use fwd::fpm::rib::{FpmRib, FpmTarget};
use fwd::qsbr::{self, QsbrConfig, Writer};
use fwd::route::{proto_name, Origin, Prefix, Resolved, Target};
use fwd::tables::{PortInfo, Tables};
use proptest::prelude::*;
use serde_json::Value;

// ------------------------------------------------------------------ data

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fpm");

fn capture(name: &str) -> &'static [u8] {
    static FILES: OnceLock<Mutex<HashMap<String, &'static [u8]>>> = OnceLock::new();
    let mut files = FILES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    files.entry(name.to_string()).or_insert_with(|| {
        let bytes =
            std::fs::read(format!("{DIR}/{name}")).unwrap_or_else(|e| panic!("{DIR}/{name}: {e}"));
        Box::leak(bytes.into_boxed_slice())
    })
}

fn facts() -> &'static Value {
    static FACTS: OnceLock<Value> = OnceLock::new();
    FACTS.get_or_init(|| {
        let text = std::fs::read_to_string(format!("{DIR}/facts.json")).expect("facts.json");
        serde_json::from_str(&text).expect("facts.json parses")
    })
}

/// `facts[file]`, checked against the capture's size.
fn file_facts(name: &str) -> &'static Value {
    let f = &facts()[name];
    assert!(f.is_object(), "facts.json has no {name}");
    assert_eq!(
        u(&f["bytes"]),
        capture(name).len() as u64,
        "{name}: facts.json and the capture disagree on its size"
    );
    f
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn phase<'a>(f: &'a Value, name: &str) -> &'a Value {
    f["phases"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == name))
        .unwrap_or_else(|| panic!("no phase {name}"))
}

/// The FPM frames of a capture, by their 4-byte headers (version 1, type
/// 1, big-endian length): independent of the appliance's decoder.
fn frames(data: &[u8]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        assert_eq!(data[at], 1, "FPM version at {at}");
        let len = usize::from(u16::from_be_bytes([data[at + 2], data[at + 3]]));
        assert!(len >= 4 && at + len <= data.len(), "frame at {at}");
        out.push(at..at + len);
        at += len;
    }
    out
}

/// `rtm_protocol` of a frame's first netlink message (FPM header 4, nlmsghdr 16,
/// then rtm_family, dst_len, src_len, tos, table, protocol).
fn first_proto(frame: &[u8]) -> u8 {
    frame[4 + 16 + 5]
}

/// One netlink route message of a capture, read by hand: independent of
/// the appliance's decoder.
#[derive(Debug)]
struct RawMsg {
    /// `RTM_NEWROUTE` (else `RTM_DELROUTE`).
    new: bool,
    /// `RTA_DST` (the unspecified address when absent) and `rtm_dst_len`.
    dst: IpNet,
    /// `RTA_TABLE` if present, else `rtm_table`.
    table: u32,
    proto: u8,
}

/// Every netlink message of a capture (native endian: little): nlmsghdr
/// (len u32, type u16, flags u16, seq, pid), rtmsg (family, dst_len,
/// src_len, tos, table, protocol, scope, type, flags u32), then
/// attributes (len u16, type u16, 4-byte aligned).
fn raw_messages(data: &[u8]) -> Vec<RawMsg> {
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let mut out = Vec::new();
    for fr in frames(data) {
        let f = &data[fr.clone()];
        let mut at = 4;
        while at < f.len() {
            let len = u32_at(f, at) as usize;
            assert!(
                len >= 28 && at + len <= f.len(),
                "netlink message at {at} of {fr:?}"
            );
            let m = &f[at..at + len];
            let new = match u16_at(m, 4) {
                24 => true,
                25 => false,
                t => panic!("netlink type {t} in {fr:?}"),
            };
            let (family, dst_len) = (m[16], m[17]);
            let mut table = u32::from(m[20]);
            let proto = m[21];
            let mut dst = match family {
                2 => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                10 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
                f => panic!("family {f} in {fr:?}"),
            };
            let mut a = 28;
            while a + 4 <= len {
                let alen = usize::from(u16_at(m, a));
                assert!(alen >= 4 && a + alen <= len, "attribute at {a} of {fr:?}");
                let v = &m[a + 4..a + alen];
                match u16_at(m, a + 2) {
                    1 => {
                        dst = match family {
                            2 => IpAddr::from(<[u8; 4]>::try_from(v).expect("RTA_DST v4")),
                            _ => IpAddr::from(<[u8; 16]>::try_from(v).expect("RTA_DST v6")),
                        }
                    }
                    15 => table = u32_at(v, 0),
                    _ => {}
                }
                a += (alen + 3) & !3;
            }
            out.push(RawMsg {
                new,
                dst: IpNet::new(dst, dst_len).expect("a prefix"),
                table,
                proto,
            });
            at += (len + 3) & !3;
        }
    }
    out
}

/// IPv6 link-local: zebra sends these, the appliance ignores them.
fn link_local(n: &IpNet) -> bool {
    net("fe80::/10").covers(*n)
}

/// A state of zebra's as the appliance holds it: without the link-local
/// prefixes.
fn held(m: Model) -> Model {
    m.into_iter().filter(|((_, n), _)| !link_local(n)).collect()
}

/// How many messages of capture `name` are for link-local prefixes (what
/// `Ingest` must count as ignored), from the frames, read by hand and
/// checked against every per-message count `facts.json` has.
fn link_local_messages(name: &str) -> u64 {
    let f = file_facts(name);
    let msgs = raw_messages(capture(name));
    assert_eq!(
        msgs.len() as u64,
        u(&f["netlink_messages"]),
        "{name}: messages"
    );
    let kind = |m: &RawMsg| {
        if m.new {
            "RTM_NEWROUTE"
        } else {
            "RTM_DELROUTE"
        }
    };
    let mut by_type_family = BTreeMap::<String, u64>::new();
    let mut tables = BTreeMap::<String, u64>::new();
    let mut protocols = BTreeMap::<String, u64>::new();
    for m in &msgs {
        let fam = if m.dst.is_ipv4() { "ipv4" } else { "ipv6" };
        *by_type_family
            .entry(format!("{} {fam}", kind(m)))
            .or_default() += 1;
        *tables
            .entry(format!("{} {}", kind(m), m.table))
            .or_default() += 1;
        *protocols
            .entry(format!("{} {}", kind(m), m.proto))
            .or_default() += 1;
    }
    for (what, got) in [
        ("by_type_family", by_type_family),
        ("tables", tables),
        ("protocols", protocols),
    ] {
        assert_eq!(
            serde_json::json!(got),
            f[what],
            "{name}: {what} of the frames"
        );
    }
    let ll: Vec<&RawMsg> = msgs.iter().filter(|m| link_local(&m.dst)).collect();
    // zebra's connected fe80::/64, sent once and never withdrawn: the
    // link-local routes of the final state.
    for m in &ll {
        assert!(
            m.new && m.dst == net("fe80::/64") && m.proto == 2,
            "{name}: {m:?}"
        );
    }
    let fin = if f["final_routes"].is_array() {
        complete(f, "final_routes")
    } else {
        fact_routes(&f["final_routes_sample"])
    };
    assert_eq!(
        ll.len(),
        fin.keys().filter(|(_, n)| link_local(n)).count(),
        "{name}: link-local messages vs the final state"
    );
    ll.len() as u64
}

// ----------------------------------------------------------------- model

/// What a route should look like: its protocol and where it goes, in the
/// operator's terms (ports by name, multipath paths sorted).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Want {
    proto: u8,
    target: RouteTarget,
}

type Key = (u32, IpNet);
type Model = BTreeMap<Key, Want>;

const PORTS: [&str; 2] = ["eth1", "eth2"];

/// zebra's tables to ours.
fn table_map() -> HashMap<u32, u32> {
    [(254, 0), (100, 100), (1000, 1000)].into_iter().collect()
}

/// The capture namespace's ifindexes to our ports.
fn ifindex_map() -> HashMap<u32, u16> {
    [(2, 0), (3, 1)].into_iter().collect()
}

fn dev_of_oif(oif: u64) -> String {
    match oif {
        2 => "eth1".into(),
        3 => "eth2".into(),
        o => panic!("oif {o} is not in the capture topology"),
    }
}

fn net(s: &str) -> IpNet {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e:?}"))
}

fn norm(t: RouteTarget) -> RouteTarget {
    match t {
        RouteTarget::Multipath(mut specs) => {
            specs.sort_by(|a, b| (a.via, &a.dev, a.weight).cmp(&(b.via, &b.dev, b.weight)));
            RouteTarget::Multipath(specs)
        }
        t => t,
    }
}

fn gw(via: Option<IpAddr>, dev: &str) -> RouteTarget {
    RouteTarget::Gateway {
        via,
        dev: Some(dev.into()),
    }
}

fn multi(paths: &[(&str, &str)]) -> RouteTarget {
    norm(RouteTarget::Multipath(
        paths
            .iter()
            .map(|(via, dev)| NextHopSpec {
                via: Some(via.parse().unwrap()),
                dev: Some((*dev).into()),
                weight: 1,
            })
            .collect(),
    ))
}

/// One route of `facts.json` (`final_routes`, `final_routes_sample`).
fn fact_route(r: &Value) -> (Key, Want) {
    let zt = u(&r["table"]) as u32;
    let table = *table_map()
        .get(&zt)
        .unwrap_or_else(|| panic!("zebra table {zt}"));
    let prefix = net(r["prefix"].as_str().expect("prefix"));
    let nhs: Vec<(Option<IpAddr>, String)> = r["nexthops"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|nh| {
                    (
                        nh["gateway"].as_str().map(|g| g.parse().unwrap()),
                        dev_of_oif(u(&nh["oif"])),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let target = match (r["rtm_type"].as_str().expect("rtm_type"), nhs.as_slice()) {
        ("blackhole", []) => RouteTarget::Blackhole,
        ("unreachable", []) => RouteTarget::Reject,
        ("unicast", [(via, dev)]) => gw(*via, dev),
        ("unicast", paths) if paths.len() > 1 => norm(RouteTarget::Multipath(
            paths
                .iter()
                .map(|(via, dev)| NextHopSpec {
                    via: *via,
                    dev: Some(dev.clone()),
                    weight: 1,
                })
                .collect(),
        )),
        (t, _) => panic!("unexpected fact route {r}: {t}"),
    };
    (
        (table, prefix),
        Want {
            proto: u(&r["protocol"]) as u8,
            target,
        },
    )
}

fn fact_routes(list: &Value) -> Model {
    list.as_array()
        .expect("a route list")
        .iter()
        .map(fact_route)
        .collect()
}

/// The route list of a state when `facts.json` lists it whole.
fn complete(state: &Value, list: &str) -> Model {
    let m = fact_routes(&state[list]);
    assert_eq!(
        m.len() as u64,
        u(&state["final"]["routes"]),
        "{list} is not the whole state"
    );
    m
}

/// The summary `facts.json` gives of a state (`final`), computed from a
/// model.
fn summary(m: &Model) -> Value {
    let zebra_table: HashMap<u32, u32> = table_map().into_iter().map(|(z, o)| (o, z)).collect();
    let mut fam = BTreeMap::<String, u64>::new();
    let mut table = BTreeMap::<String, u64>::new();
    let mut proto = BTreeMap::<String, u64>::new();
    let mut kind = BTreeMap::<String, u64>::new();
    let mut nhc = BTreeMap::<String, u64>::new();
    let mut multipath = 0u64;
    for ((t, p), w) in m {
        let f = if p.addr().is_ipv4() { "ipv4" } else { "ipv6" };
        *fam.entry(f.into()).or_default() += 1;
        *table.entry(zebra_table[t].to_string()).or_default() += 1;
        *proto.entry(w.proto.to_string()).or_default() += 1;
        let (k, n) = match &w.target {
            RouteTarget::Blackhole => ("blackhole", 0),
            RouteTarget::Reject => ("unreachable", 0),
            RouteTarget::Gateway { .. } => ("unicast", 1),
            RouteTarget::Multipath(s) => ("unicast", s.len()),
            t => panic!("{t:?} in a model"),
        };
        *kind.entry(k.into()).or_default() += 1;
        *nhc.entry(n.to_string()).or_default() += 1;
        multipath += u64::from(n > 1);
    }
    serde_json::json!({
        "routes": m.len(),
        "by_family": fam,
        "by_table": table,
        "by_protocol": proto,
        "by_rtm_type": kind,
        "multipath": multipath,
        "nexthop_counts": nhc,
    })
}

/// Checks a generated model against a state of `facts.json`: its summary
/// equals `final` and it holds every sample route as listed.
fn checked(m: Model, state: &Value, samples: &str, what: &str) -> Model {
    assert_eq!(
        summary(&m),
        state["final"],
        "{what}: generated model vs facts"
    );
    let samples = fact_routes(&state[samples]);
    assert!(!samples.is_empty(), "{what}: no samples");
    for (k, w) in &samples {
        assert_eq!(m.get(k), Some(w), "{what}: sample {k:?}");
    }
    m
}

fn v4_24(i: u32) -> IpNet {
    IpNet::new(IpAddr::V4(Ipv4Addr::from(0x0a80_0000 + (i << 8))), 24).unwrap()
}

fn v6_48(i: u16) -> IpNet {
    IpNet::new(
        IpAddr::V6(Ipv6Addr::new(0xfd00, 0x100, i, 0, 0, 0, 0, 0)),
        48,
    )
    .unwrap()
}

/// The appliance's own routes (port addresses: connected and local).
fn own_routes() -> BTreeSet<Key> {
    [
        "10.77.1.0/24",
        "10.77.1.1/32",
        "10.77.2.0/24",
        "10.77.2.1/32",
        "fd77:1::/64",
        "fd77:1::1/128",
        "fd77:2::/64",
        "fd77:2::1/128",
    ]
    .iter()
    .map(|s| (0, net(s)))
    .collect()
}

// ------------------------------------------------------------------- rig

/// The daemon's FPM path without the socket and the lcore.
struct Rig {
    tr: &'static Translate,
    ingest: Ingest<'static>,
    ctl: FpmControl,
    w: Writer<Tables>,
    acl: acl::ClassifierWriter,
    status: SharedStatus,
    /// Ingest totals over every read (the FPM thread adds these to the status).
    messages: u64,
    ignored: u64,
    refused: u64,
    last_error: Option<String>,
    /// Routes of other origins than zebra expected in the FIB.
    own: BTreeSet<Key>,
}

impl Rig {
    fn new(tables: HashMap<u32, u32>, stale: Duration) -> Rig {
        let mut acl_w = acl::ClassifierWriter::new(acl::Config::default());
        let ports = PORTS
            .iter()
            .enumerate()
            .map(|(i, n)| PortInfo::new(*n, [2, 0, 0, 0, 0, i as u8 + 1], 0))
            .collect();
        let t = Tables::empty(
            ports,
            acl_w.current().clone(),
            fwd::tables::Limits::default(),
        );
        let addr = |a: &str, dev: &str| {
            Change::AddressAdd(wire::Address {
                addr: net(a),
                dev: dev.into(),
            })
        };
        let t = apply_changes(
            &t,
            &mut acl_w,
            &[
                addr("10.77.1.1/24", "eth1"),
                addr("fd77:1::1/64", "eth1"),
                addr("10.77.2.1/24", "eth2"),
                addr("fd77:2::1/64", "eth2"),
            ],
            None,
        )
        .unwrap_or_else(|e| panic!("{e:?}"))
        .tables;
        let w = qsbr::domain(t, QsbrConfig::default());
        let settings = FpmSettings {
            listen: "127.0.0.1:0".parse().unwrap(),
            stale,
            tables: tables.clone(),
            allowed_uids: None,
        };
        let status: SharedStatus = Arc::new(Mutex::new(FpmStatus::default()));
        let tr: &'static Translate = Box::leak(Box::new(Translate::new(tables, ifindex_map())));
        let mut rig = Rig {
            tr,
            ingest: Ingest::new(tr),
            ctl: FpmControl::new(&settings, Arc::clone(&status)),
            w,
            acl: acl_w,
            status,
            messages: 0,
            ignored: 0,
            refused: 0,
            last_error: None,
            own: own_routes(),
        };
        rig.connect();
        rig
    }

    fn standard() -> Rig {
        Rig::new(table_map(), Duration::from_secs(3600))
    }

    /// zebra (re)connects: a new session, a new decoder.
    fn connect(&mut self) {
        self.ingest = Ingest::new(self.tr);
        self.ctl
            .event(FpmEvent::Connected, &mut self.w, &self.acl, Instant::now());
    }

    /// One read: what the FPM thread does with it, then the control lcore.
    fn read(&mut self, bytes: &[u8]) {
        let c = self.ingest.feed(bytes);
        self.messages += c.messages;
        self.ignored += c.ignored;
        self.refused += c.refused;
        if c.last_error.is_some() {
            self.last_error = c.last_error;
        }
        assert!(c.broken.is_none(), "stream broken: {:?}", c.broken);
        if !c.ops.is_empty() {
            self.ctl.event(
                FpmEvent::Batch(c.ops),
                &mut self.w,
                &self.acl,
                Instant::now(),
            );
            self.w.reclaim();
        }
    }

    /// `bytes` in reads of `sizes` (cycled).
    fn reads(&mut self, bytes: &[u8], sizes: &[usize]) {
        let mut at = 0;
        for &n in sizes.iter().cycle() {
            if at >= bytes.len() {
                break;
            }
            let end = (at + n.max(1)).min(bytes.len());
            self.read(&bytes[at..end]);
            at = end;
        }
    }

    /// `bytes` cut at `cuts` (offsets, any order, duplicates allowed).
    fn reads_cut(&mut self, bytes: &[u8], cuts: &[usize]) {
        let mut cuts: Vec<usize> = cuts.iter().map(|&c| c.min(bytes.len())).collect();
        cuts.push(0);
        cuts.push(bytes.len());
        cuts.sort_unstable();
        cuts.dedup();
        for w in cuts.windows(2) {
            self.read(&bytes[w[0]..w[1]]);
        }
    }

    /// An operator's batch, as the control loop serves `Request::Apply`:
    /// applied over zebra's routes, published, then `fpm show` refreshed
    /// (an operator's route can move one of zebra's in or out of the FIB).
    fn operator(&mut self, changes: &[Change]) -> Result<(), wire::ErrorBody> {
        let out = apply_changes(
            self.w.current(),
            &mut self.acl,
            changes,
            Some(self.ctl.rib()),
        )?;
        self.w.publish(out.tables, out.retired_bytes);
        self.ctl.report(self.w.current());
        self.w.reclaim();
        Ok(())
    }

    fn t(&self) -> &Tables {
        self.w.current()
    }

    fn status(&self) -> FpmStatus {
        self.status.lock().unwrap().clone()
    }

    /// Zebra's routes as the FPM rib holds them, in the model's terms.
    fn rib_model(&self) -> Model {
        rib_model(self.ctl.rib(), self.t())
    }

    /// The FIB: zebra's routes (origin fpm) and the keys of the others.
    fn fib(&self) -> (Model, BTreeSet<Key>) {
        let t = self.t();
        let mut fpm = Model::new();
        let mut other = BTreeSet::new();
        for vrf in t.routing.vrfs() {
            for (p, e) in t.routing.entries(vrf) {
                let k = (vrf, net_of(p));
                if e.origin.fpm {
                    fpm.insert(
                        k,
                        Want {
                            proto: e.origin.proto,
                            target: norm(target_to_wire(t, e.target)),
                        },
                    );
                } else {
                    other.insert(k);
                }
            }
        }
        (fpm, other)
    }

    /// The whole state against what zebra's stream should have left:
    /// `want` is zebra's routes (what the rib holds); those at a prefix of
    /// another origin wait beneath it, every other one is in the FIB as
    /// sent.
    fn check_tables(&self, want: &Model, what: &str) {
        same(
            &self.rib_model(),
            want,
            &format!("{what}: zebra's routes held"),
        );
        assert_eq!(
            self.ctl.rib().distinct_targets(),
            targets_in_use(self.ctl.rib()),
            "{what}: the rib keeps targets no route uses"
        );
        let (fpm, other) = self.fib();
        assert_eq!(
            other, self.own,
            "{what}: routes of other origins in the FIB"
        );
        let installed: Model = want
            .iter()
            .filter(|(k, _)| !self.own.contains(k))
            .map(|(k, w)| (*k, w.clone()))
            .collect();
        same(
            &fpm,
            &installed,
            &format!("{what}: zebra's routes in the FIB"),
        );
        for k in want.keys().filter(|k| self.own.contains(k)) {
            let e = self
                .t()
                .routing
                .entry(k.0, prefix_of(k.1).unwrap())
                .expect("an own route");
            assert!(!e.origin.fpm, "{what}: {k:?} must stay ours");
        }
    }

    /// `check_tables` and the status `fpm show` reports.
    fn check(&self, want: &Model, what: &str) {
        self.check_tables(want, what);
        let installed = want.keys().filter(|k| !self.own.contains(k)).count();
        let s = self.status();
        assert_eq!(s.routes, want.len() as u64, "{what}: status.routes");
        assert_eq!(s.installed, installed as u64, "{what}: status.installed");
        assert_eq!(
            self.t().routing.fpm_route_count(),
            installed,
            "{what}: fpm_route_count"
        );
    }

    /// Everything a split of the stream could change.
    fn snapshot(&self) -> Snapshot {
        let t = self.t();
        let mut fib = BTreeMap::new();
        for vrf in t.routing.vrfs() {
            for (p, e) in t.routing.entries(vrf) {
                let r = route_to_wire(t, vrf, p, e);
                fib.insert((vrf, net_of(p)), (e.origin, r.proto, norm(r.target)));
            }
        }
        let s = self.status();
        Snapshot {
            fib,
            rib: self.rib_model(),
            groups: t.routing.groups().count(),
            nexthops: t
                .routing
                .nexthops()
                .map(|(_, nh)| (nh.gateway, nh.port))
                .collect(),
            counters: [
                self.messages,
                self.ignored,
                self.refused,
                s.routes,
                s.installed,
                s.routes_added,
                s.routes_deleted,
                s.refused,
            ],
        }
    }
}

#[derive(Debug, PartialEq)]
struct Snapshot {
    fib: BTreeMap<Key, (Origin, Option<Box<str>>, RouteTarget)>,
    rib: Model,
    groups: usize,
    nexthops: BTreeSet<(Option<IpAddr>, u16)>,
    counters: [u64; 8],
}

fn rib_model(rib: &FpmRib, t: &Tables) -> Model {
    let dev =
        |port: Option<u16>| port.and_then(|p| t.ports.get(usize::from(p)).map(|p| p.name.clone()));
    rib.iter()
        .map(|((vrf, p), r)| {
            let target = match &*r.target {
                FpmTarget::Blackhole => RouteTarget::Blackhole,
                FpmTarget::Reject => RouteTarget::Reject,
                FpmTarget::Paths(ps) if ps.len() == 1 => RouteTarget::Gateway {
                    via: ps[0].gateway,
                    dev: dev(ps[0].port),
                },
                FpmTarget::Paths(ps) => norm(RouteTarget::Multipath(
                    ps.iter()
                        .map(|p| NextHopSpec {
                            via: p.gateway,
                            dev: dev(p.port),
                            weight: p.weight,
                        })
                        .collect(),
                )),
            };
            (
                (vrf, net_of(p)),
                Want {
                    proto: r.proto,
                    target,
                },
            )
        })
        .collect()
}

/// `got == want`, reported as a short diff.
fn same(got: &Model, want: &Model, what: &str) {
    if got == want {
        return;
    }
    let missing: Vec<_> = want
        .iter()
        .filter(|(k, _)| !got.contains_key(k))
        .take(8)
        .collect();
    let extra: Vec<_> = got
        .iter()
        .filter(|(k, _)| !want.contains_key(k))
        .take(8)
        .collect();
    let differ: Vec<_> = want
        .iter()
        .filter_map(|(k, w)| got.get(k).filter(|g| *g != w).map(|g| (k, w, g)))
        .take(8)
        .collect();
    panic!(
        "{what}: {} routes, want {}\n missing: {missing:?}\n extra: {extra:?}\n \
         differ (key, want, got): {differ:?}",
        got.len(),
        want.len()
    );
}

fn p(s: &str) -> Prefix {
    prefix_of(net(s)).unwrap()
}

// ----------------------------------------------------- expected states

/// bgp.bin's states, by phase name, as the appliance holds them.
fn bgp_states() -> Vec<(&'static str, usize, Model)> {
    let f = file_facts("bgp.bin");
    let connected_phase = phase(f, "connected");
    let connected = complete(connected_phase, "final_routes_sample");
    let mut announced = connected.clone();
    for i in 0..1000 {
        announced.insert(
            (0, v4_24(i)),
            Want {
                proto: 186,
                target: gw(Some("10.77.1.2".parse().unwrap()), "eth1"),
            },
        );
    }
    for i in 0..200 {
        announced.insert(
            (0, v6_48(i)),
            Want {
                proto: 186,
                target: gw(Some("fd77:1::2".parse().unwrap()), "eth1"),
            },
        );
    }
    let announced = checked(
        announced,
        phase(f, "announced"),
        "final_routes_sample",
        "bgp announced",
    );
    let withdrawn_list: Vec<IpNet> = f["withdrawn"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| net(s.as_str().unwrap()))
        .collect();
    assert_eq!(withdrawn_list.len(), 100);
    let mut withdrawn = announced.clone();
    for n in &withdrawn_list {
        assert!(withdrawn.remove(&(0, *n)).is_some(), "{n} was announced");
    }
    let withdrawn = checked(
        withdrawn,
        phase(f, "withdrawn"),
        "final_routes_sample",
        "bgp withdrawn",
    );
    let withdrawn = checked(withdrawn, f, "final_routes_sample", "bgp final");
    let off = |n: &str| u(&phase(f, n)["end_offset"]) as usize;
    vec![
        ("connected", off("connected"), held(connected)),
        ("announced", off("announced"), held(announced)),
        ("withdrawn", off("withdrawn"), held(withdrawn)),
    ]
}

/// ecmp.bin's states, by phase name, as the appliance holds them.
fn ecmp_states() -> Vec<(&'static str, usize, Model)> {
    let f = file_facts("ecmp.bin");
    let connected = complete(phase(f, "connected"), "final_routes_sample");
    let with = |v4: RouteTarget, v6: RouteTarget| {
        let mut m = connected.clone();
        for i in 0..100 {
            m.insert(
                (0, v4_24(i)),
                Want {
                    proto: 186,
                    target: v4.clone(),
                },
            );
        }
        for i in 0..20 {
            m.insert(
                (0, v6_48(i)),
                Want {
                    proto: 186,
                    target: v6.clone(),
                },
            );
        }
        m
    };
    let single = || {
        with(
            gw(Some("10.77.1.2".parse().unwrap()), "eth1"),
            gw(Some("fd77:1::2".parse().unwrap()), "eth1"),
        )
    };
    let one_peer = checked(
        single(),
        phase(f, "one_peer"),
        "final_routes_sample",
        "ecmp one_peer",
    );
    let two_peers = checked(
        with(
            multi(&[("10.77.1.2", "eth1"), ("10.77.2.2", "eth2")]),
            multi(&[("fd77:1::2", "eth1"), ("fd77:2::2", "eth2")]),
        ),
        phase(f, "two_peers"),
        "final_routes_sample",
        "ecmp two_peers",
    );
    let shut = checked(
        single(),
        phase(f, "peer2_shut"),
        "final_routes_sample",
        "ecmp peer2_shut",
    );
    let shut = checked(shut, f, "final_routes_sample", "ecmp final");
    let off = |n: &str| u(&phase(f, n)["end_offset"]) as usize;
    vec![
        ("connected", off("connected"), held(connected)),
        ("one_peer", off("one_peer"), held(one_peer)),
        ("two_peers", off("two_peers"), held(two_peers)),
        ("peer2_shut", off("peer2_shut"), held(shut)),
    ]
}

/// static.bin's states (every one listed whole in facts.json), as the
/// appliance holds them.
fn static_states() -> Vec<(&'static str, usize, Model)> {
    let f = file_facts("static.bin");
    let mut out = Vec::new();
    for name in ["connected", "added", "removed"] {
        let ph = phase(f, name);
        let m = complete(ph, "final_routes_sample");
        out.push((name, u(&ph["end_offset"]) as usize, m));
    }
    let fin = complete(f, "final_routes");
    assert_eq!(fin, out[2].2, "static.bin: final_routes vs the last phase");
    out.into_iter().map(|(n, e, m)| (n, e, held(m))).collect()
}

fn static_replay_final() -> Model {
    held(complete(file_facts("static-replay.bin"), "final_routes"))
}

/// Message counts by type of a file, from facts.json.
fn counts(f: &Value) -> (u64, u64) {
    let m = &f["messages"];
    (u(&m["RTM_NEWROUTE"]), u(&m["RTM_DELROUTE"]))
}

/// The NEW and DEL messages of capture `name` that reach the control side:
/// facts.json's counts less the ignored link-local ones (all NEWs, as
/// `link_local_messages` checks).
fn applied(name: &str) -> (u64, u64) {
    let (news, dels) = counts(file_facts(name));
    (news - link_local_messages(name), dels)
}

/// Replays a capture phase by phase in reads of `sizes`, checking each
/// state; then the counters against facts.json.
fn replay_phases(name: &str, states: &[(&'static str, usize, Model)], sizes: &[usize]) -> Rig {
    let data = capture(name);
    let f = file_facts(name);
    let mut rig = Rig::standard();
    let mut at = 0;
    for (phase, end, want) in states {
        rig.reads(&data[at..*end], sizes);
        at = *end;
        rig.check(want, &format!("{name} {phase} (reads of {sizes:?})"));
    }
    assert_eq!(at, data.len(), "{name}: the last phase ends the capture");
    let (news, dels) = applied(name);
    let s = rig.status();
    assert_eq!(rig.messages, u(&f["netlink_messages"]), "{name}: messages");
    assert_eq!(
        (rig.ignored, rig.refused),
        (link_local_messages(name), 0),
        "{name}: {:?}",
        rig.last_error
    );
    assert_eq!(
        (s.routes_added, s.routes_deleted),
        (news, dels),
        "{name}: status"
    );
    assert_eq!(
        (s.refused, s.last_error.as_deref()),
        (0, None),
        "{name}: status"
    );
    rig
}

/// Realistic reads: a TCP segment's payload, a page, a socket buffer's worth.
const READS: [&[usize]; 3] = [&[1448], &[4096, 1448, 65536], &[1 << 20]];

// ------------------------------------------------------------------- bgp

#[test]
fn bgp_phases_land_exactly_as_zebra_sent_them() {
    let states = bgp_states();
    for sizes in READS {
        let rig = replay_phases("bgp.bin", &states, sizes);
        let t = rig.t();
        // The withdrawn prefixes are gone from the FIB and from the rib.
        for n in file_facts("bgp.bin")["withdrawn"].as_array().unwrap() {
            let pf = p(n.as_str().unwrap());
            assert_eq!(t.routing.entry(0, pf), None, "{n} withdrawn");
            assert!(rig.ctl.rib().get(0, pf).is_none(), "{n} withdrawn");
        }
        // Exactly 1100 BGP routes, origin fpm proto 186, as counted by facts.json.
        let f = file_facts("bgp.bin");
        let bgp = t
            .routing
            .entries(0)
            .filter(|(_, e)| e.origin == Origin::fpm(186))
            .count() as u64;
        assert_eq!(bgp, u(&f["final"]["by_protocol"]["186"]));
        assert_eq!(t.routing.vrfs().collect::<Vec<_>>(), vec![0]);
    }
}

#[test]
fn bgp_next_hops_resolve_to_the_peer_on_eth1() {
    let rig = replay_phases("bgp.bin", &bgp_states(), &[1 << 20]);
    let t = rig.t();
    let r = &t.routing;
    // A packet to a host of a kept prefix goes to 10.77.1.2 out of port 0.
    for (dst, gwy) in [
        (IpAddr::from([10, 128, 100, 7]), "10.77.1.2"),
        (IpAddr::from([10, 131, 231, 255]), "10.77.1.2"),
        ("fd00:100:c7::1".parse().unwrap(), "fd77:1::2"),
        ("fd00:100::1".parse().unwrap(), "fd77:1::2"),
    ] {
        let res = match dst {
            IpAddr::V4(a) => r.lookup4(0, u32::from(a), || 0),
            IpAddr::V6(a) => r.lookup6(0, u128::from(a), || 0),
        };
        let Resolved::Forward(id) = res else {
            panic!("{dst}: {res:?}");
        };
        let nh = r.nexthop(id).expect("next hop");
        assert_eq!(
            (nh.gateway, nh.port),
            (Some(gwy.parse().unwrap()), 0),
            "{dst}"
        );
    }
    // A withdrawn one falls through to nothing (no default route in this capture).
    assert_eq!(
        r.lookup4(0, u32::from(Ipv4Addr::new(10, 128, 5, 1)), || 0),
        Resolved::NoRoute
    );
    // One unnamed next hop per distinct gateway, plus the on-link ones of
    // the connected routes: the BGP routes share theirs.
    let gateways: BTreeSet<_> = r.nexthops().filter_map(|(_, nh)| nh.gateway).collect();
    let want: BTreeSet<IpAddr> = ["10.77.1.2", "fd77:1::2"]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(gateways, want);
    assert_eq!(r.groups().count(), 0, "no multipath in bgp.bin");
}

/// zebra sends its connected routes (proto 2 = kernel) too: 10.77.1.0/24,
/// fd77:1::/64 and fe80::/64 on eth1. Where the appliance has its own
/// connected route (the first two), zebra's waits beneath; fe80::/64 is
/// link-local, never forwarded: ignored, neither held nor installed.
#[test]
fn bgp_connected_routes_of_zebra_stay_beneath_ours() {
    let f = file_facts("bgp.bin");
    let data = capture("bgp.bin");
    let end = u(&phase(f, "connected")["end_offset"]) as usize;
    let mut rig = Rig::standard();
    rig.read(&data[..end]);
    for s in ["10.77.1.0/24", "fd77:1::/64"] {
        let e = rig.t().routing.entry(0, p(s)).expect("ours");
        assert_eq!(e.origin, Origin::KERNEL, "{s}: ours, not zebra's");
        let held = rig.ctl.rib().get(0, p(s)).expect("zebra's held beneath");
        assert_eq!(held.proto, 2);
        let w = route_to_wire(rig.t(), 0, p(s), e);
        assert_eq!(w.proto.as_deref(), Some("kernel"));
        assert_eq!(w.target, gw(None, "eth1"));
    }
    let ll: Vec<IpNet> = raw_messages(&data[..end])
        .into_iter()
        .map(|m| m.dst)
        .filter(link_local)
        .collect();
    assert_eq!(ll, [net("fe80::/64")], "the capture's link-local route");
    assert_eq!((rig.messages, rig.ignored, rig.refused), (3, 1, 0));
    assert_eq!(rig.t().routing.entry(0, p("fe80::/64")), None);
    assert!(rig.ctl.rib().get(0, p("fe80::/64")).is_none());
    let s = rig.status();
    assert_eq!((s.routes, s.installed), (2, 0));
    // Our connected route going away lets zebra's come up in its place ...
    rig.operator(&[Change::AddressDel(wire::Address {
        addr: net("10.77.1.1/24"),
        dev: "eth1".into(),
    })])
    .unwrap();
    let e = rig
        .t()
        .routing
        .entry(0, p("10.77.1.0/24"))
        .expect("zebra's");
    assert_eq!(e.origin, Origin::fpm(2));
    assert_eq!(target_to_wire(rig.t(), e.target), gw(None, "eth1"));
    let s = rig.status();
    assert_eq!((s.routes, s.installed), (2, 1));
    // ... and ours coming back takes the prefix again.
    rig.operator(&[Change::AddressAdd(wire::Address {
        addr: net("10.77.1.1/24"),
        dev: "eth1".into(),
    })])
    .unwrap();
    let e = rig.t().routing.entry(0, p("10.77.1.0/24")).expect("ours");
    assert_eq!(e.origin, Origin::KERNEL);
    assert!(rig.ctl.rib().get(0, p("10.77.1.0/24")).is_some());
    let s = rig.status();
    assert_eq!((s.routes, s.installed), (2, 0));
}

// ------------------------------------------------------------------ ecmp

#[test]
fn ecmp_phases_become_groups_and_back() {
    let states = ecmp_states();
    let data = capture("ecmp.bin");
    let f = file_facts("ecmp.bin");
    assert_eq!(
        frames(data).len() as u64,
        u(&f["fpm_frames"]),
        "ecmp.bin: frames"
    );
    for sizes in READS {
        let mut rig = Rig::standard();
        let mut at = 0;
        for (name, end, want) in &states {
            rig.reads(&data[at..*end], sizes);
            at = *end;
            rig.check(want, &format!("ecmp.bin {name} ({sizes:?})"));
            // One unnamed group per distinct set of next hops of the state.
            let sets: std::collections::HashSet<&RouteTarget> = want
                .values()
                .map(|w| &w.target)
                .filter(|t| matches!(t, RouteTarget::Multipath(_)))
                .collect();
            let t = rig.t();
            assert_eq!(t.routing.groups().count(), sets.len(), "{name}: groups");
            let used: std::collections::HashSet<Target> = t
                .routing
                .entries(0)
                .map(|(_, e)| e.target)
                .filter(|t| matches!(t, Target::Group(_)))
                .collect();
            assert_eq!(used.len(), sets.len(), "{name}: groups in use");
            for g in &used {
                let Target::Group(id) = g else { unreachable!() };
                assert!(t.routing.group(*id).is_some());
                assert!(t.mgmt.auto_group_by_id.contains_key(id), "{name}: unnamed");
            }
        }
        // Peer 2 is gone: no next hop through it is left.
        let t = rig.t();
        let peer2: Vec<IpAddr> = ["10.77.2.2", "fd77:2::2"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let left: Vec<_> = t
            .routing
            .nexthops()
            .filter(|(_, nh)| nh.gateway.is_some_and(|g| peer2.contains(&g)))
            .collect();
        assert!(left.is_empty(), "next hops via peer 2 left: {left:?}");
        assert!(t.mgmt.auto_group.is_empty() && t.mgmt.auto_group_by_id.is_empty());
        let (news, dels) = applied("ecmp.bin");
        let s = rig.status();
        assert_eq!(rig.messages, u(&f["netlink_messages"]));
        assert_eq!(
            (rig.ignored, rig.refused),
            (link_local_messages("ecmp.bin"), 0),
            "{:?}",
            rig.last_error
        );
        assert_eq!(
            (s.routes_added, s.routes_deleted, s.refused),
            (news, dels, 0)
        );
    }
}

#[test]
fn ecmp_multipath_spreads_flows_over_both_peers() {
    let states = ecmp_states();
    let data = capture("ecmp.bin");
    let mut rig = Rig::standard();
    rig.read(&data[..states[2].1]);
    let r = &rig.t().routing;
    for (dst, want) in [
        (IpAddr::from([10, 128, 42, 9]), ["10.77.1.2", "10.77.2.2"]),
        (
            "fd00:100:13::9".parse().unwrap(),
            ["fd77:1::2", "fd77:2::2"],
        ),
    ] {
        let mut seen = BTreeSet::new();
        for h in 0..64u32 {
            let res = match dst {
                IpAddr::V4(a) => r.lookup4(0, u32::from(a), || h.wrapping_mul(0x9e37_79b9)),
                IpAddr::V6(a) => r.lookup6(0, u128::from(a), || h.wrapping_mul(0x9e37_79b9)),
            };
            let Resolved::Forward(id) = res else {
                panic!("{dst}: {res:?}")
            };
            let nh = r.nexthop(id).unwrap();
            seen.insert((nh.gateway.unwrap(), nh.port));
        }
        let want: BTreeSet<(IpAddr, u16)> =
            [(want[0].parse().unwrap(), 0), (want[1].parse().unwrap(), 1)]
                .into_iter()
                .collect();
        assert_eq!(seen, want, "{dst}: both peers, each on its port");
    }
}

// ---------------------------------------------------------------- static

#[test]
fn static_phases_blackholes_rejects_and_tables() {
    let states = static_states();
    for sizes in READS.iter().copied().chain([&[1usize][..], &[7, 64, 3]]) {
        let rig = replay_phases("static.bin", &states, sizes);
        let t = rig.t();
        let r = &t.routing;
        assert_eq!(r.get(0, p("192.0.2.0/24")), Some(Target::Blackhole));
        assert_eq!(
            r.get(0, p("198.18.0.0/15")),
            Some(Target::Blackhole),
            "Null0"
        );
        assert_eq!(r.get(0, p("2001:db8:dead::/48")), Some(Target::Blackhole));
        // Removed in the last phase (checked at "added" by replay_phases).
        assert_eq!(r.get(0, p("198.51.100.0/24")), None);
        assert_eq!(r.get(100, p("10.200.0.0/16")), None);
        // zstatic, not the operator's static.
        let e = r.entry(0, p("192.0.2.0/24")).unwrap();
        assert_eq!(e.origin, Origin::fpm(196));
        assert_eq!(proto_name(196), "zstatic");
        assert_eq!(
            route_to_wire(t, 0, p("192.0.2.0/24"), e).proto.as_deref(),
            Some("zstatic")
        );
        // Tables 100 (rtm_table) and 1000 (RTA_TABLE) land in ours.
        let tab = |v: u32| -> BTreeSet<IpNet> { r.entries(v).map(|(p, _)| net_of(p)).collect() };
        assert_eq!(
            tab(100),
            [net("10.201.0.0/16"), net("2001:db8:100::/48")].into()
        );
        assert_eq!(tab(1000), [net("10.202.0.0/16")].into());
        let e = r.entry(1000, p("10.202.0.0/16")).unwrap();
        assert_eq!(
            target_to_wire(t, e.target),
            gw(Some("10.77.2.2".parse().unwrap()), "eth2")
        );
        // One group left: 2001:db8:2::/48's; 203.0.113.128/25 is back to one path.
        assert_eq!(r.groups().count(), 1);
        assert!(matches!(
            r.get(0, p("2001:db8:2::/48")),
            Some(Target::Group(_))
        ));
        assert!(matches!(
            r.get(0, p("203.0.113.128/25")),
            Some(Target::NextHop(_))
        ));
    }
}

#[test]
fn static_added_phase_has_rejects_and_two_groups() {
    let states = static_states();
    let mut rig = Rig::standard();
    rig.read(&capture("static.bin")[..states[1].1]);
    rig.check(&states[1].2, "static.bin added");
    let r = &rig.t().routing;
    assert_eq!(
        r.get(0, p("198.51.100.0/24")),
        Some(Target::Reject),
        "reject"
    );
    assert_eq!(
        r.get(0, p("2001:db8:beef::/48")),
        Some(Target::Reject),
        "reject"
    );
    assert_eq!(r.get(100, p("10.200.0.0/16")), Some(Target::Blackhole));
    assert_eq!(r.groups().count(), 2);
    // A reject answers; a blackhole drops.
    assert_eq!(
        r.lookup4(0, u32::from(Ipv4Addr::new(198, 51, 100, 1)), || 0),
        Resolved::Reject
    );
    assert_eq!(
        r.lookup4(0, u32::from(Ipv4Addr::new(192, 0, 2, 1)), || 0),
        Resolved::Blackhole
    );
}

/// Only zebra's main table mapped: every message of tables 100 and 1000
/// is refused and counted, the rest applies (less the link-local route,
/// ignored whatever its table).
#[test]
fn static_unmapped_tables_are_refused_and_counted() {
    let f = file_facts("static.bin");
    let refused_want: u64 = f["tables"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| !k.ends_with(" 254"))
        .map(|(_, v)| u(v))
        .sum();
    assert_eq!(refused_want, 5, "facts: 4 NEW + 1 DEL outside table 254");
    for sizes in READS {
        let mut rig = Rig::new([(254, 0)].into_iter().collect(), Duration::from_secs(3600));
        rig.reads(capture("static.bin"), sizes);
        assert_eq!(rig.messages, u(&f["netlink_messages"]));
        assert_eq!(rig.refused, refused_want, "{sizes:?}");
        assert_eq!(rig.ignored, link_local_messages("static.bin"), "{sizes:?}");
        let err = rig.last_error.clone().expect("an error");
        assert!(err.contains("is not in fpm.tables"), "{err}");
        let main: Model = complete(f, "final_routes")
            .into_iter()
            .filter(|((t, _), _)| *t == 0)
            .collect();
        assert_eq!(main.len() as u64, u(&f["final"]["by_table"]["254"]));
        rig.check(&held(main), "static.bin, only table 254 mapped");
        let r = &rig.t().routing;
        assert_eq!(r.route_count(100), (0, 0));
        assert_eq!(r.route_count(1000), (0, 0));
    }
}

// --------------------------------------------------------------- restart

/// End of the replay's first part: zebra's walk of what it had at start
/// (its connected routes, proto 2), before staticd's routes come back.
fn replay_walk_end(data: &[u8]) -> usize {
    let fr = frames(data);
    let n = fr
        .iter()
        .take_while(|r| first_proto(&data[(*r).clone()]) == 2)
        .count();
    assert_eq!(n, 5, "static-replay.bin starts with the 5 connected routes");
    fr[n - 1].end
}

/// static.bin, then zebra restarts: a second session replays the same
/// routes. Nothing is withdrawn meanwhile; nothing is left stale.
#[test]
fn restart_after_static_replays_every_route() {
    let states = static_states();
    let fin = static_replay_final();
    assert_eq!(
        fin, states[2].2,
        "facts: the replay ends where static.bin did"
    );
    let replay = capture("static-replay.bin");
    let walk = replay_walk_end(replay);
    let mut rig = Rig::new(table_map(), Duration::ZERO);
    rig.read(capture("static.bin"));
    rig.check(&states[2].2, "session 1");
    rig.connect();
    let s = rig.status();
    assert_eq!(
        s.stale,
        fin.len() as u64,
        "every route stale until replayed"
    );
    assert_eq!(s.sweep_in_ms, Some(0));
    // zebra's walk at connection: its connected routes only. staticd's
    // routes are not back yet: they stay installed, stale.
    rig.read(&replay[..walk]);
    rig.check(&fin, "replay, walk only");
    let statics = fin.values().filter(|w| w.proto == 196).count() as u64;
    assert_eq!(rig.status().stale, statics);
    // staticd's routes come back (10.201.0.0/16 as DEL + NEW).
    rig.reads(&replay[walk..], &[1448]);
    rig.check(&fin, "replay done");
    assert_eq!(rig.status().stale, 0);
    rig.ctl.poll(&mut rig.w, &rig.acl);
    rig.check(&fin, "after the sweep");
    let s = rig.status();
    assert_eq!((s.swept, s.stale, s.sweep_in_ms), (0, 0, None));
    let (n1, d1) = applied("static.bin");
    let (n2, d2) = applied("static-replay.bin");
    assert_eq!((s.routes_added, s.routes_deleted), (n1 + n2, d1 + d2));
    assert_eq!(
        rig.ignored,
        link_local_messages("static.bin") + link_local_messages("static-replay.bin")
    );
    assert_eq!((rig.refused, s.refused), (0, 0), "{:?}", rig.last_error);
}

/// zebra restarts after static.bin's "added" phase and comes back with the
/// config of its end: the 3 routes removed meanwhile are not replayed. They
/// keep forwarding until the sweep, which removes exactly them.
#[test]
fn restart_sweeps_exactly_the_routes_not_replayed() {
    let states = static_states();
    let (added_end, added) = (states[1].1, &states[1].2);
    let fin = static_replay_final();
    let gone: BTreeSet<Key> = added
        .keys()
        .filter(|k| !fin.contains_key(k))
        .copied()
        .collect();
    let gone_want: BTreeSet<Key> = [
        (0, net("198.51.100.0/24")),
        (0, net("2001:db8:beef::/48")),
        (100, net("10.200.0.0/16")),
    ]
    .into();
    assert_eq!(gone, gone_want, "facts: the 3 removals of static.bin");
    for stale in [Duration::from_secs(3600), Duration::ZERO] {
        let mut rig = Rig::new(table_map(), stale);
        rig.read(&capture("static.bin")[..added_end]);
        rig.check(added, "session 1");
        rig.connect();
        rig.reads(capture("static-replay.bin"), &[1448]);
        // Until the sweep: the replay's routes, plus the 3 not replayed.
        let mut before = fin.clone();
        for k in &gone {
            before.insert(*k, added[k].clone());
        }
        rig.check(&before, "replayed, before the sweep");
        assert_eq!(rig.status().stale, gone.len() as u64);
        // 203.0.113.128/25 was replayed with one path: its group is gone.
        assert_eq!(rig.t().routing.groups().count(), 1);
        rig.ctl.poll(&mut rig.w, &rig.acl);
        if stale > Duration::ZERO {
            rig.check(&before, "poll before the stale time: no sweep");
            assert_eq!(rig.status().swept, 0);
            continue;
        }
        rig.check(&fin, "after the sweep");
        let s = rig.status();
        assert_eq!(
            (s.swept, s.stale, s.sweep_in_ms),
            (gone.len() as u64, 0, None)
        );
        // A second poll has nothing to do.
        rig.ctl.poll(&mut rig.w, &rig.acl);
        assert_eq!(rig.status().swept, gone.len() as u64);
        rig.check(&fin, "second poll");
    }
}

/// static-replay.bin alone, on a fresh appliance: its DELROUTE of
/// 10.201.0.0/16 (table 100) names a route never sent on this connection.
#[test]
fn replay_alone_a_delete_of_an_unknown_route_is_harmless() {
    let f = file_facts("static-replay.bin");
    let fin = static_replay_final();
    for sizes in READS.iter().copied().chain([&[1usize][..]]) {
        let mut rig = Rig::standard();
        rig.reads(capture("static-replay.bin"), sizes);
        assert_eq!(rig.messages, u(&f["netlink_messages"]));
        assert_eq!(
            (rig.ignored, rig.refused),
            (link_local_messages("static-replay.bin"), 0),
            "{:?}",
            rig.last_error
        );
        let s = rig.status();
        assert_eq!((s.refused, s.last_error.as_deref()), (0, None));
        let (news, dels) = applied("static-replay.bin");
        assert_eq!((s.routes_added, s.routes_deleted), (news, dels));
        rig.check(&fin, "static-replay.bin alone");
    }
    // The same DELROUTE on its own, then again: nothing happens.
    let mut rig = Rig::standard();
    let data = capture("static-replay.bin");
    let del_frame = frames(data)
        .into_iter()
        .find(|r| {
            decode(&data[r.clone()])
                .iter()
                .any(|u| u.op == codec::RouteOp::Del)
        })
        .expect("the DEL + NEW frame");
    let dels = decode(&data[del_frame.clone()]);
    let del_only: Vec<RouteUpdate> = dels
        .into_iter()
        .filter(|u| u.op == codec::RouteOp::Del)
        .collect();
    assert_eq!(del_only.len(), 1);
    let mut bytes = Vec::new();
    codec::encode(&del_only[0], 0, &mut bytes).unwrap();
    let g0 = rig.w.generation();
    rig.read(&bytes);
    rig.read(&bytes);
    rig.check(&Model::new(), "two deletes of an unknown route");
    assert_eq!(rig.w.generation(), g0, "nothing published");
    assert_eq!(rig.status().routes_deleted, 2);
}

fn decode(frame: &[u8]) -> Vec<RouteUpdate> {
    let mut d = codec::Decoder::new();
    d.feed(frame);
    let mut out = Vec::new();
    while let Some(m) = d.next().unwrap() {
        if let FpmMsg::Route(u) = m {
            out.push(u);
        }
    }
    out
}

// ------------------------------------------------------------ precedence

#[test]
fn operator_route_overrides_zebra_and_zebra_comes_back() {
    let states = bgp_states();
    let fin = &states[2].2;
    let kept = "10.128.100.0/24"; // in the final set
    let withdrawn = "10.128.5.0/24"; // withdrawn by the peer
    assert!(fin.contains_key(&(0, net(kept))));
    assert!(!fin.contains_key(&(0, net(withdrawn))));
    let blackhole = |s: &str| {
        Change::RouteAdd(wire::Route {
            prefix: net(s),
            table: 0,
            target: RouteTarget::Blackhole,
            linkdown: false,
            proto: None,
        })
    };
    let mut rig = Rig::standard();
    rig.operator(&[blackhole(kept), blackhole(withdrawn)])
        .unwrap();
    rig.own.insert((0, net(kept)));
    rig.own.insert((0, net(withdrawn)));
    rig.reads(capture("bgp.bin"), &[4096]);
    rig.check(fin, "bgp.bin over two operator routes");
    for s in [kept, withdrawn] {
        let e = rig.t().routing.entry(0, p(s)).unwrap();
        assert_eq!(
            (e.target, e.origin),
            (Target::Blackhole, Origin::STATIC),
            "{s}"
        );
    }
    let held = rig.ctl.rib().get(0, p(kept)).expect("zebra's held beneath");
    assert_eq!(held.proto, 186);
    assert!(rig.ctl.rib().get(0, p(withdrawn)).is_none());
    // zebra's route cannot be deleted by the operator, only overridden.
    let del = |s: &str| {
        Change::RouteDel(wire::RouteDel {
            prefix: net(s),
            table: 0,
            target: None,
        })
    };
    assert!(rig.operator(&[del("10.128.101.0/24")]).is_err());
    // The operator's routes go: zebra's comes back at the kept prefix,
    // nothing at the withdrawn one.
    rig.operator(&[del(kept), del(withdrawn)]).unwrap();
    rig.own.remove(&(0, net(kept)));
    rig.own.remove(&(0, net(withdrawn)));
    rig.check(fin, "operator routes deleted");
    let e = rig.t().routing.entry(0, p(kept)).expect("zebra's back");
    assert_eq!(e.origin, Origin::fpm(186));
    assert_eq!(
        target_to_wire(rig.t(), e.target),
        gw(Some("10.77.1.2".parse().unwrap()), "eth1")
    );
    assert_eq!(rig.t().routing.entry(0, p(withdrawn)), None);
    // Added over zebra's installed route: an override; deleted, zebra's is back.
    let over = "fd00:100:c7::/48";
    rig.operator(&[blackhole(over)]).unwrap();
    let e = rig.t().routing.entry(0, p(over)).unwrap();
    assert_eq!((e.target, e.origin), (Target::Blackhole, Origin::STATIC));
    rig.own.insert((0, net(over)));
    rig.check(fin, "operator override after the replay");
    rig.operator(&[del(over)]).unwrap();
    rig.own.remove(&(0, net(over)));
    rig.check(fin, "override deleted");
    let e = rig.t().routing.entry(0, p(over)).unwrap();
    assert_eq!(e.origin, Origin::fpm(186));
    assert_eq!(
        target_to_wire(rig.t(), e.target),
        gw(Some("fd77:1::2".parse().unwrap()), "eth1")
    );
}

/// `fpm show`'s `installed` (zebra's routes in the FIB, the others being
/// beneath a route of the operator's at the same prefix) follows operator
/// changes: the control loop refreshes the status after every operator
/// batch (`Request::Apply` calls `FpmControl::report`), as `Rig::operator`
/// does, not only after zebra's batches.
#[test]
fn fpm_status_installed_follows_operator_changes() {
    let fin = bgp_states().pop().unwrap().2;
    let mut rig = Rig::standard();
    rig.read(capture("bgp.bin"));
    let installed = fin.keys().filter(|k| !rig.own.contains(k)).count() as u64;
    assert_eq!(rig.status().installed, installed);
    let over = Change::RouteAdd(wire::Route {
        prefix: net("10.128.100.0/24"),
        table: 0,
        target: RouteTarget::Blackhole,
        linkdown: false,
        proto: None,
    });
    // The operator overrides one of zebra's routes (the control loop then
    // polls the FPM side, as it does every turn): one fewer installed.
    rig.operator(&[over]).unwrap();
    rig.ctl.poll(&mut rig.w, &rig.acl);
    assert_eq!(rig.t().routing.fpm_route_count() as u64, installed - 1);
    let s = rig.status();
    assert_eq!((s.routes, s.installed), (fin.len() as u64, installed - 1));
    // The override goes: zebra's route is back, and counted again.
    rig.operator(&[Change::RouteDel(wire::RouteDel {
        prefix: net("10.128.100.0/24"),
        table: 0,
        target: None,
    })])
    .unwrap();
    rig.ctl.poll(&mut rig.w, &rig.acl);
    assert_eq!(rig.t().routing.fpm_route_count() as u64, installed);
    let s = rig.status();
    assert_eq!((s.routes, s.installed), (fin.len() as u64, installed));
}

// ------------------------------------------------ targets within a batch

/// The frame of `data` whose messages are exactly `ops` at `dst`.
fn frame_of(data: &[u8], dst: &str, ops: &[codec::RouteOp]) -> Vec<u8> {
    let want = net(dst);
    frames(data)
        .into_iter()
        .map(|r| data[r].to_vec())
        .find(|f| {
            let us = decode(f);
            us.len() == ops.len()
                && us
                    .iter()
                    .zip(ops)
                    .all(|(u, op)| u.op == *op && IpNet::new(u.dst, u.len) == Some(want))
        })
        .unwrap_or_else(|| panic!("no frame {ops:?} {dst}"))
}

/// zebra's DELROUTE for the route of an add frame (what zebra sends on
/// withdrawal: no type, no next hop), encoded as zebra 8.4 does.
fn del_frame_for(add_frame: &[u8]) -> Vec<u8> {
    let [u] = decode(add_frame).try_into().expect("one message");
    let del = RouteUpdate {
        op: codec::RouteOp::Del,
        kind: codec::RouteKind::Unspec,
        paths: Vec::new(),
        ..u
    };
    let mut out = Vec::new();
    codec::encode(&del, 0, &mut out).unwrap();
    out
}

/// The distinct targets of the rib's routes: all the interner should hold
/// once a batch is over.
fn targets_in_use(rib: &FpmRib) -> usize {
    rib.iter()
        .map(|(_, r)| &*r.target)
        .collect::<std::collections::HashSet<&FpmTarget>>()
        .len()
}

/// zebra's real frames from static.bin, in one read: a route added and
/// withdrawn again (the only user of its target), then a new route with
/// another target. Each route lands with its own target, and the rib
/// keeps no target that no route uses once the batch is over.
///
/// Regression test for `Edit::install_fpm`'s per-batch memo
/// (fwd/src/control/state/fpm.rs), keyed by the `Arc<FpmTarget>`'s
/// address: a target freed inside the batch could have its address
/// reused by the next new target, which then resolved to the freed one's
/// next hop (seen with glibc's allocator: 10.202.0.0/16 landed via
/// 10.77.1.2 on eth1, the withdrawn 10.201.0.0/16's next hop). The memo
/// now keeps the targets it names alive for the batch, and
/// `FpmRib::release_unused` frees the unused ones after it.
#[test]
fn a_target_freed_within_a_read_does_not_stand_in_for_a_new_one() {
    use codec::RouteOp::Add;
    let data = capture("static.bin");
    let via2 = |last: u8| gw(Some(IpAddr::from([10, 77, 2, last])), "eth2");
    let cases = [
        // unreachable ("reject"), then a blackhole
        (
            "198.51.100.0/24",
            0,
            "192.0.2.0/24",
            0,
            RouteTarget::Blackhole,
        ),
        // via 10.77.1.2 on eth1 in table 100, then via 10.77.2.2 on eth2
        // in table 1000
        ("10.201.0.0/16", 100, "10.202.0.0/16", 1000, via2(2)),
    ];
    // Each sequence first in a fresh rig (the allocator's state matters:
    // the controls run after).
    for (first, first_table, then, then_table, want) in cases.clone() {
        let add = frame_of(data, first, &[Add]);
        let mut bytes = add.clone();
        bytes.extend(del_frame_for(&add));
        bytes.extend(frame_of(data, then, &[Add]));
        let mut rig = Rig::standard();
        rig.read(&bytes);
        assert_eq!(rig.refused, 0, "{:?}", rig.last_error);
        let t = rig.t();
        assert_eq!(
            t.routing.entry(first_table, p(first)),
            None,
            "{first} withdrawn"
        );
        let e = t.routing.entry(then_table, p(then)).expect(then);
        assert_eq!(target_to_wire(t, e.target), want, "{then} in the FIB");
        let held = rib_model(rig.ctl.rib(), t);
        assert_eq!(
            held.get(&(then_table, net(then))).map(|w| &w.target),
            Some(&want),
            "{then} in the rib"
        );
        // The withdrawn route's target is not kept: one route, one target.
        assert_eq!(rig.ctl.rib().len(), 1, "{first} then {then}");
        assert_eq!(
            rig.ctl.rib().distinct_targets(),
            1,
            "{first} then {then}: targets kept"
        );
    }
    // The same pattern 32 times in one read: the two real routes of
    // tables 100 and 1000, each with a gateway of its own.
    let [r100] = decode(&frame_of(data, "10.201.0.0/16", &[Add]))
        .try_into()
        .unwrap();
    let [r1000] = decode(&frame_of(data, "10.202.0.0/16", &[Add]))
        .try_into()
        .unwrap();
    let mut bytes = Vec::new();
    let mut want = Model::new();
    for i in 0..32u8 {
        let mut a = r100.clone();
        a.dst = IpAddr::from([10, 201, i, 0]);
        a.len = 24;
        a.paths[0].gateway = Some(IpAddr::from([10, 77, 1, 10 + i]));
        let mut frame = Vec::new();
        codec::encode(&a, 0, &mut frame).unwrap();
        bytes.extend(&frame);
        bytes.extend(del_frame_for(&frame));
        let mut b = r1000.clone();
        b.dst = IpAddr::from([10, 202, i, 0]);
        b.len = 24;
        b.paths[0].gateway = Some(IpAddr::from([10, 77, 2, 10 + i]));
        codec::encode(&b, 0, &mut bytes).unwrap();
        want.insert(
            (1000, net(&format!("10.202.{i}.0/24"))),
            Want {
                proto: 196,
                target: via2(10 + i),
            },
        );
    }
    let mut rig = Rig::standard();
    rig.read(&bytes);
    assert_eq!(rig.refused, 0, "{:?}", rig.last_error);
    same(&rig.rib_model(), &want, "32 x add, delete, add: the rib");
    let (fib, _) = rig.fib();
    same(&fib, &want, "32 x add, delete, add: the FIB");
    // The 32 withdrawn routes' targets are gone; the 32 others' are kept.
    assert_eq!(
        rig.ctl.rib().distinct_targets(),
        want.len(),
        "32 x add, delete, add: targets kept"
    );
    // Controls: the same frames with the delete last (the first target
    // outlives the second's creation) land right.
    for (first, _, then, then_table, want) in cases {
        let add = frame_of(data, first, &[Add]);
        let mut control = add.clone();
        control.extend(frame_of(data, then, &[Add]));
        control.extend(del_frame_for(&add));
        let mut rig = Rig::standard();
        rig.read(&control);
        let t = rig.t();
        let e = t.routing.entry(then_table, p(then)).expect(then);
        assert_eq!(target_to_wire(t, e.target), want, "control: {then}");
        assert_eq!(
            rig.ctl.rib().distinct_targets(),
            1,
            "control: {first} then {then}: targets kept"
        );
    }
}

// ------------------------------------------------------------- any split

/// The state after feeding `name` in one read.
fn reference(name: &str) -> Snapshot {
    let mut rig = Rig::standard();
    rig.read(capture(name));
    rig.snapshot()
}

fn split_final(name: &str, cuts: &[usize], want: &Model) -> Snapshot {
    let mut rig = Rig::standard();
    rig.reads_cut(capture(name), cuts);
    rig.check(want, &format!("{name} cut at {cuts:?}"));
    rig.snapshot()
}

fn final_model(name: &str) -> Model {
    match name {
        "bgp.bin" => bgp_states().pop().unwrap().2,
        "ecmp.bin" => ecmp_states().pop().unwrap().2,
        "static.bin" => static_states().pop().unwrap().2,
        "static-replay.bin" => static_replay_final(),
        _ => unreachable!(),
    }
}

const FILES: [&str; 4] = ["bgp.bin", "ecmp.bin", "static.bin", "static-replay.bin"];

/// Splits that matter: every frame its own read, every frame cut in its
/// header and in its body, tiny reads.
#[test]
fn any_split_systematic() {
    for name in FILES {
        let data = capture(name);
        let want = final_model(name);
        let refs = reference(name);
        let fr = frames(data);
        let every_frame: Vec<usize> = fr.iter().map(|r| r.end).collect();
        let in_header: Vec<usize> = fr.iter().map(|r| r.start + 2).collect();
        let in_body: Vec<usize> = fr.iter().map(|r| r.start + 4 + (r.len() - 4) / 2).collect();
        for (how, cuts) in [
            ("every frame", every_frame),
            ("in headers", in_header),
            ("in bodies", in_body),
        ] {
            let got = split_final(name, &cuts, &want);
            assert!(
                got == refs,
                "{name}, cut {how}: {got:?}\nvs one read: {refs:?}"
            );
        }
        if data.len() < 50_000 {
            for n in [1usize, 3, 5] {
                let mut rig = Rig::standard();
                rig.reads(data, &[n]);
                rig.check(&want, &format!("{name} in reads of {n}"));
                assert!(rig.snapshot() == refs, "{name}, reads of {n}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Any split of a stream into reads leaves the same tables.
    #[test]
    fn any_split_same_tables(
        file in 0usize..4,
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..64),
    ) {
        let name = FILES[file];
        let len = capture(name).len();
        let cuts: Vec<usize> = cuts.iter().map(|i| i.index(len + 1)).collect();
        let got = split_final(name, &cuts, &final_model(name));
        let refs = reference(name);
        prop_assert!(got == refs, "{} cut at {:?}", name, cuts);
    }
}
