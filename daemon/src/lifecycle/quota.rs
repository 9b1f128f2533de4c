//! What the daemon reads from controllers other than cpuset: a container's vCPU count from
//! its CPU bandwidth quota (`cpu.cfs_quota_us` / `cpu.cfs_period_us` on v1, `cpu.max` on
//! v2), the second source of `v` after the orchestrator's request and before the cpuset's
//! size; and the directory perf counters attach to (v1 `perf_event`, or the v2 cgroup).

use std::path::{Path, PathBuf};

use placed_host::cgroup::{CgroupPath, Mounts};

/// Where the cpu and perf_event controllers are mounted, found once at start-up.
#[derive(Debug, Clone)]
pub struct Controllers {
    /// v1 cpu hierarchy, or the v2 root (flagged true).
    root: Option<(PathBuf, bool)>,
    /// v1 perf_event hierarchy, or the v2 root.
    perf: Option<PathBuf>,
}

impl Controllers {
    pub fn from_mountinfo(path: &Path) -> Self {
        let mounts = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| Mounts::parse(&t).ok());
        let root = mounts.as_ref().and_then(|m| {
            m.v1("cpu")
                .map(|c| (c.mount_point.clone(), false))
                .or_else(|| m.v2().map(|c| (c.mount_point.clone(), true)))
        });
        let perf = mounts.as_ref().and_then(|m| {
            m.v1("perf_event")
                .or_else(|| m.v2())
                .map(|c| c.mount_point.clone())
        });
        Self { root, perf }
    }

    /// The directory perf counters of this cgroup attach to.
    pub fn perf_dir(&self, cg: &CgroupPath) -> Option<PathBuf> {
        self.perf.as_ref().map(|root| cg.under(root))
    }

    /// The quota in whole vCPUs (rounded up), or `None` when unlimited or unreadable.
    pub fn vcpus(&self, cg: &CgroupPath) -> Option<usize> {
        let (root, v2) = self.root.as_ref()?;
        let dir = cg.under(root);
        if *v2 {
            parse_cpu_max(&std::fs::read_to_string(dir.join("cpu.max")).ok()?)
        } else {
            let quota = std::fs::read_to_string(dir.join("cpu.cfs_quota_us")).ok()?;
            let period = std::fs::read_to_string(dir.join("cpu.cfs_period_us")).ok()?;
            parse_v1(&quota, &period)
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
}
