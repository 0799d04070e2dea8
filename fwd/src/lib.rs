//! The forwarding appliance's data path and control plane.
//!
//! Layout follows the packet: [`pkt`] (parse, rewrite, checksums), [`acl`]
//! (the N-tuple classifier), [`route`]
//! (RIB, FIB, next hops), [`worker`] (the poll loop that strings the stages
//! together), [`tables`] (the published root of every table), [`qsbr`]
//! (versions, quiescence, reclamation), [`control`] (the control lcore, the
//! single writer), [`fpm`] (FRR zebra's route stream, decoded),
//! [`hostif`] (the ports' kernel interfaces and the host thread),
//! [`systemd`] (readiness and the watchdog), [`preflight`] (the machine
//! checked against a config before a start), [`dpdk`]
//! (safe wrappers; with the `qsbr` crate, [`arch`] (prefetch), `hostif::tap` and
//! `route::larc` (the routing tables' counted nodes) the only `unsafe`), and
//! [`corpus`] (where tests and benchmarks find the external data sets).
//!
//! These are the appliance's internals, documented with their private
//! items: `cargo doc --no-deps --document-private-items` (`deploy/test.sh`
//! builds them so, warnings denied). A public item's doc may then link to
//! a private one.
#![allow(rustdoc::private_intra_doc_links)]

pub mod acl;
pub mod arch;
pub mod config;
pub mod control;
pub mod corpus;
pub mod cpus;
pub mod dpdk;
pub mod fpm;
pub mod hostif;
pub mod metrics;
pub mod neigh;
pub mod pkt;
pub mod preflight;
pub mod punt;
/// The versioning protocol (publish, quiescence, reclamation): a crate of
/// its own (`qsbr/`), so its loom models and Miri runs build it alone.
pub use qsbr;
pub mod route;
pub mod stats;
pub mod systemd;
pub mod tables;
pub mod thread;
pub mod worker;
