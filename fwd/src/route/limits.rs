//! What the routing tables may hold: a number of tables (VRFs) and a memory
//! budget, as rte_fib has a fixed route count and tbl8 pool, and grout a
//! fixed number of VRFs.
//!
//! Without a bound, anyone allowed to change routes could grow the tables
//! until the kernel kills the daemon: 100,000 host routes scattered over the
//! IPv6 space take ~1.9 GB, and 100,000 tables of one route each took
//! 2.5 GB (`bench-results/memory.md`). So every version keeps a running
//! *charge*, the memory it holds as its tables count it, and a change that
//! would take the charge past [`Limits::bytes`], or the number of tables past
//! [`Limits::tables`], is refused (the change alone; a batch then fails whole).
//!
//! The charge is kept as changes are made, O(1) a change, from counts the
//! tables maintain anyway:
//! * a paged array (a FIB's first level and 8-bit groups, the next-hop and
//!   group tables, their reference counts): its shared all-empty nodes, and
//!   its pages written in place, at a page each (4 KiB and up);
//! * a RIB: its nodes, each charged as a node and a chunk of children
//!   (there are never more chunks than nodes), and its routes' entries;
//! * ECMP groups: each one's members and slots, beside its table's pages.
//!
//! What it leaves out is small beside that: directory nodes (a 256-byte mid a
//! 32 pages), the shared uniform pages of short prefixes, map and `Arc`
//! headers. Tests hold it to the tables' own accounting (`Routing::stats`).
//! Memory that a deleted route frees in the first level of a FIB is
//! credited when its batch ends (that is when such pages go back to the
//! shared zero page), or before a change of the batch would be refused, so
//! a batch that deletes and adds near the limit is judged on what it
//! leaves.

/// The capacities of the routing tables (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Routing tables (VRFs), the main table included once it exists.
    pub tables: usize,
    /// Memory the tables may be charged, in bytes: FIBs, RIBs, next hops
    /// and ECMP groups of every table.
    pub bytes: usize,
}

impl Limits {
    /// Default [`Limits::tables`]: a table costs ~20 KiB before its first
    /// route (its empty FIBs' shared nodes).
    pub const DEFAULT_TABLES: usize = 1024;
    /// Default [`Limits::bytes`], in MiB: 20 times what the full IPv4 and
    /// IPv6 views take together (~104 MiB), or ~100,000 IPv6 host routes
    /// scattered over the address space (the worst case, ~19 KiB each).
    pub const DEFAULT_MB: usize = 2048;
    /// No bound (benches and tests of other things).
    pub const UNLIMITED: Limits = Limits {
        tables: usize::MAX,
        bytes: usize::MAX,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            tables: Self::DEFAULT_TABLES,
            bytes: Self::DEFAULT_MB << 20,
        }
    }
}

/// Which capacity a refused change would have gone past.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capacity {
    /// [`Limits::tables`].
    Tables,
    /// [`Limits::bytes`].
    Memory,
}

impl std::fmt::Display for Capacity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Capacity::Tables => "routing tables",
            Capacity::Memory => "routing memory",
        })
    }
}
