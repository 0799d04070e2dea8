//! What the appliance answers or originates itself on the data path: ARP
//! replies, neighbour advertisements, echo replies (in place, see
//! [`crate::pkt::echo_reply_in_place`]), ICMP / ICMPv6 errors (in a fresh
//! buffer, rate limited per lcore), and the ARP / ND messages the control
//! side learns neighbours from (recorded, then handed over by the poll
//! loop).
//!
//! Which neighbour messages are handed over (the control side decides what
//! to learn from them, see [`crate::neigh`]):
//! - ARP requests for one of the port's addresses (answered here too), and
//!   gratuitous ARP (sender = target);
//! - ARP replies addressed to one of the port's addresses, or gratuitous;
//! - neighbour solicitations for the port's addresses that carry the
//!   sender's link-layer address (answered here too), and every
//!   neighbour advertisement with a target link-layer address;
//! - router solicitations on ports that send router advertisements.
//!
//! Everything else of ARP / ND is consumed and counted; with the host path
//! on, ARP replies and neighbour advertisements addressed to the appliance
//! also go to the port's kernel interface (its sockets resolve their peers
//! too: a BGP session's first SYN waits for the kernel's own ARP), and so
//! do router advertisements, redirects, and router solicitations on ports
//! that send no advertisements.

use std::net::IpAddr;

use crate::pkt::{self, ipproto, IcmpError, L3Kind, NeighMsg, Parsed};
use crate::stats::{DropReason, Event};

use crate::tables::PortInfo;

use super::pipeline::{Tally, Verdict};

/// Records `msg` (from packet `i`) for the control side.
#[inline]
fn record(learned: &mut [(u8, NeighMsg)], n: &mut usize, i: usize, msg: NeighMsg) {
    if let Some(slot) = learned.get_mut(*n) {
        *slot = (i as u8, msg);
        *n += 1;
    }
}

/// An ARP frame received on `port`.
#[cold]
pub fn arp(
    frame: &mut [u8],
    port: &PortInfo,
    learned: &mut [(u8, NeighMsg)],
    n: &mut usize,
    i: usize,
    host: bool,
) -> Verdict {
    let Some(msg) = pkt::parse_arp(frame) else {
        return Verdict::Drop(DropReason::NotIp);
    };
    let ours = |a: std::net::Ipv4Addr| port.owns(IpAddr::V4(a));
    match msg {
        NeighMsg::ArpRequest {
            sender_ip,
            target_ip,
            ..
        } if ours(target_ip) => {
            if !pkt::arp_reply_in_place(frame, port.mac, |a| ours(a.into())) {
                return Verdict::Drop(DropReason::NotIp);
            }
            if !sender_ip.is_unspecified() {
                record(learned, n, i, msg);
            }
            Verdict::Reply
        }
        NeighMsg::ArpRequest {
            sender_ip,
            target_ip,
            ..
        }
        | NeighMsg::ArpReply {
            sender_ip,
            target_ip,
            ..
        } if sender_ip == target_ip
            || (matches!(msg, NeighMsg::ArpReply { .. }) && ours(target_ip)) =>
        {
            record(learned, n, i, msg);
            if host && matches!(msg, NeighMsg::ArpReply { .. }) {
                Verdict::Punt
            } else {
                Verdict::Consumed
            }
        }
        _ => Verdict::Consumed,
    }
}

/// Whether `p` is neighbour discovery (ICMPv6 133-137).
#[inline(always)]
pub fn is_nd(p: &Parsed) -> bool {
    p.kind == L3Kind::V6 && p.proto == ipproto::ICMPV6 && is_nd_type(p.sport)
}

/// Whether an ICMPv6 type is neighbour discovery's (133-137: router and
/// neighbour solicitations and advertisements, redirects).
#[inline(always)]
pub fn is_nd_type(t: u16) -> bool {
    (133..=137).contains(&t)
}

/// Neighbour discovery (ICMPv6 133-137) received on `port`; `None` for
/// any other packet.
#[cold]
#[allow(clippy::too_many_arguments)]
pub fn neighbour_v6(
    frame: &mut [u8],
    p: &Parsed,
    port: &PortInfo,
    learned: &mut [(u8, NeighMsg)],
    n: &mut usize,
    i: usize,
    tally: &mut Tally,
    host: bool,
) -> Option<Verdict> {
    if !is_nd(p) {
        return None;
    }
    let Some(msg) = pkt::parse_nd(frame, p) else {
        // Redirects (137), advertisements of other routers (134) and
        // invalid messages (RFC 4861's checks) are not for the data path;
        // the kernel makes its own checks.
        return Some(if host {
            Verdict::Punt
        } else {
            Verdict::Consumed
        });
    };
    let v = match msg {
        NeighMsg::Solicitation { src, target, sll } if port.owns(IpAddr::V6(target)) => {
            let ours = |a: u128| port.owns(IpAddr::V6(a.into()));
            if !pkt::nd_reply_in_place(frame, p, port.mac, ours) {
                return Some(Verdict::Consumed);
            }
            if !src.is_unspecified() && sll.is_some() {
                record(learned, n, i, msg);
            }
            Verdict::Reply
        }
        NeighMsg::Advertisement { tll: Some(_), .. } => {
            record(learned, n, i, msg);
            if host {
                Verdict::Punt
            } else {
                Verdict::Consumed
            }
        }
        NeighMsg::RouterSolicitation { .. } if port.ra => {
            record(learned, n, i, msg);
            Verdict::Consumed
        }
        NeighMsg::RouterSolicitation { .. } if host => Verdict::Punt,
        NeighMsg::RouterSolicitation { .. } => {
            tally.event(Event::RsIgnored);
            Verdict::Consumed
        }
        _ => Verdict::Consumed,
    };
    Some(v)
}

/// The IPv4 DF bit of the parsed packet.
#[inline]
pub fn dont_fragment(frame: &[u8], p: &Parsed) -> bool {
    frame
        .get(usize::from(p.l3_off) + 6)
        .is_some_and(|b| b & 0x40 != 0)
}

/// Why no ICMP error was built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoError {
    /// RFC 1812 4.3.2.7 / RFC 4443 2.4 forbid one about this packet, or
    /// the port has no address to send it from.
    NotAllowed,
    /// Over the rate limit.
    RateLimited,
}

/// Writes the frame of ICMP error `err` about `frame` (received on `port`)
/// into `out`: from the port's address of the packet's family (RFC 1812
/// 4.3.2.4) back to the frame's sender. The rules are checked first, the
/// rate limit next (a token is spent only on an error that may go), and
/// the frame is built last, so a flood over the limit costs a few
/// comparisons per packet.
pub fn error_frame(
    out: &mut [u8],
    frame: &[u8],
    p: &Parsed,
    err: IcmpError,
    port: &PortInfo,
    limiter: &mut TokenBucket,
    now_ns: u64,
) -> Result<usize, NoError> {
    if !pkt::may_send_error(frame, p, err) {
        return Err(NoError::NotAllowed);
    }
    let src = match p.src_addr() {
        IpAddr::V4(peer) => IpAddr::V4(port.source_v4(peer).ok_or(NoError::NotAllowed)?),
        IpAddr::V6(peer) => IpAddr::V6(port.source_v6(peer)),
    };
    if !limiter.allow(now_ns) {
        return Err(NoError::RateLimited);
    }
    pkt::build_error(out, frame, p, err, src, port.mac).ok_or(NoError::NotAllowed)
}

/// A token bucket, per lcore: for ICMP errors (Linux: `icmp_msgs_per_sec`
/// 1000, `icmp_msgs_burst` 50) and for packets punted to a host
/// interface. Time is passed in, in nanoseconds.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    /// Nanoseconds of credit; one error costs `cost_ns`.
    credit_ns: u64,
    cost_ns: u64,
    max_ns: u64,
    last_ns: u64,
}

impl TokenBucket {
    /// `rate` per second with bursts of `burst`; a rate of 0 allows
    /// nothing.
    pub fn new(rate: u32, burst: u32) -> TokenBucket {
        let cost_ns = if rate == 0 {
            u64::MAX
        } else {
            1_000_000_000 / u64::from(rate)
        };
        let max_ns = cost_ns.saturating_mul(u64::from(burst.max(1)));
        TokenBucket {
            credit_ns: max_ns,
            cost_ns,
            max_ns,
            last_ns: 0,
        }
    }

    /// Whether one more may go at `now_ns`; takes its token if so.
    #[inline]
    pub fn allow(&mut self, now_ns: u64) -> bool {
        if self.cost_ns == u64::MAX {
            return false;
        }
        let elapsed = now_ns.saturating_sub(self.last_ns);
        self.last_ns = self.last_ns.max(now_ns);
        self.credit_ns = self.credit_ns.saturating_add(elapsed).min(self.max_ns);
        if self.credit_ns >= self.cost_ns {
            self.credit_ns -= self.cost_ns;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limiter_allows_a_burst_then_the_rate() {
        let mut l = TokenBucket::new(1000, 50);
        let t0 = 5_000_000_000;
        let burst = (0..200).filter(|_| l.allow(t0)).count();
        assert_eq!(burst, 50);
        // One more token per millisecond.
        assert!(!l.allow(t0 + 999_999));
        assert!(l.allow(t0 + 1_000_000));
        assert!(!l.allow(t0 + 1_000_000));
        // Over one second: 1000 more, never more than the burst at once.
        let mut sent = 0;
        for k in 1..=1000u64 {
            if l.allow(t0 + 1_000_000 + k * 1_000_000) {
                sent += 1;
            }
        }
        assert_eq!(sent, 1000);
        let later = t0 + 100_000_000_000;
        assert_eq!((0..200).filter(|_| l.allow(later)).count(), 50);
    }

    #[test]
    fn a_zero_rate_sends_nothing() {
        let mut l = TokenBucket::new(0, 50);
        assert!(!l.allow(1));
        assert!(!l.allow(u64::MAX));
    }
}
