//! The TAP device against the kernel, each test in a private network
//! namespace; the other end of the wire is an `AF_PACKET` socket bound to
//! the interface.

use std::mem::size_of;
use std::time::{Duration, Instant};

use nix::sys::socket::{SockProtocol, SockType};

use super::*;
use crate::hostif::rtnl::{Link, Rtnl};
use crate::hostif::testns::{in_private_netns, ip_json, sysctl};

const MAC: [u8; 6] = [0x02, 0x00, 0x5e, 0x10, 0x00, 0x01];
const PEER_MAC: [u8; 6] = [0x02, 0x00, 0x5e, 0x10, 0x00, 0x99];
/// IEEE 802 local experimental EtherType: nothing in the kernel answers it.
const ETHERTYPE: [u8; 2] = [0x88, 0xb5];

fn link(tap: &Tap) -> Link {
    Rtnl::open()
        .unwrap()
        .link(tap.ifindex())
        .unwrap()
        .expect("the interface exists")
}

/// A TAP on which the kernel sends nothing by itself: with an MTU below
/// 1280 it has no IPv6 (no MLD reports, no router solicitations), and no
/// IPv4 address means no IPv4 traffic.
fn quiet_tap(name: &str) -> Tap {
    Tap::create(name, MAC, 1200).unwrap()
}

/// A test frame for `dst`, recognisable by its EtherType and `tag`.
fn frame(dst: [u8; 6], src: [u8; 6], tag: &str) -> Vec<u8> {
    let mut frame = Vec::new();
    frame.extend_from_slice(&dst);
    frame.extend_from_slice(&src);
    frame.extend_from_slice(&ETHERTYPE);
    frame.extend_from_slice(tag.as_bytes());
    frame.resize(60, 0);
    frame
}

/// An `AF_PACKET` socket bound to one interface: the kernel's side of the
/// TAP's wire.
struct PacketSocket(OwnedFd);

impl PacketSocket {
    fn bind(ifindex: u32) -> PacketSocket {
        let fd = socket(
            AddressFamily::Packet,
            SockType::Raw,
            SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
            SockProtocol::EthAll,
        )
        .unwrap();
        let addr = libc::sockaddr_ll {
            sll_family: libc::AF_PACKET as u16,
            sll_protocol: (libc::ETH_P_ALL as u16).to_be(),
            sll_ifindex: ifindex as i32,
            sll_hatype: 0,
            sll_pkttype: 0,
            sll_halen: 0,
            sll_addr: [0; 8],
        };
        // SAFETY: `fd` is an open AF_PACKET socket and `addr` a
        // sockaddr_ll of the length passed, which bind only reads.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&raw const addr).cast(),
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        assert_eq!(rc, 0, "bind AF_PACKET: {}", Errno::last());
        PacketSocket(fd)
    }

    /// Transmits `frame` on the interface, as the kernel would.
    fn send(&self, frame: &[u8]) {
        assert_eq!(nix::unistd::write(&self.0, frame).unwrap(), frame.len());
    }

    /// The next frame of our EtherType that the interface received,
    /// waiting up to a second.
    fn recv_test_frame(&self) -> Option<Vec<u8>> {
        let deadline = Instant::now() + Duration::from_secs(1);
        let mut buf = [0u8; 2048];
        while Instant::now() < deadline {
            match nix::unistd::read(self.0.as_raw_fd(), &mut buf) {
                Ok(len) if buf[12..14] == ETHERTYPE => return Some(buf[..len].to_vec()),
                Ok(_) => {}
                Err(Errno::EAGAIN) => {
                    let mut fds = [PollFd::new(self.0.as_fd(), PollFlags::POLLIN)];
                    poll(&mut fds, PollTimeout::from(100u16)).unwrap();
                }
                Err(errno) => panic!("read AF_PACKET: {errno}"),
            }
        }
        None
    }
}

#[test]
fn names_follow_the_kernel_rules() {
    assert!(check_name("fwd0").is_ok());
    assert!(check_name("port-1.100_x").is_ok());
    assert!(check_name(&"a".repeat(MAX_NAME_LEN)).is_ok());
    let err = check_name(&"a".repeat(MAX_NAME_LEN + 1)).unwrap_err();
    assert!(matches!(err, TapError::NameTooLong { .. }), "{err}");
    for bad in ["", ".", "..", "a/b", "a:1", "tap%d", "a b", "a\tb", "a\0b"] {
        assert!(
            matches!(check_name(bad), Err(TapError::InvalidName { .. })),
            "{bad:?}"
        );
    }
}

#[test]
fn a_missing_tun_device_is_named() {
    let err = Tap::create_on(Path::new("/nonexistent/net/tun"), "fwd0", MAC, 1500).unwrap_err();
    assert!(matches!(err, TapError::NoTunDevice { .. }), "{err}");
    assert!(err.to_string().contains("/nonexistent/net/tun"), "{err}");
}

#[test]
fn multicast_and_zero_macs_are_refused_before_anything_is_created() {
    for mac in [[1, 0, 0x5e, 0, 0, 1], [0; 6]] {
        let err = Tap::create_on(Path::new("/nonexistent/net/tun"), "fwd0", mac, 1500).unwrap_err();
        assert!(matches!(err, TapError::InvalidMac { .. }), "{err}");
    }
}

#[test]
fn create_sets_mac_mtu_up_and_the_ipv6_settings() {
    in_private_netns("create", || {
        let tap = Tap::create("fwdtap0", MAC, 9000).unwrap();
        assert_eq!(tap.name(), "fwdtap0");
        let link = link(&tap);
        assert_eq!(link.name, "fwdtap0");
        assert_eq!(link.mac, Some(MAC));
        assert_eq!(link.mtu, 9000);
        assert!(link.up && link.lower_up, "{link:?}");
        for (key, value) in IPV6_CONF {
            assert_eq!(
                sysctl(&format!("net/ipv6/conf/fwdtap0/{key}")).as_deref(),
                Some(value),
                "{key}"
            );
        }
        assert_eq!(
            sysctl("net/ipv4/conf/fwdtap0/promote_secondaries").as_deref(),
            Some("1")
        );

        // The same facts from iproute2, which parses netlink its own way.
        if let Some(json) = ip_json(&["-details", "link", "show", "dev", "fwdtap0"]) {
            let link = &json[0];
            assert_eq!(link["ifindex"], tap.ifindex());
            assert_eq!(link["address"], "02:00:5e:10:00:01");
            assert_eq!(link["mtu"], 9000);
            let flags = link["flags"].as_array().unwrap();
            assert!(
                flags.contains(&"UP".into()) && flags.contains(&"LOWER_UP".into()),
                "{flags:?}"
            );
            let tun = &link["linkinfo"]["info_data"];
            assert_eq!(tun["type"], "tap");
            assert_eq!(tun["pi"], false);
            assert_eq!(tun["persist"], false);
        }
    });
}

#[test]
fn set_carrier_toggles_lower_up() {
    in_private_netns("carrier", || {
        let tap = Tap::create("fwdtap0", MAC, 1500).unwrap();
        tap.set_carrier(false).unwrap();
        let down = link(&tap);
        assert!(down.up && !down.lower_up, "{down:?}");
        if let Some(json) = ip_json(&["link", "show", "dev", "fwdtap0"]) {
            assert_eq!(json[0]["operstate"], "DOWN");
            assert!(json[0]["flags"]
                .as_array()
                .unwrap()
                .contains(&"NO-CARRIER".into()));
        }
        tap.set_carrier(true).unwrap();
        let up = link(&tap);
        assert!(up.up && up.lower_up, "{up:?}");
        if let Some(json) = ip_json(&["link", "show", "dev", "fwdtap0"]) {
            assert_eq!(json[0]["operstate"], "UP");
        }
    });
}

#[test]
fn set_mtu_checks_the_range_and_restores_the_ipv6_settings() {
    in_private_netns("mtu", || {
        let tap = Tap::create("fwdtap0", MAC, 1500).unwrap();
        tap.set_mtu(1400).unwrap();
        assert_eq!(link(&tap).mtu, 1400);
        for bad in [67, 65535] {
            let err = tap.set_mtu(bad).unwrap_err();
            assert!(
                matches!(err, TapError::InvalidMtu { mtu, .. } if mtu == bad),
                "{err}"
            );
        }
        assert_eq!(link(&tap).mtu, 1400);

        // Below 1280 the kernel drops IPv6 from the interface; back above,
        // it re-creates it with the defaults, which set_mtu overwrites.
        tap.set_mtu(1200).unwrap();
        assert_eq!(sysctl("net/ipv6/conf/fwdtap0/autoconf"), None);
        tap.set_mtu(1500).unwrap();
        for (key, value) in IPV6_CONF {
            assert_eq!(
                sysctl(&format!("net/ipv6/conf/fwdtap0/{key}")).as_deref(),
                Some(value),
                "{key}"
            );
        }
    });
}

#[test]
fn name_errors_are_clear_and_leave_nothing_behind() {
    in_private_netns("names", || {
        let tap = Tap::create("fwdtap0", MAC, 1500).unwrap();
        let err = Tap::create("fwdtap0", MAC, 1500).unwrap_err();
        assert!(matches!(err, TapError::NameExists { .. }), "{err}");
        // Not a TAP, but the name is taken all the same.
        let err = Tap::create("lo", MAC, 1500).unwrap_err();
        assert!(matches!(err, TapError::NameExists { .. }), "{err}");
        let err = Tap::create("fwdtap0-too-long", MAC, 1500).unwrap_err();
        assert!(matches!(err, TapError::NameTooLong { .. }), "{err}");
        let err = Tap::create("fwd/0", MAC, 1500).unwrap_err();
        assert!(matches!(err, TapError::InvalidName { .. }), "{err}");
        drop(tap);

        // A create that fails after the interface exists removes it.
        let err = Tap::create("fwdtap1", MAC, 40).unwrap_err();
        assert!(matches!(err, TapError::InvalidMtu { .. }), "{err}");
        Tap::create("fwdtap1", MAC, 1500).expect("the failed create left no fwdtap1");
    });
}

#[test]
fn create_without_cap_net_admin_is_not_permitted() {
    in_private_netns("eperm", || {
        drop_effective_capability(CAP_NET_ADMIN);
        let err = Tap::create("fwdtap0", MAC, 1500).unwrap_err();
        assert!(matches!(err, TapError::NotPermitted { .. }), "{err}");
        assert!(err.to_string().contains("CAP_NET_ADMIN"), "{err}");
    });
}

#[test]
fn frames_round_trip() {
    in_private_netns("frames", || {
        let tap = quiet_tap("fwdtap0");
        let wire = PacketSocket::bind(tap.ifindex());
        let mut buf = [0u8; 1518];
        assert_eq!(tap.recv(&mut buf).unwrap(), None, "nothing is waiting");

        // Data path to kernel: what `send` writes, the interface receives.
        let punted = frame(MAC, PEER_MAC, "punted to the kernel");
        assert!(tap.send(&punted).unwrap());
        assert_eq!(wire.recv_test_frame().as_deref(), Some(&punted[..]));

        // Kernel to data path: what the interface transmits, `recv` reads.
        let sent = frame(PEER_MAC, MAC, "sent by the kernel");
        wire.send(&sent);
        assert_eq!(wait_readable(&[&tap], Duration::from_secs(1)).unwrap(), [0]);
        let len = tap.recv(&mut buf).unwrap().expect("a frame");
        assert_eq!(&buf[..len], &sent[..]);
        assert_eq!(tap.recv(&mut buf).unwrap(), None);

        // A short buffer cuts the frame, without an error.
        wire.send(&sent);
        assert_eq!(wait_readable(&[&tap], Duration::from_secs(1)).unwrap(), [0]);
        let mut short = [0u8; 20];
        assert_eq!(tap.recv(&mut short).unwrap(), Some(20));
        assert_eq!(&short[..], &sent[..20]);

        // Shorter than an Ethernet header: the kernel refuses it.
        let err = tap.send(&punted[..10]).unwrap_err();
        assert!(
            matches!(
                err,
                TapError::Io {
                    errno: Errno::EINVAL,
                    ..
                }
            ),
            "{err}"
        );
    });
}

#[test]
fn wait_readable_reports_the_ready_taps() {
    in_private_netns("wait", || {
        let (a, b) = (quiet_tap("fwdtap0"), quiet_tap("fwdtap1"));
        let start = Instant::now();
        assert!(wait_readable(&[&a, &b], Duration::from_millis(50))
            .unwrap()
            .is_empty());
        assert!(start.elapsed() >= Duration::from_millis(50));
        // Rounded up to a millisecond: waits, returns, does not spin.
        assert!(wait_readable(&[&a, &b], Duration::from_micros(10))
            .unwrap()
            .is_empty());
        assert!(wait_readable(&[], Duration::from_millis(1))
            .unwrap()
            .is_empty());

        let wire_b = PacketSocket::bind(b.ifindex());
        wire_b.send(&frame(PEER_MAC, MAC, "to b"));
        assert_eq!(
            wait_readable(&[&a, &b], Duration::from_secs(1)).unwrap(),
            [1]
        );
        let wire_a = PacketSocket::bind(a.ifindex());
        wire_a.send(&frame(PEER_MAC, MAC, "to a"));
        assert_eq!(
            wait_readable(&[&a, &b], Duration::from_secs(1)).unwrap(),
            [0, 1]
        );
    });
}

#[test]
fn drop_removes_the_interface() {
    in_private_netns("drop", || {
        let tap = Tap::create("fwdtap0", MAC, 1500).unwrap();
        let ifindex = tap.ifindex();
        let mut rtnl = Rtnl::open().unwrap();
        assert!(rtnl.link(ifindex).unwrap().is_some());
        drop(tap);
        assert_eq!(rtnl.link(ifindex).unwrap(), None);
        Tap::create("fwdtap0", MAC, 1500).expect("the name is free again");
    });
}

const CAP_NET_ADMIN: u32 = 12;

/// Removes `cap` from the calling thread's effective set (capabilities
/// are per thread; the thread ends with the test).
fn drop_effective_capability(cap: u32) {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    let mut header = Header {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: version 3 capget writes two `Data` for the calling thread
    // (pid 0) and may rewrite the header's version.
    let rc = unsafe { libc::syscall(libc::SYS_capget, &raw mut header, data.as_mut_ptr()) };
    assert_eq!(rc, 0, "capget: {}", Errno::last());
    data[(cap / 32) as usize].effective &= !(1 << (cap % 32));
    // SAFETY: version 3 capset reads the header and two `Data`, and
    // changes only the calling thread.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &raw const header, data.as_ptr()) };
    assert_eq!(rc, 0, "capset: {}", Errno::last());
}
