//! Any text as a saved running state (`control.load`): parsed as a batch and
//! applied to empty tables with two ports (`p0`, `p1`) by the daemon's own
//! change path, all or nothing. What applies, saved again and replayed on
//! fresh tables, gives the same saved text: `config save` loses nothing.
#![no_main]

use fwd::control::{self, saved};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(batch) = ctl::text::parse_batch(text) else {
        return;
    };
    let (base, mut acl_w) = appliance_fuzz::two_ports();
    let Ok(out) = control::apply_changes(&base, &mut acl_w, &batch.changes, None) else {
        return;
    };
    let (first, n) = saved::running_text(&out.tables, 1);

    let again = ctl::text::parse_batch(&first)
        .unwrap_or_else(|e| panic!("the saved text does not parse: {e}\n{first}"));
    assert_eq!(again.changes.len(), n);
    let (base, mut acl_w) = appliance_fuzz::two_ports();
    let replayed = control::apply_changes(&base, &mut acl_w, &again.changes, None)
        .unwrap_or_else(|e| panic!("the saved text does not apply: {e}\n{first}"));
    let (second, _) = saved::running_text(&replayed.tables, 1);
    assert_eq!(first, second, "saving the replayed state differs");
});
