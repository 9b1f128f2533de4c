//! `placectl`'s command line as typed: clap's derive, nothing checked beyond the types.
//! [`crate::request`] validates it into what runs.
//!
//! The connection options are accepted before the command's name (`placectl --socket PATH
//! status`, as kubectl and systemctl take theirs) and after it (`placectl status --socket
//! PATH`); typed in both places, the one after the name wins. They are kept as typed
//! (`None` when absent) so that the validation can tell where each came from, apply
//! `PLACED_SOCKET` and the defaults, and refuse them on a command that does not talk to
//! the daemon.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser};

use crate::cli::Exit;
use crate::commands::Command;

#[derive(Parser, Debug)]
#[command(
    name = "placectl",
    version,
    about = "Inspect and drive placed, the NUMA placement daemon",
    after_help = Exit::help_table()
)]
pub struct Cli {
    /// Print JSON (schemas in docs/cli-json.md) instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(flatten)]
    pub connection: ConnectionArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Where the daemon is, as typed, for the commands that talk to it (and only those).
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Daemon connection")]
pub struct ConnectionArgs {
    /// The daemon's Unix socket [env: PLACED_SOCKET] [default: /run/placed/placed.sock].
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// A remote daemon over TCP with TLS, e.g. https://host:7443 (instead of the socket);
    /// needs --ca.
    #[arg(long, value_name = "URL")]
    pub addr: Option<String>,
    /// CA certificate (PEM) the remote daemon's certificate is checked against.
    #[arg(long, value_name = "FILE")]
    pub ca: Option<PathBuf>,
    /// Client certificate and key (PEM), when the daemon requires one.
    #[arg(long, value_name = "FILE")]
    pub cert: Option<PathBuf>,
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Give up on the daemon after this long (e.g. 30s, 2m) [default: 30s]; `watch`
    /// streams without limit.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub timeout: Option<Duration>,
    /// When the container is busy (an evaluation or a move under way: ABORTED), try again
    /// until --timeout instead of failing (manage, predict, recommend, place).
    #[arg(long)]
    pub wait: bool,
}

impl ConnectionArgs {
    /// These options, each overriding `before` where it was typed.
    pub fn over(self, before: Self) -> Self {
        Self {
            socket: self.socket.or(before.socket),
            addr: self.addr.or(before.addr),
            ca: self.ca.or(before.ca),
            cert: self.cert.or(before.cert),
            key: self.key.or(before.key),
            timeout: self.timeout.or(before.timeout),
            wait: self.wait || before.wait,
        }
    }

    /// The first option typed, as its flag (for saying that a command takes none).
    pub fn first_typed(&self) -> Option<&'static str> {
        [
            (self.socket.is_some(), "--socket"),
            (self.addr.is_some(), "--addr"),
            (self.ca.is_some(), "--ca"),
            (self.cert.is_some(), "--cert"),
            (self.key.is_some(), "--key"),
            (self.timeout.is_some(), "--timeout"),
            (self.wait, "--wait"),
        ]
        .into_iter()
        .find_map(|(typed, flag)| typed.then_some(flag))
    }
}

/// A command that talks to the daemon: its own arguments, and the connection options
/// typed after its name.
#[derive(Args, Debug, Clone)]
pub struct Remote<T: Args> {
    #[command(flatten)]
    pub args: T,
    #[command(flatten)]
    pub connection: ConnectionArgs,
}
