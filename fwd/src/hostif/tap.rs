#![allow(unsafe_code)]
//! A TAP interface on a `/dev/net/tun` fd of our own.
//!
//! [`Tap::create`] makes a non-persistent `IFF_TAP | IFF_NO_PI` interface:
//! every `read` is one whole Ethernet frame the kernel sent on it, every
//! `write` one whole frame the kernel receives from it, with no packet-info
//! prefix and no virtio header. The fd is non-blocking; [`wait_readable`]
//! is the `poll` over many. The kernel removes the interface (with its
//! addresses and routes) when the fd closes, that is when the [`Tap`] drops:
//! a crashed daemon leaves nothing behind.
//!
//! The interface is configured for a data path that owns its addresses:
//! IPv6 autoconfiguration, router advertisements and duplicate address
//! detection are off, IPv6 addresses survive an admin down
//! (`keep_addr_on_down`), and deleting a primary IPv4 address promotes a
//! secondary instead of deleting it too (`promote_secondaries`). The kernel
//! still gives the interface its own IPv6 link-local address when it comes
//! up: FRR needs one (BGP unnumbered, router advertisements).
//!
//! # Namespaces
//!
//! The interface and the control socket used for its ioctls live in the
//! network namespace of the thread that called [`Tap::create`]; they stay
//! there whichever thread uses the `Tap` afterwards. The IPv6 settings are
//! written through `/proc/sys/net`, which shows the namespace of the
//! *calling* thread: [`Tap::set_mtu`], which may have to rewrite them,
//! refuses to run from another namespace ([`TapError::WrongNamespace`]).
//!
//! # Unsafe
//!
//! The ioctls (`TUNSETIFF`, `TUNSETCARRIER`, `SIOC[GS]IF*`) and the
//! `ifreq` union they fill are the only unsafe code; each call passes a
//! live fd and a properly sized, initialised argument of the type the
//! request expects (declared once, in `sys`).

use std::fs::{self, OpenOptions};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};

/// The longest interface name the kernel accepts (`IFNAMSIZ` less the NUL).
pub const MAX_NAME_LEN: usize = libc::IFNAMSIZ - 1;

/// The smallest MTU with which Linux keeps IPv6 on an interface. Below it
/// the kernel drops the interface's IPv6 configuration and addresses.
pub const IPV6_MIN_MTU: u16 = 1280;

const TUN_DEVICE: &str = "/dev/net/tun";

/// IPv6 settings of an interface whose addresses the data path owns. The
/// kernel resets them to the defaults whenever it re-creates the
/// interface's IPv6 configuration (an MTU below [`IPV6_MIN_MTU`] and back).
const IPV6_CONF: [(&str, &str); 4] = [
    ("autoconf", "0"),
    ("accept_ra", "0"),
    ("accept_dad", "0"),
    ("keep_addr_on_down", "1"),
];

/// The request codes and the argument type of each, in one place.
mod sys {
    nix::ioctl_readwrite_bad!(tun_set_iff, libc::TUNSETIFF, libc::ifreq);
    nix::ioctl_write_ptr_bad!(tun_set_carrier, libc::TUNSETCARRIER, libc::c_int);
    nix::ioctl_readwrite_bad!(get_ifindex, libc::SIOCGIFINDEX, libc::ifreq);
    nix::ioctl_readwrite_bad!(get_flags, libc::SIOCGIFFLAGS, libc::ifreq);
    nix::ioctl_write_ptr_bad!(set_flags, libc::SIOCSIFFLAGS, libc::ifreq);
    nix::ioctl_write_ptr_bad!(set_hwaddr, libc::SIOCSIFHWADDR, libc::ifreq);
    nix::ioctl_write_ptr_bad!(set_mtu, libc::SIOCSIFMTU, libc::ifreq);
}

/// What went wrong creating or driving a TAP interface.
#[derive(Debug, thiserror::Error)]
pub enum TapError {
    #[error("interface name {name:?} is {} bytes long; the kernel allows at most {MAX_NAME_LEN}", name.len())]
    NameTooLong { name: String },
    #[error("interface name {name:?} is not valid: {why}")]
    InvalidName { name: String, why: &'static str },
    #[error("interface {name:?} already exists")]
    NameExists { name: String },
    #[error("{} is missing: no TUN/TAP support (load the `tun` module or create the device node)", path.display())]
    NoTunDevice { path: PathBuf },
    #[error("{op} for {name:?}: not permitted (needs CAP_NET_ADMIN)")]
    NotPermitted { op: &'static str, name: String },
    #[error("MAC {} for {name:?} is not a unicast address", fmt_mac(mac))]
    InvalidMac { name: String, mac: [u8; 6] },
    #[error("MTU {mtu} for {name:?} is out of the interface's range (68 to 65521 for a TAP)")]
    InvalidMtu { name: String, mtu: u16 },
    #[error("setting {}: {source}", path.display())]
    Sysctl {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{name:?} was created in another network namespace than the calling thread's; /proc/sys/net would name another interface")]
    WrongNamespace { name: String },
    #[error("{op} on {name:?}: {errno}")]
    Io {
        op: &'static str,
        name: String,
        #[source]
        errno: Errno,
    },
    #[error("poll on the host interfaces: {0}")]
    Poll(#[source] Errno),
}

/// A TAP interface, owned: dropping it closes the fd, and the kernel
/// removes the interface.
#[derive(Debug)]
pub struct Tap {
    /// The `/dev/net/tun` fd attached to the interface: frames in and out.
    fd: OwnedFd,
    /// A datagram socket of the creating thread's namespace, for the
    /// `SIOCSIF*` ioctls (the tun fd answers only the `TUN*` ones). Kept so
    /// that later calls address the interface's namespace, not the caller's.
    ctl: OwnedFd,
    name: String,
    ifindex: u32,
    /// `(st_dev, st_ino)` of the creating thread's network namespace.
    netns: Option<(u64, u64)>,
}

static_assertions::assert_impl_all!(Tap: Send, Sync);

impl Tap {
    /// Creates TAP interface `name` (`IFF_TAP | IFF_NO_PI`, non-blocking
    /// fd, not persistent) in the calling thread's network namespace, sets
    /// its MAC and MTU, turns off IPv6 autoconfiguration, router
    /// advertisements and DAD on it (see the [module doc](self)), and
    /// brings it up. Its carrier is on; the kernel reports its operstate as
    /// UNKNOWN until the first [`set_carrier`](Self::set_carrier).
    ///
    /// # Errors
    ///
    /// [`TapError::NameTooLong`], [`TapError::InvalidName`] (the kernel's
    /// rules, and no `%` template), [`TapError::InvalidMac`] (multicast or
    /// zero), [`TapError::NameExists`] (any interface of that name, TAP or
    /// not: an existing persistent TAP is never silently attached to),
    /// [`TapError::NoTunDevice`], [`TapError::NotPermitted`],
    /// [`TapError::InvalidMtu`], [`TapError::Sysctl`], [`TapError::Io`].
    /// On error nothing is left behind.
    pub fn create(name: &str, mac: [u8; 6], mtu: u16) -> Result<Tap, TapError> {
        Self::create_on(Path::new(TUN_DEVICE), name, mac, mtu)
    }

    fn create_on(device: &Path, name: &str, mac: [u8; 6], mtu: u16) -> Result<Tap, TapError> {
        check_name(name)?;
        if mac[0] & 1 != 0 || mac == [0; 6] {
            return Err(TapError::InvalidMac {
                name: name.into(),
                mac,
            });
        }
        // std opens with O_CLOEXEC.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(device)
            .map_err(|e| match e.raw_os_error().map(Errno::from_raw) {
                Some(Errno::ENOENT | Errno::ENODEV | Errno::ENXIO) => TapError::NoTunDevice {
                    path: device.into(),
                },
                Some(Errno::EACCES | Errno::EPERM) => TapError::NotPermitted {
                    op: "opening /dev/net/tun",
                    name: name.into(),
                },
                errno => TapError::Io {
                    op: "opening /dev/net/tun",
                    name: name.into(),
                    errno: errno.unwrap_or(Errno::UnknownErrno),
                },
            })?;
        let fd = OwnedFd::from(file);

        let mut ifr = ifreq(name);
        // IFF_TUN_EXCL: fail on any existing interface of that name rather
        // than attach to a persistent TAP someone left behind.
        ifr.ifr_ifru.ifru_flags =
            (libc::IFF_TAP | libc::IFF_NO_PI | libc::IFF_TUN_EXCL) as libc::c_short;
        // SAFETY: `fd` is an open /dev/net/tun fd and `ifr` a valid ifreq,
        // which TUNSETIFF reads and writes back.
        unsafe { sys::tun_set_iff(fd.as_raw_fd(), &mut ifr) }.map_err(|errno| match errno {
            Errno::EBUSY | Errno::EEXIST => TapError::NameExists { name: name.into() },
            Errno::EPERM | Errno::EACCES => TapError::NotPermitted {
                op: "TUNSETIFF",
                name: name.into(),
            },
            errno => TapError::Io {
                op: "TUNSETIFF",
                name: name.into(),
                errno,
            },
        })?;

        let io_err = |op| {
            move |errno| TapError::Io {
                op,
                name: name.into(),
                errno,
            }
        };
        let ctl = socket(
            AddressFamily::Inet,
            SockType::Datagram,
            SockFlag::SOCK_CLOEXEC,
            None,
        )
        .map_err(io_err("opening the control socket"))?;
        let mut ifr = ifreq(name);
        // SAFETY: `ctl` is an open socket and `ifr` a valid ifreq, from
        // which SIOCGIFINDEX reads the name and into which it writes the
        // index; any c_int is a valid value to read back.
        let index = unsafe {
            sys::get_ifindex(ctl.as_raw_fd(), &mut ifr).map(|_| ifr.ifr_ifru.ifru_ifindex)
        }
        .map_err(io_err("SIOCGIFINDEX"))?;
        let netns = current_netns().ok();
        // From here on, an early return drops `tap`, which removes the
        // interface.
        let tap = Tap {
            fd,
            ctl,
            name: name.into(),
            ifindex: index as u32,
            netns,
        };

        tap.set_mac(mac)?;
        // Before the MTU, which may remove the IPv6 configuration (below
        // 1280), and before the link comes up, which would start DAD and
        // autoconfiguration with the defaults.
        tap.set_ipv6_conf()?;
        tap.set_sysctl(
            &Path::new("/proc/sys/net/ipv4/conf")
                .join(name)
                .join("promote_secondaries"),
            "1",
        )?;
        tap.set_mtu(mtu)?;
        tap.set_up()?;
        Ok(tap)
    }

    /// The interface's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The interface's index in its namespace.
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// Sets the interface's carrier (`TUNSETCARRIER`), so that the kernel
    /// and FRR see the port's link go down (`NO-CARRIER`, operstate DOWN)
    /// and up. Addresses stay.
    ///
    /// # Errors
    ///
    /// [`TapError::Io`] (kernels before 5.0 have no `TUNSETCARRIER`).
    pub fn set_carrier(&self, up: bool) -> Result<(), TapError> {
        let value = libc::c_int::from(up);
        // SAFETY: `fd` is the open tun fd and `value` a c_int that
        // TUNSETCARRIER only reads.
        unsafe { sys::tun_set_carrier(self.fd.as_raw_fd(), &value) }
            .map_err(|errno| self.io_error("TUNSETCARRIER", errno))?;
        Ok(())
    }

    /// Sets the interface's MTU.
    ///
    /// Below [`IPV6_MIN_MTU`] the kernel removes the interface's IPv6
    /// configuration and addresses; going back up re-creates it with the
    /// defaults, so this rewrites the IPv6 settings of the module doc (the
    /// kernel has already started autoconfiguration and DAD on the new
    /// link-local address by then) and the caller must add its IPv6
    /// addresses again ([`super::rtnl::Rtnl::sync_addresses`]).
    ///
    /// # Errors
    ///
    /// [`TapError::InvalidMtu`] out of the interface's range,
    /// [`TapError::WrongNamespace`], [`TapError::Sysctl`],
    /// [`TapError::Io`].
    pub fn set_mtu(&self, mtu: u16) -> Result<(), TapError> {
        let mut ifr = ifreq(&self.name);
        ifr.ifr_ifru.ifru_mtu = libc::c_int::from(mtu);
        // SAFETY: `ctl` is an open socket and `ifr` a valid ifreq that
        // SIOCSIFMTU only reads.
        unsafe { sys::set_mtu(self.ctl.as_raw_fd(), &ifr) }.map_err(|errno| match errno {
            Errno::EINVAL => TapError::InvalidMtu {
                name: self.name.clone(),
                mtu,
            },
            errno => self.io_error("SIOCSIFMTU", errno),
        })?;
        if mtu >= IPV6_MIN_MTU {
            self.set_ipv6_conf()?;
        }
        Ok(())
    }

    /// Reads one frame into `buf`: `Ok(Some(len))`, or `Ok(None)` when
    /// nothing is waiting. A frame longer than `buf` is cut to `buf.len()`
    /// without an error (the kernel's behaviour): size `buf` for the MTU
    /// plus 18 (Ethernet header and one VLAN tag).
    ///
    /// # Errors
    ///
    /// [`TapError::Io`].
    pub fn recv(&self, buf: &mut [u8]) -> Result<Option<usize>, TapError> {
        match nix::unistd::read(self.fd.as_raw_fd(), buf) {
            Ok(len) => Ok(Some(len)),
            Err(Errno::EAGAIN | Errno::EINTR) => Ok(None),
            Err(errno) => Err(self.io_error("read", errno)),
        }
    }

    /// Writes one whole Ethernet frame, which the kernel receives on the
    /// interface. `Ok(false)` when the kernel cannot take it now (its
    /// queue or socket buffer is full): the caller drops and counts it.
    ///
    /// # Errors
    ///
    /// [`TapError::Io`], for instance `EINVAL` for a frame shorter than an
    /// Ethernet header.
    pub fn send(&self, frame: &[u8]) -> Result<bool, TapError> {
        // A tun write takes the whole frame or nothing.
        match nix::unistd::write(&self.fd, frame) {
            Ok(_) => Ok(true),
            Err(Errno::EAGAIN | Errno::EINTR | Errno::ENOBUFS) => Ok(false),
            Err(errno) => Err(self.io_error("write", errno)),
        }
    }

    /// The tun fd, for `poll` or `epoll` (readable: a frame is waiting).
    pub fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn set_mac(&self, mac: [u8; 6]) -> Result<(), TapError> {
        let mut sa_data = [0 as libc::c_char; 14];
        for (dst, src) in sa_data.iter_mut().zip(mac) {
            *dst = src as libc::c_char;
        }
        let mut ifr = ifreq(&self.name);
        ifr.ifr_ifru.ifru_hwaddr = libc::sockaddr {
            sa_family: libc::ARPHRD_ETHER,
            sa_data,
        };
        // SAFETY: `ctl` is an open socket and `ifr` a valid ifreq that
        // SIOCSIFHWADDR only reads.
        unsafe { sys::set_hwaddr(self.ctl.as_raw_fd(), &ifr) }.map_err(|errno| match errno {
            Errno::EADDRNOTAVAIL | Errno::EINVAL => TapError::InvalidMac {
                name: self.name.clone(),
                mac,
            },
            errno => self.io_error("SIOCSIFHWADDR", errno),
        })?;
        Ok(())
    }

    fn set_up(&self) -> Result<(), TapError> {
        let mut ifr = ifreq(&self.name);
        // SAFETY: `ctl` is an open socket and `ifr` a valid ifreq, into
        // which SIOCGIFFLAGS writes the flags; any c_short is valid.
        let flags = unsafe {
            sys::get_flags(self.ctl.as_raw_fd(), &mut ifr).map(|_| ifr.ifr_ifru.ifru_flags)
        }
        .map_err(|errno| self.io_error("SIOCGIFFLAGS", errno))?;
        ifr.ifr_ifru.ifru_flags = flags | libc::IFF_UP as libc::c_short;
        // SAFETY: `ctl` is an open socket and `ifr` a valid ifreq that
        // SIOCSIFFLAGS only reads.
        unsafe { sys::set_flags(self.ctl.as_raw_fd(), &ifr) }
            .map_err(|errno| self.io_error("SIOCSIFFLAGS", errno))?;
        Ok(())
    }

    /// Writes [`IPV6_CONF`]; nothing to do when the interface has no IPv6
    /// (IPv6 disabled, or an MTU below 1280).
    fn set_ipv6_conf(&self) -> Result<(), TapError> {
        let dir = Path::new("/proc/sys/net/ipv6/conf").join(&self.name);
        if !dir.exists() {
            return Ok(());
        }
        for (key, value) in IPV6_CONF {
            self.set_sysctl(&dir.join(key), value)?;
        }
        Ok(())
    }

    fn set_sysctl(&self, path: &Path, value: &str) -> Result<(), TapError> {
        if self.netns.is_some() && current_netns().ok() != self.netns {
            return Err(TapError::WrongNamespace {
                name: self.name.clone(),
            });
        }
        fs::write(path, value).map_err(|source| TapError::Sysctl {
            path: path.into(),
            source,
        })
    }

    fn io_error(&self, op: &'static str, errno: Errno) -> TapError {
        TapError::Io {
            op,
            name: self.name.clone(),
            errno,
        }
    }
}

/// Blocks until one of `taps` is readable or `timeout` passes, and returns
/// the indexes (into `taps`) of the readable ones, in order: empty on
/// timeout or when a signal interrupted the wait. A TAP in error counts as
/// readable, so that its `recv` reports the error. Sub-millisecond timeouts
/// round up to one millisecond, so a loop around this never spins.
///
/// # Errors
///
/// [`TapError::Poll`].
pub fn wait_readable(taps: &[&Tap], timeout: Duration) -> Result<Vec<usize>, TapError> {
    let mut fds: Vec<PollFd<'_>> = taps
        .iter()
        .map(|tap| PollFd::new(tap.fd.as_fd(), PollFlags::POLLIN))
        .collect();
    let millis = timeout.as_nanos().div_ceil(1_000_000);
    let timeout = PollTimeout::try_from(millis).unwrap_or(PollTimeout::MAX);
    match poll(&mut fds, timeout) {
        Ok(0) | Err(Errno::EINTR) => return Ok(Vec::new()),
        Ok(_) => {}
        Err(errno) => return Err(TapError::Poll(errno)),
    }
    let ready = PollFlags::POLLIN | PollFlags::POLLERR | PollFlags::POLLHUP;
    Ok(fds
        .iter()
        .enumerate()
        .filter(|(_, fd)| {
            fd.revents()
                .is_some_and(|revents| revents.intersects(ready))
        })
        .map(|(i, _)| i)
        .collect())
}

/// The kernel's `dev_valid_name`, plus `%` (which would make the name a
/// template the kernel fills with a number).
fn check_name(name: &str) -> Result<(), TapError> {
    let invalid = |why| {
        Err(TapError::InvalidName {
            name: name.into(),
            why,
        })
    };
    if name.is_empty() {
        return invalid("empty");
    }
    if name.len() > MAX_NAME_LEN {
        return Err(TapError::NameTooLong { name: name.into() });
    }
    if name == "." || name == ".." {
        return invalid("reserved");
    }
    if let Some(c) = name.chars().find(|&c| {
        c == '/' || c == ':' || c == '%' || c == '\0' || c.is_ascii_whitespace() || c == '\x0b'
    }) {
        return Err(TapError::InvalidName {
            name: name.into(),
            why: match c {
                '/' => "contains '/'",
                ':' => "contains ':'",
                '%' => "contains '%'",
                '\0' => "contains NUL",
                _ => "contains whitespace",
            },
        });
    }
    Ok(())
}

/// An `ifreq` naming `name` (checked: at most [`MAX_NAME_LEN`] bytes, so
/// the NUL terminator stays), its union zeroed.
fn ifreq(name: &str) -> libc::ifreq {
    // SAFETY: ifreq is a C struct of a char array and a union of integers,
    // char arrays, sockaddrs and a raw pointer: all-zero bytes are a valid
    // value of each (the pointer is null).
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in ifr.ifr_name.iter_mut().zip(name.bytes().take(MAX_NAME_LEN)) {
        *dst = src as libc::c_char;
    }
    ifr
}

/// Identifies the calling thread's network namespace.
fn current_netns() -> io::Result<(u64, u64)> {
    let meta = fs::metadata("/proc/thread-self/ns/net")?;
    Ok((meta.dev(), meta.ino()))
}

fn fmt_mac(mac: &[u8; 6]) -> String {
    let [a, b, c, d, e, f] = mac;
    format!("{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{f:02x}")
}

#[cfg(test)]
mod tests;
