//! Any bytes as an Ethernet frame: the parser, the flow hash and the
//! neighbour-message parsers never panic, and what `parse` accepts keeps the
//! promises of `Parsed` (see `appliance_fuzz::checked_parse`).
#![no_main]

use fwd::pkt::{self, NeighMsg};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|frame: &[u8]| {
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
