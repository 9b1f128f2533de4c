//! The protocol's messages and services, generated at build time from proto/nri.proto.
#![allow(
    clippy::all,
    clippy::pedantic,
    clippy::unwrap_used,
    clippy::cast_possible_truncation
)]
#![allow(missing_debug_implementations, unused_qualifications)]

include!(concat!(env!("OUT_DIR"), "/generated.rs"));
