//! FPM: the Forwarding Plane Manager stream through which FRR's zebra
//! (`-M dplane_fpm_nl`) pushes its selected routes to a data plane.
//!
//! - [`codec`]: FPM framing and the netlink route messages inside it, from
//!   bytes to [`codec::RouteUpdate`]s and back.
//! - [`rib`]: what zebra holds in the appliance, with the epochs of mark
//!   and sweep.
//!
//! Both are pure: no socket, no thread, no table. The connection and the
//! way its updates reach the tables are the control side's
//! (`control::fpm`).

pub mod codec;
pub mod rib;
