//! What placed reads from controllers other than cpuset: a container's vCPU count from its
//! CPU bandwidth quota (`cpu.cfs_quota_us` / `cpu.cfs_period_us` on v1, `cpu.max` on v2),
//! the daemon's second source of `v` after the orchestrator's request and before the
//! cpuset's size; and the directory perf counters attach to (v1 `perf_event`, or the v2
//! cgroup).

use std::path::PathBuf;
use std::sync::Arc;

use super::CgroupPath;
use crate::kernel::Kernel;
use crate::kernel::fs::{self, Fs};
use crate::kernel::mountinfo::Mounts;

/// Where the cpu and perf_event controllers are mounted, from the mount table read once.
#[derive(Debug, Clone)]
pub struct Controllers {
    fs: Arc<dyn Fs>,
    /// The v1 cpu hierarchy, or the v2 root (flagged true).
    cpu: Option<(PathBuf, bool)>,
    /// The v1 perf_event hierarchy, or the v2 root.
    perf: Option<PathBuf>,
}

impl Controllers {
    /// The controllers of `kernel`'s mount table.
    pub fn of(kernel: &Kernel) -> Self {
        Self::from_mounts(kernel.mounts(), kernel.fs().clone())
    }

    pub fn from_mounts(mounts: &Mounts, fs: Arc<dyn Fs>) -> Self {
        let cpu = mounts
            .v1("cpu")
            .map(|c| (c.mount_point.clone(), false))
            .or_else(|| mounts.v2().map(|c| (c.mount_point.clone(), true)));
        let perf = mounts
            .v1("perf_event")
            .or_else(|| mounts.v2())
            .map(|c| c.mount_point.clone());
        Self { fs, cpu, perf }
    }

    /// The directory perf counters of this cgroup attach to.
    pub fn perf_dir(&self, cg: &CgroupPath) -> Option<PathBuf> {
        self.perf.as_ref().map(|root| cg.under(root))
    }

    /// The quota in whole vCPUs (rounded up), or `None` when unlimited, unreadable (no cpu
    /// controller for this cgroup) or not what the kernel writes there.
    pub fn vcpus(&self, cg: &CgroupPath) -> Option<usize> {
        let (root, v2) = self.cpu.as_ref()?;
        let dir = cg.under(root);
        let read = |file: &str| match fs::read(self.fs.as_ref(), &dir.join(file)) {
            Ok(text) => Some(text),
            Err(e) => {
                tracing::debug!(cgroup = %cg, error = %e, "no CPU quota");
                None
            }
        };
        if *v2 {
            parse_cpu_max(&read("cpu.max")?)
        } else {
            parse_v1(&read("cpu.cfs_quota_us")?, &read("cpu.cfs_period_us")?)
        }
    }
}

/// `cpu.max`: "max 100000" (unlimited) or "200000 100000".
pub fn parse_cpu_max(text: &str) -> Option<usize> {
    let mut parts = text.split_whitespace();
    let quota = parts.next()?;
    if quota == "max" {
        return None;
    }
    let period = parts.next().unwrap_or("100000");
    vcpus(quota.parse().ok()?, period.parse().ok()?)
}

/// v1: a quota of -1 means unlimited.
pub fn parse_v1(quota: &str, period: &str) -> Option<usize> {
    let quota: i64 = quota.trim().parse().ok()?;
    if quota <= 0 {
        return None;
    }
    vcpus(u64::try_from(quota).ok()?, period.trim().parse().ok()?)
}

fn vcpus(quota: u64, period: u64) -> Option<usize> {
    if period == 0 || quota == 0 {
        return None;
    }
    usize::try_from(quota.div_ceil(period)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeKernel;

    #[test]
    fn quotas_round_up_and_unlimited_is_none() {
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        assert_eq!(parse_cpu_max("200000 100000\n"), Some(2));
        assert_eq!(parse_cpu_max("150000 100000"), Some(2));
        assert_eq!(parse_cpu_max("garbage"), None);
        assert_eq!(parse_v1("-1\n", "100000\n"), None);
        assert_eq!(parse_v1("400000\n", "100000\n"), Some(4));
        assert_eq!(parse_v1("50000", "100000"), Some(1));
        assert_eq!(parse_v1("1", "0"), None);
    }

    /// The quota is read from the cpu hierarchy the mount table names (v1: its own mount;
    /// v2: the unified one), and perf counters attach beside it.
    #[test]
    fn quota_and_perf_dir_come_from_the_mounted_controllers() {
        for k in [
            FakeKernel::v1("0-7", "0"),
            FakeKernel::v2("0-7", "0", "cpuset"),
        ] {
            k.cgroup("/c", "0-3", "0");
            k.cgroup("/free", "0-3", "0");
            k.set_cpu_quota("/c", 250_000, 100_000);
            let c = Controllers::of(&k.kernel());
            let cg = |s: &str| CgroupPath::parse(s).unwrap();
            assert_eq!(c.vcpus(&cg("/c")), Some(3), "{:?}", k.version);
            assert_eq!(c.vcpus(&cg("/free")), None, "{:?}: unlimited", k.version);
            assert_eq!(c.vcpus(&cg("/absent")), None, "{:?}", k.version);
            // The fake v1 host mounts no perf_event hierarchy (the daemon then attaches to
            // the cpuset cgroup); on v2 counters attach to the unified cgroup.
            match k.version {
                crate::cgroup::Version::V1 => assert_eq!(c.perf_dir(&cg("/c")), None),
                crate::cgroup::Version::V2 => {
                    assert_eq!(c.perf_dir(&cg("/c")), Some(k.cpuset_root().join("c")));
                }
            }
        }
    }
}
