//! Ethernet ports: configuration, queues, link, statistics.

use std::cell::Cell;
use std::ffi::{CStr, CString};
use std::marker::PhantomData;

use super::eal::Eal;
use super::mbuf::{Received, RxBurst};
use super::mempool::Mempool;
use super::strerror;

/// Offloads the configuration may ask for, by name, with their DPDK flags.
pub const RX_OFFLOADS: &[(&str, u64)] = &[
    ("ipv4_cksum", dpdk_sys::RTE_ETH_RX_OFFLOAD_IPV4_CKSUM as u64),
    ("udp_cksum", dpdk_sys::RTE_ETH_RX_OFFLOAD_UDP_CKSUM as u64),
    ("tcp_cksum", dpdk_sys::RTE_ETH_RX_OFFLOAD_TCP_CKSUM as u64),
    ("vlan_strip", dpdk_sys::RTE_ETH_RX_OFFLOAD_VLAN_STRIP as u64),
    ("scatter", dpdk_sys::RTE_ETH_RX_OFFLOAD_SCATTER as u64),
];
/// TX offloads by name.
pub const TX_OFFLOADS: &[(&str, u64)] = &[
    ("ipv4_cksum", dpdk_sys::RTE_ETH_TX_OFFLOAD_IPV4_CKSUM as u64),
    ("udp_cksum", dpdk_sys::RTE_ETH_TX_OFFLOAD_UDP_CKSUM as u64),
    ("tcp_cksum", dpdk_sys::RTE_ETH_TX_OFFLOAD_TCP_CKSUM as u64),
    (
        "mbuf_fast_free",
        dpdk_sys::RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE as u64,
    ),
    ("multi_segs", dpdk_sys::RTE_ETH_TX_OFFLOAD_MULTI_SEGS as u64),
];

/// Why a port operation failed. Each variant names the port and the step.
#[derive(Debug, thiserror::Error)]
pub enum PortError {
    #[error(
        "port {0:?}: no such DPDK device (check its `device` devargs or PCI address; \
             PCI devices need the NIC bound to vfio-pci and no --no-pci)"
    )]
    NotFound(String),
    #[error("port {port:?}: {step} failed: {msg} (errno {errno})")]
    Dpdk {
        port: String,
        step: &'static str,
        errno: i32,
        msg: String,
    },
    #[error("port {port:?}: {what} {asked} exceeds the device maximum {max}")]
    Limit {
        port: String,
        what: &'static str,
        asked: u32,
        max: u32,
    },
    #[error("port {port:?}: the device does not support the {dir} offload {name:?}")]
    Offload {
        port: String,
        dir: &'static str,
        name: String,
    },
    #[error("port {port:?}: unknown {dir} offload {name:?} (known: {known})")]
    UnknownOffload {
        port: String,
        dir: &'static str,
        name: String,
        known: String,
    },
}

/// How to bring a port up.
#[derive(Debug, Clone)]
pub struct PortSetup {
    /// Operator-facing name (from the config).
    pub name: String,
    /// The ethdev name: the vdev name before its first comma, or the PCI address.
    pub dev_name: String,
    pub rx_queues: u16,
    pub tx_queues: u16,
    pub rx_desc: u16,
    pub tx_desc: u16,
    pub mtu: Option<u16>,
    pub promiscuous: bool,
    pub rx_offloads: Vec<String>,
    pub tx_offloads: Vec<String>,
}

/// Link state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Link {
    pub up: bool,
    pub speed_mbps: u32,
    pub full_duplex: bool,
}

/// Hardware/driver counters of a port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PortHwStats {
    pub ipackets: u64,
    pub opackets: u64,
    pub ibytes: u64,
    pub obytes: u64,
    pub imissed: u64,
    pub ierrors: u64,
    pub oerrors: u64,
    pub rx_nombuf: u64,
}

/// A configured and started port. Stop and close happen on drop.
#[derive(Debug)]
pub struct Port {
    id: u16,
    name: String,
    mac: [u8; 6],
    rx_queues: u16,
    tx_queues: u16,
    rss: bool,
    started: bool,
    /// Queue handles already given out (each queue has exactly one owner).
    rx_taken: Vec<bool>,
    tx_taken: Vec<bool>,
}

fn dpdk_err(port: &str, step: &'static str, rc: i32) -> PortError {
    PortError::Dpdk {
        port: port.to_string(),
        step,
        errno: -rc,
        msg: strerror(-rc),
    }
}

fn offload_flags(
    port: &str,
    dir: &'static str,
    names: &[String],
    table: &[(&str, u64)],
    capa: u64,
) -> Result<u64, PortError> {
    let mut flags = 0;
    for n in names {
        let Some(&(_, f)) = table.iter().find(|(k, _)| *k == n.as_str()) else {
            return Err(PortError::UnknownOffload {
                port: port.to_string(),
                dir,
                name: n.clone(),
                known: table.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", "),
            });
        };
        if capa & f != f {
            return Err(PortError::Offload {
                port: port.to_string(),
                dir,
                name: n.clone(),
            });
        }
        flags |= f;
    }
    Ok(flags)
}

impl Port {
    /// Finds, configures and starts a port: `rx_queues` RX queues (RSS over
    /// IP/TCP/UDP when more than one), `tx_queues` TX queues, descriptors
    /// clamped to the device limits, the requested offloads checked against
    /// the device's capabilities, MTU and promiscuous mode applied.
    ///
    /// # Errors
    /// [`PortError`] naming the port and the step that failed.
    pub fn start(_eal: &Eal, setup: &PortSetup, pool: &Mempool) -> Result<Port, PortError> {
        let name = setup.name.as_str();
        let cname = CString::new(setup.dev_name.as_str())
            .map_err(|_| PortError::NotFound(setup.dev_name.clone()))?;
        let mut id: u16 = 0;
        // SAFETY: valid C string and out-pointer for the duration of the call.
        let rc = unsafe { dpdk_sys::rte_eth_dev_get_port_by_name(cname.as_ptr(), &mut id) };
        if rc != 0 {
            return Err(PortError::NotFound(setup.dev_name.clone()));
        }
        // SAFETY: rte_eth_dev_info is plain data; zeroed is a valid initial
        // value and the call fills it.
        let mut info: dpdk_sys::rte_eth_dev_info = unsafe { std::mem::zeroed() };
        // SAFETY: `id` is a valid port (found above); `info` is writable.
        let rc = unsafe { dpdk_sys::rte_eth_dev_info_get(id, &mut info) };
        if rc != 0 {
            return Err(dpdk_err(name, "rte_eth_dev_info_get", rc));
        }
        for (what, asked, max) in [
            ("rx_queues", setup.rx_queues, info.max_rx_queues),
            ("tx_queues", setup.tx_queues, info.max_tx_queues),
        ] {
            if asked > max {
                return Err(PortError::Limit {
                    port: name.to_string(),
                    what,
                    asked: u32::from(asked),
                    max: u32::from(max),
                });
            }
        }
        let rx_off = offload_flags(
            name,
            "rx",
            &setup.rx_offloads,
            RX_OFFLOADS,
            info.rx_offload_capa,
        )?;
        let mut tx_off = offload_flags(
            name,
            "tx",
            &setup.tx_offloads,
            TX_OFFLOADS,
            info.tx_offload_capa,
        )?;
        // Fast free is sound here: every mbuf comes from one pool and is never
        // shared (mirrors are deep copies), so enable it whenever supported.
        let fast_free = dpdk_sys::RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE as u64;
        tx_off |= info.tx_offload_capa & fast_free;

        // SAFETY: rte_eth_conf is plain data; all-zero is DPDK's documented default.
        let mut conf: dpdk_sys::rte_eth_conf = unsafe { std::mem::zeroed() };
        conf.rxmode.offloads = rx_off;
        conf.txmode.offloads = tx_off;
        let rss = setup.rx_queues > 1 && info.flow_type_rss_offloads != 0;
        if rss {
            conf.rxmode.mq_mode = dpdk_sys::RTE_ETH_MQ_RX_RSS;
            conf.rx_adv_conf.rss_conf.rss_hf = u64::from(
                dpdk_sys::RTE_ETH_RSS_IP | dpdk_sys::RTE_ETH_RSS_UDP | dpdk_sys::RTE_ETH_RSS_TCP,
            ) & info.flow_type_rss_offloads;
        }
        // SAFETY: valid port id and a fully initialised conf.
        let rc =
            unsafe { dpdk_sys::rte_eth_dev_configure(id, setup.rx_queues, setup.tx_queues, &conf) };
        if rc != 0 {
            return Err(dpdk_err(name, "rte_eth_dev_configure", rc));
        }
        let (mut nrx, mut ntx) = (setup.rx_desc, setup.tx_desc);
        // SAFETY: valid port id and writable descriptor counts.
        let rc = unsafe { dpdk_sys::rte_eth_dev_adjust_nb_rx_tx_desc(id, &mut nrx, &mut ntx) };
        if rc != 0 {
            return Err(dpdk_err(name, "rte_eth_dev_adjust_nb_rx_tx_desc", rc));
        }
        // SAFETY: valid port id.
        let socket = unsafe { dpdk_sys::rte_eth_dev_socket_id(id) };
        let socket = if socket < 0 { 0 } else { socket as u32 };
        for q in 0..setup.rx_queues {
            let mut rxconf = info.default_rxconf;
            rxconf.offloads = rx_off;
            // SAFETY: configured port, queue index below the configured count,
            // a live mempool that outlives the port (the daemon drops ports first).
            let rc = unsafe {
                dpdk_sys::rte_eth_rx_queue_setup(id, q, nrx, socket, &rxconf, pool.as_ptr())
            };
            if rc != 0 {
                return Err(dpdk_err(name, "rte_eth_rx_queue_setup", rc));
            }
        }
        for q in 0..setup.tx_queues {
            let mut txconf = info.default_txconf;
            txconf.offloads = tx_off;
            // SAFETY: configured port, queue index below the configured count.
            let rc = unsafe { dpdk_sys::rte_eth_tx_queue_setup(id, q, ntx, socket, &txconf) };
            if rc != 0 {
                return Err(dpdk_err(name, "rte_eth_tx_queue_setup", rc));
            }
        }
        if let Some(mtu) = setup.mtu {
            // SAFETY: valid configured port.
            let rc = unsafe { dpdk_sys::rte_eth_dev_set_mtu(id, mtu) };
            if rc != 0 {
                return Err(dpdk_err(name, "rte_eth_dev_set_mtu", rc));
            }
        }
        // SAFETY: rte_ether_addr is 6 plain bytes; the call fills it.
        let mut mac: dpdk_sys::rte_ether_addr = unsafe { std::mem::zeroed() };
        // SAFETY: valid port id, writable out-pointer.
        let rc = unsafe { dpdk_sys::rte_eth_macaddr_get(id, &mut mac) };
        if rc != 0 {
            return Err(dpdk_err(name, "rte_eth_macaddr_get", rc));
        }
        // SAFETY: every queue is set up.
        let rc = unsafe { dpdk_sys::rte_eth_dev_start(id) };
        if rc != 0 {
            return Err(dpdk_err(name, "rte_eth_dev_start", rc));
        }
        if setup.promiscuous {
            // SAFETY: started port. Some virtual devices (net_null) do not
            // implement it; that is not an error for them (always promiscuous).
            let rc = unsafe { dpdk_sys::rte_eth_promiscuous_enable(id) };
            if rc != 0 && rc != -(libc::ENOTSUP) {
                return Err(dpdk_err(name, "rte_eth_promiscuous_enable", rc));
            }
        }
        Ok(Port {
            id,
            name: name.to_string(),
            mac: mac.addr_bytes,
            rx_queues: setup.rx_queues,
            tx_queues: setup.tx_queues,
            rss,
            started: true,
            rx_taken: vec![false; usize::from(setup.rx_queues)],
            tx_taken: vec![false; usize::from(setup.tx_queues)],
        })
    }

    pub fn id(&self) -> u16 {
        self.id
    }
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn mac(&self) -> [u8; 6] {
        self.mac
    }
    pub fn rx_queue_count(&self) -> u16 {
        self.rx_queues
    }
    pub fn tx_queue_count(&self) -> u16 {
        self.tx_queues
    }
    /// Whether RSS spreads traffic over the RX queues.
    pub fn rss(&self) -> bool {
        self.rss
    }

    /// The RX queue handle `q`; each queue is handed out once.
    pub fn rx_queue(&mut self, q: u16) -> Option<RxQueue> {
        let slot = self.rx_taken.get_mut(usize::from(q))?;
        if std::mem::replace(slot, true) {
            return None;
        }
        Some(RxQueue {
            port: self.id,
            queue: q,
            _not_sync: PhantomData,
        })
    }

    /// The TX queue handle `q`; each queue is handed out once.
    pub fn tx_queue(&mut self, q: u16) -> Option<TxQueue> {
        let slot = self.tx_taken.get_mut(usize::from(q))?;
        if std::mem::replace(slot, true) {
            return None;
        }
        Some(TxQueue {
            port: self.id,
            queue: q,
            _not_sync: PhantomData,
        })
    }

    /// Current link state (does not wait).
    pub fn link(&self) -> Link {
        link(self.id)
    }

    /// Driver counters.
    pub fn hw_stats(&self) -> PortHwStats {
        hw_stats(self.id)
    }

    /// Extended driver counters (name, value).
    pub fn xstats(&self) -> Vec<(String, u64)> {
        xstats(self.id)
    }

    /// Stops the port (queues must no longer be polled). Idempotent.
    pub fn stop(&mut self) {
        if self.started {
            // SAFETY: the port was started; the daemon joins every worker
            // before stopping ports, so no queue is being polled.
            unsafe {
                dpdk_sys::rte_eth_dev_stop(self.id);
            }
            self.started = false;
        }
    }
}

impl Drop for Port {
    fn drop(&mut self) {
        self.stop();
        // SAFETY: stopped port; closing releases its queues and returns the
        // mbufs held in its rings to the pool (which outlives the port).
        unsafe {
            dpdk_sys::rte_eth_dev_close(self.id);
        }
    }
}

/// Link state of any port id (the stats reader uses ids, not `Port`s).
pub fn link(id: u16) -> Link {
    // SAFETY: rte_eth_link is plain data; the call fills it (an invalid id
    // leaves it zeroed = down).
    unsafe {
        let mut l: dpdk_sys::rte_eth_link = std::mem::zeroed();
        dpdk_sys::rte_eth_link_get_nowait(id, &mut l);
        Link {
            up: l.link_status() != 0,
            speed_mbps: l.link_speed,
            full_duplex: l.link_duplex() != 0,
        }
    }
}

/// Carrier of port `id`, or `None` when the driver cannot know it. A
/// `net_tap` port reads its kernel interface's flags by name in the
/// daemon's network namespace; once that interface has been moved to
/// another namespace the read fails and the PMD says "down" while traffic
/// flows, so for a tap whose interface (`tap_iface`) is not in this
/// namespace the carrier is unknown.
pub fn carrier(id: u16, tap_iface: Option<&str>) -> Option<bool> {
    if let Some(name) = tap_iface {
        let Ok(c) = std::ffi::CString::new(name) else {
            return None;
        };
        // SAFETY: `c` is a valid NUL-terminated string for the call.
        if unsafe { libc::if_nametoindex(c.as_ptr()) } == 0 {
            return None;
        }
    }
    Some(link(id).up)
}

/// Driver counters of any port id.
pub fn hw_stats(id: u16) -> PortHwStats {
    // SAFETY: rte_eth_stats is plain data; the call fills it (left zeroed on
    // an invalid id). Reading stats is safe concurrently with the data path.
    unsafe {
        let mut s: dpdk_sys::rte_eth_stats = std::mem::zeroed();
        dpdk_sys::rte_eth_stats_get(id, &mut s);
        PortHwStats {
            ipackets: s.ipackets,
            opackets: s.opackets,
            ibytes: s.ibytes,
            obytes: s.obytes,
            imissed: s.imissed,
            ierrors: s.ierrors,
            oerrors: s.oerrors,
            rx_nombuf: s.rx_nombuf,
        }
    }
}

/// Extended counters of any port id.
pub fn xstats(id: u16) -> Vec<(String, u64)> {
    // SAFETY: first call with null/0 returns the count; the second fills
    // arrays of exactly that size that we own.
    unsafe {
        let n = dpdk_sys::rte_eth_xstats_get_names(id, std::ptr::null_mut(), 0);
        if n <= 0 {
            return Vec::new();
        }
        let n = n as usize;
        let mut names = vec![std::mem::zeroed::<dpdk_sys::rte_eth_xstat_name>(); n];
        let mut vals = vec![std::mem::zeroed::<dpdk_sys::rte_eth_xstat>(); n];
        let got_names = dpdk_sys::rte_eth_xstats_get_names(id, names.as_mut_ptr(), n as u32);
        let got = dpdk_sys::rte_eth_xstats_get(id, vals.as_mut_ptr(), n as u32);
        if got_names <= 0 || got <= 0 {
            return Vec::new();
        }
        vals.iter()
            .take(got as usize)
            .filter_map(|v| {
                let nm = names.get(usize::try_from(v.id).ok()?)?;
                let s = CStr::from_ptr(nm.name.as_ptr())
                    .to_string_lossy()
                    .into_owned();
                Some((s, v.value))
            })
            .collect()
    }
}

/// The single owner of one RX queue: `Send` (moves to its worker) but not
/// `Sync` (DPDK queues are not thread-safe).
#[derive(Debug)]
pub struct RxQueue {
    port: u16,
    queue: u16,
    _not_sync: PhantomData<Cell<()>>,
}

/// The single owner of one TX queue; see [`RxQueue`].
#[derive(Debug)]
pub struct TxQueue {
    port: u16,
    queue: u16,
    _not_sync: PhantomData<Cell<()>>,
}

static_assertions::assert_impl_all!(RxQueue: Send);
static_assertions::assert_not_impl_any!(RxQueue: Sync, Clone);
static_assertions::assert_impl_all!(TxQueue: Send);
static_assertions::assert_not_impl_any!(TxQueue: Sync, Clone);

impl RxQueue {
    pub fn port(&self) -> u16 {
        self.port
    }
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// Receives up to [`super::mbuf::BURST`] packets into `burst`
    /// (which must be empty: the previous burst fully consumed or dropped).
    #[inline(always)]
    pub fn rx<'b>(&mut self, burst: &'b mut RxBurst) -> Received<'b> {
        debug_assert!(burst.is_empty());
        let slots = burst.raw_slots();
        // SAFETY: we are the only owner of this queue (!Sync, handed out once)
        // on a started port; `slots` has room for BURST pointers, and every
        // pointer written is a fresh mbuf now owned by `burst`.
        let n = unsafe {
            dpdk_sys::rte_eth_rx_burst(
                self.port,
                self.queue,
                slots.as_mut_ptr(),
                super::mbuf::BURST as u16,
            )
        };
        // SAFETY: rx_burst wrote `n` (<= BURST) fresh mbufs into the first
        // slots of the empty burst.
        unsafe { burst.filled(usize::from(n)) }
    }
}

impl TxQueue {
    pub fn port(&self) -> u16 {
        self.port
    }
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// Hands `pkts` to the driver; returns how many it took (those are the
    /// driver's now; the caller still owns the rest).
    #[inline(always)]
    pub(crate) fn send_raw(&mut self, pkts: &mut [*mut dpdk_sys::rte_mbuf]) -> usize {
        let n = u16::try_from(pkts.len()).unwrap_or(u16::MAX);
        // SAFETY: single owner of this queue on a started port; `pkts` holds
        // `n` valid mbufs owned by the caller.
        usize::from(unsafe {
            dpdk_sys::rte_eth_tx_burst(self.port, self.queue, pkts.as_mut_ptr(), n)
        })
    }
}
