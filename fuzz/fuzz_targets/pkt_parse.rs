//! Any bytes as an Ethernet frame: the parser, the flow hash and the
//! neighbour-message parsers never panic, what `parse` accepts keeps the
//! promises of `Parsed` (see `appliance_fuzz::checked_parse`), and what the
//! fast path's recognisers (`parse_plain_v4`, `_v6`) accept, `parse` reads the same
//! and their views hash as `flow_hash` does.
#![no_main]

use fwd::pkt::{self, NeighMsg};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|frame: &[u8]| {
    for nic in [None, Some(true), Some(false)] {
        let mut p = pkt::Parsed::default();
        if pkt::parse_plain_v4(frame, nic.into(), &mut p) {
            assert_ne!(nic, Some(false), "a bad checksum the NIC reported");
            assert_eq!(pkt::parse(frame), Ok(p));
            assert!(nic.is_some() || pkt::ipv4_checksum_ok(frame, &p));
            let h = pkt::PlainV4::again(frame).map(|h| h.flow_hash());
            assert_eq!(h, Some(pkt::flow_hash(&p)));
        }
    }
    let mut p = pkt::Parsed::default();
    if pkt::parse_plain_v6(frame, &mut p) {
        assert_eq!(pkt::parse(frame), Ok(p));
        let h = pkt::PlainV6::again(frame).map(|h| h.flow_hash());
        assert_eq!(h, Some(pkt::flow_hash(&p)));
    }
    let arp = pkt::parse_arp(frame);
    if arp.is_some() {
        assert_eq!(pkt::ether_type(frame), Some(pkt::ethertype::ARP));
    }
    if let Some(p) = appliance_fuzz::checked_parse(frame) {
        if let Some(m) = pkt::parse_nd(frame, &p) {
            assert!(!matches!(
                m,
                NeighMsg::ArpRequest { .. } | NeighMsg::ArpReply { .. }
            ));
        }
    }
});
