//! What the daemon decided, kept across restarts (docs/design.md, "The daemon").
//!
//! A restarted daemon adopts the containers it finds where this file says they are,
//! instead of measuring and moving them again; a container caught mid-migration is put back
//! on a whole, non-empty cpuset and thawed. The file format is versioned independently of
//! the crate, carries a checksum over its exact bytes, and is written atomically
//! ([`store`]). One daemon holds the file at a time ([`lock`]), and what it reads is checked
//! as strictly as API input before anything is adopted ([`validate`]).
//!
//! The types below are the records in memory; the file's format is not their serde but
//! each format version's own types (`schema`), converted explicitly, and pinned by committed
//! golden files (`golden`).

#[cfg(test)]
mod golden;
pub mod lock;
mod schema;
mod store;
mod validate;

pub use placed_core::lifecycle::Lifecycle;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use placed_core::cpuset::{CpuSet, NodeSet};
use placed_core::policy::{GoalBound, Policy};
use placed_core::reconcile::{Action, OnOverride};
use placed_host::observe::SourceSpec;

pub use lock::StateLock;
pub use store::{STATE_VERSION, StateError, StateStore};
pub use validate::validate;

/// Everything persisted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub written_unix_ms: i64,
    /// The machine class this state was written on; a different class refuses to start.
    pub fingerprint: String,
    pub containers: Vec<ContainerRecord>,
    /// Containers an orchestrator handed back (`Unmanage`), by id: discovery leaves them
    /// alone until they disappear or `Manage` takes them again. Absent when empty, so that
    /// a file without any reads the same in a placed that predates the field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmanaged: Vec<String>,
    /// Units held for containers not started yet (admission with a reservation). Absent when
    /// empty, as `unmanaged`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reservations: Vec<ReservationRecord>,
    /// Models the live gate stopped (docs/models.md, "Live accuracy"), until an operator
    /// enables them again: a restart must not hand a model proven wrong its containers
    /// back. Absent when empty, as `unmanaged`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stopped_models: Vec<StoppedModel>,
}

/// A model the live gate stopped from moving containers: since when and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoppedModel {
    pub model_id: String,
    pub provenance: placed_models::Provenance,
    pub since_unix_ms: i64,
    /// The test's verdict, in words.
    pub reason: String,
}

/// Units held for a container that does not exist yet, until it claims them (`Manage` with
/// the reservation's id, or NRI's CreateContainer for the container it names) or the hold
/// expires.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReservationRecord {
    pub id: String,
    /// Where the container is to start.
    pub assigned: Assigned,
    pub vcpus: usize,
    pub policy: Policy,
    /// The orchestrator's own labels, given to the container that claims it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// The runtime's id of the container that will claim it, when the caller knows it
    /// (NRI's CreateContainer); claimed by that container when it appears.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_container: Option<String>,
    pub created_unix_ms: i64,
    pub expires_unix_ms: i64,
}

/// Where a container's tasks may run (the same two sets the reconciliation compares).
pub type Cpuset = placed_core::reconcile::Sets;

/// The last change of a container's cpuset made outside placed, and what placed did about
/// it. Kept until placed places the container again (or finds it back where it was put);
/// while its action holds the container, the lifecycle does not move it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverrideRecord {
    /// What placed had enacted.
    pub expected: Cpuset,
    /// What the kernel held instead.
    pub found: Cpuset,
    pub action: Action,
    pub unix_ms: i64,
}

/// A placement a container was given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Assigned {
    /// The important placement's id, or `None` when unpinned.
    pub placement: Option<String>,
    /// Allocation units reserved for the container.
    pub units: Vec<usize>,
    pub cpus: CpuSet,
    pub mems: NodeSet,
}

/// A migration that had started when the file was written: a daemon that finds one at
/// start-up thaws the container and settles it on one whole cpuset, `from` or `to`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Migration {
    pub from: Cpuset,
    pub to: Assigned,
    pub started_unix_ms: i64,
    /// Whether placed may have frozen the container for it (fast mode, and the container
    /// was not already frozen by someone else): only then does recovery thaw it.
    pub frozen: bool,
}

/// One measured placement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObservationRecord {
    pub placement: String,
    /// Median of the kept windows and its interval, in the source's unit.
    pub value: f64,
    pub low: f64,
    pub high: f64,
    pub source: String,
    pub windows: usize,
    pub dropped: usize,
}

/// Predicted performance in one placement, relative to the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PredictedRecord {
    pub placement: String,
    pub relative: f64,
    pub spread: f64,
    /// Measured (baseline, probe) rather than predicted.
    pub measured: bool,
    /// The model's calibrated interval of a predicted value. Absent for measured values,
    /// from models without calibration, and in state files from before intervals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<placed_models::interval::Interval>,
}

impl PredictedRecord {
    /// The range of relative performance the prediction stands for: the model's
    /// calibrated interval where it has one, else two standard deviations across trees
    /// (uncalibrated; what models trained before intervals offer).
    pub fn relative_range(&self) -> (f64, f64) {
        match self.interval {
            Some(i) => (i.low, i.high),
            None => (
                self.relative - 2.0 * self.spread,
                self.relative + 2.0 * self.spread,
            ),
        }
    }
}

/// A container's last prediction and what it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PredictionRecord {
    pub model_id: String,
    pub model_path: String,
    pub provenance: placed_models::Provenance,
    pub vcpus: usize,
    pub baseline: String,
    pub probe: String,
    pub observations: Vec<ObservationRecord>,
    pub placements: Vec<PredictedRecord>,
    /// Novelty, simulated training data, inconclusive comparisons.
    pub warnings: Vec<String>,
    pub unix_ms: i64,
    /// Why the model that made it failed the accuracy gate: such a prediction is shown,
    /// never acted on. Absent in state files from before the gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub below_gate: Option<String>,
    /// No training workload behaved like this container (the model's novelty rule).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub novel: bool,
    /// Why the model policy measured a third placement before moving the container, which
    /// then holds that measurement as a measured cell; absent when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub third: Option<String>,
    /// Made by the model across machine classes, not a model of this host: a prior, whose
    /// decisions rest on the lower bound of its intervals ([`PredictionRecord::goal_bound`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub across_classes: bool,
}

impl PredictionRecord {
    /// What the model policy holds against its goal for this prediction: the configured
    /// bound, except that a prior (the model across classes, never trained on this host)
    /// is held to the lower end of its intervals whatever is configured, as its file says
    /// its predictions are guesses with honest widths, not measurements.
    pub fn goal_bound(prediction: Option<&Self>, configured: GoalBound) -> GoalBound {
        if prediction.is_some_and(|p| p.across_classes) {
            GoalBound::LowerBound
        } else {
            configured
        }
    }

    pub fn relative(&self, placement: &str) -> Option<f64> {
        self.placements
            .iter()
            .find(|p| p.placement == placement)
            .map(|p| p.relative)
    }

    /// The prediction for `placement`.
    pub fn predicted(&self, placement: &str) -> Option<&PredictedRecord> {
        self.placements.iter().find(|p| p.placement == placement)
    }

    /// The baseline observation as (low, value, high).
    pub fn baseline_interval(&self) -> Option<(f64, f64, f64)> {
        self.observations
            .iter()
            .find(|o| o.placement == self.baseline)
            .map(|o| (o.low, o.value, o.high))
    }

    /// The baseline's absolute performance, to turn relative predictions into expectations.
    pub fn baseline_value(&self) -> Option<f64> {
        self.observations
            .iter()
            .find(|o| o.placement == self.baseline)
            .map(|o| o.value)
    }
}

/// Where the vCPU count came from, in order of precedence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VcpuSource {
    Request,
    Quota,
    Cpuset,
}

/// One container placed knows of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContainerRecord {
    /// The cgroup path in the cpuset hierarchy (`/docker/3f2a...`): the stable key.
    pub id: String,
    /// What people call it: the runtime's name, else a short id.
    pub name: String,
    pub runtime: String,
    /// The runtime's own id (64 hex digits for Docker), for resolving it again.
    pub runtime_id: String,
    pub vcpus: usize,
    pub vcpus_source: VcpuSource,
    pub policy: Policy,
    pub state: Lifecycle,
    #[serde(default)]
    pub detail: String,
    /// The cpuset the container had before placed first changed it.
    pub original: Option<Cpuset>,
    pub assigned: Option<Assigned>,
    pub migration: Option<Migration>,
    /// Where to put the container back after measuring it elsewhere for an on-demand
    /// prediction (set only while such a measurement runs).
    #[serde(default)]
    pub resume: Option<Assigned>,
    /// How its performance is observed; `None` leaves the model policy waiting.
    pub metric: Option<SourceSpec>,
    pub prediction: Option<PredictionRecord>,
    pub updated_unix_ms: i64,
    /// What to do when its cpuset is changed outside placed; `None` follows
    /// `policy.on_override`. Absent in state files from before reconciliation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_override: Option<OnOverride>,
    /// The last change of its cpuset made outside placed, while it matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overridden: Option<OverrideRecord>,
    /// The orchestrator's own labels (`Manage`, admission, NRI pod labels): returned by
    /// List and Watch, and filtered on.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Its last decision set against the watch measurement that followed it at the chosen
    /// placement (docs/models.md, "Live accuracy"); absent until one was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<placed_models::live::Outcome>,
}

impl ContainerRecord {
    /// A container just found, known by `id` (its cgroup path) and `name`, not yet
    /// measured, placed or watched: a plain cgroup unless the caller says otherwise
    /// (`ContainerRecord { runtime, ..ContainerRecord::new(..) }`). The one place a record
    /// is made whole, so that a field added later has one default.
    pub fn new(id: &str, name: &str, vcpus: usize, policy: Policy) -> Self {
        Self {
            id: id.to_owned(),
            name: name.to_owned(),
            runtime: "cgroup".to_owned(),
            runtime_id: id.to_owned(),
            vcpus,
            vcpus_source: VcpuSource::Request,
            policy,
            state: Lifecycle::Discovered,
            detail: String::new(),
            original: None,
            assigned: None,
            migration: None,
            resume: None,
            metric: None,
            prediction: None,
            updated_unix_ms: 0,
            on_override: None,
            overridden: None,
            labels: BTreeMap::new(),
            outcome: None,
        }
    }

    /// Whether an override holds the container where it is: the lifecycle does not move it
    /// until it is placed again.
    pub fn held(&self) -> bool {
        self.overridden.as_ref().is_some_and(|o| o.action.holds())
    }
}
