//! The containers the daemon manages, in memory, with their persistent records.
//!
//! Held behind a std mutex taken briefly by every command and task (never across an
//! await or a file write): the state file is written from snapshots (see `persist`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{Notify, OwnedMutexGuard};
use tokio_util::sync::CancellationToken;

use crate::state::{ContainerRecord, Lifecycle, PredictionRecord};
use placed_host::containers::Container;
use placed_host::observe::Reporter;

use super::error::DaemonError;

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
    /// A check of its cpuset is queued or running: a second is not started.
    pub check_pending: bool,
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

#[derive(Debug, Default)]
pub struct Registry {
    pub entries: BTreeMap<String, Entry>,
}

impl Registry {
    /// The key of the container a reference names: its id (cgroup path), runtime id,
    /// name, or a unique prefix of the runtime id (12 hex digits as `docker ps` shows).
    pub fn key_of(&self, reference: &str) -> Option<String> {
        if self.entries.contains_key(reference) {
            return Some(reference.to_owned());
        }
        let slashed = format!("/{}", reference.trim_start_matches('/'));
        if self.entries.contains_key(&slashed) {
            return Some(slashed);
        }
        let exact: Vec<&String> = self
            .entries
            .iter()
            .filter(|(_, e)| e.record.runtime_id == reference || e.record.name == reference)
            .map(|(k, _)| k)
            .collect();
        if let [one] = exact.as_slice() {
            return Some((*one).clone());
        }
        if reference.len() >= 6 {
            let prefixed: Vec<&String> = self
                .entries
                .iter()
                .filter(|(_, e)| e.record.runtime_id.starts_with(reference))
                .map(|(k, _)| k)
                .collect();
            if let [one] = prefixed.as_slice() {
                return Some((*one).clone());
            }
        }
        None
    }

    /// Counts per lifecycle state, every state present.
    pub fn counts(&self) -> Vec<(Lifecycle, usize)> {
        Lifecycle::ALL
            .iter()
            .map(|&s| {
                (
                    s,
                    self.entries
                        .values()
                        .filter(|e| e.record.state == s)
                        .count(),
                )
            })
            .collect()
    }

    /// Units held by every container but `except`.
    pub fn taken_units(&self, except: &str) -> Vec<usize> {
        let mut taken: Vec<usize> = self
            .entries
            .iter()
            .filter(|(k, _)| k.as_str() != except)
            .flat_map(|(_, e)| {
                let mut u: Vec<usize> = e
                    .record
                    .assigned
                    .iter()
                    .flat_map(|a| a.units.iter().copied())
                    .collect();
                // A migration in flight holds both ends.
                if let Some(m) = &e.record.migration {
                    u.extend(m.to.units.iter().copied());
                }
                u
            })
            .collect();
        taken.sort_unstable();
        taken.dedup();
        taken
    }
}

impl Entry {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::VcpuSource;
    use placed_core::policy::Policy;
    use placed_host::cgroup::CgroupPath;
    use placed_host::containers::Runtime;

    fn entry(vcpus: usize) -> Entry {
        let cgroup = CgroupPath::parse("/test/c1").unwrap();
        Entry {
            record: ContainerRecord {
                id: cgroup.to_string(),
                name: "c1".into(),
                runtime: "cgroup".into(),
                runtime_id: cgroup.to_string(),
                vcpus,
                vcpus_source: VcpuSource::Request,
                policy: Policy::Model { goal: 0.9 },
                state: Lifecycle::Baseline,
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
            },
            container: Container {
                runtime: Runtime::Cgroup,
                id: cgroup.to_string(),
                name: None,
                pod: None,
                cgroup,
            },
            op: Arc::new(tokio::sync::Mutex::new(())),
            doing: None,
            by_api: false,
            in_host: Arc::new(tokio::sync::Mutex::new(())),
            reporter: None,
            cancel: CancellationToken::new(),
            wake: Arc::new(Notify::new()),
            settings: 0,
            reasserts: Vec::new(),
            check_pending: false,
        }
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
    fn a_prediction_from_a_model_below_the_gate_is_kept_but_never_acted_on() {
        use crate::lifecycle::evaluate::usable_prediction;
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
