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

/// Where the first version's changes come from.
pub enum Startup<'a> {
    /// The config's addresses, neighbours and routes.
    Config,
    /// A saved running state (`fwdctl config save`), which supersedes them:
    /// it was derived from them plus every change made at runtime.
    Saved(&'a std::path::Path),
}

/// Builds the first version of the tables from a validated config (or the
/// saved state it names) and the MACs the ports reported.
///
/// # Errors
/// A message naming the config entry or the saved file's line that was
/// refused (e.g. a route given twice).
pub fn initial_tables(
    cfg: &Config,
    macs: &[[u8; 6]],
    acl_w: &mut acl::ClassifierWriter,
    startup: Startup<'_>,
) -> Result<Tables, String> {
    let ports = cfg
        .ports
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
        .collect();
    let base = Tables::empty(ports, acl_w.current().clone());
    let changes = match startup {
        Startup::Config => config_changes(cfg)?,
        Startup::Saved(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("control.load: cannot read {}: {e}", path.display()))?;
            let batch = ctl::text::parse_batch(&text)
                .map_err(|e| format!("{}: line {}: {}", path.display(), e.line, e.error))?;
            batch
                .changes
                .into_iter()
                .zip(batch.lines)
                .map(|(c, line)| (format!("{}: line {line}", path.display()), c))
                .collect()
        }
    };
    let batch: Vec<Change> = changes.iter().map(|(_, c)| c.clone()).collect();
    super::state::apply(&base, acl_w, &batch, None)
        .map(|o| o.tables)
        .map_err(|e| {
            let field = e
                .index
                .and_then(|i| changes.get(i as usize - 1))
                .map_or("config", |(f, _)| f.as_str());
            format!("{field}: {}: {}", e.kind, e.message)
        })
}
