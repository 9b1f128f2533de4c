//! The live room: every model's outcomes over its last decisions on this host, and its live
//! gate (`placed_models::live`; docs/models.md, "Live accuracy"). A model whose intervals
//! miss what production measures significantly more often than its calibration promised
//! is stopped: containers on it are observed, not moved, until an operator enables it
//! again (`placectl model enable`) or a retrained model (a new id) replaces it.

use std::collections::BTreeMap;
use std::sync::Mutex;

use placed_models::Provenance;
use placed_models::live::{Judgement, LiveGate, LiveSummary, LiveWindow, Outcome};

use crate::state::StoppedModel;

use super::error::DaemonError;

/// A time in ms since the epoch as RFC 3339, to the second.
pub(crate) fn rfc3339(unix_ms: i64) -> String {
    let at = std::time::UNIX_EPOCH
        + std::time::Duration::from_millis(u64::try_from(unix_ms).unwrap_or(0));
    humantime_serde::re::humantime::format_rfc3339_seconds(at).to_string()
}

/// Outcomes kept per model: the gate's window and then some, for the figures.
const KEPT: usize = 50;

/// One model's live figures.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelLive {
    pub model_id: String,
    pub provenance: Provenance,
    pub summary: LiveSummary,
    pub judgement: Judgement,
    /// Set while the gate holds the model stopped.
    pub stopped: Option<StoppedModel>,
}

#[derive(Debug)]
struct Entry {
    provenance: Provenance,
    window: LiveWindow,
    stopped: Option<StoppedModel>,
}

#[derive(Debug)]
pub(crate) struct Live {
    gate: LiveGate,
    models: Mutex<BTreeMap<String, Entry>>,
}

/// What recording an outcome did to its model.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Recorded {
    /// Its gate holds (or has too few decisions to judge).
    Judged(Judgement),
    /// This outcome tripped the gate: the model is stopped from now on.
    Tripped(StoppedModel),
    /// The model was already stopped.
    AlreadyStopped,
}

impl Live {
    /// The room, judging with `gate`.
    pub fn new(gate: LiveGate) -> Self {
        Self {
            gate,
            models: Mutex::new(BTreeMap::new()),
        }
    }

    /// The models the state file says were stopped, stopped again.
    pub fn restore(&self, stopped: Vec<StoppedModel>) {
        let mut models = self.lock();
        for s in stopped {
            models.insert(
                s.model_id.clone(),
                Entry {
                    provenance: s.provenance,
                    window: LiveWindow::new(KEPT),
                    stopped: Some(s),
                },
            );
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Entry>> {
        // Each change is one push or one field set: a poisoned lock is still consistent.
        self.models.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a decision's outcome to its model's window and judges the model again.
    pub fn record(&self, outcome: Outcome) -> (Recorded, ModelLive) {
        let mut models = self.lock();
        let id = outcome.model_id.clone();
        let entry = models.entry(id.clone()).or_insert_with(|| Entry {
            provenance: outcome.provenance,
            window: LiveWindow::new(KEPT),
            stopped: None,
        });
        let unix_ms = outcome.unix_ms;
        entry.window.push(outcome);
        let judgement = self.gate.judge(&entry.window);
        let recorded = match (&entry.stopped, judgement.tripped()) {
            (Some(_), _) => Recorded::AlreadyStopped,
            (None, true) => {
                let stopped = StoppedModel {
                    model_id: id.clone(),
                    provenance: entry.provenance,
                    since_unix_ms: unix_ms,
                    reason: judgement.to_string(),
                };
                entry.stopped = Some(stopped.clone());
                Recorded::Tripped(stopped)
            }
            (None, false) => Recorded::Judged(judgement.clone()),
        };
        let view = ModelLive {
            model_id: id,
            provenance: entry.provenance,
            summary: entry.window.summary(),
            judgement,
            stopped: entry.stopped.clone(),
        };
        (recorded, view)
    }

    /// `Err` naming why when the model's gate stopped it.
    pub fn check(&self, model_id: &str) -> Result<(), DaemonError> {
        match self.stopped(model_id) {
            None => Ok(()),
            Some(s) => Err(DaemonError::ModelStopped {
                model_id: s.model_id,
                since: rfc3339(s.since_unix_ms),
                reason: s.reason,
            }),
        }
    }

    /// Why the model may not move containers, if its gate stopped it.
    pub fn stopped(&self, model_id: &str) -> Option<StoppedModel> {
        self.lock().get(model_id).and_then(|e| e.stopped.clone())
    }

    /// An operator's word that the model may move containers again: its stop is lifted and
    /// its window starts afresh (the outcomes that tripped it would trip it again at the
    /// next decision). `None` when the model was not stopped.
    pub fn enable(&self, model_id: &str) -> Option<StoppedModel> {
        let mut models = self.lock();
        let entry = models.get_mut(model_id)?;
        let was = entry.stopped.take()?;
        entry.window.clear();
        Some(was)
    }

    /// Every model with outcomes or a stop, by id.
    pub fn all(&self) -> Vec<ModelLive> {
        self.lock()
            .iter()
            .map(|(id, e)| ModelLive {
                model_id: id.clone(),
                provenance: e.provenance,
                summary: e.window.summary(),
                judgement: self.gate.judge(&e.window),
                stopped: e.stopped.clone(),
            })
            .collect()
    }

    /// The model's figures, if it has any.
    pub fn of(&self, model_id: &str) -> Option<ModelLive> {
        self.all().into_iter().find(|m| m.model_id == model_id)
    }

    /// The stopped models, for the state file.
    pub fn stopped_all(&self) -> Vec<StoppedModel> {
        self.lock()
            .values()
            .filter_map(|e| e.stopped.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use placed_models::interval::Interval;

    fn outcome(model: &str, realized: f64) -> Outcome {
        Outcome {
            model_id: model.into(),
            provenance: Provenance::Simulated,
            placement: "p2".into(),
            predicted: 1.0,
            interval: Some(Interval {
                low: 0.9,
                high: 1.1,
                level: 0.9,
            }),
            measured: false,
            realized,
            goal: Some(0.9),
            unix_ms: 1_000,
        }
    }

    #[test]
    fn a_model_missing_every_interval_is_stopped_once_and_enabled_afresh() {
        let live = Live::new(LiveGate::default());
        let mut tripped = 0;
        for _ in 0..15 {
            match live.record(outcome("bad", 1.5)).0 {
                Recorded::Tripped(s) => {
                    tripped += 1;
                    assert!(s.reason.contains("10 of the last 10"), "{}", s.reason);
                }
                Recorded::Judged(j) => assert!(!j.tripped()),
                Recorded::AlreadyStopped => {}
            }
            live.record(outcome("good", 1.0));
        }
        assert_eq!(tripped, 1);
        assert!(live.stopped("bad").is_some());
        assert!(live.stopped("good").is_none());
        assert_eq!(live.stopped_all().len(), 1);
        assert!(live.enable("bad").is_some());
        assert!(live.stopped("bad").is_none());
        assert_eq!(live.of("bad").map(|m| m.summary.decisions), Some(0));
        assert!(
            live.enable("good").is_none(),
            "not stopped: nothing to enable"
        );
        // A stop read back from the state file holds after a restart.
        let restarted = Live::new(LiveGate::default());
        restarted.restore(vec![StoppedModel {
            model_id: "bad".into(),
            provenance: Provenance::Real,
            since_unix_ms: 5,
            reason: "r".into(),
        }]);
        assert!(restarted.stopped("bad").is_some());
    }
}
