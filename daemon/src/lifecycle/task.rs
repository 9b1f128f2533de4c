//! One task per container: the lifecycle of DESIGN.md §3.7, built from two operations,
//! measuring a container where it is and moving it.
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

use std::sync::Arc;
use std::time::{Duration, Instant};

use placed_models::Observation;

use crate::state::{
    Assigned, ContainerRecord, Cpuset, Lifecycle, Migration, ObservationRecord, PredictedRecord,
    PredictionRecord, VcpuSource,
};
use crate::telemetry::{Outcome, OutcomeLabel};
use placed_core::placement::{PlacementSet, instantiate};
use placed_core::policy::{self, Policy, PolicyError, Predicted, Situation, Target};
use placed_host::containers::Container;
use placed_host::migrate::Mode;
use placed_host::observe::{
    AnySource, Measurement, ObserveError, SourceSpec, Target as NoiseTarget, compare, measure,
};

use super::error::DaemonError;
use super::events::{Event, EventKind, now_ms};
use super::registry::OpGuard;
use super::{Inner, ManageRequest, PlaceOutcome, PlaceTarget};

/// What the task does after a step.
enum Next {
    /// Run the next step now.
    Again,
    /// Wait this long (or until woken).
    Sleep(Duration),
    /// Wait until woken (settings changed, or re-evaluation asked).
    Idle,
}

/// What [`register`] found.
#[derive(Debug)]
pub(super) enum Registered {
    /// Taken under management now, with the settings asked for.
    New(String),
    /// Already managed (found by discovery meanwhile): its settings are unchanged.
    Known(String),
}

/// Registers a newly found container with the settings `Manage` asked for (or the defaults)
/// and starts its task, so that no task ever runs on settings about to change.
pub(super) async fn register(
    inner: &Arc<Inner>,
    container: Container,
    settings: Option<&ManageRequest>,
) -> Result<Registered, DaemonError> {
    let id = container.cgroup.to_string();
    let (vcpus, vcpus_source) = match settings.and_then(|s| s.vcpus) {
        Some(v) => (v, VcpuSource::Request),
        None => match inner.host.vcpus_from_quota(&container.cgroup) {
            Some(v) => (v.min(inner.machine.pus.usable.len()), VcpuSource::Quota),
            None => {
                let cpus = inner
                    .host
                    .cgroups()
                    .cpuset(&container.cgroup)
                    .map(|c| c.effective_cpus.len())
                    .unwrap_or(0);
                (cpus.max(1), VcpuSource::Cpuset)
            }
        },
    };
    let policy = match settings.and_then(|s| s.policy.clone()) {
        Some(p) => p,
        None => Policy::parse(&inner.config.policy.default, inner.config.policy.goal)
            .unwrap_or(Policy::Observe),
    };
    let metric = match settings.and_then(|s| s.metric.clone()) {
        Some(m) => Some(m),
        None => inner.pmu.then_some(SourceSpec::Perf { ipc: false }),
    };
    // A plain cgroup is known by its last component, as a container by its name.
    let name = match (&container.runtime, &container.name) {
        (placed_host::containers::Runtime::Cgroup, None) => container.cgroup.name().to_owned(),
        _ => container.label(),
    };
    let record = ContainerRecord {
        id: id.clone(),
        name,
        runtime: container.runtime.to_string(),
        runtime_id: container.id.clone(),
        vcpus,
        vcpus_source,
        policy,
        state: Lifecycle::Discovered,
        detail: String::new(),
        original: None,
        assigned: None,
        migration: None,
        resume: None,
        metric,
        prediction: None,
        updated_unix_ms: now_ms(),
    };
    {
        let mut reg = inner.registry();
        if reg.entries.contains_key(&id) {
            return Ok(Registered::Known(id));
        }
        let entry = inner.new_entry(record, container);
        reg.entries.insert(id.clone(), entry);
    }
    inner.events.send(Event {
        unix_ms: now_ms(),
        container: id.clone(),
        kind: EventKind::Discovered,
        state: Lifecycle::Discovered,
        placement: None,
        message: format!("discovered, {vcpus} vCPUs ({vcpus_source:?})"),
    });
    inner.update_gauges();
    inner.persist().await?;
    spawn(inner, id.clone());
    Ok(Registered::New(id))
}

pub(super) fn spawn(inner: &Arc<Inner>, id: String) {
    let task_inner = inner.clone();
    inner.tasks.spawn(async move { run(task_inner, id).await });
}

async fn run(inner: Arc<Inner>, id: String) {
    let Some((cancel, wake)) = inner.with_entry(&id, |e| (e.cancel.clone(), e.wake.clone())) else {
        return;
    };
    let mut source: Option<(SourceSpec, AnySource)> = None;
    // Failures retry after the resync interval, doubling up to ten times that: a container
    // that cannot be measured is not moved between placements every 30 s.
    let mut failures: u32 = 0;
    loop {
        if cancel.is_cancelled() {
            return;
        }
        let next = tokio::select! {
            _ = cancel.cancelled() => return,
            next = step(&inner, &id, &mut source) => next,
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
            Err(e) => {
                let base = inner.config.containers.resync_interval;
                let retry = base.saturating_mul(1 << failures.min(3)).min(base * 10);
                failures = failures.saturating_add(1);
                fail(&inner, &id, &e);
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

/// Records an error on the container: waiting when it may clear by itself, failed when
/// someone has to act.
fn fail(inner: &Inner, id: &str, e: &DaemonError) {
    let state = match e {
        DaemonError::Precondition(_)
        | DaemonError::NoModel { .. }
        | DaemonError::Unavailable(_) => Lifecycle::Waiting,
        _ => Lifecycle::Failed,
    };
    inner.metrics.error("lifecycle");
    // One event for a failure, not a state change and an error saying the same.
    inner.with_entry(id, |entry| {
        entry.record.state = state;
        entry.record.detail = e.to_string();
        entry.record.updated_unix_ms = now_ms();
    });
    inner.update_gauges();
    inner.events.send(Event {
        unix_ms: now_ms(),
        container: id.to_owned(),
        kind: EventKind::Error,
        state,
        placement: None,
        message: e.to_string(),
    });
}

pub(super) fn set_state(inner: &Inner, id: &str, state: Lifecycle, detail: &str) {
    let changed = inner.with_entry(id, |e| {
        let changed = e.record.state != state || e.record.detail != detail;
        e.record.state = state;
        e.record.detail = detail.to_owned();
        e.record.updated_unix_ms = now_ms();
        (
            changed,
            e.record.assigned.as_ref().and_then(|a| a.placement.clone()),
        )
    });
    if let Some((true, placement)) = changed {
        inner.update_gauges();
        inner.events.send(Event {
            unix_ms: now_ms(),
            container: id.to_owned(),
            kind: EventKind::State,
            state,
            placement,
            message: if detail.is_empty() {
                state.name().to_owned()
            } else {
                detail.to_owned()
            },
        });
    }
}

fn record(inner: &Inner, id: &str) -> Result<ContainerRecord, DaemonError> {
    inner
        .with_entry(id, |e| e.record.clone())
        .ok_or_else(|| DaemonError::NotFound(format!("container {id} is no longer managed")))
}

/// Takes the container's operation lock, waiting for an API command to finish.
async fn begin(inner: &Inner, id: &str, what: &str) -> Result<OpGuard, DaemonError> {
    let op = inner
        .with_entry(id, |e| e.op.clone())
        .ok_or_else(|| DaemonError::NotFound(format!("container {id} is no longer managed")))?;
    let guard = op.lock_owned().await;
    inner.with_entry(id, |e| e.doing = Some((what.to_owned(), Instant::now())));
    Ok(OpGuard::from(guard))
}

/// A prediction that applies to the container as it is now (one for another v does not).
pub(super) fn usable_prediction(rec: &ContainerRecord) -> Option<&PredictionRecord> {
    rec.prediction.as_ref().filter(|p| p.vcpus == rec.vcpus)
}

/// Whether the container's settings are still those of generation `since`.
fn unchanged_since(inner: &Inner, id: &str, since: u64) -> bool {
    inner.with_entry(id, |e| e.settings) == Some(since)
}

async fn step(
    inner: &Arc<Inner>,
    id: &str,
    source: &mut Option<(SourceSpec, AnySource)>,
) -> Result<Next, DaemonError> {
    let (rec, generation) = inner
        .with_entry(id, |e| (e.record.clone(), e.settings))
        .ok_or_else(|| DaemonError::NotFound(format!("container {id} is no longer managed")))?;
    let set = inner.placements(rec.vcpus)?;
    // A pushed metric must accept samples at any time, not only while measuring.
    if matches!(rec.metric, Some(SourceSpec::Pushed { .. })) {
        ensure_source(inner, id, &rec, source).await?;
    }
    match rec.state {
        Lifecycle::Watched if matches!(rec.policy, Policy::Aggressive) => {
            // Woken because the units nobody holds changed: share what is free now.
            place_by_own_policy(inner, id, &set, &rec.policy, None, generation).await
        }
        Lifecycle::Watched => {
            if !matches!(rec.policy, Policy::Model { .. }) || usable_prediction(&rec).is_none() {
                return Ok(Next::Idle);
            }
            watch(inner, id, &rec, generation, source).await
        }
        Lifecycle::Waiting | Lifecycle::Failed if !rec.detail.is_empty() => {
            // Woken or timed out: try again from the start (quietly: the retry's own
            // outcome is what gets reported).
            inner.with_entry(id, |e| {
                e.record.state = Lifecycle::Discovered;
                e.record.detail.clear();
            });
            Ok(Next::Again)
        }
        _ => match &rec.policy {
            Policy::Observe => {
                set_state(
                    inner,
                    id,
                    Lifecycle::Watched,
                    "observe policy: measured and predicted on request, never moved",
                );
                Ok(Next::Idle)
            }
            Policy::Model { .. } => {
                let guard = begin(inner, id, "evaluating (baseline and probe)").await?;
                // Settings changed while this task waited for the lock: start from them.
                if !unchanged_since(inner, id, generation) {
                    return Ok(Next::Again);
                }
                let Some(prediction) =
                    evaluate(inner, id, &set, source, generation, &guard).await?
                else {
                    return Ok(Next::Again);
                };
                // The container sits in the probe placement: it moves on only if that pays.
                apply_policy(
                    inner,
                    id,
                    &set,
                    &rec.policy,
                    Some(&prediction),
                    None,
                    Why::Automatic,
                    &guard,
                )
                .await?;
                drop(guard);
                Ok(Next::Sleep(inner.config.observe.watch_interval))
            }
            _ => {
                let prediction = usable_prediction(&rec);
                place_by_own_policy(inner, id, &set, &rec.policy, prediction, generation).await
            }
        },
    }
}

/// Takes the container's operation lock and applies its own policy, moving it only when
/// that pays; starts over instead when its settings changed while it waited for the lock.
async fn place_by_own_policy(
    inner: &Arc<Inner>,
    id: &str,
    set: &PlacementSet,
    policy: &Policy,
    prediction: Option<&PredictionRecord>,
    generation: u64,
) -> Result<Next, DaemonError> {
    let guard = begin(inner, id, "placing").await?;
    if !unchanged_since(inner, id, generation) {
        return Ok(Next::Again);
    }
    apply_policy(
        inner,
        id,
        set,
        policy,
        prediction,
        None,
        Why::Automatic,
        &guard,
    )
    .await?;
    Ok(Next::Idle)
}

/// The source to measure with, built (or rebuilt when the spec changed) on demand.
async fn ensure_source<'a>(
    inner: &Inner,
    id: &str,
    rec: &ContainerRecord,
    source: &'a mut Option<(SourceSpec, AnySource)>,
) -> Result<&'a mut AnySource, DaemonError> {
    let spec = rec.metric.clone().ok_or_else(|| {
        DaemonError::Precondition(format!(
            "container {} has no metric source: give it one with Manage (placectl manage {} --metric ...), or run on a host with hardware counters",
            rec.name, rec.name
        ))
    })?;
    if source.as_ref().is_none_or(|(s, _)| *s != spec) {
        let cg = placed_host::cgroup::CgroupPath::parse(&rec.id)
            .map_err(|e| DaemonError::Internal(e.to_string()))?;
        let dir = inner
            .host
            .perf_dir(&cg)
            .unwrap_or_else(|| cg.under(inner.host.cgroups().root()));
        let cpus = inner.machine.pus.usable.clone();
        let (built, reporter) = spec.build(&rec.name, &dir, &cpus).await.map_err(|e| {
            if e.is_bad_input() {
                DaemonError::BadRequest(e.to_string())
            } else {
                DaemonError::Precondition(format!("metric source of {}: {e}", rec.name))
            }
        })?;
        inner.with_entry(id, |e| e.reporter = reporter);
        *source = Some((spec, built));
    }
    match source {
        Some((_, s)) => Ok(s),
        None => Err(DaemonError::Internal("metric source vanished".into())),
    }
}

/// Measures the container where it is now.
async fn measure_here(
    inner: &Inner,
    rec: &ContainerRecord,
    source: &mut AnySource,
) -> Result<Measurement, DaemonError> {
    let cg = placed_host::cgroup::CgroupPath::parse(&rec.id)
        .map_err(|e| DaemonError::Internal(e.to_string()))?;
    let dir = cg.under(inner.host.cgroups().root());
    let cpus = rec.assigned.as_ref().map(|a| a.cpus.clone());
    let probe = inner
        .host
        .kernel()
        .noise_probe(NoiseTarget::Cgroup(dir), cpus);
    measure(source, &probe, &inner.protocol)
        .await
        .map_err(|e| match e {
            ObserveError::TooDisturbed { .. } | ObserveError::Restarted { .. } => {
                DaemonError::Unavailable(format!("measuring {}: {e}", rec.name))
            }
            ObserveError::Source { .. } | ObserveError::Noise { .. } => {
                inner.metrics.error("observe");
                DaemonError::Precondition(format!(
                    "measuring {}: {}",
                    rec.name,
                    placed_core::text::error_line(&e)
                ))
            }
            other => DaemonError::Internal(format!("measuring {}: {other}", rec.name)),
        })
}

/// Units the container may use: the free ones and its own.
fn available(inner: &Inner, id: &str) -> Vec<usize> {
    let taken = inner.registry().taken_units(id);
    (0..inner.machine.units.len())
        .filter(|u| !taken.contains(u))
        .collect()
}

/// Baseline, probe, prediction (thesis §2.4.2): the container measured in the model's two
/// placements, the forest's predicted vector stored on the record.
async fn evaluate(
    inner: &Arc<Inner>,
    id: &str,
    set: &PlacementSet,
    source: &mut Option<(SourceSpec, AnySource)>,
    generation: u64,
    guard: &OpGuard,
) -> Result<Option<PredictionRecord>, DaemonError> {
    let rec = record(inner, id)?;
    let loaded = inner
        .models
        .find(inner.machine.fingerprint(), set)
        .ok_or_else(|| DaemonError::NoModel {
            fingerprint: inner.machine.fingerprint().to_owned(),
            vcpus: rec.vcpus,
            dir: inner.models.dir().display().to_string(),
        })?;
    let model = loaded.model.clone();
    ensure_source(inner, id, &rec, source).await?;
    let mut measured: Vec<(String, Measurement)> = Vec::with_capacity(2);
    for (state, placement_id) in [
        (Lifecycle::Baseline, model.baseline().to_owned()),
        (Lifecycle::Probe, model.probe().to_owned()),
    ] {
        let placement = set.get(&placement_id).ok_or_else(|| {
            DaemonError::Internal(format!("model placement {placement_id} vanished"))
        })?;
        let inst = instantiate(&inner.machine, rec.vcpus, placement, &available(inner, id))
            .map_err(|e| DaemonError::Internal(e.to_string()))?
            .ok_or_else(|| {
                DaemonError::Precondition(format!(
                    "no room to measure {} in {placement_id}: the units it needs are held by other containers",
                    rec.name
                ))
            })?;
        let target = Target {
            placement: Some(inst.id.clone()),
            units: inst.units,
            cpus: inst.cpus,
            mems: inst.mems,
            predicted: None,
            reason: format!("{} placement of model {}", state.name(), model.id()),
        };
        set_state(inner, id, state, &format!("measuring in {placement_id}"));
        move_to(inner, id, &target, &Mode::Kernel, guard).await?;
        let rec_now = record(inner, id)?;
        let src = ensure_source(inner, id, &rec_now, source).await?;
        let m = measure_here(inner, &rec_now, src).await?;
        measured.push((placement_id, m));
    }
    let (baseline, probe) = (&measured[0].1, &measured[1].1);
    let mut warnings = Vec::new();
    match compare(
        baseline,
        probe,
        inner.protocol.confidence,
        inner.protocol.margin,
    ) {
        Ok(c) => {
            if c.verdict == placed_host::observe::Verdict::Inconclusive {
                warnings.push(format!(
                    "baseline and probe could not be told apart (ratio {:.3}, interval {:.3}-{:.3}): the prediction rests on a noisy probe",
                    c.ratio.value, c.ratio.lo, c.ratio.hi
                ));
            }
        }
        Err(e) => {
            return Err(DaemonError::Unavailable(format!(
                "{}: {e}; measuring again from the baseline",
                rec.name
            )));
        }
    }
    let obs = |m: &Measurement| Observation {
        value: m.estimate.value,
        spread: (m.estimate.hi - m.estimate.lo) / 2.0,
        ..Default::default()
    };
    let predicted = model
        .predict(&obs(baseline), &obs(probe))
        .map_err(|e| DaemonError::Precondition(format!("predicting {}: {e}", rec.name)))?;
    inner.metrics.predictions.inc();
    if let Some(n) = &predicted.novelty {
        warnings.push(format!(
            "no training workload behaved like this one (probe at {:.2} x baseline, nearest category expects {:.2}-{:.2}): the prediction extrapolates",
            n.probe_ratio, n.nearest_interval.0, n.nearest_interval.1
        ));
    }
    if predicted.provenance != placed_models::Provenance::Real {
        warnings.push(format!(
            "model trained on {} data: not real placement results",
            predicted.provenance
        ));
    }
    let prediction = PredictionRecord {
        model_id: predicted.model_id.clone(),
        model_path: loaded.path.display().to_string(),
        provenance: predicted.provenance,
        vcpus: rec.vcpus,
        baseline: model.baseline().to_owned(),
        probe: model.probe().to_owned(),
        observations: measured
            .iter()
            .map(|(p, m)| ObservationRecord {
                placement: p.clone(),
                value: m.estimate.value,
                low: m.estimate.lo,
                high: m.estimate.hi,
                source: m.source.clone(),
                windows: m.windows.len(),
                dropped: m.dropped(),
            })
            .collect(),
        placements: predicted
            .placements
            .iter()
            .map(|p| PredictedRecord {
                placement: p.id.clone(),
                relative: p.relative,
                spread: p.spread,
                measured: p.measured,
            })
            .collect(),
        warnings,
        unix_ms: now_ms(),
    };
    let stored = inner
        .with_entry(id, |e| e.store_prediction(prediction.clone(), generation))
        .unwrap_or(false);
    if !stored {
        tracing::info!(container = %rec.name, vcpus = rec.vcpus, "settings changed during the evaluation: its prediction is discarded");
        return Ok(None);
    }
    set_state(inner, id, Lifecycle::Predicted, "");
    inner.events.send(Event {
        unix_ms: now_ms(),
        container: id.to_owned(),
        kind: EventKind::Predicted,
        state: Lifecycle::Predicted,
        placement: None,
        message: format!(
            "predicted with model {} ({}); baseline {:.3} {}",
            prediction.model_id, prediction.provenance, baseline.estimate.value, baseline.source
        ),
    });
    inner.persist().await?;
    Ok(Some(prediction))
}

/// Who asked for a move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Why {
    /// The lifecycle applying a policy: moves only when the move pays.
    Automatic,
    /// An explicit `Place`: an order, carried out whatever the cost.
    Order,
}

/// Whether to move: `Ok` with the reason to record, or `Err` with why it stays.
fn verdict(
    why: Why,
    already_there: bool,
    target: &Target,
    decision: &policy::MoveDecision,
) -> Result<String, String> {
    if already_there {
        return Err(format!("already in place: {}", target.reason));
    }
    match why {
        _ if decision.worth_it => Ok(format!("{}; {}", target.reason, decision.reason)),
        Why::Order => Ok(format!(
            "{}; on request, although {}",
            target.reason, decision.reason
        )),
        Why::Automatic => Err(format!("left in place: {}", decision.reason)),
    }
}

/// Applies `policy` and moves the container when that pays (automatic) or when ordered.
#[allow(clippy::too_many_arguments)]
async fn apply_policy(
    inner: &Arc<Inner>,
    id: &str,
    set: &PlacementSet,
    policy: &Policy,
    prediction: Option<&PredictionRecord>,
    mode: Option<Mode>,
    why: Why,
    guard: &OpGuard,
) -> Result<PlaceOutcome, DaemonError> {
    let rec = record(inner, id)?;
    let predicted = prediction.map(predicted_list);
    let avail = available(inner, id);
    let situation = Situation {
        machine: &inner.machine,
        placements: set,
        available: &avail,
        predictions: predicted.as_deref(),
    };
    let Some(target) = policy::decide(policy, &situation).map_err(policy_error)? else {
        set_state(inner, id, Lifecycle::Watched, "observe policy: never moved");
        return Ok(unmoved(&rec, "observe policy: never moved"));
    };
    let decision = inner.worth_moving(id, &rec, &target).await;
    let reason = match verdict(why, already_there(&rec, &target), &target, &decision) {
        Ok(reason) => reason,
        Err(stays) => {
            set_state(inner, id, Lifecycle::Watched, &stays);
            return Ok(unmoved(&rec, &stays));
        }
    };
    let mode = mode.unwrap_or_else(|| inner.migration_mode());
    let outcome = move_to(inner, id, &target, &mode, guard).await?;
    set_state(inner, id, Lifecycle::Watched, &reason);
    inner.persist().await?;
    Ok(PlaceOutcome { reason, ..outcome })
}

fn unmoved(rec: &ContainerRecord, why: &str) -> PlaceOutcome {
    let (placement, cpus, mems) = match &rec.assigned {
        Some(a) => (a.placement.clone(), a.cpus.clone(), a.mems.clone()),
        None => (None, Default::default(), Default::default()),
    };
    PlaceOutcome {
        container: rec.name.clone(),
        placement,
        cpus,
        mems,
        moved: false,
        bytes_moved: 0,
        duration: Duration::ZERO,
        reason: why.to_owned(),
    }
}

pub(super) fn already_there(rec: &ContainerRecord, target: &Target) -> bool {
    rec.assigned
        .as_ref()
        .is_some_and(|a| a.cpus == target.cpus && a.mems == target.mems && a.units == target.units)
}

/// Moves the container: the migration is written to the state file first, so a daemon
/// killed mid-move finds it at start-up and settles the container on one whole cpuset.
async fn move_to(
    inner: &Arc<Inner>,
    id: &str,
    target: &Target,
    mode: &Mode,
    _guard: &OpGuard,
) -> Result<PlaceOutcome, DaemonError> {
    let (container, rec) = inner
        .with_entry(id, |e| (e.container.clone(), e.record.clone()))
        .ok_or_else(|| DaemonError::NotFound(format!("container {id} is no longer managed")))?;
    let current = current_cpuset(inner, &container.cgroup).await?;
    let from = Cpuset {
        cpus: current.effective_cpus.clone(),
        mems: current.effective_mems.clone(),
    };
    let to = Assigned {
        placement: target.placement.clone(),
        units: target.units.clone(),
        cpus: target.cpus.clone(),
        mems: target.mems.clone(),
    };
    inner.with_entry(id, |e| {
        if e.record.original.is_none() {
            e.record.original = Some(from.clone());
        }
        e.record.migration = Some(Migration {
            from: from.clone(),
            to: to.clone(),
            started_unix_ms: now_ms(),
            frozen: matches!(mode, Mode::Fast { freeze: true, .. }),
        });
    });
    let previous_state = rec.state;
    set_state(
        inner,
        id,
        Lifecycle::Migrating,
        &format!("moving to {} ({} mode)", label(&to), mode.name()),
    );
    inner.persist().await?;
    inner.events.send(Event {
        unix_ms: now_ms(),
        container: id.to_owned(),
        kind: EventKind::MigrationStarted,
        state: Lifecycle::Migrating,
        placement: to.placement.clone(),
        message: format!(
            "from cpus {} mems {} to cpus {} mems {}",
            from.cpus, from.mems, to.cpus, to.mems
        ),
    });

    let started = Instant::now();
    let result = {
        let host = inner.clone();
        let (cpus, mems, mode) = (to.cpus.clone(), to.mems.clone(), mode.clone());
        let cancel = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = cancel.clone();
        let stop = inner.cancel.clone();
        // Shutdown asks an in-flight fast migration to stop at its next chunk.
        let watcher = tokio::spawn(async move {
            stop.cancelled().await;
            flag.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        let opts = placed_host::enact::ApplyOptions {
            cancel: Some(cancel),
            hold: inner.migration_hold.clone(),
            ..Default::default()
        };
        let r = tokio::task::spawn_blocking(move || {
            host.host.apply_with(&container, &cpus, &mems, &mode, &opts)
        })
        .await;
        watcher.abort();
        r.map_err(|e| DaemonError::Internal(e.to_string()))?
    };
    let elapsed = started.elapsed();
    match result {
        Ok(report) if report.migration.cancelled && report.after.mems != to.mems => {
            // Shutdown stopped a throttled move half-way: it keeps the old nodes beside the
            // new ones rather than let the kernel move the rest uncapped. The record keeps
            // the migration, so the next start settles it like any interrupted move
            // instead of taking the wider cpuset for a change made outside placed.
            tracing::warn!(
                container = %id,
                mems = %report.after.mems,
                moved = report.migration.bytes_moved,
                "move stopped by shutdown half-way; the next start settles it"
            );
            inner.persist().await?;
            Err(DaemonError::Unavailable(format!(
                "moving {}: stopped by shutdown half-way (cpus {}, mems {}); the next start settles it",
                rec.name, report.after.cpus, report.after.mems
            )))
        }
        Ok(report) => {
            let bytes = report.migration.bytes_moved;
            let sharer = inner
                .with_entry(id, |e| {
                    e.record.assigned = Some(to.clone());
                    e.record.migration = None;
                    matches!(e.record.policy, Policy::Aggressive)
                })
                .unwrap_or(true);
            // What nobody holds changed: aggressive containers share it anew (and leave
            // units this one now holds).
            if !sharer {
                inner.wake_sharers(id);
            }
            inner
                .metrics
                .migrations
                .get_or_create(&OutcomeLabel {
                    outcome: Outcome::Ok,
                })
                .inc();
            inner.metrics.migration_bytes.inc_by(bytes);
            inner
                .metrics
                .migration_seconds
                .observe(elapsed.as_secs_f64());
            inner.learn_migration_speed(bytes, report.migration.duration.as_secs_f64());
            set_state(inner, id, previous_state_after_move(previous_state), "");
            inner.persist().await?;
            inner.events.send(Event {
                unix_ms: now_ms(),
                container: id.to_owned(),
                kind: EventKind::MigrationFinished,
                state: previous_state_after_move(previous_state),
                placement: to.placement.clone(),
                message: format!(
                    "moved {} bytes in {:.3} s; {} bytes still on old nodes",
                    bytes,
                    elapsed.as_secs_f64(),
                    report.migration.left_on_old_nodes
                ),
            });
            Ok(PlaceOutcome {
                container: rec.name.clone(),
                placement: to.placement,
                cpus: to.cpus,
                mems: to.mems,
                moved: true,
                bytes_moved: bytes,
                duration: elapsed,
                reason: target.reason.clone(),
            })
        }
        Err(e) => {
            inner.with_entry(id, |entry| entry.record.migration = None);
            let outcome = match &e {
                placed_host::enact::Error::Failed {
                    rollback: placed_host::enact::Rollback::Restored,
                    ..
                } => Outcome::RolledBack,
                _ => Outcome::Failed,
            };
            inner
                .metrics
                .migrations
                .get_or_create(&OutcomeLabel { outcome })
                .inc();
            inner.metrics.error("enact");
            set_state(inner, id, previous_state_after_move(previous_state), "");
            inner.persist().await?;
            Err(DaemonError::from_fault(
                e.fault(),
                format!("moving {}: {}", rec.name, placed_core::text::error_line(&e)),
            ))
        }
    }
}

/// Where the container's tasks may run now. On cgroup v2 a container's cgroup has no
/// cpuset files until `+cpuset` is enabled in its ancestors, so the cgroup is prepared
/// first (which changes nothing for its tasks: it inherits its parent's sets).
async fn current_cpuset(
    inner: &Arc<Inner>,
    cg: &placed_host::cgroup::CgroupPath,
) -> Result<placed_host::cgroup::CpusetState, DaemonError> {
    let task_inner = inner.clone();
    let cg = cg.clone();
    tokio::task::spawn_blocking(move || {
        let cgroups = task_inner.host.cgroups();
        cgroups.prepare(&cg)?;
        cgroups.cpuset(&cg)
    })
    .await
    .map_err(|e| DaemonError::Internal(e.to_string()))?
    .map_err(|e| DaemonError::from_fault(e.fault(), e.to_string()))
}

/// A move leaves the container in the state it was in (baseline, probe), or placed.
fn previous_state_after_move(before: Lifecycle) -> Lifecycle {
    match before {
        Lifecycle::Baseline | Lifecycle::Probe => before,
        _ => Lifecycle::Placed,
    }
}

fn label(a: &Assigned) -> String {
    match &a.placement {
        Some(p) => p.clone(),
        None => format!("cpus {} (unpinned)", a.cpus),
    }
}

/// A watched container under the model policy: measured in place; when it strays from its
/// prediction by more than the configured drift, it is evaluated again.
async fn watch(
    inner: &Arc<Inner>,
    id: &str,
    rec: &ContainerRecord,
    generation: u64,
    source: &mut Option<(SourceSpec, AnySource)>,
) -> Result<Next, DaemonError> {
    let Some(prediction) = usable_prediction(rec) else {
        return Ok(Next::Idle);
    };
    let Some(placement) = rec.assigned.as_ref().and_then(|a| a.placement.clone()) else {
        return Ok(Next::Idle);
    };
    let (Some(relative), Some(base)) =
        (prediction.relative(&placement), prediction.baseline_value())
    else {
        return Ok(Next::Sleep(inner.config.observe.watch_interval));
    };
    let guard = begin(inner, id, "watching").await?;
    if !unchanged_since(inner, id, generation) {
        return Ok(Next::Again);
    }
    let src = ensure_source(inner, id, rec, source).await?;
    let m = measure_here(inner, rec, src).await;
    let m = match m {
        Ok(m) => m,
        Err(e) => {
            tracing::info!(container = %rec.name, error = %e, "watch measurement skipped");
            return Ok(Next::Sleep(inner.config.observe.watch_interval));
        }
    };
    let expected = base * relative;
    let drift = (m.estimate.value / expected - 1.0).abs();
    if expected > 0.0 && drift > inner.config.policy.drift {
        set_state(
            inner,
            id,
            Lifecycle::Discovered,
            &format!(
                "observed {:.3} against {:.3} predicted ({:.0}% off): evaluating again",
                m.estimate.value,
                expected,
                drift * 100.0
            ),
        );
        inner.with_entry(id, |e| e.record.prediction = None);
        drop(guard);
        return Ok(Next::Again);
    }
    Ok(Next::Sleep(inner.config.observe.watch_interval))
}

/// An on-demand prediction: measured in baseline and probe, then put back where it was.
pub(super) async fn predict_now(
    inner: &Arc<Inner>,
    id: &str,
) -> Result<PredictionRecord, DaemonError> {
    let guard = inner
        .with_entry(id, |e| e.try_begin("predicting (baseline and probe)"))
        .ok_or_else(|| DaemonError::NotFound(format!("container {id} is no longer managed")))??;
    let (rec, generation) = inner
        .with_entry(id, |e| (e.record.clone(), e.settings))
        .ok_or_else(|| DaemonError::NotFound(format!("container {id} is no longer managed")))?;
    let set = inner.placements(rec.vcpus)?;
    // Fail before moving anything when there is no model or no metric.
    if inner
        .models
        .find(inner.machine.fingerprint(), &set)
        .is_none()
    {
        return Err(DaemonError::NoModel {
            fingerprint: inner.machine.fingerprint().to_owned(),
            vcpus: rec.vcpus,
            dir: inner.models.dir().display().to_string(),
        });
    }
    let resume = rec.assigned.clone();
    let back_to = match &resume {
        Some(a) => Target {
            placement: a.placement.clone(),
            units: a.units.clone(),
            cpus: a.cpus.clone(),
            mems: a.mems.clone(),
            predicted: None,
            reason: "back where it was before the prediction".into(),
        },
        None => {
            let cg = placed_host::cgroup::CgroupPath::parse(&rec.id)
                .map_err(|e| DaemonError::Internal(e.to_string()))?;
            let now = current_cpuset(inner, &cg).await?;
            Target {
                placement: None,
                units: Vec::new(),
                cpus: now.effective_cpus,
                mems: now.effective_mems,
                predicted: None,
                reason: "back where it was before the prediction".into(),
            }
        }
    };
    inner.with_entry(id, |e| e.record.resume = resume.clone());
    let mut source = None;
    let result = evaluate(inner, id, &set, &mut source, generation, &guard).await;
    // Whatever happened, put it back.
    let back = move_to(inner, id, &back_to, &Mode::Kernel, &guard).await;
    inner.with_entry(id, |e| {
        e.record.resume = None;
        if resume.is_none() {
            e.record.assigned = None;
        }
    });
    set_state(inner, id, Lifecycle::Watched, "");
    inner.persist().await?;
    let prediction = result?.ok_or_else(|| {
        DaemonError::Unavailable(format!(
            "the settings of {} changed during the prediction; ask again",
            rec.name
        ))
    })?;
    back?;
    Ok(prediction)
}

/// An operator's or orchestrator's move.
pub(super) async fn place_now(
    inner: &Arc<Inner>,
    id: &str,
    target: PlaceTarget,
    mode: Option<Mode>,
) -> Result<PlaceOutcome, DaemonError> {
    let guard = inner
        .with_entry(id, |e| e.try_begin("placing"))
        .ok_or_else(|| DaemonError::NotFound(format!("container {id} is no longer managed")))??;
    let rec = record(inner, id)?;
    let policy = match &target {
        PlaceTarget::Policy(p) => p.clone(),
        PlaceTarget::OwnPolicy => rec.policy.clone(),
    };
    let set = inner.placements(rec.vcpus)?;
    let prediction = usable_prediction(&rec).cloned();
    if matches!(policy, Policy::Model { .. }) && prediction.is_none() {
        return Err(DaemonError::Precondition(format!(
            "the model policy needs a prediction for {} first (placectl predict {})",
            rec.name, rec.name
        )));
    }
    let result = apply_policy(
        inner,
        id,
        &set,
        &policy,
        prediction.as_ref(),
        mode,
        Why::Order,
        &guard,
    )
    .await;
    // A new policy becomes the container's only once it has been carried out: a Place
    // that failed leaves the container, and its policy, as they were.
    if let (Ok(_), PlaceTarget::Policy(p)) = (&result, target) {
        inner.with_entry(id, |e| {
            if e.record.policy != p {
                e.record.policy = p;
                // A task waiting to apply the old policy must not undo this.
                e.settings += 1;
            }
        });
    }
    inner.persist().await?;
    drop(guard);
    result
}

pub(super) fn predicted_list(p: &PredictionRecord) -> Vec<Predicted> {
    p.placements
        .iter()
        .map(|x| Predicted {
            placement: x.placement.clone(),
            relative: x.relative,
            spread: x.spread,
        })
        .collect()
}

pub(super) fn policy_error(e: PolicyError) -> DaemonError {
    if e.is_bad_request() {
        DaemonError::BadRequest(e.to_string())
    } else {
        DaemonError::Precondition(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use placed_core::cpuset::{CpuSet, NodeSet};
    use placed_core::policy::{MoveCost, MoveDecision, worth_moving};

    fn target() -> Target {
        Target {
            placement: Some("numa2-a".into()),
            units: vec![2, 3],
            cpus: CpuSet::new(),
            mems: NodeSet::new(),
            predicted: Some(1.001),
            reason: "model: fewest units".into(),
        }
    }

    /// A 0.1% predicted gain against 100 GiB to migrate at 1 GiB/s over a 60 s horizon.
    fn small_gain_large_memory() -> MoveDecision {
        worth_moving(
            &MoveCost {
                current_units: 2,
                current_predicted: Some(1.0),
                trespassing: false,
                bytes_to_move: 100 << 30,
                migration_bytes_per_s: (1u64 << 30) as f64,
                horizon_s: 60.0,
            },
            &target(),
        )
    }

    #[test]
    fn automatic_moves_obey_the_cost_rule_and_orders_do_not() {
        let d = small_gain_large_memory();
        assert!(!d.worth_it, "{}", d.reason);
        // The lifecycle (after an evaluation, or applying any policy) leaves it in place...
        let stays = verdict(Why::Automatic, false, &target(), &d).unwrap_err();
        assert!(stays.starts_with("left in place"), "{stays}");
        assert!(stays.contains("does not outweigh"), "{stays}");
        // ... an explicit Place moves it, saying the move does not pay.
        let goes = verdict(Why::Order, false, &target(), &d).unwrap();
        assert!(goes.contains("on request"), "{goes}");
        // Where it already is, neither moves.
        let here = verdict(Why::Order, true, &target(), &d).unwrap_err();
        assert!(here.starts_with("already in place"), "{here}");
        let pays = MoveDecision {
            worth_it: true,
            reason: "frees 2 allocation units".into(),
        };
        let goes = verdict(Why::Automatic, false, &target(), &pays).unwrap();
        assert!(goes.contains("frees 2 allocation units"), "{goes}");
    }
}
