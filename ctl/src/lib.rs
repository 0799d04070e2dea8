//! The wire protocol between `fwdctl` and the `fwd` daemon (serde types only).
