//! The channel between a worker and the control side: bounded, lockless,
//! one pair of queues per worker.
//!
//! - **up** (worker → control): packets waiting for a neighbour to be
//!   resolved, and the ARP / ND messages the neighbour table learns from.
//!   The worker only ever `push`es (a few atomic operations, no syscall,
//!   no allocation: the queue's slots are allocated once); when the queue
//!   is full the packet is dropped and counted, so a flood can neither
//!   block a worker nor grow memory.
//! - **down** (control → worker): frames the control side originates
//!   (ARP requests, neighbour solicitations, router advertisements) and
//!   held packets once their neighbour is resolved, each with its output
//!   port. The worker drains it once per poll-loop iteration into its own
//!   TX buffers, so no TX queue is ever shared and the control side needs
//!   no queue of its own on any port. This is grout's `control_output`
//!   shape, and it works on every PMD: a `net_pcap` port has exactly one
//!   TX queue per `tx_pcap` file, so a dedicated control TX queue cannot
//!   be had there.
//!
//! - **host** (worker → host thread): packets for the ports' kernel
//!   interfaces (the host path, see [`crate::hostif`]), already policed
//!   per port by the worker. A queue of its own, so a flood of punted
//!   packets can never crowd out neighbour resolution.
//!
//! All are `crossbeam_queue::ArrayQueue` (a bounded MPMC ring; here each
//! has one producer and one consumer). Its push and pop are lock-free and
//! carry their own Acquire/Release ordering: everything written to an
//! mbuf before `push` is visible to the thread that `pop`s it.

use std::net::IpAddr;

use crossbeam_queue::ArrayQueue;

use crate::dpdk::mbuf::Mbuf;
use crate::pkt::NeighMsg;

/// What a worker hands to the control side.
pub enum ToControl {
    /// A routed, not yet rewritten packet received on `in_port` whose next
    /// hop is `addr` on `port`, which has no MAC in the published tables.
    Hold {
        in_port: u16,
        port: u16,
        addr: IpAddr,
        mbuf: Mbuf,
    },
    /// An ARP / ND message received on `port`.
    Neigh { port: u16, msg: NeighMsg },
}

/// A frame the control side wants sent out of `port`, as it is.
pub struct ToPort {
    pub port: u16,
    pub mbuf: Mbuf,
}

/// A packet received on `port` for that port's kernel interface.
pub struct Punt {
    pub port: u16,
    pub mbuf: Mbuf,
}

/// One worker's queues.
pub struct Channel {
    up: ArrayQueue<ToControl>,
    down: ArrayQueue<ToPort>,
    host: ArrayQueue<Punt>,
}

impl Channel {
    /// Queues of `up`, `down` and `host` entries.
    pub fn new(up: usize, down: usize, host: usize) -> Channel {
        Channel {
            up: ArrayQueue::new(up.max(1)),
            down: ArrayQueue::new(down.max(1)),
            host: ArrayQueue::new(host.max(1)),
        }
    }

    /// Worker side: hands a packet to the host thread; gives it back when
    /// the queue is full.
    #[inline]
    pub fn push_host(&self, p: Punt) -> Result<(), Punt> {
        self.host.push(p)
    }

    /// Host thread side: the next punted packet, if any.
    pub fn pop_host(&self) -> Option<Punt> {
        self.host.pop()
    }

    /// Worker side: hands `m` over; gives it back when the queue is full.
    #[inline]
    pub fn push_up(&self, m: ToControl) -> Result<(), ToControl> {
        self.up.push(m)
    }

    /// Control side: the next message, if any.
    pub fn pop_up(&self) -> Option<ToControl> {
        self.up.pop()
    }

    /// Control side: asks the worker to send a frame; gives it back when
    /// the queue is full.
    pub fn push_down(&self, m: ToPort) -> Result<(), ToPort> {
        self.down.push(m)
    }

    /// Worker side: the next frame to send, if any.
    #[inline(always)]
    pub fn pop_down(&self) -> Option<ToPort> {
        self.down.pop()
    }

    /// Worker side: whether anything waits to be sent (one load).
    #[inline(always)]
    pub fn down_is_empty(&self) -> bool {
        self.down.is_empty()
    }
}

static_assertions::assert_impl_all!(Channel: Send, Sync);
