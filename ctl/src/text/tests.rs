use std::net::IpAddr;

use super::*;
use crate::wire::*;

fn words(s: &str) -> Vec<&str> {
    s.split_ascii_whitespace().collect()
}

fn cmd(s: &str) -> Request {
    match parse_command(&words(s)) {
        Ok(Command::Request(r)) => r,
        other => panic!("{s}: {other:?}"),
    }
}

fn chg(s: &str) -> Change {
    parse_change(&words(s)).unwrap_or_else(|e| panic!("{s}: {e}"))
}

/// Asserts `s` fails and the message quotes `word`.
fn bad(s: &str, word: &str) -> ParseError {
    let e = match parse_command(&words(s)) {
        Err(e) => e,
        Ok(c) => panic!("{s}: parsed as {c:?}"),
    };
    assert!(
        e.message().contains(&format!("'{word}'")),
        "{s}: error {:?} does not name '{word}'",
        e.message()
    );
    e
}

/// Asserts `s` fails with "missing WHAT".
fn missing(s: &str, what: &str) {
    let e = parse_command(&words(s)).unwrap_err();
    assert!(
        e.message().contains(&format!("missing {what}")),
        "{s}: {:?}",
        e.message()
    );
}

fn net(s: &str) -> IpNet {
    s.parse().unwrap()
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn gw(via: &str, dev: &str) -> RouteTarget {
    RouteTarget::Gateway {
        via: Some(ip(via)),
        dev: Some(dev.into()),
    }
}

#[test]
fn routes() {
    assert_eq!(
        chg("route add 10.0.0.0/8 via 10.0.1.2 dev p1 table 5"),
        Change::RouteAdd(Route {
            linkdown: false,
            proto: None,
            prefix: net("10.0.0.0/8"),
            table: 5,
            target: gw("10.0.1.2", "p1"),
        })
    );
    assert_eq!(
        chg("route add 192.0.2.0/24 blackhole"),
        Change::RouteAdd(Route {
            linkdown: false,
            proto: None,
            prefix: net("192.0.2.0/24"),
            table: 0,
            target: RouteTarget::Blackhole,
        })
    );
    // ip's order: type first.
    assert_eq!(
        chg("ro add blackhole 192.0.2.0/24"),
        chg("route add 192.0.2.0/24 blackhole")
    );
    assert_eq!(
        chg("route replace default via 10.0.0.1"),
        Change::RouteReplace(Route {
            linkdown: false,
            proto: None,
            prefix: net("0.0.0.0/0"),
            table: 0,
            target: RouteTarget::Gateway {
                via: Some(ip("10.0.0.1")),
                dev: None
            },
        })
    );
    assert_eq!(
        chg("route add 10.9.9.9 dev p2"),
        Change::RouteAdd(Route {
            linkdown: false,
            proto: None,
            prefix: net("10.9.9.9/32"),
            table: 0,
            target: RouteTarget::Gateway {
                via: None,
                dev: Some("p2".into())
            },
        })
    );
    assert_eq!(
        chg("route add 2001:db8::/32 nexthop-group 10 table 2"),
        Change::RouteAdd(Route {
            linkdown: false,
            proto: None,
            prefix: net("2001:db8::/32"),
            table: 2,
            target: RouteTarget::Group(10),
        })
    );
    assert_eq!(
        chg("route add 10.0.0.0/8 nhid 3"),
        Change::RouteAdd(Route {
            linkdown: false,
            proto: None,
            prefix: net("10.0.0.0/8"),
            table: 0,
            target: RouteTarget::Nhid(3),
        })
    );
    assert_eq!(
        chg("route add 10.0.0.0/8 unreachable").to_string(),
        "route add 10.0.0.0/8 reject"
    );
    assert_eq!(
        chg("route del 10.0.0.0/8"),
        Change::RouteDel(RouteDel {
            prefix: net("10.0.0.0/8"),
            table: 0,
            target: None
        })
    );
    assert_eq!(
        chg("route delete 10.0.0.0/8 table 1 via 10.0.1.2 dev p1"),
        Change::RouteDel(RouteDel {
            prefix: net("10.0.0.0/8"),
            table: 1,
            target: Some(gw("10.0.1.2", "p1"))
        })
    );
    assert_eq!(
        cmd("route get 10.1.2.3"),
        Request::RouteGet {
            addr: ip("10.1.2.3"),
            table: 0
        }
    );
    assert_eq!(
        cmd("route get 2001:db8::1 table 7"),
        Request::RouteGet {
            addr: ip("2001:db8::1"),
            table: 7
        }
    );
    assert_eq!(
        cmd("route"),
        Request::RouteShow(RouteFilter {
            table: None,
            family: None,
            within: None,
            proto: None
        })
    );
    assert_eq!(
        cmd("route show table 3 v6 2001:db8::/32"),
        Request::RouteShow(RouteFilter {
            table: Some(3),
            family: Some(Family::Ipv6),
            within: Some(net("2001:db8::/32")),
            proto: None
        })
    );
    assert_eq!(
        cmd("route show proto bgp v4"),
        Request::RouteShow(RouteFilter {
            table: None,
            family: Some(Family::Ipv4),
            within: None,
            proto: Some("bgp".into())
        })
    );
    assert_eq!(
        cmd("r ls table all -4"),
        Request::RouteShow(RouteFilter {
            table: None,
            family: Some(Family::Ipv4),
            within: None,
            proto: None
        })
    );
}

#[test]
fn bad_routes_name_the_word() {
    bad("route add 10.0.0.300/8 via 10.0.1.2 dev p1", "10.0.0.300/8");
    let e = bad("route add 10.0.0.1/8 via 10.0.1.2", "10.0.0.1/8");
    assert!(e.message().contains("host bits"), "{}", e.message());
    assert!(e.message().contains("10.0.0.0/8"), "{}", e.message());
    bad("route add 10.0.0.0/33 blackhole", "10.0.0.0/33");
    bad("route add 10.0.0.0/8 vai 10.0.1.2", "vai");
    bad("route add 10.0.0.0/8 via 10.0.1", "10.0.1");
    bad("route add 10.0.0.0/8 via", "via");
    bad("route add 10.0.0.0/8 blackhole via 10.0.1.2", "blackhole");
    bad("route add 10.0.0.0/8 nhid 1 dev p1", "nhid");
    bad(
        "route add 10.0.0.0/8 nhid 1 nexthop-group 2",
        "nexthop-group",
    );
    bad("route add 10.0.0.0/8 table 1 table 2 blackhole", "table");
    bad(
        "route add 10.0.0.0/8 table 4294967296 blackhole",
        "4294967296",
    );
    bad("route add 10.0.0.0/8 table -1 blackhole", "-1");
    bad("route get 10.1.2.3/32", "10.1.2.3/32");
    bad("route flush tabel 1", "tabel");
    bad("route show tabel 3", "tabel");
    bad("routez show", "routez");
    bad("fwdctl route show", "fwdctl");
    let e = parse_command(&words("route add 10.0.0.0/8")).unwrap_err();
    assert!(e.message().contains("missing target"), "{}", e.message());
    let e = parse_command(&words("route add")).unwrap_err();
    assert!(e.message().contains("missing prefix"), "{}", e.message());
    let e = parse_command(&[]).unwrap_err();
    assert!(e.message().contains("missing command"), "{}", e.message());
}

#[test]
fn rules() {
    assert_eq!(
        chg("rule add prio 10 src 10.0.0.0/8 dport 80-90 proto tcp action drop"),
        Change::RuleAdd(Box::new(Rule {
            id: None,
            priority: 10,
            matches: RuleMatch {
                src: Some(net("10.0.0.0/8")),
                proto: Some(Masked {
                    value: 6,
                    mask: 0xff
                }),
                dport: Some(PortRange { lo: 80, hi: 90 }),
                ..RuleMatch::default()
            },
            actions: vec![Action::Drop],
        }))
    );
    let full = chg(
        "rule add id 7 prio 1 src 2001:db8::/32 dst 2001:db8:1::/48 proto 17/0xff \
         sport 1024-65535 dport 53 iif p1 vlan 100 dscp ef tcp_flags syn/syn,ack \
         action count mirror p3 police rate 10mbit burst 64k set-dscp af41 mark 0x10 \
         table 5 redirect p2",
    );
    assert_eq!(
        full,
        Change::RuleAdd(Box::new(Rule {
            id: Some(7),
            priority: 1,
            matches: RuleMatch {
                src: Some(net("2001:db8::/32")),
                dst: Some(net("2001:db8:1::/48")),
                proto: Some(Masked {
                    value: 17,
                    mask: 0xff
                }),
                sport: Some(PortRange {
                    lo: 1024,
                    hi: 65535
                }),
                dport: Some(PortRange { lo: 53, hi: 53 }),
                in_port: Some("p1".into()),
                vlan: Some(100),
                dscp: Some(46),
                tcp_flags: Some(Masked16 {
                    value: 0x02,
                    mask: 0x12
                }),
            },
            actions: vec![
                Action::Count,
                Action::Mirror("p3".into()),
                Action::Police(Police {
                    rate: Rate::Bps(10_000_000),
                    burst: 65536
                }),
                Action::SetDscp(34),
                Action::Mark(16),
                Action::Table(5),
                Action::Redirect("p2".into()),
            ],
        }))
    );
    // `action` may repeat, like tc.
    assert_eq!(
        chg("rule add prio 1 action mirror p3 action drop"),
        chg("rule add prio 1 action mirror p3 drop")
    );
    assert_eq!(
        chg("rule add prio 2 proto icmp action police rate 1000pps burst 10 nexthop 4"),
        Change::RuleAdd(Box::new(Rule {
            id: None,
            priority: 2,
            matches: RuleMatch {
                proto: Some(Masked {
                    value: 1,
                    mask: 0xff
                }),
                ..RuleMatch::default()
            },
            actions: vec![
                Action::Police(Police {
                    rate: Rate::Pps(1000),
                    burst: 10
                }),
                Action::Nexthop(4)
            ],
        }))
    );
    assert_eq!(chg("rule del 7"), Change::RuleDel { id: 7 });
    assert_eq!(chg("rule del id 7"), Change::RuleDel { id: 7 });
    assert_eq!(chg("rule flush"), Change::RuleFlush {});
    assert_eq!(
        chg("route flush"),
        Change::RouteFlush(RouteFilter::default())
    );
    assert_eq!(
        chg("route flush table 3 v6 proto static 2001:db8::/32"),
        Change::RouteFlush(RouteFilter {
            table: Some(3),
            family: Some(Family::Ipv6),
            within: Some("2001:db8::/32".parse().unwrap()),
            proto: Some("static".into()),
        })
    );
    assert_eq!(
        chg("route flush table all within 10.0.0.0/8"),
        Change::RouteFlush(RouteFilter {
            within: Some("10.0.0.0/8".parse().unwrap()),
            ..RouteFilter::default()
        })
    );
    assert!(matches!(
        chg("rule replace id 7 prio 3 action permit"),
        Change::RuleReplace(r) if r.id == Some(7)
    ));
    assert_eq!(cmd("rule"), Request::RuleShow { id: None });
    assert_eq!(cmd("rule show 7"), Request::RuleShow { id: Some(7) });
    assert_eq!(cmd("rule counters"), Request::RuleCounters { id: None });
    assert_eq!(
        cmd("rule counters id 9"),
        Request::RuleCounters { id: Some(9) }
    );
}

#[test]
fn rules_without_a_verdict_print_and_parse_continue() {
    // `continue` is a printed marker: with or without it the rule is the same.
    let marked = chg("rule add prio 10 action count mirror p3 continue");
    assert_eq!(marked, chg("rule add prio 10 action count mirror p3"));
    let Change::RuleAdd(r) = &marked else {
        panic!("not an add: {marked:?}")
    };
    assert!(r.continues());
    assert_eq!(
        chg("rule add prio 10 action count").to_string(),
        "rule add prio 10 action count continue"
    );
    // A verdict (police included) never prints it.
    for verdict in [
        "permit",
        "drop",
        "redirect p2",
        "nexthop 1",
        "table 2",
        "police rate 1mbit burst 1500",
    ] {
        let line = format!("rule add prio 10 action count {verdict}");
        assert_eq!(chg(&line).to_string(), line);
    }
}

#[test]
fn continue_is_refused_where_it_would_lie() {
    bad("rule add prio 10 action drop continue", "continue");
    bad(
        "rule add prio 10 action count police rate 1mbit burst 1 continue",
        "continue",
    );
    bad("rule add prio 10 action continue", "continue");
    bad("rule add prio 10 action count continue mark 3", "mark");
}

#[test]
fn vrf_is_not_a_second_word_for_table() {
    for s in [
        "route add 10.0.0.0/8 vrf 1 blackhole",
        "route show vrf 1",
        "route get 10.0.0.1 vrf 1",
        "rule add prio 10 action vrf 2",
    ] {
        let e = bad(s, "vrf");
        assert!(e.message().contains("'table N'"), "{s}: {}", e.message());
    }
}

#[test]
fn tcp_flags_cover_the_12_bit_field() {
    let flags = |s: &str| match chg(s) {
        Change::RuleAdd(r) => r.matches.tcp_flags,
        c => panic!("{s}: {c:?}"),
    };
    let m = |value, mask| Some(Masked16 { value, mask });
    assert_eq!(
        flags("rule add prio 1 tcp_flags ae action drop"),
        m(0x100, 0xfff)
    );
    assert_eq!(
        flags("rule add prio 1 tcp_flags ns/ns action drop"),
        m(0x100, 0x100)
    );
    assert_eq!(
        flags("rule add prio 1 tcp_flags syn/syn,ack,ae action drop"),
        m(0x002, 0x112)
    );
    assert_eq!(
        flags("rule add prio 1 tcp_flags 0x800/0xf00 action drop"),
        m(0x800, 0xf00)
    );
    // Without a mask a value is exact over all 12 bits, and prints bare.
    assert_eq!(
        flags("rule add prio 1 tcp_flags 0x12 action drop"),
        m(0x12, 0xfff)
    );
}

#[test]
fn bad_rules_name_the_word() {
    bad("rule add prio 10 dport 90-80 action drop", "90-80");
    bad("rule add prio 10 dport 70000 action drop", "70000");
    bad("rule add prio 10 sport 1- action drop", "1-");
    bad("rule add prio 10 proto tpc action drop", "tpc");
    bad("rule add prio 10 proto 7/0x06 action drop", "7/0x06");
    bad("rule add prio 10 tcp_flags syn/ack action drop", "syn/ack");
    bad("rule add prio 10 tcp_flags sin action drop", "sin");
    // Past the 12-bit field, as value or as mask.
    bad("rule add prio 10 tcp_flags 0x1000 action drop", "0x1000");
    bad(
        "rule add prio 10 tcp_flags 0x100/0x1100 action drop",
        "0x100/0x1100",
    );
    bad("rule add prio 10 tcp_flags 4096 action drop", "4096");
    bad("rule add prio 10 vlan 4096 action drop", "4096");
    bad("rule add prio 10 dscp 64 action drop", "64");
    bad("rule add prio 10 dscp af44 action drop", "af44");
    bad("rule add prio 10 src 10.0.0.1/8 action drop", "10.0.0.1/8");
    bad(
        "rule add prio 10 src 10.0.0.0/8 dst 2001:db8::/32 action drop",
        "dst",
    );
    bad("rule add prio 10 dprot 80 action drop", "dprot");
    bad(
        "rule add prio 10 src 10.0.0.0/8 src 11.0.0.0/8 action drop",
        "src",
    );
    bad("rule add prio x action drop", "x");
    bad("rule add prio 10 action explode", "explode");
    bad("rule add prio 10 action drop dport 80", "dport");
    bad("rule add prio 10 action redirect", "redirect");
    bad(
        "rule add prio 10 action police rate 10mbps burst 1k",
        "10mbps",
    );
    bad("rule add prio 10 action police rate 10 burst 1k", "10");
    bad("rule add prio 10 action police rate 10mbit burst 0", "0");
    bad(
        "rule add prio 10 action police rate 10mbit burst 2k2",
        "2k2",
    );
    bad("rule add prio 10 action set-dscp 99", "99");
    bad("rule show prio", "prio");
    bad("rule del id", "id");
    bad("rule del 7 8", "8");
    bad("rule frobnicate", "frobnicate");
    let e = parse_command(&words("rule add src 10.0.0.0/8 action drop")).unwrap_err();
    assert!(e.message().contains("missing 'prio'"), "{}", e.message());
    let e = parse_command(&words("rule add prio 1 src 10.0.0.0/8")).unwrap_err();
    assert!(e.message().contains("missing 'action'"), "{}", e.message());
    let e = parse_command(&words("rule add prio 1 action")).unwrap_err();
    assert!(e.message().contains("missing 'action'"), "{}", e.message());
    let e = parse_command(&words("rule replace prio 1 action drop")).unwrap_err();
    assert!(e.message().contains("missing 'id'"), "{}", e.message());
    let e = parse_command(&words("rule add prio 1 police rate 1mbit burst 1k")).unwrap_err();
    assert_eq!(e.word(), Some("police"));
}

#[test]
fn nexthops_groups_neighbours_addresses() {
    assert_eq!(
        chg("nexthop add 1 via 10.0.1.2 dev p1"),
        Change::NexthopAdd(Nexthop {
            id: 1,
            via: Some(ip("10.0.1.2")),
            dev: "p1".into()
        })
    );
    assert_eq!(
        chg("nh replace id 1 dev p2"),
        Change::NexthopReplace(Nexthop {
            id: 1,
            via: None,
            dev: "p2".into()
        })
    );
    assert_eq!(chg("nexthop del id 1"), Change::NexthopDel { id: 1 });
    assert_eq!(cmd("nexthop"), Request::NexthopShow { id: None });
    assert_eq!(
        chg("group add 10 members 1 2:3"),
        Change::GroupAdd(Group {
            id: 10,
            members: vec![
                GroupMember { id: 1, weight: 1 },
                GroupMember { id: 2, weight: 3 }
            ]
        })
    );
    assert_eq!(
        chg("group add id 10 1,2:3"),
        chg("group add 10 members 1 2:3")
    );
    assert_eq!(chg("nhg del 10"), Change::GroupDel { id: 10 });
    assert_eq!(cmd("group show 10"), Request::GroupShow { id: Some(10) });
    assert_eq!(
        chg("neigh add 10.0.1.2 lladdr 02:00:00:00:01:02 dev p1"),
        Change::NeighAdd(Neigh {
            addr: ip("10.0.1.2"),
            lladdr: "02:00:00:00:01:02".parse().unwrap(),
            dev: "p1".into()
        })
    );
    assert_eq!(
        chg("n replace 10.0.1.2 dev p1 lladdr 02:00:00:00:01:03"),
        Change::NeighReplace(Neigh {
            addr: ip("10.0.1.2"),
            lladdr: "02:00:00:00:01:03".parse().unwrap(),
            dev: "p1".into()
        })
    );
    assert_eq!(
        chg("neigh del 10.0.1.2 dev p1"),
        Change::NeighDel {
            addr: ip("10.0.1.2"),
            dev: "p1".into()
        }
    );
    assert_eq!(
        cmd("neigh show dev p1"),
        Request::NeighShow {
            dev: Some("p1".into())
        }
    );
    assert_eq!(cmd("neigh flush"), Request::NeighFlush { dev: None });
    assert_eq!(
        cmd("neigh flush dev p1"),
        Request::NeighFlush {
            dev: Some("p1".into())
        }
    );
    let down = chg("port set p1 down");
    assert_eq!(
        down,
        Change::PortSet {
            dev: "p1".into(),
            up: false
        }
    );
    assert_eq!(
        down.to_string(),
        "port set p1 down",
        "format is the inverse"
    );
    assert_eq!(
        chg(&chg("port set p1 up").to_string()),
        chg("port set p1 up")
    );
    bad("port set p1 sideways", "sideways");
    assert!(parse_command(&words("port set p1")).is_err());
    assert_eq!(
        chg("address add 10.0.1.1/24 dev p1"),
        Change::AddressAdd(Address {
            addr: net("10.0.1.1/24"),
            dev: "p1".into()
        })
    );
    assert_eq!(
        chg("addr del 2001:db8::1 dev p1"),
        Change::AddressDel(Address {
            addr: net("2001:db8::1/128"),
            dev: "p1".into()
        })
    );
    assert_eq!(cmd("a"), Request::AddressShow { dev: None });
}

#[test]
fn bad_nexthops_groups_neighbours_addresses() {
    bad("nexthop add x dev p1", "x");
    bad("nexthop add 1 gateway 10.0.1.2 dev p1", "gateway");
    bad("group add 10 members 1 1:2", "1:2");
    bad("group add 10 members 1:0", "1:0");
    bad("group add 10 members 1:x", "1:x");
    bad(
        "neigh add 10.0.1.2 lladdr 02:00:00:00:01 dev p1",
        "02:00:00:00:01",
    );
    missing("neigh add 10.0.1.2 lladdr 02:00:00:00:01:02", "'dev'");
    missing("neigh add 10.0.1.2 dev p1", "'lladdr'");
    bad(
        "neigh del 10.0.1.2 lladdr 02:00:00:00:01:02 dev p1",
        "lladdr",
    );
    bad("neigh add 10.0.1 lladdr 02:00:00:00:01:02 dev p1", "10.0.1");
    missing("address add 10.0.1.1/24", "'dev'");
    bad("address add 10.0.1.1/40 dev p1", "10.0.1.1/40");
    bad("address replace 10.0.1.1/24 dev p1", "replace");
    let e = parse_command(&words("group add 10")).unwrap_err();
    assert!(e.message().contains("missing members"), "{}", e.message());
    let e = parse_command(&words("nexthop add 1 via 10.0.1.2")).unwrap_err();
    assert!(e.message().contains("missing 'dev'"), "{}", e.message());
}

#[test]
fn other_commands() {
    assert_eq!(cmd("stats"), Request::Stats {});
    assert_eq!(cmd("status"), Request::Status {});
    assert_eq!(cmd("port"), Request::PortShow { port: None });
    assert_eq!(
        cmd("port show p1"),
        Request::PortShow {
            port: Some("p1".into())
        }
    );
    assert_eq!(cmd("p stats"), Request::PortStats { port: None });
    assert_eq!(
        cmd("port xstats p2"),
        Request::PortXstats {
            port: Some("p2".into())
        }
    );
    assert_eq!(
        cmd("config save /tmp/x.conf"),
        Request::ConfigSave {
            path: "/tmp/x.conf".into()
        }
    );
    assert_eq!(
        cmd("watch"),
        Request::Watch {
            interval_ms: 1000,
            count: None
        }
    );
    assert_eq!(
        cmd("watch interval 500ms count 3"),
        Request::Watch {
            interval_ms: 500,
            count: Some(3)
        }
    );
    assert_eq!(
        cmd("watch interval 2"),
        Request::Watch {
            interval_ms: 2000,
            count: None
        }
    );
    bad("watch interval 5ms", "5ms");
    bad("watch interval fast", "fast");
    bad("stats now", "now");
    bad("status x", "x");
    bad("config load x", "load");
    bad("port show p1 p2", "p2");
    assert_eq!(
        parse_command(&words("help route")).unwrap(),
        Command::Help(Some("route".into()))
    );
    assert_eq!(
        parse_command(&words("rule help")).unwrap(),
        Command::Help(Some("rule".into()))
    );
    assert_eq!(parse_command(&words("help")).unwrap(), Command::Help(None));
    assert!(usage(Some("route")).unwrap().contains("route get"));
    assert!(!usage(Some("route")).unwrap().contains("rule add"));
    assert!(usage(Some("rule")).unwrap().contains("police"));
    assert!(usage(Some("batch")).unwrap().starts_with("Batch files"));
    assert!(usage(Some("nope")).is_none());
    assert_eq!(usage(None), Some(USAGE));
}

#[test]
fn queries_are_not_batch_lines() {
    let e = parse_change(&words("route show")).unwrap_err();
    assert!(e.message().contains("not a change"), "{}", e.message());
    assert_eq!(e.word(), Some("route"));
}

#[test]
fn canonical_text_round_trips() {
    for line in [
        "rule add prio 10 src 10.0.0.0/8 proto tcp dport 80-90 action drop",
        "rule add id 7 prio 1 src 2001:db8::/32 dst 2001:db8:1::/48 proto udp sport 1024-65535 \
         dport 53 iif p1 vlan 100 dscp 46 tcp_flags 0x02/0x12 action count mirror p3 \
         police rate 10mbit burst 65536 set-dscp 34 mark 16 table 5 redirect p2",
        "rule add prio 3 proto 99 action police rate 1500pps burst 10 nexthop 4",
        "rule add prio 3 proto 4/0x0f action police rate 1234567bit burst 1 permit",
        "rule add prio 0 action drop",
        "rule add prio 10 action count continue",
        "rule add prio 10 dport 22 action mirror p3 set-dscp 0 mark 1 continue",
        "rule replace id 7 prio 3 tcp_flags 0x12 action permit",
        "rule add prio 3 tcp_flags 0x100/0x100 action drop",
        "rule add prio 3 tcp_flags 0x12/0xff action drop",
        "rule add prio 3 tcp_flags 0x102/0xf02 action drop",
        "rule add prio 3 tcp_flags 0xfff action drop",
        "rule del id 7",
        "rule flush",
        "route add 10.0.0.0/8 table 5 via 10.0.1.2 dev p1",
        "route add 0.0.0.0/0 via 10.0.0.1",
        "route add ::/0 dev p2",
        "route add 192.0.2.0/24 blackhole",
        "route replace 2001:db8::/32 nexthop-group 10",
        "route add 10.0.0.0/8 table 1 nhid 3",
        "route add 10.0.0.0/8 reject",
        "route add 10.0.1.1/32 local",
        "route del 10.0.0.0/8",
        "route del 10.0.0.0/8 table 2 via 10.0.1.2 dev p1",
        "nexthop add id 1 via 10.0.1.2 dev p1",
        "nexthop replace id 1 dev p2",
        "nexthop del id 1",
        "group add id 10 members 1 2:3",
        "group replace id 10 members 2",
        "group del id 10",
        "neigh add 10.0.1.2 lladdr 02:00:00:00:01:02 dev p1",
        "neigh replace fe80::1 lladdr 02:00:00:00:01:03 dev p1",
        "neigh del 10.0.1.2 dev p1",
        "address add 10.0.1.1/24 dev p1",
        "address del 2001:db8::1/64 dev p1",
    ] {
        let line = line.split_ascii_whitespace().collect::<Vec<_>>().join(" ");
        let c = chg(&line);
        assert_eq!(c.to_string(), line, "canonical form");
        assert_eq!(chg(&c.to_string()), c);
    }
}

#[test]
fn batch_files() {
    let text = "\
# full view, part 1
route add 10.0.0.0/8 via 10.0.1.2 dev p1

   route add 10.1.0.0/16 blackhole   # trailing comment
rule flush\r
rule add prio 1 dport 22 action drop
";
    let b = parse_batch(text).unwrap();
    assert_eq!(b.changes.len(), 4);
    assert_eq!(b.lines, vec![2, 4, 5, 6]);
    assert_eq!(b.line_of(2), Some(4));
    assert_eq!(b.line_of(0), None);
    assert_eq!(b.line_of(5), None);
    assert_eq!(b.changes[2], Change::RuleFlush {});
    assert!(parse_batch("").unwrap().changes.is_empty());
    assert!(parse_batch("# nothing\n\n").unwrap().changes.is_empty());
}

#[test]
fn batch_error_on_the_last_line_names_it() {
    let mut text = String::new();
    for i in 0..1000u32 {
        text.push_str(&format!(
            "route add 10.{}.{}.0/24 via 10.0.1.2 dev p1\n",
            i >> 8,
            i & 255
        ));
    }
    text.push_str("route add 10.250.0.0/16 vai 10.0.1.2 dev p1\n");
    let e = parse_batch(&text).unwrap_err();
    assert_eq!(e.line, 1001);
    assert_eq!(e.error.word(), Some("vai"));
    assert!(
        e.to_string()
            .starts_with("line 1001: route add: unknown keyword 'vai'"),
        "{e}"
    );
    let e = parse_batch("route add 10.0.0.0/8 blackhole\nroute show\n").unwrap_err();
    assert_eq!(e.line, 2);
    let e = parse_batch("fwdctl route add 10.0.0.0/8 blackhole\n").unwrap_err();
    assert!(e.to_string().contains("omit the leading 'fwdctl'"), "{e}");
}

/// xorshift64*: deterministic pseudo-random words for the no-panic test.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }
}

#[test]
fn random_word_salad_never_panics() {
    const WORDS: &[&str] = &[
        "rule",
        "route",
        "nexthop",
        "group",
        "neigh",
        "address",
        "port",
        "add",
        "del",
        "replace",
        "show",
        "get",
        "flush",
        "counters",
        "id",
        "prio",
        "src",
        "dst",
        "proto",
        "sport",
        "dport",
        "iif",
        "vlan",
        "dscp",
        "tcp_flags",
        "action",
        "drop",
        "permit",
        "count",
        "redirect",
        "mirror",
        "nexthop",
        "table",
        "police",
        "rate",
        "burst",
        "set-dscp",
        "mark",
        "via",
        "dev",
        "nhid",
        "nexthop-group",
        "blackhole",
        "reject",
        "local",
        "lladdr",
        "members",
        "10.0.0.0/8",
        "10.0.0.1/8",
        "2001:db8::/32",
        "10.0.1.2",
        "fe80::1",
        "p1",
        "0",
        "1",
        "7",
        "65535",
        "65536",
        "4096",
        "80-90",
        "90-80",
        "tcp",
        "syn/syn,ack",
        "0x12",
        "10mbit",
        "64k",
        "1000pps",
        "02:00:00:00:01:02",
        "1:3",
        "default",
        "-",
        "/",
        "::",
        "0x",
        "ef",
        "af11",
        "#",
        "é",
        "watch",
        "interval",
        "count",
        "stats",
        "status",
        "config",
        "save",
        "help",
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut parsed = 0;
    for _ in 0..20_000 {
        let n = 1 + rng.next() % 12;
        let mut w: Vec<&str> = (0..n).map(|_| rng.pick(WORDS)).collect();
        if rng.coin() {
            w.insert(0, rng.pick(&["add", "del", "replace"]));
            w.insert(
                0,
                rng.pick(&["rule", "route", "nexthop", "group", "neigh", "address"]),
            );
        }
        if let Ok(c) = parse_change(&w) {
            parsed += 1;
            let text = c.to_string();
            let again = parse_change(&text.split_ascii_whitespace().collect::<Vec<_>>());
            assert_eq!(again.as_ref(), Ok(&c), "{w:?} -> {text}");
        }
        let _ = parse_command(&w);
    }
    assert!(parsed > 0);
}

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn coin(&mut self) -> bool {
        self.next() & 1 == 0
    }

    fn prefix(&mut self, v6: bool) -> IpNet {
        let (addr, width) = if v6 {
            (
                IpAddr::from(std::net::Ipv6Addr::from(
                    u128::from(self.next()) << 64 | u128::from(self.next()),
                )),
                128,
            )
        } else {
            (IpAddr::from((self.next() as u32).to_be_bytes()), 32)
        };
        let len = self.below(width + 1) as u8;
        IpNet::new(addr, len).unwrap().network()
    }

    fn addr(&mut self) -> IpAddr {
        if self.coin() {
            IpAddr::from((self.next() as u32).to_be_bytes())
        } else {
            IpAddr::from(std::net::Ipv6Addr::from(u128::from(self.next()) << 64))
        }
    }

    fn name(&mut self) -> String {
        format!("p{}", self.below(4))
    }

    fn masked(&mut self) -> Masked {
        let mask = self.next() as u8;
        Masked {
            value: self.next() as u8 & mask,
            mask,
        }
    }

    fn range(&mut self) -> PortRange {
        let a = self.next() as u16;
        let b = self.next() as u16;
        PortRange {
            lo: a.min(b),
            hi: a.max(b),
        }
    }

    fn target(&mut self) -> RouteTarget {
        match self.below(6) {
            0 => RouteTarget::Gateway {
                via: Some(self.addr()),
                dev: self.coin().then(|| self.name()),
            },
            1 => RouteTarget::Gateway {
                via: None,
                dev: Some(self.name()),
            },
            2 => RouteTarget::Nhid(self.next() as u32),
            3 => RouteTarget::Group(self.next() as u32),
            4 => RouteTarget::Blackhole,
            _ => [RouteTarget::Reject, RouteTarget::Local][self.below(2) as usize].clone(),
        }
    }

    fn action(&mut self) -> Action {
        match self.below(10) {
            0 => Action::Permit,
            1 => Action::Drop,
            2 => Action::Count,
            3 => Action::Redirect(self.name()),
            4 => Action::Mirror(self.name()),
            5 => Action::Nexthop(self.next() as u32),
            6 => Action::Table(self.next() as u32),
            7 => Action::Police(Police {
                rate: if self.coin() {
                    Rate::Bps(
                        1 + self.below(1 << 40) * [1, 1000, 1_000_000][self.below(3) as usize],
                    )
                } else {
                    Rate::Pps(1 + self.below(1 << 30))
                },
                burst: 1 + self.below(u64::from(u32::MAX)) as u32,
            }),
            8 => Action::SetDscp(self.below(64) as u8),
            _ => Action::Mark(self.next() as u32),
        }
    }

    fn rule(&mut self, id: bool) -> Rule {
        let v6 = self.coin();
        let mut m = RuleMatch::default();
        if self.coin() {
            m.src = Some(self.prefix(v6));
        }
        if self.coin() {
            m.dst = Some(self.prefix(v6));
        }
        if self.coin() {
            m.proto = Some(self.masked());
        }
        if self.coin() {
            m.sport = Some(self.range());
        }
        if self.coin() {
            m.dport = Some(self.range());
        }
        if self.coin() {
            m.in_port = Some(self.name());
        }
        if self.coin() {
            m.vlan = Some(self.below(4096) as u16);
        }
        if self.coin() {
            m.dscp = Some(self.below(64) as u8);
        }
        if self.coin() {
            let mask = self.next() as u16 & 0xfff;
            m.tcp_flags = Some(Masked16 {
                value: self.next() as u16 & mask,
                mask,
            });
        }
        Rule {
            id: (id || self.coin()).then(|| self.next() as u32),
            priority: self.next() as u32,
            matches: m,
            actions: (0..1 + self.below(4)).map(|_| self.action()).collect(),
        }
    }

    fn change(&mut self) -> Change {
        let v6 = self.coin();
        match self.below(19) {
            0 => Change::RuleAdd(Box::new(self.rule(false))),
            1 => Change::RuleReplace(Box::new(self.rule(true))),
            2 => Change::RuleDel {
                id: self.next() as u32,
            },
            3 => Change::RuleFlush {},
            18 => Change::RouteFlush(RouteFilter {
                table: self.coin().then(|| self.next() as u32),
                family: self
                    .coin()
                    .then_some(if v6 { Family::Ipv6 } else { Family::Ipv4 }),
                within: self.coin().then(|| self.prefix(v6)),
                proto: self
                    .coin()
                    .then(|| ["static", "bgp", "kernel", "77"][self.below(4) as usize].to_string()),
            }),
            4 | 5 => Change::RouteAdd(Route {
                linkdown: false,
                proto: None,
                prefix: self.prefix(v6),
                table: self.below(3) as u32,
                target: self.target(),
            }),
            6 => Change::RouteReplace(Route {
                linkdown: false,
                proto: None,
                prefix: self.prefix(v6),
                table: self.next() as u32,
                target: self.target(),
            }),
            7 => Change::RouteDel(RouteDel {
                prefix: self.prefix(v6),
                table: self.below(2) as u32,
                target: self.coin().then(|| self.target()),
            }),
            8 | 9 => {
                let n = Nexthop {
                    id: self.next() as u32,
                    via: self.coin().then(|| self.addr()),
                    dev: self.name(),
                };
                if self.coin() {
                    Change::NexthopAdd(n)
                } else {
                    Change::NexthopReplace(n)
                }
            }
            10 => Change::NexthopDel {
                id: self.next() as u32,
            },
            11 => {
                let g = Group {
                    id: self.next() as u32,
                    members: (0..1 + self.below(4))
                        .map(|i| GroupMember {
                            id: i as u32 * 1000 + self.below(1000) as u32,
                            weight: 1 + self.below(65535) as u32,
                        })
                        .collect(),
                };
                if self.coin() {
                    Change::GroupAdd(g)
                } else {
                    Change::GroupReplace(g)
                }
            }
            12 => Change::GroupDel {
                id: self.next() as u32,
            },
            13 | 14 => {
                let n = Neigh {
                    addr: self.addr(),
                    lladdr: Mac((self.next().to_be_bytes())[..6].try_into().unwrap()),
                    dev: self.name(),
                };
                if self.coin() {
                    Change::NeighAdd(n)
                } else {
                    Change::NeighReplace(n)
                }
            }
            15 => Change::NeighDel {
                addr: self.addr(),
                dev: self.name(),
            },
            _ => {
                let a = self.addr();
                let width = if a.is_ipv4() { 32 } else { 128 };
                let a = Address {
                    addr: IpNet::new(a, self.below(width + 1) as u8).unwrap(),
                    dev: self.name(),
                };
                if self.coin() {
                    Change::AddressAdd(a)
                } else {
                    Change::AddressDel(a)
                }
            }
        }
    }
}

/// Property: every valid change prints as a line that parses back to it,
/// and survives the JSON codec too.
#[test]
fn random_changes_round_trip_through_text_and_json() {
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    let mut text = String::new();
    let mut all = Vec::new();
    for _ in 0..5_000 {
        let c = rng.change();
        let line = c.to_string();
        let back = parse_change(&line.split_ascii_whitespace().collect::<Vec<_>>())
            .unwrap_or_else(|e| panic!("{c:?} printed as {line:?}: {e}"));
        assert_eq!(back, c, "{line}");
        let json = crate::encode(&c).unwrap();
        assert_eq!(
            crate::decode::<Change>(json.as_bytes()).unwrap(),
            c,
            "{json}"
        );
        text.push_str(&line);
        text.push('\n');
        all.push(c);
    }
    // ... and a whole saved configuration reloads as the same batch.
    assert_eq!(parse_batch(&text).unwrap().changes, all);
}

#[test]
fn multipath_routes_parse_print_and_parse_back() {
    let c = chg(
        "route add 10.0.0.0/8 nexthop via 10.0.1.2 dev p1 nexthop via 10.0.2.2 weight 3 table 2",
    );
    let want = Change::RouteAdd(Route {
        linkdown: false,
        proto: None,
        prefix: net("10.0.0.0/8"),
        table: 2,
        target: RouteTarget::Multipath(vec![
            NextHopSpec {
                via: Some("10.0.1.2".parse().unwrap()),
                dev: Some("p1".into()),
                weight: 1,
            },
            NextHopSpec {
                via: Some("10.0.2.2".parse().unwrap()),
                dev: None,
                weight: 3,
            },
        ]),
    });
    assert_eq!(c, want);
    let line = c.to_string();
    assert_eq!(
        line,
        "route add 10.0.0.0/8 table 2 nexthop via 10.0.1.2 dev p1 nexthop via 10.0.2.2 weight 3"
    );
    assert_eq!(chg(&line), want);
    // One path of weight 1 is a plain gateway.
    assert_eq!(
        chg("route replace 10.0.0.0/8 nexthop dev p1"),
        Change::RouteReplace(Route {
            linkdown: false,
            proto: None,
            prefix: net("10.0.0.0/8"),
            table: 0,
            target: RouteTarget::Gateway {
                via: None,
                dev: Some("p1".into()),
            },
        })
    );
    missing(
        "route add 10.0.0.0/8 nexthop weight 2",
        "via or dev after nexthop",
    );
    bad("route add 10.0.0.0/8 nexthop via 10.0.1.2 weight 0", "0");
    bad(
        "route add 10.0.0.0/8 nexthop via 10.0.1.2 weight 256",
        "256",
    );
    bad(
        "route add 10.0.0.0/8 via 10.0.0.1 nexthop via 10.0.1.2",
        "via/dev",
    );
    bad(
        "route add 10.0.0.0/8 blackhole nexthop via 10.0.1.2",
        "blackhole",
    );
}

#[test]
fn route_dumps_name_their_protocol_unless_static() {
    let mut r = Route {
        linkdown: false,
        proto: Some("bgp".into()),
        prefix: net("10.0.0.0/8"),
        table: 0,
        target: RouteTarget::Blackhole,
    };
    assert_eq!(r.to_string(), "10.0.0.0/8 blackhole proto bgp");
    r.proto = Some("static".into());
    assert_eq!(r.to_string(), "10.0.0.0/8 blackhole");
    assert_eq!(cmd("fpm"), Request::FpmShow {});
    assert_eq!(cmd("fpm show"), Request::FpmShow {});
}

#[test]
fn every_object_and_verb_of_the_grammar_is_the_parsers() {
    for o in super::grammar::OBJECTS {
        // A bare object means show, where there is one.
        let mut lines = Vec::new();
        if o.verbs.is_empty() || o.verbs.contains(&"show") {
            lines.push(vec![o.name]);
        }
        lines.extend(o.verbs.iter().map(|v| vec![o.name, *v]));
        for w in lines {
            if let Err(e) = parse_command(&w) {
                let m = e.message();
                assert!(
                    !m.contains("unknown command") && !m.contains("unknown verb"),
                    "{w:?}: {m}"
                );
            }
        }
    }
    assert!(bad_verb("route frobnicate"));
}

fn bad_verb(s: &str) -> bool {
    parse_command(&words(s)).is_err_and(|e| e.message().contains("unknown verb"))
}

#[test]
fn trace_takes_a_count_a_port_and_the_rules_match_words() {
    assert_eq!(
        cmd("trace 100"),
        Request::Trace {
            count: 100,
            port: None,
            filter: RuleMatch::default(),
        }
    );
    assert_eq!(
        cmd("trace 5 port p0 dst 10.1.0.0/16 proto udp dport 53"),
        Request::Trace {
            count: 5,
            port: Some("p0".into()),
            filter: RuleMatch {
                dst: Some("10.1.0.0/16".parse().unwrap()),
                proto: Some(Masked {
                    value: 17,
                    mask: 0xff
                }),
                dport: Some(PortRange { lo: 53, hi: 53 }),
                ..RuleMatch::default()
            },
        }
    );
    bad("trace 10001", "10001");
    bad("trace 0", "0");
    bad("trace 5 action drop", "action");
    bad("trace 5 port p0 iif p1", "iif");
    bad("trace 5 dst 10.0.0.1/8", "10.0.0.1/8");
    bad("trace 5 src 10.0.0.0/8 dst ::/0", "dst");
    missing("trace", "packet count");
}

#[test]
fn capture_needs_a_port_a_count_and_a_file() {
    let c = parse_command(&words(
        "capture port p1 out src 10.0.0.0/8 snaplen 64 rate 50pps -c 10 -w x.pcap",
    ))
    .unwrap();
    assert_eq!(
        c,
        Command::Capture {
            request: Request::Capture {
                port: "p1".into(),
                direction: Direction::Out,
                filter: RuleMatch {
                    src: Some("10.0.0.0/8".parse().unwrap()),
                    ..RuleMatch::default()
                },
                count: 10,
                snaplen: Some(64),
                rate: Some(50),
            },
            file: "x.pcap".into(),
        }
    );
    let Ok(Command::Capture { request, .. }) = parse_command(&words("capture port p0 -c 1 -w -"))
    else {
        panic!()
    };
    assert!(matches!(
        request,
        Request::Capture {
            direction: Direction::In,
            snaplen: None,
            rate: None,
            ..
        }
    ));
    missing("capture port p0 -c 1", "'-w FILE'");
    missing("capture port p0 -w f", "'-c N'");
    missing("capture -c 1 -w f", "'port PORT'");
    bad("capture port p0 -c 1 -w f snaplen 4096", "4096");
    bad("capture port p0 -c 0 -w f", "0");
    bad("capture port p0 -c 1 -w f rate 1000000", "1000000");
    bad("capture port p0 in out -c 1 -w f", "out");
    bad("capture port p0 iif p1 -c 1 -w f", "iif");
    // Not a change: a batch cannot hold it.
    assert!(parse_change(&words("capture port p0 -c 1 -w f")).is_err());
}
