//! cgroup cpusets, v1 and v2, behind one small interface rooted at a path.
//!
//! - [`Cgroups::of`] (or [`Cgroups::from_mounts`]) finds the hierarchy that holds the cpuset controller in the mount table: a v1 cpuset mount (pure
//!   v1 and hybrid hosts, with the v1 freezer beside it), else the cgroup2 mount if it offers
//!   cpuset (pure v2).
//! - [`Backend`] is what the rest of placed uses: read a cgroup's sets and tasks, write its
//!   sets, prepare it (v1 `memory_migrate`, v2 `+cpuset` in the ancestors), freeze it.
//!   [`V1`] and [`V2`] implement it over any [`Fs`], so tests run on a fake tree.
//! - [`plan`] orders the writes of a subtree change so that the kernel accepts each one;
//!   [`Cgroups::freeze`] returns a guard that thaws on every path, and
//!   [`Cgroups::thaw_all`] thaws what this hierarchy's live guards hold.
//! - [`quota`]: the cpu controller's quota as vCPUs, and where perf counters attach.
//!
//! Built on [`crate::kernel`], whose read and write helpers ([`fs`]) every control file goes
//! through and whose mount table ([`mountinfo`]) says where the hierarchies are; both are
//! re-exported here under their former paths.

mod error;
pub mod freeze;
mod path;
pub mod plan;
pub mod quota;
mod tree;
mod v1;
mod v2;

#[cfg(test)]
mod tests;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use crate::kernel::fs::{Fs, IoError, RealFs};
pub use crate::kernel::mountinfo::Mounts;
pub use crate::kernel::{fs, mountinfo};
pub use error::{Error, fault_of_errno};
pub use freeze::Frozen;
pub use path::{BadPath, CgroupPath};
pub use v1::V1;
pub use v2::V2;

use crate::kernel::Kernel;
use placed_core::cpuset::{CpuSet, IdSet, NodeSet};

/// Most cgroups below one container that placed will walk; more is a runaway tree.
pub const MAX_SUBTREE: usize = 4096;

/// Which cgroup interface a backend speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Version {
    V1,
    V2,
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Version::V1 => "v1",
            Version::V2 => "v2",
        })
    }
}

/// A cgroup's cpuset as configured and as in effect.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CpusetState {
    /// `cpuset.cpus`; on v2 empty means "inherit the parent's".
    pub cpus: CpuSet,
    /// `cpuset.mems`; on v2 empty means "inherit the parent's".
    pub mems: NodeSet,
    /// What the tasks may use: on v1 equal to `cpus` (minus offline CPUs); on v2 the
    /// configured set within the parent's effective one.
    pub effective_cpus: CpuSet,
    pub effective_mems: NodeSet,
}

/// One cpuset hierarchy, rooted at its mount point.
///
/// Every method takes a [`CgroupPath`], which cannot name anything outside the mount.
/// A cgroup that disappears (its container stopped) gives [`Error::Vanished`].
pub trait Backend: fmt::Debug + Send + Sync {
    fn version(&self) -> Version;
    /// The mount point of the cpuset hierarchy.
    fn root(&self) -> &Path;
    /// Whether the cgroup exists; [`Error::OutsideMount`] if it resolves outside the mount.
    fn exists(&self, cg: &CgroupPath) -> Result<bool, Error>;
    fn cpuset(&self, cg: &CgroupPath) -> Result<CpusetState, Error>;
    /// Writes `cpuset.cpus`. Callers order writes with [`plan::order`].
    fn set_cpus(&self, cg: &CgroupPath, cpus: &CpuSet) -> Result<(), Error>;
    /// Writes `cpuset.mems`; pages follow on v2, and on v1 after [`Backend::prepare`].
    fn set_mems(&self, cg: &CgroupPath, mems: &NodeSet) -> Result<(), Error>;
    /// The ids of the threads directly in the cgroup (not in its children), sorted.
    fn threads(&self, cg: &CgroupPath) -> Result<Vec<u32>, Error>;
    /// The ids of the processes directly in the cgroup, sorted.
    fn procs(&self, cg: &CgroupPath) -> Result<Vec<u32>, Error>;
    fn children(&self, cg: &CgroupPath) -> Result<Vec<CgroupPath>, Error>;
    /// Makes the cgroup's cpuset writable and its memory follow `cpuset.mems`: v1 sets
    /// `cpuset.memory_migrate=1` in it and its descendants; v2 enables `+cpuset` in its
    /// ancestors.
    fn prepare(&self, cg: &CgroupPath) -> Result<(), Error>;
    /// Creates a cgroup with its cpus and mems set, ready for tasks to join (the parent
    /// must exist). On v1 also its freezer cgroup, when the freezer is mounted.
    fn create(&self, cg: &CgroupPath, cpus: &CpuSet, mems: &NodeSet) -> Result<(), Error>;
    /// Moves a process (all its threads) into the cgroup.
    fn attach(&self, cg: &CgroupPath, pid: u32) -> Result<(), Error>;
    /// Removes an empty cgroup (no tasks, no children).
    fn remove(&self, cg: &CgroupPath) -> Result<(), Error>;
    /// Whether every task of the cgroup is frozen.
    fn is_frozen(&self, cg: &CgroupPath) -> Result<bool, Error>;
    /// Asks the freezer to freeze or thaw; freezing completes asynchronously (see
    /// [`Cgroups::freeze`], which waits and guards).
    fn set_frozen(&self, cg: &CgroupPath, frozen: bool) -> Result<(), Error>;
}

/// The host's cpuset hierarchy, and the freeze guards it has out.
#[derive(Debug, Clone)]
pub struct Cgroups {
    backend: Arc<dyn Backend>,
    frozen: Arc<freeze::Registry>,
}

impl Cgroups {
    /// Finds the cpuset hierarchy of this host from `/proc/self/mountinfo`, for callers
    /// that hold no [`Kernel`] (the training collector). The daemon and placectl build one
    /// kernel at start and take the hierarchy from it ([`Cgroups::of`]).
    pub fn detect() -> Result<Self, Error> {
        Self::of(&Kernel::host().map_err(|e| Error::Kernel(Box::new(e)))?)
    }

    /// The hierarchy of `kernel`'s mount table that holds the cpuset controller (see
    /// [`Cgroups::from_mounts`]).
    pub fn of(kernel: &Kernel) -> Result<Self, Error> {
        Self::from_mounts(kernel.mounts(), kernel.fs().clone())
    }

    fn with_backend(backend: Arc<dyn Backend>) -> Self {
        Self {
            backend,
            frozen: Arc::default(),
        }
    }

    /// Picks the backend: the v1 cpuset hierarchy if mounted (pure v1, hybrid), else
    /// cgroup2 if its root offers cpuset (pure v2, or hybrid with cpuset on v2).
    pub fn from_mounts(mounts: &Mounts, fs: Arc<dyn Fs>) -> Result<Self, Error> {
        if let Some(m) = mounts.v1("cpuset") {
            let freezer = mounts.v1("freezer").map(|f| f.mount_point.clone());
            return Ok(Self::v1(m.mount_point.clone(), freezer, fs));
        }
        if let Some(m) = mounts.v2() {
            let v2 = V2::new(m.mount_point.clone(), fs);
            if v2.offers_cpuset()? {
                return Ok(Self::with_backend(Arc::new(v2)));
            }
            return Err(Error::NoCpuset {
                hint: format!(
                    "{} does not list cpuset in cgroup.controllers: the controller is bound \
                     to a cgroup v1 hierarchy that is not mounted (mount -t cgroup -o cpuset \
                     cpuset /sys/fs/cgroup/cpuset), or the kernel lacks CONFIG_CPUSETS",
                    m.mount_point.display()
                ),
            });
        }
        Err(Error::NoCpuset {
            hint: "no cgroup or cgroup2 file system is mounted; mount cgroup2 at \
                   /sys/fs/cgroup"
                .into(),
        })
    }

    /// A v1 cpuset hierarchy at `cpuset_root`, with the freezer at `freezer_root`.
    pub fn v1(cpuset_root: PathBuf, freezer_root: Option<PathBuf>, fs: Arc<dyn Fs>) -> Self {
        Self::with_backend(Arc::new(V1::new(cpuset_root, freezer_root, fs)))
    }

    /// The unified hierarchy at `root`.
    pub fn v2(root: PathBuf, fs: Arc<dyn Fs>) -> Self {
        Self::with_backend(Arc::new(V2::new(root, fs)))
    }

    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// Freezes `cg` and waits until every task is frozen, at most `timeout`. The guard thaws
    /// on drop; until then [`Cgroups::thaw_all`] knows the cgroup. A cgroup already frozen
    /// by someone else (`docker pause`) is left frozen ([`Frozen::owned`] is false).
    pub fn freeze(&self, cg: &CgroupPath, timeout: Duration) -> Result<Frozen, Error> {
        freeze::freeze(&self.backend, &self.frozen, cg, timeout)
    }

    /// Thaws every cgroup that a live guard of this hierarchy (or of a clone of it) holds;
    /// returns how many it thawed. For a shutdown after the migrations were stopped.
    pub fn thaw_all(&self) -> usize {
        self.frozen.thaw_all(self.backend.as_ref())
    }

    /// `cg` and its descendants, pre-order; see [`subtree`].
    pub fn subtree(&self, cg: &CgroupPath) -> Result<Vec<CgroupPath>, Error> {
        subtree(self.backend.as_ref(), cg)
    }
}

impl std::ops::Deref for Cgroups {
    type Target = dyn Backend;
    fn deref(&self) -> &Self::Target {
        self.backend.as_ref()
    }
}

/// `cg` and its descendants in pre-order (parents first). A descendant that vanishes while
/// we walk is left out; `cg` itself vanishing is an error.
pub fn subtree(backend: &dyn Backend, cg: &CgroupPath) -> Result<Vec<CgroupPath>, Error> {
    let mut out = vec![cg.clone()];
    let mut i = 0;
    while i < out.len() {
        let children = match backend.children(&out[i]) {
            Ok(c) => c,
            Err(Error::Vanished { .. }) if i > 0 => Vec::new(),
            Err(e) => return Err(e),
        };
        // Children go right after their parent; visiting every entry in turn then
        // yields depth-first pre-order (parents before children, subtrees contiguous).
        let at = i + 1;
        for (k, c) in children.into_iter().enumerate() {
            out.insert(at + k, c);
        }
        if out.len() > MAX_SUBTREE {
            return Err(Error::TooManyCgroups {
                cgroup: cg.to_string(),
                limit: MAX_SUBTREE,
            });
        }
        i += 1;
    }
    Ok(out)
}

/// The cpuset in effect for `cg`: its own, or on v2, where the cpuset controller is not
/// enabled for it, that of its nearest ancestor with one (configured sets empty: it
/// inherits). Reads only.
pub fn effective(backend: &dyn Backend, cg: &CgroupPath) -> Result<CpusetState, Error> {
    let mut at = cg.clone();
    loop {
        match backend.cpuset(&at) {
            Ok(s) if &at == cg => return Ok(s),
            Ok(s) => {
                return Ok(CpusetState {
                    cpus: CpuSet::new(),
                    mems: NodeSet::new(),
                    ..s
                });
            }
            Err(Error::MissingFile { .. }) if !at.is_root() => {
                at = at.parent().unwrap_or_default();
            }
            Err(e) => return Err(e),
        }
    }
}

/// What to write for a set: the kernel's list, or a newline for the empty set (which
/// v2 reads as "inherit").
pub(crate) fn set_value<K>(set: &IdSet<K>) -> String {
    if set.is_empty() {
        "\n".to_owned()
    } else {
        set.to_string()
    }
}
