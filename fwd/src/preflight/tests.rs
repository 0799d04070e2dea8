//! Every check against fixture trees: a pass and each failure.

use std::path::{Path, PathBuf};

use super::*;

/// A fake root (`/proc`, `/sys`, ...) in a temp dir, removed on drop.
struct Tree(PathBuf);

impl Tree {
    fn new(tag: &str) -> Tree {
        let p = std::env::temp_dir().join(format!("fwd-preflight-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Tree(p)
    }
    fn file(&self, abs: &str, text: &str) -> &Tree {
        let p = self.sys().path(abs);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
        self
    }
    fn dir(&self, abs: &str) -> &Tree {
        std::fs::create_dir_all(self.sys().path(abs)).unwrap();
        self
    }
    fn link(&self, abs: &str, target: &str) -> &Tree {
        let p = self.sys().path(abs);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, p).unwrap();
        self
    }
    fn sys(&self) -> SysView {
        SysView::at(&self.0)
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn cfg(yaml: &str) -> Config {
    Config::parse(yaml, "test").unwrap()
}

const VDEV: &str = "eal: {main_lcore: 0, memory_mb: 256}
ports:
  - {name: a, device: net_null0}
workers:
  - {lcore: 1, rx: [{port: a}]}
";

const HUGE_VDEV: &str = "eal: {main_lcore: 0, hugepages: true, memory_mb: 1024}
ports:
  - {name: a, device: net_null0}
workers:
  - {lcore: 1, rx: [{port: a}]}
";

const PCI: &str = "eal: {main_lcore: 0, memory_mb: 256}
ports:
  - {name: wan, device: '0000:03:00.0'}
  - {name: lan, device: '03:00.1'}
workers:
  - {lcore: 1, cpu: 2, rx: [{port: wan}, {port: lan}]}
";

fn only<'a>(v: &'a [Finding], check: &str) -> Vec<&'a Finding> {
    v.iter().filter(|f| f.check == check).collect()
}

fn statuses(v: &[&Finding]) -> Vec<Status> {
    v.iter().map(|f| f.status).collect()
}

#[test]
fn hugepages_are_not_needed_with_no_huge() {
    let t = Tree::new("nohuge");
    let f = hugepages::check(&cfg(VDEV), &t.sys());
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].status, Status::Ok);
    assert!(f[0].message.contains("--no-huge"));
}

#[test]
fn hugepages_reserved_free_and_mounted() {
    let c = cfg(HUGE_VDEV);
    // Nothing reserved: FAIL, with the command that reserves enough.
    let t = Tree::new("huge");
    t.file(
        "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages",
        "0\n",
    )
    .file(
        "/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages",
        "0\n",
    )
    .file("/proc/mounts", "proc /proc proc rw 0 0\n");
    let f = hugepages::check(&c, &t.sys());
    assert_eq!(
        statuses(&f.iter().collect::<Vec<_>>()),
        [Status::Fail, Status::Warn]
    );
    let fix = f[0].fix.as_deref().unwrap();
    assert!(
        fix.contains("> /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"),
        "{fix}"
    );
    let n: u64 = fix.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(n * 2 >= 1024, "{n} pages of 2 MiB cover 1024 MiB");
    assert!(f[1].fix.as_deref().unwrap().contains("mount -t hugetlbfs"));

    // Reserved but mostly taken: FAIL naming what is free.
    t.file(
        "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages",
        "1024\n",
    )
    .file(
        "/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages",
        "100\n",
    )
    .file(
        "/proc/mounts",
        "proc /proc proc rw 0 0\nhugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n",
    );
    let f = hugepages::check(&c, &t.sys());
    assert_eq!(
        statuses(&f.iter().collect::<Vec<_>>()),
        [Status::Fail, Status::Ok]
    );
    assert!(f[0].message.contains("200 MiB"), "{}", f[0].message);

    // Enough free (1 GiB pages count too).
    t.file(
        "/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages",
        "256\n",
    )
    .file(
        "/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages",
        "1\n",
    )
    .file(
        "/sys/kernel/mm/hugepages/hugepages-1048576kB/free_hugepages",
        "1\n",
    );
    let f = hugepages::check(&c, &t.sys());
    assert_eq!(
        statuses(&f.iter().collect::<Vec<_>>()),
        [Status::Ok, Status::Ok]
    );
}

#[test]
fn hugepages_fall_back_to_meminfo() {
    let c = cfg(HUGE_VDEV);
    let t = Tree::new("meminfo");
    t.file(
        "/proc/meminfo",
        "MemTotal:       16000000 kB\nHugePages_Total:     600\nHugePages_Free:      600\n\
         Hugepagesize:       2048 kB\n",
    )
    .file("/proc/mounts", "nodev /dev/hugepages hugetlbfs rw 0 0\n");
    let f = hugepages::check(&c, &t.sys());
    assert_eq!(f[0].status, Status::Ok, "{f:?}");
    t.file(
        "/proc/meminfo",
        "HugePages_Total:     600\nHugePages_Free:      10\nHugepagesize:       2048 kB\n",
    );
    assert_eq!(hugepages::check(&c, &t.sys())[0].status, Status::Fail);
}

/// Two Intel ports on vfio-pci, the module loaded, an IOMMU.
fn intel_tree(tag: &str) -> Tree {
    let t = Tree::new(tag);
    for f in ["0", "1"] {
        let dev = format!("/sys/bus/pci/devices/0000:03:00.{f}");
        t.file(&format!("{dev}/vendor"), "0x8086\n")
            .file(&format!("{dev}/numa_node"), "0\n")
            .link(
                &format!("{dev}/driver"),
                "../../../bus/pci/drivers/vfio-pci",
            );
    }
    t.dir("/sys/module/vfio_pci")
        .dir("/sys/kernel/iommu_groups/0")
        .dir("/sys/kernel/iommu_groups/1")
        .file("/sys/devices/system/node/node0/cpulist", "0-7\n");
    t
}

#[test]
fn vfio_ports_pass_when_bound_with_iommu() {
    let t = intel_tree("vfio-ok");
    let f = pci::check(&cfg(PCI), &t.sys());
    assert!(f.iter().all(|x| x.status == Status::Ok), "{f:#?}");
    assert_eq!(only(&f, "driver").len(), 2);
    assert_eq!(only(&f, "vfio").len(), 2);
}

#[test]
fn a_port_on_its_kernel_driver_fails_with_the_devbind_command() {
    let t = intel_tree("vfio-kernel");
    let dev = "/sys/bus/pci/devices/0000:03:00.0";
    std::fs::remove_file(t.sys().path(format!("{dev}/driver"))).unwrap();
    t.link(&format!("{dev}/driver"), "../../../bus/pci/drivers/ixgbe")
        .dir(&format!("{dev}/net/enp3s0f0"));
    let f = pci::check(&cfg(PCI), &t.sys());
    let d = only(&f, "driver");
    assert_eq!(statuses(&d), [Status::Fail, Status::Ok]);
    assert!(d[0].message.contains("ixgbe") && d[0].message.contains("enp3s0f0"));
    let fix = d[0].fix.as_deref().unwrap();
    assert!(fix.contains("ip link set enp3s0f0 down"), "{fix}");
    assert!(
        fix.contains("dpdk-devbind.py -b vfio-pci 0000:03:00.0"),
        "{fix}"
    );

    // Unbound.
    std::fs::remove_file(t.sys().path(format!("{dev}/driver"))).unwrap();
    let f = pci::check(&cfg(PCI), &t.sys());
    let d = only(&f, "driver");
    assert_eq!(d[0].status, Status::Fail);
    assert!(d[0].message.contains("no driver"));

    // uio: runs, but warned.
    t.link(
        &format!("{dev}/driver"),
        "../../../bus/pci/drivers/uio_pci_generic",
    );
    let f = pci::check(&cfg(PCI), &t.sys());
    assert_eq!(only(&f, "driver")[0].status, Status::Warn);
}

#[test]
fn a_missing_device_fails() {
    let t = intel_tree("vfio-missing");
    std::fs::remove_dir_all(t.sys().path("/sys/bus/pci/devices/0000:03:00.1")).unwrap();
    let f = pci::check(&cfg(PCI), &t.sys());
    let d = only(&f, "driver");
    assert_eq!(statuses(&d), [Status::Ok, Status::Fail]);
    assert!(d[1].message.contains("0000:03:00.1"));
    assert!(d[1].fix.as_deref().unwrap().contains("ports[1].device"));
}

#[test]
fn vfio_needs_its_module_and_an_iommu() {
    let t = intel_tree("vfio-prereq");
    std::fs::remove_dir_all(t.sys().path("/sys/module/vfio_pci")).unwrap();
    std::fs::remove_dir_all(t.sys().path("/sys/kernel/iommu_groups")).unwrap();
    let f = pci::check(&cfg(PCI), &t.sys());
    let v = only(&f, "vfio");
    assert_eq!(statuses(&v), [Status::Fail, Status::Fail]);
    assert!(v[0]
        .fix
        .as_deref()
        .unwrap()
        .starts_with("modprobe vfio-pci"));
    let fix = v[1].fix.as_deref().unwrap();
    assert!(fix.contains("intel_iommu=on") && fix.contains("enable_unsafe_noiommu_mode"));

    // No IOMMU but the unsafe mode on: a warning.
    t.dir("/sys/module/vfio_pci").file(
        "/sys/module/vfio/parameters/enable_unsafe_noiommu_mode",
        "Y\n",
    );
    let f = pci::check(&cfg(PCI), &t.sys());
    assert_eq!(statuses(&only(&f, "vfio")), [Status::Ok, Status::Warn]);
}

fn mellanox_tree(tag: &str, driver: &str) -> Tree {
    let t = Tree::new(tag);
    for f in ["0", "1"] {
        let dev = format!("/sys/bus/pci/devices/0000:03:00.{f}");
        t.file(&format!("{dev}/vendor"), "0x15b3\n").link(
            &format!("{dev}/driver"),
            &format!("../../../bus/pci/drivers/{driver}"),
        );
    }
    for m in ["mlx5_core", "mlx5_ib", "ib_uverbs"] {
        t.dir(&format!("/sys/module/{m}"));
    }
    t.file("/usr/lib/x86_64-linux-gnu/libibverbs.so.1", "")
        .file("/usr/lib/x86_64-linux-gnu/libmlx5.so.1", "");
    t
}

#[test]
fn mlx5_ports_need_mlx5_core_and_rdma_core() {
    let t = mellanox_tree("mlx5-ok", "mlx5_core");
    let f = pci::check(&cfg(PCI), &t.sys());
    assert!(f.iter().all(|x| x.status == Status::Ok), "{f:#?}");
    assert!(only(&f, "vfio").is_empty(), "mlx5 needs no vfio");
    assert_eq!(only(&f, "mlx5").len(), 2);

    std::fs::remove_file(t.sys().path("/usr/lib/x86_64-linux-gnu/libmlx5.so.1")).unwrap();
    std::fs::remove_dir_all(t.sys().path("/sys/module/ib_uverbs")).unwrap();
    let f = pci::check(&cfg(PCI), &t.sys());
    let m = only(&f, "mlx5");
    assert_eq!(statuses(&m), [Status::Fail, Status::Fail]);
    assert!(m[0].message.contains("libmlx5") && !m[0].message.contains("libibverbs"));
    assert!(m[0].fix.as_deref().unwrap().contains("rdma-core"));
    assert_eq!(m[1].fix.as_deref(), Some("modprobe -a ib_uverbs"));

    let t = mellanox_tree("mlx5-vfio", "vfio-pci");
    let f = pci::check(&cfg(PCI), &t.sys());
    let d = only(&f, "driver");
    assert_eq!(statuses(&d), [Status::Fail, Status::Fail]);
    assert!(d[0]
        .fix
        .as_deref()
        .unwrap()
        .contains("dpdk-devbind.py -b mlx5_core 0000:03:00.0"));
}

#[test]
fn worker_cpus_isolated_or_warned() {
    let c = cfg(PCI); // worker on CPU 2
    let t = intel_tree("cpus");
    t.file("/sys/devices/system/cpu/isolated", "\n").file(
        "/proc/cmdline",
        "BOOT_IMAGE=/vmlinuz root=/dev/sda1 quiet\n",
    );
    let f = cpus::check(&c, &t.sys());
    let i = only(&f, "cpus");
    assert_eq!(statuses(&i), [Status::Warn]);
    assert!(i[0]
        .fix
        .as_deref()
        .unwrap()
        .contains("isolcpus=2 nohz_full=2"));

    t.file("/sys/devices/system/cpu/isolated", "2-3\n");
    assert_eq!(
        statuses(&only(&cpus::check(&c, &t.sys()), "cpus")),
        [Status::Ok]
    );

    // From the command line, flags skipped.
    t.file("/sys/devices/system/cpu/isolated", "\n").file(
        "/proc/cmdline",
        "root=/dev/sda1 isolcpus=managed_irq,domain,1-3\n",
    );
    assert_eq!(
        statuses(&only(&cpus::check(&c, &t.sys()), "cpus")),
        [Status::Ok]
    );
    t.file("/proc/cmdline", "root=/dev/sda1 nohz_full=2\n");
    assert_eq!(
        statuses(&only(&cpus::check(&c, &t.sys()), "cpus")),
        [Status::Ok]
    );
}

#[test]
fn worker_cpus_shared_with_others_are_warned() {
    let t = Tree::new("shared");
    t.file("/sys/devices/system/cpu/isolated", "1-7\n");
    let own = cfg("eal: {main_lcore: 0}
ports:
  - {name: a, device: net_null0, rx_queues: 2}
workers:
  - {lcore: 1, rx: [{port: a}]}
  - {lcore: 2, cpu: 3, rx: [{port: a, queue: 1}]}
control: {cpu: 4}
");
    assert_eq!(
        statuses(&only(&cpus::check(&own, &t.sys()), "cpus")),
        [Status::Ok]
    );
    let shared = cfg("eal: {main_lcore: 0}
ports:
  - {name: a, device: net_null0, rx_queues: 2}
workers:
  - {lcore: 1, rx: [{port: a}]}
  - {lcore: 2, cpu: 1, rx: [{port: a, queue: 1}]}
control: {cpu: 1}
");
    let f = cpus::check(&shared, &t.sys());
    let c = only(&f, "cpus");
    assert_eq!(statuses(&c), [Status::Ok, Status::Warn], "{c:#?}");
    assert!(c[1]
        .message
        .contains("workers[0] shares CPU 1 with control.cpu, workers[1]"));
}

#[test]
fn workers_off_their_nics_numa_node_are_warned() {
    let c = cfg(PCI); // worker on CPU 2 polls both ports
    let t = intel_tree("numa");
    let f = cpus::check(&c, &t.sys());
    assert_eq!(statuses(&only(&f, "numa")), [Status::Ok, Status::Ok]);

    t.file("/sys/bus/pci/devices/0000:03:00.1/numa_node", "1\n")
        .file("/sys/devices/system/node/node1/cpulist", "8-15\n");
    let f = cpus::check(&c, &t.sys());
    let n = only(&f, "numa");
    assert_eq!(statuses(&n), [Status::Ok, Status::Warn]);
    assert!(
        n[1].message.contains("workers[0] (CPU 2)"),
        "{}",
        n[1].message
    );
    assert!(n[1].fix.as_deref().unwrap().contains("8-15"));

    // No NUMA information: nothing to warn about.
    t.file("/sys/bus/pci/devices/0000:03:00.1/numa_node", "-1\n");
    let f = cpus::check(&c, &t.sys());
    assert_eq!(statuses(&only(&f, "numa")), [Status::Ok, Status::Ok]);
}

fn with_prefix(sock: &Path) -> Config {
    cfg(&format!(
        "eal: {{main_lcore: 0, memory_mb: 256, file_prefix: p1}}
ports:
  - {{name: a, device: net_null0}}
workers:
  - {{lcore: 1, rx: [{{port: a}}]}}
control: {{socket: {}}}
",
        sock.display()
    ))
}

#[test]
fn a_locked_eal_prefix_fails_a_stale_one_passes() {
    let t = Tree::new("prefix");
    let c = with_prefix(Path::new("/run/fwd/fwd.sock"));
    let mut sys = t.sys();
    sys.runtime_directory = Some(PathBuf::from("/run/fwd"));
    let f = prefix::check(&c, &sys);
    assert_eq!(statuses(&only(&f, "prefix")), [Status::Ok]);

    t.file("/run/fwd/dpdk/p1/config", "x");
    let f = prefix::check(&c, &sys);
    let p = only(&f, "prefix");
    assert_eq!(statuses(&p), [Status::Ok]);
    assert!(p[0].message.contains("unlocked"));

    // A lock on part of the file, as DPDK takes it (an OFD lock here, so
    // this process can hold it and still see it as someone else's).
    let held = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(sys.path("/run/fwd/dpdk/p1/config"))
        .unwrap();
    let fl = libc::flock {
        l_type: libc::F_WRLCK as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: 1,
        l_len: 1,
        l_pid: 0,
    };
    use std::os::fd::AsRawFd;
    nix::fcntl::fcntl(held.as_raw_fd(), nix::fcntl::FcntlArg::F_OFD_SETLK(&fl)).unwrap();
    let f = prefix::check(&c, &sys);
    let p = only(&f, "prefix");
    assert_eq!(statuses(&p), [Status::Fail]);
    assert!(p[0].fix.as_deref().unwrap().contains("eal.file_prefix"));
    drop(held);
    assert_eq!(
        statuses(&only(&prefix::check(&c, &sys), "prefix")),
        [Status::Ok]
    );

    // A FIFO planted at the name is reported, not waited on.
    std::fs::remove_file(sys.path("/run/fwd/dpdk/p1/config")).unwrap();
    nix::unistd::mkfifo(
        &sys.path("/run/fwd/dpdk/p1/config"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    assert_eq!(
        statuses(&only(&prefix::check(&c, &sys), "prefix")),
        [Status::Warn]
    );

    // DPDK's own default place when RUNTIME_DIRECTORY is unset (root).
    let sys = t.sys();
    t.file("/var/run/dpdk/p1/config", "x");
    assert!(only(&prefix::check(&c, &sys), "prefix")[0]
        .message
        .contains("/var/run/dpdk/p1/config"));
}

#[test]
fn a_control_socket_in_use_fails_a_stale_one_passes() {
    let t = Tree::new("sock");
    let c = with_prefix(Path::new("/run/fwd/fwd.sock"));
    let sys = t.sys();
    assert_eq!(
        statuses(&only(&prefix::check(&c, &sys), "socket")),
        [Status::Ok]
    );

    t.dir("/run/fwd");
    let listener = std::os::unix::net::UnixListener::bind(sys.path("/run/fwd/fwd.sock")).unwrap();
    let f = prefix::check(&c, &sys);
    let s = only(&f, "socket");
    assert_eq!(statuses(&s), [Status::Fail]);
    assert!(s[0].message.contains("running daemon"));
    // Closed, the file stays behind: stale.
    drop(listener);
    let f = prefix::check(&c, &sys);
    let s = only(&f, "socket");
    assert_eq!(statuses(&s), [Status::Ok]);
    assert!(s[0].message.contains("stale"));

    std::fs::remove_file(sys.path("/run/fwd/fwd.sock")).unwrap();
    t.file("/run/fwd/fwd.sock", "not a socket");
    assert_eq!(
        statuses(&only(&prefix::check(&c, &sys), "socket")),
        [Status::Fail]
    );
}

#[test]
fn the_report_fails_on_any_failure_only() {
    let p = Path::new("x.yaml");
    let warn_only = Report::new(
        p,
        vec![
            Finding::ok("config", "ok"),
            Finding::warn("cpus", "not isolated", "isolcpus=1"),
        ],
    );
    assert_eq!(warn_only.exit_code(), 0);
    assert_eq!((warn_only.failures, warn_only.warnings), (0, 1));
    let failed = Report::new(
        p,
        vec![
            Finding::ok("config", "ok"),
            Finding::fail("hugepages", "none", "echo 512 > nr\nat boot: x"),
        ],
    );
    assert_eq!(failed.exit_code(), 1);
    let text = failed.text();
    assert!(text.contains("FAIL  hugepages  none"), "{text}");
    assert!(text.contains("fix: echo 512 > nr"), "{text}");
    assert!(text.contains("1 failure(s)"), "{text}");
    let json: serde_json::Value = serde_json::to_value(&failed).unwrap();
    assert_eq!(json["findings"][1]["status"], "FAIL");
    assert_eq!(json["failures"], 1);
}

#[test]
fn an_invalid_config_is_one_failure() {
    let t = Tree::new("badcfg");
    let path = t.0.join("bad.yaml");
    std::fs::write(&path, "ports: []\n").unwrap();
    let r = run(&path, &t.sys());
    assert_eq!(r.exit_code(), 1);
    assert_eq!(r.findings.len(), 1);
    assert_eq!(r.findings[0].check, "config");
    assert!(r.findings[0]
        .fix
        .as_deref()
        .unwrap()
        .contains("fwd --check"));
}

#[test]
fn a_vdev_config_on_a_bare_tree_has_no_failure() {
    // What the demo config (deploy/run.sh) meets on a machine without NICs
    // or hugepages: warnings at most.
    let t = Tree::new("demo");
    let path = t.0.join("fwd.yaml");
    std::fs::write(&path, VDEV).unwrap();
    let r = run(&path, &t.sys());
    assert_eq!(r.failures, 0, "{}", r.text());
}

#[test]
fn the_tables_heap_on_transparent_huge_pages_or_warned() {
    let thp = "/sys/kernel/mm/transparent_hugepage/enabled";
    let t = Tree::new("heap");
    let c = cfg(VDEV);
    let run = |tunables: Option<&str>| {
        let mut sys = t.sys();
        sys.glibc_tunables = tunables.map(str::to_string);
        check_config(&c, Path::new("x.yaml"), &sys)
    };
    let heap = |v: &[Finding]| -> (Status, String, Option<String>) {
        let f = only(v, "heap");
        assert_eq!(f.len(), 1, "{v:?}");
        (f[0].status, f[0].message.clone(), f[0].fix.clone())
    };
    let good = Some("glibc.malloc.check=0:glibc.malloc.hugetlb=1");
    // No THP in the kernel: warned, whatever the environment says.
    let (s, m, fix) = heap(&run(good));
    assert_eq!(s, Status::Warn);
    assert!(m.contains("unreadable") && fix.unwrap().contains("CONFIG_TRANSPARENT_HUGEPAGE"));
    // madvise: the tunable decides.
    t.file(thp, "always [madvise] never\n");
    assert_eq!(heap(&run(good)).0, Status::Ok);
    for (tunables, says) in [
        (None, "not set"),
        (Some("glibc.malloc.hugetlb=0"), "hugetlb=0"),
        (Some("glibc.malloc.hugetlb=2"), "pool DPDK needs"),
        // The last setting counts, as in glibc.
        (
            Some("glibc.malloc.hugetlb=1:glibc.malloc.hugetlb=0"),
            "hugetlb=0",
        ),
        (Some("glibc.malloc.hugetlbx=1"), "not set"),
    ] {
        let (s, m, fix) = heap(&run(tunables));
        assert_eq!(s, Status::Warn, "{tunables:?}");
        assert!(
            m.contains(says) && m.contains("4 KiB pages"),
            "{tunables:?}: {m}"
        );
        assert!(fix
            .unwrap()
            .contains("GLIBC_TUNABLES=glibc.malloc.hugetlb=1"));
    }
    // always: the kernel backs the heap without being asked.
    t.file(thp, "[always] madvise never\n");
    assert_eq!(heap(&run(None)).0, Status::Ok);
    // never: warned with the sysfs fix, even with the tunable.
    t.file(thp, "always madvise [never]\n");
    let (s, m, fix) = heap(&run(good));
    assert_eq!(s, Status::Warn);
    assert!(m.contains("off"), "{m}");
    assert!(fix.unwrap().contains("echo madvise >"));
    // A WARN never stops the start.
    t.file(thp, "always madvise [never]\n");
    assert_eq!(Report::new(Path::new("x.yaml"), run(None)).exit_code(), 0);
}
