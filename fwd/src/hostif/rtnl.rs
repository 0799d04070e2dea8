//! A small synchronous rtnetlink client: the host interfaces' addresses.
//!
//! The data path owns the addresses of its ports; the kernel's copy on the
//! host interface exists so that sockets bind, connected routes appear and
//! FRR sees them. [`Rtnl::sync_addresses`] makes the kernel's set exactly
//! the data path's, [`Rtnl::add_address`] and [`Rtnl::del_address`] are
//! idempotent single steps, [`Rtnl::addresses`] and [`Rtnl::link`] read the
//! kernel's view back.
//!
//! Messages are built and parsed by `netlink-packet-route`; this module
//! only numbers requests, waits for the kernel's answer to each (every
//! change is sent with `NLM_F_ACK`) and maps the error codes. One request
//! is in flight at a time, so answers to an earlier request that failed
//! half-way are recognised by their sequence number and skipped.
//!
//! # Addresses the kernel made itself
//!
//! When an interface comes up with IPv6, the kernel gives it a link-local
//! address (`fe80::/64`, from the MAC). [`Rtnl::sync_addresses`] leaves it
//! alone. The kernel (6.3 and later) marks it with address protocol
//! `kernel_ll`; this client marks the addresses it adds with
//! [`ADDRESS_PROTOCOL`]. A link-local `/64` with either no protocol or
//! `kernel_ll` is the kernel's; so on kernels before 6.3, which record no
//! protocol, a link-local the data path configured and then dropped stays
//! until the interface goes.

use std::fmt;
use std::io;
use std::net::IpAddr;

use netlink_packet_core::{
    NetlinkBuffer, NetlinkHeader, NetlinkMessage, NetlinkPayload, NlasIterator, NLM_F_ACK,
    NLM_F_ACK_TLVS, NLM_F_CAPPED, NLM_F_CREATE, NLM_F_DUMP, NLM_F_DUMP_INTR, NLM_F_EXCL,
    NLM_F_REQUEST,
};
use netlink_packet_route::address::{
    AddressAttribute, AddressFlags, AddressHeaderFlags, AddressMessage, AddressProtocol,
};
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
use nix::errno::Errno;

/// The address protocol (`IFA_PROTO`) of the addresses this client adds,
/// outside the kernel's own values (0 to 3): `ip -d address` shows it as
/// `proto 0x46`.
pub const ADDRESS_PROTOCOL: u8 = 0x46;

/// Enough for one datagram of a dump: the kernel fills at most 32 KiB.
const RECV_BUF_LEN: usize = 64 * 1024;

/// How many times a dump is restarted when the kernel reports that the
/// table changed under it (`NLM_F_DUMP_INTR`).
const DUMP_ATTEMPTS: usize = 5;

/// The size of `struct nlmsghdr`.
const NETLINK_HEADER_LEN: usize = 16;

/// `NLMSGERR_ATTR_MSG`: the extended ACK's text.
const NLMSGERR_ATTR_MSG: u16 = 1;

/// What a request was about, for errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    AddAddress {
        ifindex: u32,
        addr: IpAddr,
        prefix_len: u8,
    },
    DelAddress {
        ifindex: u32,
        addr: IpAddr,
        prefix_len: u8,
    },
    DumpAddresses {
        ifindex: u32,
    },
    GetLink {
        ifindex: u32,
    },
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Request::AddAddress {
                ifindex,
                addr,
                prefix_len,
            } => write!(f, "adding {addr}/{prefix_len} to interface {ifindex}"),
            Request::DelAddress {
                ifindex,
                addr,
                prefix_len,
            } => write!(f, "deleting {addr}/{prefix_len} from interface {ifindex}"),
            Request::DumpAddresses { ifindex } => {
                write!(f, "listing the addresses of interface {ifindex}")
            }
            Request::GetLink { ifindex } => write!(f, "reading interface {ifindex}"),
        }
    }
}

/// What went wrong talking to the kernel.
#[derive(Debug, thiserror::Error)]
pub enum RtnlError {
    #[error("opening the rtnetlink socket: {0}")]
    Open(#[source] io::Error),
    #[error("{addr}/{prefix_len}: the prefix length is at most {}", if addr.is_ipv4() { 32 } else { 128 })]
    BadPrefix { addr: IpAddr, prefix_len: u8 },
    #[error("{request}: interface {ifindex} does not exist (or has no IPv4/IPv6 configuration)")]
    NoSuchInterface { request: Request, ifindex: u32 },
    #[error("{request}: not permitted (needs CAP_NET_ADMIN)")]
    NotPermitted { request: Request },
    #[error("{request}: {errno}{}", message.as_deref().map(|m| format!(" ({m})")).unwrap_or_default())]
    Kernel {
        request: Request,
        errno: Errno,
        /// The kernel's extended ACK text, when it gave one.
        message: Option<String>,
    },
    #[error("{request}: the rtnetlink socket: {source}")]
    Io {
        request: Request,
        #[source]
        source: io::Error,
    },
    #[error("{request}: undecodable answer from the kernel: {reason}")]
    Decode { request: Request, reason: String },
}

/// A link as the kernel reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub ifindex: u32,
    pub name: String,
    pub mac: Option<[u8; 6]>,
    pub mtu: u32,
    /// Administratively up (`IFF_UP`).
    pub up: bool,
    /// Carrier (`IFF_LOWER_UP`).
    pub lower_up: bool,
}

/// One address of an interface, with what [`Rtnl::sync_addresses`] needs.
struct Entry {
    addr: IpAddr,
    prefix_len: u8,
    protocol: Option<AddressProtocol>,
}

impl Entry {
    /// The link-local address the kernel gave the interface itself.
    fn is_kernels_link_local(&self) -> bool {
        let IpAddr::V6(v6) = self.addr else {
            return false;
        };
        v6.is_unicast_link_local()
            && self.prefix_len == 64
            && matches!(self.protocol, None | Some(AddressProtocol::LinkLocal))
    }
}

/// A `NETLINK_ROUTE` socket of the calling thread's network namespace (it
/// stays in that namespace whichever thread uses it).
pub struct Rtnl {
    socket: Socket,
    seq: u32,
    buf: Vec<u8>,
}

impl fmt::Debug for Rtnl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rtnl")
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

impl Rtnl {
    /// Opens a socket to the kernel in the calling thread's namespace.
    ///
    /// # Errors
    ///
    /// [`RtnlError::Open`].
    pub fn open() -> Result<Rtnl, RtnlError> {
        let mut socket = Socket::new(NETLINK_ROUTE).map_err(RtnlError::Open)?;
        socket.bind_auto().map_err(RtnlError::Open)?;
        socket
            .connect(&SocketAddr::new(0, 0))
            .map_err(RtnlError::Open)?;
        // Best effort, all three: error texts in ACKs (4.12), only the
        // request's header echoed in them, and dumps filtered by the
        // kernel (4.20); `addresses` filters again for older kernels.
        let _ = socket.set_ext_ack(true);
        let _ = socket.set_cap_ack(true);
        let _ = socket.set_netlink_get_strict_chk(true);
        Ok(Rtnl {
            socket,
            seq: 0,
            buf: Vec::with_capacity(RECV_BUF_LEN),
        })
    }

    /// Adds `addr/prefix_len` to interface `ifindex`; IPv6 addresses with
    /// `IFA_F_NODAD` (the data path answers for them: no DAD). Adding an
    /// address that is there is not an error (it is left as it is).
    ///
    /// # Errors
    ///
    /// [`RtnlError::BadPrefix`], [`RtnlError::NoSuchInterface`],
    /// [`RtnlError::NotPermitted`], [`RtnlError::Kernel`],
    /// [`RtnlError::Io`], [`RtnlError::Decode`].
    pub fn add_address(
        &mut self,
        ifindex: u32,
        addr: IpAddr,
        prefix_len: u8,
    ) -> Result<(), RtnlError> {
        check_prefix(addr, prefix_len)?;
        let mut msg = address_message(ifindex, addr, prefix_len);
        if addr.is_ipv6() {
            msg.header.flags = AddressHeaderFlags::Nodad;
            msg.attributes
                .push(AddressAttribute::Flags(AddressFlags::Nodad));
        }
        msg.attributes
            .push(AddressAttribute::Protocol(AddressProtocol::from(
                ADDRESS_PROTOCOL,
            )));
        let request = Request::AddAddress {
            ifindex,
            addr,
            prefix_len,
        };
        match self.exchange(
            request,
            RouteNetlinkMessage::NewAddress(msg),
            NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
        ) {
            Err(RtnlError::Kernel {
                errno: Errno::EEXIST,
                ..
            }) => Ok(()),
            other => other.map(drop),
        }
    }

    /// Deletes `addr/prefix_len` from interface `ifindex`. Deleting an
    /// address that is not there is not an error.
    ///
    /// # Errors
    ///
    /// As [`add_address`](Self::add_address).
    pub fn del_address(
        &mut self,
        ifindex: u32,
        addr: IpAddr,
        prefix_len: u8,
    ) -> Result<(), RtnlError> {
        check_prefix(addr, prefix_len)?;
        let request = Request::DelAddress {
            ifindex,
            addr,
            prefix_len,
        };
        let msg = address_message(ifindex, addr, prefix_len);
        match self.exchange(request, RouteNetlinkMessage::DelAddress(msg), NLM_F_ACK) {
            Err(RtnlError::Kernel {
                errno: Errno::ENOENT | Errno::EADDRNOTAVAIL,
                ..
            }) => Ok(()),
            other => other.map(drop),
        }
    }

    /// The addresses of interface `ifindex`, IPv4 and IPv6, the kernel's
    /// link-local included, in the kernel's order. An interface that does
    /// not exist has none.
    ///
    /// # Errors
    ///
    /// [`RtnlError::NotPermitted`], [`RtnlError::Kernel`],
    /// [`RtnlError::Io`], [`RtnlError::Decode`].
    pub fn addresses(&mut self, ifindex: u32) -> Result<Vec<(IpAddr, u8)>, RtnlError> {
        Ok(self
            .entries(ifindex)?
            .into_iter()
            .map(|e| (e.addr, e.prefix_len))
            .collect())
    }

    /// Makes the addresses of interface `ifindex` exactly `want`: deletes
    /// the others, then adds the missing ones (as
    /// [`add_address`](Self::add_address)). The kernel's own IPv6
    /// link-local stays (see the [module doc](self)). Every entry of `want`
    /// is checked before anything changes.
    ///
    /// Deleting before adding, and listing again in between, makes the
    /// result right even where one deletion takes others with it (an IPv4
    /// primary address takes its secondaries unless `promote_secondaries`
    /// is set).
    ///
    /// # Errors
    ///
    /// As [`add_address`](Self::add_address); on error the interface may
    /// have some of the changes.
    pub fn sync_addresses(&mut self, ifindex: u32, want: &[(IpAddr, u8)]) -> Result<(), RtnlError> {
        for &(addr, prefix_len) in want {
            check_prefix(addr, prefix_len)?;
        }
        let entries = self.entries(ifindex)?;
        let mut deleted = false;
        for entry in &entries {
            if !want.contains(&(entry.addr, entry.prefix_len)) && !entry.is_kernels_link_local() {
                self.del_address(ifindex, entry.addr, entry.prefix_len)?;
                deleted = true;
            }
        }
        let have = if deleted {
            self.addresses(ifindex)?
        } else {
            entries.iter().map(|e| (e.addr, e.prefix_len)).collect()
        };
        for (i, &(addr, prefix_len)) in want.iter().enumerate() {
            if !have.contains(&(addr, prefix_len)) && !want[..i].contains(&(addr, prefix_len)) {
                self.add_address(ifindex, addr, prefix_len)?;
            }
        }
        Ok(())
    }

    /// Interface `ifindex` as the kernel sees it; `None` when there is no
    /// such interface.
    ///
    /// # Errors
    ///
    /// [`RtnlError::Kernel`], [`RtnlError::Io`], [`RtnlError::Decode`].
    pub fn link(&mut self, ifindex: u32) -> Result<Option<Link>, RtnlError> {
        let request = Request::GetLink { ifindex };
        let mut msg = LinkMessage::default();
        msg.header.index = ifindex;
        let answers = match self.exchange(request, RouteNetlinkMessage::GetLink(msg), NLM_F_ACK) {
            Err(RtnlError::NoSuchInterface { .. }) => return Ok(None),
            other => other?,
        };
        let Some(msg) = answers.into_iter().find_map(|m| match m {
            RouteNetlinkMessage::NewLink(link) if link.header.index == ifindex => Some(link),
            _ => None,
        }) else {
            return Ok(None);
        };
        let mut link = Link {
            ifindex,
            name: String::new(),
            mac: None,
            mtu: 0,
            up: msg.header.flags.contains(LinkFlags::Up),
            lower_up: msg.header.flags.contains(LinkFlags::LowerUp),
        };
        for attr in msg.attributes {
            match attr {
                LinkAttribute::IfName(name) => link.name = name,
                LinkAttribute::Mtu(mtu) => link.mtu = mtu,
                LinkAttribute::Address(mac) => link.mac = mac.try_into().ok(),
                _ => {}
            }
        }
        Ok(Some(link))
    }

    fn entries(&mut self, ifindex: u32) -> Result<Vec<Entry>, RtnlError> {
        let mut msg = AddressMessage::default();
        msg.header.family = AddressFamily::Unspec;
        msg.header.index = ifindex;
        let answers = match self.exchange(
            Request::DumpAddresses { ifindex },
            RouteNetlinkMessage::GetAddress(msg),
            NLM_F_DUMP,
        ) {
            // The kernel checks the index when it filters the dump itself.
            Err(RtnlError::NoSuchInterface { .. }) => Vec::new(),
            other => other?,
        };
        Ok(answers
            .into_iter()
            .filter_map(|m| match m {
                RouteNetlinkMessage::NewAddress(a) if a.header.index == ifindex => entry(a),
                _ => None,
            })
            .collect())
    }

    /// Sends one request and collects the messages of its answer, up to
    /// the ACK (`NLM_F_ACK`) or the end of the dump (`NLM_F_DUMP`, which is
    /// restarted when the kernel reports it inconsistent).
    fn exchange(
        &mut self,
        request: Request,
        message: RouteNetlinkMessage,
        flags: u16,
    ) -> Result<Vec<RouteNetlinkMessage>, RtnlError> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let (answers, interrupted) = self.exchange_once(request, message.clone(), flags)?;
            if !interrupted {
                return Ok(answers);
            }
            if attempts == DUMP_ATTEMPTS {
                return Err(RtnlError::Kernel {
                    request,
                    errno: Errno::EINTR,
                    message: Some(format!(
                        "the table changed during each of {DUMP_ATTEMPTS} dumps"
                    )),
                });
            }
        }
    }

    /// One request; also says whether a dump was interrupted.
    fn exchange_once(
        &mut self,
        request: Request,
        message: RouteNetlinkMessage,
        flags: u16,
    ) -> Result<(Vec<RouteNetlinkMessage>, bool), RtnlError> {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | flags;
        header.sequence_number = seq;
        let mut packet = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(message));
        packet.finalize();
        let mut bytes = vec![0; packet.buffer_len()];
        packet.serialize(&mut bytes);
        let io = |source| RtnlError::Io { request, source };
        self.socket.send(&bytes, 0).map_err(io)?;

        let decode = |reason: String| RtnlError::Decode { request, reason };
        let mut answers = Vec::new();
        let mut interrupted = false;
        loop {
            self.buf.clear();
            // MSG_TRUNC: the datagram's real length, to tell a cut one.
            let len = self
                .socket
                .recv(&mut self.buf, libc::MSG_TRUNC)
                .map_err(io)?;
            if len > self.buf.len() {
                return Err(decode(format!(
                    "a {len}-byte datagram does not fit in {RECV_BUF_LEN} bytes"
                )));
            }
            let mut datagram = &self.buf[..len];
            while !datagram.is_empty() {
                let msg_len = NetlinkBuffer::new_checked(datagram)
                    .map_err(|e| decode(e.to_string()))?
                    .length() as usize;
                let msg = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&datagram[..msg_len])
                    .map_err(|e| decode(e.to_string()))?;
                datagram = &datagram[msg_len.next_multiple_of(4).min(datagram.len())..];
                if msg.header.sequence_number != seq {
                    // The answer to an earlier request we gave up on.
                    continue;
                }
                interrupted |= msg.header.flags & NLM_F_DUMP_INTR != 0;
                match msg.payload {
                    NetlinkPayload::InnerMessage(inner) => answers.push(inner),
                    NetlinkPayload::Error(err) => match err.code {
                        None => return Ok((answers, interrupted)),
                        Some(code) => {
                            let message = ext_ack_message(msg.header.flags, &err.header);
                            return Err(nack(request, code.get(), message));
                        }
                    },
                    NetlinkPayload::Done(done) if done.code < 0 => {
                        return Err(nack(request, done.code, None));
                    }
                    NetlinkPayload::Done(_) => return Ok((answers, interrupted)),
                    NetlinkPayload::Overrun(_) => return Err(decode("overrun".into())),
                    _ => {}
                }
            }
        }
    }
}

fn check_prefix(addr: IpAddr, prefix_len: u8) -> Result<(), RtnlError> {
    let max = if addr.is_ipv4() { 32 } else { 128 };
    if prefix_len > max {
        return Err(RtnlError::BadPrefix { addr, prefix_len });
    }
    Ok(())
}

fn address_message(ifindex: u32, addr: IpAddr, prefix_len: u8) -> AddressMessage {
    let mut msg = AddressMessage::default();
    msg.header.family = if addr.is_ipv4() {
        AddressFamily::Inet
    } else {
        AddressFamily::Inet6
    };
    msg.header.prefix_len = prefix_len;
    msg.header.index = ifindex;
    // As iproute2: IFA_LOCAL is the address, IFA_ADDRESS the same when
    // there is no peer.
    msg.attributes.push(AddressAttribute::Local(addr));
    msg.attributes.push(AddressAttribute::Address(addr));
    msg
}

fn entry(msg: AddressMessage) -> Option<Entry> {
    let mut local = None;
    let mut address = None;
    let mut protocol = None;
    for attr in msg.attributes {
        match attr {
            AddressAttribute::Local(a) => local = Some(a),
            AddressAttribute::Address(a) => address = Some(a),
            AddressAttribute::Protocol(p) => protocol = Some(p),
            _ => {}
        }
    }
    // IFA_LOCAL is the interface's address where both are present (IPv4,
    // point-to-point IPv6); IFA_ADDRESS is the peer's then.
    Some(Entry {
        addr: local.or(address)?,
        prefix_len: msg.header.prefix_len,
        protocol,
    })
}

fn nack(request: Request, code: i32, message: Option<String>) -> RtnlError {
    let errno = Errno::from_raw(code.saturating_abs());
    match errno {
        Errno::ENODEV => RtnlError::NoSuchInterface {
            request,
            ifindex: match request {
                Request::AddAddress { ifindex, .. }
                | Request::DelAddress { ifindex, .. }
                | Request::DumpAddresses { ifindex }
                | Request::GetLink { ifindex } => ifindex,
            },
        },
        Errno::EPERM | Errno::EACCES => RtnlError::NotPermitted { request },
        errno => RtnlError::Kernel {
            request,
            errno,
            message,
        },
    }
}

/// The text of an extended ACK (`NLMSGERR_ATTR_MSG`), if the kernel sent
/// one. `payload` follows the error code: the request's header (alone when
/// `NLM_F_CAPPED`, else the whole request), then the attributes when
/// `NLM_F_ACK_TLVS`.
fn ext_ack_message(flags: u16, payload: &[u8]) -> Option<String> {
    if flags & NLM_F_ACK_TLVS == 0 {
        return None;
    }
    let skip = if flags & NLM_F_CAPPED != 0 {
        NETLINK_HEADER_LEN
    } else {
        // The echoed request's own length field.
        let len: [u8; 4] = payload.get(..4)?.try_into().ok()?;
        (u32::from_ne_bytes(len) as usize).next_multiple_of(4)
    };
    NlasIterator::new(payload.get(skip..)?)
        .filter_map(Result::ok)
        .find(|nla| nla.kind() == NLMSGERR_ATTR_MSG)
        .map(|nla| {
            String::from_utf8_lossy(nla.value())
                .trim_end_matches('\0')
                .to_string()
        })
}

#[cfg(test)]
mod tests;
