//! The forwarding appliance's data path and control plane.
#![deny(unsafe_code)]
