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
//! 10.6.0.0/16 13335                # PREFIX VALUE: LoadOptions::values
//! 10.7.0.0/16 192.0.2.9            # PREFIX GATEWAY: a value that is an address
//! 10.8.0.0 16 13335                # ADDR LEN [VALUE] (CAIDA pfx2as)
//! ```
//!
//! Fields are separated by any run of spaces or tabs, and a trailing CR
//! (CRLF files) is ignored, so the `prefix<TAB>value` dumps most public
//! tables come in (RIPE RIS and bgp.tools `prefix asn`, LPM benchmark tables
//! `prefix nexthop-index`, CAIDA pfx2as `addr len asn`) load unchanged.
//!
//! A value names a next-hop class, not a next hop: [`ValueTargets`] maps it
//! onto the configured targets, first by its explicit `map`, else
//! `spread[value % spread.len()]`, so the same value always lands on the same
//! target whatever the file order. CAIDA's multi-origin `a_b` and AS-set
//! `a,b` values use their first number. A value that is an IP address is
//! the gateway itself, on [`ValueTargets::gateway_port`] (the next hop is
//! created on first use, as for `via GATEWAY port N`).
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
    /// Targets of `PREFIX VALUE` lines.
    pub values: ValueTargets,
}

/// Where `PREFIX VALUE` lines go. The default has no targets: a value line
/// is then an error naming the line.
#[derive(Clone, Debug, Default)]
pub struct ValueTargets {
    /// Values with a target of their own; checked first.
    pub map: HashMap<u64, Target>,
    /// Any other value goes to `spread[value % spread.len()]`.
    pub spread: Vec<Target>,
    /// Port of the next hop a value that is an IP address (a gateway)
    /// creates; `None`: such values are an error.
    pub gateway_port: Option<u16>,
}

impl ValueTargets {
    /// The target of a numeric value, if any is configured for it.
    pub fn target(&self, value: u64) -> Option<Target> {
        if let Some(&t) = self.map.get(&value) {
            return Some(t);
        }
        let n = self.spread.len() as u64;
        (n > 0).then(|| self.spread[(value % n) as usize])
    }
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
    /// A numeric value column (an ASN, a next-hop index): its target comes
    /// from [`LoadOptions::values`].
    Value(u64),
    /// A value column that is an address: the gateway, on
    /// [`ValueTargets::gateway_port`].
    Gateway(IpAddr),
}

/// `13335`, or the first number of a CAIDA multi-origin `13335_209` or AS
/// set `13335,209`.
fn value(s: &str) -> Option<u64> {
    let first = s.split(['_', ',']).next()?;
    if first.is_empty() || !first.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    first.parse().ok()
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
    let first = tok.next().unwrap_or_default();
    let mut rest: Vec<&str> = tok.collect();
    let prefix: Prefix = if first.contains('/') {
        first.parse().map_err(|e| format!("{e}"))?
    } else {
        // `ADDR LEN [VALUE]`: the length is the second field.
        let Some((&len, tail)) = rest.split_first() else {
            return Err(format!(
                "{first:?} has no /LEN and no length field (expected PREFIX/LEN or ADDR LEN)"
            ));
        };
        if len.is_empty() || !len.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "{first:?} has no /LEN and {len:?} is not a prefix length (expected PREFIX/LEN \
                 or ADDR LEN)"
            ));
        }
        let p = format!("{first}/{len}")
            .parse()
            .map_err(|e| format!("{e}"))?;
        rest = tail.to_vec();
        p
    };
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
        [v] if value(v).is_some() => RouteSpec::Value(value(v).unwrap_or_default()),
        [v] if v.parse::<IpAddr>().is_ok() => {
            RouteSpec::Gateway(v.parse().map_err(|_| format!("invalid gateway {v:?}"))?)
        }
        _ => {
            return Err(format!(
                "cannot parse {:?} (expected: VALUE | GATEWAY | via nh ID | via group ID | \
                 via GATEWAY port N | port N | blackhole | reject | local)",
                rest.join(" ")
            ))
        }
    };
    Ok(Some((prefix, spec)))
}

/// Next hops created on first use, by (gateway, port).
struct AutoNh {
    ids: HashMap<(Option<IpAddr>, u16), NhId>,
    next: NhId,
}

impl AutoNh {
    /// The id of the next hop `(gateway, port)`, pushing its `NhAdd` to
    /// `out` the first time.
    fn id(&mut self, gateway: Option<IpAddr>, port: u16, out: &mut Vec<RouteChange>) -> NhId {
        if let Some(&id) = self.ids.get(&(gateway, port)) {
            return id;
        }
        let id = self.next;
        self.next += 1;
        self.ids.insert((gateway, port), id);
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
}

/// Parses a whole route file into a batch.
///
/// # Errors
/// I/O errors and the first bad line.
pub fn parse_routes<R: BufRead>(r: R, opts: &LoadOptions) -> Result<Vec<RouteChange>, LoadError> {
    let mut out = Vec::new();
    let mut auto = AutoNh {
        ids: HashMap::new(),
        next: opts.first_auto_nh_id,
    };
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
            RouteSpec::Value(v) => opts.values.target(v).ok_or_else(|| {
                err(format!(
                    "value {v} has no target (give a value map or next hops to spread values \
                     over)"
                ))
            })?,
            RouteSpec::Gateway(gw) => {
                if gw.is_ipv4() != matches!(prefix, Prefix::V4(_)) {
                    return Err(err(format!(
                        "gateway {gw} is not of the family of {prefix}"
                    )));
                }
                let port = opts.values.gateway_port.ok_or_else(|| {
                    err(format!(
                        "value {gw} is a gateway but no port is given for gateway values"
                    ))
                })?;
                Target::NextHop(auto.id(Some(gw), port, &mut out))
            }
            RouteSpec::Via { gateway, port } => Target::NextHop(auto.id(gateway, port, &mut out)),
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

/// Reads a prefix list (one prefix per line, `#` comments, optional gzip);
/// a value column (`PREFIX VALUE`, `ADDR LEN VALUE`) is ignored, so public
/// dumps serve as prefix lists too.
///
/// # Errors
/// I/O errors and the first line that is not a prefix, with or without a
/// value.
pub fn read_prefixes(path: &Path) -> Result<Vec<Prefix>, LoadError> {
    let mut out = Vec::new();
    for (i, line) in open(path)?.lines().enumerate() {
        let line = line?;
        let err = |msg: String| LoadError::Line { line: i + 1, msg };
        match parse_line(&line).map_err(err)? {
            None => {}
            Some((p, RouteSpec::Default | RouteSpec::Value(_) | RouteSpec::Gateway(_))) => {
                out.push(p)
            }
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

    fn value_opts() -> LoadOptions {
        LoadOptions {
            values: ValueTargets {
                map: HashMap::from([(13335, Target::Blackhole)]),
                spread: vec![
                    Target::NextHop(10),
                    Target::NextHop(11),
                    Target::NextHop(12),
                ],
                gateway_port: Some(4),
            },
            first_auto_nh_id: 100,
            ..Default::default()
        }
    }

    fn add(prefix: &str, target: Target) -> RouteChange {
        RouteChange::Add {
            vrf: 0,
            prefix: prefix.parse().unwrap(),
            target,
        }
    }

    #[test]
    fn value_columns_map_to_targets() {
        // Tabs, runs of spaces, CRLF, comments, IPv4 and IPv6, map and spread.
        let text = "# prefix<TAB>asn\r\n\
1.0.0.0/24\t13335\r\n\
1.0.4.0/22  \t 38803   # spread: 38803 % 3 == 1\r\n\
\r\n\
2001:db8::/32\t6939_1299\r\n\
2001:db8:1::/48 9,12\n";
        let ch = parse_routes(text.as_bytes(), &value_opts()).unwrap();
        assert_eq!(
            ch,
            vec![
                add("1.0.0.0/24", Target::Blackhole),
                add("1.0.4.0/22", Target::NextHop(11)),
                add("2001:db8::/32", Target::NextHop(10)),
                add("2001:db8:1::/48", Target::NextHop(10)),
            ]
        );
    }

    #[test]
    fn gateway_values_create_next_hops() {
        let text = "10.0.0.0/8\t192.0.2.1\n10.1.0.0/16 192.0.2.1\n2001:db8::/32 fe80::1\n";
        let ch = parse_routes(text.as_bytes(), &value_opts()).unwrap();
        let nh = |id, gw: &str| RouteChange::NhAdd {
            id,
            nh: NextHop {
                gateway: Some(gw.parse().unwrap()),
                port: 4,
                mac: None,
            },
        };
        assert_eq!(
            ch,
            vec![
                nh(100, "192.0.2.1"),
                add("10.0.0.0/8", Target::NextHop(100)),
                add("10.1.0.0/16", Target::NextHop(100)),
                nh(101, "fe80::1"),
                add("2001:db8::/32", Target::NextHop(101)),
            ]
        );
    }

    #[test]
    fn caida_and_prefix_forms_load_the_same_routes() {
        let slash = "1.0.0.0/24\t13335\n1.0.4.0/22\t38803\n2001:db8::/32\t6939\n10.0.0.0/8\n";
        let caida = "1.0.0.0\t24\t13335\n1.0.4.0 22 38803\r\n2001:db8::\t32\t6939\n10.0.0.0\t8\n";
        let opts = LoadOptions {
            default_target: Some(Target::Reject),
            ..value_opts()
        };
        let a = parse_routes(slash.as_bytes(), &opts).unwrap();
        let b = parse_routes(caida.as_bytes(), &opts).unwrap();
        assert_eq!(a.len(), 4);
        assert_eq!(a, b);
        // And the keyword form they stand for.
        let kw =
            "1.0.0.0/24 blackhole\n1.0.4.0/22 via nh 11\n2001:db8::/32 nh 10\n10.0.0.0/8 reject\n";
        assert_eq!(
            a,
            parse_routes(kw.as_bytes(), &LoadOptions::default()).unwrap()
        );
        // The routes apply.
        let r = Routing::new()
            .apply(&[
                RouteChange::NhAdd {
                    id: 10,
                    nh: NextHop {
                        gateway: None,
                        port: 1,
                        mac: None,
                    },
                },
                RouteChange::NhAdd {
                    id: 11,
                    nh: NextHop {
                        gateway: None,
                        port: 2,
                        mac: None,
                    },
                },
            ])
            .unwrap()
            .apply(&a)
            .unwrap();
        assert_eq!(r.route_count(0), (3, 1));
        // A prefix list reads both forms to the same prefixes.
        let dir = std::env::temp_dir().join(format!("fwd-loader-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (f1, f2) = (dir.join("slash.txt"), dir.join("caida.txt"));
        std::fs::write(&f1, slash).unwrap();
        std::fs::write(&f2, caida).unwrap();
        let p1 = read_prefixes(&f1).unwrap();
        let p2 = read_prefixes(&f2).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(p1.len(), 4);
        assert_eq!(p1, p2);
    }

    #[test]
    fn malformed_value_lines_name_the_line() {
        let opts = value_opts();
        let line_of = |text: &str, o: &LoadOptions| match parse_routes(text.as_bytes(), o) {
            Err(e @ LoadError::Line { line, .. }) => (line, e.to_string()),
            r => panic!("{text:?}: {r:?}"),
        };
        for (text, want) in [
            ("1.0.0.0/24 1\n1.0.0.0\t24\t-5\n", "cannot parse"),
            ("1.0.0.0/24 1\n1.0.0.0/24\t12x\n", "cannot parse"),
            ("1.0.0.0/24 1\n1.0.0.0 24 1 2\n", "cannot parse"),
            ("1.0.0.0/24 1\n1.0.0.0\n", "no length field"),
            ("1.0.0.0/24 1\n1.0.0.0 x24 7\n", "not a prefix length"),
            ("1.0.0.0/24 1\n1.0.0.0 33 7\n", "33"),
            ("1.0.0.0/24 1\n1.0.0.1 24 7\n", "host bits"),
            (
                "1.0.0.0/24 1\n1.0.0.0/24 99999999999999999999999\n",
                "cannot parse",
            ),
            ("1.0.0.0/24 1\n1.0.0.0/24 _7\n", "cannot parse"),
            ("1.0.0.0/24 1\n1.0.0.0/24 fe80::1\n", "family"),
        ] {
            let (line, msg) = line_of(text, &opts);
            assert_eq!(line, 2, "{text:?}: {msg}");
            assert!(msg.contains(want), "{text:?}: {msg}");
        }
        // Values without targets, gateways without a port.
        let (line, msg) = line_of("\n1.0.0.0/24\t7\n", &LoadOptions::default());
        assert_eq!(line, 2);
        assert!(msg.contains("value 7 has no target"), "{msg}");
        let (line, msg) = line_of("1.0.0.0/24\t192.0.2.1\n", &LoadOptions::default());
        assert_eq!(line, 1);
        assert!(msg.contains("no port"), "{msg}");
    }
}
