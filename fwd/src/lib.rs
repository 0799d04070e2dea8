//! The forwarding appliance's data path and control plane.
//!
//! Layout follows the packet: [`pkt`] (parse, rewrite, checksums), [`acl`]
//! (the N-tuple classifier), [`route`]
//! (RIB, FIB, next hops), [`worker`] (the poll loop that strings the stages
//! together), [`tables`] (the published root of every table), [`qsbr`]
//! (versions, quiescence, reclamation), [`control`] (the control lcore, the
//! single writer), [`dpdk`] (safe wrappers; with `qsbr` the only `unsafe`).
#![deny(unsafe_code)]

pub mod acl;
pub mod config;
pub mod control;
pub mod dpdk;
pub mod neigh;
pub mod pkt;
pub mod punt;
pub mod qsbr;
pub mod route;
pub mod stats;
pub mod tables;
pub mod worker;
