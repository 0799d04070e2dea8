//! Workspace root of the forwarding appliance.
//!
//! The crates that matter are `fwd` (the daemon), `ctl` (`fwdctl` and the wire
//! protocol) and `dpdk-sys` (bindings to the system DPDK). This root package
//! exists for its build script, a preflight that stops the build early with a
//! message naming `deploy/setup.sh` when the host lacks DPDK or libclang, and
//! for [`probe`], which `dpdk-sys`' build script reuses.

pub mod probe;
