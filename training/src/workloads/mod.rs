//! Training workloads: what the collector runs in each important placement.
//!
//! A [`Workload`] is a description (name, family, how to start it for `v` threads, how its
//! rate is read). [`Workload::launch`] starts it in a cgroup and returns a [`Running`]
//! workload whose [`Running::source`] the observation protocol measures.
//!
//! - [`kernels`]: the built-in kernels, run by `placed-train workload run <name>` in a
//!   process of their own; they print their running operation total every 50 ms.
//! - [`external`]: workloads defined in TOML (any command, a server, setup, a metric).
//! - `launch`: processes started inside their cgroups from their first instruction, and
//!   stopped with everything they forked; `start`: what each kind of workload starts.

use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::Duration;

use placed_host::observe::AnySource;

pub mod external;
pub mod kernels;
mod launch;
mod start;

use launch::Process;

/// A workload description.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// Unique name, e.g. `stream-triad` or `stress-ng-matrix`.
    pub name: String,
    /// Cross-validation group (workloads of a family are held out together).
    pub family: String,
    /// What the rate counts, e.g. `ops/s`.
    pub unit: String,
    /// True for the workloads built into `placed-train`.
    pub builtin: bool,
    /// The shortest observation window that gives a steady rate, when the workload's
    /// metric moves in coarse steps (a tool printing once per second); `None` when any
    /// window of the protocol will do.
    pub min_window: Option<Duration>,
    /// How an external workload is started and read; `None` for a built-in.
    pub definition: Option<Box<external::Definition>>,
}

/// A workload that could not be described, found or started.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unknown workload {name:?}; known: {known}")]
    Unknown { name: String, known: String },
    #[error("cannot start workload {name}: {detail}")]
    Start { name: String, detail: String },
    #[error("cannot stop workload {name} cleanly: {detail}")]
    Stop { name: String, detail: String },
    #[error("{}: {detail}", file.display())]
    Definition { file: PathBuf, detail: String },
}

/// Where and how to start a workload.
///
/// The cgroups belong to the workload: [`Running::stop`] kills every process still in
/// them after killing its process groups, since servers (PostgreSQL) put their workers in
/// process groups of their own.
#[derive(Debug, Clone)]
pub struct Launch<'a> {
    /// Threads to run: the container's `v`.
    pub threads: usize,
    /// The cgroup directory (cpuset hierarchy) the processes must run in from their first
    /// instruction: each child writes itself into `<dir>/cgroup.procs` before exec.
    pub cgroup_dir: &'a Path,
    /// Any other cgroup directories to join the same way (v1: cpu, memory).
    pub extra_cgroup_dirs: &'a [PathBuf],
    /// A scratch directory for this run (report files, data directories); removed by the
    /// caller afterwards.
    pub scratch: &'a Path,
    /// The `placed-train` binary, which runs the built-in kernels (`placed-train workload
    /// run <name>`).
    pub exe: &'a Path,
}

impl Launch<'_> {
    fn cgroups(&self) -> Vec<PathBuf> {
        std::iter::once(self.cgroup_dir.to_path_buf())
            .chain(self.extra_cgroup_dirs.iter().cloned())
            .collect()
    }
}

/// A started workload.
#[derive(Debug)]
pub struct Running {
    name: String,
    source: AnySource,
    /// Started in order (servers first); stopped in reverse.
    processes: Vec<Process>,
    readers: Vec<JoinHandle<()>>,
    /// The workload's cgroups: whatever is left in them after the process groups are
    /// killed escaped its group (a server's workers that call setsid) and is killed too.
    cgroups: Vec<PathBuf>,
}

impl Workload {
    /// Starts the workload (and any server it needs) as described by `launch`.
    pub fn launch(&self, launch: &Launch<'_>) -> Result<Running, Error> {
        if launch.threads == 0 {
            return Err(Error::Start {
                name: self.name.clone(),
                detail: "zero threads".into(),
            });
        }
        match &self.definition {
            None => start::builtin(&self.name, launch),
            Some(def) => start::external(def, launch),
        }
    }

    /// Why the workload cannot run on this host (a program it requires is missing), or
    /// `None` when it can.
    pub fn unavailable(&self) -> Option<String> {
        self.definition.as_ref().and_then(|d| d.unavailable())
    }

    /// True when the workload can run on this host.
    pub fn available(&self) -> bool {
        self.unavailable().is_none()
    }
}

impl Running {
    /// The metric source the observation protocol reads this workload's rate from.
    pub fn source(&mut self) -> &mut AnySource {
        &mut self.source
    }

    /// The pids of the workload's top-level processes (servers first).
    pub fn pids(&self) -> Vec<u32> {
        self.processes.iter().map(|p| p.child.id()).collect()
    }

    /// Stops every process of the workload (and its servers) and waits for them.
    pub fn stop(mut self) -> Result<(), Error> {
        let mut problems = self.kill_all();
        // The pipes closed with their writers, so the readers end.
        for reader in self.readers.drain(..) {
            if reader.join().is_err() {
                problems.push("an output reader panicked".into());
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Error::Stop {
                name: self.name.clone(),
                detail: problems.join("; "),
            })
        }
    }

    fn kill_all(&mut self) -> Vec<String> {
        let mut problems = Vec::new();
        while let Some(process) = self.processes.pop() {
            if let Err(e) = process.kill() {
                problems.push(e);
            }
        }
        for dir in &self.cgroups {
            if let Err(e) = launch::empty_cgroup(dir) {
                problems.push(e);
            }
        }
        problems
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A workload dropped without `stop` (an error path, a panic) must not outlive us.
        for problem in self.kill_all() {
            tracing::warn!(workload = %self.name, "{problem}");
        }
    }
}

/// The built-in workloads.
pub fn builtin() -> Vec<Workload> {
    kernels::KERNELS
        .iter()
        .map(|k| Workload {
            name: k.name.into(),
            family: k.family.into(),
            unit: k.unit.into(),
            builtin: true,
            min_window: None,
            definition: None,
        })
        .collect()
}

/// External workload definitions from a TOML file (see docs/training.md).
pub fn load(path: &Path) -> Result<Vec<Workload>, Error> {
    Ok(external::load(path)?
        .into_iter()
        .map(|def| Workload {
            name: def.name.clone(),
            family: def.family.clone(),
            unit: def.unit.clone(),
            builtin: false,
            min_window: def.min_window(),
            definition: Some(Box::new(def)),
        })
        .collect())
}
