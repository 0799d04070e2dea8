//! Control-plane batches: what one small batch costs the control lcore on
//! large tables. Applies one-change batches (`route replace` of a route via
//! a gateway, then `route add`/`route del` of a new one) through the
//! daemon's own `apply_changes` to tables holding N routes via gateways
//! (the next hops the control plane names itself), R ACL rules and K
//! neighbours learned on port b (each with its host route), and reports
//! microseconds per batch (best of 3 runs of 2,000 batches). With K > 0 it
//! also times one learned neighbour's new MAC, as the ARP/ND side
//! publishes it (`apply_learned`).
//!
//! ```text
//! bench_batch [--routes N] [--rules R] [--learned K]   (defaults: 100000, 10000, 0)
//! ```

use std::net::IpAddr;
use std::time::Instant;

use ctl::wire::{self, Change, Route, RouteTarget};
use fwd::acl;
use fwd::tables::Tables;

#[path = "common/lab.rs"]
mod lab;

fn route(i: u32, gw: u32) -> Route {
    Route {
        linkdown: false,
        proto: None,
        prefix: format!("{}.{}.{}.0/24", 20 + (i >> 16), (i >> 8) & 255, i & 255)
            .parse()
            .expect("prefix"),
        table: 0,
        target: RouteTarget::Gateway {
            via: Some(IpAddr::from([10, 0, 0, 2 + (gw % 8) as u8])),
            dev: Some("a".into()),
        },
    }
}

fn apply(t: &Tables, acl_w: &mut acl::ClassifierWriter, changes: &[Change]) -> Tables {
    fwd::control::apply_changes(t, acl_w, changes, None)
        .unwrap_or_else(|e| panic!("{e}"))
        .tables
}

fn main() {
    let (mut n, mut r, mut k) = (100_000u32, 10_000u32, 0u32);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().and_then(|v| v.parse().ok());
        match (a.as_str(), v) {
            ("--routes", Some(v)) => n = v,
            ("--rules", Some(v)) => r = v,
            ("--learned", Some(v)) => k = v,
            _ => {
                eprintln!("usage: bench_batch [--routes N] [--rules R] [--learned K]");
                std::process::exit(2);
            }
        }
    }
    let (t, mut acl_w) = lab::two_ports();
    let adds: Vec<Change> = (0..n).map(|i| Change::RouteAdd(route(i, i))).collect();
    let t = apply(&t, &mut acl_w, &adds);
    let rules: String = (1..=r)
        .map(|i| {
            format!(
                "rule add id {i} prio {i} dst 30.{}.{}.0/24 proto udp action drop\n",
                i >> 8 & 255,
                i & 255
            )
        })
        .collect();
    let t = if r > 0 {
        let batch = ctl::text::parse_batch(&rules).expect("rules parse");
        apply(&t, &mut acl_w, &batch.changes)
    } else {
        t
    };
    // K neighbours learned on b (fd00:1::/64), as the ARP/ND side publishes
    // them, in batches of 1000.
    let neighbour = |i: u32| {
        IpAddr::from(std::net::Ipv6Addr::from(
            (0xfd00_0001u128 << 96) | 0x1_0000 | u128::from(i),
        ))
    };
    let mac = |i: u32, v: u8| [2, 0xbe, v, (i >> 16) as u8, (i >> 8) as u8, i as u8];
    let mut t = t;
    for first in (0..k).step_by(1000) {
        let ups: Vec<_> = (first..k.min(first + 1000))
            .map(|i| (1u16, neighbour(i), Some(mac(i, 0))))
            .collect();
        t = fwd::control::apply_learned(&t, &acl_w, &ups, None).unwrap_or_else(|e| panic!("{e}"));
    }
    println!("# bench_batch\n\n{n} routes via 8 gateways, {r} rules, {k} learned neighbours; us per one-change batch, best of 3 x 2000\n");
    println!("| batch | us |\n|---|---|");
    let m = 2000u32;
    type Make = Box<dyn Fn(u32) -> Vec<Change>>;
    let cases: [(&str, Make); 2] = [
        (
            "route replace (existing route, new gateway)",
            Box::new(move |k| vec![Change::RouteReplace(route((k * 7919) % n, k))]),
        ),
        (
            "route add, then route del of it",
            Box::new(move |k| {
                if k % 2 == 0 {
                    vec![Change::RouteAdd(route(n + k, k))]
                } else {
                    let p = route(n + k - 1, k).prefix;
                    vec![Change::RouteDel(wire::RouteDel {
                        prefix: p,
                        table: 0,
                        target: None,
                    })]
                }
            }),
        ),
    ];
    for (name, make) in &cases {
        let mut best = f64::MAX;
        for _ in 0..3 {
            let mut cur = t.clone();
            let st = Instant::now();
            for k in 0..m {
                cur = apply(&cur, &mut acl_w, &make(k));
            }
            best = best.min(st.elapsed().as_secs_f64() * 1e6 / f64::from(m));
        }
        println!("| {name} | {best:.1} |");
    }
    if k > 0 {
        let mut best = f64::MAX;
        for _ in 0..3 {
            let mut cur = t.clone();
            let st = Instant::now();
            for j in 0..m {
                let i = (j * 7919) % k;
                let up = [(1u16, neighbour(i), Some(mac(i, 1 + (j % 2) as u8)))];
                cur = fwd::control::apply_learned(&cur, &acl_w, &up, None)
                    .unwrap_or_else(|e| panic!("{e}"));
            }
            best = best.min(st.elapsed().as_secs_f64() * 1e6 / f64::from(m));
        }
        println!("| a learned neighbour's new MAC | {best:.1} |");
    }
}
