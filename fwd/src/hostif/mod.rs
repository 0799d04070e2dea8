//! Host interfaces: the kernel's view of each DPDK port (the host path, or
//! exception path).
//!
//! Every port of the appliance gets a kernel interface that represents it (a
//! representor), so that kernel sockets and FRR (bgpd, zebra) see a real
//! interface with the port's name, MAC, MTU, link state and addresses.
//! Packets the data path punts are written to it; frames the kernel sends on
//! it are read back and sent out of the port. A dedicated thread, never a
//! data-path lcore, does that I/O:
//!
//! - [`tap`]: the interface itself, a TAP device on a `/dev/net/tun` fd of
//!   our own (name, MAC, MTU, carrier, non-blocking frame I/O, `poll`).
//!   TAP rather than DPDK's virtio-user exception path, which is faster but
//!   needs `/dev/vhost-net` (absent on our build machines and CI) and a
//!   polling thread; the host path carries control traffic (BGP, OSPF,
//!   SSH) policed to thousands of packets per second per port, where one
//!   syscall per packet costs nothing that matters.
//! - [`rtnl`]: the interface's addresses over rtnetlink, so the kernel's
//!   address set follows the data path's (which owns them).
//! - [`path`]: the host thread, between the workers' queues and the TAPs.
//!
//! # Contract
//!
//! - Everything happens in the network namespace of the calling thread at
//!   creation: the TAP device, its control socket and the rtnetlink socket
//!   live there, whichever thread uses them afterwards.
//! - A [`tap::Tap`] owns its interface: dropping it closes the fd and the
//!   kernel removes the interface with its addresses and routes.
//! - Nothing here blocks except [`tap::wait_readable`] (up to its timeout)
//!   and the rtnetlink requests (until the kernel's answer).

pub mod path;
pub mod rtnl;
pub mod tap;

#[cfg(test)]
mod testns;
