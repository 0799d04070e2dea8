//! EAL initialisation and cleanup.

use std::ffi::{c_char, CString};
use std::sync::atomic::{AtomicBool, Ordering};

use super::{errno, strerror};

/// Why the EAL could not be initialised.
#[derive(Debug, thiserror::Error)]
pub enum EalError {
    #[error("the EAL is already initialised in this process (it can be initialised once)")]
    AlreadyInitialised,
    #[error("EAL argument {0:?} contains a NUL byte")]
    BadArgument(String),
    #[error("EAL init failed: {msg} (errno {errno}); arguments: {args:?}")]
    Init {
        errno: i32,
        msg: String,
        args: Vec<String>,
    },
}

static INITIALISED: AtomicBool = AtomicBool::new(false);

/// The initialised EAL; dropping it calls `rte_eal_cleanup`.
///
/// Holds no state: its existence proves `rte_eal_init` succeeded, and every
/// other wrapper (mempool, port, lcore launch) takes `&Eal`.
#[derive(Debug)]
pub struct Eal {
    _private: (),
}

impl Eal {
    /// Initialises the EAL with `args` (program name first, as argv).
    ///
    /// # Errors
    /// [`EalError::AlreadyInitialised`] on a second call; [`EalError::Init`]
    /// with DPDK's errno when `rte_eal_init` fails.
    pub fn init(args: &[String]) -> Result<Eal, EalError> {
        // Relaxed is enough: this only guards against a second init from the
        // same (main) thread; the EAL itself serialises the real work.
        if INITIALISED.swap(true, Ordering::Relaxed) {
            return Err(EalError::AlreadyInitialised);
        }
        let cargs: Vec<CString> = args
            .iter()
            .map(|a| CString::new(a.as_str()).map_err(|_| EalError::BadArgument(a.clone())))
            .collect::<Result<_, _>>()?;
        // rte_eal_init may permute argv; give it its own array of pointers
        // into the CStrings, which outlive the call.
        let mut argv: Vec<*mut c_char> = cargs.iter().map(|c| c.as_ptr() as *mut c_char).collect();
        let argc = i32::try_from(argv.len()).unwrap_or(i32::MAX);
        // SAFETY: argv holds argc valid NUL-terminated strings that live until
        // after the call; the EAL is initialised at most once (checked above).
        let rc = unsafe { dpdk_sys::rte_eal_init(argc, argv.as_mut_ptr()) };
        if rc < 0 {
            let e = errno();
            return Err(EalError::Init {
                errno: e,
                msg: strerror(e),
                args: args.to_vec(),
            });
        }
        Ok(Eal { _private: () })
    }

    /// Number of lcores the EAL knows (main + workers).
    pub fn lcore_count(&self) -> u32 {
        // SAFETY: valid after init, which `self` proves.
        unsafe { dpdk_sys::rte_lcore_count() }
    }

    /// The main lcore's id.
    pub fn main_lcore(&self) -> u32 {
        // SAFETY: valid after init, which `self` proves.
        unsafe { dpdk_sys::rte_get_main_lcore() }
    }

    /// The widest vector instructions DPDK's fast paths may use, in bits:
    /// 256 on x86 unless `--force-max-simd-bitwidth` says otherwise (DPDK
    /// keeps its AVX-512 paths off by default: on some Intel CPUs 512-bit
    /// instructions lower the core's clock).
    pub fn max_simd_bitwidth(&self) -> u16 {
        // SAFETY: valid after init, which `self` proves; reads a setting.
        unsafe { dpdk_sys::rte_vect_get_max_simd_bitwidth() }
    }

    /// Whether `lcore` was given to the EAL (`-l`/`--lcores`).
    pub fn lcore_enabled(&self, lcore: u32) -> bool {
        // SAFETY: valid after init; out-of-range ids return 0.
        unsafe { dpdk_sys::rte_lcore_is_enabled(lcore) != 0 }
    }
}

impl Drop for Eal {
    fn drop(&mut self) {
        // SAFETY: init succeeded; every port, queue and mempool wrapper
        // borrows the Eal, so they are gone before cleanup runs.
        unsafe {
            dpdk_sys::rte_eal_cleanup();
        }
    }
}
