//! The initial tables, derived from the configuration: its addresses,
//! neighbours and routes become one batch of the same changes `fwdctl`
//! sends, applied by the same code ([`super::state::apply`]), so a config
//! file and a batch file mean exactly the same thing.

use ctl::wire::{self, Change, IpNet, Mac, RouteTarget};

use crate::acl;
use crate::config::{Config, RouteKind};
use crate::tables::{PortInfo, Tables};

/// The config's addresses, neighbours and routes as changes, each with the
/// config field it came from.
pub fn config_changes(cfg: &Config) -> Result<Vec<(String, Change)>, String> {
    let mut out = Vec::new();
    for (i, p) in cfg.ports.iter().enumerate() {
        for (j, a) in p.addresses.iter().enumerate() {
            let field = format!("ports[{i}].addresses[{j}]");
            let addr: IpNet = a.parse().map_err(|e| format!("{field}: {e}"))?;
            out.push((
                field,
                Change::AddressAdd(wire::Address {
                    addr,
                    dev: p.name.clone(),
                }),
            ));
        }
    }
    for (i, n) in cfg.neighbours.iter().enumerate() {
        let field = format!("neighbours[{i}]");
        let lladdr: Mac = n.mac.parse().map_err(|e| format!("{field}.mac: {e}"))?;
        out.push((
            field,
            Change::NeighAdd(wire::Neigh {
                addr: n.ip,
                lladdr,
                dev: n.port.clone(),
            }),
        ));
    }
    for (i, r) in cfg.routes.iter().enumerate() {
        let field = format!("routes[{i}]");
        let prefix: IpNet = r
            .prefix
            .parse()
            .map_err(|e| format!("{field}.prefix: {e}"))?;
        let target = match r.kind {
            RouteKind::Blackhole => RouteTarget::Blackhole,
            RouteKind::Reject => RouteTarget::Reject,
            RouteKind::Forward => RouteTarget::Gateway {
                via: r.via,
                dev: r.dev.clone(),
            },
        };
        out.push((
            field,
            Change::RouteAdd(wire::Route {
                linkdown: false,
                proto: None,
                prefix,
                table: r.table,
                target,
            }),
        ));
    }
    Ok(out)
}

/// A saved running state (`fwdctl config save`), read and checked.
pub struct Saved {
    /// The generation it was saved at.
    pub generation: u64,
    /// Its changes, each with the file and line it came from.
    pub changes: Vec<(String, Change)>,
}

/// Parses and checks a saved state (`name` names it in errors): the header
/// line, the changes, and the trailer whose count must match. An empty or
/// truncated file is refused, never taken for an empty state.
///
/// # Errors
/// A message naming the file and what is wrong.
pub fn parse_saved(text: &str, name: &str) -> Result<Saved, String> {
    let refuse = |why: String| {
        format!(
            "control.load: {name}: {why}; not starting on it (fix or remove it: without it \
             the config's tables are used)"
        )
    };
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header = lines.next().ok_or_else(|| refuse("empty file".into()))?;
    let head = header
        .strip_prefix(super::saved::HEADER)
        .ok_or_else(|| refuse(format!("not a saved state (first line {header:?})")))?;
    let field = |key: &str| {
        head.split(',')
            .map(str::trim)
            .find_map(|f| {
                f.strip_prefix(key)
                    .or_else(|| f.strip_suffix(key))
                    .and_then(|v| v.trim().parse::<u64>().ok())
            })
            .ok_or_else(|| refuse(format!("header without {}", key.trim())))
    };
    let generation = field("generation ")?;
    let count = field(" changes")?;
    let last = lines.next_back().unwrap_or(header);
    let end = last
        .strip_prefix(super::saved::TRAILER)
        .and_then(|r| r.trim().strip_suffix("changes"))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .ok_or_else(|| {
            refuse(format!(
                "truncated: its last line is not \"{} {count} changes\"",
                super::saved::TRAILER
            ))
        })?;
    let batch = ctl::text::parse_batch(text)
        .map_err(|e| format!("control.load: {name}: line {}: {}", e.line, e.error))?;
    let n = batch.changes.len() as u64;
    if end != count || n != count {
        return Err(refuse(format!(
            "header says {count} changes, trailer {end}, file holds {n}"
        )));
    }
    Ok(Saved {
        generation,
        changes: batch
            .changes
            .into_iter()
            .zip(batch.lines)
            .map(|(c, line)| (format!("{name}: line {line}"), c))
            .collect(),
    })
}

/// Reads the saved state at `path`; `None` when there is none yet (a first
/// start: the config's tables are used).
///
/// # Errors
/// An unreadable file, or one [`parse_saved`] refuses.
pub fn read_saved(path: &std::path::Path) -> Result<Option<Saved>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse_saved(&text, &path.display().to_string()).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("control.load: cannot read {}: {e}", path.display())),
    }
}

/// Where the first version's changes come from.
pub enum Startup {
    /// The config's addresses, neighbours and routes.
    Config,
    /// A saved running state, which supersedes them: it was derived from
    /// them plus every change made at runtime. The config's addresses,
    /// neighbours and routes are then not applied at all.
    Saved(Saved),
}

/// The ports of a validated config, with the MACs they reported.
fn config_ports(cfg: &Config, macs: &[[u8; 6]]) -> Vec<PortInfo> {
    cfg.ports
        .iter()
        .enumerate()
        .map(|(i, p)| PortInfo {
            mtu: p.mtu.unwrap_or(1500),
            ra: p.ra.is_some(),
            ..PortInfo::new(
                p.name.clone(),
                macs.get(i).copied().unwrap_or([0; 6]),
                p.table,
            )
        })
        .collect()
}

/// Applies the first batch, `changes` (each with where it came from), to
/// `base`: what the daemon does with the config or a saved state.
///
/// # Errors
/// A message naming the config entry or the saved file's line refused.
pub fn load(
    base: &Tables,
    acl_w: &mut acl::ClassifierWriter,
    changes: &[(String, Change)],
) -> Result<Tables, String> {
    let batch: Vec<Change> = changes.iter().map(|(_, c)| c.clone()).collect();
    super::state::apply(base, acl_w, &batch, None)
        .map(|o| o.tables)
        .map_err(|e| {
            let field = e
                .index
                .and_then(|i| changes.get(i as usize - 1))
                .map_or("config", |(f, _)| f.as_str());
            format!("{field}: {}: {}", e.kind, e.message)
        })
}

/// Whether the config's addresses, neighbours and routes make tables: the
/// rules a `fwdctl` batch is held to, without ports or DPDK (`fwd --check`).
///
/// # Errors
/// The first entry refused, named by its config field.
pub fn check_tables(cfg: &Config) -> Result<(), String> {
    let mut acl_w = acl::ClassifierWriter::new(acl::Config::default());
    initial_tables(cfg, &[], &mut acl_w, Startup::Config).map(drop)
}

/// Builds the first version of the tables from a validated config (or the
/// saved state that supersedes it) and the MACs the ports reported.
///
/// # Errors
/// A message naming the config entry or the saved file's line that was
/// refused (e.g. a route given twice).
pub fn initial_tables(
    cfg: &Config,
    macs: &[[u8; 6]],
    acl_w: &mut acl::ClassifierWriter,
    startup: Startup,
) -> Result<Tables, String> {
    let base = Tables::empty(
        config_ports(cfg, macs),
        acl_w.current().clone(),
        cfg.limits.limits(),
    );
    let changes = match startup {
        Startup::Config => config_changes(cfg)?,
        Startup::Saved(saved) => saved.changes,
    };
    load(&base, acl_w, &changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "eal: {main_lcore: 0}
ports:
  - {name: p0, device: net_null0, addresses: [10.0.0.1/24, 'fd00::1/64']}
  - {name: p1, device: net_null1, addresses: [10.0.1.1/24]}
workers:
  - {lcore: 1, rx: [{port: p0}, {port: p1}]}
";

    fn check(routes: &str) -> Result<(), String> {
        let cfg = Config::parse(&format!("{BASE}routes:\n{routes}"), "t.yaml")
            .map_err(|e| format!("parse: {e}"))?;
        check_tables(&cfg)
    }

    #[test]
    fn config_routes_follow_the_rules_of_a_batch() {
        // As `fwdctl route add P via GW`: the port is the one whose
        // address covers the gateway.
        check("  - {prefix: 10.9.0.0/16, via: 10.0.1.2}\n").unwrap();
        let cfg = Config::parse(
            &format!("{BASE}routes:\n  - {{prefix: 10.9.0.0/16, via: 10.0.1.2}}\n"),
            "t.yaml",
        )
        .unwrap();
        let mut acl_w = acl::ClassifierWriter::new(acl::Config::default());
        let t = initial_tables(&cfg, &[], &mut acl_w, Startup::Config).unwrap();
        let r = t
            .routing
            .lookup4(0, u32::from(std::net::Ipv4Addr::new(10, 9, 1, 1)), || 0);
        let crate::route::Resolved::Forward(nh) = r else {
            panic!("{r:?}")
        };
        assert_eq!(t.routing.nexthop(nh).unwrap().port, 1);

        // Refused as a batch would refuse them, naming the config entry.
        for (routes, want) in [
            (
                "  - {prefix: 10.9.0.0/16, via: 10.7.0.2}\n",
                "routes[0]: invalid: no port has an address covering",
            ),
            (
                "  - {prefix: 10.9.0.0/16, via: 10.0.1.2, dev: p9}\n",
                "routes[0]",
            ),
            ("  - {prefix: 10.9.0.0/16, via: 'fd00::2'}\n", "routes[0]"),
            (
                "  - {prefix: 10.9.0.0/16}\n",
                "routes[0]: invalid: a route needs via and/or dev",
            ),
            (
                "  - {prefix: 10.9.0.0/16, dev: p0}\n  - {prefix: 10.9.0.0/16, dev: p1}\n",
                "routes[1]",
            ),
        ] {
            let e = check(routes).unwrap_err();
            assert!(e.starts_with(want), "{routes}: {e}");
        }
    }
}
