//! A decision checked against what happened: the watch measurement after a decision, at
//! the chosen placement, set against the predicted cell (docs/models.md, "Live
//! accuracy"). The outcome is kept on the container's record, sent as an event, counted
//! in its model's live figures, and judged by the live gate, which may stop the model.

use placed_models::live::Outcome;

use crate::state::Lifecycle;

use super::events::{Event, EventKind, now_ms};
use super::handle::Handle;
use super::live::{Recorded, rfc3339};

impl Handle {
    /// Records `outcome` for the container and its model; a model the outcome proves
    /// wrong is stopped, said in the log, an event and status, and kept in the state file.
    pub async fn record_outcome(&self, outcome: Outcome) {
        let core = &self.core;
        let (recorded, live) = core.live.record(outcome.clone());
        core.telemetry.metrics.live.set(&live);
        let inside = match outcome.inside() {
            Some(true) => "inside its interval",
            Some(false) => "outside its interval",
            None if outcome.measured => "a measured cell",
            None => "no interval",
        };
        let goal = match outcome.goal_kept() {
            Some(true) => ", goal kept",
            Some(false) => ", goal missed",
            None => "",
        };
        let message = format!(
            "decision checked: {} predicted {:.3} x baseline, measured {:.3} ({:.1}% off, {inside}{goal}); model {} live: {}",
            outcome.placement,
            outcome.predicted,
            outcome.realized,
            outcome.error(),
            outcome.model_id,
            live.judgement
        );
        let labels = match self.with(|e| {
            e.record.outcome = Some(outcome.clone());
            e.record.labels.clone()
        }) {
            Ok(labels) => labels,
            Err(_) => return,
        };
        tracing::info!(container = %self.id, "{message}");
        core.telemetry.send(Event {
            unix_ms: outcome.unix_ms,
            container: self.id.clone(),
            kind: EventKind::Outcome,
            state: Lifecycle::Watched,
            placement: Some(outcome.placement.clone()),
            message,
            cpuset_override: None,
            outcome: Some(outcome),
            labels: labels.clone(),
        });
        if let Recorded::Tripped(stopped) = recorded {
            let message = format!(
                "model {} stopped by the live gate since {}: {}; containers on it are observed, not moved, until it is retrained or enabled again (placectl model enable {})",
                stopped.model_id,
                rfc3339(stopped.since_unix_ms),
                stopped.reason,
                stopped.model_id
            );
            tracing::warn!("{message}");
            core.telemetry.send(Event {
                unix_ms: now_ms(),
                container: self.id.clone(),
                kind: EventKind::ModelStopped,
                state: Lifecycle::Watched,
                placement: None,
                message,
                cpuset_override: None,
                outcome: None,
                labels,
            });
        }
        if let Err(e) = core.persist().await {
            tracing::error!(error = %e.line(), "cannot write the state file");
        }
    }
}
