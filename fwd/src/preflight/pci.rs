//! PCI ports: the device is there, bound to the driver DPDK drives it
//! through, and that driver's prerequisites hold. Intel (and other)
//! NICs: `vfio-pci`, loaded, with an IOMMU (or the unsafe no-IOMMU mode).
//! NVIDIA/Mellanox (vendor 0x15b3): the kernel's `mlx5_core` stays bound
//! (the PMD is bifurcated) and needs rdma-core's `libibverbs`/`libmlx5` and
//! the verbs modules.

use super::{Finding, SysView};
use crate::config::{Attach, Config};

const DRIVER: &str = "driver";
const VFIO: &str = "vfio";
const MLX5: &str = "mlx5";
const MELLANOX: &str = "0x15b3";

/// `03:00.0` → `0000:03:00.0` (sysfs names carry the domain), lowercase.
pub(super) fn full_address(a: &str) -> String {
    let a = a.to_ascii_lowercase();
    if a.matches(':').count() == 1 {
        format!("0000:{a}")
    } else {
        a
    }
}

/// Directories holding shared libraries (Debian multiarch first).
const LIB_DIRS: [&str; 6] = [
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/lib/x86_64-linux-gnu",
    "/lib64",
];

fn has_lib(sys: &SysView, name: &str) -> bool {
    LIB_DIRS.iter().any(|d| sys.exists(format!("{d}/{name}")))
}

pub(super) fn check(cfg: &Config, sys: &SysView) -> Vec<Finding> {
    let mut v = Vec::new();
    let mut vfio_ports = Vec::new();
    let mut mlx5_ports = Vec::new();
    for (i, p) in cfg.ports.iter().enumerate() {
        if p.attach() != Attach::Pci {
            continue;
        }
        let addr = full_address(p.dev_name());
        let dev = format!("/sys/bus/pci/devices/{addr}");
        if !sys.exists(&dev) {
            v.push(Finding::fail(
                DRIVER,
                format!("port {}: no PCI device {addr} on this machine", p.name),
                format!(
                    "set ports[{i}].device to one of the NICs `dpdk-devbind.py --status` \
                     (or `lspci -D | grep -i ether`) lists"
                ),
            ));
            continue;
        }
        let driver = sys.link_name(format!("{dev}/driver"));
        let ifaces = sys.list(format!("{dev}/net"));
        let down = if ifaces.is_empty() {
            String::new()
        } else {
            format!("ip link set {} down; ", ifaces.join(" down; ip link set "))
        };
        let mellanox = sys.read_trim(format!("{dev}/vendor")).as_deref() == Some(MELLANOX);
        let d = driver.as_deref().unwrap_or("");
        if mellanox {
            mlx5_ports.push(p.name.clone());
            if d == "mlx5_core" {
                v.push(Finding::ok(
                    DRIVER,
                    format!("port {}: {addr} (NVIDIA/Mellanox) on mlx5_core", p.name),
                ));
            } else {
                v.push(Finding::fail(
                    DRIVER,
                    format!(
                        "port {}: {addr} is an NVIDIA/Mellanox NIC bound to {}; its DPDK driver \
                         works through the kernel's mlx5_core (not vfio-pci)",
                        p.name,
                        driver.as_deref().unwrap_or("no driver")
                    ),
                    format!("modprobe mlx5_core && dpdk-devbind.py -b mlx5_core {addr}"),
                ));
            }
            continue;
        }
        vfio_ports.push(p.name.clone());
        match d {
            "vfio-pci" => v.push(Finding::ok(
                DRIVER,
                format!("port {}: {addr} on vfio-pci", p.name),
            )),
            "uio_pci_generic" | "igb_uio" => v.push(Finding::warn(
                DRIVER,
                format!(
                    "port {}: {addr} on {d}: DPDK runs, but the NIC can DMA anywhere in memory \
                     (no IOMMU isolation)",
                    p.name
                ),
                format!("modprobe vfio-pci && dpdk-devbind.py -b vfio-pci {addr}"),
            )),
            "" => v.push(Finding::fail(
                DRIVER,
                format!("port {}: {addr} is bound to no driver", p.name),
                format!("modprobe vfio-pci && dpdk-devbind.py -b vfio-pci {addr}"),
            )),
            other => v.push(Finding::fail(
                DRIVER,
                format!(
                    "port {}: {addr} is bound to the kernel driver {other}{}; DPDK cannot drive it",
                    p.name,
                    if ifaces.is_empty() {
                        String::new()
                    } else {
                        format!(" (interface {})", ifaces.join(", "))
                    }
                ),
                format!("{down}modprobe vfio-pci && dpdk-devbind.py -b vfio-pci {addr}"),
            )),
        }
    }
    if !vfio_ports.is_empty() {
        v.extend(vfio_prerequisites(sys, &vfio_ports.join(", ")));
    }
    if !mlx5_ports.is_empty() {
        v.extend(mlx5_prerequisites(sys, &mlx5_ports.join(", ")));
    }
    v
}

fn vfio_prerequisites(sys: &SysView, ports: &str) -> Vec<Finding> {
    let mut v = Vec::new();
    if sys.exists("/sys/module/vfio_pci") || sys.exists("/sys/bus/pci/drivers/vfio-pci") {
        v.push(Finding::ok(VFIO, "the vfio-pci module is loaded"));
    } else {
        v.push(Finding::fail(
            VFIO,
            format!("the vfio-pci module is not loaded (ports {ports} need it)"),
            "modprobe vfio-pci; and at boot: echo vfio-pci > /etc/modules-load.d/vfio-pci.conf",
        ));
    }
    let groups = sys.list("/sys/kernel/iommu_groups").len();
    let noiommu = sys
        .read_trim("/sys/module/vfio/parameters/enable_unsafe_noiommu_mode")
        .is_some_and(|s| s == "Y" || s == "1");
    let enable = "enable VT-d (AMD-Vi) in the firmware and add `intel_iommu=on iommu=pt` \
                  (AMD: `amd_iommu=on iommu=pt`) to GRUB_CMDLINE_LINUX in /etc/default/grub, \
                  then update-grub and reboot";
    if groups > 0 {
        v.push(Finding::ok(
            VFIO,
            format!("the IOMMU is on ({groups} IOMMU groups)"),
        ));
    } else if noiommu {
        v.push(Finding::warn(
            VFIO,
            "no IOMMU: vfio runs in the unsafe no-IOMMU mode (the NIC can DMA anywhere)",
            enable,
        ));
    } else {
        v.push(Finding::fail(
            VFIO,
            format!("no IOMMU groups: vfio-pci cannot hand ports {ports} to DPDK"),
            format!(
                "{enable}\nwithout an IOMMU (no DMA isolation): \
                 echo 1 > /sys/module/vfio/parameters/enable_unsafe_noiommu_mode"
            ),
        ));
    }
    v
}

fn mlx5_prerequisites(sys: &SysView, ports: &str) -> Vec<Finding> {
    let mut v = Vec::new();
    let missing: Vec<&str> = ["libibverbs.so.1", "libmlx5.so.1"]
        .into_iter()
        .filter(|l| !has_lib(sys, l))
        .collect();
    if missing.is_empty() {
        v.push(Finding::ok(
            MLX5,
            "rdma-core: libibverbs and libmlx5 are installed",
        ));
    } else {
        v.push(Finding::fail(
            MLX5,
            format!(
                "rdma-core is missing {} (ports {ports} need it)",
                missing.join(" and ")
            ),
            "apt-get install rdma-core ibverbs-providers libibverbs1 (RHEL: dnf install rdma-core libibverbs)",
        ));
    }
    let modules: Vec<&str> = ["mlx5_core", "mlx5_ib", "ib_uverbs"]
        .into_iter()
        .filter(|m| !sys.exists(format!("/sys/module/{m}")))
        .collect();
    if modules.is_empty() {
        v.push(Finding::ok(
            MLX5,
            "mlx5_core, mlx5_ib and ib_uverbs are loaded",
        ));
    } else {
        v.push(Finding::fail(
            MLX5,
            format!(
                "kernel module(s) {} not loaded (ports {ports} need them)",
                modules.join(", ")
            ),
            format!("modprobe -a {}", modules.join(" ")),
        ));
    }
    v
}
