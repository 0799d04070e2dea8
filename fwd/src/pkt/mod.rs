//! Packet parsing, forwarding rewrite and checksums over plain byte slices.
//!
//! # Contract
//!
//! Everything here works on `&[u8]` / `&mut [u8]` (the worker hands over an mbuf's data
//! as a slice) and knows nothing of DPDK. The fast-path functions ([`fn@parse`],
//! [`parse_into`], [`ether_type`], [`forward_rewrite`], [`set_dscp`], [`flow_hash`],
//! [`csum`]) guarantee, for *any* input bytes:
//!
//! - no allocation, no logging, no panic: every read is bounds-checked through
//!   `get`/`first_chunk` (the files `parse.rs`, `rewrite.rs`, `csum.rs` and `hash.rs`
//!   deny `clippy::indexing_slicing`, `unwrap_used`, `expect_used` and `panic`, and a
//!   property test throws random and mutated frames at them);
//! - a frame that is not forwarded gets a small `Copy` reason ([`ParseError`],
//!   [`RewriteError`]) that maps 1:1 onto a drop counter ([`ParseError::index`]);
//! - the rewrite either does all of its work or leaves the frame untouched.
//!
//! What the parser accepts is written on [`fn@parse`]; the layout of the result on
//! [`Parsed`].
//!
//! # Design choices, and why
//!
//! - **One pass, one struct.** [`fn@parse`] walks Ethernet → VLAN tags → IPv4/IPv6 (+
//!   extension headers) → TCP/UDP/SCTP/ICMP once and fills a flat, `Copy`
//!   [`Parsed`] (~56 bytes) holding everything the next stages need: the classifier's
//!   5-tuple, the FIB's destination, the rewrite's offsets. Later stages never touch
//!   the headers again except to write, so the frame's first cache line is read once
//!   per burst stage. [`parse_into`] writes into a caller-owned slot so a burst of
//!   results can live in a fixed array on the stack.
//! - **Addresses as `[u8; 16]`, IPv4 in the first four bytes** (rest zero). One layout
//!   for both families keeps `Parsed` `Copy` and branch-free to hash; [`Parsed::dst_v4`]
//!   and [`Parsed::dst_v6`] turn it into the `u32` / `u128` that the FIB wants with one
//!   load and a byte swap.
//! - **Length fields are checked against the frame, headers against the IP length.**
//!   A header that the frame (or the IP packet) ends inside of is [`ParseError::Truncated`];
//!   an IP length field larger than what the frame carries is
//!   [`ParseError::BadTotalLength`] / [`ParseError::BadPayloadLength`]. Bytes after the
//!   IP packet are Ethernet padding and are ignored.
//! - **No IPv4 header checksum check in [`fn@parse`]**: NICs verify it in hardware
//!   (`RTE_MBUF_F_RX_IP_CKSUM_BAD`), and the incremental update in [`forward_rewrite`]
//!   keeps a bad checksum bad rather than laundering it (RFC 1624 arithmetic preserves
//!   the error). Without offload the worker calls [`ipv4_checksum_ok`].
//! - **ICMP type/code live in the port fields** (`sport` = type, `dport` = code), as in
//!   OVS and most ACL rule formats, so the classifier matches them with the same
//!   range/exact fields it uses for ports.
//! - **Incremental checksum by RFC 1624 equation 3** (`HC' = ~(~HC + ~m + m')`), which,
//!   unlike RFC 1141's `HC + 0x0100`, never produces `0xFFFF` where a full
//!   recomputation gives `0x0000`.
//!
//! Not on the fast path (allocation allowed): [`build`] (frame builders with correct
//! checksums for tests and traffic generators) and [`pcap`] (classic libpcap files).

mod frag;
mod hash;
mod icmp_error;
mod neigh;
mod parse;
mod plain;
mod reply;
mod rewrite;

pub mod build;
pub mod csum;
pub mod pcap;

#[cfg(test)]
mod fuzz_tests;

/// Property-test settings shared by this module's tests: no regression files are
/// written into the source tree (a failure prints its minimal input instead).
#[cfg(test)]
fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases,
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    }
}

pub use csum::NicCsum;
pub use frag::fragment_v4;
pub use hash::{flow_hash, flow_hash_with_seed, FLOW_HASH_DEFAULT_SEED};
pub use icmp_error::{build_error, may_send_error, IcmpError, MAX_ERROR_FRAME};
pub use neigh::{
    build_arp_request, build_ns, build_ra, link_local, multicast_mac, parse_arp, parse_nd,
    solicited_node, NeighMsg, RaParams,
};
pub use parse::{
    ether_type, ethertype, ipproto, parse, parse_into, tcp_flags, Fragment, L3Kind, ParseError,
    Parsed, MAX_IPV6_EXT_HEADERS, MAX_VLAN_TAGS,
};
pub use plain::{parse_plain_v4, parse_plain_v6, plain_v4, plain_v6, PlainV4, PlainV6};
pub use reply::{arp_reply_in_place, echo_reply_in_place, nd_reply_in_place};
pub use rewrite::{
    forward_plain_v4, forward_plain_v6, forward_rewrite, ipv4_checksum_ok, set_dscp, MacPair,
    RewriteError,
};
