//! loom models of the publish / quiesce / reclaim protocol.
//!
//! Run (a separate target dir keeps the normal build cached; the `loom`
//! profile is release without LTO, see the root `Cargo.toml`):
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p qsbr --profile loom --lib
//! ```
//!
//! Every payload lives in a `loom::cell::UnsafeCell` that its destructor
//! writes: if the writer could free a version (or a retired object) while a
//! reader may still read it, loom reports the read and the write as causally
//! unordered (and the reader's assertion on the poisoned value may fire too).
//! The models are small enough to finish in well under a minute each.

use ::loom::cell::UnsafeCell;
use ::loom::model::Builder;
use ::loom::sync::atomic::{AtomicPtr, Ordering};
use ::loom::thread;

use super::{domain, QsbrConfig, Reader};

const POISON: u64 = u64::MAX;

/// A value whose drop overwrites it (a tracked write for loom).
struct Payload(UnsafeCell<u64>);

// SAFETY: the cell is written only in `drop` (exclusive access); everywhere
// else it is only read, so sharing `&Payload` between threads is sound. The
// models check exactly that the drop is ordered after every read.
unsafe impl Sync for Payload {}

impl Payload {
    fn new(value: u64) -> Self {
        Self(UnsafeCell::new(value))
    }

    fn read(&self) -> u64 {
        // SAFETY: concurrent reads only; loom checks the ordering against the
        // write in `drop`.
        let v = self.0.with(|p| unsafe { *p });
        assert_ne!(v, POISON, "read a freed payload");
        v
    }
}

impl Drop for Payload {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no other reference exists.
        self.0.with_mut(|p| unsafe { *p = POISON });
    }
}

/// A model checker with at most `preemptions` forced thread switches per
/// execution: 3 for the two-thread models (exhaustive in well under a second),
/// 2 for the three-thread one (about 7 s in release). The bugs this protocol
/// can have need one or two: with the reader's or the writer's fence removed,
/// a report or offline store relaxed, the online generation or the free
/// condition off by one, or `generation` stored before `root`, these models
/// fail (by a loom causality panic, the poisoned-read assertion or the crash
/// of a real use after free).
fn builder(preemptions: usize) -> Builder {
    let mut b = Builder::new();
    b.preemption_bound = Some(preemptions);
    b
}

/// The root is a `Payload` holding the generation it was published in.
fn read_twice(mut r: Reader<Payload>) {
    for _ in 0..2 {
        let s = r.snapshot();
        assert_eq!(s.read(), s.generation());
    }
}

#[test]
fn two_readers_two_publishes() {
    builder(2).check(|| {
        let mut w = domain(Payload::new(1), QsbrConfig::default());
        let r1 = w.register_reader("r1");
        let r2 = w.register_reader("r2");
        let t1 = thread::spawn(move || read_twice(r1));
        let t2 = thread::spawn(move || read_twice(r2));
        w.publish(Payload::new(2), 8);
        w.publish(Payload::new(3), 8);
        w.reclaim();
        t1.join().expect("reader 1");
        t2.join().expect("reader 2");
        w.reclaim();
        assert_eq!(w.pending_objects(), 0, "detached readers hold nothing");
    });
}

#[test]
fn online_offline_race() {
    builder(3).check(|| {
        let mut w = domain(Payload::new(1), QsbrConfig::default());
        let mut r = w.register_reader("r");
        let t = thread::spawn(move || {
            // Offline -> online (inside snapshot) -> offline -> online.
            for _ in 0..2 {
                let s = r.snapshot();
                assert_eq!(s.read(), s.generation());
                drop(s);
                r.offline();
            }
        });
        w.publish(Payload::new(2), 8);
        w.reclaim();
        w.publish(Payload::new(3), 8);
        t.join().expect("reader");
    });
}

/// An in-place table: the root is shared across generations and a pointer
/// inside it is swapped; the replaced payload is handed to `retire`.
struct InPlace {
    slot: AtomicPtr<Payload>,
}

impl Drop for InPlace {
    fn drop(&mut self) {
        let p = self.slot.load(Ordering::Relaxed);
        // SAFETY: `p` came from `Box::into_raw` and the root owns it.
        drop(unsafe { Box::from_raw(p) });
    }
}

#[test]
fn retired_object_outlives_readers_that_may_hold_it() {
    builder(3).check(|| {
        let root = std::sync::Arc::new(InPlace {
            slot: AtomicPtr::new(Box::into_raw(Box::new(Payload::new(7)))),
        });
        let mut w = domain(root, QsbrConfig::default());
        let mut r = w.register_reader("r");
        let t = thread::spawn(move || {
            for _ in 0..2 {
                let s = r.snapshot();
                let p = s.slot.load(Ordering::Acquire);
                // SAFETY: the payload is retired only after being unlinked,
                // and freed only after this reader reports a later generation.
                let v = unsafe { &*p }.read();
                assert!(v == 7 || v == 8);
            }
        });
        let fresh = Box::into_raw(Box::new(Payload::new(8)));
        let old = w.current().slot.swap(fresh, Ordering::AcqRel);
        // SAFETY: `old` came from `Box::into_raw`; it is now unlinked and owned
        // here.
        w.retire(unsafe { Box::from_raw(old) }, 8);
        w.reclaim(); // must not free it: not yet published past
        let same_root = w.current().clone();
        w.publish(same_root, 0);
        w.reclaim();
        t.join().expect("reader");
    });
}

#[test]
fn writer_dropped_while_reader_reads() {
    builder(3).check(|| {
        let mut w = domain(Payload::new(1), QsbrConfig::default());
        let r = w.register_reader("r");
        let t = thread::spawn(move || read_twice(r));
        w.publish(Payload::new(2), 8);
        drop(w);
        t.join().expect("reader");
    });
}
