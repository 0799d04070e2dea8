//! IPv6 router advertisements (RFC 4861 6.2), sent by the control side
//! through a worker like every frame it originates.
//!
//! A port with `ra:` in its config advertises itself as a default router
//! with its prefixes (the configured ones, else its own IPv6 prefixes) and
//! its MTU: to all nodes every `interval_s` (jittered by up to a quarter,
//! as RFC 4861 6.2.4 asks, so routers on one link do not synchronise), and
//! in answer to a router solicitation, at most once every
//! [`MIN_DELAY_BETWEEN_RAS_MS`] per port. Ports without `ra:` send none;
//! the workers count the solicitations they get as `rs_ignored`.

use std::net::Ipv6Addr;

use crate::pkt::{self, RaParams};
use crate::tables::PortInfo;

/// RFC 4861 10: MIN_DELAY_BETWEEN_RAS.
pub const MIN_DELAY_BETWEEN_RAS_MS: u64 = 3_000;

/// One port's advertisement settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaSettings {
    /// Prefixes to advertise; empty: the port's own IPv6 prefixes.
    pub prefixes: Vec<(Ipv6Addr, u8)>,
    pub interval_ms: u64,
    pub lifetime_s: u16,
    pub mtu: bool,
}

#[derive(Clone, Debug)]
struct PortState {
    settings: RaSettings,
    next_ms: u64,
    last_sent_ms: Option<u64>,
    /// A solicitation arrived while the rate limit held.
    pending: bool,
}

/// The advertisement schedule of every port.
pub struct Advertiser {
    ports: Vec<Option<PortState>>,
    seed: u64,
}

impl Advertiser {
    /// Settings by port index (`None`: the port sends none).
    pub fn new(settings: Vec<Option<RaSettings>>) -> Advertiser {
        Advertiser {
            ports: settings
                .into_iter()
                .map(|s| {
                    s.map(|settings| PortState {
                        settings,
                        next_ms: 0,
                        last_sent_ms: None,
                        pending: false,
                    })
                })
                .collect(),
            seed: 0x9e37_79b9_7f4a_7c15,
        }
    }

    /// Whether port `port` advertises.
    pub fn enabled(&self, port: usize) -> bool {
        self.ports.get(port).is_some_and(Option::is_some)
    }

    /// A router solicitation arrived on `port`.
    pub fn solicited(&mut self, port: usize) {
        if let Some(Some(p)) = self.ports.get_mut(port) {
            p.pending = true;
        }
    }

    /// The ports whose advertisement is due at `now_ms` (scheduled, or
    /// solicited and past the rate limit); reschedules them.
    pub fn due(&mut self, now_ms: u64) -> Vec<usize> {
        let mut out = Vec::new();
        for (i, p) in self.ports.iter_mut().enumerate() {
            let Some(p) = p else {
                continue;
            };
            let limited = p
                .last_sent_ms
                .is_some_and(|t| now_ms.saturating_sub(t) < MIN_DELAY_BETWEEN_RAS_MS);
            if (now_ms >= p.next_ms || p.pending) && !limited {
                out.push(i);
                p.pending = false;
                p.last_sent_ms = Some(now_ms);
                // xorshift: jitter in [3/4, 1] of the interval.
                self.seed ^= self.seed << 13;
                self.seed ^= self.seed >> 7;
                self.seed ^= self.seed << 17;
                let quarter = (p.settings.interval_ms / 4).max(1);
                p.next_ms = now_ms + p.settings.interval_ms - self.seed % quarter;
            }
        }
        out
    }

    /// The advertisement frame of `port` into `out`.
    pub fn frame(&self, port: usize, info: &PortInfo, out: &mut [u8]) -> Option<usize> {
        let s = &self.ports.get(port)?.as_ref()?.settings;
        let own: Vec<(Ipv6Addr, u8)>;
        let prefixes = if s.prefixes.is_empty() {
            own = info
                .addresses
                .iter()
                .filter_map(|n| match n.subnet() {
                    crate::route::Prefix::V6(p) if n.has_peers() => {
                        Some((p.addr().into(), p.len()))
                    }
                    _ => None,
                })
                .collect();
            &own
        } else {
            &s.prefixes
        };
        let params = RaParams {
            hop_limit: 64,
            lifetime_s: s.lifetime_s,
            mtu: s.mtu.then_some(u32::from(info.mtu)),
            prefixes,
            valid_s: 2_592_000,
            preferred_s: 604_800,
        };
        let all_nodes = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
        pkt::build_ra(
            out,
            info.mac,
            Ipv6Addr::from(info.link_local),
            all_nodes,
            None,
            &params,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adv() -> Advertiser {
        Advertiser::new(vec![
            None,
            Some(RaSettings {
                prefixes: Vec::new(),
                interval_ms: 200_000,
                lifetime_s: 1800,
                mtu: true,
            }),
        ])
    }

    #[test]
    fn advertises_on_schedule_and_on_solicitation_within_the_rate_limit() {
        let mut a = adv();
        assert!(!a.enabled(0) && a.enabled(1));
        assert_eq!(a.due(0), vec![1], "first advertisement at start");
        assert!(a.due(1_000).is_empty());
        a.solicited(1);
        assert!(a.due(2_000).is_empty(), "rate limited");
        assert_eq!(a.due(3_000), vec![1], "the solicitation is answered");
        assert!(a.due(100_000).is_empty());
        assert_eq!(
            a.due(203_000),
            vec![1],
            "the interval is at most the configured one"
        );
        a.solicited(0);
        assert!(a.due(203_001).is_empty(), "ports without ra stay silent");
    }

    #[test]
    fn the_frame_carries_the_ports_prefixes_and_mtu() {
        let a = adv();
        let mut info = PortInfo::new("p", [2, 0, 0, 0, 0, 1], 0);
        info.addresses = vec![
            crate::control::ifaddr_of("2001:db8:1::1/64".parse().unwrap()),
            crate::control::ifaddr_of("10.0.0.1/24".parse().unwrap()),
        ];
        info.mtu = 1400;
        let mut buf = [0u8; 256];
        let len = a.frame(1, &info, &mut buf).expect("built");
        let f = &buf[..len];
        let p = pkt::parse(f).expect("parses");
        assert_eq!(p.sport, 134, "router advertisement");
        assert_eq!(f[..6], [0x33, 0x33, 0, 0, 0, 1]);
        let body = &f[14 + 40..];
        let mtu_opt = body
            .windows(8)
            .any(|w| w[..4] == [5, 1, 0, 0] && w[4..] == 1400u32.to_be_bytes());
        assert!(mtu_opt, "MTU option");
        let prefix = "2001:db8:1::".parse::<Ipv6Addr>().unwrap().octets();
        assert!(body.windows(16).any(|w| w == prefix), "prefix option");
        assert!(a.frame(0, &info, &mut buf).is_none());
    }
}
