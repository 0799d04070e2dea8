//! `fwd preflight` as an operator runs it: the demo config (vdev ports, no
//! hugepages, as deploy/run.sh writes it) passes on any machine, warnings
//! allowed; a broken config fails with status 1; `--json` is JSON.

use std::path::PathBuf;
use std::process::Command;

struct Dir(PathBuf);
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn dir(tag: &str) -> Dir {
    let d = std::env::temp_dir().join(format!("fwd-preflight-bin-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Dir(d)
}

fn demo(d: &Dir) -> PathBuf {
    let p = d.0.join("fwd.yaml");
    std::fs::write(
        &p,
        format!(
            "eal: {{main_lcore: 0, hugepages: false, memory_mb: 1024}}
ports:
  - {{name: in, device: 'net_null0', addresses: [10.0.0.254/16]}}
  - {{name: out, device: 'net_null1,no-rx=1', addresses: [10.9.0.1/24]}}
workers:
  - {{lcore: 1, rx: [{{port: in}}, {{port: out}}]}}
neighbours:
  - {{ip: 10.9.0.2, mac: '02:00:00:00:09:02', port: out}}
control: {{socket: {}}}
",
            d.0.join("fwd.sock").display()
        ),
    )
    .unwrap();
    p
}

#[test]
fn the_demo_config_passes_and_a_broken_one_fails() {
    let d = dir("demo");
    let cfg = demo(&d);
    let out = Command::new(env!("CARGO_BIN_EXE_fwd"))
        .arg("preflight")
        .arg(&cfg)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("OK    config"), "{text}");
    assert!(text.contains("0 failure(s)"), "{text}");
    // The heap check reads this process's GLIBC_TUNABLES: without the
    // tunable it can only be a WARN (or OK under THP `always`), with it no
    // WARN that names the tunable.
    assert!(text.contains("  heap "), "{text}");
    let out = Command::new(env!("CARGO_BIN_EXE_fwd"))
        .arg("preflight")
        .arg(&cfg)
        .env("GLIBC_TUNABLES", "glibc.malloc.hugetlb=0")
        .output()
        .unwrap();
    let off = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{off}");
    assert!(
        off.contains("WARN  heap")
            || off.contains("OK    heap       transparent huge pages for all"),
        "{off}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_fwd"))
        .arg("preflight")
        .arg(&cfg)
        .env("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1")
        .output()
        .unwrap();
    let on = String::from_utf8_lossy(&out.stdout);
    assert!(!on.contains("hugetlb=1 in its environment"), "{on}");

    let out = Command::new(env!("CARGO_BIN_EXE_fwd"))
        .args(["preflight", "--json"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("--json is JSON");
    assert_eq!(v["failures"], 0);
    assert!(v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["check"] == "hugepages" && f["status"] == "OK"));

    // `--check` still checks the config alone.
    let out = Command::new(env!("CARGO_BIN_EXE_fwd"))
        .arg(&cfg)
        .arg("--check")
        .output()
        .unwrap();
    assert!(out.status.success());

    let bad = d.0.join("bad.yaml");
    std::fs::write(&bad, "ports: []\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fwd"))
        .arg("preflight")
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("FAIL  config"), "{text}");
    assert!(text.contains("fix:"), "{text}");

    // Hugepages asked for and a socket already served: failures.
    let huge = d.0.join("huge.yaml");
    let sock = d.0.join("fwd.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    std::fs::write(
        &huge,
        std::fs::read_to_string(&cfg).unwrap().replace(
            "hugepages: false, memory_mb: 1024",
            "hugepages: true, memory_mb: 1048576",
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fwd"))
        .arg("preflight")
        .arg(&huge)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("FAIL  hugepages"), "{text}");
    assert!(text.contains("FAIL  socket"), "{text}");
}
