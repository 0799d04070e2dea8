//! The command language of `fwdctl`, shared by its command line, its batch
//! files (`fwdctl -b`) and saved configurations.
//!
//! Contract: [`parse_command`] turns the words after `fwdctl` into a
//! [`Request`](crate::wire::Request); [`parse_batch`] turns a file of change
//! commands into a [`ParsedBatch`], all lines or nothing, with the first bad
//! line named; `Display` on [`Change`](crate::wire::Change) prints the
//! canonical line that parses back to the same change (round trip), which is
//! what a daemon writes for `config save`.
//!
//! Design: one hand-written keyword parser (in the library, not the binary,
//! so the daemon can load a saved configuration with the same code and
//! without clap). It validates what can be checked without the daemon's
//! state (syntax, ranges, host bits, families, conflicting keywords) so that
//! a bad batch line fails before anything is sent; the daemon validates
//! again. The grammar is [`USAGE`].

mod format;
pub mod grammar;
mod parse;
#[cfg(test)]
mod tests;

pub use parse::{
    for_each_change, parse_batch, parse_change, parse_command, split_words, BatchError, Command,
    ParseError, ParsedBatch,
};

/// The grammar, printed by `fwdctl help`.
pub const USAGE: &str = "\
Commands (OBJECT VERB ARGS; a missing VERB means show):

  rule add [id N] prio N [MATCH...] action ACTION...
  rule replace id N prio N [MATCH...] action ACTION...
  rule del [id] N | rule flush | rule show [[id] N] | rule counters [[id] N]
      MATCH   src PREFIX | dst PREFIX | proto NAME|N[/MASK] | sport P[-P]
              | dport P[-P] | iif PORT | vlan N | dscp N|ef|csN|afNN
              | tcp_flags syn,ack,ae|N[/MASK] (12 bits, 0..=0xfff)
      ACTION  permit | drop | count | redirect PORT | mirror PORT | nexthop ID
              | table N | police rate 10mbit|1000pps burst 64k|N
              | set-dscp N | mark N
      A lower prio wins; ties go to the lower id. Without /MASK a value is exact.
      permit, drop, redirect, nexthop, table and police are verdicts: the first
      matching rule with one decides. A rule with only count, mirror, set-dscp
      or mark applies them and evaluation goes on (shown ending in 'continue').

  route add|replace PREFIX [table N] TARGET
  route del PREFIX [table N] [TARGET]
  route show [table N|all] [v4|v6] [proto P] [PREFIX]   (PREFIX: it and more
                                 specifics)
  route get ADDRESS [table N]
  route flush [table N|all] [v4|v6] [proto static] [PREFIX]
                                 delete the static routes selected, at once
      TARGET  via ADDRESS [dev PORT] | dev PORT | nhid ID | nexthop-group ID
              | blackhole | reject | local
      PREFIX  ADDRESS/LEN (host bits zero), a bare ADDRESS (host route), default

  nexthop add|replace [id] N [via ADDRESS] dev PORT
  nexthop del [id] N | nexthop show [[id] N]
  group add|replace [id] N [members] ID[:WEIGHT]...
  group del [id] N | group show [[id] N]

  neigh add|replace ADDRESS lladdr MAC dev PORT
  neigh del ADDRESS dev PORT | neigh show [dev PORT]
  neigh flush [dev PORT]         forget learned entries (statics stay)
  address add|del ADDRESS[/LEN] dev PORT | address show [dev PORT]

  port show|stats|xstats [PORT]
  port set PORT up|down          admin state (down: no RX/TX, out of ECMP)
  stats                          counters: global, per lcore, per port, drops
  status                         generations, workers, reclamation, uptime
  config save NAME|PATH          save the running tables: NAME into the
                                 daemon's save_dir, a PATH only as root
  watch [interval 1s|500ms] [count N]   live rates
  help [OBJECT]
  completion bash|zsh            a shell completion script (fwdctl only):
                                 source <(fwdctl completion bash)

  trace N [port PORT] [MATCH...]
      the next N (<= 10000) matching packets' way through the stages:
      parse, rules matched, route, next hop, verdict (one trace at a time)
  capture port PORT [in|out] [MATCH...] [snaplen N] [rate N] -c N -w FILE
      copy the next N matching packets of PORT (in: as received, out: as
      sent) into the pcap FILE (- for stdout), written by fwdctl as you;
      snaplen <= 2048 (default 256), rate <= 100000 pps (default 1000)

Aliases: ro/r = route, ru = rule, nh = nexthop, nhg = group, n = neigh,
a/addr = address, p = port; ls/list = show, delete = del.

Batch files (-b FILE, -b - for stdin): one change command per line (add, del,
replace, flush), without the leading 'fwdctl'; blank lines and # comments are
skipped. Every line is parsed before anything is sent; the daemon applies the
whole file as one generation or nothing.
";

/// The part of [`USAGE`] about `topic` (an object name or alias), or the
/// whole text for `None`; `None` for an unknown topic.
pub fn usage(topic: Option<&str>) -> Option<&'static str> {
    let Some(t) = topic else {
        return Some(USAGE);
    };
    let (start, end) = match t {
        "rule" | "ru" | "rules" => ("  rule add", "  route add"),
        "route" | "ro" | "r" | "routes" => ("  route add", "  nexthop add"),
        "nexthop" | "nh" | "group" | "nhg" => ("  nexthop add", "  neigh add"),
        "neigh" | "neighbor" | "neighbour" | "n" | "address" | "addr" | "a" => {
            ("  neigh add", "  port show")
        }
        "port" | "ports" | "p" | "stats" | "status" | "config" | "watch" | "help" => {
            ("  port show", "  trace N")
        }
        "trace" | "capture" => ("  trace N", "Aliases:"),
        "batch" | "-b" => ("Batch files", "\u{0}"),
        _ => return None,
    };
    let s = USAGE.find(start)?;
    let e = USAGE[s..].find(end).map_or(USAGE.len(), |e| s + e);
    Some(&USAGE[s..e])
}
