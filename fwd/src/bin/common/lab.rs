//! The tables the control-plane benchmarks start from (included by path by
//! `bench_fpm` and `bench_batch`).

use ctl::wire::{self, Change};
use fwd::acl;
use fwd::tables::{PortInfo, Tables};

/// Two ports, `a` (10.0.0.1/24, fd00:0::1/64) and `b` (10.1.0.1/24,
/// fd00:1::1/64), no route beyond the connected ones and no rule; with the
/// classifier writer that goes with them.
pub fn two_ports() -> (Tables, acl::ClassifierWriter) {
    let mut acl_w = acl::ClassifierWriter::new(acl::Config::default());
    let ports = vec![
        PortInfo::new("a", [2, 0, 0, 0, 0, 1], 0),
        PortInfo::new("b", [2, 0, 0, 0, 0, 2], 0),
    ];
    let t = Tables::empty(
        ports,
        acl_w.current().clone(),
        fwd::tables::Limits::default(),
    );
    let addr = |a: &str, dev: &str| {
        Change::AddressAdd(wire::Address {
            addr: a.parse().expect("address"),
            dev: dev.into(),
        })
    };
    let changes = [
        addr("10.0.0.1/24", "a"),
        addr("10.1.0.1/24", "b"),
        addr("fd00:0::1/64", "a"),
        addr("fd00:1::1/64", "b"),
    ];
    let t = fwd::control::apply_changes(&t, &mut acl_w, &changes, None)
        .unwrap_or_else(|e| panic!("{e}"))
        .tables;
    (t, acl_w)
}
