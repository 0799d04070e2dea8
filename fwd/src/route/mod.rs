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
//! * RIB (`rib.rs`): a persistent stride-8 trie per VRF and family; the source of
//!   truth for dumps (prefix order) and for deriving the FIB.
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

mod cow;
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

use smallvec::SmallVec;
use std::collections::{BTreeMap, HashSet};
use triomphe::Arc;

use cow::make_mut;
use fib::{BurstFib, Fib};
pub use limits::{Capacity, Limits};
pub use nexthop::{Group, NextHop, HIGH_IDS, MAX_GROUP_MEMBERS, MAX_ID};
use nexthop::{IdTable, RefTable};
pub use prefix::{mask4, mask6, Prefix, Prefix4, Prefix6, PrefixError};
use rib::Rib;

/// Next-hop id.
pub type NhId = u32;
/// ECMP group id.
pub type GroupId = u32;
/// VRF (routing table) id.
pub type Vrf = u32;

/// What a route points to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// One next hop.
    NextHop(NhId),
    /// An ECMP group, resolved per flow.
    Group(GroupId),
    /// Drop silently.
    Blackhole,
    /// Drop and answer with ICMP unreachable.
    Reject,
    /// Deliver to the host.
    Local,
}

/// Who put a route in the table, and the routing protocol it reports.
///
/// `proto` uses Linux's `rtm_protocol` numbers, as `ip route` and zebra do
/// (2 kernel, 4 static, 186 bgp, 188 ospf, ...). `fpm` marks the routes
/// zebra installed over FPM: they give way to every other route at the
/// same prefix (see `control::fpm` for the precedence).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Origin {
    /// Routing protocol (`rtm_protocol`).
    pub proto: u8,
    /// Installed by zebra over FPM.
    pub fpm: bool,
}

impl Origin {
    /// What the appliance derives itself: connected and local routes of
    /// port addresses, host routes to attached neighbours (Linux: kernel).
    pub const KERNEL: Origin = Origin {
        proto: 2,
        fpm: false,
    };
    /// The operator's: the config file and `fwdctl`.
    pub const STATIC: Origin = Origin {
        proto: 4,
        fpm: false,
    };

    /// A route from zebra over FPM, reported as `proto`.
    pub const fn fpm(proto: u8) -> Origin {
        Origin { proto, fpm: true }
    }
}

/// Names of routing protocols (`rtm_protocol`), as iproute2's
/// `rt_protos` and FRR's `rt_netlink.h` number them. zebra sends its own
/// static routes as 196 (`RTPROT_ZSTATIC`): "zstatic", so that "static"
/// stays the operator's (config and fwdctl, 4); zebra sends OSPFv2 and
/// OSPFv3 both as 188 and connected routes as 2 (kernel).
const PROTOS: [(u8, &str); 22] = [
    (1, "redirect"),
    (2, "kernel"),
    (3, "boot"),
    (4, "static"),
    (11, "zebra"),
    (12, "bird"),
    (16, "dhcp"),
    (42, "babel"),
    (186, "bgp"),
    (187, "isis"),
    (188, "ospf"),
    (189, "rip"),
    (190, "ripng"),
    (191, "nhrp"),
    (192, "eigrp"),
    (193, "ldp"),
    (194, "sharp"),
    (195, "pbr"),
    (196, "zstatic"),
    (197, "openfabric"),
    (198, "srte"),
    (0, "unspec"),
];

/// The name of routing protocol `proto`; its number when it has none.
pub fn proto_name(proto: u8) -> std::borrow::Cow<'static, str> {
    PROTOS
        .iter()
        .find(|(n, _)| *n == proto)
        .map_or_else(|| proto.to_string().into(), |(_, s)| (*s).into())
}

/// The number of a protocol name (any case), or of a number written out.
pub fn proto_from_name(name: &str) -> Option<u8> {
    PROTOS
        .iter()
        .find(|(_, s)| s.eq_ignore_ascii_case(name))
        .map(|(n, _)| *n)
        .or_else(|| name.parse().ok())
}

/// A route as the RIB holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Entry {
    /// Where it sends packets (all the FIB knows of it).
    pub target: Target,
    /// Who installed it.
    pub origin: Origin,
}

/// The outcome of a lookup with ECMP resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Resolved {
    /// Forward via this next hop.
    Forward(NhId),
    /// Drop silently.
    Blackhole,
    /// Drop and answer with ICMP unreachable.
    Reject,
    /// Deliver to the host.
    Local,
    /// No route matched.
    #[default]
    NoRoute,
}

/// A target's kind sits above the 24 bits of its id ([`MAX_ID`]), so a
/// plain FIB entry never sets bits 27..32: the FIB's burst lookups tell
/// its pair entries from plain ones by bit 30 alone (`fib.rs`).
const KIND_SHIFT: u32 = 24;
static_assertions::const_assert!(MAX_ID < 1 << KIND_SHIFT && K_LOCAL < 1 << (27 - KIND_SHIFT));
const ID_MASK: u32 = (1 << KIND_SHIFT) - 1;
const K_NH: u32 = 1;
const K_GROUP: u32 = 2;
const K_BLACKHOLE: u32 = 3;
const K_REJECT: u32 = 4;
const K_LOCAL: u32 = 5;

/// FIB entry of a target (never 0, never has `fib::EXT`).
#[inline]
fn encode(t: Target) -> u32 {
    match t {
        Target::NextHop(id) => (K_NH << KIND_SHIFT) | id,
        Target::Group(id) => (K_GROUP << KIND_SHIFT) | id,
        Target::Blackhole => K_BLACKHOLE << KIND_SHIFT,
        Target::Reject => K_REJECT << KIND_SHIFT,
        Target::Local => K_LOCAL << KIND_SHIFT,
    }
}

#[inline]
fn decode(e: u32) -> Option<Target> {
    match e >> KIND_SHIFT {
        K_NH => Some(Target::NextHop(e & ID_MASK)),
        K_GROUP => Some(Target::Group(e & ID_MASK)),
        K_BLACKHOLE => Some(Target::Blackhole),
        K_REJECT => Some(Target::Reject),
        K_LOCAL => Some(Target::Local),
        _ => None,
    }
}

/// One change of a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RouteChange {
    /// Add a route; error if the prefix exists. Creates the VRF if needed.
    Add {
        /// Table.
        vrf: Vrf,
        /// Destination.
        prefix: Prefix,
        /// Where to.
        target: Target,
    },
    /// Change an existing route's target; error if the prefix does not exist.
    Replace {
        /// Table.
        vrf: Vrf,
        /// Destination.
        prefix: Prefix,
        /// New target.
        target: Target,
    },
    /// Add or replace (`ip route replace`).
    Upsert {
        /// Table.
        vrf: Vrf,
        /// Destination.
        prefix: Prefix,
        /// Target.
        target: Target,
    },
    /// Delete a route; error if the prefix does not exist.
    Del {
        /// Table.
        vrf: Vrf,
        /// Destination.
        prefix: Prefix,
    },
    /// Add a next hop; error if the id is taken.
    NhAdd {
        /// Id (<= [`MAX_ID`]).
        id: NhId,
        /// Contents.
        nh: NextHop,
    },
    /// Replace a next hop's contents (e.g. its MAC); every route using it follows.
    NhUpdate {
        /// Id.
        id: NhId,
        /// New contents.
        nh: NextHop,
    },
    /// Delete a next hop; error if a route or group uses it.
    NhDel {
        /// Id.
        id: NhId,
    },
    /// Add an ECMP group of `(next hop, weight)` members; error if the id is taken.
    GroupAdd {
        /// Id (<= [`MAX_ID`]).
        id: GroupId,
        /// Members with weights (> 0, distinct next hops).
        members: Vec<(NhId, u32)>,
    },
    /// Replace a group's members (every route using it follows).
    GroupUpdate {
        /// Id.
        id: GroupId,
        /// New members.
        members: Vec<(NhId, u32)>,
    },
    /// Delete a group; error if a route uses it.
    GroupDel {
        /// Id.
        id: GroupId,
    },
    /// Create an empty VRF; error if it exists. (Route adds create VRFs implicitly.)
    VrfAdd {
        /// Table.
        vrf: Vrf,
    },
    /// Delete an empty VRF; error if it does not exist or still has routes.
    VrfDel {
        /// Table.
        vrf: Vrf,
    },
}

/// Why a change was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// `Add` of a prefix that exists.
    #[error("route {prefix} already exists in vrf {vrf}")]
    RouteExists {
        /// Table.
        vrf: Vrf,
        /// Destination.
        prefix: Prefix,
    },
    /// `Del`/`Replace` of a prefix that does not exist.
    #[error("route {prefix} not found in vrf {vrf}")]
    RouteNotFound {
        /// Table.
        vrf: Vrf,
        /// Destination.
        prefix: Prefix,
    },
    /// A route or group names a next hop that does not exist.
    #[error("unknown next hop {0}")]
    UnknownNextHop(NhId),
    /// A route names a group that does not exist.
    #[error("unknown ECMP group {0}")]
    UnknownGroup(GroupId),
    /// `NhAdd` of a taken id.
    #[error("next hop {0} already exists")]
    NextHopExists(NhId),
    /// `GroupAdd` of a taken id.
    #[error("ECMP group {0} already exists")]
    GroupExists(GroupId),
    /// `NhDel` of a next hop still referenced.
    #[error("next hop {id} is used by {refs} routes or groups")]
    NextHopInUse {
        /// Id.
        id: NhId,
        /// Number of routes and group memberships using it.
        refs: u32,
    },
    /// `GroupDel` of a group still referenced.
    #[error("ECMP group {id} is used by {refs} routes")]
    GroupInUse {
        /// Id.
        id: GroupId,
        /// Number of routes using it.
        refs: u32,
    },
    /// Id above [`MAX_ID`].
    #[error("id {id} out of range (max {max})")]
    IdOutOfRange {
        /// Id.
        id: u32,
        /// [`MAX_ID`].
        max: u32,
    },
    /// A group with no members.
    #[error("ECMP group {0} has no members")]
    EmptyGroup(GroupId),
    /// A member with weight 0.
    #[error("member {nh} of ECMP group {id} has weight 0")]
    ZeroWeight {
        /// Group.
        id: GroupId,
        /// Member.
        nh: NhId,
    },
    /// A next hop listed twice in one group.
    #[error("next hop {nh} is listed twice in ECMP group {id}")]
    DuplicateMember {
        /// Group.
        id: GroupId,
        /// Member.
        nh: NhId,
    },
    /// More than [`MAX_GROUP_MEMBERS`] members.
    #[error("ECMP group {id} has {count} members (max {max})")]
    TooManyMembers {
        /// Group.
        id: GroupId,
        /// Members given.
        count: usize,
        /// Limit.
        max: usize,
    },
    /// `VrfAdd` of an existing VRF.
    #[error("vrf {0} already exists")]
    VrfExists(Vrf),
    /// `VrfDel` of an unknown VRF.
    #[error("vrf {0} not found")]
    VrfNotFound(Vrf),
    /// `VrfDel` of a VRF that has routes.
    #[error("vrf {vrf} still has {routes} routes")]
    VrfNotEmpty {
        /// Table.
        vrf: Vrf,
        /// Routes left.
        routes: usize,
    },
    /// The change would take the tables past one of their [`Limits`].
    #[error("{capacity} full: {}", limit_text(*capacity, *limit))]
    Full {
        /// Which limit.
        capacity: Capacity,
        /// Its value ([`Limits::tables`] or [`Limits::bytes`]).
        limit: usize,
    },
}

fn limit_text(c: Capacity, limit: usize) -> String {
    match c {
        Capacity::Tables => format!("{limit} tables"),
        Capacity::Memory => format!("{} MiB", limit >> 20),
    }
}

/// A refused batch: which change failed and why. Nothing was applied.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("change #{index}: {error}")]
pub struct BatchError {
    /// Index of the failing change in the batch.
    pub index: usize,
    /// The reason.
    pub error: RouteError,
}

/// RIB and FIB of one family. Behind its own `Arc` so that a batch touching only
/// IPv4 does not copy IPv6's directories, and vice versa.
#[derive(Clone, Default)]
struct Family<const W: u32> {
    rib: Rib<W, Entry>,
    fib: Fib<W>,
}

/// A VRF's two families, held by value in the version's VRF map: a batch
/// that writes one copies the map and the family it writes, not a third
/// level between them.
#[derive(Clone, Default)]
struct VrfTables {
    v4: Arc<Family<32>>,
    v6: Arc<Family<128>>,
}

impl VrfTables {
    /// The memory it is charged (`limits`).
    fn charge(&self) -> usize {
        std::mem::size_of::<VrfTables>()
            + 2 * cow::ARC_HEADER
            + std::mem::size_of::<Family<32>>()
            + std::mem::size_of::<Family<128>>()
            + self.v4.charge()
            + self.v6.charge()
    }
}

impl<const W: u32> Family<W> {
    /// The memory it is charged (`limits`). O(1).
    fn charge(&self) -> usize {
        self.rib.charge() + self.fib.charge()
    }

    /// `op` on the family `f` (made private), with its charge before and
    /// after: the writes of a [`Txn`] keep the version's charge with them.
    fn charged<R>(f: &mut Arc<Self>, op: impl FnOnce(&mut Self) -> R) -> (R, usize, usize) {
        let f = make_mut(f);
        let before = f.charge();
        let r = op(f);
        (r, before, f.charge())
    }

    /// `addr/len -> entry` (its target encoded `v`) into RIB and FIB;
    /// returns the old entry. The FIB is written only when the target changed.
    fn set(
        &mut self,
        a: u128,
        l: u8,
        entry: Entry,
        v: u32,
        kids: &mut Vec<(u128, u8)>,
    ) -> Option<Entry> {
        self.fib.prefetch_page(a);
        let old = self.rib.insert_children(a, l, entry, kids);
        if old.map(|e| e.target) != Some(entry.target) {
            self.fib.apply_prefix(a, l, v, kids);
        }
        old
    }

    /// Removes `addr/len` if it is present and `pred` accepts its entry;
    /// its addresses fall back to the covering route.
    fn remove_if(
        &mut self,
        a: u128,
        l: u8,
        kids: &mut Vec<(u128, u8)>,
        pred: impl FnOnce(&Entry) -> bool,
    ) -> Option<Entry> {
        // One read-only walk finds the entry, the route its addresses fall
        // back to and its holes (none of which its removal changes), so the
        // removal walk is the only other one, and an absent or refused
        // prefix copies nothing.
        self.fib.prefetch_page(a);
        let (old, cover) = self.rib.area_of_present(a, l, kids)?;
        if !pred(&old) {
            return None;
        }
        self.rib.remove_present(a, l);
        let v = cover.map_or(0, |e| encode(e.target));
        self.fib.apply_prefix(a, l, v, kids);
        Some(old)
    }
}

/// One immutable version of all routing tables (see the module doc).
#[derive(Clone)]
pub struct Routing {
    vrfs: Arc<BTreeMap<Vrf, VrfTables>>,
    nhs: Arc<IdTable<NextHop>>,
    nh_refs: Arc<RefTable>,
    groups: Arc<IdTable<Arc<Group>>>,
    group_refs: Arc<RefTable>,
    /// Ports that are down: their next hops get no ECMP slots.
    down_ports: Arc<std::collections::BTreeSet<u16>>,
    version: u64,
    /// Routes whose origin is FPM (kept by every write, so status reports
    /// need no walk).
    fpm_routes: usize,
    /// What the tables may hold.
    limits: Limits,
    /// The memory this version is charged (`limits`), kept by every write.
    charge: usize,
}

static_assertions::assert_impl_all!(Routing: Send, Sync);

impl std::fmt::Debug for Routing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Routing")
            .field("version", &self.version)
            .field("vrfs", &self.vrfs.len())
            .field("nexthops", &self.nhs.len())
            .field("groups", &self.groups.len())
            .finish_non_exhaustive()
    }
}

impl Default for Routing {
    fn default() -> Self {
        Self::new()
    }
}

/// Per-table figures of a version.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VrfStats {
    /// Table id.
    pub vrf: Vrf,
    /// IPv4 routes.
    pub routes4: usize,
    /// IPv6 routes.
    pub routes6: usize,
    /// IPv4 RIB trie nodes.
    pub rib_nodes4: usize,
    /// IPv6 RIB trie nodes.
    pub rib_nodes6: usize,
    /// IPv4 first-level pages that are private (not the shared zero page).
    pub tbl24_pages4: usize,
    /// IPv6 first-level private pages.
    pub tbl24_pages6: usize,
    /// IPv4 8-bit groups in use (those holding pairs too).
    pub tbl8_used4: usize,
    /// IPv4 pairs in use: groups of one value but at one byte, as two
    /// entries (`fib.rs`).
    pub pairs4: usize,
    /// IPv4 8-bit groups allocated (used + free).
    pub tbl8_capacity4: usize,
    /// IPv6 8-bit groups in use (those holding pairs too).
    pub tbl8_used6: usize,
    /// IPv6 pairs in use.
    pub pairs6: usize,
    /// IPv6 8-bit groups allocated.
    pub tbl8_capacity6: usize,
    /// Bytes of the IPv4 RIB.
    pub rib4_bytes: usize,
    /// Bytes of the IPv6 RIB.
    pub rib6_bytes: usize,
    /// Bytes of the IPv4 FIB.
    pub fib4_bytes: usize,
    /// Bytes of the IPv6 FIB.
    pub fib6_bytes: usize,
}

/// Figures of a version ([`Routing::stats`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoutingStats {
    /// Version number (0 for `Routing::new()`, +1 per applied batch).
    pub version: u64,
    /// Per VRF.
    pub vrfs: Vec<VrfStats>,
    /// Next hops.
    pub nexthops: usize,
    /// ECMP groups.
    pub groups: usize,
    /// Bytes of next-hop and group tables.
    pub nh_bytes: usize,
    /// Bytes of everything reachable from this version, shared memory counted once.
    pub total_bytes: usize,
    /// The memory the version is charged against [`Limits::bytes`].
    pub charged_bytes: usize,
    /// Its limits.
    pub limits: Limits,
}

impl Routing {
    /// No VRF, no next hop, no group; the default [`Limits`].
    pub fn new() -> Self {
        Self::with_limits(Limits::default())
    }

    /// No VRF, no next hop, no group; every version made from it is held
    /// to `limits`.
    pub fn with_limits(limits: Limits) -> Self {
        let mut r = Routing {
            vrfs: Arc::new(BTreeMap::new()),
            nhs: Arc::new(IdTable::new()),
            nh_refs: Arc::new(RefTable::new()),
            groups: Arc::new(IdTable::new()),
            group_refs: Arc::new(RefTable::new()),
            down_ports: Arc::default(),
            version: 0,
            fpm_routes: 0,
            limits,
            charge: 0,
        };
        r.charge = r.recharge();
        r
    }

    /// The limits this version is held to.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The memory this version is charged against [`Limits::bytes`]
    /// (see `limits`). O(1).
    pub fn charged_bytes(&self) -> usize {
        self.charge
    }

    /// The charge computed from scratch, table by table and group by group
    /// (what the running one must equal).
    fn recharge(&self) -> usize {
        self.vrfs.values().map(VrfTables::charge).sum::<usize>()
            + self.nhs.charge()
            + self.groups.charge()
            + self.groups.iter().map(|(_, g)| g.charge()).sum::<usize>()
    }

    /// Version number: 0 for `new()`, +1 per applied batch.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Applies `batch` to a copy of this version and returns the new version.
    ///
    /// # Errors
    /// The first failing change, with its index; `self` is unchanged either way.
    pub fn apply(&self, batch: &[RouteChange]) -> Result<Routing, BatchError> {
        self.clone().apply_owned(batch)
    }

    /// Like [`Routing::apply`] but consumes `self`, so nothing is copied that only
    /// this handle holds. On error the partially applied value is dropped (keep a
    /// clone if the old version is still needed).
    ///
    /// # Errors
    /// The first failing change, with its index.
    pub fn apply_owned(self, batch: &[RouteChange]) -> Result<Routing, BatchError> {
        let mut t = self.into_txn();
        for (index, c) in batch.iter().enumerate() {
            t.change(c).map_err(|error| BatchError { index, error })?;
        }
        Ok(t.commit())
    }

    /// A transaction on top of a clone of this version.
    pub fn txn(&self) -> Txn {
        self.clone().into_txn()
    }

    /// A transaction that consumes this handle.
    pub fn into_txn(self) -> Txn {
        Txn {
            r: self,
            scratch: Vec::new(),
            touched: SmallVec::new(),
            removed: None,
        }
    }

    // ---- data path ----------------------------------------------------------

    /// The result of FIB entry `e`; `hash` is called only when `e` is an
    /// ECMP group (the flow hash selects the member).
    #[inline(always)]
    fn resolve(&self, e: u32, hash: impl FnOnce() -> u32) -> Resolved {
        match e >> KIND_SHIFT {
            K_NH => Resolved::Forward(e & ID_MASK),
            K_GROUP => match self.groups.get(e & ID_MASK) {
                Some(g) => Resolved::Forward(g.select(hash())),
                None => Resolved::NoRoute,
            },
            K_BLACKHOLE => Resolved::Blackhole,
            K_REJECT => Resolved::Reject,
            K_LOCAL => Resolved::Local,
            _ => Resolved::NoRoute,
        }
    }

    /// IPv4 lookup; `flow_hash` is called only when the route is an ECMP
    /// group (the hash selects the member).
    #[inline]
    pub fn lookup4(&self, vrf: Vrf, dst: u32, flow_hash: impl FnOnce() -> u32) -> Resolved {
        match self.vrfs.get(&vrf) {
            Some(t) => self.resolve(t.v4.fib.lookup(dst), flow_hash),
            None => Resolved::NoRoute,
        }
    }

    /// IPv6 lookup (`dst` is `u128::from_be_bytes(octets)`); `flow_hash`
    /// as for [`Routing::lookup4`].
    #[inline]
    pub fn lookup6(&self, vrf: Vrf, dst: u128, flow_hash: impl FnOnce() -> u32) -> Resolved {
        match self.vrfs.get(&vrf) {
            Some(t) => self.resolve(t.v6.fib.lookup(dst), flow_hash),
            None => Resolved::NoRoute,
        }
    }

    /// IPv4 lookups for a burst: `out[i]` for `dsts[i]`. The first-level
    /// entries of up to 64 destinations are loaded before any is used so that
    /// their cache misses overlap.
    ///
    /// `hash(i)` is the flow hash of packet `i`; it is called only for the
    /// packets whose route is an ECMP group, so a table without groups (or
    /// a burst that hits none) costs no hashing at all.
    ///
    /// # Panics
    /// If `dsts` and `out` differ in length.
    #[inline(always)]
    pub fn lookup4_burst(
        &self,
        vrf: Vrf,
        dsts: &[u32],
        hash: impl FnMut(usize) -> u32,
        out: &mut [Resolved],
    ) {
        let t = self.vrfs.get(&vrf);
        self.lookup_burst(t.map(|t| &t.v4.fib), dsts, hash, out);
    }

    /// IPv6 lookups for a burst (level by level across the burst); `hash`
    /// as for [`Routing::lookup4_burst`].
    ///
    /// # Panics
    /// If `dsts` and `out` differ in length.
    #[inline]
    pub fn lookup6_burst(
        &self,
        vrf: Vrf,
        dsts: &[u128],
        hash: impl FnMut(usize) -> u32,
        out: &mut [Resolved],
    ) {
        let t = self.vrfs.get(&vrf);
        self.lookup_burst(t.map(|t| &t.v6.fib), dsts, hash, out);
    }

    /// The body of both burst lookups.
    #[inline(always)]
    fn lookup_burst<F: BurstFib>(
        &self,
        fib: Option<&F>,
        dsts: &[F::Addr],
        mut hash: impl FnMut(usize) -> u32,
        out: &mut [Resolved],
    ) {
        assert!(dsts.len() == out.len());
        let Some(fib) = fib else {
            out.fill(Resolved::NoRoute);
            return;
        };
        let mut ent = [0u32; BURST];
        // By index, not `chunks().zip()`: that zip was not inlined, and
        // took its lengths with two divisions a call.
        let mut c = 0;
        while c < dsts.len() {
            let end = dsts.len().min(c + BURST);
            let (d, o) = (&dsts[c..end], &mut out[c..end]);
            let e = &mut ent[..d.len()];
            fib.lookup_burst(d, e);
            // The common burst, every entry a plain next hop, without the
            // per-entry dispatch (-0.8 ns a packet on the worker's fast
            // path, `bench-results/throughput.md`).
            if e.iter().fold(0, |a, &x| a | ((x >> KIND_SHIFT) ^ K_NH)) == 0 {
                for (o, &e) in o.iter_mut().zip(e.iter()) {
                    *o = Resolved::Forward(e & ID_MASK);
                }
            } else {
                for (j, (o, &e)) in o.iter_mut().zip(e.iter()).enumerate() {
                    *o = self.resolve(e, || hash(c + j));
                }
            }
            c = end;
        }
    }

    /// Whether port `port` is down (its next hops get no ECMP slots).
    pub fn port_down(&self, port: u16) -> bool {
        self.down_ports.contains(&port)
    }

    /// Whether every path of `target` leads to a down port (`linkdown` in
    /// `route show`).
    pub fn linkdown(&self, target: Target) -> bool {
        let down = |nh: NhId| self.nhs.get(nh).is_some_and(|n| self.port_down(n.port));
        match target {
            Target::NextHop(nh) => down(nh),
            Target::Group(g) => self
                .groups
                .get(g)
                .is_some_and(|g| g.members().iter().all(|&(nh, _)| down(nh))),
            _ => false,
        }
    }

    /// The next hop `id` (two array indexings).
    #[inline(always)]
    pub fn nexthop(&self, id: NhId) -> Option<&NextHop> {
        self.nhs.get(id)
    }

    /// The ECMP group `id`.
    #[inline]
    pub fn group(&self, id: GroupId) -> Option<&Group> {
        self.groups.get(id).map(|g| &**g)
    }

    // ---- control side queries ------------------------------------------------

    /// The FIB's unresolved answer for `dst` (what the data path matched).
    pub fn target4(&self, vrf: Vrf, dst: u32) -> Option<Target> {
        decode(self.vrfs.get(&vrf)?.v4.fib.lookup(dst))
    }

    /// The FIB's unresolved answer for `dst`.
    pub fn target6(&self, vrf: Vrf, dst: u128) -> Option<Target> {
        decode(self.vrfs.get(&vrf)?.v6.fib.lookup(dst))
    }

    /// Longest-prefix match in the RIB (`ip route get`): the matching route.
    pub fn route4(&self, vrf: Vrf, dst: u32) -> Option<(Prefix4, Target)> {
        let (a, l, e) = self.vrfs.get(&vrf)?.v4.rib.lpm(dst as u128, 32)?;
        Some((Prefix4::new(a as u32, l).ok()?, e.target))
    }

    /// Longest-prefix match in the IPv6 RIB.
    pub fn route6(&self, vrf: Vrf, dst: u128) -> Option<(Prefix6, Target)> {
        let (a, l, e) = self.vrfs.get(&vrf)?.v6.rib.lpm(dst, 128)?;
        Some((Prefix6::new(a, l).ok()?, e.target))
    }

    /// Exact route lookup.
    pub fn get(&self, vrf: Vrf, prefix: Prefix) -> Option<Target> {
        self.entry(vrf, prefix).map(|e| e.target)
    }

    /// Exact route lookup, with the route's origin.
    pub fn entry(&self, vrf: Vrf, prefix: Prefix) -> Option<Entry> {
        let t = self.vrfs.get(&vrf)?;
        match prefix {
            Prefix::V4(p) => t.v4.rib.get(p.addr() as u128, p.len()),
            Prefix::V6(p) => t.v6.rib.get(p.addr(), p.len()),
        }
    }

    /// IPv4 routes of `vrf` in prefix order (address, then length).
    pub fn entries4(&self, vrf: Vrf) -> impl Iterator<Item = (Prefix4, Entry)> + '_ {
        self.vrfs
            .get(&vrf)
            .into_iter()
            .flat_map(|t| t.v4.rib.iter())
            .map(|(a, l, e)| {
                (
                    Prefix4::new_truncate(a as u32, l).unwrap_or(Prefix4::DEFAULT),
                    e,
                )
            })
    }

    /// IPv6 routes of `vrf` in prefix order.
    pub fn entries6(&self, vrf: Vrf) -> impl Iterator<Item = (Prefix6, Entry)> + '_ {
        self.vrfs
            .get(&vrf)
            .into_iter()
            .flat_map(|t| t.v6.rib.iter())
            .map(|(a, l, e)| (Prefix6::new_truncate(a, l).unwrap_or(Prefix6::DEFAULT), e))
    }

    /// All routes of `vrf` with their origins: IPv4 then IPv6, each in
    /// prefix order.
    pub fn entries(&self, vrf: Vrf) -> impl Iterator<Item = (Prefix, Entry)> + '_ {
        self.entries4(vrf)
            .map(|(p, e)| (Prefix::V4(p), e))
            .chain(self.entries6(vrf).map(|(p, e)| (Prefix::V6(p), e)))
    }

    /// IPv4 routes of `vrf` in prefix order (address, then length).
    pub fn routes4(&self, vrf: Vrf) -> impl Iterator<Item = (Prefix4, Target)> + '_ {
        self.entries4(vrf).map(|(p, e)| (p, e.target))
    }

    /// IPv6 routes of `vrf` in prefix order.
    pub fn routes6(&self, vrf: Vrf) -> impl Iterator<Item = (Prefix6, Target)> + '_ {
        self.entries6(vrf).map(|(p, e)| (p, e.target))
    }

    /// All routes of `vrf`: IPv4 then IPv6, each in prefix order.
    pub fn routes(&self, vrf: Vrf) -> impl Iterator<Item = (Prefix, Target)> + '_ {
        self.entries(vrf).map(|(p, e)| (p, e.target))
    }

    /// Routes installed by zebra over FPM, in every table.
    pub fn fpm_route_count(&self) -> usize {
        self.fpm_routes
    }

    /// Number of routes in `vrf` (IPv4, IPv6).
    pub fn route_count(&self, vrf: Vrf) -> (usize, usize) {
        self.vrfs
            .get(&vrf)
            .map_or((0, 0), |t| (t.v4.rib.len(), t.v6.rib.len()))
    }

    /// VRF ids, ascending.
    pub fn vrfs(&self) -> impl Iterator<Item = Vrf> + '_ {
        self.vrfs.keys().copied()
    }

    /// Next hops, ascending id.
    pub fn nexthops(&self) -> impl Iterator<Item = (NhId, &NextHop)> + '_ {
        self.nhs.iter()
    }

    /// ECMP groups, ascending id.
    pub fn groups(&self) -> impl Iterator<Item = (GroupId, &Group)> + '_ {
        self.groups.iter().map(|(i, g)| (i, &**g))
    }

    /// Routes and group memberships using next hop `id`.
    pub fn nexthop_refs(&self, id: NhId) -> u32 {
        self.nh_refs.get(id)
    }

    /// Routes using group `id`.
    pub fn group_refs(&self, id: GroupId) -> u32 {
        self.group_refs.get(id)
    }

    /// Lowest next-hop id above every id in use (for allocating new ids).
    pub fn next_free_nh_id(&self) -> NhId {
        self.nhs.last_id().map_or(0, |i| i + 1)
    }

    /// Bytes of everything reachable from this version (shared memory counted
    /// once). Walks the whole version: a control-side statistic, not for the data path.
    pub fn memory_bytes(&self) -> usize {
        self.stats().total_bytes
    }

    /// Counts and memory per table. Walks the whole version.
    pub fn stats(&self) -> RoutingStats {
        let mut seen = HashSet::new();
        let mut s = RoutingStats {
            version: self.version,
            nexthops: self.nhs.len(),
            groups: self.groups.len(),
            ..Default::default()
        };
        let mut total = std::mem::size_of::<Routing>();
        for (&vrf, t) in self.vrfs.iter() {
            let v = VrfStats {
                vrf,
                routes4: t.v4.rib.len(),
                routes6: t.v6.rib.len(),
                rib_nodes4: t.v4.rib.nodes(),
                rib_nodes6: t.v6.rib.nodes(),
                tbl24_pages4: t.v4.fib.tbl24_pages(),
                tbl24_pages6: t.v6.fib.tbl24_pages(),
                tbl8_used4: t.v4.fib.groups_used(),
                pairs4: t.v4.fib.pairs_used(),
                tbl8_capacity4: t.v4.fib.groups_capacity(),
                tbl8_used6: t.v6.fib.groups_used(),
                pairs6: t.v6.fib.pairs_used(),
                tbl8_capacity6: t.v6.fib.groups_capacity(),
                rib4_bytes: t.v4.rib.mem(&mut seen),
                rib6_bytes: t.v6.rib.mem(&mut seen),
                fib4_bytes: t.v4.fib.mem(&mut seen),
                fib6_bytes: t.v6.fib.mem(&mut seen),
            };
            total += std::mem::size_of::<VrfTables>()
                + 2 * cow::ARC_HEADER
                + std::mem::size_of::<Family<32>>()
                + std::mem::size_of::<Family<128>>()
                + v.rib4_bytes
                + v.rib6_bytes
                + v.fib4_bytes
                + v.fib6_bytes;
            s.vrfs.push(v);
        }
        s.nh_bytes = self.nhs.mem(&mut seen)
            + self.nh_refs.mem(&mut seen)
            + self.groups.mem_groups(&mut seen)
            + self.group_refs.mem(&mut seen);
        s.total_bytes = total + s.nh_bytes;
        s.charged_bytes = self.charge;
        s.limits = self.limits;
        debug_assert_eq!(self.charge, self.recharge(), "the running charge");
        s
    }
}

/// Destinations resolved together by the burst lookups.
const BURST: usize = fib::BURST_MAX;

/// A batch being built: a private working copy of a version. Each method either
/// applies its change completely or, on error, changes nothing, so a caller may
/// report the error and go on. [`Txn::commit`] yields the new version.
pub struct Txn {
    r: Routing,
    scratch: Vec<(u128, u8)>,
    /// The VRFs this batch wrote (sorted and deduplicated by `commit`);
    /// inline, as a batch mostly writes one and a one-change version is
    /// ~18 allocations (`bench-results/route.md`).
    touched: SmallVec<[Vrf; 4]>,
    /// Prefixes deleted by this batch, when recording (see
    /// [`Txn::record_removals`]).
    removed: Option<Vec<(Vrf, Prefix)>>,
}

impl Txn {
    /// The working copy as it stands (for queries during a batch).
    pub fn current(&self) -> &Routing {
        &self.r
    }

    /// Finishes the batch: drops what became empty and returns the new version.
    pub fn commit(mut self) -> Routing {
        self.trim();
        self.r.version += 1;
        self.r
    }

    /// Trims the families this batch wrote (first-level pages left all
    /// zero go back to the shared zero page, the group pool's free tail
    /// goes) and keeps the charge: at the end of a batch, and before a
    /// change is refused at the memory limit, so that what the batch's
    /// deletes freed is credited first.
    fn trim(&mut self) {
        self.touched.sort_unstable();
        self.touched.dedup();
        if !self.touched.is_empty() {
            let map = make_mut(&mut self.r.vrfs);
            for vrf in &self.touched {
                if let Some(t) = map.get_mut(vrf) {
                    // Only a family this batch wrote is unshared; the others
                    // have nothing to trim. Trimming gives pages back: the
                    // charge follows.
                    if let Some(f) = Arc::get_mut(&mut t.v4) {
                        let before = f.charge();
                        f.fib.trim();
                        self.r.charge = self.r.charge - before + f.charge();
                    }
                    if let Some(f) = Arc::get_mut(&mut t.v6) {
                        let before = f.charge();
                        f.fib.trim();
                        self.r.charge = self.r.charge - before + f.charge();
                    }
                }
            }
        }
    }

    /// Whether a change that raised the charge from `before` took it past
    /// the memory limit, once what this batch freed is credited ([`Txn::trim`]).
    fn over_limit(&mut self, before: usize) -> bool {
        if self.r.charge <= before || self.r.charge <= self.r.limits.bytes {
            return false;
        }
        self.trim();
        self.r.charge > self.r.limits.bytes
    }

    /// Applies one change.
    ///
    /// # Errors
    /// See [`RouteError`]; on error nothing was changed.
    pub fn change(&mut self, c: &RouteChange) -> Result<(), RouteError> {
        match c {
            RouteChange::Add {
                vrf,
                prefix,
                target,
            } => self.add(*vrf, *prefix, *target),
            RouteChange::Replace {
                vrf,
                prefix,
                target,
            } => self.replace(*vrf, *prefix, *target).map(|_| ()),
            RouteChange::Upsert {
                vrf,
                prefix,
                target,
            } => self.upsert(*vrf, *prefix, *target).map(|_| ()),
            RouteChange::Del { vrf, prefix } => self.del(*vrf, *prefix).map(|_| ()),
            RouteChange::NhAdd { id, nh } => self.nh_add(*id, *nh),
            RouteChange::NhUpdate { id, nh } => self.nh_update(*id, *nh).map(|_| ()),
            RouteChange::NhDel { id } => self.nh_del(*id).map(|_| ()),
            RouteChange::GroupAdd { id, members } => self.group_add(*id, members),
            RouteChange::GroupUpdate { id, members } => self.group_update(*id, members),
            RouteChange::GroupDel { id } => self.group_del(*id),
            RouteChange::VrfAdd { vrf } => self.vrf_add(*vrf),
            RouteChange::VrfDel { vrf } => self.vrf_del(*vrf),
        }
    }

    fn check_target(&self, t: Target) -> Result<(), RouteError> {
        match t {
            Target::NextHop(id) if self.r.nhs.get(id).is_none() => {
                Err(RouteError::UnknownNextHop(id))
            }
            Target::Group(id) if self.r.groups.get(id).is_none() => {
                Err(RouteError::UnknownGroup(id))
            }
            _ => Ok(()),
        }
    }

    #[inline(always)]
    fn add_ref(&mut self, t: Target, delta: i32) {
        match t {
            Target::NextHop(id) => make_mut(&mut self.r.nh_refs).add(id, delta),
            Target::Group(id) => make_mut(&mut self.r.group_refs).add(id, delta),
            _ => {}
        }
    }

    /// VRF `vrf`, created (and charged) if it does not exist.
    #[inline(always)]
    fn vrf_mut(&mut self, vrf: Vrf) -> &mut VrfTables {
        if self.touched.last() != Some(&vrf) {
            self.touched.push(vrf);
        }
        let r = &mut self.r;
        match make_mut(&mut r.vrfs).entry(vrf) {
            std::collections::btree_map::Entry::Occupied(t) => t.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => {
                let t = v.insert(VrfTables::default());
                r.charge += t.charge();
                t
            }
        }
    }

    /// Whether a write to VRF `vrf` would create it; refused past
    /// [`Limits::tables`].
    fn new_table(&self, vrf: Vrf) -> Result<bool, RouteError> {
        if self.r.vrfs.contains_key(&vrf) {
            return Ok(false);
        }
        if self.r.vrfs.len() >= self.r.limits.tables {
            return Err(RouteError::Full {
                capacity: Capacity::Tables,
                limit: self.r.limits.tables,
            });
        }
        Ok(true)
    }

    /// Drops VRF `vrf` and its charge.
    fn drop_table(&mut self, vrf: Vrf) {
        if let Some(t) = make_mut(&mut self.r.vrfs).remove(&vrf) {
            self.r.charge -= t.charge();
        }
        self.touched.retain(|v| *v != vrf);
    }

    /// The error for a change that took the charge past the limit.
    fn memory_full(&self) -> RouteError {
        RouteError::Full {
            capacity: Capacity::Memory,
            limit: self.r.limits.bytes,
        }
    }

    /// [`Txn::write_route`] held to the [`Limits`]: a new VRF past the
    /// table limit is refused before anything is written, and a write that
    /// raised the charge past the memory limit is undone and refused.
    fn set_route(
        &mut self,
        vrf: Vrf,
        prefix: Prefix,
        entry: Entry,
    ) -> Result<Option<Entry>, RouteError> {
        let created = self.new_table(vrf)?;
        let before = self.r.charge;
        let old = self.write_route(vrf, prefix, entry);
        if self.over_limit(before) {
            match old {
                Some(o) => {
                    self.write_route(vrf, prefix, o);
                }
                None => {
                    self.erase_route(vrf, prefix, |_| true);
                }
            }
            if created {
                self.drop_table(vrf);
            }
            return Err(self.memory_full());
        }
        Ok(old)
    }

    /// Writes `prefix -> entry` into RIB and FIB and keeps the charge (no
    /// validation, no limit, no refcounts).
    fn write_route(&mut self, vrf: Vrf, prefix: Prefix, entry: Entry) -> Option<Entry> {
        let mut kids = std::mem::take(&mut self.scratch);
        let v = encode(entry.target);
        let t = self.vrf_mut(vrf);
        let (old, before, after) = match prefix {
            Prefix::V4(p) => Family::charged(&mut t.v4, |f| {
                f.set(p.addr() as u128, p.len(), entry, v, &mut kids)
            }),
            Prefix::V6(p) => {
                Family::charged(&mut t.v6, |f| f.set(p.addr(), p.len(), entry, v, &mut kids))
            }
        };
        self.scratch = kids;
        self.r.charge = self.r.charge - before + after;
        if old.is_some_and(|o| o.origin.fpm) {
            self.r.fpm_routes -= 1;
        }
        if entry.origin.fpm {
            self.r.fpm_routes += 1;
        }
        old
    }

    /// Removes `prefix` from RIB and FIB if present and `pred` accepts its
    /// entry, and keeps the charge (no refcounts).
    fn erase_route(
        &mut self,
        vrf: Vrf,
        prefix: Prefix,
        pred: impl FnOnce(&Entry) -> bool,
    ) -> Option<Entry> {
        // Only an existing VRF: `vrf_mut` would create one.
        if !self.r.vrfs.contains_key(&vrf) {
            return None;
        }
        let mut kids = std::mem::take(&mut self.scratch);
        let t = self.vrf_mut(vrf);
        let (old, before, after) = match prefix {
            Prefix::V4(p) => Family::charged(&mut t.v4, |f| {
                f.remove_if(p.addr() as u128, p.len(), &mut kids, pred)
            }),
            Prefix::V6(p) => Family::charged(&mut t.v6, |f| {
                f.remove_if(p.addr(), p.len(), &mut kids, pred)
            }),
        };
        self.scratch = kids;
        self.r.charge = self.r.charge - before + after;
        let old = old?;
        if old.origin.fpm {
            self.r.fpm_routes -= 1;
        }
        Some(old)
    }

    /// From now on, remember every prefix this batch deletes
    /// ([`Txn::take_removed`]): a caller that keeps routes of its own
    /// beneath the table's (FPM's, under the operator's) puts them back.
    pub fn record_removals(&mut self) {
        self.removed.get_or_insert_with(Vec::new);
    }

    /// The prefixes deleted since [`Txn::record_removals`].
    pub fn take_removed(&mut self) -> Vec<(Vrf, Prefix)> {
        self.removed
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Adds a route.
    ///
    /// # Errors
    /// `RouteExists`, `UnknownNextHop`, `UnknownGroup`.
    pub fn add(&mut self, vrf: Vrf, prefix: Prefix, target: Target) -> Result<(), RouteError> {
        self.check_target(target)?;
        let entry = Entry {
            target,
            origin: Origin::STATIC,
        };
        // One walk in the common case: insert, and on a duplicate put the
        // existing entry back (RIB and FIB then hold exactly what they held).
        if let Some(old) = self.set_route(vrf, prefix, entry)? {
            self.write_route(vrf, prefix, old);
            return Err(RouteError::RouteExists { vrf, prefix });
        }
        self.add_ref(target, 1);
        Ok(())
    }

    /// Replaces an existing route's target; returns the old one.
    ///
    /// # Errors
    /// `RouteNotFound`, `UnknownNextHop`, `UnknownGroup`.
    pub fn replace(
        &mut self,
        vrf: Vrf,
        prefix: Prefix,
        target: Target,
    ) -> Result<Target, RouteError> {
        self.check_target(target)?;
        if self.r.get(vrf, prefix).is_none() {
            return Err(RouteError::RouteNotFound { vrf, prefix });
        }
        self.upsert(vrf, prefix, target)
            .map(|o| o.unwrap_or(target))
    }

    /// Adds or replaces; returns the old target if there was one.
    ///
    /// # Errors
    /// `UnknownNextHop`, `UnknownGroup`.
    pub fn upsert(
        &mut self,
        vrf: Vrf,
        prefix: Prefix,
        target: Target,
    ) -> Result<Option<Target>, RouteError> {
        self.set(vrf, prefix, target, Origin::STATIC)
            .map(|o| o.map(|e| e.target))
    }

    /// Adds or replaces a route of `origin`; returns the old entry if there
    /// was one.
    ///
    /// # Errors
    /// `UnknownNextHop`, `UnknownGroup`.
    pub fn set(
        &mut self,
        vrf: Vrf,
        prefix: Prefix,
        target: Target,
        origin: Origin,
    ) -> Result<Option<Entry>, RouteError> {
        self.check_target(target)?;
        let old = self.set_route(vrf, prefix, Entry { target, origin })?;
        self.add_ref(target, 1);
        if let Some(o) = old {
            self.add_ref(o.target, -1);
        }
        Ok(old)
    }

    /// Deletes a route; returns its target. The covered addresses fall back to
    /// the longest remaining covering route.
    ///
    /// # Errors
    /// `RouteNotFound`.
    pub fn del(&mut self, vrf: Vrf, prefix: Prefix) -> Result<Target, RouteError> {
        self.del_if(vrf, prefix, |_| true)
            .ok_or(RouteError::RouteNotFound { vrf, prefix })
    }

    /// Deletes a route if `pred` accepts its entry (e.g. only zebra's);
    /// returns its target, or `None` when the prefix is absent or `pred`
    /// refused it (nothing changed then). One lookup less than reading the
    /// entry and then deleting it.
    pub fn del_if(
        &mut self,
        vrf: Vrf,
        prefix: Prefix,
        pred: impl FnOnce(&Entry) -> bool,
    ) -> Option<Target> {
        let old = self.erase_route(vrf, prefix, pred)?;
        self.add_ref(old.target, -1);
        if let Some(r) = self.removed.as_mut() {
            r.push((vrf, prefix));
        }
        Some(old.target)
    }

    fn check_id(id: u32) -> Result<(), RouteError> {
        if id > MAX_ID {
            Err(RouteError::IdOutOfRange { id, max: MAX_ID })
        } else {
            Ok(())
        }
    }

    /// Adds a next hop.
    ///
    /// # Errors
    /// `IdOutOfRange`, `NextHopExists`.
    pub fn nh_add(&mut self, id: NhId, nh: NextHop) -> Result<(), RouteError> {
        Self::check_id(id)?;
        if self.r.nhs.get(id).is_some() {
            return Err(RouteError::NextHopExists(id));
        }
        let before = self.r.charge;
        self.put_nh(id, Some(nh));
        if self.over_limit(before) {
            self.put_nh(id, None);
            return Err(self.memory_full());
        }
        Ok(())
    }

    /// Replaces a next hop's contents; returns the old contents.
    ///
    /// # Errors
    /// `UnknownNextHop`.
    pub fn nh_update(&mut self, id: NhId, nh: NextHop) -> Result<NextHop, RouteError> {
        let old = *self.r.nhs.get(id).ok_or(RouteError::UnknownNextHop(id))?;
        if old != nh {
            self.put_nh(id, Some(nh));
        }
        Ok(old)
    }

    /// Puts `nh` at `id` (`None`: removes it) and keeps the charge; returns
    /// the next hop that was there.
    fn put_nh(&mut self, id: NhId, nh: Option<NextHop>) -> Option<NextHop> {
        let before = self.r.nhs.charge();
        let nhs = make_mut(&mut self.r.nhs);
        let old = nhs.replace(id, nh);
        self.r.charge = self.r.charge - before + nhs.charge();
        old
    }

    /// Deletes an unused next hop.
    ///
    /// # Errors
    /// `UnknownNextHop`, `NextHopInUse`.
    pub fn nh_del(&mut self, id: NhId) -> Result<NextHop, RouteError> {
        self.r.nhs.get(id).ok_or(RouteError::UnknownNextHop(id))?;
        let refs = self.r.nh_refs.get(id);
        if refs != 0 {
            return Err(RouteError::NextHopInUse { id, refs });
        }
        self.put_nh(id, None).ok_or(RouteError::UnknownNextHop(id))
    }

    fn build_group(&self, id: GroupId, members: &[(NhId, u32)]) -> Result<Group, RouteError> {
        for &(nh, _) in members {
            if self.r.nhs.get(nh).is_none() {
                return Err(RouteError::UnknownNextHop(nh));
            }
        }
        let (nhs, down) = (&self.r.nhs, &self.r.down_ports);
        Group::with_live(id, members, |nh| {
            nhs.get(nh).is_none_or(|n| !down.contains(&n.port))
        })
    }

    /// Records which ports are down and rebuilds the slot tables of the
    /// ECMP groups that have a member on a port whose state changed, so
    /// flows move off a down port in this batch (and back when it is up).
    pub fn set_ports_down(&mut self, down: std::collections::BTreeSet<u16>) {
        if *self.r.down_ports == down {
            return;
        }
        let changed: std::collections::BTreeSet<u16> = self
            .r
            .down_ports
            .symmetric_difference(&down)
            .copied()
            .collect();
        self.r.down_ports = Arc::new(down);
        let affected: Vec<(GroupId, Vec<(NhId, u32)>)> = self
            .r
            .groups
            .iter()
            .filter(|(_, g)| {
                g.members().iter().any(|&(nh, _)| {
                    self.r
                        .nhs
                        .get(nh)
                        .is_some_and(|n| changed.contains(&n.port))
                })
            })
            .map(|(id, g)| (id, g.members().to_vec()))
            .collect();
        for (id, members) in affected {
            if let Ok(g) = self.build_group(id, &members) {
                // Never refused: the same members, the same size.
                self.put_group(id, Some(Arc::new(g)));
            }
        }
    }

    /// Puts `g` at `id` (`None`: removes it) and keeps the charge; returns
    /// the group that was there.
    fn put_group(&mut self, id: GroupId, g: Option<Arc<Group>>) -> Option<Arc<Group>> {
        let before = self.r.groups.charge();
        let added = g.as_ref().map_or(0, |g| g.charge());
        let groups = make_mut(&mut self.r.groups);
        let old = groups.replace(id, g);
        let removed = old.as_ref().map_or(0, |g| g.charge());
        self.r.charge = self.r.charge + groups.charge() + added - before - removed;
        old
    }

    /// [`Txn::put_group`] held to the memory limit: a put that raised the
    /// charge past it is undone and refused.
    fn put_group_checked(&mut self, id: GroupId, g: Group) -> Result<(), RouteError> {
        let before = self.r.charge;
        let old = self.put_group(id, Some(Arc::new(g)));
        if self.over_limit(before) {
            self.put_group(id, old);
            return Err(self.memory_full());
        }
        Ok(())
    }

    /// Adds an ECMP group.
    ///
    /// # Errors
    /// `IdOutOfRange`, `GroupExists`, `UnknownNextHop`, `EmptyGroup`, `ZeroWeight`,
    /// `DuplicateMember`, `TooManyMembers`.
    pub fn group_add(&mut self, id: GroupId, members: &[(NhId, u32)]) -> Result<(), RouteError> {
        Self::check_id(id)?;
        if self.r.groups.get(id).is_some() {
            return Err(RouteError::GroupExists(id));
        }
        let g = self.build_group(id, members)?;
        self.put_group_checked(id, g)?;
        let refs = make_mut(&mut self.r.nh_refs);
        for &(nh, _) in members {
            refs.add(nh, 1);
        }
        Ok(())
    }

    /// Replaces an ECMP group's members.
    ///
    /// # Errors
    /// `UnknownGroup` and the member errors of [`Txn::group_add`].
    pub fn group_update(&mut self, id: GroupId, members: &[(NhId, u32)]) -> Result<(), RouteError> {
        let old = self
            .r
            .groups
            .get(id)
            .cloned()
            .ok_or(RouteError::UnknownGroup(id))?;
        let g = self.build_group(id, members)?;
        self.put_group_checked(id, g)?;
        let refs = make_mut(&mut self.r.nh_refs);
        for &(nh, _) in members {
            refs.add(nh, 1);
        }
        for &(nh, _) in old.members() {
            refs.add(nh, -1);
        }
        Ok(())
    }

    /// Deletes an unused ECMP group.
    ///
    /// # Errors
    /// `UnknownGroup`, `GroupInUse`.
    pub fn group_del(&mut self, id: GroupId) -> Result<(), RouteError> {
        let g = self
            .r
            .groups
            .get(id)
            .cloned()
            .ok_or(RouteError::UnknownGroup(id))?;
        let refs = self.r.group_refs.get(id);
        if refs != 0 {
            return Err(RouteError::GroupInUse { id, refs });
        }
        self.put_group(id, None);
        let refs = make_mut(&mut self.r.nh_refs);
        for &(nh, _) in g.members() {
            refs.add(nh, -1);
        }
        Ok(())
    }

    /// Creates an empty VRF.
    ///
    /// # Errors
    /// `VrfExists`.
    pub fn vrf_add(&mut self, vrf: Vrf) -> Result<(), RouteError> {
        if self.r.vrfs.contains_key(&vrf) {
            return Err(RouteError::VrfExists(vrf));
        }
        self.new_table(vrf)?;
        let before = self.r.charge;
        self.vrf_mut(vrf);
        if self.over_limit(before) {
            self.drop_table(vrf);
            return Err(self.memory_full());
        }
        Ok(())
    }

    /// Deletes an empty VRF.
    ///
    /// # Errors
    /// `VrfNotFound`, `VrfNotEmpty`.
    pub fn vrf_del(&mut self, vrf: Vrf) -> Result<(), RouteError> {
        let t = self.r.vrfs.get(&vrf).ok_or(RouteError::VrfNotFound(vrf))?;
        let routes = t.v4.rib.len() + t.v6.rib.len();
        if routes != 0 {
            return Err(RouteError::VrfNotEmpty { vrf, routes });
        }
        self.drop_table(vrf);
        Ok(())
    }
}
