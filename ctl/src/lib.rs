//! `ctl`: the wire protocol between `fwdctl` and the `fwd` daemon, the
//! command language both speak, and a small blocking client.
//!
//! - [`wire`]: the typed messages (requests, changes, answers, errors) and
//!   the protocol description (`PROTOCOL.md`).
//! - [`codec`]: line framing with a length bound, JSON encode/decode.
//! - [`client`]: connect + hello, `call`, `call_stream`.
//! - [`text`]: the `ip`/`tc`-like command language of the CLI, batch files
//!   and saved configurations: one parser, and its inverse.
//!
//! Built with `default-features = false` the library needs only serde and
//! serde_json (the daemon depends on it that way); the `cli` feature adds
//! the `fwdctl` binary (clap, anyhow).

#![deny(unsafe_code)]

pub mod client;
pub mod codec;
pub mod text;
pub mod wire;

pub use client::{Client, ClientError};
pub use codec::{decode, encode};
pub use wire::{
    Change, ErrorBody, ErrorKind, Item, Reply, Request, RequestLine, Response, ResponseLine,
    PROTOCOL_VERSION,
};
