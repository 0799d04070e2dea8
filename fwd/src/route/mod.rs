//! Routing tables: RIB, IPv4/IPv6 FIBs, next hops and ECMP groups, per VRF.
//!
//! # Contract
//!
//! * A [`Routing`] value is one immutable *version* of every routing table. Cloning
//!   it is a handful of `Arc` increments. Lookups (`lookup4`, `lookup4_burst`,
//!   `lookup6*`, `nexthop`) take `&self`, read immutable memory only, never lock,
//!   never allocate and never touch a reference count, so any number of worker
//!   threads can use a version while the control thread builds the next one.
//! * [`Routing::apply`] turns a batch of [`RouteChange`]s into a new version, all or
//!   nothing: on error it returns the index of the failing change and the original
//!   version is untouched (it is never modified at all). A batch is visible
//!   atomically with the new version, since readers only ever see published ones.
//! * Versions are persistent: the new one shares every page and trie node the
//!   batch did not touch with the old one. Memory touched by a batch is copied once
//!   per batch (`cow::make_mut`, `larc::cow`: the first write copies, later writes
//!   of the same batch go in place), never the whole table. Dropping an old version frees only
//!   what no newer version shares; the caller (the QSBR publisher) decides when.
//! * The writer must own the version it extends privately: `apply` clones `self`
//!   first, so the published version is never written. [`Routing::apply_owned`] and
//!   [`Txn`] skip that clone for a caller that holds the only handle (a table being
//!   built before it is published copies nothing at all).
//!
//! # Design
//!
//! * Versions and batches: [`Routing`] and its lookups (`version.rs`), [`Txn`]
//!   (`txn.rs`), a VRF's RIB and FIB per family and the writes that keep them
//!   in step (`vrf.rs`); what a route holds and how a FIB entry encodes its
//!   target (`entry.rs`); the changes of a batch and their errors (`change.rs`).
//! * RIB (`rib.rs`): a persistent, path-compressed stride-8 trie per VRF and
//!   family; the source of truth for dumps (prefix order) and for deriving
//!   the FIB.
//! * FIB (`fib.rs`): DIR-24-8 for IPv4, a 24-bit first stride then 8-bit strides for
//!   IPv6 (same code, 14 levels at most). Entries are 4 bytes and hold the encoded
//!   [`Target`] (a next-hop or group id, or blackhole/reject/local), so the FIB is
//!   independent of next-hop contents. The 2^24-entry first level (64 MiB when
//!   fully populated) is split into 4 KiB pages under a three-level directory,
//!   which is what makes copy-on-write per batch affordable. Updates write a
//!   prefix's range minus its more specific RIB prefixes (the rte_fib method), so
//!   entries carry no depth and no route ever rewrites the whole table. A range
//!   that covers whole pages points them at one shared uniform page instead of
//!   writing them, so a default route or a /8 costs pointers, not megabytes, and
//!   the full IPv4 view's FIB is 44 MiB rather than 64. Burst lookups ask for
//!   (prefetch) the first-level entries of the whole burst before loading any
//!   (overlapping the misses), load them in the pass that uses them, and
//!   descend the IPv6 levels branch-free across the burst.
//! * Next hops and ECMP groups ([`nexthop`]): tables indexed by id with reference
//!   counts; a next-hop update is visible to every route using it at once; groups
//!   expand weights into a power-of-two slot table indexed by the flow hash.
//! * [`reference`](mod@reference): a deliberately naive LPM used as the definition of correct.
//! * [`loader`]: route files (`PREFIX [via SPEC]`, optionally gzip'd).
//!
//! Where the time of an update goes (measured, see `bench-results/route.md`): a
//! random route change copies one 4 KiB first-level page and one RIB leaf node,
//! and a batch copies each directory node it touches once; copying a directory
//! node counts one more reference to each of its children, and a version's drop
//! one fewer. As locked instructions those counts were half the time of a
//! one-change version, so the nodes of the paged arrays and of the RIB count
//! their references with plain loads and stores under a lock per table that
//! every copy of it shares (`larc`), taken per copied node, never per write.
//! IPv4 and IPv6 live behind separate `Arc`s so that a batch of one family copies
//! nothing of the other, and the next hops' reference counts are a table apart
//! from the next hops, so that a route change (which writes a count) does not
//! copy the next-hop table.
//!
//! Why copy-on-write rather than in-place entries with generation ranges: a
//! DIR-24-8 entry is 4 bytes and is the thing the data path loads; there is no
//! room for a generation range, and a batch that rewrites a /8 changes 65536
//! entries that must all flip at once. Page-granular COW gives batch atomicity
//! for free (one root pointer swap) at the cost of copying each touched 4 KiB page
//! once per batch.

mod change;
mod cow;
mod entry;
mod fib;
mod larc;
mod limits;
#[cfg(test)]
mod limits_tests;
pub mod loader;
pub mod nexthop;
mod parray;
pub mod prefix;
pub mod reference;
mod rib;
#[cfg(test)]
mod tests;
mod txn;
mod version;
mod vrf;

pub use change::{BatchError, RouteChange, RouteError};
pub use entry::{proto_from_name, proto_name, Entry, GroupId, NhId, Origin, Resolved, Target, Vrf};
pub use limits::{Capacity, Limits};
pub use nexthop::{Group, NextHop, HIGH_IDS, MAX_GROUP_MEMBERS, MAX_ID};
pub use prefix::{mask4, mask6, Prefix, Prefix4, Prefix6, PrefixError};
pub use txn::Txn;
pub use version::{Routing, RoutingStats, VrfStats};
