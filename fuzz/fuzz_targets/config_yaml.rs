//! Any text as the daemon's YAML config: parsing and validation never
//! panic, and a config that validates yields its startup changes and EAL
//! arguments, and either builds the first tables or names what it refuses.
#![no_main]

use fwd::acl;
use fwd::config::Config;
use fwd::control::{self, Startup};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(cfg) = Config::parse(text, "fuzz.yaml") else {
        return;
    };
    let _ = cfg.eal_args("fwd", "fwd-fuzz");
    if control::config_changes(&cfg).is_err() {
        return;
    }
    let macs: Vec<[u8; 6]> = (0..cfg.ports.len())
        .map(|i| [2, 0, 0, 0, 0, i as u8])
        .collect();
    let mut acl_w = acl::ClassifierWriter::new(acl::Config {
        capacity: 1024,
        ..acl::Config::default()
    });
    let _ = control::initial_tables(&cfg, &macs, &mut acl_w, Startup::Config);
});
