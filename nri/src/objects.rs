//! The runtime's pods and containers as placed sees them: plain Rust values, so that the
//! daemon never handles a protobuf message (the conversions are the crate's own, private).

use std::collections::BTreeMap;

use placed_core::cpuset::{CpuSet, NodeSet};
use placed_core::reconcile::Sets;

/// Labels or annotations.
pub type Map = BTreeMap<String, String>;

/// A pod sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Pod {
    /// The runtime's sandbox id.
    pub id: String,
    /// Kubernetes' pod uid.
    pub uid: String,
    pub name: String,
    pub namespace: String,
    pub labels: Map,
    pub annotations: Map,
    /// The pod's cgroup (`/kubepods/burstable/pod<uid>` with cgroupfs, a slice name with
    /// the systemd driver).
    pub cgroup_parent: String,
}

/// Where a container is in its life, as the runtime says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ContainerState {
    #[default]
    Unknown,
    Created,
    Paused,
    Running,
    Stopped,
}

/// A container of a pod.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Container {
    /// The runtime's container id.
    pub id: String,
    /// The sandbox id of its pod ([`Pod::id`]).
    pub pod_id: String,
    /// The name in the pod spec.
    pub name: String,
    pub state: ContainerState,
    pub labels: Map,
    pub annotations: Map,
    /// `linux.cgroupsPath` of its OCI spec, as the runtime gives it to runc.
    pub cgroups_path: String,
    /// Its init process, once it runs.
    pub pid: Option<u32>,
    pub resources: Resources,
}

/// The CPU part of a container's resources, as the kubelet set them (a CPU limit becomes a
/// quota per period, a request becomes shares) or as an update asks for them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Resources {
    pub cpu_shares: Option<u64>,
    pub cpu_quota: Option<i64>,
    pub cpu_period: Option<u64>,
    /// The cpuset, when one is set.
    pub cpus: Option<CpuSet>,
    pub mems: Option<NodeSet>,
}

/// The kubelet's shares for a pod without a CPU request (BestEffort): a floor, not a size.
pub const MIN_SHARES: u64 = 2;

/// How many vCPUs a container asks for, and from what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vcpus {
    /// Its CPU limit: quota / period, rounded up.
    Limit(u32),
    /// Its CPU request: shares / 1024, rounded up (the kubelet gives 1024 shares a CPU).
    Request(u32),
}

impl Vcpus {
    pub fn count(self) -> u32 {
        match self {
            Self::Limit(n) | Self::Request(n) => n,
        }
    }
}

impl Resources {
    /// The container's size in vCPUs: from the limit where there is one, else from the
    /// request; `None` for a container with neither (BestEffort, or no CPU fields).
    pub fn vcpus(&self) -> Option<Vcpus> {
        if let (Some(quota), Some(period)) = (self.cpu_quota, self.cpu_period) {
            // A quota of -1 (or any value <= 0) is "no limit".
            if let (Ok(quota), true) = (u64::try_from(quota), period > 0) {
                if quota > 0 {
                    return u32::try_from(quota.div_ceil(period)).ok().map(Vcpus::Limit);
                }
            }
        }
        match self.cpu_shares {
            Some(shares) if shares > MIN_SHARES => u32::try_from(shares.div_ceil(1024))
                .ok()
                .map(Vcpus::Request),
            _ => None,
        }
    }

    /// The cpuset as [`Sets`], when both halves are set.
    pub fn sets(&self) -> Option<Sets> {
        Some(Sets {
            cpus: self.cpus.clone()?,
            mems: self.mems.clone()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(shares: Option<u64>, quota: Option<i64>, period: Option<u64>) -> Resources {
        Resources {
            cpu_shares: shares,
            cpu_quota: quota,
            cpu_period: period,
            ..Resources::default()
        }
    }

    #[test]
    fn the_limit_sizes_a_container_rounded_up() {
        // limits.cpu: 2 -> quota 200000 per 100000.
        assert_eq!(
            cpu(Some(2048), Some(200_000), Some(100_000)).vcpus(),
            Some(Vcpus::Limit(2))
        );
        // limits.cpu: 1500m -> 2 vCPUs, whatever the request says.
        assert_eq!(
            cpu(Some(512), Some(150_000), Some(100_000)).vcpus(),
            Some(Vcpus::Limit(2))
        );
        assert_eq!(
            cpu(None, Some(1), Some(100_000)).vcpus(),
            Some(Vcpus::Limit(1))
        );
    }

    #[test]
    fn without_a_limit_the_request_sizes_it() {
        // requests.cpu: 3 -> 3072 shares; 500m -> 512 -> 1.
        assert_eq!(
            cpu(Some(3072), None, Some(100_000)).vcpus(),
            Some(Vcpus::Request(3))
        );
        assert_eq!(
            cpu(Some(512), Some(-1), Some(100_000)).vcpus(),
            Some(Vcpus::Request(1))
        );
        assert_eq!(
            cpu(Some(1025), Some(0), Some(100_000)).vcpus(),
            Some(Vcpus::Request(2))
        );
        // A quota without a period is no limit either.
        assert_eq!(
            cpu(Some(2048), Some(100_000), None).vcpus(),
            Some(Vcpus::Request(2))
        );
        assert_eq!(
            cpu(Some(2048), Some(100_000), Some(0)).vcpus(),
            Some(Vcpus::Request(2))
        );
    }

    #[test]
    fn best_effort_and_unsized_containers_have_no_size() {
        assert_eq!(cpu(Some(MIN_SHARES), None, None).vcpus(), None);
        assert_eq!(cpu(None, None, None).vcpus(), None);
        assert_eq!(cpu(Some(0), Some(-1), Some(100_000)).vcpus(), None);
    }

    #[test]
    fn sets_need_both_halves() {
        let mut r = Resources {
            cpus: Some("0-1".parse().unwrap()),
            ..Resources::default()
        };
        assert_eq!(r.sets(), None);
        r.mems = Some("0".parse().unwrap());
        assert_eq!(r.sets().unwrap().to_string(), "cpus 0-1 mems 0");
    }
}
