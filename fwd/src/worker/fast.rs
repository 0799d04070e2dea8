//! The forwarding fast path: routed IPv4 and IPv6 traffic in two passes
//! over the burst, around one batched classification and one batched
//! lookup per family.
//!
//! The general stages ([`super::pipeline`]) give every packet a verdict and
//! pass over the burst once per stage to refine it, so that every case
//! (neighbour protocols, local delivery, ICMP errors, fragmentation, the
//! host path) has its place. For the common packet (plain IPv4 or IPv6
//! UDP/TCP, unicast, routed to a resolved next hop on an up port, TTL > 1,
//! within the MTU) that costs more than the work itself. Here:
//!
//! 1. recognise the common frame ([`pkt::parse_plain_v4`]: untagged IPv4
//!    UDP or TCP without options, header checksum good;
//!    [`pkt::parse_plain_v6`]: untagged IPv6 UDP or TCP without extension
//!    headers, not to a link-local address), leave multicast;
//! 2. while rules are loaded, one
//!    [`Classifier::classify_burst`](crate::acl::Classifier::classify_burst):
//!    a packet goes on only if its first match merely permits
//!    ([`RuleEntry::only_permits`]) or nothing matches;
//! 3. one [`Routing::lookup4_burst`](crate::route::Routing::lookup4_burst)
//!    and one `lookup6_burst`;
//! 4. rewrite, trim the Ethernet padding, count the rule's hit and mark
//!    `Tx` what forwards.
//!
//! A packet stops at the first condition it fails and is left unchanged to
//! the general stages, which decide it from scratch: the fast path only
//! ever takes packets for which the general stages would produce the very
//! same rewrite and `Tx` verdict (a property test runs both on the same
//! bursts).

use crate::acl::{CounterWriter, RuleEntry};
use crate::dpdk::mbuf::BURST;
use crate::pkt::{self, L3Kind};
use crate::route::Resolved;
use crate::stats::DropReason;

use super::pipeline::{
    egress, is_link_local_v6, is_multicast, key_of, Clock, Egress, Packets, Pipeline, Scratch,
    Tally, Verdict,
};

/// A set of packets of a burst: bit `i` is packet `i`.
pub type Mask = u32;

static_assertions::const_assert!(BURST <= Mask::BITS as usize);

/// The first `n` packets.
#[inline(always)]
pub fn first(n: usize) -> Mask {
    if n >= Mask::BITS as usize {
        Mask::MAX
    } else {
        (1 << n) - 1
    }
}

impl Pipeline<'_> {
    /// Forwards what it can of the burst (`s.verdict[i] = Tx(port)`, frame
    /// rewritten, received bytes and rule hits counted) and returns the
    /// packets left for the general stages.
    #[inline(always)]
    pub fn fast<P: Packets>(
        &self,
        pkts: &mut P,
        s: &mut Scratch,
        tally: &mut Tally,
        rc: &mut CounterWriter,
        clock: Clock,
    ) -> Mask {
        let n = pkts.count();
        let t = self.tables;
        let mut rest = first(n);
        if !t.port(self.in_port).is_some_and(|p| p.is_up()) {
            return rest;
        }
        // The candidates, in burst order.
        let mut m = 0;
        for i in 0..n {
            pkts.prefetch(i + 1);
            let Some((frame, nic_csum)) = pkts.single(i) else {
                continue;
            };
            let p = &mut s.parsed[i];
            let plain = if pkt::parse_plain_v4(frame, nic_csum, p) {
                !is_multicast(p)
            } else {
                // Link-local destinations (ours, or never forwarded) and
                // multicast are the general stages'.
                pkt::parse_plain_v6(frame, p) && !is_multicast(p) && !is_link_local_v6(p.dst_v6())
            };
            if plain {
                s.key_idx[m] = i as u8;
                m += 1;
            }
        }
        // The first match of each packet that goes on, by packet (None: no
        // match, or no rules).
        let mut rule: [Option<&RuleEntry>; BURST] = [None; BURST];
        if m > 0 && !t.acl.is_empty() {
            for k in 0..m {
                let p = &s.parsed[usize::from(s.key_idx[k])];
                s.keys[k] = key_of(p, self.in_port as u16);
            }
            let mut found: [Option<&RuleEntry>; BURST] = [None; BURST];
            t.acl.classify_burst(&s.keys[..m], &mut found[..m]);
            let mut kept = 0;
            for (k, &hit) in found[..m].iter().enumerate() {
                if hit.is_some_and(|r| !r.only_permits()) {
                    continue;
                }
                let i = s.key_idx[k];
                rule[usize::from(i)] = hit;
                s.key_idx[kept] = i;
                kept += 1;
            }
            m = kept;
        }
        let (mut n4, mut n6) = (0, 0);
        for &i in &s.key_idx[..m] {
            let p = &s.parsed[usize::from(i)];
            if p.kind == L3Kind::V4 {
                s.v4_idx[n4] = i;
                s.v4_dst[n4] = p.dst_v4();
                n4 += 1;
            } else {
                s.v6_idx[n6] = i;
                s.v6_dst[n6] = p.dst_v6();
                n6 += 1;
            }
        }
        let vrf = t.port_vrf(self.in_port);
        let parsed = &s.parsed;
        if n4 > 0 {
            let idx = &s.v4_idx;
            let hash = |k: usize| pkt::flow_hash(&parsed[usize::from(idx[k])]);
            t.routing
                .lookup4_burst(vrf, &s.v4_dst[..n4], hash, &mut s.v4_out[..n4]);
        }
        if n6 > 0 {
            let idx = &s.v6_idx;
            let hash = |k: usize| pkt::flow_hash(&parsed[usize::from(idx[k])]);
            t.routing
                .lookup6_burst(vrf, &s.v6_dst[..n6], hash, &mut s.v6_out[..n6]);
        }
        // Packets of a burst mostly share a next hop: resolve it once.
        let mut cached = (u32::MAX, Egress::Drop(DropReason::NoRoute));
        let found = s.v4_idx[..n4]
            .iter()
            .zip(&s.v4_out[..n4])
            .chain(s.v6_idx[..n6].iter().zip(&s.v6_out[..n6]));
        for (&i, &r) in found {
            let i = usize::from(i);
            let Resolved::Forward(nh) = r else {
                continue;
            };
            if cached.0 != nh {
                cached = (nh, egress(t, nh));
            }
            let Egress::Ok {
                port,
                mtu,
                dst_mac: Some(dst_mac),
                src_mac,
                ..
            } = cached.1
            else {
                continue;
            };
            let p = &s.parsed[i];
            if p.ttl <= 1 || p.l3_len > mtu {
                continue;
            }
            let Some(frame) = pkts.frame(i) else {
                continue;
            };
            if pkt::forward_rewrite(frame, p, dst_mac, src_mac).is_err() {
                continue;
            }
            // One segment (step 1), so the frame's length is the wire length.
            let len = frame.len();
            let end = usize::from(p.l3_off) + usize::from(p.l3_len);
            // Received bytes as the general parse counts them: before trimming.
            tally.rx_bytes += len as u64;
            if len > end {
                pkts.trim_to(i, end);
            }
            if let Some(r) = rule[i] {
                // What the general classify counts: the trimmed length.
                rc.hit(r.slot(), len.min(end) as u32, clock.tick_ms);
            }
            s.verdict[i] = Verdict::Tx(port);
            rest &= !(1 << i);
        }
        rest
    }
}

#[cfg(test)]
#[path = "fast_tests.rs"]
mod tests;
