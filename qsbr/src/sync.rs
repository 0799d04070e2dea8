//! The synchronisation primitives the protocol uses, from loom under
//! `cfg(loom)` (so the loom models explore every interleaving and weak-memory
//! outcome of exactly this code) and from std otherwise.

#[cfg(loom)]
pub(crate) use ::loom::sync::atomic::{fence, AtomicPtr, AtomicU64, Ordering};
#[cfg(loom)]
pub(crate) use ::loom::sync::{Arc, Mutex};
#[cfg(loom)]
pub(crate) use ::loom::thread::yield_now;

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicPtr, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Mutex};
#[cfg(not(loom))]
pub(crate) use std::thread::yield_now;
