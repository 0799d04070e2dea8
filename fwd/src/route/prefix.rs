//! IPv4/IPv6 prefixes that are valid by construction.
//!
//! A prefix with host bits set (`10.0.0.1/8`) is rejected with
//! [`PrefixError::HostBitsSet`] rather than silently normalised: a typo in a route
//! file must not install a different route than the operator wrote. Callers that
//! really want normalisation use [`Prefix4::new_truncate`] / [`Prefix6::new_truncate`].

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// Why a prefix could not be built or parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PrefixError {
    /// Not of the form `ADDR/LEN` with a valid address and decimal length.
    #[error("invalid prefix syntax {0:?} (expected ADDR/LEN)")]
    Syntax(String),
    /// The length exceeds the address width.
    #[error("prefix length {len} exceeds {max}")]
    LengthTooLong {
        /// Length given.
        len: u8,
        /// 32 or 128.
        max: u8,
    },
    /// Bits beyond the prefix length are set.
    #[error("prefix {given} has host bits set (did you mean {normalized}?)")]
    HostBitsSet {
        /// As written.
        given: String,
        /// With the host bits cleared.
        normalized: String,
    },
}

/// An IPv4 prefix `addr/len` with no host bits set. Orders by (address, length),
/// which is the order of a pre-order walk of the binary trie (dump order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Prefix4 {
    addr: u32,
    len: u8,
}

/// An IPv6 prefix `addr/len` (address as a host-order `u128`, i.e.
/// `u128::from_be_bytes(octets)`) with no host bits set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Prefix6 {
    addr: u128,
    len: u8,
}

/// Either family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Prefix {
    /// IPv4.
    V4(Prefix4),
    /// IPv6.
    V6(Prefix6),
}

/// Netmask of `len` bits in a `u32` (`len` <= 32).
#[inline]
pub const fn mask4(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - len as u32)
    }
}

/// Netmask of `len` bits in a `u128` (`len` <= 128).
#[inline]
pub const fn mask6(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - len as u32)
    }
}

/// The methods, `Display` and `FromStr` of [`Prefix4`] and [`Prefix6`]: the
/// same code over each family's address word.
macro_rules! family_prefix {
    ($name:ident, $word:ty, $ip:ty, $bits:literal, $mask:ident, $default:literal) => {
        impl $name {
            #[doc = concat!("The default route `", $default, "`.")]
            pub const DEFAULT: $name = $name { addr: 0, len: 0 };

            /// `addr/len`.
            ///
            /// # Errors
            #[doc = concat!("[`PrefixError::LengthTooLong`] if `len > ", $bits, "`,")]
            /// [`PrefixError::HostBitsSet`] if `addr` has bits set beyond `len`.
            pub fn new(addr: $word, len: u8) -> Result<Self, PrefixError> {
                if len > $bits {
                    return Err(PrefixError::LengthTooLong { len, max: $bits });
                }
                if addr & !$mask(len) != 0 {
                    return Err(PrefixError::HostBitsSet {
                        given: format!("{}/{len}", <$ip>::from(addr)),
                        normalized: format!("{}/{len}", <$ip>::from(addr & $mask(len))),
                    });
                }
                Ok($name { addr, len })
            }

            /// `addr/len` with the host bits of `addr` cleared.
            ///
            /// # Errors
            #[doc = concat!("[`PrefixError::LengthTooLong`] if `len > ", $bits, "`.")]
            pub fn new_truncate(addr: $word, len: u8) -> Result<Self, PrefixError> {
                if len > $bits {
                    return Err(PrefixError::LengthTooLong { len, max: $bits });
                }
                Ok($name {
                    addr: addr & $mask(len),
                    len,
                })
            }

            /// Network address.
            #[inline]
            pub fn addr(self) -> $word {
                self.addr
            }

            #[doc = concat!("Prefix length (0..=", $bits, ").")]
            #[inline]
            #[allow(clippy::len_without_is_empty)]
            pub fn len(self) -> u8 {
                self.len
            }

            /// Last address covered (for IPv4, the broadcast address).
            #[inline]
            pub fn last(self) -> $word {
                self.addr | !$mask(self.len)
            }

            /// Whether `a` is covered.
            #[inline]
            pub fn contains(self, a: $word) -> bool {
                a & $mask(self.len) == self.addr
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}/{}", <$ip>::from(self.addr), self.len)
            }
        }

        impl FromStr for $name {
            type Err = PrefixError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                let (a, len) = split(s)?;
                let a: $ip = a.parse().map_err(|_| PrefixError::Syntax(s.to_string()))?;
                $name::new(<$word>::from(a), len)
            }
        }
    };
}

family_prefix!(Prefix4, u32, Ipv4Addr, 32, mask4, "0.0.0.0/0");
family_prefix!(Prefix6, u128, Ipv6Addr, 128, mask6, "::/0");

impl Prefix {
    /// Prefix length.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(self) -> u8 {
        match self {
            Prefix::V4(p) => p.len,
            Prefix::V6(p) => p.len,
        }
    }

    /// Whether this is an IPv4 prefix.
    pub fn is_v4(self) -> bool {
        matches!(self, Prefix::V4(_))
    }

    /// The prefix of length `len` holding `a` (host bits cleared).
    pub fn truncate(a: IpAddr, len: u8) -> Result<Prefix, PrefixError> {
        Ok(match a {
            IpAddr::V4(a) => Prefix::V4(Prefix4::new_truncate(u32::from(a), len)?),
            IpAddr::V6(a) => Prefix::V6(Prefix6::new_truncate(u128::from(a), len)?),
        })
    }

    /// Whether `a` (of the same family) lies inside.
    pub fn contains(self, a: IpAddr) -> bool {
        match (self, a) {
            (Prefix::V4(p), IpAddr::V4(a)) => p.contains(u32::from(a)),
            (Prefix::V6(p), IpAddr::V6(a)) => p.contains(u128::from(a)),
            _ => false,
        }
    }
}

impl From<Prefix4> for Prefix {
    fn from(p: Prefix4) -> Self {
        Prefix::V4(p)
    }
}

impl From<Prefix6> for Prefix {
    fn from(p: Prefix6) -> Self {
        Prefix::V6(p)
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Prefix::V4(p) => p.fmt(f),
            Prefix::V6(p) => p.fmt(f),
        }
    }
}

fn split(s: &str) -> Result<(&str, u8), PrefixError> {
    let syntax = || PrefixError::Syntax(s.to_string());
    let (a, l) = s.split_once('/').ok_or_else(syntax)?;
    if l.is_empty() || l.len() > 3 || !l.bytes().all(|b| b.is_ascii_digit()) {
        return Err(syntax());
    }
    let len: u16 = l.parse().map_err(|_| syntax())?;
    let len = u8::try_from(len).map_err(|_| syntax())?;
    Ok((a, len))
}

impl FromStr for Prefix {
    type Err = PrefixError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.contains(':') {
            s.parse().map(Prefix::V6)
        } else {
            s.parse().map(Prefix::V4)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_display() {
        let p: Prefix4 = "10.1.0.0/16".parse().unwrap();
        assert_eq!(p.addr(), 0x0a01_0000);
        assert_eq!(p.len(), 16);
        assert_eq!(p.last(), 0x0a01_ffff);
        assert_eq!(p.to_string(), "10.1.0.0/16");
        let q: Prefix = "2001:db8::/32".parse().unwrap();
        assert_eq!(q.to_string(), "2001:db8::/32");
        assert!(matches!(q, Prefix::V6(p) if p.len() == 32));
        let d: Prefix4 = "0.0.0.0/0".parse().unwrap();
        assert_eq!(d, Prefix4::DEFAULT);
        assert_eq!(d.last(), u32::MAX);
        let all: Prefix6 = "::/0".parse().unwrap();
        assert_eq!(all.last(), u128::MAX);
        let host: Prefix6 = "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"
            .parse()
            .unwrap();
        assert_eq!(host.addr(), u128::MAX);
    }

    #[test]
    fn rejects_bad_prefixes() {
        let e = "10.0.0.1/8".parse::<Prefix4>().unwrap_err();
        assert_eq!(
            e,
            PrefixError::HostBitsSet {
                given: "10.0.0.1/8".into(),
                normalized: "10.0.0.0/8".into()
            }
        );
        assert!(e.to_string().contains("did you mean 10.0.0.0/8"));
        assert!(matches!(
            "10.0.0.0/33".parse::<Prefix4>(),
            Err(PrefixError::LengthTooLong { len: 33, max: 32 })
        ));
        assert!(matches!(
            "::/129".parse::<Prefix6>(),
            Err(PrefixError::LengthTooLong { .. })
        ));
        for bad in [
            "10.0.0.0",
            "10.0.0.0/",
            "10.0.0.0/x",
            "10.0.0/8",
            "/8",
            "10.0.0.0/+8",
        ] {
            assert!(
                matches!(bad.parse::<Prefix4>(), Err(PrefixError::Syntax(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            "2001:db8::1/32".parse::<Prefix>(),
            Err(PrefixError::HostBitsSet { .. })
        ));
        assert_eq!(
            Prefix4::new_truncate(0x0a00_0001, 8).unwrap(),
            Prefix4::new(0x0a00_0000, 8).unwrap()
        );
    }

    #[test]
    fn ordering_is_preorder() {
        let mut v: Vec<Prefix4> = ["10.0.0.0/16", "10.0.0.0/8", "9.0.0.0/8", "10.0.1.0/24"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        v.sort();
        let s: Vec<String> = v.iter().map(|p| p.to_string()).collect();
        assert_eq!(s, ["9.0.0.0/8", "10.0.0.0/8", "10.0.0.0/16", "10.0.1.0/24"]);
    }
}
