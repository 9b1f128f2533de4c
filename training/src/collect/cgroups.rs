//! The cgroups a collection runs its workloads in: one parent `placed-train-<pid>` below the
//! root of the cpuset hierarchy and one child per run, each removed by a guard on every
//! path out (success, error, panic; signals become errors first, see `interrupt`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use placed_core::cpuset::{CpuSet, NodeSet};
use placed_host::cgroup::{CgroupPath, Cgroups};

/// Prefix of every cgroup a collector creates; the rest is its pid.
pub const PREFIX: &str = "placed-train-";

/// How long a guard waits for killed processes to leave a cgroup before removing it.
const DRAIN: Duration = Duration::from_secs(5);

/// A cgroup operation failed.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    #[error("no usable cpuset hierarchy (run as root on a host with cpusets)")]
    Detect(#[source] Box<placed_host::cgroup::Error>),
    #[error("cannot create cgroup {cgroup}")]
    Create {
        cgroup: String,
        #[source]
        source: Box<placed_host::cgroup::Error>,
    },
    #[error("invalid cgroup name {name:?}")]
    Name {
        name: String,
        #[source]
        source: placed_host::cgroup::BadPath,
    },
}

/// The collector's parent cgroup; dropping it removes it and anything left below it.
#[derive(Debug)]
pub struct Parent {
    cgroups: Cgroups,
    path: CgroupPath,
    next: usize,
    /// The parent in the hierarchy perf counters attach to (the v2 tree of a hybrid host,
    /// or v1 `perf_event`), when that is not the cpuset hierarchy; `None` when it is, or
    /// when it cannot be made (runs are then counted on the cpuset directory, or not).
    perf: Option<PathBuf>,
}

impl Parent {
    /// Creates `placed-train-<pid>` with every PU and node the runs may use, after removing
    /// what collectors that died without cleaning up (SIGKILL) left behind.
    pub fn create(cpus: &CpuSet, mems: &NodeSet) -> Result<Self, CgroupError> {
        let cgroups = Cgroups::detect().map_err(|e| CgroupError::Detect(Box::new(e)))?;
        remove_stale(&cgroups);
        let name = format!("{PREFIX}{}", std::process::id());
        let path = CgroupPath::parse(&name).map_err(|source| CgroupError::Name {
            name: name.clone(),
            source,
        })?;
        // A leftover of this very pid (a reused pid after a crash) is ours by name too.
        if cgroups.exists(&path).unwrap_or(false) {
            remove_tree(&cgroups, &path);
        }
        cgroups
            .create(&path, cpus, mems)
            .map_err(|source| CgroupError::Create {
                cgroup: path.to_string(),
                source: Box::new(source),
            })?;
        let perf = perf_parent(&cgroups, &path);
        Ok(Self {
            cgroups,
            path,
            next: 0,
            perf,
        })
    }

    /// A fresh child cgroup for one run, on `cpus` and `mems`.
    pub fn run(&mut self, cpus: &CpuSet, mems: &NodeSet) -> Result<RunCgroup, CgroupError> {
        let name = format!("run-{}", self.next);
        self.next += 1;
        let path = self.path.child(&name).map_err(|source| CgroupError::Name {
            name: name.clone(),
            source,
        })?;
        self.cgroups
            .create(&path, cpus, mems)
            .map_err(|source| CgroupError::Create {
                cgroup: path.to_string(),
                source: Box::new(source),
            })?;
        let perf = self.perf.as_ref().and_then(|parent| {
            let dir = parent.join(&name);
            std::fs::create_dir(&dir)
                .map_err(|e| tracing::warn!(dir = %dir.display(), error = %e, "no perf cgroup for this run"))
                .ok()
                .map(|()| dir)
        });
        Ok(RunCgroup {
            dir: path.under(self.cgroups.root()),
            cgroups: self.cgroups.clone(),
            path,
            perf,
        })
    }

    pub fn path(&self) -> &CgroupPath {
        &self.path
    }
}

impl Drop for Parent {
    fn drop(&mut self) {
        remove_tree(&self.cgroups, &self.path);
        if let Some(dir) = &self.perf {
            remove_perf_dir(dir);
        }
    }
}

/// Where the perf counters of `parent`'s runs attach, made if it is not the cpuset
/// directory itself.
fn perf_parent(cgroups: &Cgroups, parent: &CgroupPath) -> Option<PathBuf> {
    let kernel = placed_host::kernel::Kernel::host().ok()?;
    let dir = placed_host::cgroup::quota::Controllers::of(&kernel).perf_dir(parent)?;
    if dir == parent.under(cgroups.root()) {
        return None;
    }
    if let Some(root) = dir.parent() {
        remove_stale_perf(root);
    }
    match std::fs::create_dir(&dir) {
        Ok(()) => Some(dir),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Some(dir),
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "no perf cgroup: runs are not counted");
            None
        }
    }
}

/// Removes the perf cgroup directories of collectors that died (SIGKILL); their processes
/// were killed with their cpuset cgroups ([`remove_stale`]).
fn remove_stale_perf(root: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)) else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        if pid == std::process::id() || std::path::Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let dir = entry.path();
        for run in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if run.file_type().is_ok_and(|t| t.is_dir()) {
                remove_perf_dir(&run.path());
            }
        }
        remove_perf_dir(&dir);
    }
}

/// Removes a perf cgroup directory made for a run or the parent; its processes were
/// killed with the cpuset cgroup's.
fn remove_perf_dir(dir: &std::path::Path) {
    match std::fs::remove_dir(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot remove perf cgroup");
        }
        _ => {}
    }
}

/// One run's cgroup; dropping it kills what still runs in it and removes it.
#[derive(Debug)]
pub struct RunCgroup {
    cgroups: Cgroups,
    path: CgroupPath,
    dir: PathBuf,
    /// Its own directory in the perf hierarchy, where that is another one.
    perf: Option<PathBuf>,
}

impl RunCgroup {
    /// The directory processes join by writing their pid to `cgroup.procs`.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// The directory its perf counters attach to.
    pub fn perf_dir(&self) -> &std::path::Path {
        self.perf.as_deref().unwrap_or(&self.dir)
    }

    /// Other directories the run's processes must join too (the perf one).
    pub fn extra_dirs(&self) -> Vec<PathBuf> {
        self.perf.iter().cloned().collect()
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        remove_tree(&self.cgroups, &self.path);
        if let Some(dir) = &self.perf {
            remove_perf_dir(dir);
        }
    }
}

/// Removes `placed-train-<pid>` trees whose collector is no longer alive. Their processes
/// are workloads that collector started (they outlive a SIGKILLed parent).
fn remove_stale(cgroups: &Cgroups) {
    let Ok(children) = cgroups.children(&CgroupPath::root()) else {
        return;
    };
    for child in children {
        let Some(pid) = child.name().strip_prefix(PREFIX) else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        if pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            tracing::warn!(cgroup = %child, "removing the cgroups of a collector that died");
            eprintln!("placed-train: removing {child}, left by collector {pid} that died");
            remove_tree(cgroups, &child);
        }
    }
}

/// Kills every process in the tree (all started by a collector), waits for them to leave,
/// and removes the cgroups, children first. Best effort: failures are logged, never
/// raised, because this runs in destructors.
fn remove_tree(cgroups: &Cgroups, root: &CgroupPath) {
    let tree = cgroups.subtree(root).unwrap_or_else(|_| vec![root.clone()]);
    let deadline = Instant::now() + DRAIN;
    for cg in tree.iter().rev() {
        loop {
            let procs = cgroups.procs(cg).unwrap_or_default();
            if procs.is_empty() {
                break;
            }
            for pid in &procs {
                let Ok(pid) = libc::pid_t::try_from(*pid) else {
                    continue;
                };
                // SAFETY: kill has no memory preconditions; the pid is in a cgroup this
                // program created, so it is one of our workloads.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
            if Instant::now() > deadline {
                tracing::warn!(cgroup = %cg, ?procs, "processes did not leave the cgroup");
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Err(e) = cgroups.remove(cg) {
            tracing::warn!(cgroup = %cg, error = %e, "cannot remove cgroup");
            eprintln!("placed-train: warning: cannot remove cgroup {cg}: {e}");
        }
    }
}
