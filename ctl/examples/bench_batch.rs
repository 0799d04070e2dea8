//! Cost of a full-table batch on the protocol path, without a daemon:
//! parse the batch text (what `fwdctl -b` does), encode the batch request
//! (what it sends), decode it (what the daemon's server does), and print
//! it back as text (what `config save` does).
//!
//! `cargo run --release -p ctl --example bench_batch [-- FILE]`: FILE holds
//! one IPv4 or IPv6 prefix per line (e.g. the unzipped IPv4 table of
//! `$FWD_DATA/routing`); without it, 900k distinct synthetic /24s.

use std::time::Instant;

use ctl::codec::BatchEncoder;
use ctl::text::{for_each_change, parse_batch};
use ctl::wire::{Request, RequestLine};

fn main() {
    let prefixes: Vec<String> = match std::env::args().nth(1) {
        Some(f) => std::fs::read_to_string(&f)
            .unwrap_or_else(|e| panic!("{f}: {e}"))
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(str::to_string)
            .collect(),
        None => (0..900_000u32)
            .map(|i| {
                let a = 0x0100_0000 + (i << 8);
                format!("{}.{}.{}.0/24", a >> 24, (a >> 16) & 255, (a >> 8) & 255)
            })
            .collect(),
    };
    let mut text = String::with_capacity(prefixes.len() * 48);
    for (i, p) in prefixes.iter().enumerate() {
        let dev = ["p0", "p1", "p2", "p3"][i % 4];
        let via = if p.contains(':') {
            "2001:db8::1"
        } else {
            "10.0.1.2"
        };
        text.push_str(&format!("route add {p} via {via} dev {dev}\n"));
    }
    println!(
        "lines: {}  text: {:.1} MB",
        prefixes.len(),
        text.len() as f64 / 1e6
    );

    let t = Instant::now();
    let parsed = parse_batch(&text).expect("batch parses");
    let parse = t.elapsed();
    println!(
        "parse_batch:     {:>7.1} ms  ({:.0} ns/line)",
        parse.as_secs_f64() * 1e3,
        parse.as_nanos() as f64 / prefixes.len() as f64
    );

    // What `fwdctl -b` does: encode each change as it is parsed.
    let t = Instant::now();
    let mut enc = BatchEncoder::with_capacity(text.len() / 2 * 5);
    let mut lines = Vec::with_capacity(text.len() / 40);
    for_each_change(&text, |l, c| {
        enc.push(&c).expect("encodes");
        lines.push(l);
    })
    .expect("batch parses");
    let streamed = enc.finish();
    let fwdctl = t.elapsed();
    println!(
        "parse+encode:    {:>7.1} ms  (fwdctl -b: each change encoded as parsed)",
        fwdctl.as_secs_f64() * 1e3
    );

    let line = RequestLine {
        id: 1,
        request: Request::Batch {
            changes: parsed.changes,
        },
    };
    let t = Instant::now();
    let json = serde_json::to_vec(&line).expect("encodes");
    let enc = t.elapsed();
    println!(
        "encode request:  {:>7.1} ms  ({:.1} MB line, {:.0} bytes/change)",
        enc.as_secs_f64() * 1e3,
        json.len() as f64 / 1e6,
        json.len() as f64 / prefixes.len() as f64
    );

    assert_eq!(
        &json[b"{\"id\":1,\"request\":".len()..json.len() - 1],
        streamed.as_bytes()
    );

    let t = Instant::now();
    let back: RequestLine = ctl::decode(&json).expect("decodes");
    let dec = t.elapsed();
    println!("decode request:  {:>7.1} ms", dec.as_secs_f64() * 1e3);
    assert_eq!(back, line);

    let Request::Batch { changes } = &back.request else {
        return;
    };
    let t = Instant::now();
    let mut saved = String::with_capacity(text.len());
    for c in changes {
        use std::fmt::Write;
        let _ = writeln!(saved, "{c}");
    }
    let fmt = t.elapsed();
    println!("format as text:  {:>7.1} ms", fmt.as_secs_f64() * 1e3);
    assert_eq!(saved, text);
    println!(
        "client side (fwdctl -b): {:.1} ms; server decode: {:.1} ms",
        fwdctl.as_secs_f64() * 1e3,
        dec.as_secs_f64() * 1e3
    );
}
