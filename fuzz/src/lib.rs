//! What the fuzz targets share: the checks every accepted frame must pass,
//! and the tables the saved-state and config targets apply changes to.

use fwd::acl;
use fwd::pkt::{self, ethertype, ipproto, Fragment, L3Kind, ParseError, Parsed};
use fwd::tables::{PortInfo, Tables};

/// The port names of [`two_ports`], for seed files and saved states.
pub const PORTS: [&str; 2] = ["p0", "p1"];

/// Empty tables with two ports (`p0`, `p1`, VRF 0) and a small classifier,
/// as the daemon's unit tests build them.
pub fn two_ports() -> (Tables, acl::ClassifierWriter) {
    let acl_w = acl::ClassifierWriter::new(acl::Config {
        capacity: 1024,
        ..acl::Config::default()
    });
    let ports = vec![
        PortInfo::new(PORTS[0], [2, 0, 0, 0, 0, 1], 0),
        PortInfo::new(PORTS[1], [2, 0, 0, 0, 0, 2], 0),
    ];
    (
        Tables::empty(ports, acl_w.current().clone(), fwd::tables::Limits::default()),
        acl_w,
    )
}

/// Parses `frame` and checks what `pkt::parse` promises about its result
/// (the same invariants as `fwd/src/pkt/fuzz_tests.rs`). Panics on a broken
/// promise; returns the parse otherwise.
pub fn checked_parse(frame: &[u8]) -> Option<Parsed> {
    let et = pkt::ether_type(frame);
    let r = pkt::parse(frame);
    let mut slot = Parsed::default();
    let r2 = pkt::parse_into(frame, &mut slot).map(|()| slot);
    assert_eq!(r, r2, "parse and parse_into disagree");
    let p = match r {
        Ok(p) => p,
        Err(e) => {
            assert!(e.index() < ParseError::COUNT);
            if e == ParseError::NotIp {
                assert!(et.is_some() && et != Some(ethertype::IPV4) && et != Some(ethertype::IPV6));
            }
            return None;
        }
    };
    let l3 = usize::from(p.l3_off);
    let l4 = usize::from(p.l4_off);
    let end = l3 + usize::from(p.l3_len);
    assert!([14, 18, 22].contains(&l3), "{p:?}");
    assert_eq!(p.outer_vlan.is_some(), l3 >= 18);
    assert_eq!(p.inner_vlan.is_some(), l3 == 22);
    assert!(end <= frame.len(), "{p:?}");
    let (want_et, fixed, icmp) = match p.kind {
        L3Kind::V4 => (ethertype::IPV4, 20, ipproto::ICMP),
        L3Kind::V6 => (ethertype::IPV6, 40, ipproto::ICMPV6),
    };
    assert_eq!(et, Some(want_et));
    assert!(usize::from(p.l3_len) >= fixed);
    if p.kind == L3Kind::V4 {
        assert!(p.src[4..].iter().all(|&b| b == 0) && p.dst[4..].iter().all(|&b| b == 0));
    }
    if l4 == 0 {
        assert!(
            p.frag == Fragment::NonFirst || p.proto == ipproto::NONXT,
            "{p:?}"
        );
        assert_eq!((p.sport, p.dport, p.tcp_flags), (0, 0, 0));
    } else {
        assert!(p.frag != Fragment::NonFirst);
        assert!(l4 >= l3 + fixed && l4 <= end, "{p:?}");
        let min_l4 = match p.proto {
            ipproto::TCP => 20,
            ipproto::UDP => 8,
            ipproto::SCTP => 12,
            x if x == icmp => 8,
            _ => 0,
        };
        assert!(l4 + min_l4 <= end, "L4 header beyond the IP packet: {p:?}");
    }
    if p.proto != ipproto::TCP {
        assert_eq!(p.tcp_flags, 0);
    }
    let _ = pkt::flow_hash(&p);
    Some(p)
}
