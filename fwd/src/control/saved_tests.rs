//! The saved state replays exactly: `running_text`, read back by the
//! daemon's own loading path (`parse_saved`, `load`), gives the same tables.

use proptest::prelude::*;

use super::saved::running_text;
use super::setup::{load, parse_saved};
use super::state::tests::World;
use super::{rule_to_wire, target_to_wire};
use crate::tables::Tables;

/// Everything the saved state promises to bring back, as text.
fn dump(t: &Tables) -> Vec<String> {
    let mut out = Vec::new();
    let mut vrfs: Vec<u32> = t.routing.vrfs().collect();
    vrfs.sort_unstable();
    for vrf in vrfs {
        for (p, e) in t.routing.entries(vrf) {
            // Paths in member order, which follows unnamed ids: compare
            // them as a set.
            let mut target = target_to_wire(t, e.target);
            if let ctl::wire::RouteTarget::Multipath(ps) = &mut target {
                ps.sort_by_key(|s| (s.via, s.dev.clone(), s.weight));
            }
            out.push(format!(
                "route {vrf} {p:?} {target:?} proto {} fpm {}",
                e.origin.proto, e.origin.fpm
            ));
        }
    }
    for (id, nh) in t.routing.nexthops() {
        if !t.mgmt.auto_by_id.contains_key(&id) {
            out.push(format!(
                "nexthop {id} {nh:?} refs {} rules {}",
                t.routing.nexthop_refs(id),
                t.mgmt.rule_nexthops.count(id)
            ));
        }
    }
    for (id, g) in t.routing.groups() {
        if !t.mgmt.auto_group_by_id.contains_key(&id) {
            out.push(format!(
                "group {id} {:?} refs {}",
                g.members(),
                t.routing.group_refs(id)
            ));
        }
    }
    let mut rules: Vec<_> = t.acl.entries().map(|e| rule_to_wire(t, e.rule())).collect();
    rules.sort_by_key(|r| r.id);
    out.extend(rules.iter().map(|r| format!("rule {r}")));
    out.extend(t.mgmt.neighbours.iter().map(|n| format!("neigh {n:?}")));
    out.extend(
        t.ports
            .iter()
            .map(|p| format!("port {} {:?} up {}", p.name, p.addresses, p.admin_up)),
    );
    out
}

/// Saves `w`, loads the text into fresh tables as the daemon does at
/// startup, and returns them.
fn replay(w: &World) -> Result<Tables, String> {
    let (text, _) = running_text(&w.t, 7);
    let saved = parse_saved(&text, "saved").map_err(|e| format!("{e}\n{text}"))?;
    let mut fresh = World::new();
    load(&fresh.t, &mut fresh.acl, &saved.changes).map_err(|e| format!("{e}\n{text}"))
}

fn assert_replays(w: &World) {
    let back = replay(w).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(dump(&back), dump(&w.t), "{}", running_text(&w.t, 7).0);
}

#[test]
fn routes_over_derived_ones_replay() {
    let mut w = World::new();
    w.ok("address add 10.0.0.1/24 dev p0\n\
          route replace 10.0.0.1/32 blackhole\n\
          address add 10.0.1.1/24 dev p1\n\
          route replace 10.0.1.0/24 via 10.0.0.9");
    assert_replays(&w);
    // A derived route the operator deleted stays deleted.
    w.ok("route del 10.0.0.1/32\nroute del 10.0.1.0/24");
    assert_replays(&w);
}

#[test]
fn unnamed_ids_are_never_saved() {
    let mut w = World::new();
    w.ok("address add 10.0.0.1/24 dev p0\n\
          route add 10.5.0.0/16 nexthop via 10.0.0.2 nexthop via 10.0.0.3\n\
          nexthop add 1 via 10.0.0.4 dev p0\n\
          group add 2 members 1\n\
          route add 10.6.0.0/16 nexthop-group 2\n\
          rule add id 1 prio 1 action nexthop 1");
    let (text, _) = running_text(&w.t, 1);
    for id in
        w.t.mgmt
            .auto_by_id
            .keys()
            .chain(w.t.mgmt.auto_group_by_id.keys())
    {
        assert!(!text.contains(&id.to_string()), "{id} in\n{text}");
    }
    assert_replays(&w);
}

#[test]
fn an_empty_or_truncated_saved_state_is_refused() {
    let mut w = World::new();
    w.ok("address add 10.0.0.1/24 dev p0\nroute add 10.5.0.0/16 blackhole");
    w.ok("route add 10.6.0.0/16 blackhole");
    let (text, n) = running_text(&w.t, 3);
    assert_eq!(n, 3);
    let s = parse_saved(&text, "run.batch").unwrap();
    assert_eq!((s.generation, s.changes.len()), (3, 3));
    let lines: Vec<&str> = text.lines().collect();
    let cut = lines[..lines.len() - 1].join("\n");
    let wrong = text.replace("# end, 3 changes", "# end, 2 changes");
    let short = format!("{}\n{}\n", lines[..2].join("\n"), lines[lines.len() - 1]);
    for (bad, why) in [
        ("", "empty"),
        ("\n\n", "empty"),
        ("route add 10.0.0.0/8 blackhole\n", "not a saved state"),
        (cut.as_str(), "truncated"),
        (wrong.as_str(), "trailer 2"),
        (short.as_str(), "holds 1"),
    ] {
        let e = parse_saved(bad, "run.batch").err().expect(why);
        assert!(e.contains("run.batch") && e.contains(why), "{why}: {e}");
    }
    // A saved state with nothing in it is still a valid, framed file.
    let (empty, _) = running_text(&World::new().t, 1);
    assert_eq!(parse_saved(&empty, "x").unwrap().changes.len(), 0);
}

/// One change of the vocabulary the property test draws from.
fn change() -> impl Strategy<Value = String> {
    let dev = prop::sample::select(vec!["p0", "p1"]);
    let addr = prop::sample::select(vec![
        "10.0.0.1/24",
        "10.0.0.2/24",
        "10.0.1.1/24",
        "10.0.0.1/16",
        "10.0.2.1/32",
        "2001:db8::1/64",
    ]);
    let ip = prop::sample::select(vec!["10.0.0.5", "10.0.1.5", "10.0.0.7", "2001:db8::5"]);
    let via = prop::sample::select(vec!["via 10.0.0.7", "via 10.0.1.7", "via 2001:db8::7", ""]);
    let prefix = prop::sample::select(vec![
        "10.5.0.0/16",
        "10.0.0.0/24",
        "10.0.0.1/32",
        "10.0.0.5/32",
        "10.0.1.0/24",
        "0.0.0.0/0",
        "2001:db8:5::/48",
        "2001:db8::/64",
    ]);
    let target = prop::sample::select(vec![
        "blackhole",
        "reject",
        "via 10.0.0.7",
        "via 10.0.1.7 dev p1",
        "dev p0",
        "via 2001:db8::7 dev p0",
        "nexthop via 10.0.0.7 nexthop via 10.0.1.7 weight 2",
        "nexthop via 10.0.0.5 dev p0 nexthop via 10.0.0.7 dev p0",
        "nhid 1",
        "nhid 2",
        "nexthop-group 10",
    ]);
    let action = prop::sample::select(vec![
        "drop",
        "nexthop 1",
        "nexthop 2",
        "nexthop 3",
        "table 5",
        "permit",
    ]);
    let members = prop::sample::select(vec!["1 2", "1 3:2", "2", "3"]);
    prop_oneof![
        (prop::bool::ANY, addr, dev.clone()).prop_map(|(add, a, d)| format!(
            "address {} {a} dev {d}",
            if add { "add" } else { "del" }
        )),
        (ip.clone(), dev.clone())
            .prop_map(|(i, d)| format!("neigh add {i} lladdr 02:00:00:00:00:09 dev {d}")),
        (ip, dev.clone()).prop_map(|(i, d)| format!("neigh del {i} dev {d}")),
        (
            prop::sample::select(vec!["add", "replace"]),
            1..4u32,
            via,
            dev
        )
            .prop_map(|(verb, id, v, d)| format!("nexthop {verb} {id} {v} dev {d}")),
        (1..4u32).prop_map(|id| format!("nexthop del {id}")),
        (prop::sample::select(vec!["add", "replace"]), members)
            .prop_map(|(verb, m)| format!("group {verb} 10 members {m}")),
        Just("group del 10".to_string()),
        (
            prop::sample::select(vec!["add", "replace"]),
            prefix.clone(),
            target
        )
            .prop_map(|(verb, p, t)| format!("route {verb} {p} {t}")),
        prefix.prop_map(|p| format!("route del {p}")),
        (
            prop::sample::select(vec!["add", "replace"]),
            1..4u32,
            action
        )
            .prop_map(|(verb, id, a)| format!("rule {verb} id {id} prio {id} action {a}")),
        (1..4u32).prop_map(|id| format!("rule del {id}")),
        Just("rule flush".to_string()),
        prop::bool::ANY.prop_map(|up| format!("port set p1 {}", if up { "up" } else { "down" })),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    /// Whatever sequence of accepted batches built the tables, saving and
    /// loading them gives the same tables.
    #[test]
    fn the_saved_state_replays_exactly(
        batches in prop::collection::vec(prop::collection::vec(change(), 1..3), 1..40)
    ) {
        let mut w = World::new();
        for b in &batches {
            // Refused batches change nothing; skip them.
            let _ = w.run(&b.join("\n"));
        }
        let back = replay(&w).map_err(TestCaseError::fail)?;
        prop_assert_eq!(dump(&back), dump(&w.t), "{}", running_text(&w.t, 7).0);
    }
}
