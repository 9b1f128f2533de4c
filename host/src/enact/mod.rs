//! Putting a container on a placement: the API the daemon and the training collector call
//! (DESIGN.md §3.6).
//!
//! ```no_run
//! # fn main() -> Result<(), crate::enact::Error> {
//! use crate::enact::Host;
//! use crate::migrate::Mode;
//! let host = Host::detect()?;
//! let web = host.resolve("web")?;
//! let report = host.apply(&web, &"2-3".parse().unwrap(), &"1".parse().unwrap(), &Mode::fast())?;
//! println!("{} bytes moved in {:?}", report.migration.bytes_moved, report.migration.duration);
//! # Ok(()) }
//! ```
//!
//! [`Host::apply`] checks the request against the host (online CPUs, nodes with memory,
//! the parent cgroup's cpuset), writes the container's cgroup and its descendants in an
//! order the kernel accepts ([`crate::cgroup::plan`]), brings the memory along in the
//! chosen [`Mode`], then verifies by reading the cpuset back and every task's
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

mod verify;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub use verify::{TaskCheck, check_tasks, parse_status};

use crate::cgroup::plan::{self, Change, Sets};
use crate::cgroup::{self, CgroupPath, Cgroups, CpusetState, Fs, IoError, RealFs, Version};
use crate::containers::{self, Container, Discovery};
use crate::migrate::{self, MigrationReport, Mode, MoveOptions, NodeBytes, Proc};
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
    /// Set (by the daemon's shutdown, by placectl on SIGINT/SIGTERM) to stop the workers
    /// at their next chunk. Fast mode: the cpuset is then finished (the kernel moves what
    /// is left) and the cgroup thawed. Throttled mode: the cgroup keeps the old and new
    /// nodes, so nothing moves uncapped ([`MigrationReport::cancelled`]).
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

/// One host's cgroups, containers and `/proc`.
#[derive(Debug, Clone)]
pub struct Host {
    cgroups: Cgroups,
    discovery: Discovery,
    proc: Proc,
    sys: PathBuf,
    fs: Arc<dyn Fs>,
}

impl Host {
    /// This host: the cpuset hierarchy from `/proc/self/mountinfo`, `/proc`, `/sys`, and
    /// the Docker and podman sockets.
    pub fn detect() -> Result<Self, Error> {
        let cgroups = Cgroups::detect()?;
        Ok(Self::new(
            cgroups.clone(),
            Discovery::host(cgroups),
            Proc::host(),
            PathBuf::from("/sys"),
            Arc::new(RealFs),
        ))
    }

    /// A host from its parts (tests pass fake trees).
    pub fn new(
        cgroups: Cgroups,
        discovery: Discovery,
        proc: Proc,
        sys: PathBuf,
        fs: Arc<dyn Fs>,
    ) -> Self {
        Self {
            cgroups,
            discovery,
            proc,
            sys,
            fs,
        }
    }

    pub fn cgroups(&self) -> &Cgroups {
        &self.cgroups
    }

    pub fn proc(&self) -> &Proc {
        &self.proc
    }

    /// The container that `reference` names (see [`containers::Reference`]).
    pub fn resolve(&self, reference: &str) -> Result<Container, Error> {
        Ok(self.discovery.resolve(reference)?)
    }

    /// Every container of the host.
    pub fn list(&self) -> Result<Vec<Container>, Error> {
        Ok(self.discovery.list()?)
    }

    /// CPUs the kernel has online.
    pub fn online_cpus(&self) -> Result<CpuSet, Error> {
        self.sys_set(&self.sys.join("devices/system/cpu/online"), "0")
    }

    /// NUMA nodes that have memory (node 0 on a kernel without NUMA).
    pub fn memory_nodes(&self) -> Result<NodeSet, Error> {
        self.sys_set(&self.sys.join("devices/system/node/has_memory"), "0")
    }

    fn sys_set<K>(
        &self,
        path: &Path,
        absent: &str,
    ) -> Result<placed_core::cpuset::IdSet<K>, Error> {
        let text = match cgroup::fs::read(self.fs.as_ref(), path) {
            Ok(t) => t,
            Err(e) if e.errno() == Some(libc::ENOENT) => absent.to_owned(),
            Err(source) => return Err(Error::Sys { source }),
        };
        text.parse().map_err(|e| {
            Error::Cgroup(cgroup::Error::Parse {
                path: path.to_owned(),
                content: text.clone(),
                source: e,
            })
        })
    }

    /// The container's cpuset, tasks, memory per node and freezer state.
    pub fn inspect(&self, container: &Container) -> Result<Inspection, Error> {
        let cg = &container.cgroup;
        let tree = self.cgroups.subtree(cg)?;
        let procs = self.procs(&tree)?;
        let mut threads = 0;
        for c in &tree {
            threads += self.cgroups.threads(c).map_or(0, |t| t.len());
        }
        let check = check_tasks(&self.cgroups, &self.proc, &tree)?;
        Ok(Inspection {
            container: container.clone(),
            version: self.cgroups.version(),
            cpuset: self.cgroups.cpuset(cg)?,
            frozen: self.cgroups.is_frozen(cg).ok(),
            cgroups: tree.len(),
            processes: procs.len(),
            threads,
            memory: self.proc.footprint(&procs)?,
            disagreeing_tasks: check.problems,
        })
    }

    /// Puts `container` on `cpus` and `mems`, moving its memory in `mode`.
    pub fn apply(
        &self,
        container: &Container,
        cpus: &CpuSet,
        mems: &NodeSet,
        mode: &Mode,
    ) -> Result<ApplyReport, Error> {
        self.apply_with(container, cpus, mems, mode, &ApplyOptions::default())
    }

    /// [`Host::apply`] with explicit options.
    pub fn apply_with(
        &self,
        container: &Container,
        cpus: &CpuSet,
        mems: &NodeSet,
        mode: &Mode,
        opts: &ApplyOptions,
    ) -> Result<ApplyReport, Error> {
        let started = Instant::now();
        let cg = &container.cgroup;
        self.check_request(cg, cpus, mems)?;
        self.cgroups.prepare(cg)?;
        let tree = self.cgroups.subtree(cg)?;
        // The sets to restore on failure. On v2, descendants without the cpuset controller
        // inherit the container's and are neither written nor restored.
        let mut before: Vec<(CgroupPath, CpusetState)> = Vec::new();
        for (i, c) in tree.iter().enumerate() {
            match self.cgroups.cpuset(c) {
                Ok(s) => before.push((c.clone(), s)),
                Err(cgroup::Error::MissingFile { .. } | cgroup::Error::Vanished { .. })
                    if i > 0 => {}
                Err(e) => return Err(e.into()),
            }
        }
        let pids = self.procs(&tree)?;
        let footprint_before = self.proc.footprint(&pids)?;
        let target = Sets {
            cpus: cpus.clone(),
            mems: mems.clone(),
        };

        let mut run = Run {
            host: self,
            before: &before,
            write_time: Duration::ZERO,
        };
        let outcome = run.enact(cg, &target, mode, opts, &footprint_before);
        let failed = |cause: Error, run: &mut Run| {
            let rollback = match run.restore() {
                Ok(()) => Rollback::Restored,
                Err(e) => Rollback::Failed(e.to_string()),
            };
            tracing::warn!(container = %container.label(), error = %cause, %rollback, "placement failed");
            Error::Failed {
                container: container.label(),
                cpus: cpus.clone(),
                mems: mems.clone(),
                rollback,
                cause: Box::new(cause),
            }
        };
        let done = match outcome {
            Ok(o) => o,
            Err(e) => return Err(failed(e, &mut run)),
        };
        let check = match self.verify(&tree, &done.top) {
            Ok(c) => c,
            Err(e) => return Err(failed(e, &mut run)),
        };
        // Verified: the container is where it should be. From here on nothing undoes the
        // move; what cannot be measured is a warning.
        let mut warnings = done.warnings;
        let pids_after = self.procs(&tree).unwrap_or(pids);
        let footprint_after = match self.proc.footprint(&pids_after) {
            Ok(f) => Some(f),
            Err(e) => {
                let w = format!(
                    "the move is done, but the memory per node afterwards could not be read \
                     ({}); the report's memory after, what is left on the old nodes and (kernel \
                     mode) the bytes moved are not measured",
                    placed_core::text::error_line(&e)
                );
                tracing::warn!(container = %container.label(), warning = %w, "placed, partly unmeasured");
                warnings.push(w);
                None
            }
        };
        let left = footprint_after.as_ref().map_or(0, |f| f.outside(mems));
        let workers_moved = done.workers.as_ref().map_or(0, |w| w.bytes_moved);
        // What left the old nodes, by numa_maps; the workers' exact count when larger (the
        // processes may have allocated meanwhile).
        let bytes_moved = match &footprint_after {
            Some(_) => workers_moved.max(footprint_before.outside(mems).saturating_sub(left)),
            None => workers_moved,
        };
        if let Mode::Throttled { bytes_per_sec } = mode {
            // The new CPUs come first, so the kernel's automatic NUMA balancing pulls hot
            // pages after the threads at its own pace: only what the worker moves is capped.
            let uncapped = bytes_moved.saturating_sub(workers_moved);
            if uncapped > 0 && self.proc.numa_balancing() {
                let w = format!(
                    "automatic NUMA balancing (kernel.numa_balancing) moved {} toward the new \
                     CPUs itself, outside the {}/s cap; set kernel.numa_balancing=0 for a \
                     strict cap",
                    placed_core::text::human_bytes(uncapped),
                    placed_core::text::human_bytes(*bytes_per_sec)
                );
                tracing::warn!(container = %container.label(), warning = %w, "throttle bypassed");
                warnings.push(w);
            }
        }
        let report = ApplyReport {
            container: container.clone(),
            version: self.cgroups.version(),
            before: before
                .first()
                .map(|(_, s)| Sets {
                    cpus: s.cpus.clone(),
                    mems: s.mems.clone(),
                })
                .unwrap_or_else(|| target.clone()),
            // What verify() read back as the effective sets.
            after: done.top,
            cgroups: tree.len(),
            cpuset_write: run.write_time,
            migration: MigrationReport {
                mode: mode.clone(),
                bytes_moved,
                duration: done.duration,
                frozen_for: done.frozen_for,
                before: footprint_before,
                after: footprint_after.unwrap_or_default(),
                left_on_old_nodes: left,
                workers: done.workers,
                cancelled: done.cancelled,
            },
            tasks_checked: check.checked,
            total: started.elapsed(),
            warnings,
        };
        tracing::info!(
            container = %container.label(),
            cpus = %report.after.cpus,
            mems = %report.after.mems,
            mode = mode.name(),
            moved = report.migration.bytes_moved,
            left = report.migration.left_on_old_nodes,
            took = ?report.total,
            "placed"
        );
        Ok(report)
    }

    /// Refuses requests the host cannot satisfy, before anything is written.
    fn check_request(&self, cg: &CgroupPath, cpus: &CpuSet, mems: &NodeSet) -> Result<(), Error> {
        if cg.is_root() {
            return Err(Error::RootCgroup);
        }
        if cpus.is_empty() {
            return Err(Error::Empty { what: "CPU set" });
        }
        if mems.is_empty() {
            return Err(Error::Empty {
                what: "memory node set",
            });
        }
        let online = self.online_cpus()?;
        if !cpus.is_subset(&online) {
            return Err(Error::OfflineCpus {
                missing: cpus.difference(&online),
                online,
            });
        }
        let with_memory = self.memory_nodes()?;
        if !mems.is_subset(&with_memory) {
            return Err(Error::NodesWithoutMemory {
                missing: mems.difference(&with_memory),
                with_memory,
            });
        }
        if !self.cgroups.exists(cg)? {
            return Err(cgroup::Error::Vanished {
                path: cg.under(self.cgroups.root()),
                source: Box::new(IoError {
                    op: cgroup::fs::Op::Read,
                    path: cg.under(self.cgroups.root()),
                    value: None,
                    source: std::io::Error::from_raw_os_error(libc::ENOENT),
                }),
            }
            .into());
        }
        if let Some(parent) = cg.parent() {
            let p = self.effective_of(&parent)?;
            if !cpus.is_subset(&p.effective_cpus) || !mems.is_subset(&p.effective_mems) {
                return Err(Error::OutsideParent {
                    cpus: cpus.clone(),
                    mems: mems.clone(),
                    parent,
                    parent_cpus: p.effective_cpus,
                    parent_mems: p.effective_mems,
                });
            }
        }
        Ok(())
    }

    /// A cgroup's cpuset, or the one it inherits (see [`cgroup::effective`]).
    fn effective_of(&self, cg: &CgroupPath) -> Result<CpusetState, Error> {
        Ok(cgroup::effective(self.cgroups.backend().as_ref(), cg)?)
    }

    /// The processes of every cgroup of `tree` (a child that vanished is skipped).
    fn procs(&self, tree: &[CgroupPath]) -> Result<Vec<u32>, Error> {
        Ok(all_procs(&self.cgroups, tree)?)
    }

    /// Reads back every cgroup written and checks every task.
    fn verify(&self, tree: &[CgroupPath], target: &Sets) -> Result<TaskCheck, Error> {
        let mut problems = Vec::new();
        if let Some(top) = tree.first() {
            let s = self.cgroups.cpuset(top)?;
            if s.effective_cpus != target.cpus || s.effective_mems != target.mems {
                problems.push(format!(
                    "{top} reads back cpus {} mems {} instead of cpus {} mems {}",
                    s.effective_cpus, s.effective_mems, target.cpus, target.mems
                ));
            }
        }
        let check = check_tasks(&self.cgroups, &self.proc, tree)?;
        problems.extend(check.problems.iter().cloned());
        if problems.is_empty() {
            Ok(check)
        } else {
            Err(Error::Verify {
                bad: problems.len().max(check.bad),
                problems,
            })
        }
    }
}

/// The processes of every cgroup of `tree`, sorted (a child that vanished is skipped).
fn all_procs(cgroups: &Cgroups, tree: &[CgroupPath]) -> Result<Vec<u32>, cgroup::Error> {
    let mut pids = Vec::new();
    for (i, c) in tree.iter().enumerate() {
        match cgroups.procs(c) {
            Ok(p) => pids.extend(p),
            Err(cgroup::Error::Vanished { .. }) if i > 0 => {}
            Err(e) => return Err(e),
        }
    }
    pids.sort_unstable();
    pids.dedup();
    Ok(pids)
}

/// One apply in progress: the sets it started from, for the rollback.
struct Run<'a> {
    host: &'a Host,
    before: &'a [(CgroupPath, CpusetState)],
    write_time: Duration,
}

/// What [`Run::enact`] did.
struct Enacted {
    /// The workers' account (fast and throttled modes, when there was memory to move).
    workers: Option<migrate::MoveStats>,
    /// How long the cgroup was frozen, if it was.
    frozen_for: Option<Duration>,
    /// The whole migration, first write (or freeze) to last write.
    duration: Duration,
    /// The container cgroup's sets as finally written, to verify against: the target, or
    /// after a cancelled throttled move the target's CPUs with the old and new nodes.
    top: Sets,
    cancelled: bool,
    warnings: Vec<String>,
}

/// `target` with the nodes `from` allows now added: the first step of the fast and
/// throttled modes, which migrates nothing.
fn widened(from: &CpusetState, target: &Sets) -> Sets {
    Sets {
        cpus: target.cpus.clone(),
        // On v2 an empty `cpuset.mems` inherits: what it allows is the effective set.
        mems: if from.mems.is_empty() {
            from.effective_mems.union(&target.mems)
        } else {
            from.mems.union(&target.mems)
        },
    }
}

impl Run<'_> {
    /// Writes the sets and moves the memory.
    fn enact(
        &mut self,
        cg: &CgroupPath,
        target: &Sets,
        mode: &Mode,
        opts: &ApplyOptions,
        footprint: &NodeBytes,
    ) -> Result<Enacted, Error> {
        let started = Instant::now();
        let has_memory_elsewhere = footprint.outside(&target.mems) > 0;
        let done = |workers, frozen_for, top: &Sets| Enacted {
            workers,
            frozen_for,
            duration: started.elapsed(),
            top: top.clone(),
            cancelled: false,
            warnings: Vec::new(),
        };
        match mode {
            Mode::Kernel => {
                self.write_all(|_| target.clone())?;
                Ok(done(None, None, target))
            }
            // Nothing to move: one write, as the kernel mode does.
            Mode::Fast { .. } | Mode::Throttled { .. } if !has_memory_elsewhere => {
                self.write_all(|_| target.clone())?;
                Ok(done(None, None, target))
            }
            Mode::Fast { .. } | Mode::Throttled { .. } => {
                let (workers, freeze, rate) = match mode {
                    Mode::Fast { workers, freeze } => (*workers, *freeze, None),
                    Mode::Throttled { bytes_per_sec } => (1, false, Some(*bytes_per_sec)),
                    Mode::Kernel => (1, false, None),
                };
                let frozen = if freeze {
                    Some(cgroup::freeze(
                        self.host.cgroups.backend(),
                        cg,
                        opts.freeze_timeout,
                    )?)
                } else {
                    None
                };
                // Step 1: new CPUs, old and new nodes (nothing migrates yet).
                self.write_all(|from| widened(from, target))?;
                let never = AtomicBool::new(false);
                let cancel = opts.cancel.as_deref().unwrap_or(&never);
                let stats = {
                    let tree_root = cg.clone();
                    let cgroups = &self.host.cgroups;
                    let list = move || {
                        let tree = cgroups.subtree(&tree_root)?;
                        all_procs(cgroups, &tree)
                    };
                    let move_opts = MoveOptions {
                        workers: workers.max(1),
                        rate,
                        chunk_pages: opts.chunk_pages,
                        whole_process_bytes: opts.whole_process_bytes,
                        hold: opts.hold.clone(),
                    };
                    migrate::move_memory(&self.host.proc, &list, &target.mems, &move_opts, cancel)?
                };
                let cancelled = cancel.load(Ordering::Relaxed);
                if cancelled && rate.is_some() {
                    // Throttled and cancelled: the second write would have the kernel move
                    // whatever the worker had not reached, at full speed, under a
                    // latency-sensitive container. Keep both nodes instead.
                    let top = self
                        .before
                        .first()
                        .map_or_else(|| target.clone(), |(_, from)| widened(from, target));
                    let w = format!(
                        "cancelled: the throttled move stopped after {} moved; the cgroup \
                         keeps cpus {} and mems {} (old and new nodes) so that nothing moves \
                         uncapped; apply again to finish",
                        placed_core::text::human_bytes(stats.bytes_moved),
                        top.cpus,
                        top.mems
                    );
                    tracing::warn!(container = %cg, warning = %w, "move cancelled");
                    return Ok(Enacted {
                        cancelled,
                        warnings: vec![w],
                        ..done(Some(stats), None, &top)
                    });
                }
                // Step 2: only the new nodes; the kernel sweeps what the workers missed
                // (after a cancel: everything they did not reach).
                self.write_all(|_| target.clone())?;
                let frozen_for = match frozen {
                    Some(g) => Some(g.thaw()?),
                    None => None,
                };
                let mut warnings = Vec::new();
                if cancelled {
                    let w = format!(
                        "cancelled: the workers stopped after {} moved; the kernel moved the \
                         rest in the final cpuset write",
                        placed_core::text::human_bytes(stats.bytes_moved)
                    );
                    tracing::warn!(container = %cg, warning = %w, "move cancelled");
                    warnings.push(w);
                }
                Ok(Enacted {
                    cancelled,
                    warnings,
                    ..done(Some(stats), frozen_for, target)
                })
            }
        }
    }

    /// Writes `next(state)` to every cgroup of the subtree (descendants that inherit on v2
    /// are left alone), in plan order, from what is configured now.
    fn write_all(&mut self, next: impl Fn(&CpusetState) -> Sets) -> Result<(), Error> {
        let cgroups = &self.host.cgroups;
        let mut changes = Vec::new();
        for (i, (cg, first)) in self.before.iter().enumerate() {
            let v2_inherits = cgroups.version() == Version::V2
                && i > 0
                && first.cpus.is_empty()
                && first.mems.is_empty();
            if v2_inherits {
                continue;
            }
            let now = match cgroups.cpuset(cg) {
                Ok(s) => s,
                Err(cgroup::Error::Vanished { .. }) if i > 0 => continue,
                Err(e) => return Err(e.into()),
            };
            changes.push(Change {
                cgroup: cg.clone(),
                from: Sets {
                    cpus: now.cpus.clone(),
                    mems: now.mems.clone(),
                },
                to: next(&now),
            });
        }
        self.execute(&changes)
    }

    fn execute(&mut self, changes: &[Change]) -> Result<(), Error> {
        let writes = plan::order(changes).map_err(|e| {
            Error::Cgroup(cgroup::Error::Unexpected {
                path: e.child.under(self.host.cgroups.root()),
                content: e.to_string(),
            })
        })?;
        let t = Instant::now();
        let r = plan::execute(self.host.cgroups.backend().as_ref(), &writes);
        self.write_time += t.elapsed();
        r.map_err(|(_, e)| e.into())
    }

    /// Writes back the sets the apply started from.
    fn restore(&mut self) -> Result<(), Error> {
        let cgroups = &self.host.cgroups;
        let mut changes = Vec::new();
        for (i, (cg, first)) in self.before.iter().enumerate() {
            let now = match cgroups.cpuset(cg) {
                Ok(s) => s,
                Err(cgroup::Error::Vanished { .. }) if i > 0 => continue,
                Err(e) => return Err(e.into()),
            };
            changes.push(Change {
                cgroup: cg.clone(),
                from: Sets {
                    cpus: now.cpus,
                    mems: now.mems,
                },
                to: Sets {
                    cpus: first.cpus.clone(),
                    mems: first.mems.clone(),
                },
            });
        }
        self.execute(&changes)
    }
}

#[cfg(test)]
mod tests;
