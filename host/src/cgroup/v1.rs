//! cgroup v1: the cpuset hierarchy, and the freezer hierarchy mounted beside it.
//!
//! Kernel rules that shape this file (`kernel/cgroup/cpuset.c`, cgroup-v1/cpusets.rst):
//! - A new cpuset starts with empty `cpuset.cpus` and `cpuset.mems` (unless the parent has
//!   `cgroup.clone_children`), and a task cannot join a cpuset while either is empty
//!   (ENOSPC), so [`Backend::create`] writes both before anything can be attached.
//! - A cpuset must lie within its parent's (EINVAL) and its children within it (EBUSY):
//!   see `plan.rs` for the write order that keeps both true.
//! - Pages follow a `cpuset.mems` change only with `cpuset.memory_migrate=1`, a per-cgroup
//!   flag, so [`Backend::prepare`] sets it in the cgroup and every descendant.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::tree::Tree;
use super::{Backend, CgroupPath, CpusetState, Error, Fs, Version, set_value};
use placed_core::cpuset::{CpuSet, NodeSet};

/// The cpuset controller on a cgroup v1 hierarchy.
#[derive(Debug, Clone)]
pub struct V1 {
    cpuset: Tree,
    /// The freezer hierarchy, where containers have a cgroup of the same path (every runtime
    /// creates the same path in every v1 hierarchy).
    freezer: Option<Tree>,
}

impl V1 {
    pub fn new(cpuset_root: PathBuf, freezer_root: Option<PathBuf>, fs: Arc<dyn Fs>) -> Self {
        Self {
            cpuset: Tree::new(cpuset_root, Version::V1, fs.clone()),
            freezer: freezer_root.map(|r| Tree::new(r, Version::V1, fs)),
        }
    }

    fn freezer_of(&self, cg: &CgroupPath) -> Result<&Tree, Error> {
        let no = |hint| Error::NoFreezer {
            cgroup: cg.to_string(),
            hint,
        };
        let tree = self.freezer.as_ref().ok_or_else(|| {
            no(
                "the v1 freezer controller is not mounted (mount -t cgroup -o freezer freezer \
                /sys/fs/cgroup/freezer)",
            )
        })?;
        if cg.is_root() {
            return Err(no("the root cgroup cannot be frozen"));
        }
        if !tree.exists(cg)? {
            return Err(no(
                "the freezer hierarchy has no cgroup of the same path; its runtime did not \
                 create one",
            ));
        }
        Ok(tree)
    }
}

impl Backend for V1 {
    fn version(&self) -> Version {
        Version::V1
    }

    fn root(&self) -> &Path {
        &self.cpuset.root
    }

    fn exists(&self, cg: &CgroupPath) -> Result<bool, Error> {
        self.cpuset.exists(cg)
    }

    fn cpuset(&self, cg: &CgroupPath) -> Result<CpusetState, Error> {
        Ok(CpusetState {
            cpus: self.cpuset.read_set(cg, "cpuset.cpus")?,
            mems: self.cpuset.read_set(cg, "cpuset.mems")?,
            effective_cpus: self.cpuset.read_set(cg, "cpuset.effective_cpus")?,
            effective_mems: self.cpuset.read_set(cg, "cpuset.effective_mems")?,
        })
    }

    fn set_cpus(&self, cg: &CgroupPath, cpus: &CpuSet) -> Result<(), Error> {
        self.cpuset.write(cg, "cpuset.cpus", &set_value(cpus))
    }

    fn set_mems(&self, cg: &CgroupPath, mems: &NodeSet) -> Result<(), Error> {
        self.cpuset.write(cg, "cpuset.mems", &set_value(mems))
    }

    fn threads(&self, cg: &CgroupPath) -> Result<Vec<u32>, Error> {
        self.cpuset.read_ids(cg, "tasks")
    }

    fn procs(&self, cg: &CgroupPath) -> Result<Vec<u32>, Error> {
        self.cpuset.read_ids(cg, "cgroup.procs")
    }

    fn children(&self, cg: &CgroupPath) -> Result<Vec<CgroupPath>, Error> {
        self.cpuset.children(cg)
    }

    fn prepare(&self, cg: &CgroupPath) -> Result<(), Error> {
        // Per-cgroup flag: a task in a child follows the child's flag, not ours.
        for c in super::subtree(self, cg)? {
            if self.cpuset.read(&c, "cpuset.memory_migrate")?.trim() != "1" {
                self.cpuset.write(&c, "cpuset.memory_migrate", "1")?;
            }
        }
        Ok(())
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
        self.cpuset.mkdir(cg)?;
        // cpus and mems before any task joins (ENOSPC otherwise), then migration on.
        let filled = self
            .set_cpus(cg, cpus)
            .and_then(|()| self.set_mems(cg, mems))
            .and_then(|()| self.cpuset.write(cg, "cpuset.memory_migrate", "1"));
        if let Err(e) = filled {
            let _ = self.cpuset.rmdir(cg);
            return Err(e);
        }
        if let Some(freezer) = &self.freezer {
            if !freezer.exists(cg)? {
                if let Err(e) = freezer.mkdir(cg) {
                    let _ = self.cpuset.rmdir(cg);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    fn attach(&self, cg: &CgroupPath, pid: u32) -> Result<(), Error> {
        self.cpuset.write(cg, "cgroup.procs", &pid.to_string())?;
        if let Some(freezer) = &self.freezer {
            if freezer.exists(cg)? {
                freezer.write(cg, "cgroup.procs", &pid.to_string())?;
            }
        }
        Ok(())
    }

    fn remove(&self, cg: &CgroupPath) -> Result<(), Error> {
        if let Some(freezer) = &self.freezer {
            if freezer.exists(cg)? {
                freezer.rmdir(cg)?;
            }
        }
        self.cpuset.rmdir(cg)
    }

    fn is_frozen(&self, cg: &CgroupPath) -> Result<bool, Error> {
        let tree = self.freezer_of(cg)?;
        // THAWED, FREEZING (in progress, or a task that cannot be frozen yet) or FROZEN.
        Ok(tree.read(cg, "freezer.state")?.trim() == "FROZEN")
    }

    fn set_frozen(&self, cg: &CgroupPath, frozen: bool) -> Result<(), Error> {
        let tree = self.freezer_of(cg)?;
        tree.write(
            cg,
            "freezer.state",
            if frozen { "FROZEN" } else { "THAWED" },
        )
    }
}
