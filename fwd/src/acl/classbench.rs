//! ClassBench rule sets and header traces.
//!
//! Rules (one per line, whitespace-separated, so both the TAB format of
//! `db_generator` and the single-space 5-field variant parse):
//! `@src/len dst/len sport_lo : sport_hi dport_lo : dport_hi proto/mask [flags/mask]`.
//! Line `n` (0-based, counting rule lines) becomes rule id `n` with priority
//! `n`, so line 1 has the highest precedence; actions are empty (Permit).
//!
//! Flags: ClassBench's 16-bit `value/mask` is read as TCP header bytes 12-13
//! (data offset, reserved, AE/NS | CWR ECE URG ACK PSH RST SYN FIN). The key
//! carries the 12-bit flags field (`TCP_FLAGS_MAX`), so the low 12 bits
//! become the rule's `tcp_flags` match and constraints on the data offset
//! (the top 4 bits) are dropped (e.g. `0x1000/0x1000` becomes a wildcard,
//! `0x0303/0xffff` becomes `0x303/0xfff`).
//! The 7-field trace's flags column holds the generating rule's flags as
//! `value << 16 | mask` (e.g. `0x10001000` for `0x1000/0x1000`; wildcards
//! give 0 or `0xffffffff`), so the header's 16-bit flags are its high half
//! and `tcp_flags = (flags >> 16) & 0xfff`.
//!
//! Traces: 7 TAB fields `src dst sport dport proto flags rule` where `rule`
//! is the 0-based *generating* rule (not necessarily the first match), or 6
//! space fields `src dst sport dport proto match` where `match` is the
//! 1-based first matching rule.

use std::net::Ipv4Addr;

use super::rule::{
    IpPrefix, Key, Masked16, Masked8, PortRange, Rule, RuleId, RuleMatch, TCP_FLAGS_MAX,
};

/// A parse failure, naming the 1-based line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {msg}")]
pub struct ParseError {
    pub line: usize,
    pub msg: String,
}

/// What the last column of a trace line says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceTag {
    /// The rule the header was generated from (0-based id).
    Generator(RuleId),
    /// The expected first match (converted to the 0-based id).
    FirstMatch(RuleId),
    /// Expected: no rule matches (a `0` in the 1-based column).
    NoMatch,
}

/// One trace header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceEntry {
    pub key: Key,
    pub tag: TraceTag,
}

fn perr(line: usize, msg: impl Into<String>) -> ParseError {
    ParseError {
        line,
        msg: msg.into(),
    }
}

fn num<T: TryFrom<u64>>(s: &str, line: usize, what: &str) -> Result<T, ParseError> {
    let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16)
    } else {
        s.parse::<u64>()
    }
    .map_err(|_| perr(line, format!("bad {what} {s:?}")))?;
    T::try_from(v).map_err(|_| perr(line, format!("{what} {s:?} out of range")))
}

fn prefix(s: &str, line: usize) -> Result<Option<IpPrefix>, ParseError> {
    let (a, l) = s
        .split_once('/')
        .ok_or_else(|| perr(line, format!("prefix {s:?} lacks /len")))?;
    let addr: Ipv4Addr = a
        .parse()
        .map_err(|_| perr(line, format!("bad address {a:?}")))?;
    let len: u8 = num(l, line, "prefix length")?;
    Ok(Some(IpPrefix::V4 { addr, len }))
}

fn masked(s: &str, line: usize, what: &str) -> Result<(u16, u16), ParseError> {
    let (v, m) = s
        .split_once('/')
        .ok_or_else(|| perr(line, format!("{what} {s:?} lacks /mask")))?;
    Ok((num(v, line, what)?, num(m, line, what)?))
}

/// Parse a ClassBench rule file (either variant). Blank lines are skipped.
///
/// # Errors
/// The first malformed or invalid line.
pub fn parse_rules(text: &str) -> Result<Vec<Rule>, ParseError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let t: Vec<&str> = raw.split_whitespace().collect();
        if t.is_empty() {
            continue;
        }
        if !(t.len() == 9 || t.len() == 10) || t[3] != ":" || t[6] != ":" {
            return Err(perr(
                line,
                "expected `@src/len dst/len lo : hi lo : hi proto/mask [flags/mask]`",
            ));
        }
        let src = t[0]
            .strip_prefix('@')
            .ok_or_else(|| perr(line, "rule must start with '@'"))?;
        let (pv, pm) = masked(t[8], line, "protocol")?;
        let (pv, pm) = (
            u8::try_from(pv).map_err(|_| perr(line, "protocol > 255"))?,
            u8::try_from(pm).map_err(|_| perr(line, "protocol mask > 255"))?,
        );
        let flags = if t.len() == 10 {
            let (v, m) = masked(t[9], line, "flags")?;
            Masked16 {
                value: v & m & TCP_FLAGS_MAX,
                mask: m & TCP_FLAGS_MAX,
            }
        } else {
            Masked16::ANY
        };
        let id = out.len() as RuleId;
        let r = Rule {
            id,
            priority: id,
            matches: RuleMatch {
                src: prefix(src, line)?,
                dst: prefix(t[1], line)?,
                sport: PortRange {
                    lo: num(t[2], line, "port")?,
                    hi: num(t[4], line, "port")?,
                },
                dport: PortRange {
                    lo: num(t[5], line, "port")?,
                    hi: num(t[7], line, "port")?,
                },
                proto: Masked8 {
                    value: pv,
                    mask: pm,
                },
                tcp_flags: flags,
                ..RuleMatch::default()
            },
            actions: Vec::new(),
        };
        r.validate().map_err(|e| perr(line, e.to_string()))?;
        out.push(r);
    }
    Ok(out)
}

/// Parse a ClassBench trace (either variant).
///
/// # Errors
/// The first malformed line.
pub fn parse_trace(text: &str) -> Result<Vec<TraceEntry>, ParseError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let t: Vec<&str> = raw.split_whitespace().collect();
        if t.is_empty() {
            continue;
        }
        let (flags, tag) = match t.len() {
            7 => (
                num::<u64>(t[5], line, "flags")?,
                TraceTag::Generator(num(t[6], line, "rule index")?),
            ),
            6 => {
                let m: u32 = num(t[5], line, "match index")?;
                (
                    0,
                    if m == 0 {
                        TraceTag::NoMatch
                    } else {
                        TraceTag::FirstMatch(m - 1)
                    },
                )
            }
            n => return Err(perr(line, format!("expected 6 or 7 fields, got {n}"))),
        };
        let key = Key {
            src: num::<u32>(t[0], line, "source address")? as u128,
            dst: num::<u32>(t[1], line, "destination address")? as u128,
            sport: num(t[2], line, "source port")?,
            dport: num(t[3], line, "destination port")?,
            proto: num(t[4], line, "protocol")?,
            tcp_flags: ((flags >> 16) & u64::from(TCP_FLAGS_MAX)) as u16,
            ..Key::default()
        };
        out.push(TraceEntry { key, tag });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_rule_variants() {
        let tab = "@133.160.173.244/32\t1.66.212.52/32\t0 : 65535\t1704 : 1704\t0x06/0xFF\t0x0303/0xffff\t\n";
        let sp = "@81.110.124.109/32 249.145.51.3/24 0 : 65535 135 : 135 0x06/0xFF\n";
        let r = parse_rules(tab).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].matches.dport, PortRange::exact(1704));
        assert_eq!(
            r[0].matches.tcp_flags,
            Masked16 {
                value: 0x303,
                mask: 0xfff
            }
        );
        // Host bits are rejected, with the line number.
        let e = parse_rules(sp).unwrap_err();
        assert_eq!(e.line, 1);
        let sp = "@81.110.124.109/32 249.145.51.0/24 0 : 65535 135 : 135 0x06/0xFF\n\n@0.0.0.0/0 0.0.0.0/0 0 : 65535 0 : 65535 0x00/0x00\n";
        let r = parse_rules(sp).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!((r[1].id, r[1].priority), (1, 1));
        assert!(parse_rules("@1.2.3.4/32 1.2.3.4/32 5 : 4 0 : 1 0x06/0xFF").is_err());
    }

    #[test]
    fn both_trace_variants() {
        let t = parse_trace(
            "1817149439\t3252952831\t0\t80\t6\t268439552\t970\n1 2 3 4 17 0\n1 2 3 4 17 12\n",
        )
        .unwrap();
        assert_eq!(t[0].tag, TraceTag::Generator(970));
        assert_eq!(t[0].key.dport, 80);
        assert_eq!(t[0].key.tcp_flags, 0);
        let icmp = parse_trace("1\t2\t3\t4\t1\t50593791\t7\n").unwrap();
        assert_eq!(icmp[0].key.tcp_flags, 0x303);
        assert_eq!(t[1].tag, TraceTag::NoMatch);
        assert_eq!(t[2].tag, TraceTag::FirstMatch(11));
        assert!(parse_trace("1 2 3\n").is_err());
    }
}
