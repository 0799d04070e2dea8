//! Preflight: fail the build at once, with one message listing everything that
//! is missing and the command that installs it, instead of a bindgen or linker
//! error deep inside `dpdk-sys`.

#[path = "src/probe.rs"]
#[allow(dead_code)] // the preflight reads only the version; dpdk-sys uses the rest
mod probe;

fn main() {
    println!("cargo:rerun-if-changed=src/probe.rs");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=LIBCLANG_PATH");
    let mut problems = Vec::new();
    match probe::dpdk() {
        Ok(d) => println!("cargo:rustc-env=APPLIANCE_DPDK_VERSION={}", d.version),
        Err(e) => problems.push(e),
    }
    if let Err(e) = probe::libclang() {
        problems.push(e);
    }
    if !problems.is_empty() {
        eprintln!("\npreflight failed: the build host is missing what the appliance needs:");
        for p in &problems {
            eprintln!("  - {p}");
        }
        eprintln!();
        std::process::exit(1);
    }
}
