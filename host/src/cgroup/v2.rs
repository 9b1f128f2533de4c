//! cgroup v2: the unified hierarchy.
//!
//! Kernel rules that shape this file (`Documentation/admin-guide/cgroup-v2.rst`):
//! - A cgroup has cpuset files only when its parent lists `cpuset` in
//!   `cgroup.subtree_control`, so every ancestor must enable it, root first (ENOENT from a
//!   child's `cgroup.subtree_control` when its parent has not).
//! - No internal processes: a non-root cgroup with processes cannot enable a controller for
//!   its children (EBUSY). So [`Backend::prepare`] enables `+cpuset` in the ancestors only,
//!   never in the container's own cgroup (which has the processes and does not need it).
//! - An empty `cpuset.cpus` or `cpuset.mems` means "inherit the parent's"; a set outside the
//!   parent's is accepted and the effective set is the intersection.
//! - Writing `cpuset.mems` always migrates the tasks' pages (there is no `memory_migrate`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::error::Error;
use super::tree::Tree;
use super::{Backend, CgroupPath, CpusetState, Fs, Version, set_value};
use placed_core::cpuset::{CpuSet, NodeSet};

/// The cpuset controller on the unified hierarchy.
#[derive(Debug, Clone)]
pub struct V2 {
    tree: Tree,
}

impl V2 {
    pub fn new(root: PathBuf, fs: Arc<dyn Fs>) -> Self {
        Self {
            tree: Tree::new(root, Version::V2, fs),
        }
    }

    /// Whether the root offers the cpuset controller at all (it does not on a hybrid host
    /// where cpuset is bound to a v1 hierarchy).
    pub fn offers_cpuset(&self) -> Result<bool, Error> {
        let controllers = self.tree.read(&CgroupPath::root(), "cgroup.controllers")?;
        Ok(controllers.split_whitespace().any(|c| c == "cpuset"))
    }

    /// Enables `+cpuset` in every strict ancestor of `cg` that lacks it, root first.
    fn enable_cpuset_above(&self, cg: &CgroupPath) -> Result<(), Error> {
        for a in cg.ancestors() {
            let enabled = self.tree.read(&a, "cgroup.subtree_control")?;
            if enabled.split_whitespace().any(|c| c == "cpuset") {
                continue;
            }
            if let Err(e) = self.tree.write(&a, "cgroup.subtree_control", "+cpuset") {
                return Err(match e {
                    Error::Refused { rule, source, .. } => Error::CannotEnableCpuset {
                        cgroup: cg.clone(),
                        reason: rule,
                        hint: if source.errno() == Some(libc::EBUSY) {
                            "move that cgroup's processes into a leaf below it (systemd \
                             does this for delegated units), then try again"
                        } else {
                            "enable cpuset in the cgroup.subtree_control of its parent \
                             first, or mount cgroup v2 with cpuset available \
                             (cgroup_no_v1=cpuset)"
                        },
                        source,
                    },
                    other => other,
                });
            }
            tracing::info!(cgroup = %a, "enabled +cpuset in cgroup.subtree_control");
        }
        Ok(())
    }
}

impl Backend for V2 {
    fn version(&self) -> Version {
        Version::V2
    }

    fn root(&self) -> &Path {
        &self.tree.root
    }

    fn exists(&self, cg: &CgroupPath) -> Result<bool, Error> {
        self.tree.exists(cg)
    }

    fn cpuset(&self, cg: &CgroupPath) -> Result<CpusetState, Error> {
        // The root has no cpuset.cpus / cpuset.mems, only the effective files.
        let (cpus, mems) = if cg.is_root() {
            (CpuSet::new(), NodeSet::new())
        } else {
            (
                self.tree.read_set(cg, "cpuset.cpus")?,
                self.tree.read_set(cg, "cpuset.mems")?,
            )
        };
        Ok(CpusetState {
            cpus,
            mems,
            effective_cpus: self.tree.read_set(cg, "cpuset.cpus.effective")?,
            effective_mems: self.tree.read_set(cg, "cpuset.mems.effective")?,
        })
    }

    fn set_cpus(&self, cg: &CgroupPath, cpus: &CpuSet) -> Result<(), Error> {
        self.tree.write(cg, "cpuset.cpus", &set_value(cpus))
    }

    fn set_mems(&self, cg: &CgroupPath, mems: &NodeSet) -> Result<(), Error> {
        self.tree.write(cg, "cpuset.mems", &set_value(mems))
    }

    fn threads(&self, cg: &CgroupPath) -> Result<Vec<u32>, Error> {
        self.tree.read_ids(cg, "cgroup.threads")
    }

    fn procs(&self, cg: &CgroupPath) -> Result<Vec<u32>, Error> {
        self.tree.read_ids(cg, "cgroup.procs")
    }

    fn children(&self, cg: &CgroupPath) -> Result<Vec<CgroupPath>, Error> {
        self.tree.children(cg)
    }

    fn prepare(&self, cg: &CgroupPath) -> Result<(), Error> {
        self.enable_cpuset_above(cg)
    }

    fn create(&self, cg: &CgroupPath, cpus: &CpuSet, mems: &NodeSet) -> Result<(), Error> {
        if cpus.is_empty() {
            return Err(Error::Empty {
                what: "cpuset.cpus",
            });
        }
        if mems.is_empty() {
            return Err(Error::Empty {
                what: "cpuset.mems",
            });
        }
        self.enable_cpuset_above(cg)?;
        self.tree.mkdir(cg)?;
        let filled = self
            .set_cpus(cg, cpus)
            .and_then(|()| self.set_mems(cg, mems));
        if let Err(e) = filled {
            let _ = self.tree.rmdir(cg);
            return Err(e);
        }
        Ok(())
    }

    fn attach(&self, cg: &CgroupPath, pid: u32) -> Result<(), Error> {
        self.tree.write(cg, "cgroup.procs", &pid.to_string())
    }

    fn remove(&self, cg: &CgroupPath) -> Result<(), Error> {
        self.tree.rmdir(cg)
    }

    fn is_frozen(&self, cg: &CgroupPath) -> Result<bool, Error> {
        // cgroup.events: "populated 1\nfrozen 1\n"; "frozen 1" once every task is stopped.
        let events = self.tree.read(cg, "cgroup.events")?;
        Ok(events.lines().any(|l| l.trim() == "frozen 1"))
    }

    fn set_frozen(&self, cg: &CgroupPath, frozen: bool) -> Result<(), Error> {
        if cg.is_root() {
            return Err(Error::NoFreezer {
                cgroup: cg.to_string(),
                hint: "the root cgroup cannot be frozen",
            });
        }
        self.tree
            .write(cg, "cgroup.freeze", if frozen { "1" } else { "0" })
    }
}
