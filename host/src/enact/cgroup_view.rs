//! What the daemon reads and changes of a container's cgroup, through [`Host`], so that no
//! caller reaches past the host into the cgroup layer: the host decides how a read is
//! done (v1 or v2, prepared or not) and every error comes out as an [`Error`] of this
//! module's parent.

use std::path::{Path, PathBuf};

use super::{Error, Host};
use crate::cgroup::{self, CgroupPath, CpusetState};

impl Host {
    /// The mount point of the cpuset hierarchy.
    pub fn cgroup_root(&self) -> &Path {
        self.cgroups.root()
    }

    /// The hierarchy, as status shows it: its mount point and version.
    pub fn cgroup_summary(&self) -> String {
        format!(
            "{} ({})",
            self.cgroups.root().display(),
            self.cgroups.version()
        )
    }

    /// The directory of a cgroup in the cpuset hierarchy.
    pub fn cgroup_dir(&self, cg: &CgroupPath) -> PathBuf {
        cg.under(self.cgroups.root())
    }

    /// Whether the cgroup exists (its container has not stopped).
    pub fn cgroup_exists(&self, cg: &CgroupPath) -> Result<bool, Error> {
        Ok(self.cgroups.exists(cg)?)
    }

    /// The cgroup's children, sorted.
    pub fn cgroup_children(&self, cg: &CgroupPath) -> Result<Vec<CgroupPath>, Error> {
        Ok(self.cgroups.children(cg)?)
    }

    /// The cpuset the cgroup's own files hold.
    pub fn cpuset(&self, cg: &CgroupPath) -> Result<CpusetState, Error> {
        Ok(self.cgroups.cpuset(cg)?)
    }

    /// The cpuset in effect for the cgroup's tasks. On v2 a cgroup has no cpuset files
    /// until `+cpuset` is enabled in its ancestors; it then inherits its parent's sets.
    pub fn effective_cpuset(&self, cg: &CgroupPath) -> Result<CpusetState, Error> {
        Ok(cgroup::effective(self.cgroups.backend().as_ref(), cg)?)
    }

    /// The cpuset of a cgroup made ready to be changed first (which changes nothing for its
    /// tasks: on v2 `+cpuset` is enabled in its ancestors, and it inherits its parent's
    /// sets).
    pub fn prepared_cpuset(&self, cg: &CgroupPath) -> Result<CpusetState, Error> {
        self.cgroups.prepare(cg)?;
        Ok(self.cgroups.cpuset(cg)?)
    }

    /// Whether every task of the cgroup is frozen.
    pub fn is_frozen(&self, cg: &CgroupPath) -> Result<bool, Error> {
        Ok(self.cgroups.is_frozen(cg)?)
    }

    /// Thaws a cgroup (one an interrupted move of placed's left frozen).
    pub fn thaw(&self, cg: &CgroupPath) -> Result<(), Error> {
        Ok(self.cgroups.set_frozen(cg, false)?)
    }
}
