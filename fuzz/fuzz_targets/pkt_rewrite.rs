//! The forwarding rewrite of a parsed frame: TTL/hop limit, MACs, DSCP,
//! IPv4 header checksum, and IPv4 fragmentation to an MTU. Input: one byte
//! of DSCP, two of MTU, then the frame.
#![no_main]

use fwd::pkt::{self, L3Kind, ParseError, Parsed, RewriteError};
use libfuzzer_sys::fuzz_target;

const DMAC: [u8; 6] = [2, 0, 0, 0, 0, 0xd];
const SMAC: [u8; 6] = [2, 0, 0, 0, 0, 0x5];

fuzz_target!(|data: &[u8]| {
    let Some((&[dscp, m0, m1], frame)) = data.split_first_chunk::<3>() else {
        return;
    };
    let Some(p) = appliance_fuzz::checked_parse(frame) else {
        return;
    };
    // Either TtlExpired with the frame untouched, or one hop less, the
    // checksum as valid as before and the same parse otherwise.
    let csum_ok = pkt::ipv4_checksum_ok(frame, &p);
    let mut g = frame.to_vec();
    match pkt::forward_rewrite(&mut g, &p, DMAC, SMAC) {
        Err(RewriteError::TtlExpired) => {
            assert!(p.ttl <= 1);
            assert_eq!(&g[..], frame);
        }
        Err(RewriteError::FrameMismatch) => panic!("mismatch on its own parse: {p:?}"),
        Ok(()) => {
            assert!(p.ttl > 1);
            assert_eq!(
                pkt::parse(&g),
                Ok(Parsed {
                    ttl: p.ttl - 1,
                    ..p
                })
            );
            assert_eq!(pkt::ipv4_checksum_ok(&g, &p), csum_ok);
            assert_eq!((&g[..6], &g[6..12]), (&DMAC[..], &SMAC[..]));
        }
    }
    let mut h = frame.to_vec();
    pkt::set_dscp(&mut h, &p, dscp);
    assert_eq!(
        pkt::parse(&h),
        Ok(Parsed {
            dscp: dscp & 0x3f,
            ..p
        })
    );
    assert_eq!(pkt::ipv4_checksum_ok(&h, &p), csum_ok);

    // Fragmentation: every piece is a frame that parses as IPv4 within the
    // MTU, offsets strictly grow, and the pieces end.
    if p.kind != L3Kind::V4 {
        return;
    }
    let mtu = u16::from_be_bytes([m0, m1]);
    let mut out = vec![0u8; usize::from(mtu) + 64];
    let mut offset = 0usize;
    for _ in 0..=usize::from(p.l3_len) {
        let Some((len, next)) = pkt::fragment_v4(&mut out, frame, &p, mtu, offset) else {
            return;
        };
        let f = &out[..len];
        // RFC 791 lets a first fragment carry as little as 8 bytes, less
        // than a TCP or SCTP header: the parser refuses those (truncated L4)
        // as it refuses any tiny first fragment.
        match pkt::parse(f) {
            Ok(q) => {
                assert_eq!(q.kind, L3Kind::V4);
                assert!(q.l3_len <= mtu, "{q:?} over mtu {mtu}");
                assert_eq!(q.l3_off, p.l3_off);
            }
            Err(ParseError::Truncated) if offset == 0 && next.is_some() => {}
            Err(e) => panic!("fragment at {offset} does not parse: {e:?}"),
        }
        match next {
            None => return,
            Some(n) => {
                assert!(n > offset, "fragment offset {n} after {offset}");
                offset = n;
            }
        }
    }
    panic!("more fragments than payload bytes");
});
