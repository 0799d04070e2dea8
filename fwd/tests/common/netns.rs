//! Network namespaces with real kernel hosts, for the end-to-end tests on
//! `net_tap` ports. Namespaces are removed on drop.

use std::process::Command;

/// Runs a command; its stdout, or what it printed on failure.
pub fn sh(cmd: &[&str]) -> Result<String, String> {
    let o = Command::new(cmd[0])
        .args(&cmd[1..])
        .output()
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    if o.status.success() {
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    } else {
        Err(format!(
            "{cmd:?}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ))
    }
}

pub struct Netns(pub String);

impl Netns {
    pub fn new(name: String) -> Netns {
        let _ = sh(&["ip", "netns", "del", &name]);
        sh(&["ip", "netns", "add", &name]).expect("ip netns add");
        Netns(name)
    }
    pub fn exec(&self, cmd: &[&str]) -> Result<String, String> {
        let mut full = vec!["ip", "netns", "exec", &self.0];
        full.extend_from_slice(cmd);
        sh(&full)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = sh(&["ip", "netns", "del", &self.0]);
    }
}

/// Replies received out of `n` pings (each waits up to 2 s for its reply).
pub fn pings(ns: &Netns, n: u32, dst: &str) -> u32 {
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            &ns.0,
            "ping",
            "-c",
            &n.to_string(),
            "-i",
            "0.2",
            "-W",
            "2",
            dst,
        ])
        .output()
        .expect("run ping");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| {
            let (_, rest) = l.split_once(" packets transmitted, ")?;
            rest.split_whitespace().next()?.parse().ok()
        })
        .unwrap_or(0)
}

/// Runs `fwdctl -s SOCK ARGS`; panics with its output when it fails.
pub fn fwdctl(sock: &std::path::Path, args: &[&str]) -> String {
    super::ok(super::fwdctl_output(sock, args))
}
