//! Packet-buffer pools.

use std::ffi::CString;
use std::ptr::NonNull;

use super::eal::Eal;
use super::{errno, strerror};

/// Why a pool could not be created.
#[derive(Debug, thiserror::Error)]
pub enum MempoolError {
    #[error("mempool name {0:?} is invalid (NUL byte)")]
    BadName(String),
    #[error(
        "cannot create mempool {name:?} of {n} mbufs: {msg} (errno {errno}); \
             lower mempool.mbufs or give the EAL more memory (eal.memory_mb / hugepages)"
    )]
    Create {
        name: String,
        n: u32,
        errno: i32,
        msg: String,
    },
}

/// A pktmbuf pool. Freed on drop: drop it only after every port using it is
/// closed and every mbuf taken from it has been returned.
#[derive(Debug)]
pub struct Mempool {
    ptr: NonNull<dpdk_sys::rte_mempool>,
}

// SAFETY: rte_mempool is designed for concurrent get/put from many threads
// (lockless ring + per-lcore caches); the handle is just a pointer to it.
unsafe impl Send for Mempool {}
// SAFETY: as above, every operation on a shared pool is thread-safe.
unsafe impl Sync for Mempool {}

impl Mempool {
    /// Creates a pool of `n` mbufs with a per-lcore cache of `cache` and
    /// `data_room` bytes of buffer (headroom included) on `socket`
    /// (`None` = any).
    ///
    /// # Errors
    /// [`MempoolError::Create`] with DPDK's errno (usually ENOMEM).
    pub fn create(
        _eal: &Eal,
        name: &str,
        n: u32,
        cache: u32,
        data_room: u16,
        socket: Option<i32>,
    ) -> Result<Mempool, MempoolError> {
        let cname = CString::new(name).map_err(|_| MempoolError::BadName(name.to_string()))?;
        let socket = socket.unwrap_or(dpdk_sys::SOCKET_ID_ANY);
        // SAFETY: the EAL is initialised (the &Eal proves it) and the name is
        // a valid C string for the duration of the call.
        let p = unsafe {
            dpdk_sys::rte_pktmbuf_pool_create(cname.as_ptr(), n, cache, 0, data_room, socket)
        };
        NonNull::new(p).map(|ptr| Mempool { ptr }).ok_or_else(|| {
            let e = errno();
            MempoolError::Create {
                name: name.to_string(),
                n,
                errno: e,
                msg: strerror(e),
            }
        })
    }

    pub(crate) fn as_ptr(&self) -> *mut dpdk_sys::rte_mempool {
        self.ptr.as_ptr()
    }

    /// Mbufs currently free in the pool (including per-lcore caches).
    pub fn available(&self) -> u32 {
        // SAFETY: the pool is live for &self.
        unsafe { dpdk_sys::rte_mempool_avail_count(self.ptr.as_ptr()) }
    }

    /// Mbufs currently taken from the pool.
    pub fn in_use(&self) -> u32 {
        // SAFETY: the pool is live for &self.
        unsafe { dpdk_sys::rte_mempool_in_use_count(self.ptr.as_ptr()) }
    }

    /// Allocates one mbuf (not on the fast path; mirrors and tests use it).
    pub fn alloc(&self) -> Option<super::mbuf::Mbuf> {
        // SAFETY: the pool is live; a non-null result is a fresh mbuf that we
        // own exclusively.
        let m = unsafe { dpdk_sys::rte_pktmbuf_alloc(self.ptr.as_ptr()) };
        // SAFETY: `m` is null or a freshly allocated mbuf owned by nobody else.
        unsafe { super::mbuf::Mbuf::from_raw(m) }
    }
}

impl Drop for Mempool {
    fn drop(&mut self) {
        // SAFETY: by the type's contract no port or mbuf uses the pool any more.
        unsafe { dpdk_sys::rte_mempool_free(self.ptr.as_ptr()) }
    }
}
