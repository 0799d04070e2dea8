//! Address types of the wire: prefixes and MACs travel as strings
//! (`"10.0.0.0/8"`, `"2001:db8::/32"`, `"02:00:00:00:01:02"`), parsed once
//! on decode so neither side re-parses text after the codec.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An IP prefix or an interface address in CIDR notation.
///
/// The type only guarantees `len <= width` of the family. Host bits may be
/// set (an interface address `10.0.1.1/24` needs them); where a prefix must
/// be a network (routes, rule matches) the receiver checks
/// [`IpNet::is_network`] and rejects it rather than silently truncating, so
/// a typo does not become a different, wider prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IpNet {
    addr: IpAddr,
    len: u8,
}

/// Why a string is not an [`IpNet`] or a [`Mac`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetParseError {
    /// No `/len` part.
    MissingLength,
    /// The address part does not parse.
    BadAddress,
    /// The length does not parse or exceeds the family's width.
    BadLength,
    /// Not six colon-separated hex bytes.
    BadMac,
}

impl fmt::Display for NetParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NetParseError::MissingLength => "missing '/length'",
            NetParseError::BadAddress => "not an IPv4 or IPv6 address",
            NetParseError::BadLength => "prefix length out of range",
            NetParseError::BadMac => "not a MAC address (six hex bytes separated by ':')",
        })
    }
}

impl std::error::Error for NetParseError {}

impl IpNet {
    /// `0.0.0.0/0`.
    pub const DEFAULT_V4: IpNet = IpNet {
        addr: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        len: 0,
    };

    /// A prefix; `None` when `len` exceeds the family's width (32 or 128).
    pub fn new(addr: IpAddr, len: u8) -> Option<IpNet> {
        (len <= width(addr)).then_some(IpNet { addr, len })
    }

    /// The host prefix of `addr` (`/32` or `/128`).
    pub fn host(addr: IpAddr) -> IpNet {
        IpNet {
            addr,
            len: width(addr),
        }
    }

    pub fn addr(self) -> IpAddr {
        self.addr
    }

    /// The prefix length.
    pub fn prefix_len(self) -> u8 {
        self.len
    }

    /// Address family width in bits: 32 or 128.
    pub fn width(self) -> u8 {
        width(self.addr)
    }

    pub fn is_ipv4(self) -> bool {
        self.addr.is_ipv4()
    }

    /// True when every host bit is zero (a network prefix).
    pub fn is_network(self) -> bool {
        self.network() == self
    }

    /// The prefix with its host bits cleared.
    pub fn network(self) -> IpNet {
        let addr = match self.addr {
            IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(u32::from(a) & mask32(self.len))),
            IpAddr::V6(a) => IpAddr::V6(Ipv6Addr::from(u128::from(a) & mask128(self.len))),
        };
        IpNet {
            addr,
            len: self.len,
        }
    }

    /// True when `a` (of the same family) lies inside the prefix.
    pub fn contains(self, a: IpAddr) -> bool {
        match (self.addr, a) {
            (IpAddr::V4(n), IpAddr::V4(a)) => (u32::from(n) ^ u32::from(a)) & mask32(self.len) == 0,
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                (u128::from(n) ^ u128::from(a)) & mask128(self.len) == 0
            }
            _ => false,
        }
    }

    /// True when `other` is equal to or more specific than `self`.
    pub fn covers(self, other: IpNet) -> bool {
        other.len >= self.len && self.contains(other.addr)
    }
}

fn width(a: IpAddr) -> u8 {
    if a.is_ipv4() {
        32
    } else {
        128
    }
}

fn mask32(len: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0)
}

fn mask128(len: u8) -> u128 {
    u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0)
}

/// Parses an address without allocating, choosing the family by the
/// presence of `:` (std's `IpAddr::from_str` tries IPv4 then IPv6).
pub(crate) fn parse_addr(s: &str) -> Option<IpAddr> {
    if s.contains(':') {
        Ipv6Addr::from_str(s).ok().map(IpAddr::V6)
    } else {
        Ipv4Addr::from_str(s).ok().map(IpAddr::V4)
    }
}

impl FromStr for IpNet {
    type Err = NetParseError;

    /// `ADDR/LEN`; the length is required (the wire never guesses).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (a, l) = s.split_once('/').ok_or(NetParseError::MissingLength)?;
        let addr = parse_addr(a).ok_or(NetParseError::BadAddress)?;
        // u8::from_str accepts a leading '+'; a prefix length never has one.
        if l.is_empty() || !l.bytes().all(|b| b.is_ascii_digit()) {
            return Err(NetParseError::BadLength);
        }
        let len = l.parse::<u8>().map_err(|_| NetParseError::BadLength)?;
        IpNet::new(addr, len).ok_or(NetParseError::BadLength)
    }
}

impl fmt::Display for IpNet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.addr {
            // A full table is a million of these: skip the generic machinery.
            IpAddr::V4(a) => {
                let mut buf = [0u8; 18];
                let mut n = 0;
                for (i, o) in a.octets().into_iter().enumerate() {
                    if i > 0 {
                        buf[n] = b'.';
                        n += 1;
                    }
                    n += put_u8(o, &mut buf[n..]);
                }
                buf[n] = b'/';
                n += 1;
                n += put_u8(self.len, &mut buf[n..]);
                f.pad(std::str::from_utf8(&buf[..n]).map_err(|_| fmt::Error)?)
            }
            IpAddr::V6(a) => write!(f, "{a}/{}", self.len),
        }
    }
}

/// Writes `v` in decimal at the start of `out` (room for 3 digits);
/// returns the digit count.
fn put_u8(v: u8, out: &mut [u8]) -> usize {
    if v >= 100 {
        out[0] = b'0' + v / 100;
        out[1] = b'0' + v / 10 % 10;
        out[2] = b'0' + v % 10;
        3
    } else if v >= 10 {
        out[0] = b'0' + v / 10;
        out[1] = b'0' + v % 10;
        2
    } else {
        out[0] = b'0' + v;
        1
    }
}

/// A small stack buffer to format a value before handing serde one `&str`
/// (serde_json's `collect_str` escapes fragment by fragment).
struct StrBuf {
    buf: [u8; 64],
    len: usize,
}

impl fmt::Write for StrBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        self.buf
            .get_mut(self.len..end)
            .ok_or(fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// An Ethernet MAC address, written `02:00:00:00:01:02` (lower-case hex).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mac(pub [u8; 6]);

impl FromStr for Mac {
    type Err = NetParseError;

    /// Six hex bytes of one or two digits separated by `:` (or all by `-`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let sep = if s.contains('-') { '-' } else { ':' };
        let mut out = [0u8; 6];
        let mut n = 0;
        for part in s.split(sep) {
            if n == 6 || part.is_empty() || part.len() > 2 {
                return Err(NetParseError::BadMac);
            }
            out[n] = u8::from_str_radix(part, 16).map_err(|_| NetParseError::BadMac)?;
            if !part.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(NetParseError::BadMac);
            }
            n += 1;
        }
        if n != 6 {
            return Err(NetParseError::BadMac);
        }
        Ok(Mac(out))
    }
}

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            m[0], m[1], m[2], m[3], m[4], m[5]
        )
    }
}

/// Serde for the string-typed wire values: `Display` out, `FromStr` in,
/// reading borrowed strings so decoding a large batch does not allocate
/// per address.
macro_rules! string_serde {
    ($t:ty, $expect:literal) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use fmt::Write;
                let mut b = StrBuf {
                    buf: [0; 64],
                    len: 0,
                };
                // Only whole `&str`s were copied in, so the bytes are UTF-8.
                match write!(b, "{self}").map(|()| std::str::from_utf8(&b.buf[..b.len])) {
                    Ok(Ok(text)) => s.serialize_str(text),
                    _ => s.collect_str(self),
                }
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl Visitor<'_> for V {
                    type Value = $t;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($expect)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$t, E> {
                        v.parse()
                            .map_err(|e| E::custom(format_args!("invalid {} {v:?}: {e}", $expect)))
                    }
                }
                d.deserialize_str(V)
            }
        }
    };
}

string_serde!(IpNet, "prefix");
string_serde!(Mac, "MAC address");

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> IpNet {
        s.parse().unwrap()
    }

    #[test]
    fn prefixes_parse_and_print() {
        assert_eq!(net("10.0.0.0/8").to_string(), "10.0.0.0/8");
        assert_eq!(net("255.100.9.0/24").to_string(), "255.100.9.0/24");
        assert_eq!(format!("{:>12}|", net("1.2.3.0/24")), "  1.2.3.0/24|");
        let long = "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128";
        assert_eq!(
            serde_json::to_string(&net(long)).unwrap(),
            format!("\"{long}\"")
        );
        assert_eq!(net("2001:db8::/32").to_string(), "2001:db8::/32");
        assert_eq!(net("0.0.0.0/0").prefix_len(), 0);
        assert_eq!(net("::/0").width(), 128);
        assert_eq!(
            "10.0.0.0".parse::<IpNet>(),
            Err(NetParseError::MissingLength)
        );
        assert_eq!(
            "10.0.0.0/33".parse::<IpNet>(),
            Err(NetParseError::BadLength)
        );
        assert_eq!(
            "10.0.0.0/+8".parse::<IpNet>(),
            Err(NetParseError::BadLength)
        );
        assert_eq!("10.0.0/8".parse::<IpNet>(), Err(NetParseError::BadAddress));
        assert_eq!(
            "2001:db8::/129".parse::<IpNet>(),
            Err(NetParseError::BadLength)
        );
    }

    #[test]
    fn host_bits_and_containment() {
        assert!(net("10.0.0.0/8").is_network());
        assert!(!net("10.0.0.1/8").is_network());
        assert_eq!(net("10.1.2.3/8").network(), net("10.0.0.0/8"));
        assert_eq!(net("2001:db8::1/32").network(), net("2001:db8::/32"));
        assert!(net("0.0.0.0/0").is_network());
        assert!(net("10.0.0.0/8").contains("10.255.0.1".parse().unwrap()));
        assert!(!net("10.0.0.0/8").contains("11.0.0.1".parse().unwrap()));
        assert!(!net("10.0.0.0/8").contains("::1".parse().unwrap()));
        assert!(net("10.0.0.0/8").covers(net("10.1.0.0/16")));
        assert!(!net("10.1.0.0/16").covers(net("10.0.0.0/8")));
        assert_eq!(IpNet::host("::1".parse().unwrap()).to_string(), "::1/128");
    }

    #[test]
    fn macs() {
        let m: Mac = "02:00:00:00:01:0A".parse().unwrap();
        assert_eq!(m.to_string(), "02:00:00:00:01:0a");
        assert_eq!("2-0-0-0-1-a".parse::<Mac>().unwrap(), m);
        for bad in [
            "02:00:00:00:01",
            "02:00:00:00:01:02:03",
            "02::00:00:01:02",
            "0g:00:00:00:01:02",
            "002:00:00:00:01:02",
            "+2:00:00:00:01:02",
        ] {
            assert_eq!(bad.parse::<Mac>(), Err(NetParseError::BadMac), "{bad}");
        }
    }
}
