//! What the API asks of the daemon and what it answers, in the daemon's own terms: the
//! service converts messages into these and back; nothing here knows gRPC.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::state::{ContainerRecord, Lifecycle};
use placed_core::cpuset::{CpuSet, NodeSet};
use placed_core::policy::{self, Policy};
use placed_core::reconcile::OnOverride;
use placed_host::observe::SourceSpec;

use super::live::ModelLive;
use super::models::{LoadedClassesModel, LoadedModel, LoadedSizesModel};

/// A container as the API shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerView {
    pub record: ContainerRecord,
    /// Its override policy in force: its own, else the configured default.
    pub on_override: OnOverride,
    /// The operation in progress, if any.
    pub doing: Option<String>,
}

/// What `Manage` asks for; unset fields keep the container's current settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ManageRequest {
    pub container: String,
    pub vcpus: Option<usize>,
    pub policy: Option<Policy>,
    pub metric: Option<SourceSpec>,
    pub on_override: Option<OnOverride>,
    /// The orchestrator's labels, merged into the container's (an empty value removes a
    /// label).
    pub labels: BTreeMap<String, String>,
    /// A reservation the container claims: it starts on the reserved units, with the
    /// reservation's vCPUs, policy and labels unless the request says otherwise.
    pub reservation: Option<String>,
    /// Check and answer what would happen; change nothing.
    pub dry_run: bool,
    /// The name people know it by, when the caller knows better than the host (NRI:
    /// `namespace/pod/container`).
    pub name: Option<String>,
}

/// Where `Place` puts a container.
#[derive(Debug, Clone, PartialEq)]
pub enum PlaceTarget {
    /// The container's own policy.
    OwnPolicy,
    /// A policy, which becomes the container's.
    Policy(Policy),
    /// A policy for this move only: the container keeps its own, which may move it again
    /// at its next evaluation (`placectl place --keep-policy`).
    Once(Policy),
}

/// What `Place` did.
#[derive(Debug, Clone, PartialEq)]
pub struct PlaceOutcome {
    pub container: String,
    pub placement: Option<String>,
    pub cpus: CpuSet,
    pub mems: NodeSet,
    pub moved: bool,
    pub bytes_moved: u64,
    pub duration: Duration,
    pub reason: String,
}

/// What `Recommend` answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Recommendation {
    pub container: String,
    pub target: policy::Target,
    pub would_move: bool,
    pub reason: String,
}

/// The daemon's own state, for `GetStatus` and `placectl status`.
#[derive(Debug, Clone)]
pub struct StatusView {
    pub fingerprint: String,
    pub uptime: Duration,
    pub counts: Vec<(Lifecycle, usize)>,
    pub models: Vec<LoadedModel>,
    /// Models across sizes, for sizes without their own.
    pub across: Vec<LoadedSizesModel>,
    /// The model across machine classes, for sizes with neither.
    pub classes: Option<LoadedClassesModel>,
    pub state_file: String,
    pub cgroup: String,
    pub warnings: Vec<String>,
    /// Every model's live accuracy on this host, and whether its live gate stopped it.
    pub live: Vec<ModelLive>,
}
