//! `placectl`: the operator's command-line client of `placed`, and its offline commands.
//!
//! # Layout
//!
//! - [`client`]: connecting to the daemon (its Unix socket, or TCP with TLS).
//! - [`metric`]: `--metric` as typed to the structured metric source on the wire.
//! - [`cli`]: what `placectl` prints, as tables for people and JSON for programs, and its
//!   exit codes. The binary (`src/main.rs`) parses flags and calls into these.

pub mod cli;
pub mod client;
pub mod metric;
