//! `placectl`: the operator's command-line client of `placed`, and its offline commands.
//!
//! # Layout
//!
//! - [`args`]: the command line as typed (clap), connection options before or after the
//!   command's name.
//! - [`commands`]: one module per command: its typed arguments, their validation, what it
//!   does and prints; registered in one list.
//! - [`request`]: the command line validated: the command, and where the daemon is.
//! - [`run`]: runs it, and turns an error into its one line and its exit code.
//! - [`client`]: connecting to the daemon (its Unix socket, or TCP with TLS).
//! - [`metric`]: `--metric` as typed to the structured metric source on the wire.
//! - [`cli`]: what `placectl` prints that several commands share (tables, JSON, the
//!   daemon's names for states and times, TLS failures, exit codes).
//!
//! The binary (`src/main.rs`) parses the command line and calls [`run::run`].

pub mod args;
pub mod cli;
pub mod client;
pub mod commands;
pub mod metric;
pub mod request;
pub mod run;
