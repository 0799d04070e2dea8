//! FRR 8.4 daemons (zebra with `dplane_fpm_nl`, bgpd, staticd) in a network
//! namespace of the test, everything private to a temp dir: config files,
//! pid files, vty sockets (`--vty_socket`), the zserv socket (`-z`), logs.
//! Nothing of the machine's `/etc/frr` or `/var/run/frr` is read or written
//! (vtysh runs with `--config_dir` and `--vty_socket` of that dir).
//!
//! The daemons run in the foreground as children of the test (`ip netns
//! exec` execs them, so the child is the daemon) with `-u root -g frrvty`:
//! root keeps file access to the temp dir, and Debian's FRR is built with
//! `--enable-vty-group=frrvty`, which refuses a user outside that group
//! (`-g root` fails with "user(root) is not part of vty group"). Dropping
//! [`Frr`] stops exactly the daemons it started (SIGTERM, then SIGKILL) and
//! removes their `/var/tmp/frr/<daemon>.<pid>` crash-log dirs.
//!
//! Waits poll with a generous deadline and fail with what the daemons said;
//! no fixed sleep is ever an assertion. See deploy/frr/README.md for the
//! recipe these helpers implement.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::netns::{sh, Netns};
use super::{fwd_bin, wait_for, TempDir};

pub const FRR_DIR: &str = "/usr/lib/frr";
pub const FPM_MODULE: &str = "/usr/lib/x86_64-linux-gnu/frr/modules/dplane_fpm_nl.so";
/// The default wait: BGP with 10,000 prefixes settles in ~3 s on 2 cores.
pub const DEADLINE: Duration = Duration::from_secs(120);

/// Why FRR tests cannot run here, if they cannot: not root, or FRR (with
/// zebra's FPM module) not installed.
pub fn unavailable() -> Option<String> {
    if !super::is_root() {
        return Some("not root (namespaces and FRR need root)".into());
    }
    for p in ["zebra", "bgpd", "staticd"] {
        if !Path::new(FRR_DIR).join(p).exists() {
            return Some(format!(
                "FRR not installed ({FRR_DIR}/{p} missing; deploy/setup.sh installs the Debian package frr)"
            ));
        }
    }
    if !Path::new(FPM_MODULE).exists() {
        return Some(format!("FRR's FPM module {FPM_MODULE} missing"));
    }
    if Command::new("vtysh").arg("--help").output().is_err() {
        return Some("vtysh not found".into());
    }
    None
}

/// True (after printing why) when the test must be skipped.
pub fn skip(test: &str) -> bool {
    match unavailable() {
        Some(why) => {
            // Straight to stderr, past the test harness's capture: shown
            // even for a passing test.
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
            true
        }
        None => false,
    }
}

/// A namespace for FRR tests: loopback up, IPv6 DAD off (addresses, the
/// link-local ones included, usable at once: bgpd waits for a link-local
/// address before it sends IPv6 routes).
pub fn netns(name: String) -> Netns {
    let ns = Netns::new(name);
    ns.exec(&[
        "sysctl",
        "-qw",
        "net.ipv6.conf.all.accept_dad=0",
        "net.ipv6.conf.default.accept_dad=0",
    ])
    .expect("sysctl accept_dad in namespace");
    ns.exec(&["ip", "link", "set", "lo", "up"]).expect("lo up");
    ns
}

/// A veth pair between two namespaces, created in them (nothing in the
/// host's namespace): `if1` in `ns1` with `addrs1`, `if2` in `ns2`.
pub fn veth(ns1: &Netns, if1: &str, addrs1: &[&str], ns2: &Netns, if2: &str, addrs2: &[&str]) {
    sh(&[
        "ip", "-n", &ns1.0, "link", "add", if1, "type", "veth", "peer", "name", if2, "netns",
        &ns2.0,
    ])
    .expect("create veth pair");
    for (ns, ifname, addrs) in [(ns1, if1, addrs1), (ns2, if2, addrs2)] {
        for a in addrs {
            let mut cmd = vec!["ip", "-n", &ns.0, "addr", "add", a, "dev", ifname];
            if a.contains(':') {
                cmd.push("nodad");
            }
            sh(&cmd).expect("address on veth");
        }
        sh(&["ip", "-n", &ns.0, "link", "set", ifname, "up"]).expect("veth up");
    }
}

struct Running {
    name: String,
    config: String,
    args: Vec<String>,
    child: Child,
}

/// FRR daemons in one namespace, private to a temp dir.
pub struct Frr {
    pub ns: String,
    pub dir: PathBuf,
    running: Vec<Running>,
    _tmp: TempDir,
}

impl Frr {
    /// No daemon yet; `tag` names the temp dir.
    pub fn new(ns: &Netns, tag: &str) -> Frr {
        let tmp = TempDir::new(&format!("frr-{tag}"));
        let dir = tmp.0.clone();
        // vtysh reads <config_dir>/vtysh.conf: an empty one, not /etc/frr's.
        std::fs::write(dir.join("vtysh.conf"), "").expect("write vtysh.conf");
        Frr {
            ns: ns.0.clone(),
            dir,
            running: Vec::new(),
            _tmp: tmp,
        }
    }

    /// Starts `daemon` (zebra, bgpd, staticd, ...) with `config` as its
    /// config file and `args` more arguments (`-M dplane_fpm_nl`,
    /// `--no_zebra`), and waits until it answers on its vty socket.
    pub fn start(&mut self, daemon: &str, config: &str, args: &[&str]) {
        self.spawn(
            daemon,
            config.to_string(),
            args.iter().map(|s| s.to_string()).collect(),
        );
    }

    /// zebra with the FPM client pointed at 127.0.0.1:`fpm_port` of the
    /// namespace (`no fpm use-next-hop-groups`: next hops inside routes);
    /// `more` is more zebra config.
    pub fn start_zebra(&mut self, fpm_port: u16, more: &str) {
        self.start(
            "zebra",
            &zebra_config(fpm_port, more),
            &["-M", "dplane_fpm_nl"],
        );
    }

    fn spawn(&mut self, daemon: &str, config: String, args: Vec<String>) {
        assert!(
            !self.running.iter().any(|r| r.name == daemon),
            "{daemon} already running"
        );
        let cfg = self.dir.join(format!("{daemon}.conf"));
        std::fs::write(&cfg, &config).expect("write daemon config");
        let vty = self.dir.join(format!("{daemon}.vty"));
        let _ = std::fs::remove_file(&vty);
        let out = std::fs::File::create(self.dir.join(format!("{daemon}.out"))).expect("out file");
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns])
            .arg(Path::new(FRR_DIR).join(daemon))
            .args(["-u", "root", "-g", "frrvty", "-P", "0", "-f"])
            .arg(&cfg)
            .arg("-i")
            .arg(self.dir.join(format!("{daemon}.pid")))
            .arg("--vty_socket")
            .arg(&self.dir)
            .arg("--log")
            .arg(format!(
                "file:{}",
                self.dir.join(format!("{daemon}.log")).display()
            ));
        if !args.iter().any(|a| a == "--no_zebra" || a == "-Z") {
            c.arg("-z").arg(self.zserv());
        }
        let mut child = c
            .args(&args)
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("dup"))
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {daemon}: {e}"));
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(st)) = child.try_wait() {
                panic!("{daemon} in {} exited ({st}):\n{}", self.ns, self.logs());
            }
            if vty.exists() && self.try_vtysh(Some(daemon), &["show version"]).is_ok() {
                break;
            }
            if Instant::now() > end {
                stop_child(daemon, &mut child);
                panic!(
                    "{daemon} in {} did not answer on its vty:\n{}",
                    self.ns,
                    self.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.running.push(Running {
            name: daemon.to_string(),
            config,
            args,
            child,
        });
    }

    /// Applies an integrated config the way FRR's init script does
    /// (`vtysh -b`): `text` written as `<dir>/frr.conf`, each daemon given
    /// its part.
    pub fn boot(&self, text: &str) {
        std::fs::write(self.dir.join("frr.conf"), text).expect("write frr.conf");
        let o = Command::new("vtysh")
            .arg("--config_dir")
            .arg(&self.dir)
            .arg("--vty_socket")
            .arg(&self.dir)
            .arg("-b")
            .output()
            .expect("run vtysh -b");
        assert!(
            o.status.success(),
            "vtysh -b: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }

    /// The zserv socket bgpd/staticd reach zebra on.
    pub fn zserv(&self) -> PathBuf {
        self.dir.join("zserv.api")
    }

    /// The pid of a running daemon.
    pub fn pid(&self, daemon: &str) -> Option<u32> {
        self.running
            .iter()
            .find(|r| r.name == daemon)
            .map(|r| r.child.id())
    }

    /// Stops one daemon (SIGTERM: a clean stop; zebra then removes its
    /// kernel routes, and sends nothing over FPM).
    pub fn stop(&mut self, daemon: &str) -> (String, Vec<String>) {
        let i = self
            .running
            .iter()
            .position(|r| r.name == daemon)
            .unwrap_or_else(|| panic!("{daemon} is not running"));
        let mut r = self.running.remove(i);
        stop_child(&r.name, &mut r.child);
        (r.config, r.args)
    }

    /// Stops one daemon and starts it again with the same config and args.
    pub fn restart(&mut self, daemon: &str) {
        let (config, args) = self.stop(daemon);
        self.spawn(daemon, config, args);
    }

    /// Restarts zebra. Its FPM client reconnects ~3 s after the start and
    /// replays zebra's RIB; bgpd and staticd reconnect to zebra ~10 s after
    /// it comes back. FRR 8.4's bgpd does not resend its routes then (FRR
    /// issue #22362, fixed in 10.x): call [`Frr::resync_bgp`].
    pub fn restart_zebra(&mut self) {
        self.restart("zebra");
    }

    /// After a zebra restart: waits for bgpd to be zebra's client again,
    /// then resets the BGP sessions (`clear bgp *`), the way to get 8.4's
    /// bgpd to install its routes again.
    pub fn resync_bgp(&self) {
        wait_for(
            "bgpd to reconnect to zebra",
            DEADLINE,
            || {
                let s = self.vtysh_on("zebra", "show zebra client summary");
                s.lines().any(|l| l.starts_with("bgp ")).then_some(())
            },
            || self.logs(),
        );
        self.vtysh_on("bgpd", "clear bgp *");
    }

    fn try_vtysh(&self, daemon: Option<&str>, cmds: &[&str]) -> Result<String, String> {
        let mut c = Command::new("vtysh");
        c.arg("--config_dir")
            .arg(&self.dir)
            .arg("--vty_socket")
            .arg(&self.dir);
        if let Some(d) = daemon {
            c.args(["-d", d]);
        }
        for cmd in cmds {
            c.args(["-c", cmd]);
        }
        let o = c.output().map_err(|e| format!("vtysh: {e}"))?;
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        if o.status.success() {
            Ok(out)
        } else {
            Err(format!(
                "vtysh {cmds:?}: {}\n{out}{}",
                o.status,
                String::from_utf8_lossy(&o.stderr)
            ))
        }
    }

    /// One vtysh command (to every running daemon that knows it); its
    /// output. Panics when vtysh fails.
    pub fn vtysh(&self, cmd: &str) -> String {
        self.try_vtysh(None, &[cmd])
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// One vtysh command to one daemon (`-d zebra`).
    pub fn vtysh_on(&self, daemon: &str, cmd: &str) -> String {
        self.try_vtysh(Some(daemon), &[cmd])
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// A `... json` command's output, parsed.
    pub fn json(&self, daemon: &str, cmd: &str) -> serde_json::Value {
        let out = self.vtysh_on(daemon, cmd);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{cmd}: {e}: {out}"))
    }

    /// Configuration lines, entered after `configure terminal` in one
    /// vtysh session (each daemon takes the lines it knows).
    pub fn config(&self, lines: &[&str]) {
        let mut cmds = vec!["configure terminal"];
        cmds.extend_from_slice(lines);
        let out = self
            .try_vtysh(None, &cmds)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !out.contains("% Unknown command") && !out.contains("% Invalid"),
            "config {lines:?}: {out}"
        );
    }

    /// `show bgp <afi> unicast summary json`'s entry of `neighbor`.
    pub fn bgp_peer(&self, afi: &str, neighbor: &str) -> serde_json::Value {
        self.json("bgpd", &format!("show bgp {afi} unicast summary json"))["peers"][neighbor]
            .clone()
    }

    /// Waits until the BGP session to `neighbor` (for `afi`: ipv4, ipv6) is
    /// Established.
    pub fn wait_established(&self, afi: &str, neighbor: &str) {
        wait_for(
            &format!("BGP {afi} session to {neighbor} Established in {}", self.ns),
            DEADLINE,
            || (self.bgp_peer(afi, neighbor)["state"] == "Established").then_some(()),
            || format!("{}\n{}", self.bgp_peer(afi, neighbor), self.logs()),
        );
    }

    /// Prefixes received from `neighbor` (after inbound policy).
    pub fn received(&self, afi: &str, neighbor: &str) -> u64 {
        self.bgp_peer(afi, neighbor)["pfxRcd"].as_u64().unwrap_or(0)
    }

    /// Routes of `protocol` ("ebgp", "ibgp", "static", "connected") zebra
    /// has in the FIB for `family` ("ip" or "ipv6"), main table.
    pub fn installed(&self, family: &str, protocol: &str) -> u64 {
        let s = self.json("zebra", &format!("show {family} route summary json"));
        s["routes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["type"] == protocol)
            .map(|r| r["fib"].as_u64().unwrap_or(0))
            .sum()
    }

    /// Waits until `neighbor` has sent exactly `n` prefixes and zebra has
    /// `n` routes of `protocol` installed for `afi`'s family.
    pub fn wait_prefixes(&self, afi: &str, neighbor: &str, protocol: &str, n: u64) {
        let family = if afi == "ipv6" { "ipv6" } else { "ip" };
        wait_for(
            &format!("{n} prefixes from {neighbor} received and installed ({afi})"),
            DEADLINE,
            || {
                (self.received(afi, neighbor) == n && self.installed(family, protocol) == n)
                    .then_some(())
            },
            || {
                format!(
                    "received {}, installed {}\n{}",
                    self.received(afi, neighbor),
                    self.installed(family, protocol),
                    self.logs()
                )
            },
        );
    }

    /// zebra's `show fpm counters json`.
    pub fn fpm_counters(&self) -> serde_json::Value {
        self.json("zebra", "show fpm counters json")
    }

    /// The tail of every daemon's log and output (for failure messages).
    pub fn logs(&self) -> String {
        let mut s = String::new();
        let mut names: Vec<String> = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".log") || n.ends_with(".out"))
            .collect();
        names.sort();
        for n in names {
            let text = std::fs::read_to_string(self.dir.join(&n)).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(15)..];
            s.push_str(&format!("--- {} {n}\n{}\n", self.ns, tail.join("\n")));
        }
        s
    }
}

impl Drop for Frr {
    fn drop(&mut self) {
        while let Some(mut r) = self.running.pop() {
            stop_child(&r.name, &mut r.child);
        }
    }
}

/// SIGTERM, up to 10 s for a clean exit, then SIGKILL; removes the
/// daemon's `/var/tmp/frr/<daemon>.<pid>` (FRR's crash-log dir, left
/// behind by a killed daemon).
fn stop_child(name: &str, child: &mut Child) {
    let pid = child.id();
    if let Ok(None) = child.try_wait() {
        let _ = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
        let end = Instant::now() + Duration::from_secs(10);
        while let Ok(None) = child.try_wait() {
            if Instant::now() > end {
                let _ = child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(format!("/var/tmp/frr/{name}.{pid}"));
}

/// zebra's config: FPM to 127.0.0.1:`port`, next hops inside routes.
pub fn zebra_config(port: u16, more: &str) -> String {
    format!("hostname zebra\nfpm address 127.0.0.1 port {port}\nno fpm use-next-hop-groups\n{more}")
}

/// `n` IPv4 /24s: 10.128.0.0/24, 10.128.1.0/24, ... (n <= 32768).
pub fn v4_prefixes(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("10.{}.{}.0/24", 128 + i / 256, i % 256))
        .collect()
}

/// `n` IPv6 /48s: fd00:100:0::/48, fd00:100:1::/48, ...
pub fn v6_prefixes(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("fd00:100:{i:x}::/48")).collect()
}

/// A BGP speaker to run as `bgpd --no_zebra`: AS `asn`, router-id `id`,
/// one IPv4 session (`neighbor4`) carrying `v4` and one IPv6 session
/// (`neighbor6`, if any) carrying `v6`, both to AS `remote_as`, announced
/// with `network` lines (`no bgp network import-check`: no zebra to check
/// against). Route-map NONE (deny all) is there for [`withdraw_all`].
/// Starting it announces 10,000 prefixes in ~2.5 s.
pub fn peer_bgpd_config(
    asn: u32,
    id: &str,
    remote_as: u32,
    neighbor4: &str,
    neighbor6: Option<&str>,
    v4: &[String],
    v6: &[String],
) -> String {
    let mut s = format!(
        "hostname peer{asn}\nroute-map NONE deny 10\nexit\nrouter bgp {asn}\n bgp router-id {id}\n \
         no bgp ebgp-requires-policy\n no bgp default ipv4-unicast\n no bgp network import-check\n \
         neighbor {neighbor4} remote-as {remote_as}\n"
    );
    if let Some(n6) = neighbor6 {
        s += &format!(" neighbor {n6} remote-as {remote_as}\n");
    }
    s += &format!(" address-family ipv4 unicast\n  neighbor {neighbor4} activate\n");
    for p in v4 {
        s += &format!("  network {p}\n");
    }
    s += " exit-address-family\n";
    if let Some(n6) = neighbor6 {
        s += &format!(" address-family ipv6 unicast\n  neighbor {n6} activate\n");
        for p in v6 {
            s += &format!("  network {p}\n");
        }
        s += " exit-address-family\n";
    }
    s
}

/// The DUT side: AS `asn`, one session per `(neighbor, afi, remote_as)`,
/// `maximum-paths` for ECMP, no policy required.
pub fn bgpd_config(
    asn: u32,
    id: &str,
    neighbors: &[(&str, &str, u32)],
    maximum_paths: u32,
) -> String {
    let mut s = format!(
        "hostname bgp{asn}\nrouter bgp {asn}\n bgp router-id {id}\n no bgp ebgp-requires-policy\n \
         no bgp default ipv4-unicast\n"
    );
    for (n, _, ras) in neighbors {
        s += &format!(" neighbor {n} remote-as {ras}\n");
    }
    for afi in ["ipv4", "ipv6"] {
        s += &format!(" address-family {afi} unicast\n");
        for (n, a, _) in neighbors {
            if *a == afi {
                s += &format!("  neighbor {n} activate\n");
            }
        }
        if maximum_paths > 1 {
            s += &format!("  maximum-paths {maximum_paths}\n");
        }
        s += " exit-address-family\n";
    }
    s
}

/// On the announcing side: withdraw every prefix of `afi` sent to
/// `neighbor` (outbound route-map NONE; FRR sends the UPDATE withdrawals at
/// once, no `clear` needed).
pub fn withdraw_all(peer: &Frr, asn: u32, afi: &str, neighbor: &str) {
    peer.config(&[
        &format!("router bgp {asn}"),
        &format!("address-family {afi} unicast"),
        &format!("neighbor {neighbor} route-map NONE out"),
    ]);
}

/// Undoes [`withdraw_all`]: everything announced again.
pub fn announce_all(peer: &Frr, asn: u32, afi: &str, neighbor: &str) {
    peer.config(&[
        &format!("router bgp {asn}"),
        &format!("address-family {afi} unicast"),
        &format!("no neighbor {neighbor} route-map NONE out"),
    ]);
}

/// deploy/frr/fpm-capture.py listening in a namespace: a stand-in FPM
/// server recording zebra's stream. Stopped (SIGTERM) on drop.
pub struct FpmCapture {
    pub path: PathBuf,
    log: PathBuf,
    child: Child,
}

pub fn fpm_capture_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/frr/fpm-capture.py")
}

impl FpmCapture {
    /// Listens on 127.0.0.1:`port` in `ns`, writes to `path` (connection N
    /// >= 2 to `path.N`).
    pub fn start(ns: &Netns, port: u16, path: &Path) -> FpmCapture {
        let ready = path.with_extension("ready");
        let log = path.with_extension("log");
        let _ = std::fs::remove_file(&ready);
        let out = std::fs::File::create(&log).expect("capture log");
        let child = Command::new("ip")
            .args(["netns", "exec", &ns.0, "python3"])
            .arg(fpm_capture_script())
            .arg("-o")
            .arg(path)
            .args(["--port", &port.to_string(), "--idle", "3600", "--split"])
            .arg("--ready")
            .arg(&ready)
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("dup"))
            .stderr(out)
            .spawn()
            .expect("spawn fpm-capture.py");
        let mut cap = FpmCapture {
            path: path.to_path_buf(),
            log,
            child,
        };
        let end = Instant::now() + Duration::from_secs(20);
        while !ready.exists() {
            if let Ok(Some(st)) = cap.child.try_wait() {
                panic!("fpm-capture.py exited ({st}): {}", cap.log_text());
            }
            assert!(
                Instant::now() < end,
                "fpm-capture.py did not listen: {}",
                cap.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        cap
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Connections zebra has opened so far.
    pub fn connections(&self) -> usize {
        self.log_text().matches(" from 127.0.0.1:").count()
    }

    /// Bytes received on connection `n` (1-based).
    pub fn bytes(&self, n: usize) -> u64 {
        let p = if n == 1 {
            self.path.clone()
        } else {
            PathBuf::from(format!("{}.{n}", self.path.display()))
        };
        std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
    }
}

impl Drop for FpmCapture {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// The `fwd` command run inside `ns` (`ip netns exec NS fwd CONFIG ...`),
/// like `common::spawn_fwd`: config written into `dir`, EAL runtime files
/// and the control socket there. Its `net_tap` ports' kernel interfaces
/// (the representors) appear in `ns`.
pub fn fwd_in_command(ns: &Netns, dir: &TempDir, config: &str, extra: &[&str]) -> Command {
    let cfg = dir.path("fwd.yaml");
    std::fs::write(&cfg, config).expect("write config");
    let mut c = Command::new("ip");
    c.args(["netns", "exec", &ns.0])
        .arg(fwd_bin())
        .arg(&cfg)
        .args(extra)
        .env("RUNTIME_DIRECTORY", &dir.0)
        .stdin(Stdio::null());
    c
}

/// Starts `fwd` in `ns` in the background (stdout/stderr piped, for
/// `common::wait_ready`). `ip netns exec` execs it: the child is `fwd`.
pub fn spawn_fwd_in(ns: &Netns, dir: &TempDir, config: &str, extra: &[&str]) -> Child {
    fwd_in_command(ns, dir, config, extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn fwd in namespace")
}
