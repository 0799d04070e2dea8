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

/// How long one probe of [`pings`] waits for its reply.
const PROBE_WAIT_S: &str = "4";

/// Replies received out of `n` pings, sent one at a time; each waits up to
/// [`PROBE_WAIT_S`] for its own reply. One `ping -c n` would not do: once a
/// reply has come, iputils waits only two round trips after the last probe
/// (`-W` counts only while none has come), so on a loaded machine a late
/// last reply counted as lost.
pub fn pings(ns: &Netns, n: u32, dst: &str) -> u32 {
    (0..n)
        .map(|_| {
            let out = Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    &ns.0,
                    "ping",
                    "-c",
                    "1",
                    "-W",
                    PROBE_WAIT_S,
                    dst,
                ])
                .output()
                .expect("run ping");
            let text = String::from_utf8_lossy(&out.stdout);
            text.lines()
                .find_map(|l| {
                    let (_, rest) = l.split_once(" packets transmitted, ")?;
                    rest.split_whitespace().next()?.parse::<u32>().ok()
                })
                .unwrap_or(0)
        })
        .sum()
}

/// Runs `fwdctl -s SOCK ARGS`; panics with its output when it fails.
pub fn fwdctl(sock: &std::path::Path, args: &[&str]) -> String {
    super::ok(super::fwdctl_output(sock, args))
}
