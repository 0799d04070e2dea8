//! The daemon's YAML configuration.
//!
//! One file describes the EAL, the mempool, the ports and their queues, which
//! worker lcore polls which (port, queue), interface addresses, static routes
//! and static neighbours. Unknown fields are rejected; every error names the
//! field (`ports[1].rx_queues: ...`). Parsing and validation do not touch
//! DPDK, so a config can be checked with `fwd --check CONFIG`.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A configuration error: where it is and what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {msg}")]
    Syntax { path: String, msg: String },
    #[error("{field}: {msg}")]
    Invalid { field: String, msg: String },
}

fn invalid(field: impl Into<String>, msg: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        field: field.into(),
        msg: msg.into(),
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub eal: EalConfig,
    #[serde(default)]
    pub mempool: MempoolConfig,
    pub ports: Vec<PortConfig>,
    pub workers: Vec<WorkerConfig>,
    #[serde(default)]
    pub control: ControlConfig,
    #[serde(default)]
    pub datapath: DatapathConfig,
    #[serde(default)]
    pub routes: Vec<RouteConfig>,
    #[serde(default)]
    pub neighbours: Vec<NeighbourConfig>,
    /// ICMP errors the data path sends.
    #[serde(default)]
    pub icmp: IcmpConfig,
    /// Neighbour resolution (ARP and IPv6 neighbour discovery).
    #[serde(default)]
    pub neigh: crate::neigh::NeighConfig,
    /// The host path: a kernel interface per port for the traffic to the
    /// appliance that the data path does not answer itself (off when
    /// absent).
    #[serde(default)]
    pub host: Option<HostConfig>,
    /// The FPM server zebra feeds routes through (off when absent).
    #[serde(default)]
    pub fpm: Option<FpmConfig>,
    /// The OpenMetrics (Prometheus) endpoint (off when absent).
    #[serde(default)]
    pub metrics: Option<MetricsConfig>,
    /// What the routing tables may hold.
    #[serde(default)]
    pub limits: LimitsConfig,
}

/// What the routing tables may hold (see [`crate::route::Limits`]): a
/// change that would go past a limit is refused, so no client and no
/// routing daemon can grow the tables until the kernel kills the daemon.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// Routing tables (VRFs), the main one included.
    pub tables: usize,
    /// Memory the routing tables may take, MiB: the FIBs, RIBs, next hops
    /// and ECMP groups of every table, as the tables charge it.
    pub routing_mb: usize,
    /// Static neighbours (`fwdctl neigh add`), every port.
    pub neighbours: usize,
    /// Addresses a port (the config's and `fwdctl address add`'s).
    pub addresses: usize,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            tables: crate::route::Limits::DEFAULT_TABLES,
            routing_mb: crate::route::Limits::DEFAULT_MB,
            neighbours: crate::tables::Limits::DEFAULT_NEIGHBOURS,
            addresses: crate::tables::Limits::DEFAULT_ADDRESSES,
        }
    }
}

impl LimitsConfig {
    /// Largest `routing_mb`: 16 TiB.
    pub const MAX_ROUTING_MB: usize = 1 << 24;

    /// The limits the tables are held to.
    pub fn limits(&self) -> crate::tables::Limits {
        crate::tables::Limits {
            routing: crate::route::Limits {
                tables: self.tables,
                bytes: self.routing_mb << 20,
            },
            neighbours: self.neighbours,
            addresses: self.addresses,
        }
    }
}

/// The OpenMetrics / Prometheus endpoint: `GET /metrics` over HTTP.
///
/// It has no authentication and no TLS: anyone who can reach `listen`
/// reads every counter (rule ids, port names, neighbour counts). Any
/// address is accepted, as the operator's choice; bind it to loopback or
/// a management network.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// TCP address to listen on (`ADDRESS:PORT`, port not 0).
    pub listen: String,
    /// At most this many rules get their own series (the first ones in
    /// evaluation order); `fwd_rule_series_omitted` counts the rest.
    pub max_rule_series: usize,
    /// Scrapes served at once; further connections get 503 at once.
    pub max_connections: usize,
    /// A request must arrive whole, and its answer be taken, within this.
    pub timeout_ms: u64,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            listen: "127.0.0.1:9469".into(),
            max_rule_series: 1000,
            max_connections: 8,
            timeout_ms: 5000,
        }
    }
}

/// Upper bound of `metrics.max_rule_series`: the classifier's capacity,
/// beyond which the cap means nothing.
pub const MAX_RULE_SERIES: usize = 131_072;

impl MetricsConfig {
    /// The listening address (after [`Config::validate`], never fails).
    ///
    /// # Errors
    /// `metrics.listen` when it is not `ADDRESS:PORT` with a port other
    /// than 0.
    pub fn listen_addr(&self) -> Result<std::net::SocketAddr, ConfigError> {
        let a: std::net::SocketAddr = self.listen.parse().map_err(|e| {
            invalid(
                "metrics.listen",
                format!(
                    "{:?}: {e} (want ADDRESS:PORT, e.g. 127.0.0.1:9469 or [::1]:9469)",
                    self.listen
                ),
            )
        })?;
        if a.port() == 0 {
            return Err(invalid(
                "metrics.listen",
                format!(
                    "{:?}: port 0 is not a fixed port a scraper can find",
                    self.listen
                ),
            ));
        }
        Ok(a)
    }

    /// Checks every field.
    ///
    /// # Errors
    /// The first invalid field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.listen_addr()?;
        if self.max_rule_series > MAX_RULE_SERIES {
            return Err(invalid(
                "metrics.max_rule_series",
                format!("must be 0..={MAX_RULE_SERIES}"),
            ));
        }
        if !(1..=256).contains(&self.max_connections) {
            return Err(invalid("metrics.max_connections", "must be 1..=256"));
        }
        if !(100..=600_000).contains(&self.timeout_ms) {
            return Err(invalid("metrics.timeout_ms", "must be 100..=600000"));
        }
        Ok(())
    }
}

/// The host path (exception path): each port's kernel interface, and the
/// control-plane policing of what is punted to it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostConfig {
    /// Packets per second each port may punt to its kernel interface (a
    /// token bucket shared out among the workers polling the port).
    pub punt_rate: u32,
    /// Bucket depth, packets.
    pub punt_burst: u32,
    /// Packets waiting for the host thread, per worker.
    pub queue: usize,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            punt_rate: 20_000,
            punt_burst: 2_000,
            queue: 1024,
        }
    }
}

/// The FPM server for FRR's zebra (`zebra -M dplane_fpm_nl`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct FpmConfig {
    /// TCP address to listen on (zebra's `fpm address A port P`).
    pub listen: String,
    /// After zebra (re)connects, routes it has not sent again are withdrawn
    /// after this many milliseconds (mark and sweep).
    pub stale_ms: u64,
    /// zebra's kernel table ids to the appliance's tables; the main table
    /// (254) is table 0 unless mapped otherwise.
    pub tables: std::collections::BTreeMap<u32, u32>,
    /// Users (names or uids) whose sockets may connect: FPM has no
    /// authentication of its own. Empty: anyone who can reach `listen`.
    pub allowed_users: Vec<String>,
}

impl FpmConfig {
    /// The uids of `allowed_users` (names that do not exist on this
    /// machine are skipped); `None` when anyone may connect.
    pub fn allowed_uids(&self) -> Option<Vec<u32>> {
        if self.allowed_users.is_empty() {
            return None;
        }
        Some(
            self.allowed_users
                .iter()
                .filter_map(|u| {
                    u.parse().ok().or_else(|| {
                        nix::unistd::User::from_name(u)
                            .ok()
                            .flatten()
                            .map(|u| u.uid.as_raw())
                    })
                })
                .collect(),
        )
    }
}

impl Default for FpmConfig {
    fn default() -> Self {
        FpmConfig {
            listen: "127.0.0.1:2620".into(),
            stale_ms: 60_000,
            tables: [(254, 0)].into_iter().collect(),
            allowed_users: vec!["root".into(), "frr".into()],
        }
    }
}

/// ICMP / ICMPv6 errors: a token bucket per worker (Linux's defaults:
/// `icmp_msgs_per_sec` 1000, `icmp_msgs_burst` 50).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct IcmpConfig {
    /// Errors per second per worker; 0 sends none.
    pub rate: u32,
    pub burst: u32,
    /// What `reject` routes answer: `net-unreachable`, `host-unreachable`
    /// (the default, as Linux's `unreachable` routes), `port-unreachable`
    /// or `admin-prohibited` (Linux's `prohibit`).
    pub reject: RejectCode,
}

impl Default for IcmpConfig {
    fn default() -> Self {
        IcmpConfig {
            rate: 1000,
            burst: 50,
            reject: RejectCode::HostUnreachable,
        }
    }
}

/// The ICMP destination-unreachable code of `reject` routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RejectCode {
    NetUnreachable,
    HostUnreachable,
    PortUnreachable,
    AdminProhibited,
}

impl RejectCode {
    pub fn error(self) -> crate::pkt::IcmpError {
        use crate::pkt::IcmpError as E;
        match self {
            RejectCode::NetUnreachable => E::NetUnreachable,
            RejectCode::HostUnreachable => E::HostUnreachable,
            RejectCode::PortUnreachable => E::PortUnreachable,
            RejectCode::AdminProhibited => E::AdminProhibited,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct EalConfig {
    /// The EAL main lcore (runs the management side, polls nothing).
    pub main_lcore: u32,
    /// CPU the main lcore runs on (default: same number as the lcore).
    pub main_cpu: Option<usize>,
    /// Use hugepages (`--in-memory`); otherwise `--no-huge -m memory_mb`.
    pub hugepages: bool,
    /// Memory for the EAL in MiB (both modes).
    pub memory_mb: u32,
    /// `--file-prefix`; default `fwd-<pid>` so several instances coexist.
    pub file_prefix: Option<String>,
    /// Extra EAL arguments appended verbatim (e.g. `--log-level=lib.eal:debug`).
    pub extra_args: Vec<String>,
}

impl Default for EalConfig {
    fn default() -> Self {
        EalConfig {
            main_lcore: 0,
            main_cpu: None,
            hugepages: false,
            memory_mb: 512,
            file_prefix: None,
            extra_args: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct MempoolConfig {
    /// Mbufs in the pool (a power of two minus one is most efficient).
    pub mbufs: u32,
    /// Per-lcore cache.
    pub cache: u32,
    /// Buffer size including headroom.
    pub data_room: u16,
}

impl Default for MempoolConfig {
    fn default() -> Self {
        MempoolConfig {
            mbufs: 16383,
            cache: 256,
            data_room: 2176,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PortConfig {
    /// Operator-facing name used everywhere else (routes, neighbours, fwdctl).
    pub name: String,
    /// A DPDK vdev with its devargs (`net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap`,
    /// `net_tap0,iface=dtap0`, `net_null0`) or a PCI address (`0000:03:00.0`).
    pub device: String,
    #[serde(default = "one")]
    pub rx_queues: u16,
    #[serde(default = "default_desc")]
    pub rx_desc: u16,
    #[serde(default = "default_desc")]
    pub tx_desc: u16,
    #[serde(default)]
    pub mtu: Option<u16>,
    #[serde(default = "yes")]
    pub promiscuous: bool,
    /// Interface addresses in CIDR form (`10.0.1.1/24`, `fd00:1::1/64`).
    #[serde(default)]
    pub addresses: Vec<String>,
    #[serde(default)]
    pub rx_offloads: Vec<String>,
    #[serde(default)]
    pub tx_offloads: Vec<String>,
    /// The routing table (VRF) packets received here are looked up in; the
    /// port's connected and local routes go there too.
    #[serde(default)]
    pub table: u32,
    /// IPv6 router advertisements on this port (off when absent).
    #[serde(default)]
    pub ra: Option<RaConfig>,
    /// The name of the port's kernel interface when the host path is on
    /// (default: the port's name).
    #[serde(default)]
    pub host_ifname: Option<String>,
}

impl PortConfig {
    /// The name of the port's kernel interface.
    pub fn host_ifname(&self) -> &str {
        self.host_ifname.as_deref().unwrap_or(&self.name)
    }
}

/// Router advertisements of one port (RFC 4861 6.2): sent every
/// `interval_s` to all nodes and in answer to router solicitations.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RaConfig {
    /// Prefixes for autoconfiguration (`2001:db8:1::/64`); empty: the
    /// port's own IPv6 prefixes.
    pub prefixes: Vec<String>,
    /// Seconds between unsolicited advertisements.
    pub interval_s: u32,
    /// Router lifetime in seconds (0: not a default router).
    pub lifetime_s: u16,
    /// Advertise the port's MTU.
    pub mtu: bool,
}

impl Default for RaConfig {
    fn default() -> Self {
        RaConfig {
            prefixes: Vec::new(),
            interval_s: 200,
            lifetime_s: 1800,
            mtu: true,
        }
    }
}

fn one() -> u16 {
    1
}
fn yes() -> bool {
    true
}
fn default_desc() -> u16 {
    1024
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerConfig {
    /// The EAL lcore id of this worker.
    pub lcore: u32,
    /// CPU it is pinned to (default: same number as the lcore).
    #[serde(default)]
    pub cpu: Option<usize>,
    /// The (port, queue) pairs it polls; each RX queue has exactly one poller.
    pub rx: Vec<QueueRef>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct QueueRef {
    pub port: String,
    #[serde(default)]
    pub queue: u16,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ControlConfig {
    /// CPU of the control lcore (a thread that polls no queue).
    pub cpu: Option<usize>,
    /// The fwdctl socket.
    pub socket: PathBuf,
    /// Socket file mode (octal in YAML as a string, e.g. "0660").
    pub socket_mode: String,
    /// Group owning the socket (name); members may use fwdctl.
    pub socket_group: Option<String>,
    /// Most concurrent fwdctl sessions; the last one is kept for root.
    pub max_clients: usize,
    /// A session with no request for this long is closed (seconds).
    pub idle_timeout_s: u64,
    /// A request line must arrive whole, and its answer be taken, within
    /// this long (seconds).
    pub request_timeout_s: u64,
    /// Where `fwdctl config save NAME` writes (any peer); other absolute
    /// paths are for root only.
    pub save_dir: PathBuf,
    /// Files a peer that is not root may keep in `save_dir`: a save under
    /// a new name is refused past it (overwriting one is not).
    pub max_saved_files: usize,
    /// Largest request line in bytes.
    pub max_request_bytes: usize,
    /// Bound on memory waiting for reclamation (bytes).
    pub max_pending_bytes: usize,
    /// A worker that has not reported quiescence for this long is flagged.
    pub stall_ms: u64,
    /// The saved running state (`fwdctl config save FILE`). When the file
    /// exists, the first tables come from it instead of `routes` and
    /// `neighbours` and the port `addresses` (it was derived from them plus
    /// every change made at runtime); when it does not, from the config.
    pub load: Option<PathBuf>,
}

impl Default for ControlConfig {
    fn default() -> Self {
        ControlConfig {
            cpu: None,
            socket: PathBuf::from("/run/fwd/fwd.sock"),
            socket_mode: "0660".into(),
            socket_group: None,
            max_clients: 16,
            idle_timeout_s: 900,
            request_timeout_s: 30,
            save_dir: PathBuf::from("/var/lib/fwd"),
            max_saved_files: 16,
            max_request_bytes: 128 << 20,
            max_pending_bytes: 512 << 20,
            stall_ms: 1000,
            load: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct DatapathConfig {
    /// TX buffers are flushed at least this often (microseconds).
    pub drain_us: u64,
    /// Entries of each worker's flow cache in front of the rule set, a
    /// family (an IPv4 entry 32 bytes, an IPv6 one 64; rounded up to a
    /// power of two; 0 turns it off).
    pub acl_flow_cache: usize,
    /// The longest a worker sleeps between polls once its queues have
    /// been empty a while (microseconds; 0: it always polls). See
    /// [`crate::worker::idle`].
    pub idle_sleep_us: u64,
}

impl Default for DatapathConfig {
    fn default() -> Self {
        DatapathConfig {
            drain_us: 100,
            acl_flow_cache: crate::acl::FlowCache::DEFAULT_ENTRIES,
            idle_sleep_us: 50,
        }
    }
}

impl ControlConfig {
    /// Checks the control section's values.
    ///
    /// # Errors
    /// The first problem, naming its field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mode = self.mode()?;
        if mode & 0o600 != 0o600 {
            return Err(invalid(
                "control.socket_mode",
                format!("{mode:04o} denies the owner; want e.g. \"0660\""),
            ));
        }
        let sock = self.socket.as_os_str();
        if !self.socket.is_absolute() || sock.len() >= 108 {
            return Err(invalid(
                "control.socket",
                format!(
                    "{:?} must be an absolute path shorter than 108 bytes",
                    self.socket
                ),
            ));
        }
        if self.socket.file_name().is_none() {
            return Err(invalid("control.socket", "must name a file"));
        }
        if self.max_clients < 2 || self.max_clients > 1024 {
            return Err(invalid(
                "control.max_clients",
                "must be 2..=1024 (the last session is kept for root)",
            ));
        }
        if !(4096..=1 << 30).contains(&self.max_request_bytes) {
            return Err(invalid(
                "control.max_request_bytes",
                "must be 4096..=1073741824",
            ));
        }
        if !(1..=86_400).contains(&self.idle_timeout_s) {
            return Err(invalid("control.idle_timeout_s", "must be 1..=86400"));
        }
        if !(1..=3600).contains(&self.request_timeout_s) {
            return Err(invalid("control.request_timeout_s", "must be 1..=3600"));
        }
        if self.max_saved_files == 0 {
            return Err(invalid("control.max_saved_files", "must be at least 1"));
        }
        if self.max_pending_bytes < 1 << 20 {
            return Err(invalid(
                "control.max_pending_bytes",
                "must be at least 1048576",
            ));
        }
        if !(1..=3_600_000).contains(&self.stall_ms) {
            return Err(invalid("control.stall_ms", "must be 1..=3600000"));
        }
        if !self.save_dir.is_absolute() {
            return Err(invalid(
                "control.save_dir",
                format!("{:?} must be an absolute path", self.save_dir),
            ));
        }
        if let Some(l) = &self.load {
            if !l.is_absolute() || l.file_name().is_none() {
                return Err(invalid(
                    "control.load",
                    format!("{l:?} must be an absolute path to a file"),
                ));
            }
        }
        Ok(())
    }

    /// The socket mode as a number.
    ///
    /// # Errors
    /// When `socket_mode` is not an octal mode.
    pub fn mode(&self) -> Result<u32, ConfigError> {
        u32::from_str_radix(self.socket_mode.trim_start_matches("0o"), 8)
            .ok()
            .filter(|m| *m <= 0o777)
            .ok_or_else(|| {
                invalid(
                    "control.socket_mode",
                    "must be an octal mode such as \"0660\"",
                )
            })
    }
}

/// What a static route does with matching packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum RouteKind {
    /// Forward via `via` (gateway) out of `dev`, or to directly attached
    /// hosts on `dev` when `via` is absent. Without `dev`, the port whose
    /// address covers `via` (as `fwdctl route add P via GW`).
    #[default]
    Forward,
    Blackhole,
    Reject,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RouteConfig {
    pub prefix: String,
    #[serde(default)]
    pub via: Option<IpAddr>,
    #[serde(default)]
    pub dev: Option<String>,
    #[serde(default)]
    pub kind: RouteKind,
    #[serde(default)]
    pub table: u32,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NeighbourConfig {
    pub ip: IpAddr,
    pub mac: String,
    pub port: String,
}

/// An IP prefix parsed from CIDR text, host bits required to be zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cidr {
    pub addr: IpAddr,
    pub len: u8,
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

/// Parses `a.b.c.d/len` or `x::y/len`. With `host_ok`, host bits may be set
/// (an interface address); otherwise they must be zero (a route prefix).
pub fn parse_cidr(s: &str, host_ok: bool) -> Result<Cidr, String> {
    let (a, l) = s
        .split_once('/')
        .ok_or_else(|| format!("{s:?} is not in address/length form"))?;
    let addr: IpAddr = a
        .parse()
        .map_err(|_| format!("{a:?} is not an IP address"))?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let len: u8 = l
        .parse()
        .ok()
        .filter(|&n| n <= max)
        .ok_or_else(|| format!("prefix length {l:?} is not 0..={max}"))?;
    if !host_ok {
        let host_bits_set = match addr {
            IpAddr::V4(v) => {
                let x = u32::from(v);
                len < 32 && x & (u32::MAX >> len) != 0
            }
            IpAddr::V6(v) => {
                let x = u128::from(v);
                len < 128 && x & (u128::MAX >> len) != 0
            }
        };
        if host_bits_set {
            return Err(format!("{s:?} has host bits set beyond /{len}"));
        }
    }
    Ok(Cidr { addr, len })
}

/// Parses `02:00:00:00:00:01`.
pub fn parse_mac(s: &str) -> Result<[u8; 6], String> {
    let parts: Vec<&str> = s.split([':', '-']).collect();
    if parts.len() != 6 {
        return Err(format!("{s:?} is not a MAC address (six hex bytes)"));
    }
    let mut mac = [0u8; 6];
    for (m, p) in mac.iter_mut().zip(parts) {
        *m = u8::from_str_radix(p, 16)
            .ok()
            .filter(|_| p.len() == 2)
            .ok_or_else(|| format!("{s:?} is not a MAC address (bad byte {p:?})"))?;
    }
    Ok(mac)
}

/// How a port's device is attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attach {
    /// `--vdev DEVARGS`
    Vdev,
    /// `-a PCI` (PCI probing enabled)
    Pci,
}

impl PortConfig {
    /// The ethdev name DPDK gives the device.
    pub fn dev_name(&self) -> &str {
        self.device.split(',').next().unwrap_or("")
    }

    /// The kernel interface of a `net_tap` port (its `iface=` devarg).
    pub fn tap_iface(&self) -> Option<&str> {
        if !self.dev_name().starts_with("net_tap") {
            return None;
        }
        self.device
            .split(',')
            .skip(1)
            .find_map(|kv| kv.strip_prefix("iface="))
    }

    pub fn attach(&self) -> Attach {
        if is_pci_address(self.dev_name()) {
            Attach::Pci
        } else {
            Attach::Vdev
        }
    }
}

/// `0000:03:00.0` or `03:00.0`.
pub fn is_pci_address(s: &str) -> bool {
    let hex = |p: &str, n: usize| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit());
    let (head, func) = match s.rsplit_once('.') {
        Some(x) => x,
        None => return false,
    };
    if !(func.len() == 1 && func.chars().all(|c| c.is_ascii_digit())) {
        return false;
    }
    let parts: Vec<&str> = head.split(':').collect();
    match parts.as_slice() {
        [d, b, s] => hex(d, 4) && hex(b, 2) && hex(s, 2),
        [b, s] => hex(b, 2) && hex(s, 2),
        _ => false,
    }
}

impl Config {
    /// Reads, parses and validates a config file.
    ///
    /// # Errors
    /// [`ConfigError`] naming the file position or the field.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses and validates YAML text; `origin` names it in errors.
    ///
    /// # Errors
    /// [`ConfigError`] naming the position or the field.
    pub fn parse(text: &str, origin: &str) -> Result<Config, ConfigError> {
        let cfg: Config = serde_yaml::from_str(text).map_err(|e| ConfigError::Syntax {
            path: origin.to_string(),
            msg: e.to_string(),
        })?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks what depends on the machine it runs on: every CPU named
    /// (`eal.main_cpu`, `workers[].cpu`, `control.cpu`, by default the
    /// lcore numbers) must be one this process may run on.
    ///
    /// # Errors
    /// The first CPU that is not, naming its field and the CPUs there are.
    pub fn check_machine(&self) -> Result<(), ConfigError> {
        let cpus = crate::cpus::current().unwrap_or_default();
        if cpus.is_empty() {
            return Ok(()); // cannot tell
        }
        let mut named = vec![(
            "eal.main_cpu".to_string(),
            self.eal.main_cpu.unwrap_or(self.eal.main_lcore as usize),
        )];
        for (i, cpu) in self.worker_cpus().into_iter().enumerate() {
            named.push((format!("workers[{i}].cpu"), cpu));
        }
        if let Some(c) = self.control.cpu {
            named.push(("control.cpu".to_string(), c));
        }
        for (field, cpu) in named {
            if !cpus.contains(&cpu) {
                return Err(invalid(
                    field,
                    format!("CPU {cpu} is not one this machine lets fwd use ({cpus:?})"),
                ));
            }
        }
        Ok(())
    }

    /// The CPU of each worker, in `workers` order (`cpu`, by default the
    /// lcore's number).
    pub fn worker_cpus(&self) -> Vec<usize> {
        self.workers
            .iter()
            .map(|w| w.cpu.unwrap_or(w.lcore as usize))
            .collect()
    }

    /// Index of the port named `name`.
    pub fn port_index(&self, name: &str) -> Option<usize> {
        self.ports.iter().position(|p| p.name == name)
    }

    /// Checks everything that can be checked without DPDK.
    ///
    /// # Errors
    /// The first problem found, naming its field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.ports.is_empty() {
            return Err(invalid("ports", "at least one port is required"));
        }
        if self.ports.len() > 64 {
            return Err(invalid("ports", "at most 64 ports are supported"));
        }
        if self.workers.is_empty() {
            return Err(invalid("workers", "at least one worker lcore is required"));
        }
        if self.eal.memory_mb < 64 {
            return Err(invalid("eal.memory_mb", "must be at least 64"));
        }
        if self.mempool.mbufs < 1024 {
            return Err(invalid("mempool.mbufs", "must be at least 1024"));
        }
        if self.mempool.cache > 512 || self.mempool.cache > self.mempool.mbufs / 4 {
            return Err(invalid(
                "mempool.cache",
                "must be at most 512 and at most a quarter of mempool.mbufs",
            ));
        }
        if self.mempool.data_room < 256 + 128 {
            return Err(invalid("mempool.data_room", "must be at least 384 bytes"));
        }
        // Each mbuf takes its data room plus its header and headroom.
        let pool_mb = (u64::from(self.mempool.mbufs) * (u64::from(self.mempool.data_room) + 256))
            .div_ceil(1 << 20);
        if self.mempool.mbufs > 1 << 24 || pool_mb > u64::from(self.eal.memory_mb) * 3 / 4 {
            return Err(invalid(
                "mempool.mbufs",
                format!(
                    "{} mbufs of {} bytes need {pool_mb} MiB: more than 16M mbufs or three \
                     quarters of eal.memory_mb ({} MiB)",
                    self.mempool.mbufs, self.mempool.data_room, self.eal.memory_mb
                ),
            ));
        }
        let mut names = HashSet::new();
        let mut devs = HashSet::new();
        for (i, p) in self.ports.iter().enumerate() {
            let f = |k: &str| format!("ports[{i}].{k}");
            if p.name.is_empty() || p.name.contains(char::is_whitespace) {
                return Err(invalid(f("name"), "must be a non-empty word"));
            }
            if !names.insert(p.name.as_str()) {
                return Err(invalid(
                    f("name"),
                    format!("duplicate port name {:?}", p.name),
                ));
            }
            if p.dev_name().is_empty() {
                return Err(invalid(f("device"), "empty device"));
            }
            if !devs.insert(p.dev_name()) {
                return Err(invalid(
                    f("device"),
                    format!("device {:?} used twice", p.dev_name()),
                ));
            }
            if p.rx_queues == 0 || p.rx_queues > 64 {
                return Err(invalid(f("rx_queues"), "must be 1..=64"));
            }
            for (k, v) in [("rx_desc", p.rx_desc), ("tx_desc", p.tx_desc)] {
                if !(64..=16384).contains(&v) || !v.is_power_of_two() {
                    return Err(invalid(f(k), "must be a power of two in 64..=16384"));
                }
            }
            if let Some(m) = p.mtu {
                if !(68..=9600).contains(&m) {
                    return Err(invalid(f("mtu"), "must be 68..=9600"));
                }
            }
            for (j, a) in p.addresses.iter().enumerate() {
                parse_cidr(a, true)
                    .map_err(|e| invalid(format!("ports[{i}].addresses[{j}]"), e))?;
            }
            if let Some(ra) = &p.ra {
                if !(4..=1800).contains(&ra.interval_s) {
                    return Err(invalid(f("ra.interval_s"), "must be 4..=1800 (RFC 4861)"));
                }
                for (j, pfx) in ra.prefixes.iter().enumerate() {
                    let ok = pfx
                        .parse::<ctl::wire::IpNet>()
                        .ok()
                        .filter(|n| n.addr().is_ipv6() && n.is_network());
                    if ok.is_none() {
                        return Err(invalid(
                            format!("ports[{i}].ra.prefixes[{j}]"),
                            format!("{pfx:?} is not an IPv6 prefix with host bits clear"),
                        ));
                    }
                }
            }
        }
        let n = &self.neigh;
        for (k, v) in [
            ("reachable_ms", n.reachable_ms),
            ("delay_ms", n.delay_ms),
            ("retrans_ms", n.retrans_ms),
        ] {
            if !(10..=3_600_000).contains(&v) {
                return Err(invalid(format!("neigh.{k}"), "must be 10..=3600000"));
            }
        }
        if n.mcast_probes == 0 || n.mcast_probes > 100 || n.ucast_probes > 100 {
            return Err(invalid(
                "neigh.mcast_probes",
                "mcast_probes must be 1..=100 and ucast_probes 0..=100",
            ));
        }
        if n.queue_len > 1024 || n.max_held > 1 << 16 || n.max_entries == 0 {
            return Err(invalid(
                "neigh.queue_len",
                "queue_len must be <= 1024, max_held <= 65536, max_entries > 0",
            ));
        }
        if n.max_held >= self.mempool.mbufs as usize / 2 {
            return Err(invalid(
                "neigh.max_held",
                "must be below half of mempool.mbufs (held packets would starve the pool)",
            ));
        }
        let mut polled: HashMap<(usize, u16), usize> = HashMap::new();
        let mut lcores = HashSet::new();
        for (w, wk) in self.workers.iter().enumerate() {
            if wk.lcore == self.eal.main_lcore {
                return Err(invalid(
                    format!("workers[{w}].lcore"),
                    format!(
                        "lcore {} is eal.main_lcore; workers need their own lcores",
                        wk.lcore
                    ),
                ));
            }
            if wk.lcore >= 128 {
                return Err(invalid(format!("workers[{w}].lcore"), "must be below 128"));
            }
            if !lcores.insert(wk.lcore) {
                return Err(invalid(
                    format!("workers[{w}].lcore"),
                    format!("lcore {} is given to two workers", wk.lcore),
                ));
            }
            if wk.rx.is_empty() {
                return Err(invalid(
                    format!("workers[{w}].rx"),
                    "a worker must poll at least one queue",
                ));
            }
            for (j, q) in wk.rx.iter().enumerate() {
                let f = format!("workers[{w}].rx[{j}]");
                let pi = self.port_index(&q.port).ok_or_else(|| {
                    invalid(format!("{f}.port"), format!("no port named {:?}", q.port))
                })?;
                if q.queue >= self.ports[pi].rx_queues {
                    return Err(invalid(
                        format!("{f}.queue"),
                        format!(
                            "port {:?} has {} rx queue(s)",
                            q.port, self.ports[pi].rx_queues
                        ),
                    ));
                }
                if let Some(other) = polled.insert((pi, q.queue), w) {
                    return Err(invalid(
                        f,
                        format!(
                            "queue {} of port {:?} is already polled by workers[{other}]",
                            q.queue, q.port
                        ),
                    ));
                }
            }
        }
        for (pi, p) in self.ports.iter().enumerate() {
            for q in 0..p.rx_queues {
                if !polled.contains_key(&(pi, q)) {
                    return Err(invalid(
                        "workers",
                        format!("rx queue {q} of port {:?} is polled by no worker", p.name),
                    ));
                }
            }
        }
        self.control.validate()?;
        if let Some(h) = &self.host {
            if h.punt_burst == 0 && h.punt_rate > 0 {
                return Err(invalid("host.punt_burst", "must be at least 1"));
            }
            if h.queue == 0 || h.queue * self.workers.len() >= self.mempool.mbufs as usize / 2 {
                return Err(invalid(
                    "host.queue",
                    "must be at least 1, and all workers' queues less than half of \
                     mempool.mbufs (punted packets would starve forwarding)",
                ));
            }
            let mut names = HashSet::new();
            for (i, p) in self.ports.iter().enumerate() {
                let n = p.host_ifname();
                if n.is_empty() || n.len() > 15 || n.contains(['/', ' ', ':']) || n == "." {
                    return Err(invalid(
                        format!("ports[{i}].host_ifname"),
                        format!("{n:?} is not a valid interface name (1 to 15 characters, no '/', ':' or space)"),
                    ));
                }
                if !names.insert(n) {
                    return Err(invalid(
                        format!("ports[{i}].host_ifname"),
                        format!("{n:?} is used twice"),
                    ));
                }
            }
        } else if let Some((i, _)) = self
            .ports
            .iter()
            .enumerate()
            .find(|(_, p)| p.host_ifname.is_some())
        {
            return Err(invalid(
                format!("ports[{i}].host_ifname"),
                "needs the host path (a host: section)",
            ));
        }
        if let Some(f) = &self.fpm {
            f.listen.parse::<std::net::SocketAddr>().map_err(|e| {
                invalid(
                    "fpm.listen",
                    format!("{:?}: {e} (want ADDRESS:PORT)", f.listen),
                )
            })?;
            if f.tables.is_empty() {
                return Err(invalid(
                    "fpm.tables",
                    "maps no zebra table: no route could land",
                ));
            }
        }
        if let Some(m) = &self.metrics {
            m.validate()?;
            if let Some(f) = &self.fpm {
                if f.listen.parse::<std::net::SocketAddr>().ok() == m.listen_addr().ok() {
                    return Err(invalid(
                        "metrics.listen",
                        format!("{:?} is fpm.listen too", m.listen),
                    ));
                }
            }
        }
        if self.limits.tables == 0 {
            return Err(invalid("limits.tables", "must be at least 1"));
        }
        if self.limits.routing_mb == 0 || self.limits.routing_mb > LimitsConfig::MAX_ROUTING_MB {
            return Err(invalid(
                "limits.routing_mb",
                format!("must be 1..={}", LimitsConfig::MAX_ROUTING_MB),
            ));
        }
        if self.datapath.drain_us == 0 || self.datapath.drain_us > 100_000 {
            return Err(invalid("datapath.drain_us", "must be 1..=100000"));
        }
        if self.datapath.idle_sleep_us > 10_000 {
            return Err(invalid(
                "datapath.idle_sleep_us",
                "must be 0..=10000 (0: always poll)",
            ));
        }
        if self.datapath.acl_flow_cache > crate::acl::FlowCache::MAX_ENTRIES {
            return Err(invalid(
                "datapath.acl_flow_cache",
                format!("must be 0..={}", crate::acl::FlowCache::MAX_ENTRIES),
            ));
        }
        // Only the shape of a route here: what it means (the port, the
        // gateway's family and subnet) is checked by the same rules as a
        // `fwdctl` batch when the tables are built (`--check` builds them).
        for (i, r) in self.routes.iter().enumerate() {
            let f = |k: &str| format!("routes[{i}].{k}");
            parse_cidr(&r.prefix, false).map_err(|e| invalid(f("prefix"), e))?;
            match r.kind {
                RouteKind::Blackhole | RouteKind::Reject if r.via.is_some() || r.dev.is_some() => {
                    return Err(invalid(
                        f("kind"),
                        "blackhole/reject routes take no via/dev",
                    ));
                }
                _ => {}
            }
        }
        for (i, n) in self.neighbours.iter().enumerate() {
            parse_mac(&n.mac).map_err(|e| invalid(format!("neighbours[{i}].mac"), e))?;
            if self.port_index(&n.port).is_none() {
                return Err(invalid(
                    format!("neighbours[{i}].port"),
                    format!("no port named {:?}", n.port),
                ));
            }
        }
        Ok(())
    }

    /// The EAL argument vector this config asks for (program name first).
    pub fn eal_args(&self, prog: &str, default_prefix: &str) -> Vec<String> {
        let mut a = vec![prog.to_string()];
        let cpu_of = |lcore: u32, cpu: Option<usize>| cpu.unwrap_or(lcore as usize);
        let mut lc = vec![format!(
            "{}@{}",
            self.eal.main_lcore,
            cpu_of(self.eal.main_lcore, self.eal.main_cpu)
        )];
        for (w, cpu) in self.workers.iter().zip(self.worker_cpus()) {
            lc.push(format!("{}@{cpu}", w.lcore));
        }
        a.push("--lcores".into());
        a.push(lc.join(","));
        a.push("--main-lcore".into());
        a.push(self.eal.main_lcore.to_string());
        let mut pci = false;
        for p in &self.ports {
            match p.attach() {
                Attach::Vdev => {
                    a.push("--vdev".into());
                    a.push(p.device.clone());
                }
                Attach::Pci => {
                    pci = true;
                    a.push("-a".into());
                    a.push(p.device.clone());
                }
            }
        }
        if !pci {
            // Never probe the host's own NIC unless the config names PCI ports.
            a.push("--no-pci".into());
        }
        if self.eal.hugepages {
            a.push("--in-memory".into());
        } else {
            a.push("--no-huge".into());
            a.push("--no-shconf".into());
        }
        a.push("-m".into());
        a.push(self.eal.memory_mb.to_string());
        a.push("--no-telemetry".into());
        a.push("--file-prefix".into());
        a.push(
            self.eal
                .file_prefix
                .clone()
                .unwrap_or_else(|| default_prefix.to_string()),
        );
        a.extend(self.eal.extra_args.iter().cloned());
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
ports:
  - name: p0
    device: net_pcap0,rx_pcap=in.pcap,tx_pcap=out0.pcap
    addresses: [10.0.0.1/24]
  - name: p1
    device: net_null0
workers:
  - lcore: 1
    rx: [{port: p0}, {port: p1}]
routes:
  - {prefix: 10.1.0.0/16, via: 10.0.0.2, dev: p0}
  - {prefix: 192.0.2.0/24, kind: blackhole}
neighbours:
  - {ip: 10.0.0.2, mac: "02:00:00:00:00:02", port: p0}
"#;

    fn err(text: &str) -> String {
        Config::parse(text, "t.yaml").unwrap_err().to_string()
    }

    #[test]
    fn check_refuses_what_would_break_at_run_time_naming_the_field() {
        for (extra, field) in [
            ("control: {socket_mode: '0'}\n", "control.socket_mode"),
            ("control: {socket_mode: '0060'}\n", "control.socket_mode"),
            (
                "control: {max_request_bytes: 0}\n",
                "control.max_request_bytes",
            ),
            ("control: {socket: ''}\n", "control.socket"),
            ("control: {socket: 'rel/fwd.sock'}\n", "control.socket"),
            ("control: {load: 'saved.conf'}\n", "control.load"),
            ("control: {save_dir: 'saved'}\n", "control.save_dir"),
            ("control: {max_clients: 1}\n", "control.max_clients"),
            ("control: {idle_timeout_s: 0}\n", "control.idle_timeout_s"),
            (
                "control: {request_timeout_s: 0}\n",
                "control.request_timeout_s",
            ),
            ("control: {stall_ms: 0}\n", "control.stall_ms"),
            ("control: {max_saved_files: 0}\n", "control.max_saved_files"),
            (
                "datapath: {acl_flow_cache: 2000000}\n",
                "datapath.acl_flow_cache",
            ),
            (
                "datapath: {idle_sleep_us: 10001}\n",
                "datapath.idle_sleep_us",
            ),
            ("limits: {tables: 0}\n", "limits.tables"),
            ("limits: {routing_mb: 0}\n", "limits.routing_mb"),
            ("limits: {routing_mb: 16777217}\n", "limits.routing_mb"),
            ("mempool: {mbufs: 4294967295}\n", "mempool.mbufs"),
            (
                "mempool: {mbufs: 400000}\neal: {memory_mb: 256}\n",
                "mempool.mbufs",
            ),
        ] {
            let e = err(&format!("{GOOD}{extra}"));
            assert!(e.contains(field), "{extra:?}: {e}");
        }
        let long = format!("control: {{socket: '/{}'}}\n", "x".repeat(120));
        assert!(err(&format!("{GOOD}{long}")).contains("control.socket"));
        // The defaults pass.
        Config::parse(GOOD, "t.yaml").unwrap();
    }

    #[test]
    fn a_cpu_the_machine_lacks_is_named() {
        let c = Config::parse(
            &GOOD.replace("  - lcore: 1\n", "  - lcore: 1\n    cpu: 4095\n"),
            "t.yaml",
        )
        .unwrap();
        let e = c.check_machine().unwrap_err().to_string();
        assert!(e.contains("workers[0].cpu") && e.contains("4095"), "{e}");
        let c = Config::parse(&format!("{GOOD}control: {{cpu: 4096}}\n"), "t.yaml").unwrap();
        let e = c.check_machine().unwrap_err().to_string();
        assert!(e.contains("control.cpu"), "{e}");
    }

    #[test]
    fn router_settings_are_checked_by_name() {
        let c = Config::parse(
            &format!("{GOOD}icmp: {{reject: admin-prohibited}}\nneigh: {{queue_len: 5}}\n"),
            "t.yaml",
        )
        .unwrap();
        assert_eq!(c.icmp.reject, RejectCode::AdminProhibited);
        assert_eq!((c.icmp.rate, c.icmp.burst), (1000, 50), "Linux's defaults");
        assert_eq!(c.neigh.queue_len, 5);
        assert_eq!(c.neigh.mcast_probes, 3, "defaults for the rest");
        let e = err(&format!("{GOOD}neigh: {{unres_qlen: 5}}\n"));
        assert!(e.contains("unres_qlen"), "{e}");
        let e = err(&format!("{GOOD}icmp: {{reject: teapot}}\n"));
        assert!(e.contains("teapot") || e.contains("reject"), "{e}");
        let e = err(&format!("{GOOD}neigh: {{max_held: 9000}}\n"));
        assert!(e.contains("neigh.max_held") && e.contains("starve"), "{e}");
        let e = err(&format!("{GOOD}neigh: {{retrans_ms: 1}}\n"));
        assert!(e.contains("neigh.retrans_ms"), "{e}");
        let ra = GOOD.replace(
            "    device: net_null0\n",
            "    device: net_null0\n    ra: {prefixes: ['10.0.0.0/8']}\n",
        );
        let e = err(&ra);
        assert!(e.contains("ports[1].ra.prefixes[0]"), "{e}");
        let ra = GOOD.replace(
            "    device: net_null0\n",
            "    device: net_null0\n    ra: {prefixes: ['2001:db8:1::/64'], interval_s: 30}\n",
        );
        let c = Config::parse(&ra, "t.yaml").unwrap();
        assert_eq!(c.ports[1].ra.as_ref().map(|r| r.interval_s), Some(30));
    }

    #[test]
    fn good_config_parses_and_builds_eal_args() {
        let c = Config::parse(GOOD, "t.yaml").unwrap();
        let a = c.eal_args("fwd", "fwd-test");
        assert!(a.contains(&"--no-pci".to_string()));
        assert!(a.contains(&"--no-huge".to_string()));
        assert!(a.contains(&"net_pcap0,rx_pcap=in.pcap,tx_pcap=out0.pcap".to_string()));
        assert!(a
            .windows(2)
            .any(|w| w[0] == "--lcores" && w[1] == "0@0,1@1"));
        assert_eq!(c.ports[0].dev_name(), "net_pcap0");
    }

    #[test]
    fn unknown_fields_are_rejected_with_their_name() {
        let e = err(&GOOD.replace("    addresses:", "    adresses:"));
        assert!(e.contains("adresses"), "{e}");
        let e = err(&format!("{GOOD}\nbogus: 1\n"));
        assert!(e.contains("bogus"), "{e}");
    }

    #[test]
    fn semantic_errors_name_the_field() {
        let e = err(&GOOD.replace("rx: [{port: p0}, {port: p1}]", "rx: [{port: p0}]"));
        assert!(e.contains("port \"p1\" is polled by no worker"), "{e}");
        let e = err(&GOOD.replace("{port: p1}]", "{port: p9}]"));
        assert!(e.contains("workers[0].rx[1].port"), "{e}");
        let e = err(&GOOD.replace("10.1.0.0/16", "10.1.0.1/16"));
        assert!(
            e.contains("routes[0].prefix") && e.contains("host bits"),
            "{e}"
        );
        let e = err(&GOOD.replace("02:00:00:00:00:02", "02:00:00:00:02"));
        assert!(e.contains("neighbours[0].mac"), "{e}");
        let e = err(&GOOD.replace("10.0.0.1/24", "10.0.0.1/33"));
        assert!(e.contains("ports[0].addresses[0]"), "{e}");
        let e = err(&GOOD.replace("lcore: 1", "lcore: 0"));
        assert!(e.contains("workers[0].lcore"), "{e}");
        // A gateway of the other family is the batch rules' to refuse:
        // control::setup's config_routes_follow_the_rules_of_a_batch.
        let e = err(&GOOD.replace("name: p1", "name: p0"));
        assert!(e.contains("ports[1].name"), "{e}");
    }

    #[test]
    fn pci_addresses_are_recognised() {
        assert!(is_pci_address("0000:03:00.0"));
        assert!(is_pci_address("03:00.1"));
        assert!(!is_pci_address("net_pcap0"));
        assert!(!is_pci_address("0000:03:00"));
        let c = Config::parse(&GOOD.replace("net_null0", "0000:03:00.0"), "t.yaml").unwrap();
        let a = c.eal_args("fwd", "x");
        assert!(!a.contains(&"--no-pci".to_string()));
        assert!(a.windows(2).any(|w| w[0] == "-a" && w[1] == "0000:03:00.0"));
    }

    #[test]
    fn shipped_example_configs_are_valid() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/examples");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).expect("deploy/examples") {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "yaml") {
                Config::load(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                n += 1;
            }
        }
        assert!(n >= 2, "examples found: {n}");
    }

    #[test]
    fn metrics_is_off_by_default_and_its_fields_are_checked() {
        let c = Config::parse(GOOD, "t.yaml").unwrap();
        assert!(c.metrics.is_none(), "no metrics: section, no listener");
        let c = Config::parse(&format!("{GOOD}metrics: {{}}\n"), "t.yaml").unwrap();
        let m = c.metrics.expect("an empty section takes the defaults");
        assert_eq!(m.listen_addr().unwrap(), "127.0.0.1:9469".parse().unwrap());
        assert_eq!(m.max_rule_series, 1000);
        // Any address is the operator's choice, IPv6 too.
        for ok in ["0.0.0.0:9469", "[::1]:9100", "192.0.2.7:80"] {
            let c = Config::parse(&format!("{GOOD}metrics: {{listen: '{ok}'}}\n"), "t.yaml");
            assert!(c.is_ok(), "{ok}: {:?}", c.err());
        }
        for (extra, field, says) in [
            (
                "metrics: {listen: '127.0.0.1'}\n",
                "metrics.listen",
                "ADDRESS:PORT",
            ),
            (
                "metrics: {listen: 'localhost:9469'}\n",
                "metrics.listen",
                "ADDRESS:PORT",
            ),
            (
                "metrics: {listen: '127.0.0.1:0'}\n",
                "metrics.listen",
                "port 0",
            ),
            (
                "metrics: {listen: '::1:9469'}\n",
                "metrics.listen",
                "ADDRESS:PORT",
            ),
            (
                "metrics: {max_rule_series: 200000}\n",
                "metrics.max_rule_series",
                "0..=",
            ),
            (
                "metrics: {max_connections: 0}\n",
                "metrics.max_connections",
                "1..=",
            ),
            (
                "metrics: {timeout_ms: 10}\n",
                "metrics.timeout_ms",
                "100..=",
            ),
            (
                "fpm: {listen: '127.0.0.1:2620'}\nmetrics: {listen: '127.0.0.1:2620'}\n",
                "metrics.listen",
                "fpm.listen",
            ),
        ] {
            let e = err(&format!("{GOOD}{extra}"));
            assert!(e.starts_with(field), "{extra}: {e}");
            assert!(e.contains(says), "{extra}: {e}");
        }
        assert!(err(&format!("{GOOD}metrics: {{port: 9469}}\n")).contains("unknown field"));
    }

    #[test]
    fn cidr_and_mac_parsing() {
        assert_eq!(parse_cidr("10.0.0.0/8", false).unwrap().len, 8);
        assert!(parse_cidr("10.0.0.1/8", false).is_err());
        assert!(parse_cidr("10.0.0.1/8", true).is_ok());
        assert!(parse_cidr("fd00::/8", false).is_ok());
        assert!(parse_cidr("fd00::1/129", true).is_err());
        assert!(parse_cidr("nonsense", true).is_err());
        assert_eq!(parse_mac("02:00:00:00:00:0a").unwrap()[5], 10);
        assert!(parse_mac("02:00:00:00:00:0g").is_err());
    }
}
