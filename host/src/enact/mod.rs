//! Putting a container on a placement: the API the daemon, `placectl move` and the training
//! collector call.
//!
//! ```no_run
//! # fn main() -> Result<(), placed_host::enact::Error> {
//! use placed_host::enact::Host;
//! use placed_host::migrate::Mode;
//! let host = Host::detect()?; // once, at start: Host::new(Kernel::host()?, engines)
//! let web = host.resolve("web")?;
//! let report = host.apply(&web, &"2-3".parse().unwrap(), &"1".parse().unwrap(), &Mode::fast())?;
//! println!("{} bytes moved in {:?}", report.migration.bytes_moved, report.migration.duration);
//! # Ok(()) }
//! ```
//!
//! [`Host::apply`] checks the request against the host (online CPUs, nodes with memory,
//! the parent cgroup's cpuset), writes the container's cgroup and its descendants in an
//! order the kernel accepts ([`crate::cgroup::plan`]), brings the memory along in the
//! chosen [`crate::migrate::Mode`], then verifies by reading the cpuset back and every task's
//! `/proc/<tid>/status`. If any step up to and including the verification fails, the
//! previous cpuset is written back and the error says whether that worked. Once verified,
//! the move stands: reading the memory's whereabouts for the report can still fail, and
//! that is a warning in the report ([`ApplyReport::warnings`]), not an error.
//!
//! The fast and throttled modes write in two steps around the workers: first the new CPUs
//! and the union of old and new nodes (a `cpuset.mems` that only grows migrates nothing:
//! the kernel's `do_migrate_pages` skips nodes that stay allowed), then, after the workers
//! moved the pages, the new nodes alone, which makes the kernel sweep whatever the workers
//! missed (pages faulted in meanwhile; on v1 `memory_migrate` is on).
//!
//! A cancel ([`ApplyOptions::cancel`]) stops the workers at their next chunk. In the fast
//! mode the second write then still happens: the kernel moves the rest, inside the write,
//! at its own pace. In the throttled mode it does not, because that would move the rest
//! uncapped, the one thing the mode promises not to do to a latency-sensitive container:
//! the cgroup keeps the new CPUs and the old and new nodes, and the report says so.

//!
//! # Layout
//!
//! - `host`: [`Host`], built once from a [`crate::kernel::Kernel`], and its reads
//!   (containers, online CPUs and nodes, [`Host::inspect`], CPU quota, perf directory, the
//!   move-cost inputs [`Host::resident_per_node`] and [`Host::bytes_outside`],
//!   [`Host::thaw_all`]).
//! - `apply`: [`Host::apply`] and the run that writes, moves, verifies and rolls back.
//! - `verify`: the `/proc/<tid>/status` check of every task.

mod apply;
mod cgroup_view;
mod host;
mod verify;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

pub use host::Host;
pub use verify::{TaskCheck, check_tasks, parse_status};

use crate::cgroup::plan::Sets;
use crate::cgroup::{self, CgroupPath, CpusetState, Version};
use crate::containers::{self, Container};
use crate::kernel::KernelError;
use crate::kernel::fs::IoError;
use crate::migrate::{self, MigrationReport, MoveOptions, NodeBytes};
use placed_core::cpuset::{CpuSet, NodeSet};
use placed_core::fault::Fault;

/// Why a placement was not applied.
///
/// The request's own problems ([`Error::Empty`], [`Error::OfflineCpus`],
/// [`Error::NodesWithoutMemory`], [`Error::OutsideParent`], [`Error::RootCgroup`]) are
/// [`Fault::InvalidInput`]; the others take the fault of their cause.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Containers(#[from] containers::Error),
    #[error(transparent)]
    Cgroup(#[from] cgroup::Error),
    #[error(transparent)]
    Migrate(#[from] migrate::Error),
    #[error(transparent)]
    Kernel(#[from] KernelError),

    #[error("the {what} of a placement must not be empty")]
    Empty { what: &'static str },

    #[error("CPUs {missing} are not online (online: {online})")]
    OfflineCpus { missing: CpuSet, online: CpuSet },

    #[error("nodes {missing} have no memory (nodes with memory: {with_memory})")]
    NodesWithoutMemory {
        missing: NodeSet,
        with_memory: NodeSet,
    },

    #[error(
        "cpus {cpus} and mems {mems} are not within the cpuset of the parent cgroup {parent} \
         (cpus {parent_cpus}, mems {parent_mems}); hint: choose within it, or widen {parent} \
         first"
    )]
    OutsideParent {
        cpus: CpuSet,
        mems: NodeSet,
        parent: CgroupPath,
        parent_cpus: CpuSet,
        parent_mems: NodeSet,
    },

    #[error("the root cgroup holds every task of the host and cannot be placed")]
    RootCgroup,

    #[error("cannot read {}", source.path.display())]
    Sys {
        #[source]
        source: IoError,
    },

    /// The cpuset did not take effect as written.
    #[error("verification failed: {}{}", problems.join("; "), more(*bad, problems.len()))]
    Verify { problems: Vec<String>, bad: usize },

    /// A step failed after the cpuset was changed; `rollback` says whether the previous
    /// one is back.
    #[error("cannot place {container} on cpus {cpus} mems {mems}; {rollback}")]
    Failed {
        container: String,
        cpus: CpuSet,
        mems: NodeSet,
        rollback: Rollback,
        #[source]
        cause: Box<Error>,
    },
}

fn more(bad: usize, shown: usize) -> String {
    if bad > shown {
        format!(" (and {} more)", bad - shown)
    } else {
        String::new()
    }
}

impl Error {
    pub fn fault(&self) -> Fault {
        match self {
            Error::Containers(e) => e.fault(),
            Error::Cgroup(e) => e.fault(),
            Error::Migrate(e) => e.fault(),
            Error::Kernel(_) => Fault::HostConfig,
            Error::Empty { .. }
            | Error::OfflineCpus { .. }
            | Error::NodesWithoutMemory { .. }
            | Error::OutsideParent { .. }
            | Error::RootCgroup => Fault::InvalidInput,
            Error::Sys { .. } => Fault::HostConfig,
            Error::Verify { .. } => Fault::Transient,
            Error::Failed { cause, .. } => cause.fault(),
        }
    }
}

/// Whether the previous cpuset was restored after a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rollback {
    Restored,
    /// Restoring failed too: the container's cpuset is whatever the message says.
    Failed(String),
}

impl std::fmt::Display for Rollback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rollback::Restored => f.write_str("the previous cpuset was restored"),
            Rollback::Failed(e) => write!(f, "RESTORING THE PREVIOUS CPUSET FAILED TOO: {e}"),
        }
    }
}

/// Knobs of [`Host::apply_with`].
#[derive(Debug, Clone)]
pub struct ApplyOptions {
    /// Longest wait for a freeze to complete before giving up (and thawing).
    pub freeze_timeout: Duration,
    /// Pages per `move_pages` call.
    pub chunk_pages: usize,
    /// See [`MoveOptions::whole_process_bytes`].
    pub whole_process_bytes: Option<u64>,
    /// Set (by the daemon's shutdown, by placectl on SIGINT, SIGTERM or SIGHUP: the flag of
    /// a [`crate::stop::Stop`]) to stop the workers at their next chunk. Fast mode: the
    /// cpuset is then finished (the kernel moves what is left) and the cgroup thawed.
    /// Throttled mode: the cgroup keeps the old and new nodes, so nothing moves uncapped
    /// ([`MigrationReport::cancelled`]).
    pub cancel: Option<Arc<AtomicBool>>,
    /// Tests only: hold the workers after their first chunk ([`migrate::HoldPoint`]).
    pub hold: Option<migrate::HoldPoint>,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        Self {
            freeze_timeout: Duration::from_secs(10),
            chunk_pages: MoveOptions::default().chunk_pages,
            whole_process_bytes: None,
            cancel: None,
            hold: None,
        }
    }
}

/// What [`Host::apply`] did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ApplyReport {
    pub container: Container,
    pub version: Version,
    /// The container cgroup's configured sets before (on v2, empty means inherited).
    pub before: Sets,
    /// Its effective sets after: the request, except after a cancelled throttled move
    /// (the request's CPUs, the old and new nodes).
    pub after: Sets,
    /// Cgroups written (the container's and its descendants').
    pub cgroups: usize,
    /// Time spent inside cpuset writes (for the kernel mode, this includes the migration).
    #[serde(serialize_with = "migrate::secs")]
    pub cpuset_write: Duration,
    pub migration: MigrationReport,
    /// Threads whose `/proc/<tid>/status` was checked.
    pub tasks_checked: usize,
    #[serde(serialize_with = "migrate::secs")]
    pub total: Duration,
    /// What went wrong after the move was verified and so did not undo it: a cancel, or
    /// memory that could not be read for the report (its `after` is then empty and
    /// `left_on_old_nodes` 0, unmeasured).
    pub warnings: Vec<String>,
}

/// A container's current state.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Inspection {
    pub container: Container,
    pub version: Version,
    pub cpuset: CpusetState,
    /// `None` where the cgroup has no freezer.
    pub frozen: Option<bool>,
    /// Cgroups in the container's subtree, its own included.
    pub cgroups: usize,
    pub processes: usize,
    pub threads: usize,
    /// Resident memory of its processes per node (`numa_maps`).
    pub memory: NodeBytes,
    /// Threads whose allowed CPUs or nodes disagree with their cgroup's cpuset.
    pub disagreeing_tasks: Vec<String>,
}

#[cfg(test)]
mod tests;
