//! The command words: objects, their verbs and the keywords after them.
//! The parser checks verbs against this table, and `fwdctl completion`
//! builds the shell completion from it, so the two cannot drift apart.

/// One object of the language (`route`, `rule`, ...).
pub struct Object {
    pub name: &'static str,
    /// Its verbs, canonical spelling (aliases are the parser's business).
    pub verbs: &'static [&'static str],
    /// The fixed words that may follow the verb (values are free).
    pub keywords: &'static [&'static str],
}

const MATCH_AND_ACTION: &[&str] = &[
    "id",
    "prio",
    "src",
    "dst",
    "proto",
    "sport",
    "dport",
    "iif",
    "vlan",
    "dscp",
    "tcp_flags",
    "action",
    "permit",
    "drop",
    "count",
    "redirect",
    "mirror",
    "nexthop",
    "table",
    "police",
    "rate",
    "burst",
    "set-dscp",
    "mark",
];

const TRACE: &[&str] = &[
    "port",
    "src",
    "dst",
    "proto",
    "sport",
    "dport",
    "vlan",
    "dscp",
    "tcp_flags",
];

const CAPTURE: &[&str] = &[
    "port",
    "in",
    "out",
    "src",
    "dst",
    "proto",
    "sport",
    "dport",
    "vlan",
    "dscp",
    "tcp_flags",
    "snaplen",
    "rate",
    "-c",
    "-w",
];

/// Every object, in the order `help` lists them.
pub const OBJECTS: &[Object] = &[
    Object {
        name: "rule",
        verbs: &["add", "del", "replace", "show", "flush", "counters"],
        keywords: MATCH_AND_ACTION,
    },
    Object {
        name: "route",
        verbs: &["add", "del", "replace", "show", "get", "flush"],
        keywords: &[
            "table",
            "via",
            "dev",
            "nhid",
            "nexthop-group",
            "nexthop",
            "weight",
            "blackhole",
            "reject",
            "local",
            "default",
            "v4",
            "v6",
            "proto",
            "within",
            "all",
        ],
    },
    Object {
        name: "nexthop",
        verbs: &["add", "del", "replace", "show"],
        keywords: &["id", "via", "dev"],
    },
    Object {
        name: "group",
        verbs: &["add", "del", "replace", "show"],
        keywords: &["id", "members"],
    },
    Object {
        name: "neigh",
        verbs: &["add", "del", "replace", "show", "flush"],
        keywords: &["lladdr", "dev"],
    },
    Object {
        name: "address",
        verbs: &["add", "del", "show"],
        keywords: &["dev"],
    },
    Object {
        name: "port",
        verbs: &["show", "stats", "xstats", "set"],
        keywords: &["up", "down"],
    },
    Object {
        name: "stats",
        verbs: &[],
        keywords: &[],
    },
    Object {
        name: "status",
        verbs: &[],
        keywords: &[],
    },
    Object {
        name: "fpm",
        verbs: &["show"],
        keywords: &[],
    },
    Object {
        name: "config",
        verbs: &["save"],
        keywords: &[],
    },
    Object {
        name: "watch",
        verbs: &[],
        keywords: &["interval", "count"],
    },
    Object {
        name: "trace",
        verbs: &[],
        keywords: TRACE,
    },
    Object {
        name: "capture",
        verbs: &[],
        keywords: CAPTURE,
    },
];

/// The verbs of `object` (canonical name); empty for an unknown one.
pub fn verbs(object: &str) -> &'static [&'static str] {
    OBJECTS
        .iter()
        .find(|o| o.name == object)
        .map_or(&[], |o| o.verbs)
}
