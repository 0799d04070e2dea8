//! zebra's batches (FPM) against the tables: installing its routes where
//! no other origin holds the prefix, and putting them back from beneath
//! when the other route goes (see the parent module's doc).

use std::sync::Arc;

use super::{err, net_of, route_error, Edit};
use crate::acl;
use crate::fpm::rib::{route_order, FpmRib, FpmTarget};
use crate::route::{Origin, Prefix, Target, Vrf};
use crate::tables::Tables;
use ctl::wire::{ErrorBody, ErrorKind};

impl Edit<'_> {
    /// Installs zebra's route (from [`FpmRib`]) at `prefix`, replacing an
    /// FPM route there; the caller has checked that no other route is.
    pub(super) fn install_fpm(
        &mut self,
        vrf: Vrf,
        prefix: Prefix,
        target: &Arc<FpmTarget>,
        proto: u8,
    ) -> Result<(), ErrorBody> {
        // zebra's targets are interned: within a batch the same one always
        // resolves to the same next hop or group (nothing is collected
        // before the batch ends), so a full table resolves a few hundred
        // targets, not a million. The memo keeps each target it names
        // alive: a target freed during the batch cannot have its address
        // reused by another that would then take its next hop.
        let key = (
            Arc::as_ptr(target) as usize,
            matches!(prefix, Prefix::V4(_)),
        );
        let t = match self.fpm_memo.get(&key) {
            Some((_, t)) => *t,
            None => {
                let t = self.resolve_fpm(target, prefix)?;
                self.fpm_memo.insert(key, (Arc::clone(target), t));
                t
            }
        };
        let old = self
            .routing
            .set(vrf, prefix, t, Origin::fpm(proto))
            .map_err(|e| route_error(&e))?;
        self.retire(old.map(|e| e.target));
        Ok(())
    }

    /// The target of zebra's `target` for `prefix`, creating unnamed next
    /// hops and groups as needed.
    fn resolve_fpm(&mut self, target: &FpmTarget, prefix: Prefix) -> Result<Target, ErrorBody> {
        Ok(match target {
            FpmTarget::Blackhole => Target::Blackhole,
            FpmTarget::Reject => Target::Reject,
            FpmTarget::Paths(ps) => {
                let mut paths = Vec::with_capacity(ps.len());
                for p in ps {
                    let port = match (p.port, p.gateway) {
                        (Some(port), _) if usize::from(port) < self.ports().len() => port,
                        (_, Some(gw)) => self.port_for_gateway(gw)?,
                        _ => {
                            return Err(err(
                                ErrorKind::Invalid,
                                "an on-link path through an interface that is not a port",
                            ))
                        }
                    };
                    paths.push((p.gateway, port, p.weight));
                }
                self.paths_target(&paths, prefix)?
            }
        })
    }

    /// Puts back the FPM routes waiting beneath the prefixes this batch
    /// deleted. One that cannot be installed any more (its gateway left
    /// every subnet) stays beneath until zebra sends it again.
    pub(super) fn restore_beneath(&mut self) {
        let Some(fpm) = self.beneath else {
            return;
        };
        for (vrf, prefix) in self.routing.take_removed() {
            if self.routing.current().get(vrf, prefix).is_some() {
                continue;
            }
            if let Some(r) = fpm.get(vrf, prefix) {
                let _ = self.install_fpm(vrf, prefix, &Arc::clone(&r.target), r.proto);
            }
        }
    }
}

/// What zebra asked for, as one change to `routes` in table `vrf`.
pub enum FpmOp {
    /// Add or replace zebra's route at `prefix`.
    Set {
        vrf: Vrf,
        prefix: Prefix,
        target: FpmTarget,
        proto: u8,
    },
    /// Withdraw it.
    Del { vrf: Vrf, prefix: Prefix },
}

impl FpmOp {
    /// The route it changes.
    fn key(&self) -> (Vrf, Prefix) {
        match self {
            FpmOp::Set { vrf, prefix, .. } | FpmOp::Del { vrf, prefix } => (*vrf, *prefix),
        }
    }
}

/// What a batch from zebra did.
#[derive(Debug, Default)]
pub struct FpmApplied {
    pub added: u64,
    pub deleted: u64,
    /// Routes that could not be installed (and were not kept).
    pub refused: u64,
    pub last_error: Option<String>,
}

/// Applies zebra's changes as one batch, keeping `rib` (what zebra holds)
/// in step: a route lands in the FIB unless another origin holds the
/// prefix, and leaves it only if it is the one installed. A route that
/// cannot be installed is refused alone; the rest of the batch applies.
/// `None` when the tables did not change (a replay of known routes).
///
/// The changes are applied in prefix order, each prefix's in the order
/// zebra sent them (a stable sort). Changes to different prefixes commute,
/// and in prefix order consecutive writes share their path through the
/// tables, which stays in cache, where zebra's order (bgpd's UPDATEs, one
/// per attribute set) jumps across the address space: x1.3 faster on a
/// shuffled full view (`bench_fpm --shuffle`, `bench-results/fpm.md`).
/// Only which route is refused first, should a table fill up mid-batch,
/// can differ from zebra's order.
pub fn apply_fpm(
    base: &Tables,
    acl_w: &acl::ClassifierWriter,
    rib: &mut FpmRib,
    mut ops: Vec<FpmOp>,
) -> (Option<Tables>, FpmApplied) {
    let mut e = Edit::new(base, acl_w, None);
    let mut done = FpmApplied::default();
    let mut changed = false;
    ops.sort_by_key(|op| {
        let (vrf, prefix) = op.key();
        route_order(vrf, prefix)
    });
    for op in ops {
        match op {
            FpmOp::Set {
                vrf,
                prefix,
                target,
                proto,
            } => {
                done.added += 1;
                let installed = e.routing.current().entry(vrf, prefix);
                let Some(t) = rib.set(vrf, prefix, target, proto) else {
                    if installed.is_some() {
                        continue;
                    }
                    // Held but not installed (refused before): try again.
                    let r = rib.get(vrf, prefix).expect("held");
                    let t = Arc::clone(&r.target);
                    if e.install_fpm(vrf, prefix, &t, proto).is_ok() {
                        changed = true;
                    }
                    continue;
                };
                if installed.is_some_and(|i| !i.origin.fpm) {
                    continue;
                }
                match e.install_fpm(vrf, prefix, &t, proto) {
                    Ok(()) => changed = true,
                    Err(er) => {
                        rib.del(vrf, prefix);
                        done.refused += 1;
                        done.last_error = Some(format!("{}: {}", net_of(prefix), er.message));
                    }
                }
            }
            FpmOp::Del { vrf, prefix } => {
                done.deleted += 1;
                rib.del(vrf, prefix);
                // Only zebra's route leaves: another origin's stays.
                if let Some(old) = e.routing.del_if(vrf, prefix, |i| i.origin.fpm) {
                    e.retire(Some(old));
                    changed = true;
                }
            }
        }
    }
    // The memo held targets alive: the ones no route uses any more can go.
    e.fpm_memo.clear();
    rib.release_unused();
    if !changed {
        return (None, done);
    }
    if let Err(er) = e.collect_garbage() {
        done.last_error = Some(er.message);
    }
    let tables = Tables::new(
        e.routing.commit(),
        Arc::clone(&base.acl),
        Arc::clone(&base.ports),
        Arc::new(e.mgmt),
    );
    (Some(tables), done)
}
