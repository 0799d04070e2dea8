//! Heap memory given back to the kernel after a refused batch.
//!
//! A batch refused at the routing memory limit (`route::Limits`) has built
//! up to the limit in its working copy before the change that went past it.
//! Dropping the copy frees that memory to glibc, which keeps it: the tables
//! are thousands of 4 KiB pages and trie nodes, small allocations that stay
//! in the allocator's arenas, so the daemon's resident set stayed at the
//! limit after the refusal (2.3 GB after a refused 120,000-route batch at
//! the default 2 GiB). `malloc_trim` returns the free pages of every arena.

#![allow(unsafe_code)]

/// A refused batch that grew the working copy by this much gives the freed
/// memory back (below it, glibc's own trimming is enough).
pub const TRIM_AFTER_BYTES: usize = 64 << 20;

/// Returns the allocator's free memory to the kernel.
pub fn give_back() {
    // SAFETY: malloc_trim takes no pointer and touches only glibc's own
    // arenas, under their locks; it may run on any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}
