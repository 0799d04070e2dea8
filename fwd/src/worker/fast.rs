//! The forwarding fast path: routed IPv4 traffic in two passes over the
//! burst, around one batched classification and one batched lookup.
//!
//! The general stages ([`super::pipeline`]) give every packet a verdict and
//! pass over the burst once per stage to refine it, so that every case
//! (neighbour protocols, local delivery, ICMP errors, fragmentation, the
//! host path) has its place. For the common packet (IPv4 with a valid
//! header, unicast, routed to a resolved next hop on an up port, TTL > 1,
//! within the MTU) that costs more than the work itself. Here:
//!
//! 1. recognise the common frame ([`pkt::parse_plain_v4`]: untagged IPv4
//!    UDP or TCP without options, header checksum good), gather the
//!    destinations;
//! 2. while rules are loaded, one
//!    [`Classifier::classify_burst`](crate::acl::Classifier::classify_burst):
//!    a packet goes on only if its first match merely permits
//!    ([`RuleEntry::only_permits`]) or nothing matches;
//! 3. one [`Routing::lookup4_burst`](crate::route::Routing::lookup4_burst);
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
use crate::pkt;
use crate::route::Resolved;

use super::pipeline::{
    egress, is_multicast, key_of, Clock, Egress, Packets, Pipeline, Scratch, Tally, Verdict,
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
        if !t.port(self.in_port).is_some_and(|p| p.is_up()) {
            return first(n);
        }
        let mut n4 = 0;
        for i in 0..n {
            pkts.prefetch(i + 1);
            if pkts.segments(i) != 1 {
                continue;
            }
            let nic_csum = pkts.ip_csum(i);
            let Some(frame) = pkts.frame(i) else {
                continue;
            };
            let p = &mut s.parsed[i];
            if !pkt::parse_plain_v4(frame, nic_csum, p) || is_multicast(p) {
                continue;
            }
            s.v4_idx[n4] = i as u8;
            s.v4_dst[n4] = s.parsed[i].dst_v4();
            n4 += 1;
        }
        let mut rest = first(n);
        // The first match of each packet that goes on (None: no match).
        let mut rule: [Option<&RuleEntry>; BURST] = [None; BURST];
        if n4 > 0 && !t.acl.is_empty() {
            for k in 0..n4 {
                let p = &s.parsed[usize::from(s.v4_idx[k])];
                s.keys[k] = key_of(p, self.in_port as u16);
            }
            let mut found: [Option<&RuleEntry>; BURST] = [None; BURST];
            t.acl.classify_burst(&s.keys[..n4], &mut found[..n4]);
            let mut m = 0;
            for (k, &hit) in found[..n4].iter().enumerate() {
                if hit.is_some_and(|r| !r.only_permits()) {
                    continue;
                }
                s.v4_idx[m] = s.v4_idx[k];
                s.v4_dst[m] = s.v4_dst[k];
                rule[m] = hit;
                m += 1;
            }
            n4 = m;
        }
        if n4 == 0 {
            return rest;
        }
        let (parsed, idx) = (&s.parsed, &s.v4_idx);
        let hash = |k: usize| pkt::flow_hash(&parsed[usize::from(idx[k])]);
        t.routing.lookup4_burst(
            t.port_vrf(self.in_port),
            &s.v4_dst[..n4],
            hash,
            &mut s.v4_out[..n4],
        );
        // Packets of a burst mostly share a next hop: resolve it once.
        let mut cached = (u32::MAX, Egress::Drop(crate::stats::DropReason::NoRoute));
        for (k, &hit) in rule[..n4].iter().enumerate() {
            let Resolved::Forward(nh) = s.v4_out[k] else {
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
            let i = usize::from(s.v4_idx[k]);
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
            let trim = frame.len() > usize::from(p.l3_off) + usize::from(p.l3_len);
            // Received bytes as the general parse counts them: before trimming.
            tally.rx_bytes += u64::from(pkts.wire_len(i));
            if trim {
                pkts.trim_to(i, usize::from(p.l3_off) + usize::from(p.l3_len));
            }
            if let Some(r) = hit {
                // What the general classify counts: the trimmed length.
                rc.hit(r.slot(), pkts.wire_len(i), clock.tick_ms);
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
