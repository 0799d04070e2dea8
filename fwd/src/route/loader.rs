//! Route files: one route per line, optionally gzip-compressed (detected by the
//! gzip magic bytes, not the file name).
//!
//! ```text
//! # comment; blank lines are ignored
//! 10.0.0.0/8                       # plain prefix: LoadOptions::default_target
//! 10.1.0.0/16 via nh 7             # an existing next hop
//! 10.2.0.0/16 via group 3          # an existing ECMP group
//! 10.3.0.0/16 via 192.0.2.1 port 1 # next hop (gateway, port), created on first use
//! 10.4.0.0/24 port 2               # directly connected on port 2, created on first use
//! 10.5.0.0/16 blackhole            # also: reject, local
//! ```
//!
//! The result is a batch of [`RouteChange`]s (the created next hops first at their
//! first use) to give to [`Routing::apply`](super::Routing::apply), so a file is
//! applied as one version or not at all; errors name the line.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::net::IpAddr;
use std::path::Path;

use super::{NextHop, NhId, Prefix, RouteChange, Target, Vrf};

/// How to turn lines into changes.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// Table the routes go to.
    pub vrf: Vrf,
    /// Target of lines that are a bare prefix (`None`: such lines are an error).
    pub default_target: Option<Target>,
    /// Emit `Upsert` instead of `Add` (replace routes that exist).
    pub upsert: bool,
    /// First id for next hops created by `via GATEWAY port N` / `port N` lines.
    pub first_auto_nh_id: NhId,
}

/// A file could not be read or a line not understood.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Reading failed.
    #[error("reading routes: {0}")]
    Io(#[from] io::Error),
    /// A line is malformed.
    #[error("line {line}: {msg}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        msg: String,
    },
}

/// What a line says, before next-hop ids are assigned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteSpec {
    /// Bare prefix.
    Default,
    /// A given target.
    Target(Target),
    /// A next hop by contents (created on first use).
    Via {
        /// Gateway (`None`: directly connected).
        gateway: Option<IpAddr>,
        /// Port.
        port: u16,
    },
}

/// Parses one line: `Ok(None)` for blank/comment lines.
///
/// # Errors
/// A message saying what is wrong with the line.
pub fn parse_line(line: &str) -> Result<Option<(Prefix, RouteSpec)>, String> {
    let line = line.split('#').next().unwrap_or("").trim();
    if line.is_empty() {
        return Ok(None);
    }
    let mut tok = line.split_ascii_whitespace();
    let prefix: Prefix = tok
        .next()
        .unwrap_or_default()
        .parse()
        .map_err(|e| format!("{e}"))?;
    let rest: Vec<&str> = tok.collect();
    let num = |s: &str, what: &str| -> Result<u32, String> {
        s.parse::<u32>()
            .map_err(|_| format!("invalid {what} {s:?}"))
    };
    let port = |s: &str| -> Result<u16, String> {
        s.parse::<u16>().map_err(|_| format!("invalid port {s:?}"))
    };
    let spec = match rest.as_slice() {
        [] => RouteSpec::Default,
        ["blackhole"] => RouteSpec::Target(Target::Blackhole),
        ["reject"] | ["unreachable"] => RouteSpec::Target(Target::Reject),
        ["local"] => RouteSpec::Target(Target::Local),
        ["via", "nh", id] | ["nh", id] => {
            RouteSpec::Target(Target::NextHop(num(id, "next-hop id")?))
        }
        ["via", "group", id] | ["group", id] => {
            RouteSpec::Target(Target::Group(num(id, "group id")?))
        }
        ["via", gw, "port", p] => {
            let gateway: IpAddr = gw.parse().map_err(|_| format!("invalid gateway {gw:?}"))?;
            RouteSpec::Via {
                gateway: Some(gateway),
                port: port(p)?,
            }
        }
        ["port", p] => RouteSpec::Via {
            gateway: None,
            port: port(p)?,
        },
        _ => {
            return Err(format!(
                "cannot parse {:?} (expected: via nh ID | via group ID | via GATEWAY port N | \
                 port N | blackhole | reject | local)",
                rest.join(" ")
            ))
        }
    };
    Ok(Some((prefix, spec)))
}

/// Parses a whole route file into a batch.
///
/// # Errors
/// I/O errors and the first bad line.
pub fn parse_routes<R: BufRead>(r: R, opts: &LoadOptions) -> Result<Vec<RouteChange>, LoadError> {
    let mut out = Vec::new();
    let mut auto: HashMap<(Option<IpAddr>, u16), NhId> = HashMap::new();
    let mut next_id = opts.first_auto_nh_id;
    for (i, line) in r.lines().enumerate() {
        let line = line?;
        let lineno = i + 1;
        let err = |msg: String| LoadError::Line { line: lineno, msg };
        let Some((prefix, spec)) = parse_line(&line).map_err(err)? else {
            continue;
        };
        let target = match spec {
            RouteSpec::Default => opts
                .default_target
                .ok_or_else(|| err("bare prefix but no default target given".into()))?,
            RouteSpec::Target(t) => t,
            RouteSpec::Via { gateway, port } => {
                let id = match auto.get(&(gateway, port)) {
                    Some(&id) => id,
                    None => {
                        let id = next_id;
                        next_id += 1;
                        auto.insert((gateway, port), id);
                        out.push(RouteChange::NhAdd {
                            id,
                            nh: NextHop {
                                gateway,
                                port,
                                mac: None,
                            },
                        });
                        id
                    }
                };
                Target::NextHop(id)
            }
        };
        let vrf = opts.vrf;
        out.push(if opts.upsert {
            RouteChange::Upsert {
                vrf,
                prefix,
                target,
            }
        } else {
            RouteChange::Add {
                vrf,
                prefix,
                target,
            }
        });
    }
    Ok(out)
}

/// Opens a file for line reading, decompressing it if it starts with the gzip magic.
///
/// # Errors
/// I/O errors.
pub fn open(path: &Path) -> io::Result<Box<dyn BufRead + Send>> {
    let mut f = File::open(path)?;
    let mut magic = [0u8; 2];
    let n = f.read(&mut magic)?;
    let head = io::Cursor::new(magic[..n].to_vec());
    let chained = head.chain(f);
    if n == 2 && magic == [0x1f, 0x8b] {
        Ok(Box::new(BufReader::with_capacity(
            1 << 16,
            flate2::read::MultiGzDecoder::new(chained),
        )))
    } else {
        Ok(Box::new(BufReader::with_capacity(1 << 16, chained)))
    }
}

/// Reads a route file into a batch.
///
/// # Errors
/// I/O errors and the first bad line.
pub fn load_file(path: &Path, opts: &LoadOptions) -> Result<Vec<RouteChange>, LoadError> {
    parse_routes(open(path)?, opts)
}

/// Reads a plain prefix list (one prefix per line, `#` comments, optional gzip).
///
/// # Errors
/// I/O errors and the first line that is not a bare prefix.
pub fn read_prefixes(path: &Path) -> Result<Vec<Prefix>, LoadError> {
    let mut out = Vec::new();
    for (i, line) in open(path)?.lines().enumerate() {
        let line = line?;
        let err = |msg: String| LoadError::Line { line: i + 1, msg };
        match parse_line(&line).map_err(err)? {
            None => {}
            Some((p, RouteSpec::Default)) => out.push(p),
            Some(_) => return Err(err("expected a bare prefix".into())),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::Routing;

    #[test]
    fn parses_all_forms() {
        let text = "\
# header
10.0.0.0/8
10.1.0.0/16 via nh 7
10.2.0.0/16 via group 3
10.3.0.0/16 via 192.0.2.1 port 1
10.3.1.0/24 via 192.0.2.1 port 1   # same next hop again
10.4.0.0/24 port 2
2001:db8::/32 via fe80::1 port 1
10.5.0.0/16 blackhole

10.6.0.0/16 reject
10.7.0.0/16 local
";
        let opts = LoadOptions {
            default_target: Some(Target::Blackhole),
            first_auto_nh_id: 100,
            ..Default::default()
        };
        let ch = parse_routes(text.as_bytes(), &opts).unwrap();
        let nh_adds = ch
            .iter()
            .filter(|c| matches!(c, RouteChange::NhAdd { .. }))
            .count();
        assert_eq!(nh_adds, 3);
        assert_eq!(ch.len(), 10 + 3);
        assert!(ch.contains(&RouteChange::Add {
            vrf: 0,
            prefix: "10.3.1.0/24".parse().unwrap(),
            target: Target::NextHop(100)
        }));
        assert!(ch.contains(&RouteChange::Add {
            vrf: 0,
            prefix: "10.4.0.0/24".parse().unwrap(),
            target: Target::NextHop(101)
        }));
        // apply the ones that need no pre-existing objects
        let ok: Vec<RouteChange> = ch
            .into_iter()
            .filter(|c| {
                !matches!(
                    c,
                    RouteChange::Add {
                        target: Target::NextHop(7) | Target::Group(3),
                        ..
                    }
                )
            })
            .collect();
        let r = Routing::new().apply(&ok).unwrap();
        assert_eq!(r.route_count(0), (7, 1));
        assert_eq!(r.nexthop(102).unwrap().port, 1);
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse_routes(
            "10.0.0.0/8 blackhole\n10.0.0.1/8 blackhole\n".as_bytes(),
            &LoadOptions::default(),
        )
        .unwrap_err();
        assert!(matches!(e, LoadError::Line { line: 2, .. }), "{e}");
        assert!(e.to_string().contains("host bits"));
        let e = parse_routes("10.0.0.0/8\n".as_bytes(), &LoadOptions::default()).unwrap_err();
        assert!(matches!(e, LoadError::Line { line: 1, .. }));
        let e = parse_routes(
            "\n\n10.0.0.0/8 via nowhere\n".as_bytes(),
            &LoadOptions::default(),
        )
        .unwrap_err();
        assert!(matches!(e, LoadError::Line { line: 3, .. }));
    }
}
