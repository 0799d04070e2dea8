//! Owned mbufs, RX bursts and TX buffers.
//!
//! Ownership rules, which are where real projects leak or double-free:
//! - an [`Mbuf`] owns one packet and frees it on drop;
//! - an [`RxBurst`] owns what `rx_burst` returned until each packet is taken
//!   out; whatever is not taken is freed when the burst drops; until the
//!   first is taken, it is seen as [`Received`], whose every slot holds a
//!   packet;
//! - a [`TxBuffer`] owns what was pushed into it; after `tx_burst` the driver
//!   owns the first `n` sent packets and the buffer frees exactly the rest
//!   (l3fwd's `send_burst` contract), counting them as TX-full drops.

use std::ptr::NonNull;

use crate::pkt::NicCsum;

use super::port::TxQueue;

/// Packets per RX burst and per TX buffer.
pub const BURST: usize = 32;

/// One owned packet buffer (`#[repr(transparent)]` over the mbuf pointer).
#[repr(transparent)]
#[derive(Debug)]
pub struct Mbuf {
    ptr: NonNull<dpdk_sys::rte_mbuf>,
}

// SAFETY: an mbuf is owned by exactly one Mbuf value; moving that ownership to
// another thread is how packets travel in DPDK (free works from any thread).
unsafe impl Send for Mbuf {}

impl Mbuf {
    /// Takes ownership of a raw mbuf; `None` for null.
    ///
    /// # Safety
    /// `m` must be null or a valid mbuf that nobody else owns or will free.
    #[inline(always)]
    pub unsafe fn from_raw(m: *mut dpdk_sys::rte_mbuf) -> Option<Mbuf> {
        NonNull::new(m).map(|ptr| Mbuf { ptr })
    }

    /// Gives up ownership (the caller must make sure it is freed or sent).
    #[inline(always)]
    pub fn into_raw(self) -> *mut dpdk_sys::rte_mbuf {
        let p = self.ptr.as_ptr();
        std::mem::forget(self);
        p
    }

    /// Length of the first segment's data (where the headers are).
    #[inline(always)]
    pub fn data_len(&self) -> usize {
        // SAFETY: we own a valid mbuf; reading a plain field.
        unsafe { usize::from((*self.ptr.as_ptr()).data_len) }
    }

    /// Total packet length over all segments.
    #[inline(always)]
    pub fn pkt_len(&self) -> u32 {
        // SAFETY: we own a valid mbuf; reading a plain field.
        unsafe { (*self.ptr.as_ptr()).pkt_len }
    }

    /// Number of segments.
    #[inline(always)]
    pub fn segments(&self) -> u16 {
        // SAFETY: we own a valid mbuf; reading a plain field.
        unsafe { (*self.ptr.as_ptr()).nb_segs }
    }

    /// Cuts a single-segment packet to `len` bytes (no-op when it is not
    /// longer, or has several segments).
    #[inline(always)]
    pub fn trim_to(&mut self, len: usize) {
        if self.segments() != 1 || len >= self.data_len() {
            return;
        }
        // SAFETY: we own the mbuf exclusively; shortening a single segment's
        // data_len and the packet's pkt_len keeps them consistent (the bytes
        // stay in the buffer, unused), as rte_pktmbuf_trim does.
        unsafe {
            let m = self.ptr.as_ptr();
            (*m).data_len = len as u16;
            (*m).pkt_len = len as u32;
        }
    }

    /// What the NIC said of the IPv4 header checksum.
    #[inline(always)]
    pub fn ip_csum(&self) -> NicCsum {
        // SAFETY: we own a valid mbuf; reading a plain field.
        NicCsum::from_ol_flags(unsafe { (*self.ptr.as_ptr()).ol_flags })
    }

    /// The port the packet was received on.
    #[inline(always)]
    pub fn port(&self) -> u16 {
        // SAFETY: we own a valid mbuf; reading a plain field.
        unsafe { (*self.ptr.as_ptr()).port }
    }

    /// The first segment's data.
    #[inline(always)]
    pub fn data(&self) -> &[u8] {
        // SAFETY: buf_addr + data_off points at data_len initialised bytes of
        // the first segment (mtod), valid while we own the mbuf; the borrow of
        // self keeps it alive and unaliased by mutable access.
        unsafe {
            let m = self.ptr.as_ptr();
            let p = ((*m).buf_addr as *const u8).add(usize::from((*m).data_off));
            std::slice::from_raw_parts(p, usize::from((*m).data_len))
        }
    }

    /// The first segment's data, writable (rewrite in place).
    #[inline(always)]
    pub fn data_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `data`; exclusive ownership (&mut self) means no other
        // reference to these bytes exists. Mbufs we forward are never clones
        // (refcnt 1): mirrors are deep copies. An mbuf's buffer is never
        // at address 0: said to the compiler, which otherwise tested it
        // again wherever the slice became an `Option<&mut [u8]>` (twice a
        // packet on the fast path).
        unsafe {
            let m = self.ptr.as_ptr();
            let p = ((*m).buf_addr as *mut u8).add(usize::from((*m).data_off));
            std::hint::assert_unchecked(!p.is_null());
            std::slice::from_raw_parts_mut(p, usize::from((*m).data_len))
        }
    }

    /// Appends `bytes` to a single-segment mbuf (tests, generators).
    /// Returns false when the buffer has no room.
    pub fn append(&mut self, bytes: &[u8]) -> bool {
        let Ok(len) = u16::try_from(bytes.len()) else {
            return false;
        };
        // SAFETY: we own the mbuf; rte_pktmbuf_append returns null or a
        // pointer to `len` writable bytes at the tail.
        unsafe {
            let p = dpdk_sys::rte_pktmbuf_append(self.ptr.as_ptr(), len) as *mut u8;
            if p.is_null() {
                return false;
            }
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len());
        }
        true
    }

    /// A deep copy of the whole packet into `pool` (mirroring).
    pub fn deep_copy(&self, pool: &super::mempool::Mempool) -> Option<Mbuf> {
        // SAFETY: we own a valid mbuf; rte_pktmbuf_copy returns a new mbuf we
        // own exclusively, or null.
        unsafe {
            let c = dpdk_sys::rte_pktmbuf_copy(self.ptr.as_ptr(), pool.as_ptr(), 0, u32::MAX);
            Mbuf::from_raw(c)
        }
    }
}

impl Drop for Mbuf {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: we own the mbuf exclusively; it is freed exactly once here.
        unsafe { dpdk_sys::rte_pktmbuf_free(self.ptr.as_ptr()) }
    }
}

/// What one `rx_burst` returned. Packets are taken out by index; any left
/// behind are freed on drop.
pub struct RxBurst {
    pkts: [*mut dpdk_sys::rte_mbuf; BURST],
    /// Invariant: at most `BURST` (so an index below it is in `pkts`).
    len: usize,
}

impl Default for RxBurst {
    fn default() -> Self {
        RxBurst {
            pkts: [std::ptr::null_mut(); BURST],
            len: 0,
        }
    }
}

impl RxBurst {
    pub(crate) fn raw_slots(&mut self) -> &mut [*mut dpdk_sys::rte_mbuf; BURST] {
        &mut self.pkts
    }

    /// The burst as the driver just filled it: `n` packets, all there.
    ///
    /// # Safety
    /// The first `n` slots (`n <= BURST`) must hold mbufs that nobody else
    /// owns or will free (what `rx_burst` wrote through
    /// [`raw_slots`](RxBurst::raw_slots)), and the burst must have been
    /// empty before (whatever its slots held is forgotten).
    pub(crate) unsafe fn filled(&mut self, n: usize) -> Received<'_> {
        debug_assert!(n <= BURST);
        self.len = n.min(BURST);
        Received { burst: self }
    }

    /// Number of packets received.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing was received.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Borrows packet `i` (None once taken or out of range).
    #[inline(always)]
    pub fn get_mut(&mut self, i: usize) -> Option<&mut Mbuf> {
        if i >= self.len || self.pkts[i].is_null() {
            return None;
        }
        // SAFETY: Mbuf is repr(transparent) over a non-null *mut rte_mbuf;
        // the slot holds a valid owned mbuf (non-null checked above).
        Some(unsafe { &mut *(&mut self.pkts[i] as *mut *mut dpdk_sys::rte_mbuf as *mut Mbuf) })
    }

    /// Moves packet `i` out of the burst.
    #[inline(always)]
    pub fn take(&mut self, i: usize) -> Option<Mbuf> {
        if i >= self.len {
            return None;
        }
        let p = std::mem::replace(&mut self.pkts[i], std::ptr::null_mut());
        // SAFETY: the slot held an mbuf owned by this burst (or null); the
        // slot is cleared, so ownership moves to the returned Mbuf only.
        unsafe { Mbuf::from_raw(p) }
    }

    /// Frees every packet not taken out and empties the burst for the next
    /// `rx_burst`.
    #[inline(always)]
    pub fn clear(&mut self) {
        for i in 0..self.len {
            drop(self.take(i));
        }
        self.len = 0;
    }
}

/// A burst as `rx_burst` returned it ([`RxQueue::rx`]), before any of its
/// packets is taken out: what the stages read and rewrite in place. Every
/// slot below its length holds a packet, so its accessors check the index
/// only (an [`RxBurst`]'s also look for a slot emptied by
/// [`take`](RxBurst::take), ~6 instructions a packet in the poll loop,
/// `bench-results/counts.md`); it has no way to take a packet out, and
/// [`into_burst`](Received::into_burst) ends it for the code that does.
///
/// [`RxQueue::rx`]: super::port::RxQueue::rx
pub struct Received<'a> {
    /// Invariant: every slot below `burst.len` holds an mbuf the burst owns.
    burst: &'a mut RxBurst,
}

impl<'a> Received<'a> {
    /// Number of packets received.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.burst.len
    }

    /// True when nothing was received.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.burst.len == 0
    }

    /// Packet `i`'s mbuf (None out of range). One compare: the index
    /// against the burst's length, which is at most `BURST` (a second
    /// check against the array's size cost 2 instructions each time the
    /// fast path reaches a packet, `bench-results/counts.md`, 2026-12-07).
    #[inline(always)]
    fn at(&self, i: usize) -> Option<*mut dpdk_sys::rte_mbuf> {
        if i >= self.burst.len {
            return None;
        }
        // SAFETY: i < len <= BURST (RxBurst's invariant), so in bounds.
        Some(unsafe { *self.burst.pkts.get_unchecked(i) })
    }

    /// Borrows packet `i` (None out of range; one compare, as `at`).
    #[inline(always)]
    pub fn get_mut(&mut self, i: usize) -> Option<&mut Mbuf> {
        if i >= self.burst.len {
            return None;
        }
        // SAFETY: i < len <= BURST (RxBurst's invariant), so in bounds;
        // Mbuf is repr(transparent) over a non-null *mut rte_mbuf, and the
        // slot holds a valid owned mbuf (the type's invariant).
        Some(unsafe {
            let slot = self.burst.pkts.get_unchecked_mut(i);
            &mut *(slot as *mut *mut dpdk_sys::rte_mbuf as *mut Mbuf)
        })
    }

    /// Length of packet `i` (0 out of range).
    #[inline(always)]
    pub fn pkt_len(&self, i: usize) -> u32 {
        // SAFETY: the slot holds a valid mbuf owned by the burst (the
        // type's invariant); reading a plain field.
        self.at(i).map_or(0, |m| unsafe { (*m).pkt_len })
    }

    /// Segments of packet `i` (0 out of range).
    #[inline(always)]
    pub fn segments(&self, i: usize) -> u16 {
        // SAFETY: as in `pkt_len`.
        self.at(i).map_or(0, |m| unsafe { (*m).nb_segs })
    }

    /// What the NIC said of packet `i`'s IPv4 header checksum (see
    /// [`Mbuf::ip_csum`]; unchecked out of range).
    #[inline(always)]
    pub fn ip_csum(&self, i: usize) -> NicCsum {
        self.at(i).map_or(NicCsum::UNCHECKED, |m| {
            // SAFETY: as in `pkt_len`.
            NicCsum::from_ol_flags(unsafe { (*m).ol_flags })
        })
    }

    /// Packet `i`'s data when it is one segment, with the NIC's checksum
    /// verdict: one look at the slot for what the fast path reads (None
    /// out of range, or chained).
    #[inline(always)]
    pub fn single(&mut self, i: usize) -> Option<(&mut [u8], NicCsum)> {
        let m = self.get_mut(i)?;
        if m.segments() != 1 {
            return None;
        }
        let nic_csum = m.ip_csum();
        Some((m.data_mut(), nic_csum))
    }

    /// Prefetches the first cache line of packet `i`'s data.
    #[inline(always)]
    pub fn prefetch(&self, i: usize) {
        if let Some(m) = self.at(i) {
            // SAFETY: the slot holds a valid mbuf (the type's invariant);
            // computing mtod reads its fields; prefetch never faults.
            unsafe {
                let p = ((*m).buf_addr as *const u8).add(usize::from((*m).data_off));
                #[cfg(target_arch = "x86_64")]
                std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0);
            }
        }
    }

    /// Sends the whole burst out of `txq` in one `tx_burst`, freeing what
    /// the driver does not take, and empties it: the common case of a
    /// burst forwarded whole to one port, without a copy through a
    /// [`TxBuffer`]. `bytes` is the burst's packets' total length, which
    /// the caller counted as it forwarded them (summed here, it was 3.6
    /// instructions a packet); [`Flushed::sent_bytes`] is taken from it
    /// (a debug build checks it).
    #[inline(always)]
    pub fn send_all(&mut self, txq: &mut TxQueue, bytes: u64) -> Flushed {
        let len = self.burst.len.min(BURST);
        let pkts = &mut self.burst.pkts[..len];
        // SAFETY: every slot below len holds a valid mbuf (the type's
        // invariant).
        debug_assert_eq!(bytes, unsafe { total_len(pkts) });
        // SAFETY: every slot below len holds an mbuf owned by the burst
        // (the type's invariant), which forgets them all (len 0).
        let f = unsafe { send_owned(pkts, bytes, txq) };
        self.burst.len = 0;
        f
    }

    /// The burst, for the code that takes packets out of it.
    #[inline(always)]
    pub fn into_burst(self) -> &'a mut RxBurst {
        self.burst
    }
}

impl Drop for RxBurst {
    fn drop(&mut self) {
        self.clear();
    }
}

/// A per-(worker, port) TX buffer: packets accumulate until it is full or
/// the drain timer fires, then go out in one `tx_burst`.
pub struct TxBuffer {
    pkts: [*mut dpdk_sys::rte_mbuf; BURST],
    len: usize,
}

// SAFETY: the buffer owns its mbufs exclusively; moving it to the worker's
// thread moves that ownership. It is not Sync (no &-access from two threads).
unsafe impl Send for TxBuffer {}

impl Default for TxBuffer {
    fn default() -> Self {
        TxBuffer {
            pkts: [std::ptr::null_mut(); BURST],
            len: 0,
        }
    }
}

/// Result of a flush: how many packets the driver took and how many were
/// dropped because its ring was full.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Flushed {
    pub sent: u32,
    pub sent_bytes: u64,
    pub dropped: u32,
}

impl TxBuffer {
    /// Packets waiting.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing waits.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds a packet; when the buffer becomes full it is flushed to `txq`
    /// and the flush result is returned.
    #[inline(always)]
    pub fn push(&mut self, m: Mbuf, txq: &mut TxQueue) -> Option<Flushed> {
        self.pkts[self.len] = m.into_raw();
        self.len += 1;
        if self.len == BURST {
            Some(self.flush(txq))
        } else {
            None
        }
    }

    /// Sends everything waiting; frees exactly what the driver did not take.
    pub fn flush(&mut self, txq: &mut TxQueue) -> Flushed {
        if self.len == 0 {
            return Flushed::default();
        }
        let pkts = &mut self.pkts[..self.len];
        // SAFETY: every slot below len holds a valid mbuf.
        let bytes = unsafe { total_len(pkts) };
        // SAFETY: every slot below len holds an mbuf owned by this buffer,
        // which forgets them all (len 0) once the call returns.
        let f = unsafe { send_owned(pkts, bytes, txq) };
        self.len = 0;
        f
    }
}

/// The total length (`pkt_len`) of `pkts`.
///
/// # Safety
///
/// Every pointer in `pkts` is a valid mbuf.
#[inline(always)]
unsafe fn total_len(pkts: &[*mut dpdk_sys::rte_mbuf]) -> u64 {
    // SAFETY: valid mbufs (the contract).
    pkts.iter()
        .map(|&p| u64::from(unsafe { (*p).pkt_len }))
        .sum()
}

/// Hands `pkts` (`bytes` long in all, [`total_len`]) to `txq` in one
/// `tx_burst` and frees exactly what the driver did not take.
///
/// # Safety
///
/// Every pointer in `pkts` is a valid mbuf the caller owns, and the caller
/// gives all of them up: after the call they belong to the driver or are
/// freed (the unsent slots are nulled).
#[inline(always)]
unsafe fn send_owned(
    pkts: &mut [*mut dpdk_sys::rte_mbuf],
    bytes: u64,
    txq: &mut TxQueue,
) -> Flushed {
    let sent = txq.send_raw(pkts);
    let mut unsent_bytes = 0u64;
    for slot in pkts.iter_mut().skip(sent) {
        let p = std::mem::replace(slot, std::ptr::null_mut());
        // SAFETY: the driver did not take these; the caller gave them up
        // to us, and each is freed exactly once (slot cleared).
        if let Some(m) = unsafe { Mbuf::from_raw(p) } {
            unsent_bytes += u64::from(m.pkt_len());
            drop(m);
        }
    }
    Flushed {
        sent: sent as u32,
        sent_bytes: bytes - unsent_bytes,
        dropped: (pkts.len() - sent) as u32,
    }
}

impl Drop for TxBuffer {
    fn drop(&mut self) {
        for slot in &mut self.pkts[..self.len] {
            let p = std::mem::replace(slot, std::ptr::null_mut());
            // SAFETY: slots below len hold mbufs this buffer owns; freed once.
            drop(unsafe { Mbuf::from_raw(p) });
        }
        self.len = 0;
    }
}

static_assertions::assert_impl_all!(Mbuf: Send);
static_assertions::assert_not_impl_any!(Mbuf: Sync, Clone);
static_assertions::assert_impl_all!(TxBuffer: Send);
static_assertions::assert_not_impl_any!(TxBuffer: Sync);
static_assertions::assert_not_impl_any!(RxBurst: Send, Sync);
static_assertions::assert_eq_size!(Mbuf, *mut dpdk_sys::rte_mbuf);
