//! Interface addresses as the published tables hold them.

use std::net::IpAddr;

use crate::route::Prefix;

/// An address of a port with the length of its subnet (`10.0.1.1/24`): the
/// host bits are the address itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IfAddr {
    addr: IpAddr,
    len: u8,
}

impl IfAddr {
    /// `None` when `len` exceeds the family's width (32 or 128).
    pub fn new(addr: IpAddr, len: u8) -> Option<IfAddr> {
        let width = if addr.is_ipv4() { 32 } else { 128 };
        (len <= width).then_some(IfAddr { addr, len })
    }

    pub fn addr(self) -> IpAddr {
        self.addr
    }

    /// The subnet's length.
    pub fn prefix_len(self) -> u8 {
        self.len
    }

    /// The attached subnet (`10.0.1.0/24`).
    pub fn subnet(self) -> Prefix {
        Prefix::truncate(self.addr, self.len).expect("length checked by new")
    }

    /// Whether the subnet is more than the address itself (not a /32 or
    /// /128): only then are other hosts on it attached.
    pub fn has_peers(self) -> bool {
        self.len < if self.addr.is_ipv4() { 32 } else { 128 }
    }

    /// Whether `a` lies in the subnet.
    pub fn contains(self, a: IpAddr) -> bool {
        self.subnet().contains(a)
    }
}

impl std::fmt::Display for IfAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subnet_and_membership() {
        let a = IfAddr::new("10.0.1.1".parse().unwrap(), 24).unwrap();
        assert_eq!(a.to_string(), "10.0.1.1/24");
        assert_eq!(a.subnet().to_string(), "10.0.1.0/24");
        assert!(a.contains("10.0.1.200".parse().unwrap()));
        assert!(!a.contains("10.0.2.1".parse().unwrap()));
        assert!(!a.contains("::1".parse().unwrap()));
        assert!(a.has_peers());
        let h = IfAddr::new("2001:db8::1".parse().unwrap(), 128).unwrap();
        assert!(!h.has_peers());
        assert!(IfAddr::new("10.0.0.1".parse().unwrap(), 33).is_none());
        assert!(IfAddr::new("::1".parse().unwrap(), 129).is_none());
    }
}
