//! `fwd-flows`: writes a pcap of UDP flows for replay into the appliance
//! (the demo and the throughput benchmark feed it to `net_pcap`).
//!
//! ```text
//! fwd-flows OUT.pcap [--flows N] [--size BYTES] [--v6]
//!           [--src A.B.C.D] [--dst A.B.C.D] [--dst-count N] [--dst-mac MAC]
//! ```
//! Flow `i` goes from `src + i/dst-count` to `dst + i % dst-count` with source
//! port `1024 + i % 50000`; `--dst-count` spreads flows over that many
//! destinations (e.g. one per route). With `--v6` the same 32-bit numbers
//! become `fd00::<src>` and `fd01:0:<dst>::1` (each destination in a /64 of
//! its own).

use std::net::{Ipv4Addr, Ipv6Addr};

use anyhow::{anyhow, bail, Context, Result};
use fwd::pkt::{build, pcap};

const USAGE: &str = "usage: fwd-flows OUT.pcap [--flows N] [--size BYTES] [--v6] \
[--src A.B.C.D] [--dst A.B.C.D] [--dst-count N] [--dst-mac MAC]";

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let mut out = None;
    let mut flows = 4096u32;
    let mut size = 64usize;
    let mut v6 = false;
    let mut src: Ipv4Addr = "10.0.0.1".parse()?;
    let mut dst: Ipv4Addr = "10.1.0.1".parse()?;
    let mut dst_count = 1000u32;
    let mut dst_mac = [0x02, 0, 0, 0, 0, 0xfe];
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or_else(|| anyhow!("{a} needs a value"));
        match a.as_str() {
            "--flows" => flows = val()?.parse().context("--flows")?,
            "--size" => size = val()?.parse().context("--size")?,
            "--v6" => v6 = true,
            "--src" => src = val()?.parse().context("--src")?,
            "--dst" => dst = val()?.parse().context("--dst")?,
            "--dst-count" => dst_count = val()?.parse().context("--dst-count")?,
            "--dst-mac" => {
                dst_mac = fwd::config::parse_mac(&val()?).map_err(|e| anyhow!("--dst-mac: {e}"))?
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            s if s.starts_with('-') => bail!("unknown option {s}\n{USAGE}"),
            s => out = Some(s.to_string()),
        }
    }
    let out = out.ok_or_else(|| anyhow!("{USAGE}"))?;
    if flows == 0 || dst_count == 0 {
        bail!("--flows and --dst-count must be positive");
    }
    if !(60..=9000).contains(&size) {
        bail!("--size must be 60..=9000 (frame bytes without FCS)");
    }
    let spec = build::FrameSpec {
        dst_mac,
        min_len: size,
        ..Default::default()
    };
    let hdr = if v6 { 14 + 40 + 8 } else { 14 + 20 + 8 };
    let payload = vec![0u8; size.saturating_sub(hdr)];
    let mut frames = Vec::with_capacity(flows as usize);
    for i in 0..flows {
        let s = u32::from(src).wrapping_add(i / dst_count);
        let d = u32::from(dst).wrapping_add(i % dst_count);
        let sport = 1024 + (i % 50000) as u16;
        let f = if v6 {
            let s6 = Ipv6Addr::from(0xfd00_0000_0000_0000_0000_0000_0000_0000u128 | u128::from(s));
            // Each IPv4-style destination its own /64: fd01:0:AAAA:BBBB::1.
            let d6 =
                Ipv6Addr::from(0xfd01_0000_0000_0000_0000_0000_0000_0001u128 | u128::from(d) << 64);
            build::udp6(&spec, s6, d6, sport, 9, &payload)
        } else {
            build::udp4(
                &spec,
                Ipv4Addr::from(s),
                Ipv4Addr::from(d),
                sport,
                9,
                &payload,
            )
        };
        frames.push(f);
    }
    pcap::write(&out, &frames).with_context(|| format!("writing {out}"))?;
    eprintln!("fwd-flows: wrote {flows} frames of {size} bytes to {out}");
    Ok(())
}
