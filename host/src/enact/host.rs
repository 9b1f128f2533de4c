//! [`Host`]: one host's kernel files, cgroups, containers and `/proc`, built from one
//! [`Kernel`], and what it reads for its callers: containers, online CPUs and nodes, a
//! container's state, its CPU quota and perf directory, the inputs of the move-or-stay
//! rule (resident memory per node), and a noise probe for its measurements.

use std::path::PathBuf;

use super::verify::check_tasks;
use super::{Error, Inspection};
use crate::cgroup::quota::Controllers;
use crate::cgroup::{self, CgroupPath, Cgroups, CpusetState};
use crate::containers::{Container, Discovery, Engine};
use crate::kernel::Kernel;
use crate::migrate::{NodeBytes, Proc};
use crate::observe::{ProcProbe, Target};
use placed_core::cpuset::{CpuSet, IdSet, NodeSet};

/// One host: its kernel files, cpuset hierarchy, containers and `/proc`. Cheap to clone;
/// clones share the freeze guards' registry ([`Host::thaw_all`]).
#[derive(Debug, Clone)]
pub struct Host {
    kernel: Kernel,
    pub(super) cgroups: Cgroups,
    discovery: Discovery,
    pub(super) proc: Proc,
    controllers: Controllers,
}

impl Host {
    /// This host: [`Kernel::host`] (`/proc`, `/sys`, the mounts of `/proc/self/mountinfo`)
    /// and the Docker and podman sockets.
    pub fn detect() -> Result<Self, Error> {
        Self::new(Kernel::host()?, vec![Engine::docker(), Engine::podman()])
    }

    /// A host on `kernel` (this host's, or a fake one), asking `engines` for container
    /// names.
    pub fn new(kernel: Kernel, engines: Vec<Engine>) -> Result<Self, Error> {
        let cgroups = Cgroups::of(&kernel)?;
        Ok(Self {
            discovery: Discovery::new(cgroups.clone(), kernel.files().clone(), engines),
            proc: Proc::new(kernel.files().clone()),
            controllers: Controllers::of(&kernel),
            cgroups,
            kernel,
        })
    }

    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    pub fn cgroups(&self) -> &Cgroups {
        &self.cgroups
    }

    pub fn proc(&self) -> &Proc {
        &self.proc
    }

    /// A noise probe of `target` on the PUs `cpus` (all online PUs when `None`), reading
    /// this host's `/proc` and `/sys`.
    pub fn noise_probe(&self, target: Target, cpus: Option<CpuSet>) -> ProcProbe {
        ProcProbe::on(self.kernel.files(), target, cpus)
    }

    /// The container that `reference` names (see [`crate::containers::Reference`]).
    pub fn resolve(&self, reference: &str) -> Result<Container, Error> {
        Ok(self.discovery.resolve(reference)?)
    }

    /// Every container of the host.
    pub fn list(&self) -> Result<Vec<Container>, Error> {
        Ok(self.discovery.list()?)
    }

    /// Thaws every cgroup that a live freeze guard of this host holds (a move in progress);
    /// returns how many. For a shutdown, after the moves were told to stop.
    pub fn thaw_all(&self) -> usize {
        self.cgroups.thaw_all()
    }

    /// CPUs the kernel has online.
    pub fn online_cpus(&self) -> Result<CpuSet, Error> {
        self.sys_set("devices/system/cpu/online", "0")
    }

    /// NUMA nodes that have memory (node 0 on a kernel without NUMA).
    pub fn memory_nodes(&self) -> Result<NodeSet, Error> {
        self.sys_set("devices/system/node/has_memory", "0")
    }

    fn sys_set<K>(&self, rel: &str, absent: &str) -> Result<IdSet<K>, Error> {
        let text = match self.kernel.files().sys(rel) {
            Ok(t) => t,
            Err(e) if e.errno() == Some(libc::ENOENT) => absent.to_owned(),
            Err(source) => return Err(Error::Sys { source }),
        };
        text.parse().map_err(|e| {
            Error::Cgroup(cgroup::Error::Parse {
                path: self.kernel.files().sys_root().join(rel),
                content: text.clone(),
                source: e,
            })
        })
    }

    /// The container's vCPUs by its CPU bandwidth quota (rounded up), or `None` when it
    /// has none or it cannot be read.
    pub fn vcpus_from_quota(&self, cg: &CgroupPath) -> Option<usize> {
        self.controllers.vcpus(cg)
    }

    /// The directory perf counters of `cg` attach to, when a perf_event hierarchy is
    /// mounted.
    pub fn perf_dir(&self, cg: &CgroupPath) -> Option<PathBuf> {
        self.controllers.perf_dir(cg)
    }

    /// Resident memory per node of the processes in `cg` and its descendants
    /// (`numa_maps`): what a move would have to bring along.
    pub fn resident_per_node(&self, cg: &CgroupPath) -> Result<NodeBytes, Error> {
        let procs = self.procs(&self.cgroups.subtree(cg)?)?;
        Ok(self.proc.footprint(&procs)?)
    }

    /// The bytes a move of `cg` onto the nodes `to` would migrate: its resident memory on
    /// other nodes. When the per-node figures cannot be read, all of its resident memory
    /// (`VmRSS`), the most a move can migrate.
    pub fn bytes_outside(&self, cg: &CgroupPath, to: &NodeSet) -> Result<u64, Error> {
        let procs = self.procs(&self.cgroups.subtree(cg)?)?;
        match self.proc.footprint(&procs) {
            Ok(per_node) => Ok(per_node.outside(to)),
            Err(e) => {
                tracing::debug!(cgroup = %cg, error = %e, "numa_maps unreadable; counting all resident memory");
                Ok(self.proc.resident(&procs)?)
            }
        }
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

    /// A cgroup's cpuset, or the one it inherits (see [`cgroup::effective`]).
    pub(super) fn effective_of(&self, cg: &CgroupPath) -> Result<CpusetState, Error> {
        Ok(cgroup::effective(self.cgroups.backend().as_ref(), cg)?)
    }

    /// The processes of every cgroup of `tree` (a child that vanished is skipped).
    pub(super) fn procs(&self, tree: &[CgroupPath]) -> Result<Vec<u32>, Error> {
        Ok(all_procs(&self.cgroups, tree)?)
    }
}

/// The processes of every cgroup of `tree`, sorted (a child that vanished is skipped).
pub(super) fn all_procs(cgroups: &Cgroups, tree: &[CgroupPath]) -> Result<Vec<u32>, cgroup::Error> {
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
