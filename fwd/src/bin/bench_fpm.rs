//! FPM ingest: how fast zebra's route stream becomes table generations.
//!
//! Builds the stream zebra's `dplane_fpm_nl` sends for a full table (one
//! `RTM_NEWROUTE` per prefix, BGP, next hops spread over 8 gateways on two
//! interfaces; the encoder's bytes match FRR 8.4's, see `fpm::codec`'s
//! tests), then feeds it in 1 MiB reads, as the FPM thread reads its
//! socket, through the daemon's own code: decode, translate, apply (one
//! generation per read) and publish. Then the same for the withdrawals.
//!
//! ```text
//! cargo run --release --bin bench_fpm [-- --data DIR] [--rounds N] [--shuffle] [--generation-mib M]
//! ```
//! `--generation-mib M`: M reads (M MiB of the stream) make one generation
//! (default 1, as the FPM thread hands them over): what larger generations
//! would give (`bench-results/fpm.md`, 2026-12-07).
//! The stream is in the table file's order (sorted by prefix) unless
//! `--shuffle`: then in a fixed random order. zebra's real order lies in
//! between (bgpd packs prefixes of equal attributes into one UPDATE, each
//! group in table order).
//! `DIR` (default `$FWD_DATA/routing`, see `fwd::corpus`) holds
//! `ipv4_fulltable_gaissmai.txt.gz` and `ipv6_fulltable_gaissmai.txt`;
//! without them a synthetic table of 900k IPv4 /24s is used (said so in the
//! output).

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use fwd::acl;
use fwd::control::fpm::{FpmControl, FpmEvent, FpmSettings, Ingest, Translate};
use fwd::fpm::codec::{self, Path as NlPath, RouteKind, RouteOp, RouteUpdate};
use fwd::qsbr::{self, QsbrConfig};
use fwd::route::{loader, Prefix};
use fwd::tables::Tables;

#[path = "common/lab.rs"]
mod lab;

const CHUNK: usize = 1 << 20;

fn prefixes(dir: &Path) -> (Vec<Prefix>, String) {
    let v4 = dir.join("ipv4_fulltable_gaissmai.txt.gz");
    let v6 = dir.join("ipv6_fulltable_gaissmai.txt");
    match (loader::read_prefixes(&v4), loader::read_prefixes(&v6)) {
        (Ok(mut a), Ok(b)) => {
            let what = format!("full view: {} IPv4 + {} IPv6 prefixes", a.len(), b.len());
            a.extend(b);
            (a, what)
        }
        (Err(e), _) | (_, Err(e)) => synthetic(&format!("{}: {e}", dir.display())),
    }
}

/// 900k distinct IPv4 /24s, with the reason the real table was not used.
fn synthetic(why: &str) -> (Vec<Prefix>, String) {
    let a: Vec<Prefix> = (0..900_000u32)
        .map(|i| Prefix::V4(fwd::route::Prefix4::new((0x0100_0000 + i) << 8, 24).unwrap()))
        .collect();
    (a, format!("SYNTHETIC 900k IPv4 /24s ({why})"))
}

fn stream(prefixes: &[Prefix], op: RouteOp) -> Vec<u8> {
    let mut out = Vec::with_capacity(prefixes.len() * 64);
    for (i, p) in prefixes.iter().enumerate() {
        let (dst, len, gw): (IpAddr, u8, IpAddr) = match p {
            Prefix::V4(q) => (
                IpAddr::from(q.addr().to_be_bytes()),
                q.len(),
                IpAddr::from([10, (i % 2) as u8, 0, 2 + (i % 4) as u8]),
            ),
            Prefix::V6(q) => (
                IpAddr::from(q.addr().to_be_bytes()),
                q.len(),
                format!("fd00:{}::{}", i % 2, 2 + i % 4).parse().unwrap(),
            ),
        };
        let add = op == RouteOp::Add;
        let u = RouteUpdate {
            op,
            table: 254,
            dst,
            len,
            proto: 186,
            kind: if add {
                RouteKind::Unicast
            } else {
                RouteKind::Unspec
            },
            metric: Some(20),
            paths: if add {
                vec![NlPath {
                    gateway: Some(gw),
                    ifindex: Some(10 + (i % 2) as u32),
                    weight: 1,
                    onlink: false,
                }]
            } else {
                Vec::new()
            },
            nh_id: None,
        };
        codec::encode(&u, 0, &mut out).expect("encodable");
    }
    out
}

/// What one pass of [`ingest`] took.
struct Took {
    /// Seconds, all of it.
    total: f64,
    /// Seconds in decode + translate (the daemon's FPM thread).
    feed: f64,
    generations: u64,
}

/// Feeds `bytes` in reads of `CHUNK`, `reads` of them a generation.
fn ingest(
    bytes: &[u8],
    reads: usize,
    tr: &Translate,
    c: &mut FpmControl,
    w: &mut qsbr::Writer<Tables>,
    acl_w: &acl::ClassifierWriter,
) -> Took {
    let g0 = w.generation();
    let t = Instant::now();
    let mut feed = 0.0;
    let mut ing = Ingest::new(tr);
    for generation in bytes.chunks(CHUNK * reads) {
        let mut ops = Vec::new();
        for chunk in generation.chunks(CHUNK) {
            let f = Instant::now();
            let mut r = ing.feed(chunk);
            feed += f.elapsed().as_secs_f64();
            assert!(r.broken.is_none() && r.refused == 0, "{:?}", r.last_error);
            // Made one list outside the FPM thread's share (the apply's).
            if ops.is_empty() {
                ops = std::mem::take(&mut r.ops);
            } else {
                ops.append(&mut r.ops);
            }
        }
        c.event(FpmEvent::Batch(ops), w, acl_w, Instant::now());
        w.reclaim();
    }
    Took {
        total: t.elapsed().as_secs_f64(),
        feed,
        generations: w.generation() - g0,
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut data: Option<PathBuf> = None;
    let mut rounds = 3;
    let mut shuffle = false;
    let mut reads = 1;
    let usage = || -> ! {
        eprintln!("usage: bench_fpm [--data DIR] [--rounds N] [--shuffle] [--generation-mib M]");
        std::process::exit(2)
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--data" => data = args.next().map(PathBuf::from),
            "--rounds" => rounds = args.next().and_then(|n| n.parse().ok()).unwrap_or(3),
            "--shuffle" => shuffle = true,
            "--generation-mib" => {
                reads = match args.next().and_then(|n| n.parse().ok()) {
                    Some(m) if m > 0 => m,
                    _ => usage(),
                }
            }
            _ => usage(),
        }
    }
    let (mut pfx, mut what) = match data.map_or_else(|| fwd::corpus::dir("routing"), Ok) {
        Ok(dir) => prefixes(&dir),
        Err(e) => synthetic(&e),
    };
    if shuffle {
        // Fisher-Yates with xorshift64*, fixed seed: the same order every run.
        let mut x = 0x0123_4567_89ab_cdefu64;
        for i in (1..pfx.len()).rev() {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            let r = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
            pfx.swap(i, (r % (i as u64 + 1)) as usize);
        }
        what += ", in a fixed random order (--shuffle)";
    } else {
        what += ", in the file's order (sorted by prefix)";
    }
    let n = pfx.len() as f64;
    let adds = stream(&pfx, RouteOp::Add);
    let dels = stream(&pfx, RouteOp::Del);
    println!("# bench_fpm\n\n{what}; stream {:.1} MB of adds, {:.1} MB of deletes, read in {} KiB chunks, {reads} a generation.\n",
        adds.len() as f64 / 1e6, dels.len() as f64 / 1e6, CHUNK / 1024);
    println!("Per route: the FPM thread's share (decode + translate) and the control lcore's (apply + publish), in us.\n");
    println!("| round | decode only (M msg/s) | ingest adds (M routes/s) | adds: decode+translate / apply (us) | generations | ingest deletes (M routes/s) | deletes: decode+translate / apply (us) |");
    println!("|---|---|---|---|---|---|---|");
    let tr = Translate::new(
        [(254, 0)].into_iter().collect(),
        [(10, 0u16), (11, 1)].into_iter().collect::<HashMap<_, _>>(),
    );
    for round in 1..=rounds {
        let t = Instant::now();
        let mut dec = codec::Decoder::new();
        let mut msgs = 0u64;
        for chunk in adds.chunks(CHUNK) {
            dec.feed(chunk);
            while let Ok(Some(_)) = dec.next() {
                msgs += 1;
            }
        }
        let dec_s = t.elapsed().as_secs_f64();
        assert_eq!(msgs as f64, n);

        let (t0, acl_w) = lab::two_ports();
        let mut w = qsbr::domain(t0, QsbrConfig::default());
        let settings = FpmSettings {
            listen: "127.0.0.1:0".parse().unwrap(),
            stale: std::time::Duration::from_secs(60),
            tables: [(254, 0)].into_iter().collect(),
            allowed_uids: None,
        };
        let mut c = FpmControl::new(&settings, Arc::default());
        c.event(FpmEvent::Connected, &mut w, &acl_w, Instant::now());
        let add = ingest(&adds, reads, &tr, &mut c, &mut w, &acl_w);
        let (v4, v6) = w.current().routing.route_count(0);
        assert_eq!(c.rib().len() as f64, n, "every route held");
        assert!(v4 + v6 >= pfx.len(), "every route installed");
        let del = ingest(&dels, reads, &tr, &mut c, &mut w, &acl_w);
        assert_eq!(c.rib().len(), 0);
        let us = |s: f64| s * 1e6 / n;
        println!(
            "| {round} | {:.2} | {:.2} ({:.2} s) | {:.2} / {:.2} | {} | {:.2} ({:.2} s) | {:.2} / {:.2} |",
            n / dec_s / 1e6,
            n / add.total / 1e6,
            add.total,
            us(add.feed),
            us(add.total - add.feed),
            add.generations,
            n / del.total / 1e6,
            del.total,
            us(del.feed),
            us(del.total - del.feed),
        );
    }
}
