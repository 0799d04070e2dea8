//! Golden wire tests: each message is encoded to an exact string and the
//! string decoded back to the same value, so the wire format cannot drift
//! without a test changing.

use std::fmt::Debug;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::*;
use crate::codec::{decode, encode};

fn golden<T: Serialize + DeserializeOwned + PartialEq + Debug>(value: &T, json: &str) {
    assert_eq!(encode(value).unwrap(), json, "encoding of {value:?}");
    let back: T = decode(json.as_bytes()).unwrap_or_else(|e| panic!("decode {json}: {e}"));
    assert_eq!(&back, value, "decoding of {json}");
}

fn net(s: &str) -> IpNet {
    s.parse().unwrap()
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn mac(s: &str) -> Mac {
    s.parse().unwrap()
}

fn req(id: u64, request: Request) -> RequestLine {
    RequestLine { id, request }
}

fn change(id: u64, c: Change) -> RequestLine {
    req(id, Request::Change(c))
}

#[test]
fn handshake() {
    golden(
        &HelloLine {
            hello: Hello::new(CLIENT_NAME, PROTOCOLS),
        },
        r#"{"hello":{"protocol":1,"client":"fwdctl 0.1.0"}}"#,
    );
    golden(
        &HelloLine {
            hello: Hello::new("x", 1..=3),
        },
        r#"{"hello":{"protocol":3,"client":"x","min_protocol":1}}"#,
    );
    let ok = HelloReply::answer(&Hello::new("x", 1..=1), "fwd 0.1.0");
    golden(&ok, r#"{"hello":{"protocol":1,"daemon":"fwd 0.1.0"}}"#);
    let refused = HelloReply::answer(&Hello::new("x", 2..=2), "fwd 0.1.0");
    golden(
        &refused,
        r#"{"error":{"kind":"unsupported","message":"protocol versions 2..=2 are not supported; this daemon speaks 1..=1"}}"#,
    );
    // A newer client may say more in its hello; the server still reads it.
    let h: HelloLine =
        decode(br#"{"hello":{"protocol":1,"client":"x","features":["y"]}}"#).unwrap();
    assert_eq!(h.hello.protocol, 1);
}

#[test]
fn versions_are_negotiated_to_the_newest_both_speak() {
    let speak = |client: std::ops::RangeInclusive<u32>, daemon| match HelloReply::negotiate(
        &Hello::new("c", client),
        "d",
        daemon,
    ) {
        HelloReply::Hello(h) => Some(h.protocol),
        HelloReply::Error(e) => {
            assert_eq!(e.kind, ErrorKind::Unsupported);
            None
        }
    };
    // A newer client with an older daemon, and the other way round.
    assert_eq!(speak(1..=3, 1..=1), Some(1));
    assert_eq!(speak(1..=1, 1..=3), Some(1));
    assert_eq!(speak(2..=4, 1..=3), Some(3));
    assert_eq!(speak(3..=3, 1..=5), Some(3));
    // No common version.
    assert_eq!(speak(4..=5, 1..=3), None);
    assert_eq!(speak(1..=1, 2..=3), None);
    // A client from before negotiation sends only `protocol`: exactly it.
    let old: HelloLine = decode(br#"{"hello":{"protocol":2,"client":"old"}}"#).unwrap();
    assert_eq!(old.hello.versions(), 2..=2);
    // A contradictory range (min above max) means only `protocol`.
    let odd: HelloLine =
        decode(br#"{"hello":{"protocol":2,"client":"odd","min_protocol":9}}"#).unwrap();
    assert_eq!(odd.hello.versions(), 2..=2);
}

fn full_rule() -> Rule {
    Rule {
        id: Some(7),
        priority: 10,
        matches: RuleMatch {
            src: Some(net("10.0.0.0/8")),
            dst: Some(net("192.0.2.0/24")),
            proto: Some(Masked {
                value: 6,
                mask: 255,
            }),
            sport: Some(PortRange {
                lo: 1024,
                hi: 65535,
            }),
            dport: Some(PortRange { lo: 80, hi: 90 }),
            in_port: Some("p1".into()),
            vlan: Some(100),
            dscp: Some(46),
            tcp_flags: Some(Masked16 { value: 2, mask: 18 }),
        },
        actions: vec![
            Action::Count,
            Action::Mirror("p3".into()),
            Action::Police(Police {
                rate: Rate::Bps(10_000_000),
                burst: 65536,
            }),
            Action::SetDscp(0),
            Action::Mark(7),
            Action::Nexthop(3),
            Action::Table(5),
            Action::Redirect("p2".into()),
            Action::Permit,
            Action::Drop,
        ],
    }
}

#[test]
fn rule_changes() {
    golden(
        &change(1, Change::RuleAdd(Box::new(full_rule()))),
        concat!(
            r#"{"id":1,"request":{"change":{"rule_add":{"id":7,"priority":10,"#,
            r#""match":{"src":"10.0.0.0/8","dst":"192.0.2.0/24","proto":{"value":6,"mask":255},"#,
            r#""sport":{"lo":1024,"hi":65535},"dport":{"lo":80,"hi":90},"in_port":"p1","vlan":100,"#,
            r#""dscp":46,"tcp_flags":{"value":2,"mask":18}},"#,
            r#""actions":["count",{"mirror":"p3"},{"police":{"rate":{"bps":10000000},"burst":65536}},"#,
            r#"{"set_dscp":0},{"mark":7},{"nexthop":3},{"table":5},{"redirect":"p2"},"permit","drop"]}}}}"#
        ),
    );
    let minimal = Rule {
        id: None,
        priority: 0,
        matches: RuleMatch::default(),
        actions: vec![Action::Police(Police {
            rate: Rate::Pps(1000),
            burst: 10,
        })],
    };
    golden(
        &change(2, Change::RuleReplace(Box::new(minimal.clone()))),
        r#"{"id":2,"request":{"change":{"rule_replace":{"priority":0,"actions":[{"police":{"rate":{"pps":1000},"burst":10}}]}}}}"#,
    );
    // An empty match object is the same as none.
    let r: Rule = decode(
        br#"{"priority":0,"match":{},"actions":[{"police":{"rate":{"pps":1000},"burst":10}}]}"#,
    )
    .unwrap();
    assert_eq!(r, minimal);
    golden(
        &change(3, Change::RuleDel { id: 7 }),
        r#"{"id":3,"request":{"change":{"rule_del":{"id":7}}}}"#,
    );
    golden(
        &change(4, Change::RuleFlush {}),
        r#"{"id":4,"request":{"change":{"rule_flush":{}}}}"#,
    );
}

#[test]
fn route_changes() {
    golden(
        &change(
            1,
            Change::RouteAdd(Route {
                linkdown: false,
                proto: None,
                prefix: net("10.0.0.0/8"),
                table: 5,
                target: RouteTarget::Gateway {
                    via: Some(ip("10.0.1.2")),
                    dev: Some("p1".into()),
                },
            }),
        ),
        r#"{"id":1,"request":{"change":{"route_add":{"prefix":"10.0.0.0/8","table":5,"target":{"gateway":{"via":"10.0.1.2","dev":"p1"}}}}}}"#,
    );
    golden(
        &change(
            2,
            Change::RouteAdd(Route {
                linkdown: false,
                proto: None,
                prefix: net("192.0.2.0/24"),
                table: 0,
                target: RouteTarget::Blackhole,
            }),
        ),
        r#"{"id":2,"request":{"change":{"route_add":{"prefix":"192.0.2.0/24","target":"blackhole"}}}}"#,
    );
    golden(
        &change(
            3,
            Change::RouteReplace(Route {
                linkdown: false,
                proto: None,
                prefix: net("2001:db8::/32"),
                table: 0,
                target: RouteTarget::Group(10),
            }),
        ),
        r#"{"id":3,"request":{"change":{"route_replace":{"prefix":"2001:db8::/32","target":{"group":10}}}}}"#,
    );
    for (t, json) in [
        (RouteTarget::Nhid(4), r#"{"nhid":4}"#),
        (RouteTarget::Reject, r#""reject""#),
        (RouteTarget::Local, r#""local""#),
        (
            RouteTarget::Gateway {
                via: None,
                dev: Some("p2".into()),
            },
            r#"{"gateway":{"dev":"p2"}}"#,
        ),
        (
            RouteTarget::Gateway {
                via: Some(ip("fe80::1")),
                dev: None,
            },
            r#"{"gateway":{"via":"fe80::1"}}"#,
        ),
    ] {
        golden(&t, json);
    }
    golden(
        &change(
            4,
            Change::RouteDel(RouteDel {
                prefix: net("10.0.0.0/8"),
                table: 0,
                target: None,
            }),
        ),
        r#"{"id":4,"request":{"change":{"route_del":{"prefix":"10.0.0.0/8"}}}}"#,
    );
    golden(
        &change(
            5,
            Change::RouteDel(RouteDel {
                prefix: net("10.0.0.0/8"),
                table: 2,
                target: Some(RouteTarget::Nhid(1)),
            }),
        ),
        r#"{"id":5,"request":{"change":{"route_del":{"prefix":"10.0.0.0/8","table":2,"target":{"nhid":1}}}}}"#,
    );
}

#[test]
fn nexthop_group_neigh_address_changes() {
    let cases: Vec<(Change, &str)> = vec![
        (
            Change::NexthopAdd(Nexthop {
                id: 1,
                via: Some(ip("10.0.1.2")),
                dev: "p1".into(),
            }),
            r#"{"nexthop_add":{"id":1,"via":"10.0.1.2","dev":"p1"}}"#,
        ),
        (
            Change::NexthopReplace(Nexthop {
                id: 1,
                via: None,
                dev: "p2".into(),
            }),
            r#"{"nexthop_replace":{"id":1,"dev":"p2"}}"#,
        ),
        (Change::NexthopDel { id: 1 }, r#"{"nexthop_del":{"id":1}}"#),
        (
            Change::GroupAdd(Group {
                id: 10,
                members: vec![
                    GroupMember { id: 1, weight: 1 },
                    GroupMember { id: 2, weight: 3 },
                ],
            }),
            r#"{"group_add":{"id":10,"members":[{"id":1,"weight":1},{"id":2,"weight":3}]}}"#,
        ),
        (
            Change::GroupReplace(Group {
                id: 10,
                members: vec![GroupMember { id: 2, weight: 1 }],
            }),
            r#"{"group_replace":{"id":10,"members":[{"id":2,"weight":1}]}}"#,
        ),
        (Change::GroupDel { id: 10 }, r#"{"group_del":{"id":10}}"#),
        (
            Change::NeighAdd(Neigh {
                addr: ip("10.0.1.2"),
                lladdr: mac("02:00:00:00:01:02"),
                dev: "p1".into(),
            }),
            r#"{"neigh_add":{"addr":"10.0.1.2","lladdr":"02:00:00:00:01:02","dev":"p1"}}"#,
        ),
        (
            Change::NeighReplace(Neigh {
                addr: ip("2001:db8::2"),
                lladdr: mac("02:00:00:00:01:03"),
                dev: "p1".into(),
            }),
            r#"{"neigh_replace":{"addr":"2001:db8::2","lladdr":"02:00:00:00:01:03","dev":"p1"}}"#,
        ),
        (
            Change::NeighDel {
                addr: ip("10.0.1.2"),
                dev: "p1".into(),
            },
            r#"{"neigh_del":{"addr":"10.0.1.2","dev":"p1"}}"#,
        ),
        (
            Change::AddressAdd(Address {
                addr: net("10.0.1.1/24"),
                dev: "p1".into(),
            }),
            r#"{"address_add":{"addr":"10.0.1.1/24","dev":"p1"}}"#,
        ),
        (
            Change::AddressDel(Address {
                addr: net("2001:db8::1/64"),
                dev: "p1".into(),
            }),
            r#"{"address_del":{"addr":"2001:db8::1/64","dev":"p1"}}"#,
        ),
    ];
    for (c, json) in cases {
        golden(&c, json);
    }
    // A member weight defaults to 1 on input.
    let m: GroupMember = decode(br#"{"id":4}"#).unwrap();
    assert_eq!(m, GroupMember { id: 4, weight: 1 });
}

#[test]
fn batch() {
    golden(
        &req(
            9,
            Request::Batch {
                changes: vec![
                    Change::RuleFlush {},
                    Change::RouteAdd(Route {
                        linkdown: false,
                        proto: None,
                        prefix: net("10.0.0.0/8"),
                        table: 0,
                        target: RouteTarget::Gateway {
                            via: Some(ip("10.0.1.2")),
                            dev: Some("p1".into()),
                        },
                    }),
                    Change::RouteDel(RouteDel {
                        prefix: net("10.1.0.0/16"),
                        table: 0,
                        target: None,
                    }),
                ],
            },
        ),
        concat!(
            r#"{"id":9,"request":{"batch":{"changes":[{"rule_flush":{}},"#,
            r#"{"route_add":{"prefix":"10.0.0.0/8","target":{"gateway":{"via":"10.0.1.2","dev":"p1"}}}},"#,
            r#"{"route_del":{"prefix":"10.1.0.0/16"}}]}}}"#
        ),
    );
}

#[test]
fn queries() {
    let cases: Vec<(Request, &str)> = vec![
        (Request::RuleShow { id: None }, r#"{"rule_show":{}}"#),
        (
            Request::RuleShow { id: Some(3) },
            r#"{"rule_show":{"id":3}}"#,
        ),
        (
            Request::RuleCounters { id: None },
            r#"{"rule_counters":{}}"#,
        ),
        (
            Request::RouteShow(RouteFilter {
                table: None,
                family: None,
                within: None,
                proto: None,
            }),
            r#"{"route_show":{}}"#,
        ),
        (
            Request::RouteShow(RouteFilter {
                table: Some(0),
                family: Some(Family::Ipv6),
                within: Some(net("2001:db8::/32")),
                proto: Some("bgp".into()),
            }),
            r#"{"route_show":{"table":0,"family":"ipv6","within":"2001:db8::/32","proto":"bgp"}}"#,
        ),
        (
            Request::RouteGet {
                addr: ip("10.1.2.3"),
                table: 0,
            },
            r#"{"route_get":{"addr":"10.1.2.3"}}"#,
        ),
        (
            Request::RouteGet {
                addr: ip("10.1.2.3"),
                table: 5,
            },
            r#"{"route_get":{"addr":"10.1.2.3","table":5}}"#,
        ),
        (Request::NexthopShow { id: None }, r#"{"nexthop_show":{}}"#),
        (
            Request::GroupShow { id: Some(10) },
            r#"{"group_show":{"id":10}}"#,
        ),
        (
            Request::NeighShow {
                dev: Some("p1".into()),
            },
            r#"{"neigh_show":{"dev":"p1"}}"#,
        ),
        (Request::AddressShow { dev: None }, r#"{"address_show":{}}"#),
        (Request::PortShow { port: None }, r#"{"port_show":{}}"#),
        (
            Request::PortStats {
                port: Some("p1".into()),
            },
            r#"{"port_stats":{"port":"p1"}}"#,
        ),
        (Request::PortXstats { port: None }, r#"{"port_xstats":{}}"#),
        (Request::Stats {}, r#"{"stats":{}}"#),
        (Request::Status {}, r#"{"status":{}}"#),
        (
            Request::ConfigSave {
                path: "/etc/fwd/saved.conf".into(),
            },
            r#"{"config_save":{"path":"/etc/fwd/saved.conf"}}"#,
        ),
        (
            Request::Watch {
                interval_ms: 1000,
                count: None,
            },
            r#"{"watch":{"interval_ms":1000}}"#,
        ),
        (
            Request::Watch {
                interval_ms: 500,
                count: Some(3),
            },
            r#"{"watch":{"interval_ms":500,"count":3}}"#,
        ),
    ];
    for (r, json) in cases {
        golden(&r, json);
    }
    golden(
        &req(12, Request::Status {}),
        r#"{"id":12,"request":{"status":{}}}"#,
    );
}

#[test]
fn stream_classification() {
    assert!(Request::RouteShow(RouteFilter {
        table: None,
        family: None,
        within: None,
        proto: None
    })
    .is_stream());
    assert!(Request::Watch {
        interval_ms: 1,
        count: None
    }
    .is_stream());
    assert!(Request::RuleCounters { id: None }.is_stream());
    assert!(!Request::Status {}.is_stream());
    assert!(!Request::Batch { changes: vec![] }.is_stream());
    assert!(!Request::RouteGet {
        addr: ip("1.2.3.4"),
        table: 0
    }
    .is_stream());
}

#[test]
fn requests_reject_unknown_fields_and_bad_values() {
    for bad in [
        // A misspelt match field must not silently widen a rule.
        r#"{"id":1,"request":{"change":{"rule_add":{"priority":1,"match":{"dprot":{"lo":1,"hi":2}},"actions":["drop"]}}}}"#,
        r#"{"id":1,"request":{"change":{"route_add":{"prefix":"10.0.0.0/8","target":"blackhole","metric":5}}}}"#,
        r#"{"id":1,"request":{"status":{"verbose":true}}}"#,
        r#"{"id":1,"request":{"status":{}},"extra":1}"#,
        r#"{"id":1,"request":{"route_ad":{}}}"#,
        r#"{"id":1,"request":{"change":{"route_add":{"prefix":"10.0.0.300/8","target":"blackhole"}}}}"#,
        r#"{"id":1,"request":{"change":{"route_add":{"prefix":"10.0.0.0","target":"blackhole"}}}}"#,
        r#"{"id":1,"request":{"change":{"neigh_add":{"addr":"10.0.0.1","lladdr":"02:00:00:00:01","dev":"p1"}}}}"#,
        r#"{"id":1,"request":{"change":{"rule_add":{"priority":1,"actions":["explode"]}}}}"#,
        r#"{"id":-1,"request":{"status":{}}}"#,
    ] {
        let e = decode::<RequestLine>(bad.as_bytes()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::BadRequest, "{bad}");
    }
    let e = decode::<RequestLine>(
        br#"{"id":1,"request":{"change":{"route_add":{"prefix":"10.0.0.300/8","target":"blackhole"}}}}"#,
    )
    .unwrap_err();
    assert!(
        e.message.contains("invalid prefix \"10.0.0.300/8\""),
        "{}",
        e.message
    );
}

#[test]
fn ok_answers() {
    golden(
        &ResponseLine::ok(
            1,
            Response::Done(Done {
                generation: 42,
                changes: 1,
                rule_ids: vec![],
            }),
        ),
        r#"{"id":1,"ok":{"done":{"generation":42,"changes":1}}}"#,
    );
    golden(
        &ResponseLine::ok(
            2,
            Response::Done(Done {
                generation: 43,
                changes: 3,
                rule_ids: vec![100, 101],
            }),
        ),
        r#"{"id":2,"ok":{"done":{"generation":43,"changes":3,"rule_ids":[100,101]}}}"#,
    );
    golden(
        &ResponseLine::ok(
            3,
            Response::RouteLookup(RouteLookup {
                addr: ip("10.1.2.3"),
                table: 0,
                route: Route {
                    linkdown: false,
                    proto: None,
                    prefix: net("10.0.0.0/8"),
                    table: 0,
                    target: RouteTarget::Group(10),
                },
                paths: vec![
                    Path {
                        nhid: Some(1),
                        via: Some(ip("10.0.1.2")),
                        dev: "p1".into(),
                        weight: 1,
                        lladdr: Some(mac("02:00:00:00:01:02")),
                    },
                    Path {
                        nhid: Some(2),
                        via: Some(ip("10.0.2.2")),
                        dev: "p2".into(),
                        weight: 3,
                        lladdr: None,
                    },
                ],
            }),
        ),
        concat!(
            r#"{"id":3,"ok":{"route_lookup":{"addr":"10.1.2.3","table":0,"#,
            r#""route":{"prefix":"10.0.0.0/8","target":{"group":10}},"paths":["#,
            r#"{"nhid":1,"via":"10.0.1.2","dev":"p1","weight":1,"lladdr":"02:00:00:00:01:02"},"#,
            r#"{"nhid":2,"via":"10.0.2.2","dev":"p2","weight":3}]}}}"#
        ),
    );
    golden(
        &ResponseLine::ok(
            4,
            Response::Ports(vec![PortInfo {
                index: 0,
                name: "p1".into(),
                driver: "net_pcap".into(),
                mac: mac("02:00:00:00:00:01"),
                link_up: true,
                admin_down: false,
                speed_mbps: 10000,
                mtu: 1500,
                rx_queues: 2,
                tx_queues: 2,
                table: 0,
                addresses: vec![net("10.0.1.1/24")],
            }]),
        ),
        concat!(
            r#"{"id":4,"ok":{"ports":[{"index":0,"name":"p1","driver":"net_pcap","#,
            r#""mac":"02:00:00:00:00:01","link_up":true,"speed_mbps":10000,"mtu":1500,"#,
            r#""rx_queues":2,"tx_queues":2,"table":0,"addresses":["10.0.1.1/24"]}]}}"#
        ),
    );
    let ps = PortStats {
        name: "p1".into(),
        rx_packets: 10,
        rx_bytes: 640,
        rx_missed: 1,
        rx_errors: 2,
        rx_nombuf: 3,
        tx_packets: 9,
        tx_bytes: 576,
        tx_errors: 4,
        tx_dropped: 5,
    };
    golden(
        &ResponseLine::ok(5, Response::PortStats(vec![ps.clone()])),
        concat!(
            r#"{"id":5,"ok":{"port_stats":[{"name":"p1","rx_packets":10,"rx_bytes":640,"#,
            r#""rx_missed":1,"rx_errors":2,"rx_nombuf":3,"tx_packets":9,"tx_bytes":576,"#,
            r#""tx_errors":4,"tx_dropped":5}]}}"#
        ),
    );
    golden(
        &ResponseLine::ok(
            6,
            Response::PortXstats(vec![PortXstats {
                name: "p1".into(),
                xstats: vec![Xstat {
                    name: "rx_good_packets".into(),
                    value: 10,
                }],
            }]),
        ),
        r#"{"id":6,"ok":{"port_xstats":[{"name":"p1","xstats":[{"name":"rx_good_packets","value":10}]}]}}"#,
    );
    golden(
        &ResponseLine::ok(
            7,
            Response::Stats(StatsReport {
                uptime_ms: 5000,
                rx_packets: 10,
                tx_packets: 9,
                dropped: 1,
                drops: vec![DropCount {
                    reason: "no_route".into(),
                    packets: 1,
                }],
                events: Vec::new(),
                lcores: vec![LcoreStats {
                    lcore: 1,
                    polls: 100,
                    busy_polls: 5,
                    idle_sleep_ms: 2500,
                    rx_packets: 10,
                    tx_packets: 9,
                    dropped: 1,
                }],
                ports: vec![ps],
                rates: None,
            }),
        ),
        concat!(
            r#"{"id":7,"ok":{"stats":{"uptime_ms":5000,"rx_packets":10,"tx_packets":9,"dropped":1,"#,
            r#""drops":[{"reason":"no_route","packets":1}],"#,
            r#""lcores":[{"lcore":1,"polls":100,"busy_polls":5,"idle_sleep_ms":2500,"rx_packets":10,"tx_packets":9,"dropped":1}],"#,
            r#""ports":[{"name":"p1","rx_packets":10,"rx_bytes":640,"rx_missed":1,"rx_errors":2,"#,
            r#""rx_nombuf":3,"tx_packets":9,"tx_bytes":576,"tx_errors":4,"tx_dropped":5}]}}}"#
        ),
    );
    golden(
        &ResponseLine::ok(8, Response::Status(sample_status())),
        concat!(
            r#"{"id":8,"ok":{"status":{"version":"fwd 0.1.0","uptime_ms":61000,"generation":42,"#,
            r#""workers":[{"name":"worker-1","online":true,"reported_generation":42,"stalled":false,"last_progress_ms":0},"#,
            r#"{"name":"worker-2","online":false,"stalled":false,"last_progress_ms":900}],"#,
            r#""pending_objects":3,"pending_bytes":4096,"reclaimed_objects":100,"reclaimed_bytes":1048576,"#,
            r#""stalls":0,"backpressure_events":1,"backpressure_overruns":0,"#,
            r#""publish_to_quiescent":{"count":40,"p50_ns":12000,"p99_ns":80000,"p999_ns":95000,"max_ns":120000},"#,
            r#""clients":2}}}"#
        ),
    );
    golden(
        &ResponseLine::ok(
            8,
            Response::Status(StatusReport {
                routing: Some(RoutingUsage {
                    tables: 2,
                    tables_limit: 1024,
                    bytes: 1 << 20,
                    bytes_limit: 2 << 30,
                }),
                ..StatusReport::default()
            }),
        ),
        concat!(
            r#"{"id":8,"ok":{"status":{"version":"","uptime_ms":0,"generation":0,"workers":[],"#,
            r#""pending_objects":0,"pending_bytes":0,"reclaimed_objects":0,"reclaimed_bytes":0,"#,
            r#""stalls":0,"backpressure_events":0,"backpressure_overruns":0,"#,
            r#""publish_to_quiescent":{"count":0,"p50_ns":0,"p99_ns":0,"p999_ns":0,"max_ns":0},"#,
            r#""clients":0,"routing":{"tables":2,"tables_limit":1024,"bytes":1048576,"bytes_limit":2147483648}}}}"#
        ),
    );
    golden(
        &ResponseLine::ok(
            9,
            Response::Saved(Saved {
                path: "/etc/fwd/saved.conf".into(),
                generation: 42,
                lines: 900_000,
            }),
        ),
        r#"{"id":9,"ok":{"saved":{"path":"/etc/fwd/saved.conf","generation":42,"lines":900000}}}"#,
    );
}

pub(crate) fn sample_status() -> StatusReport {
    StatusReport {
        version: "fwd 0.1.0".into(),
        uptime_ms: 61_000,
        generation: 42,
        workers: vec![
            WorkerStatus {
                name: "worker-1".into(),
                online: true,
                reported_generation: Some(42),
                stalled: false,
                last_progress_ms: 0,
            },
            WorkerStatus {
                name: "worker-2".into(),
                online: false,
                reported_generation: None,
                stalled: false,
                last_progress_ms: 900,
            },
        ],
        pending_objects: 3,
        pending_bytes: 4096,
        reclaimed_objects: 100,
        reclaimed_bytes: 1 << 20,
        stalls: 0,
        backpressure_events: 1,
        backpressure_overruns: 0,
        publish_to_quiescent: Latency {
            count: 40,
            p50_ns: 12_000,
            p99_ns: 80_000,
            p999_ns: 95_000,
            max_ns: 120_000,
        },
        clients: 2,
        routing: None,
    }
}

#[test]
fn errors() {
    golden(
        &ResponseLine::error(
            3,
            ErrorBody::new(ErrorKind::NotFound, "route 10.0.0.0/8 table 0 not found"),
        ),
        r#"{"id":3,"error":{"kind":"not_found","message":"route 10.0.0.0/8 table 0 not found"}}"#,
    );
    golden(
        &ResponseLine::error(
            4,
            ErrorBody::new(ErrorKind::Invalid, "unknown port 'p9'").at(900_000),
        ),
        r#"{"id":4,"error":{"kind":"invalid","message":"unknown port 'p9'","index":900000}}"#,
    );
    let kinds = [
        (ErrorKind::BadRequest, "bad_request"),
        (ErrorKind::NotFound, "not_found"),
        (ErrorKind::Exists, "exists"),
        (ErrorKind::Conflict, "conflict"),
        (ErrorKind::Invalid, "invalid"),
        (ErrorKind::Unsupported, "unsupported"),
        (ErrorKind::TooLarge, "too_large"),
        (ErrorKind::PermissionDenied, "permission_denied"),
        (ErrorKind::Busy, "busy"),
        (ErrorKind::Internal, "internal"),
    ];
    for (k, name) in kinds {
        golden(&k, &format!("\"{name}\""));
        assert_eq!(k.to_string(), name);
    }
    assert_eq!(
        ErrorBody::new(ErrorKind::Exists, "rule 7 exists")
            .at(2)
            .to_string(),
        "change 2: exists: rule 7 exists"
    );
}

#[test]
fn stream_lines() {
    let cases: Vec<(ResponseLine, &str)> = vec![
        (
            ResponseLine::item(
                8,
                Item::Route(Route {
                    linkdown: false,
                    proto: None,
                    prefix: net("10.0.0.0/8"),
                    table: 0,
                    target: RouteTarget::Gateway {
                        via: Some(ip("10.0.1.2")),
                        dev: Some("p1".into()),
                    },
                }),
            ),
            r#"{"id":8,"item":{"route":{"prefix":"10.0.0.0/8","target":{"gateway":{"via":"10.0.1.2","dev":"p1"}}}}}"#,
        ),
        (
            ResponseLine::item(
                8,
                Item::Rule(Rule {
                    id: Some(1),
                    priority: 5,
                    matches: RuleMatch {
                        dport: Some(PortRange { lo: 22, hi: 22 }),
                        ..RuleMatch::default()
                    },
                    actions: vec![Action::Drop],
                }),
            ),
            r#"{"id":8,"item":{"rule":{"id":1,"priority":5,"match":{"dport":{"lo":22,"hi":22}},"actions":["drop"]}}}"#,
        ),
        (
            ResponseLine::item(
                8,
                Item::RuleCounters(RuleCounters {
                    id: 1,
                    priority: 5,
                    packets: 10,
                    bytes: 640,
                    idle_ms: Some(250),
                }),
            ),
            r#"{"id":8,"item":{"rule_counters":{"id":1,"priority":5,"packets":10,"bytes":640,"idle_ms":250}}}"#,
        ),
        (
            ResponseLine::item(
                8,
                Item::Nexthop(NexthopEntry {
                    id: 1,
                    via: Some(ip("10.0.1.2")),
                    dev: "p1".into(),
                    refs: 900_000,
                    lladdr: Some(mac("02:00:00:00:01:02")),
                }),
            ),
            r#"{"id":8,"item":{"nexthop":{"id":1,"via":"10.0.1.2","dev":"p1","refs":900000,"lladdr":"02:00:00:00:01:02"}}}"#,
        ),
        (
            ResponseLine::item(
                8,
                Item::Group(GroupEntry {
                    id: 10,
                    members: vec![GroupMember { id: 1, weight: 2 }],
                    refs: 1,
                }),
            ),
            r#"{"id":8,"item":{"group":{"id":10,"members":[{"id":1,"weight":2}],"refs":1}}}"#,
        ),
        (
            ResponseLine::item(
                8,
                Item::Neigh(NeighEntry {
                    addr: ip("10.0.1.2"),
                    lladdr: Some(mac("02:00:00:00:01:02")),
                    dev: "p1".into(),
                    state: "reachable".into(),
                    age_ms: 1200,
                    probes: 0,
                    held: 0,
                }),
            ),
            concat!(
                r#"{"id":8,"item":{"neigh":{"addr":"10.0.1.2","lladdr":"02:00:00:00:01:02","#,
                r#""dev":"p1","state":"reachable","age_ms":1200,"probes":0,"held":0}}}"#
            ),
        ),
        (
            ResponseLine::item(
                8,
                Item::Address(Address {
                    addr: net("10.0.1.1/24"),
                    dev: "p1".into(),
                }),
            ),
            r#"{"id":8,"item":{"address":{"addr":"10.0.1.1/24","dev":"p1"}}}"#,
        ),
        (
            ResponseLine::item(
                8,
                Item::Rates(RateSample {
                    uptime_ms: 2000,
                    interval_ms: 1000,
                    rx_pps: 100,
                    tx_pps: 90,
                    drop_pps: 10,
                    rx_bps: 51200,
                    tx_bps: 46080,
                    ports: vec![PortRates {
                        name: "p1".into(),
                        rx_pps: 100,
                        tx_pps: 90,
                        rx_bps: 51200,
                        tx_bps: 46080,
                    }],
                }),
            ),
            concat!(
                r#"{"id":8,"item":{"rates":{"uptime_ms":2000,"interval_ms":1000,"rx_pps":100,"tx_pps":90,"#,
                r#""drop_pps":10,"rx_bps":51200,"tx_bps":46080,"#,
                r#""ports":[{"name":"p1","rx_pps":100,"tx_pps":90,"rx_bps":51200,"tx_bps":46080}]}}}"#
            ),
        ),
        (ResponseLine::end(8, 7), r#"{"id":8,"end":{"count":7}}"#),
        (
            ResponseLine::error(8, ErrorBody::new(ErrorKind::Internal, "snapshot lost")),
            r#"{"id":8,"error":{"kind":"internal","message":"snapshot lost"}}"#,
        ),
    ];
    for (l, json) in cases {
        golden(&l, json);
    }
}

#[test]
fn answers_tolerate_new_fields() {
    // A newer daemon may add fields to answers within a version.
    let l: ResponseLine =
        decode(br#"{"id":1,"ok":{"done":{"generation":1,"changes":1,"took_us":5}}}"#).unwrap();
    assert_eq!(
        l,
        ResponseLine::ok(
            1,
            Response::Done(Done {
                generation: 1,
                changes: 1,
                rule_ids: vec![]
            })
        )
    );
}

#[test]
fn change_stays_small() {
    // A 900k-line batch is held in memory as a Vec<Change>: the big rule
    // variant is boxed so a route costs tens of bytes, not hundreds.
    assert!(
        std::mem::size_of::<Change>() <= 96,
        "{}",
        std::mem::size_of::<Change>()
    );
}
