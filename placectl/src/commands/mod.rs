//! `placectl`'s commands, one module each: what it takes (typed, clap), how that is
//! validated, and what it does and prints.
//!
//! A command is registered once, in `commands!` at the end of this file: its name, its
//! about text, and its module's typed arguments (`Remote<...>` for one that talks to the
//! daemon, which adds the connection options after its name). A new command is a new
//! module, its `mod` line, and its entry there.
//!
//! Each module's typed arguments implement [`Typed`]: validation, which yields a [`Local`]
//! job (runs here: topology, placements, move, ...) or a daemon [`Call`] (status, manage,
//! watch, ...). [`crate::request`] adds the connection and [`crate::run`] runs it.

use std::future::Future;
use std::pin::Pin;

use crate::args::{ConnectionArgs, Remote};
use crate::cli::{self, Exit};

mod admit;
mod capacity;
mod completion;
mod containers;
mod inspect;
mod labels;
mod man;
mod manage;
mod model;
mod r#move;
mod place;
mod placements;
mod policy;
mod predict;
mod recommend;
mod release;
mod report;
mod reservations;
mod status;
mod topology;
mod unmanage;
mod watch;

pub use watch::DaemonGone;

/// An error a command ends with; `crate::cli::exit_of` reads its exit code from its type.
pub type Failure = Box<dyn std::error::Error>;

/// A client of the daemon.
pub type Client =
    placed_proto::v1::placed_service_client::PlacedServiceClient<tonic::transport::Channel>;

/// What a daemon call resolves to.
pub type Reply<'a> = Pin<Box<dyn Future<Output = Result<Exit, Failure>> + 'a>>;

/// A command's arguments as typed, validated into what runs.
pub trait Typed {
    /// Checks what was typed (a policy, a metric, flags of another mode) before anything
    /// runs or connects: a mistake in it is the caller's, named as such whether or not the
    /// daemon runs.
    fn validate(self) -> Result<Action, Failure>;

    /// The connection options typed after the command's name (only a [`Remote`] has any).
    fn connection(&self) -> Option<&ConnectionArgs> {
        None
    }
}

impl<T: Typed + clap::Args> Typed for Remote<T> {
    fn validate(self) -> Result<Action, Failure> {
        self.args.validate()
    }

    fn connection(&self) -> Option<&ConnectionArgs> {
        Some(&self.connection)
    }
}

/// A validated command: work done here, or a call to the daemon.
#[derive(Debug)]
pub enum Action {
    Local(Box<dyn Local>),
    Daemon(Box<dyn Call>),
}

impl Action {
    pub fn local(job: impl Local + 'static) -> Result<Self, Failure> {
        Ok(Self::Local(Box::new(job)))
    }

    pub fn daemon(call: impl Call + 'static) -> Result<Self, Failure> {
        Ok(Self::Daemon(Box::new(call)))
    }
}

/// Work done on this host, without the daemon.
pub trait Local: std::fmt::Debug {
    fn run(self: Box<Self>, format: Format) -> Result<Exit, Failure>;
}

/// A call to the daemon, made once a client is connected; made again while the container
/// is busy when [`Call::waits_when_busy`] and `--wait` say so, so it takes `&self`.
pub trait Call: std::fmt::Debug {
    fn call<'a>(&'a self, client: &'a mut Client, format: Format) -> Reply<'a>;

    /// Whether it lasts as long as it lasts (a watch, samples read as they come): then
    /// `--timeout` does not bound it.
    fn streams(&self) -> bool {
        false
    }

    /// Whether `--wait` sends it again while the daemon answers that the container is busy
    /// (ABORTED refuses before doing anything, so a retry repeats nothing).
    fn waits_when_busy(&self) -> bool {
        false
    }

    /// What to add when `--timeout` passes before the answer: work the daemon carries on
    /// with regardless (a move), and how to follow it.
    fn after_timeout(&self) -> Option<String> {
        None
    }
}

/// How an answer is printed: JSON for programs (docs/cli-json.md), a table for people.
#[derive(Debug, Clone, Copy)]
pub struct Format {
    pub json: bool,
}

impl Format {
    /// Prints the answer as JSON (`value`) or as text; a closed pipe is success.
    pub fn print<V: serde::Serialize>(
        self,
        value: impl FnOnce() -> V,
        text: impl FnOnce() -> String,
    ) -> Result<Exit, Failure> {
        Ok(cli::emit(&if self.json {
            json_text(&value())?
        } else {
            text()
        }))
    }
}

/// Pretty JSON with a final newline.
pub fn json_text(v: &impl serde::Serialize) -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(v).map(|mut s| {
        s.push('\n');
        s
    })
}

/// Registers the commands: the typed command line's subcommands and their validation,
/// from one list.
macro_rules! commands {
    ($( $(#[$attr:meta])* $name:ident($typed:ty), )*) => {
        /// A `placectl` command as typed.
        #[derive(clap::Subcommand, Debug)]
        pub enum Command {
            $( $(#[$attr])* $name($typed), )*
        }

        impl Command {
            /// The connection options typed after the command's name, if it takes any.
            pub fn connection(&self) -> Option<&ConnectionArgs> {
                match self {
                    $( Self::$name(c) => c.connection(), )*
                }
            }

            /// The command's name, as typed.
            pub fn name(&self) -> String {
                match self {
                    $( Self::$name(_) => stringify!($name).to_ascii_lowercase(), )*
                }
            }

            /// Validates the command's own arguments.
            pub fn validate(self) -> Result<Action, Failure> {
                match self {
                    $( Self::$name(c) => c.validate(), )*
                }
            }
        }
    };
}

commands! {
    /// Show a machine's topology summary and scheduling concerns (no daemon needed).
    Topology(topology::Args),
    /// List the important placements for a container of N vCPUs (no daemon needed).
    Placements(placements::Args),
    /// Put a container on CPUs and memory nodes of this host, bringing its memory along.
    Move(r#move::Args),
    /// Show a container's cpuset, tasks and memory per NUMA node.
    Inspect(inspect::Args),
    /// List the containers the daemon manages; with --host, every container of this host
    /// (Docker, containerd/Kubernetes, CRI-O, podman, LXC, systemd units), no daemon needed.
    Containers(Remote<containers::Args>),
    /// The daemon's state: machine class, containers per state, models.
    Status(Remote<status::Args>),
    /// Hand a container to the daemon, or change how it manages it.
    Manage(Remote<manage::Args>),
    /// Hand a container back: the daemon stops managing it (an evaluation or a move in
    /// progress is stopped) and leaves it alone until it disappears or is managed again.
    Unmanage(Remote<unmanage::Args>),
    /// Predicted performance of a container in every important placement, with the
    /// observations and the model behind it.
    Predict(Remote<predict::Args>),
    /// What a policy would choose for a container, without moving it. Exit 1 when it would
    /// stay where it is.
    Recommend(Remote<recommend::Args>),
    /// Move a container now: to a placement, or where a policy says. Either becomes the
    /// container's policy (`--placement ID` pins it: policy `pinned:ID`), and the output
    /// says so, unless `--keep-policy`; without either, its own policy is applied.
    Place(Remote<place::Args>),
    /// Stream lifecycle events until interrupted or until the reader goes away
    /// (`placectl watch | head -1`). Times are RFC 3339, UTC.
    Watch(Remote<watch::Args>),
    /// Where a container that does not exist yet should start (placement, reason,
    /// prediction and what it rests on); with --reserve, its units held until a container
    /// claims them (`placectl manage CONTAINER --reservation ID`) or --ttl passes.
    Admit(Remote<admit::Args>),
    /// Free, held and reserved PUs per NUMA node and package, who holds each allocation
    /// unit, and per size the important placements that fit now.
    Capacity(Remote<capacity::Args>),
    /// List the reservations held (placectl admit --reserve makes them).
    Reservations(Remote<reservations::Args>),
    /// End a reservation before its time: its units are free again.
    Release(Remote<release::Args>),
    /// Push performance samples for a container (values as arguments, else one per line on
    /// stdin).
    Report(Remote<report::Args>),
    /// Let a model the live gate stopped move containers again (`placectl model enable ID`).
    Model(Remote<model::Args>),
    /// Print a shell completion script: `placectl completion bash > /etc/bash_completion.d/placectl`.
    Completion(completion::Args),
    /// Print the man page, placectl(1), as roff; with --dir, write it and one page per
    /// command (those it lists) into DIR (for packaging).
    #[command(hide = true)]
    Man(man::Args),
}
