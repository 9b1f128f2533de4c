//! One task per container: the lifecycle's state machine.
//!
//! ```text
//! discovered --(model policy)--> baseline -> probe -> predicted -> placed -> watched
//!      |                                                                     |
//!      +--(other policies)--> placed -> watched        drift: re-evaluate <--+
//!      +--(no model, no metric, no room)--> waiting (retried when woken or later)
//! ```
//!
//! Every step that changes the container is recorded in the state file before it starts
//! (a migration names where it comes from) and after it ends, and every move goes through
//! `Host::apply`, which verifies through /proc and rolls back on failure.

use std::time::Duration;

use crate::state::{ContainerRecord, Lifecycle};
use placed_core::placement::PlacementSet;
use placed_core::policy::Policy;
use placed_host::observe::SourceSpec;
use placed_models::live::Outcome;

use super::decide::Why;
use super::drift;
use super::entry::usable_prediction;
use super::error::DaemonError;
use super::events::now_ms;
use super::handle::Handle;
use super::measure::MetricSlot;
use super::moving::Journal;

/// What the task does after a step.
pub(crate) enum Next {
    /// Run the next step now.
    Again,
    /// Wait this long (or until woken).
    Sleep(Duration),
    /// Wait until woken (settings changed, or re-evaluation asked).
    Idle,
}

/// Starts the container's lifecycle task.
pub(crate) fn spawn(handle: Handle) {
    let tracker = handle.core.tasks.clone();
    tracker.spawn(async move { run(handle).await });
}

/// The retry pause after the `failures`-th failure in a row: the resync interval, doubling
/// up to ten times that, so that a container that cannot be measured is not moved between
/// placements every 30 s.
pub(crate) fn backoff(base: Duration, failures: u32) -> Duration {
    base.saturating_mul(1 << failures.min(3)).min(base * 10)
}

async fn run(handle: Handle) {
    let Ok((cancel, wake)) = handle.with(|e| (e.cancel.clone(), e.wake.clone())) else {
        return;
    };
    let mut source = MetricSlot::default();
    let mut failures: u32 = 0;
    loop {
        if cancel.is_cancelled() {
            return;
        }
        let next = tokio::select! {
            _ = cancel.cancelled() => return,
            next = step(&handle, &mut source) => next,
        };
        let pause = match next {
            Ok(Next::Again) => continue,
            Ok(Next::Sleep(d)) => {
                failures = 0;
                Some(d)
            }
            Ok(Next::Idle) => {
                failures = 0;
                None
            }
            Err(_) if handle.vanished() => {
                // The container stopped under this step (its cgroup is gone): forget it
                // now, with one event saying so, instead of recording an error for it and
                // retrying until the next resync notices.
                handle.core.forget(&handle.id).await;
                return;
            }
            Err(e) => {
                let retry = backoff(
                    handle.core.settings.config().containers.resync_interval,
                    failures,
                );
                failures = failures.saturating_add(1);
                handle.fail(&e);
                Some(retry)
            }
        };
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = wake.notified() => {}
            _ = async {
                match pause {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            } => {}
        }
    }
}

async fn step(handle: &Handle, source: &mut MetricSlot) -> Result<Next, DaemonError> {
    let (rec, generation) = handle.settings()?;
    let core = &handle.core;
    // A pushed metric must accept samples at any time, not only while measuring.
    if matches!(rec.metric, Some(SourceSpec::Pushed { .. })) {
        source.ensure(handle, &rec).await?;
    }
    // Its cpuset was adopted from, or lost to, another controller: not moved until placed
    // again (docs/daemon.md, "Placements changed outside placed").
    if rec.held() {
        return Ok(Next::Idle);
    }
    match rec.state {
        Lifecycle::Watched if matches!(rec.policy, Policy::Aggressive) => {
            // Woken because the units nobody holds changed: share what is free now.
            place_by_own_policy(handle, &rec, None, generation).await
        }
        Lifecycle::Watched => {
            if !matches!(rec.policy, Policy::Model { .. }) || usable_prediction(&rec).is_none() {
                return Ok(Next::Idle);
            }
            watch(handle, &rec, generation, source).await
        }
        Lifecycle::Waiting | Lifecycle::Failed if !rec.detail.is_empty() => {
            // Woken or timed out: try again from the start (quietly: the retry's own
            // outcome is what gets reported).
            handle.with(|e| {
                e.record.state = Lifecycle::Discovered;
                e.record.detail.clear();
            })?;
            Ok(Next::Again)
        }
        _ => match &rec.policy {
            Policy::Observe => {
                handle.set_state(
                    Lifecycle::Watched,
                    "observe policy: measured and predicted on request, never moved",
                );
                Ok(Next::Idle)
            }
            Policy::Model { goal } => {
                let guard = handle.begin("evaluating (baseline and probe)").await?;
                // Settings changed while this task waited for the lock: start from them.
                if !handle.unchanged_since(generation) {
                    return Ok(Next::Again);
                }
                let set = core.node.placements(rec.vcpus)?;
                // A decision not yet checked is superseded by the one this makes.
                source.awaiting_outcome = None;
                let prediction = match handle
                    .evaluate(&set, source, generation, Journal::EachMove)
                    .await
                {
                    Ok(Some(p)) => p,
                    Ok(None) => return Ok(Next::Again),
                    Err(stopped @ DaemonError::ModelStopped { .. }) => {
                        return fall_back(handle, &set, stopped).await;
                    }
                    Err(e) => return Err(e),
                };
                let Some(prediction) = handle
                    .third_measurement(&set, *goal, prediction, source, generation)
                    .await?
                else {
                    return Ok(Next::Again);
                };
                // A model the live gate stopped (meanwhile, by another container's
                // outcome) decides nothing: the container stays where it was measured.
                if let Err(stopped) = core.live.check(&prediction.model_id) {
                    if core.settings.fallback_policy() != Policy::Observe {
                        return fall_back(handle, &set, stopped).await;
                    }
                    handle.set_state(Lifecycle::Watched, &format!("left in place: {stopped}"));
                    return Ok(Next::Sleep(core.settings.config().observe.watch_interval));
                }
                // The container sits in the probe placement (or the third measurement's):
                // it moves on only if that pays.
                handle
                    .apply_policy(&set, &rec.policy, Some(&prediction), None, Why::Automatic)
                    .await?;
                // Moved or left in place, the next watch measurement there checks it.
                source.awaiting_outcome = Some(*goal);
                drop(guard);
                Ok(Next::Sleep(core.settings.config().observe.watch_interval))
            }
            _ => {
                let prediction = usable_prediction(&rec).cloned();
                place_by_own_policy(handle, &rec, prediction.as_ref(), generation).await
            }
        },
    }
}

/// A model-policy container whose model the live gate stopped. Under `policy.fallback =
/// "observe"` that is an error the container waits out, moved nowhere; a fallback that
/// needs no model places it meanwhile. Either way it is evaluated again later, so that the
/// model takes over once an operator enables it or a retrained one replaces it.
async fn fall_back(
    handle: &Handle,
    set: &PlacementSet,
    stopped: DaemonError,
) -> Result<Next, DaemonError> {
    let settings = &handle.core.settings;
    let fallback = settings.fallback_policy();
    let DaemonError::ModelStopped {
        model_id, since, ..
    } = &stopped
    else {
        return Err(stopped);
    };
    if fallback == Policy::Observe {
        return Err(stopped);
    }
    handle
        .apply_policy(set, &fallback, None, None, Why::Automatic)
        .await?;
    handle.set_state(
        Lifecycle::Waiting,
        &format!(
            "model {model_id} is stopped by the live gate since {since}: placed by the fallback policy {} meanwhile (policy.fallback); `placectl model enable {model_id}` or a retrained model ends it",
            fallback.name()
        ),
    );
    Ok(Next::Sleep(backoff(
        settings.config().containers.resync_interval,
        u32::MAX,
    )))
}

/// Takes the container's operation lock and applies its own policy, moving it only when
/// that pays; starts over instead when its settings changed while it waited for the lock.
async fn place_by_own_policy(
    handle: &Handle,
    rec: &ContainerRecord,
    prediction: Option<&crate::state::PredictionRecord>,
    generation: u64,
) -> Result<Next, DaemonError> {
    let _guard = handle.begin("placing").await?;
    if !handle.unchanged_since(generation) {
        return Ok(Next::Again);
    }
    let set = handle.core.node.placements(rec.vcpus)?;
    handle
        .apply_policy(&set, &rec.policy, prediction, None, Why::Automatic)
        .await?;
    Ok(Next::Idle)
}

/// A watched container under the model policy: measured in place; when its observed
/// interval misses the prediction's for `policy.drift_windows` measurements in a row, past
/// the cool-down, it is evaluated again ([`drift`]).
async fn watch(
    handle: &Handle,
    rec: &ContainerRecord,
    generation: u64,
    source: &mut MetricSlot,
) -> Result<Next, DaemonError> {
    let interval = handle.core.settings.config().observe.watch_interval;
    let Some(prediction) = usable_prediction(rec) else {
        return Ok(Next::Idle);
    };
    let Some(placement) = rec.assigned.as_ref().and_then(|a| a.placement.clone()) else {
        return Ok(Next::Idle);
    };
    let Some(cell) = prediction.predicted(&placement) else {
        return Ok(Next::Sleep(interval));
    };
    let (relative, range) = (cell.relative, cell.relative_range());
    let guard = handle.begin("watching").await?;
    if !handle.unchanged_since(generation) {
        return Ok(Next::Again);
    }
    let m = match source.measure_here(handle, rec).await {
        Ok(m) => m,
        Err(e) => {
            tracing::info!(container = %rec.name, error = %e.line(), "watch measurement skipped");
            return Ok(Next::Sleep(interval));
        }
    };
    // Where the decision left it: the run's realized cell (kept once per run).
    if let Ok(set) = handle.core.node.placements(rec.vcpus) {
        handle.keep_measurement(&set, rec, prediction.unix_ms, &placement, &m);
    }
    let Some(baseline) = prediction.baseline_interval() else {
        return Ok(Next::Sleep(interval));
    };
    if baseline.1 > 0.0 {
        let observed = m.estimate.value / baseline.1;
        let metrics = &handle.core.telemetry.metrics;
        metrics.per_container.observed(&rec.id, observed);
        if let Some(goal) = source.awaiting_outcome.take() {
            handle
                .record_outcome(Outcome {
                    model_id: prediction.model_id.clone(),
                    provenance: prediction.provenance,
                    placement: placement.clone(),
                    predicted: cell.relative,
                    interval: cell.interval,
                    measured: cell.measured,
                    realized: observed,
                    goal: Some(goal),
                    unix_ms: now_ms(),
                })
                .await;
        }
    }
    let config = handle.core.settings.config();
    let policy = &config.policy;
    let predicted = drift::predicted_interval(baseline, relative, range, policy.drift);
    let observed = (m.estimate.lo, m.estimate.hi);
    let rule = drift::Rule {
        windows: policy.drift_windows,
        cooldown: policy.cooldown,
    };
    let since = Duration::from_millis(
        u64::try_from(now_ms().saturating_sub(prediction.unix_ms)).unwrap_or(0),
    );
    let off = !drift::overlap(observed, predicted);
    let verdict = rule.judge(off, &mut source.drift_count, since);
    let seen = format!(
        "observed {:.3} [{:.3}, {:.3}] against {:.3}-{:.3} predicted",
        m.estimate.value, observed.0, observed.1, predicted.0, predicted.1
    );
    match verdict {
        drift::Verdict::Holds => {}
        drift::Verdict::Off { count } => {
            tracing::info!(container = %rec.name, count, windows = rule.windows, "{seen}: off its prediction");
        }
        drift::Verdict::CoolingDown { count, left } => {
            tracing::info!(container = %rec.name, count, left_s = left.as_secs(), "{seen}: off its prediction, in the cool-down after its last evaluation");
        }
        drift::Verdict::Reevaluate { count } => {
            handle.set_state(
                Lifecycle::Discovered,
                &format!("{seen} in {count} watch measurements in a row: evaluating again"),
            );
            source.drift_count = 0;
            handle.with(|e| e.record.prediction = None)?;
            drop(guard);
            return Ok(Next::Again);
        }
    }
    Ok(Next::Sleep(interval))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_back_off_to_ten_times_the_resync_interval() {
        let base = Duration::from_secs(30);
        let pauses: Vec<u64> = (0..6).map(|n| backoff(base, n).as_secs()).collect();
        assert_eq!(pauses, [30, 60, 120, 240, 240, 240]);
        let short = Duration::from_secs(1);
        assert_eq!(backoff(short, 10), Duration::from_secs(8));
    }
}
