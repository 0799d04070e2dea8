//! The reference LPM: obviously correct, deliberately slow.
//!
//! One `HashMap` per prefix length; a lookup masks the address to every length
//! from the longest down to 0 and returns the first hit. It is the model of the
//! property tests and the definition of correct for the rest of the appliance:
//! whatever [`Routing`](super::Routing) answers must equal what this answers.

use std::collections::HashMap;

use super::{mask4, mask6, Prefix4, Prefix6, Target};

/// Naive longest-prefix match over `W`-bit addresses (`u128`, right-aligned).
#[derive(Clone, Debug)]
pub struct RefLpm {
    width: u8,
    by_len: Vec<HashMap<u128, Target>>,
    len: usize,
}

impl RefLpm {
    /// An empty IPv4 table.
    pub fn v4() -> Self {
        Self::with_width(32)
    }

    /// An empty IPv6 table.
    pub fn v6() -> Self {
        Self::with_width(128)
    }

    fn with_width(width: u8) -> Self {
        RefLpm {
            width,
            by_len: vec![HashMap::new(); width as usize + 1],
            len: 0,
        }
    }

    fn mask(&self, len: u8) -> u128 {
        if self.width == 32 {
            mask4(len) as u128
        } else {
            mask6(len)
        }
    }

    /// Number of prefixes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no prefixes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sets `addr/len` (host bits are masked off); returns the previous target.
    ///
    /// # Panics
    /// If `len` exceeds the width.
    pub fn insert(&mut self, addr: u128, len: u8, t: Target) -> Option<Target> {
        let a = addr & self.mask(len);
        let old = self.by_len[len as usize].insert(a, t);
        self.len += usize::from(old.is_none());
        old
    }

    /// Removes `addr/len`; returns its target.
    ///
    /// # Panics
    /// If `len` exceeds the width.
    pub fn remove(&mut self, addr: u128, len: u8) -> Option<Target> {
        let a = addr & self.mask(len);
        let old = self.by_len[len as usize].remove(&a);
        self.len -= usize::from(old.is_some());
        old
    }

    /// Exact match.
    pub fn get(&self, addr: u128, len: u8) -> Option<Target> {
        self.by_len
            .get(len as usize)?
            .get(&(addr & self.mask(len)))
            .copied()
    }

    /// Longest match: `(prefix length, target)`.
    pub fn lookup(&self, addr: u128) -> Option<(u8, Target)> {
        (0..=self.width).rev().find_map(|len| {
            self.by_len[len as usize]
                .get(&(addr & self.mask(len)))
                .map(|&t| (len, t))
        })
    }

    /// IPv4 convenience.
    pub fn insert4(&mut self, p: Prefix4, t: Target) -> Option<Target> {
        self.insert(p.addr() as u128, p.len(), t)
    }

    /// IPv6 convenience.
    pub fn insert6(&mut self, p: Prefix6, t: Target) -> Option<Target> {
        self.insert(p.addr(), p.len(), t)
    }

    /// IPv4 convenience: the target only.
    pub fn lookup4(&self, a: u32) -> Option<Target> {
        self.lookup(a as u128).map(|x| x.1)
    }

    /// IPv6 convenience: the target only.
    pub fn lookup6(&self, a: u128) -> Option<Target> {
        self.lookup(a).map(|x| x.1)
    }

    /// All prefixes, sorted by (address, length).
    pub fn sorted(&self) -> Vec<(u128, u8, Target)> {
        let mut v: Vec<(u128, u8, Target)> = self
            .by_len
            .iter()
            .enumerate()
            .flat_map(|(l, m)| m.iter().map(move |(&a, &t)| (a, l as u8, t)))
            .collect();
        v.sort_by_key(|&(a, l, _)| (a, l));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_wins() {
        let mut r = RefLpm::v4();
        r.insert(0, 0, Target::Blackhole);
        r.insert(0x0a00_0000, 8, Target::NextHop(1));
        r.insert(0x0a01_0000, 16, Target::NextHop(2));
        assert_eq!(r.lookup4(0x0a01_0203), Some(Target::NextHop(2)));
        assert_eq!(r.lookup4(0x0a02_0203), Some(Target::NextHop(1)));
        assert_eq!(r.lookup4(0x0b00_0000), Some(Target::Blackhole));
        assert_eq!(r.remove(0, 0), Some(Target::Blackhole));
        assert_eq!(r.lookup4(0x0b00_0000), None);
        assert_eq!(r.len(), 2);
    }
}
