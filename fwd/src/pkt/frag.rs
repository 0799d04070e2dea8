//! IPv4 fragmentation (RFC 791 3.2, RFC 1812 4.2.2.7) of a frame larger
//! than the output MTU, one fragment at a time into a caller's buffer.
//!
//! Each fragment is a complete Ethernet frame: the original's L2 header
//! (already rewritten for the next hop), an IPv4 header (the first
//! fragment keeps every option, later ones only those with the "copied"
//! flag, RFC 791), and a slice of the payload whose length is a multiple of
//! 8 except in the last fragment. A packet that is itself a fragment keeps
//! its offset and its more-fragments flag on the last piece.
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use super::csum;
use super::parse::{L3Kind, Parsed};

/// Writes the fragment of `frame` (parsed into `p`) that starts at byte
/// `offset` of its IP payload into `out`, at most `mtu` bytes of IP
/// packet. Returns the frame's length and the offset of the next fragment
/// (`None` after the last). `None` when the packet is not IPv4, `mtu`
/// cannot hold a header and 8 bytes, or `out` is too small.
pub fn fragment_v4(
    out: &mut [u8],
    frame: &[u8],
    p: &Parsed,
    mtu: u16,
    offset: usize,
) -> Option<(usize, Option<usize>)> {
    if p.kind != L3Kind::V4 {
        return None;
    }
    let l3 = usize::from(p.l3_off);
    let ip = frame.get(l3..l3 + usize::from(p.l3_len))?;
    let ihl = usize::from(ip.first()? & 0x0f) * 4;
    let (hdr, payload) = (ip.get(..ihl)?, ip.get(ihl..)?);
    if offset >= payload.len() && !(offset == 0 && payload.is_empty()) {
        return None;
    }
    // The header of this fragment: all options in the first, the copied
    // ones (type bit 0x80) in the others, padded to 4 bytes.
    let mut h = [0u8; 60];
    h.get_mut(..20)?.copy_from_slice(hdr.get(..20)?);
    let mut hlen = 20;
    let opts = hdr.get(20..)?;
    if offset == 0 {
        h.get_mut(20..ihl)?.copy_from_slice(opts);
        hlen = ihl;
    } else {
        let mut k = 0;
        while k < opts.len() {
            let t = *opts.get(k)?;
            if t == 0 {
                break;
            }
            if t == 1 {
                k += 1;
                continue;
            }
            let len = usize::from(*opts.get(k + 1)?).max(2);
            let o = opts.get(k..k + len)?;
            if t & 0x80 != 0 {
                h.get_mut(hlen..hlen + len)?.copy_from_slice(o);
                hlen += len;
            }
            k += len;
        }
        hlen = hlen.div_ceil(4) * 4;
    }
    let room = usize::from(mtu).checked_sub(hlen)? & !7;
    if room == 0 {
        return None;
    }
    let rest = payload.len().saturating_sub(offset);
    let (take, next) = if rest > room {
        (room, Some(offset + room))
    } else {
        (rest, None)
    };
    // Flags and offset: keep the original's own offset and MF.
    let orig = u16::from_be_bytes([*hdr.get(6)?, *hdr.get(7)?]);
    let orig_off = usize::from(orig & 0x1fff) * 8;
    let orig_mf = orig & 0x2000 != 0;
    let frag_off = u16::try_from((orig_off + offset) / 8)
        .ok()
        .filter(|o| *o <= 0x1fff)?;
    let mf = next.is_some() || orig_mf;
    let flags = (orig & 0x8000) | if mf { 0x2000 } else { 0 };
    let total = u16::try_from(hlen + take).ok()?;
    *h.first_mut()? = 0x40 | (hlen / 4) as u8;
    h.get_mut(2..4)?.copy_from_slice(&total.to_be_bytes());
    h.get_mut(6..8)?
        .copy_from_slice(&(flags | frag_off).to_be_bytes());
    h.get_mut(10..12)?.copy_from_slice(&[0, 0]);
    let c = csum::ipv4_header_checksum(h.get(..hlen)?);
    h.get_mut(10..12)?.copy_from_slice(&c.to_be_bytes());

    let len = l3 + hlen + take;
    let o = out.get_mut(..len.max(60))?;
    o.get_mut(..l3)?.copy_from_slice(frame.get(..l3)?);
    o.get_mut(l3..l3 + hlen)?.copy_from_slice(h.get(..hlen)?);
    o.get_mut(l3 + hlen..len)?
        .copy_from_slice(payload.get(offset..offset + take)?);
    o.get_mut(len..)?.fill(0);
    Some((len.max(60), next))
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;
    use crate::pkt::build::{self, FrameSpec};
    use crate::pkt::{parse, Fragment};

    fn big(len: usize, spec: &FrameSpec) -> Vec<u8> {
        let payload: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
        build::udp4(
            spec,
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 0, 1, 2),
            1000,
            2000,
            &payload,
        )
    }

    /// Every fragment of `frame` at `mtu`, parsed back.
    fn all(frame: &[u8], mtu: u16) -> Vec<Vec<u8>> {
        let p = parse(frame).unwrap();
        let mut out = Vec::new();
        let mut off = 0;
        loop {
            let mut buf = [0u8; 2048];
            let (len, next) = fragment_v4(&mut buf, frame, &p, mtu, off).unwrap();
            out.push(buf[..len].to_vec());
            match next {
                Some(n) => off = n,
                None => return out,
            }
        }
    }

    #[test]
    fn fragments_reassemble_to_the_original_payload() {
        let f = big(1472, &FrameSpec::default());
        let frags = all(&f, 1280);
        assert_eq!(frags.len(), 2);
        let p0 = parse(&f).unwrap();
        let mut payload = vec![0u8; usize::from(p0.l3_len) - 20];
        for (k, fr) in frags.iter().enumerate() {
            let p = parse(fr).unwrap();
            assert!(usize::from(p.l3_len) <= 1280);
            assert!(
                csum::verify_ipv4_header(&fr[14..34]),
                "fragment {k} checksum"
            );
            let fo = u16::from_be_bytes([fr[20], fr[21]]);
            let off = usize::from(fo & 0x1fff) * 8;
            let mf = fo & 0x2000 != 0;
            assert_eq!(mf, k + 1 < frags.len());
            assert_eq!(fr[18..20], f[18..20], "same identification");
            let data = &fr[34..14 + usize::from(p.l3_len)];
            payload[off..off + data.len()].copy_from_slice(data);
            if k == 0 {
                assert_eq!(p.frag, Fragment::First);
                assert_eq!(data.len() % 8, 0);
            } else {
                assert_eq!(p.frag, Fragment::NonFirst);
            }
        }
        assert_eq!(payload, f[34..14 + usize::from(p0.l3_len)]);
    }

    #[test]
    fn vlan_tags_and_small_mtus_are_kept() {
        let spec = FrameSpec {
            vlans: vec![build::VlanTag::dot1q(7)],
            ..FrameSpec::default()
        };
        let f = big(1000, &spec);
        let frags = all(&f, 576);
        assert_eq!(frags.len(), 2);
        for fr in &frags {
            let p = parse(fr).unwrap();
            assert_eq!(p.outer_vlan, Some(7));
            assert!(p.l3_len <= 576);
        }
        // 68 bytes is the IPv4 minimum MTU (RFC 791): 48 bytes a fragment.
        let frags = all(&f, 68);
        assert_eq!(frags.len(), 1008usize.div_ceil(48));
    }

    #[test]
    fn refuses_what_it_cannot_fragment() {
        let f = big(100, &FrameSpec::default());
        let p = parse(&f).unwrap();
        let mut buf = [0u8; 2048];
        assert!(
            fragment_v4(&mut buf, &f, &p, 27, 0).is_none(),
            "no room for 8 bytes"
        );
        assert!(
            fragment_v4(&mut buf, &f, &p, 1500, 5000).is_none(),
            "offset past the end"
        );
        let mut tiny = [0u8; 40];
        assert!(
            fragment_v4(&mut tiny, &f, &p, 1500, 0).is_none(),
            "buffer too small"
        );
        let v6 = build::udp6(
            &FrameSpec::default(),
            "fd00::1".parse().unwrap(),
            "fd00::2".parse().unwrap(),
            1,
            2,
            &[0; 100],
        );
        assert!(fragment_v4(&mut buf, &v6, &parse(&v6).unwrap(), 68, 0).is_none());
    }
}
