//! One managed container as the daemon holds it in memory: its persistent record, the
//! runtime's view of it, and what its task and the API's commands coordinate through (its
//! operation lock, its wake-up, its settings generation).

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{Notify, OwnedMutexGuard};
use tokio_util::sync::CancellationToken;

use crate::state::{Assigned, ContainerRecord, PredictionRecord};
use placed_core::reconcile::Action;
use placed_host::containers::Container;
use placed_host::observe::Reporter;

use super::error::DaemonError;
use super::inflight::InFlight;
use super::requests::PlaceOutcome;

/// One managed container.
#[derive(Debug)]
pub struct Entry {
    pub record: ContainerRecord,
    pub container: Container,
    /// One operation at a time per container: held by the lifecycle task while it measures
    /// or moves, and tried (never waited for) by API commands.
    pub op: Arc<tokio::sync::Mutex<()>>,
    /// What holds `op`, for the "busy" answer; every holder sets it on taking `op`, so
    /// it is current whenever `op` is held.
    pub doing: Option<(String, Instant)>,
    /// Whether `op` was last taken by an API command (not the lifecycle task): `Unmanage`
    /// stops the task's work but refuses to cut another caller's request short.
    pub by_api: bool,
    /// Held by a move's blocking work until it has really ended: a move outlives the future
    /// that started it when that is dropped (a cancelled request, a stopped task), and
    /// `Unmanage` must not forget a container whose cpuset is still being written.
    pub in_host: Arc<tokio::sync::Mutex<()>>,
    /// The pushing half of a pushed metric source, while its task observes.
    pub reporter: Option<Reporter>,
    /// Cancelled when the container vanishes or the daemon stops.
    pub cancel: CancellationToken,
    /// Wakes the lifecycle task: settings changed, or re-evaluate now.
    pub wake: Arc<Notify>,
    /// Bumped whenever the container's settings (vCPUs, policy, metric) change: a result
    /// computed from older settings (a prediction for the old v) is stale and discarded.
    pub settings: u64,
    /// When placed last wrote its placement back after outside changes (the write-back
    /// limit counts them); cleared when it is placed again.
    pub reasserts: Vec<tokio::time::Instant>,
    /// The `Place` in flight, which a request for the same joins.
    pub placing: Option<InFlight<PlaceOutcome>>,
    /// The on-demand prediction in flight, which concurrent `Predict`s join.
    pub predicting: Option<InFlight<PredictionRecord>>,
    /// A check of its cpuset is queued or running: a second is not started...
    pub check_pending: bool,
    /// ... but asked for meanwhile, it runs again when the first ends (the first may have
    /// read the cpuset before the write that asked).
    pub check_again: bool,
}

/// Held while an operation runs.
#[derive(Debug)]
pub struct OpGuard {
    _guard: OwnedMutexGuard<()>,
}

impl From<OwnedMutexGuard<()>> for OpGuard {
    fn from(guard: OwnedMutexGuard<()>) -> Self {
        Self { _guard: guard }
    }
}

impl Entry {
    /// A container newly under management, its task not yet started; `cancel` is a child
    /// of the daemon's token, so that shutdown stops it too.
    pub fn new(record: ContainerRecord, container: Container, cancel: CancellationToken) -> Self {
        Self {
            record,
            container,
            op: Arc::new(tokio::sync::Mutex::new(())),
            doing: None,
            by_api: false,
            in_host: Arc::new(tokio::sync::Mutex::new(())),
            reporter: None,
            cancel,
            wake: Arc::new(Notify::new()),
            settings: 0,
            reasserts: Vec::new(),
            placing: None,
            predicting: None,
            check_pending: false,
            check_again: false,
        }
    }

    /// Ends what an override holds, for a `Place` or a `Manage` that changes the settings:
    /// the record follows the host (a left or given-up override means the container is not
    /// where the record says), and the write-back count starts again.
    pub fn release_override(&mut self) {
        if let Some(o) = self.record.overridden.take() {
            if matches!(o.action, Action::Left | Action::GaveUp) {
                self.record.assigned = Some(Assigned {
                    placement: None,
                    units: Vec::new(),
                    cpus: o.found.cpus,
                    mems: o.found.mems,
                });
            }
        }
        self.reasserts.clear();
    }

    /// Stores a prediction computed from the settings of generation `since`. Refused (and
    /// `false`) when the settings changed meanwhile or the prediction is for another v: a
    /// stale result must never stand for the container's current settings.
    pub fn store_prediction(&mut self, prediction: PredictionRecord, since: u64) -> bool {
        if self.settings != since || prediction.vcpus != self.record.vcpus {
            return false;
        }
        self.record.prediction = Some(prediction);
        true
    }

    /// Claims the container for an operation without waiting: the API's way in.
    pub fn try_begin(&mut self, operation: &str) -> Result<OpGuard, DaemonError> {
        match self.op.clone().try_lock_owned() {
            Ok(guard) => {
                self.doing = Some((operation.to_owned(), Instant::now()));
                self.by_api = true;
                Ok(OpGuard { _guard: guard })
            }
            Err(_) => {
                let (what, since) = self
                    .doing
                    .clone()
                    .unwrap_or_else(|| ("an operation".into(), Instant::now()));
                Err(DaemonError::Busy {
                    container: self.record.name.clone(),
                    operation: what,
                    seconds: since.elapsed().as_secs(),
                })
            }
        }
    }
}

/// A prediction the daemon may act on: one for the container as it is now (one for another
/// v does not apply) from a model that passed the accuracy gate.
pub(crate) fn usable_prediction(rec: &ContainerRecord) -> Option<&PredictionRecord> {
    rec.prediction
        .as_ref()
        .filter(|p| p.vcpus == rec.vcpus && p.below_gate.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Lifecycle;
    use placed_core::policy::Policy;
    use placed_host::cgroup::CgroupPath;
    use placed_host::containers::Runtime;

    fn entry(vcpus: usize) -> Entry {
        let cgroup = CgroupPath::parse("/test/c1").unwrap();
        let record = ContainerRecord::new(
            &cgroup.to_string(),
            "c1",
            vcpus,
            Policy::Model { goal: 0.9 },
        );
        let container = Container {
            runtime: Runtime::Cgroup,
            id: cgroup.to_string(),
            name: None,
            pod: None,
            cgroup,
        };
        let mut e = Entry::new(record, container, CancellationToken::new());
        e.record.state = Lifecycle::Baseline;
        e
    }

    fn prediction(vcpus: usize) -> PredictionRecord {
        PredictionRecord {
            model_id: "m".into(),
            model_path: "/m.json".into(),
            provenance: placed_models::Provenance::Simulated,
            vcpus,
            baseline: "a".into(),
            probe: "b".into(),
            observations: Vec::new(),
            placements: Vec::new(),
            warnings: Vec::new(),
            unix_ms: 0,
            below_gate: None,
            novel: false,
            third: None,
            across_classes: false,
        }
    }

    #[test]
    fn a_prediction_from_older_settings_is_discarded() {
        let mut e = entry(4);
        let since = e.settings;
        // Manage changed v to 8 while the v = 4 evaluation ran.
        e.record.vcpus = 8;
        e.settings += 1;
        assert!(!e.store_prediction(prediction(4), since));
        assert_eq!(e.record.prediction, None);
        // A prediction for another v is refused even under the same generation.
        assert!(!e.store_prediction(prediction(4), e.settings));
        assert!(e.store_prediction(prediction(8), e.settings));
        assert_eq!(e.record.prediction.as_ref().map(|p| p.vcpus), Some(8));
    }

    #[test]
    fn a_prior_is_held_to_its_lower_bound_whatever_is_configured() {
        use placed_core::policy::GoalBound::{LowerBound, Point};
        let own = prediction(4);
        let prior = PredictionRecord {
            across_classes: true,
            ..prediction(4)
        };
        assert_eq!(PredictionRecord::goal_bound(Some(&own), Point), Point);
        assert_eq!(
            PredictionRecord::goal_bound(Some(&own), LowerBound),
            LowerBound
        );
        assert_eq!(
            PredictionRecord::goal_bound(Some(&prior), Point),
            LowerBound
        );
        assert_eq!(PredictionRecord::goal_bound(None, Point), Point);
    }

    #[test]
    fn a_prediction_from_a_model_below_the_gate_is_kept_but_never_acted_on() {
        let mut e = entry(4);
        let gated = PredictionRecord {
            below_gate: Some("cross-validated error 217.0% mean".into()),
            ..prediction(4)
        };
        assert!(e.store_prediction(gated, e.settings));
        assert!(
            e.record.prediction.is_some(),
            "shown by containers and predict"
        );
        assert_eq!(usable_prediction(&e.record), None, "never placed on");
        assert!(e.store_prediction(prediction(4), e.settings));
        assert!(usable_prediction(&e.record).is_some());
    }

    #[test]
    fn a_busy_container_says_what_holds_it_and_since_when() {
        let mut e = entry(4);
        let _held = e.try_begin("evaluating (baseline and probe)").unwrap();
        match e.try_begin("changing its settings") {
            Err(err @ DaemonError::Busy { .. }) => {
                let text = err.to_string();
                assert!(text.contains("evaluating (baseline and probe)"), "{text}");
                assert!(text.contains("since 0 s ago"), "{text}");
            }
            other => panic!("expected Busy, got {other:?}"),
        }
    }
}
