//! Round trips of every route shape zebra sends, bytes laid out by hand after
//! FRR 8.4's `netlink_route_multipath_msg_encode` (so the crate is not only
//! checked against itself), malformed streams, and property tests: random
//! updates in random chunk splits, random and mutated bytes never panicking.
// The codec's no-panic lints are for the decoder, not for its tests.
#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use super::*;
use proptest::prelude::*;

// ---------------------------------------------------------------- helpers

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn path(gw: Option<&str>, ifindex: Option<u32>, weight: u32) -> Path {
    Path {
        gateway: gw.map(ip),
        ifindex,
        weight,
        onlink: false,
    }
}

fn route(dst: &str, len: u8, paths: Vec<Path>) -> RouteUpdate {
    RouteUpdate {
        op: RouteOp::Add,
        table: 254,
        dst: ip(dst),
        len,
        proto: 186,
        kind: RouteKind::Unicast,
        metric: Some(ZEBRA_METRIC),
        paths,
        nh_id: None,
    }
}

/// Every message of the buffered stream, up to `Ok(None)` or a fatal error.
fn drain(dec: &mut Decoder) -> Vec<Result<FpmMsg, DecodeError>> {
    let mut out = Vec::new();
    // Each call that is not `Ok(None)` or fatal consumes at least 4 bytes.
    for _ in 0..=dec.buffered() {
        match dec.next() {
            Ok(None) => return out,
            Err(e) if e.is_fatal() => {
                out.push(Err(e));
                return out;
            }
            r => out.push(r.map(|m| m.unwrap())),
        }
    }
    panic!("decoder did not make progress");
}

fn decode_all(bytes: &[u8]) -> Vec<Result<FpmMsg, DecodeError>> {
    let mut dec = Decoder::new();
    dec.feed(bytes);
    let out = drain(&mut dec);
    assert_eq!(dec.buffered(), 0, "stream fully consumed");
    out
}

fn routes(bytes: &[u8]) -> Vec<RouteUpdate> {
    decode_all(bytes)
        .into_iter()
        .map(|r| match r {
            Ok(FpmMsg::Route(u)) => u,
            other => panic!("expected a route, got {other:?}"),
        })
        .collect()
}

/// What zebra's encoding keeps of an update (see [`encode_frame`]).
fn normalize(mut u: RouteUpdate) -> RouteUpdate {
    let blackhole = matches!(
        u.kind,
        RouteKind::Blackhole | RouteKind::Unreachable | RouteKind::Prohibit
    );
    if u.op == RouteOp::Del {
        u.kind = RouteKind::Unspec;
        u.paths.clear();
        u.nh_id = None;
    } else if blackhole {
        u.paths.clear();
        u.nh_id = None;
    } else if u.nh_id.is_some() {
        u.paths.clear();
    } else if let [p] = u.paths.as_mut_slice() {
        p.weight = 1;
        if p.gateway.is_none() && p.ifindex.is_none() {
            u.paths.clear();
        }
    } else {
        for p in &mut u.paths {
            p.weight = p.weight.clamp(1, 256);
        }
    }
    u
}

fn round_trip(u: RouteUpdate) {
    let mut bytes = Vec::new();
    encode(&u, 7, &mut bytes).unwrap();
    assert_eq!(routes(&bytes), vec![normalize(u)]);
}

// ------------------------------------------------------- round trips, by kind

#[test]
fn fpm_round_trip_single_path_v4_and_v6() {
    round_trip(route(
        "10.1.0.0",
        16,
        vec![path(Some("192.0.2.1"), Some(3), 1)],
    ));
    round_trip(route(
        "2001:db8:1::",
        48,
        vec![path(Some("fe80::1"), Some(4), 1)],
    ));
}

#[test]
fn fpm_round_trip_connected_route_is_interface_only() {
    let mut u = route("192.0.2.0", 24, vec![path(None, Some(2), 1)]);
    u.proto = 2;
    round_trip(u);
}

#[test]
fn fpm_round_trip_multipath_keeps_weights() {
    round_trip(route(
        "10.2.0.0",
        16,
        vec![
            path(Some("192.0.2.1"), Some(3), 1),
            path(Some("192.0.2.2"), Some(4), 5),
            path(Some("198.51.100.9"), Some(7), 256),
        ],
    ));
    round_trip(route(
        "2001:db8:2::",
        64,
        vec![
            path(Some("fe80::1"), Some(3), 2),
            path(Some("fe80::2"), Some(3), 1),
        ],
    ));
}

#[test]
fn fpm_round_trip_blackhole_unreachable_prohibit() {
    for kind in [
        RouteKind::Blackhole,
        RouteKind::Unreachable,
        RouteKind::Prohibit,
    ] {
        for dst in ["203.0.113.0", "2001:db8:dead::"] {
            let mut u = route(dst, 24, vec![]);
            u.kind = kind;
            u.proto = 196;
            round_trip(u);
        }
    }
}

#[test]
fn fpm_round_trip_table_above_255_uses_rta_table() {
    let mut u = route("10.3.0.0", 16, vec![path(Some("192.0.2.1"), Some(3), 1)]);
    u.table = 1000;
    let mut bytes = Vec::new();
    encode(&u, 0, &mut bytes).unwrap();
    // rtm_table (FPM 4 + nlmsghdr 16 + 4) is RT_TABLE_UNSPEC.
    assert_eq!(bytes[24], 0);
    round_trip(u.clone());
    u.table = 255;
    round_trip(u);
}

#[test]
fn fpm_round_trip_delete_and_default_routes() {
    let mut del = route("10.4.0.0", 16, vec![path(Some("192.0.2.1"), Some(3), 1)]);
    del.op = RouteOp::Del;
    round_trip(del);
    round_trip(route(
        "0.0.0.0",
        0,
        vec![path(Some("192.0.2.1"), Some(3), 1)],
    ));
    round_trip(route("::", 0, vec![path(Some("fe80::1"), Some(3), 1)]));
}

#[test]
fn fpm_round_trip_next_hop_group_and_onlink() {
    let mut nhg = route("10.5.0.0", 16, vec![]);
    nhg.nh_id = Some(77);
    round_trip(nhg);
    let mut rfc5549 = route("10.6.0.0", 16, vec![path(Some("169.254.0.1"), Some(5), 1)]);
    rfc5549.paths[0].onlink = true;
    round_trip(rfc5549.clone());
    rfc5549.paths.push(Path {
        onlink: true,
        ..path(Some("169.254.0.1"), Some(6), 2)
    });
    round_trip(rfc5549);
}

#[test]
fn fpm_update_frame_holds_delete_then_add() {
    let add = route("10.7.0.0", 16, vec![path(Some("192.0.2.1"), Some(3), 1)]);
    let del = RouteUpdate {
        op: RouteOp::Del,
        ..add.clone()
    };
    let mut bytes = Vec::new();
    encode_frame(&[del.clone(), add.clone()], 1, &mut bytes).unwrap();
    assert_eq!(
        u16::from_be_bytes([bytes[2], bytes[3]]) as usize,
        bytes.len(),
        "one frame"
    );
    assert_eq!(routes(&bytes), vec![normalize(del), add]);
}

// ------------------------------------------- bytes as FRR 8.4 lays them out

/// Little builders for raw netlink, independent of the crate: host-endian
/// fields as in `<linux/netlink.h>` / `<linux/rtnetlink.h>`.
mod raw {
    pub const REQUEST: u16 = 0x1;
    pub const REPLACE: u16 = 0x100;
    pub const CREATE: u16 = 0x400;

    /// `struct rtattr` + payload, padded to 4.
    pub fn rta(kind: u16, data: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&((4 + data.len()) as u16).to_ne_bytes());
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(data);
        while v.len() % 4 != 0 {
            v.push(0);
        }
        v
    }

    pub fn rta32(kind: u16, value: u32) -> Vec<u8> {
        rta(kind, &value.to_ne_bytes())
    }

    /// `struct rtmsg`.
    pub fn rtmsg(family: u8, dst_len: u8, table: u8, proto: u8, kind: u8, flags: u32) -> Vec<u8> {
        let mut v = vec![family, dst_len, 0, 0, table, proto, 0, kind];
        v.extend_from_slice(&flags.to_ne_bytes());
        v
    }

    /// `struct rtnexthop` + its attributes.
    pub fn rtnh(flags: u8, hops: u8, ifindex: u32, attrs: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&((8 + attrs.len()) as u16).to_ne_bytes());
        v.push(flags);
        v.push(hops);
        v.extend_from_slice(&ifindex.to_ne_bytes());
        v.extend_from_slice(attrs);
        v
    }

    /// `struct nlmsghdr` + body.
    pub fn nlmsg(kind: u16, flags: u16, seq: u32, pid: u32, body: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&((16 + body.len()) as u32).to_ne_bytes());
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(&flags.to_ne_bytes());
        v.extend_from_slice(&seq.to_ne_bytes());
        v.extend_from_slice(&pid.to_ne_bytes());
        v.extend_from_slice(body);
        v
    }

    /// One FPM frame around netlink messages (`fpm_nl_enqueue`).
    pub fn fpm(msgs: &[&[u8]]) -> Vec<u8> {
        let body: Vec<u8> = msgs.concat();
        let mut v = vec![1, 1];
        v.extend_from_slice(&((4 + body.len()) as u16).to_be_bytes());
        v.extend_from_slice(&body);
        v
    }
}

const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;
const AF_BRIDGE: u8 = 7;
const AF_MPLS: u8 = 28;
const RTA_DST: u16 = 1;
const RTA_SRC: u16 = 2;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RTA_PRIORITY: u16 = 6;
const RTA_PREFSRC: u16 = 7;
const RTA_METRICS: u16 = 8;
const RTA_MULTIPATH: u16 = 9;
const RTA_FLOW: u16 = 11;
const RTA_TABLE: u16 = 15;
const RTA_VIA: u16 = 18;
const RTA_ENCAP_TYPE: u16 = 21;
const RTA_ENCAP: u16 = 22;
const RTA_NH_ID: u16 = 30;
const NLA_F_NESTED: u16 = 0x8000;
const PID: u32 = 0x0001_2345;

/// IPv4 single path, BGP, main table: `RTM_NEWROUTE`, flags
/// CREATE|REQUEST|REPLACE; RTA_DST, RTA_PRIORITY 20, RTA_GATEWAY, RTA_OIF,
/// then RTA_PREFSRC (set-src route-map) which we drop.
fn frr_v4_single(pid: u32, prefsrc: bool) -> Vec<u8> {
    let mut body = raw::rtmsg(AF_INET, 16, 254, 186, 1, 0);
    body.extend(raw::rta(RTA_DST, &[10, 1, 0, 0]));
    body.extend(raw::rta32(RTA_PRIORITY, 20));
    body.extend(raw::rta(RTA_GATEWAY, &[192, 0, 2, 1]));
    body.extend(raw::rta32(RTA_OIF, 3));
    if prefsrc {
        body.extend(raw::rta(RTA_PREFSRC, &[192, 0, 2, 254]));
    }
    let flags = raw::CREATE | raw::REQUEST | raw::REPLACE;
    raw::fpm(&[&raw::nlmsg(24, flags, 0, pid, &body)])
}

/// FRR 8.4's route update for an IPv6 OSPF route in VRF table 1000: one frame,
/// `RTM_DELROUTE` (rtm_type 0, no next hops) then `RTM_NEWROUTE` (no REPLACE
/// for IPv6) with a nested RTA_MULTIPATH of two weighted next hops.
fn frr_v6_update_multipath(pid: u32) -> Vec<u8> {
    let dst = "2001:db8:1::".parse::<Ipv6Addr>().unwrap().octets();
    let mut del = raw::rtmsg(AF_INET6, 48, 0, 188, 0, 0);
    del.extend(raw::rta(RTA_DST, &dst));
    del.extend(raw::rta32(RTA_PRIORITY, 20));
    del.extend(raw::rta32(RTA_TABLE, 1000));

    let fe80_1 = "fe80::1".parse::<Ipv6Addr>().unwrap().octets();
    let fe80_2 = "fe80::2".parse::<Ipv6Addr>().unwrap().octets();
    let mut mp = raw::rtnh(0, 0, 2, &raw::rta(RTA_GATEWAY, &fe80_1));
    mp.extend(raw::rtnh(0, 2, 3, &raw::rta(RTA_GATEWAY, &fe80_2)));
    let mut add = raw::rtmsg(AF_INET6, 48, 0, 188, 1, 0);
    add.extend(raw::rta(RTA_DST, &dst));
    add.extend(raw::rta32(RTA_PRIORITY, 20));
    add.extend(raw::rta32(RTA_TABLE, 1000));
    add.extend(raw::rta(RTA_MULTIPATH | NLA_F_NESTED, &mp));

    let flags = raw::CREATE | raw::REQUEST;
    raw::fpm(&[
        &raw::nlmsg(25, flags, 0, pid, &del),
        &raw::nlmsg(24, flags, 0, pid, &add),
    ])
}

fn v6_update_expected() -> (RouteUpdate, RouteUpdate) {
    let add = RouteUpdate {
        table: 1000,
        proto: 188,
        ..route(
            "2001:db8:1::",
            48,
            vec![
                path(Some("fe80::1"), Some(2), 1),
                path(Some("fe80::2"), Some(3), 3),
            ],
        )
    };
    let del = RouteUpdate {
        op: RouteOp::Del,
        kind: RouteKind::Unspec,
        paths: vec![],
        ..add.clone()
    };
    (del, add)
}

#[test]
fn fpm_frr_bytes_v4_single_path() {
    assert_eq!(
        routes(&frr_v4_single(PID, true)),
        vec![route(
            "10.1.0.0",
            16,
            vec![path(Some("192.0.2.1"), Some(3), 1)]
        )]
    );
}

#[test]
fn fpm_frr_bytes_v6_update_is_delete_then_multipath_add() {
    let (del, add) = v6_update_expected();
    assert_eq!(routes(&frr_v6_update_multipath(PID)), vec![del, add]);
}

#[test]
fn fpm_encoder_emits_frr_bytes() {
    // Zebra's port id is its netlink socket's; ours is 0. Everything else
    // must match byte for byte.
    let mut ours = Vec::new();
    encode(
        &route("10.1.0.0", 16, vec![path(Some("192.0.2.1"), Some(3), 1)]),
        0,
        &mut ours,
    )
    .unwrap();
    assert_eq!(ours, frr_v4_single(0, false));

    let (del, add) = v6_update_expected();
    let mut ours = Vec::new();
    encode_frame(&[del, add], 0, &mut ours).unwrap();
    // encode_frame numbers the messages; zebra leaves seq 0 in both.
    let mut theirs = frr_v6_update_multipath(0);
    let second = 4 + u32::from_ne_bytes(theirs[4..8].try_into().unwrap()) as usize;
    theirs[second + 8..second + 12].copy_from_slice(&1u32.to_ne_bytes());
    assert_eq!(ours, theirs);
}

#[test]
fn fpm_frr_bytes_blackholes_nhg_and_rfc5549() {
    let mut stream = Vec::new();
    let flags = raw::CREATE | raw::REQUEST | raw::REPLACE;
    // `ip route 203.0.113.0/24 reject` from staticd, with an MTU: rtm_type
    // unreachable, RTA_METRICS, no next hop.
    let mut body = raw::rtmsg(AF_INET, 24, 254, 196, 7, 0);
    body.extend(raw::rta(RTA_DST, &[203, 0, 113, 0]));
    body.extend(raw::rta32(RTA_PRIORITY, 20));
    body.extend(raw::rta(RTA_METRICS | NLA_F_NESTED, &raw::rta32(2, 1400)));
    stream.extend(raw::fpm(&[&raw::nlmsg(24, flags, 0, PID, &body)]));
    // With next-hop groups: the group object first (RTM_NEWNEXTHOP, struct
    // nhmsg + NHA_ID + NHA_GATEWAY + NHA_OIF), then the route naming it.
    let mut nh = vec![AF_INET, 0, 186, 0, 0, 0, 0, 0];
    nh.extend(raw::rta32(1, 77));
    nh.extend(raw::rta(6, &[192, 0, 2, 1]));
    nh.extend(raw::rta32(5, 3));
    stream.extend(raw::fpm(&[&raw::nlmsg(104, flags, 0, PID, &nh)]));
    let mut body = raw::rtmsg(AF_INET, 24, 254, 186, 1, 0);
    body.extend(raw::rta(RTA_DST, &[198, 51, 100, 0]));
    body.extend(raw::rta32(RTA_PRIORITY, 20));
    body.extend(raw::rta32(RTA_NH_ID, 77));
    stream.extend(raw::fpm(&[&raw::nlmsg(24, flags, 0, PID, &body)]));
    // IPv4 over an IPv6 next hop: 169.254.0.1, RTNH_F_ONLINK in rtm_flags,
    // a route tag as RTA_FLOW.
    let mut body = raw::rtmsg(AF_INET, 16, 254, 186, 1, 4);
    body.extend(raw::rta(RTA_DST, &[10, 9, 0, 0]));
    body.extend(raw::rta32(RTA_PRIORITY, 20));
    body.extend(raw::rta32(RTA_FLOW, 42));
    body.extend(raw::rta(RTA_GATEWAY, &[169, 254, 0, 1]));
    body.extend(raw::rta32(RTA_OIF, 5));
    stream.extend(raw::fpm(&[&raw::nlmsg(24, flags, 0, PID, &body)]));
    // EVPN remote MAC (RTM_NEWNEIGH, AF_BRIDGE) and an MPLS LSP (AF_MPLS
    // route with RTA_VIA): not ours.
    let mut ndm = vec![AF_BRIDGE, 0, 0, 0];
    ndm.extend(7i32.to_ne_bytes());
    ndm.extend(0x80u16.to_ne_bytes());
    ndm.extend([0x02, 1]);
    ndm.extend(raw::rta(2, &[0x02, 0, 0, 0, 0, 1]));
    stream.extend(raw::fpm(&[&raw::nlmsg(
        28,
        raw::CREATE | raw::REQUEST,
        0,
        PID,
        &ndm,
    )]));
    let mut lsp = raw::rtmsg(AF_MPLS, 20, 254, 193, 1, 0);
    lsp.extend(raw::rta(RTA_DST, &((16000u32 << 12) | 0x100).to_be_bytes()));
    lsp.extend(raw::rta(RTA_VIA, &[AF_INET, 0, 192, 0, 2, 1]));
    lsp.extend(raw::rta32(RTA_OIF, 3));
    stream.extend(raw::fpm(&[&raw::nlmsg(24, flags, 0, PID, &lsp)]));

    let got = decode_all(&stream);
    let unreachable = RouteUpdate {
        proto: 196,
        kind: RouteKind::Unreachable,
        ..route("203.0.113.0", 24, vec![])
    };
    let nhg = RouteUpdate {
        nh_id: Some(77),
        ..route("198.51.100.0", 24, vec![])
    };
    let rfc5549 = route(
        "10.9.0.0",
        16,
        vec![Path {
            onlink: true,
            ..path(Some("169.254.0.1"), Some(5), 1)
        }],
    );
    assert_eq!(
        got,
        vec![
            Ok(FpmMsg::Route(unreachable)),
            Ok(FpmMsg::Ignored {
                nl_type: RTM_NEWNEXTHOP
            }),
            Ok(FpmMsg::Route(nhg)),
            Ok(FpmMsg::Route(rfc5549)),
            Ok(FpmMsg::Ignored {
                nl_type: RTM_NEWNEIGH
            }),
            Ok(FpmMsg::Ignored {
                nl_type: RTM_NEWROUTE
            }),
        ]
    );
}

#[test]
fn fpm_default_route_without_rta_dst() {
    // zebra always sends RTA_DST; a bare default route is still understood.
    let mut body = raw::rtmsg(AF_INET6, 0, 254, 186, 1, 0);
    body.extend(raw::rta(
        RTA_GATEWAY,
        &"fe80::1".parse::<Ipv6Addr>().unwrap().octets(),
    ));
    body.extend(raw::rta32(RTA_OIF, 2));
    let got = routes(&raw::fpm(&[&raw::nlmsg(
        24,
        raw::CREATE | raw::REQUEST,
        0,
        PID,
        &body,
    )]));
    let mut want = route("::", 0, vec![path(Some("fe80::1"), Some(2), 1)]);
    want.metric = None;
    assert_eq!(got, vec![want]);
}

// ------------------------------------------------------------ malformed input

fn unsupported_what(r: &Result<FpmMsg, DecodeError>) -> &'static str {
    match r {
        Err(DecodeError::Unsupported {
            what,
            dst,
            len,
            table,
            op,
        }) => {
            assert_eq!(
                (*dst, *len, *table, *op),
                (ip("10.8.0.0"), 16, 254, RouteOp::Add)
            );
            what
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

#[test]
fn fpm_truncated_frames_wait_for_more_bytes() {
    let stream = frr_v6_update_multipath(PID);
    for cut in 0..stream.len() {
        let mut dec = Decoder::new();
        dec.feed(&stream[..cut]);
        assert_eq!(dec.next(), Ok(None), "cut at {cut}");
        assert_eq!(dec.buffered(), cut);
        dec.feed(&stream[cut..]);
        let (del, add) = v6_update_expected();
        assert_eq!(
            drain(&mut dec),
            vec![Ok(FpmMsg::Route(del)), Ok(FpmMsg::Route(add))]
        );
        assert_eq!(dec.buffered(), 0);
    }
}

#[test]
fn fpm_bad_header_breaks_the_stream_for_good() {
    let good = frr_v4_single(PID, false);
    for (header, want) in [
        ([2u8, 1, 0, 40], DecodeError::Version(2)),
        (
            [1, 1, 0, 3],
            DecodeError::Length {
                len: 3,
                max: u16::MAX,
            },
        ),
        (
            [1, 1, 0, 0],
            DecodeError::Length {
                len: 0,
                max: u16::MAX,
            },
        ),
    ] {
        let mut dec = Decoder::new();
        dec.feed(&good);
        dec.feed(&header);
        dec.feed(&good);
        assert!(matches!(dec.next(), Ok(Some(FpmMsg::Route(_)))));
        for _ in 0..3 {
            let err = dec.next().unwrap_err();
            assert!(err.is_fatal());
            assert_eq!(err, want);
        }
    }
}

#[test]
fn fpm_frame_over_the_limit_is_refused_before_its_bytes_arrive() {
    // The length field is a u16: 65535 is the most a header can claim (a
    // 100 KiB frame cannot be expressed). A decoder limited to what FRR 8.4
    // can produce refuses it at once; the default one waits for the bytes.
    let mut dec = Decoder::with_max_frame_len(8196);
    dec.feed(&[1, 1, 0xff, 0xff]);
    assert_eq!(
        dec.next(),
        Err(DecodeError::Length {
            len: 0xffff,
            max: 8196
        })
    );
    let mut dec = Decoder::new();
    dec.feed(&[1, 1, 0xff, 0xff]);
    dec.feed(&vec![0; 100 * 1024]);
    assert!(
        matches!(dec.next(), Err(DecodeError::Netlink { .. })),
        "frame read, garbage inside"
    );
    assert_eq!(dec.buffered(), 100 * 1024 + 4 - 0xffff);
}

#[test]
fn fpm_largest_frame_decodes() {
    // Many routes in one frame up to the u16 limit.
    let u = route(
        "2001:db8::",
        64,
        (1..=16)
            .map(|i| path(Some("fe80::1"), Some(i), i))
            .collect(),
    );
    let mut one = Vec::new();
    encode(&u, 0, &mut one).unwrap();
    let n = (usize::from(u16::MAX) - 4) / (one.len() - 4);
    let mut frame = Vec::new();
    encode_frame(&vec![u.clone(); n], 0, &mut frame).unwrap();
    assert!(frame.len() > 60_000);
    assert_eq!(routes(&frame), vec![normalize(u.clone()); n]);
    let mut too_long = Vec::new();
    assert!(matches!(
        encode_frame(&vec![u; n + 1], 0, &mut too_long),
        Err(EncodeError::TooLong(_))
    ));
    assert!(too_long.is_empty());
}

#[test]
fn fpm_other_frame_types_and_empty_frames_are_skipped() {
    let mut stream = vec![1, 2, 0, 8, 0xde, 0xad, 0xbe, 0xef]; // protobuf
    stream.extend([1, 1, 0, 4]); // empty netlink frame
    stream.extend(frr_v4_single(PID, false));
    let got = decode_all(&stream);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0], Err(DecodeError::FrameType(2)));
    assert!(!got[0].as_ref().unwrap_err().is_fatal());
    assert!(matches!(got[1], Ok(FpmMsg::Route(_))));
}

#[test]
fn fpm_garbage_netlink_loses_one_message_not_the_stream() {
    let good = frr_v4_single(PID, false);
    let valid_nl = &good[4..];
    let mut stream = Vec::new();
    // Not even a netlink header.
    stream.extend(raw::fpm(&[&[0xab; 12]]));
    // nlmsg_len beyond the frame, and below the header.
    let mut long = valid_nl.to_vec();
    long[0..4].copy_from_slice(&1000u32.to_ne_bytes());
    stream.extend(raw::fpm(&[&long]));
    let mut short = valid_nl.to_vec();
    short[0..4].copy_from_slice(&8u32.to_ne_bytes());
    stream.extend(raw::fpm(&[&short]));
    // A route message whose rtmsg is cut short.
    stream.extend(raw::fpm(&[&raw::nlmsg(24, 0, 0, 0, &[AF_INET, 8])]));
    // IPv4 gateway of 16 bytes; prefix length 33.
    let mut body = raw::rtmsg(AF_INET, 8, 254, 186, 1, 0);
    body.extend(raw::rta(RTA_DST, &[10, 0, 0, 0]));
    body.extend(raw::rta(RTA_GATEWAY, &[1; 16]));
    stream.extend(raw::fpm(&[&raw::nlmsg(24, 0, 0, 0, &body)]));
    let mut body = raw::rtmsg(AF_INET, 33, 254, 186, 1, 0);
    body.extend(raw::rta(RTA_DST, &[10, 0, 0, 0]));
    stream.extend(raw::fpm(&[&raw::nlmsg(24, 0, 0, 0, &body)]));
    // A message type nobody knows: ignored, not an error.
    stream.extend(raw::fpm(&[&raw::nlmsg(0x7777, 0, 0, 0, &[1, 2, 3, 4])]));
    // A good message after a bad one in the same frame survives.
    stream.extend(raw::fpm(&[
        &raw::nlmsg(24, 0, 0, 0, &[AF_INET, 0, 0, 0]),
        valid_nl,
    ]));
    stream.extend(&good);

    let got = decode_all(&stream);
    let errors: Vec<_> = got.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(errors.len(), 7, "{got:#?}");
    for e in &errors {
        assert!(matches!(e, DecodeError::Netlink { .. }), "{e}");
        assert!(!e.is_fatal());
        assert!(!e.to_string().is_empty());
    }
    assert!(got.contains(&Ok(FpmMsg::Ignored { nl_type: 0x7777 })));
    assert_eq!(
        got.iter()
            .filter(|r| matches!(r, Ok(FpmMsg::Route(_))))
            .count(),
        2
    );
}

/// Route messages (netlink bodies) with a next hop this data plane does
/// not do, and what the decoder must call each.
fn unsupported_bodies() -> Vec<(Vec<u8>, &'static str)> {
    let base = || {
        let mut body = raw::rtmsg(AF_INET, 16, 254, 186, 1, 0);
        body.extend(raw::rta(RTA_DST, &[10, 8, 0, 0]));
        body.extend(raw::rta32(RTA_PRIORITY, 20));
        body
    };
    let v6_gw = "2001:db8::1".parse::<Ipv6Addr>().unwrap().octets();

    // IPv4 route via an IPv6 gateway as RTA_VIA (what the kernel accepts;
    // zebra uses 169.254.0.1 instead).
    let mut via = base();
    let mut v = vec![AF_INET6, 0];
    v.extend(v6_gw);
    via.extend(raw::rta(RTA_VIA, &v));
    via.extend(raw::rta32(RTA_OIF, 3));
    // The same inside RTA_MULTIPATH.
    let mut mp_via = base();
    let mut mp = raw::rtnh(0, 0, 3, &raw::rta(RTA_VIA, &v));
    mp.extend(raw::rtnh(0, 0, 4, &raw::rta(RTA_GATEWAY, &[192, 0, 2, 1])));
    mp_via.extend(raw::rta(RTA_MULTIPATH | NLA_F_NESTED, &mp));
    // Labelled next hop (`_netlink_route_encode_label_info`): MPLS encap.
    let mut labels = base();
    labels.extend(raw::rta(RTA_ENCAP_TYPE, &1u16.to_ne_bytes()));
    labels.extend(raw::rta(
        RTA_ENCAP | NLA_F_NESTED,
        &raw::rta(1, &((100u32 << 12) | 0x100).to_be_bytes()),
    ));
    labels.extend(raw::rta(RTA_GATEWAY, &[192, 0, 2, 1]));
    labels.extend(raw::rta32(RTA_OIF, 3));
    // EVPN type-5 (`netlink_route_nexthop_encap`): VXLAN, VNI as attr 0.
    let mut vxlan = base();
    vxlan.extend(raw::rta(RTA_GATEWAY, &[192, 0, 2, 1]));
    vxlan.extend(raw::rta32(RTA_OIF, 3));
    vxlan.extend(raw::rta(RTA_ENCAP_TYPE, &100u16.to_ne_bytes()));
    vxlan.extend(raw::rta(RTA_ENCAP | NLA_F_NESTED, &raw::rta32(0, 5000)));
    // Source-specific (RTA_SRC); MPLS labels keep the route otherwise intact.
    let mut src = base();
    src.extend(raw::rta(RTA_SRC, &[192, 0, 2, 0]));

    vec![
        (via, VIA),
        (mp_via, VIA),
        (labels, ENCAP),
        (vxlan, ENCAP),
        (src, "a source-specific route (RTA_SRC)"),
    ]
}

#[test]
fn fpm_unsupported_next_hops_name_the_route() {
    let flags = raw::CREATE | raw::REQUEST | raw::REPLACE;
    let frame = |body: &[u8]| raw::fpm(&[&raw::nlmsg(24, flags, 0, PID, body)]);
    for (body, what) in unsupported_bodies() {
        let mut stream = frame(&body);
        stream.extend(frr_v4_single(PID, false));
        let got = decode_all(&stream);
        assert_eq!(got.len(), 2);
        assert_eq!(unsupported_what(&got[0]), what);
        assert!(!got[0].as_ref().unwrap_err().is_fatal());
        assert!(got[0]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("10.8.0.0/16"));
        assert!(matches!(got[1], Ok(FpmMsg::Route(_))));
    }
}

#[test]
fn fpm_feed_compacts_consumed_bytes() {
    let frame = frr_v4_single(PID, false);
    let mut dec = Decoder::new();
    for _ in 0..1000 {
        dec.feed(&frame[..10]);
        dec.feed(&frame[10..]);
        assert!(matches!(dec.next(), Ok(Some(FpmMsg::Route(_)))));
        assert_eq!(dec.next(), Ok(None));
    }
    assert!(dec.buf.capacity() < 4 * frame.len());
}

// ------------------------------------------------------------ encoder errors

#[test]
fn fpm_encoder_refuses_what_zebra_cannot_send() {
    let mut out = vec![9];
    let u = route("10.0.0.0", 33, vec![]);
    assert_eq!(
        encode(&u, 0, &mut out),
        Err(EncodeError::PrefixLen { len: 33, bits: 32 })
    );
    let u = route("10.0.0.0", 8, vec![path(Some("fe80::1"), Some(1), 1)]);
    assert_eq!(
        encode(&u, 0, &mut out),
        Err(EncodeError::GatewayFamily(ip("fe80::1")))
    );
    let u = route(
        "10.0.0.0",
        8,
        vec![
            path(Some("10.0.0.1"), Some(1), 1),
            path(Some("fe80::1"), Some(1), 1),
        ],
    );
    assert!(encode(&u, 0, &mut out).is_err());
    assert_eq!(out, vec![9], "out untouched on error");
}

// ------------------------------------------------------------ property tests

fn arb_addr(v4: bool) -> BoxedStrategy<IpAddr> {
    if v4 {
        any::<[u8; 4]>().prop_map(IpAddr::from).boxed()
    } else {
        any::<[u8; 16]>().prop_map(IpAddr::from).boxed()
    }
}

fn arb_path(v4: bool) -> impl Strategy<Value = Path> {
    (
        proptest::option::weighted(0.8, arb_addr(v4)),
        proptest::option::weighted(0.9, 1..=u32::MAX),
        0u32..300,
        any::<bool>(),
    )
        .prop_map(|(gateway, ifindex, weight, onlink)| Path {
            gateway,
            ifindex,
            weight,
            onlink,
        })
}

fn arb_kind() -> impl Strategy<Value = RouteKind> {
    prop_oneof![
        6 => Just(RouteKind::Unicast),
        1 => Just(RouteKind::Blackhole),
        1 => Just(RouteKind::Unreachable),
        1 => Just(RouteKind::Prohibit),
        1 => Just(RouteKind::Unspec),
        1 => prop_oneof![2u8..=5, 9u8..=255].prop_map(RouteKind::Other),
    ]
}

fn arb_update() -> impl Strategy<Value = RouteUpdate> {
    any::<bool>().prop_flat_map(|v4| {
        (
            any::<bool>(),
            prop_oneof![Just(254u32), 0u32..=255, 256u32..=u32::MAX],
            arb_addr(v4),
            0..=if v4 { 32u8 } else { 128 },
            any::<u8>(),
            arb_kind(),
            proptest::option::of(any::<u32>()),
            proptest::collection::vec(arb_path(v4), 0..6),
            proptest::option::weighted(0.2, any::<u32>()),
        )
            .prop_map(
                |(del, table, dst, len, proto, kind, metric, paths, nh_id)| RouteUpdate {
                    op: if del { RouteOp::Del } else { RouteOp::Add },
                    table,
                    dst,
                    len,
                    proto,
                    kind,
                    metric,
                    paths,
                    nh_id,
                },
            )
    })
}

/// The netlink messages of the FPM frames of `stream` (well formed).
fn nl_messages(stream: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = stream;
    while rest.len() >= 4 {
        let len = usize::from(u16::from_be_bytes([rest[2], rest[3]]));
        let mut frame = &rest[4..len];
        while frame.len() >= 16 {
            let n = u32::from_ne_bytes(frame[..4].try_into().unwrap()) as usize;
            out.push(frame[..n].to_vec());
            frame = &frame[n.next_multiple_of(4).min(frame.len())..];
        }
        rest = &rest[len..];
    }
    out
}

/// `msg` with the bytes at `flips` overwritten.
fn flipped(msg: &[u8], flips: &[(prop::sample::Index, u8)]) -> Vec<u8> {
    let mut m = msg.to_vec();
    for (at, byte) in flips {
        let i = at.index(m.len());
        m[i] = *byte;
    }
    m
}

/// Feeds `stream` in chunks of the given sizes (cycled), draining after each.
fn decode_chunked(stream: &[u8], sizes: &[usize]) -> Vec<Result<FpmMsg, DecodeError>> {
    let mut dec = Decoder::new();
    let mut out = Vec::new();
    let mut rest = stream;
    for &n in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (chunk, tail) = rest.split_at(n.min(rest.len()));
        rest = tail;
        dec.feed(chunk);
        out.extend(drain(&mut dec));
        if matches!(out.last(), Some(Err(e)) if e.is_fatal()) {
            break;
        }
    }
    out
}

proptest! {
    #[test]
    fn fpm_random_updates_round_trip_in_any_split(
        frames in proptest::collection::vec(proptest::collection::vec(arb_update(), 1..3), 1..12),
        sizes in proptest::collection::vec(1usize..200, 1..20),
    ) {
        let mut stream = Vec::new();
        let mut want = Vec::new();
        for (i, frame) in (0u32..).zip(&frames) {
            encode_frame(frame, i, &mut stream).unwrap();
            want.extend(frame.iter().cloned().map(|u| Ok(FpmMsg::Route(normalize(u)))));
        }
        prop_assert_eq!(decode_chunked(&stream, &sizes), want);
    }

    #[test]
    fn fpm_random_bytes_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..2048),
        sizes in proptest::collection::vec(1usize..300, 1..10),
    ) {
        decode_chunked(&bytes, &sizes);
        // And with a plausible header in front, so the netlink layer is hit.
        let mut framed = vec![1, 1];
        framed.extend(((bytes.len() + 4).min(0xffff) as u16).to_be_bytes());
        framed.extend(&bytes);
        decode_chunked(&framed, &sizes);
    }

    #[test]
    fn fpm_mutated_streams_never_panic(
        frames in proptest::collection::vec(proptest::collection::vec(arb_update(), 1..3), 1..6),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        sizes in proptest::collection::vec(1usize..100, 1..10),
    ) {
        let mut stream = Vec::new();
        for frame in &frames {
            encode_frame(frame, 0, &mut stream).unwrap();
        }
        stream.extend(frr_v6_update_multipath(PID));
        for (at, byte) in flips {
            let i = at.index(stream.len());
            stream[i] = byte;
        }
        decode_chunked(&stream, &sizes);
    }

    /// The decoder walks a route message's attributes one at a time
    /// (`each_attribute`); the crate's whole-message parse, which it
    /// replaced, must give the same answer for every message, good, bad or
    /// mutated (errors: the same kind and netlink type; their wording
    /// differs).
    #[test]
    fn fpm_attributes_walked_one_at_a_time_decode_as_the_whole_message(
        updates in proptest::collection::vec(arb_update(), 1..6),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
    ) {
        let mut stream = Vec::new();
        encode_frame(&updates, 0, &mut stream).unwrap();
        stream.extend(frr_v4_single(PID, true));
        stream.extend(frr_v6_update_multipath(PID));
        let flags = raw::CREATE | raw::REQUEST | raw::REPLACE;
        for (body, _) in unsupported_bodies() {
            stream.extend(raw::fpm(&[&raw::nlmsg(24, flags, 0, PID, &body)]));
        }
        // An SRv6 local encapsulation (type 7) whose action is cut short:
        // whether RTA_ENCAP parses (a netlink error, not "unsupported")
        // depends on RTA_ENCAP_TYPE, which comes after it.
        let mut body = raw::rtmsg(AF_INET, 16, 254, 186, 1, 0);
        body.extend(raw::rta(RTA_DST, &[10, 8, 0, 0]));
        body.extend(raw::rta(RTA_ENCAP | NLA_F_NESTED, &raw::rta(1, &[0, 1])));
        body.extend(raw::rta(RTA_ENCAP_TYPE, &7u16.to_ne_bytes()));
        stream.extend(raw::fpm(&[&raw::nlmsg(24, flags, 0, PID, &body)]));
        for msg in nl_messages(&stream) {
            for m in [msg.clone(), flipped(&msg, &flips)] {
                let (a, b) = (decode_netlink(&m), decode_netlink_collected(&m));
                match (&a, &b) {
                    (Ok(x), Ok(y)) => prop_assert_eq!(x, y),
                    (
                        Err(DecodeError::Netlink { nl_type: x, .. }),
                        Err(DecodeError::Netlink { nl_type: y, .. }),
                    ) => prop_assert_eq!(x, y),
                    _ => prop_assert_eq!(&a, &b),
                }
            }
        }
    }
}
