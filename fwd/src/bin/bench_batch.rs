//! Control-plane batches: what one small batch costs the control lcore on
//! large tables. Applies one-change batches (`route replace` of a route via
//! a gateway, then `route add`/`route del` of a new one) through the
//! daemon's own `apply_changes` to tables holding N routes via gateways
//! (the next hops the control plane names itself) and R ACL rules, and
//! reports microseconds per batch (best of 3 runs of 2,000 batches).
//!
//! ```text
//! bench_batch [--routes N] [--rules R]      (defaults: 100000, 10000)
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
    let (mut n, mut r) = (100_000u32, 10_000u32);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().and_then(|v| v.parse().ok());
        match (a.as_str(), v) {
            ("--routes", Some(v)) => n = v,
            ("--rules", Some(v)) => r = v,
            _ => {
                eprintln!("usage: bench_batch [--routes N] [--rules R]");
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
    println!("# bench_batch\n\n{n} routes via 8 gateways, {r} rules; us per one-change batch, best of 3 x 2000\n");
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
}
