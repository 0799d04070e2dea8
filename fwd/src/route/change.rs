//! The changes a batch is made of, and why one is refused.

use super::{Capacity, GroupId, NextHop, NhId, Prefix, Target, Vrf};

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
        /// Id (<= [`MAX_ID`](super::MAX_ID)).
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
        /// Id (<= [`MAX_ID`](super::MAX_ID)).
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
    /// Id above [`MAX_ID`](super::MAX_ID).
    #[error("id {id} out of range (max {max})")]
    IdOutOfRange {
        /// Id.
        id: u32,
        /// [`MAX_ID`](super::MAX_ID).
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
    /// More than [`MAX_GROUP_MEMBERS`](super::MAX_GROUP_MEMBERS) members.
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
    /// The change would take the tables past one of their [`Limits`](super::Limits).
    #[error("{capacity} full: {}", limit_text(*capacity, *limit))]
    Full {
        /// Which limit.
        capacity: Capacity,
        /// Its value ([`Limits::tables`](super::Limits::tables) or [`Limits::bytes`](super::Limits::bytes)).
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
