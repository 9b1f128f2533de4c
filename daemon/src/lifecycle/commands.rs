//! What the API asks of the daemon. Each command checks its request, then acts on one
//! container through its [`Handle`], taking the container's operation lock without waiting
//! (a busy container answers [`DaemonError::Busy`]).

use std::sync::Arc;

use crate::state::{ContainerRecord, Lifecycle, PredictionRecord, ReservationRecord, VcpuSource};
use placed_core::policy::Policy;
use placed_core::reconcile::OnOverride;
use placed_host::migrate::Mode;
use placed_host::observe::{PushedError, SourceSpec};

use super::daemon::Daemon;
use super::entry::Entry;
use super::entry::usable_prediction;
use super::error::{DaemonError, joined};
use super::events::now_ms;
use super::handle::Handle;
use super::joint::join_or_start;
use super::live::ModelLive;
use super::models::LoadedModel;
use super::register::{Registered, merged, register, start_on};
use super::requests::{
    ContainerView, ManageRequest, PlaceOutcome, PlaceTarget, Recommendation, StatusView,
};

fn view(e: &Entry, default: OnOverride) -> ContainerView {
    ContainerView {
        record: e.record.clone(),
        on_override: e.record.on_override.unwrap_or(default),
        doing: if e.op.try_lock().is_err() {
            e.doing.as_ref().map(|(d, _)| d.clone())
        } else {
            None
        },
    }
}

impl Daemon {
    /// The important placements for `v` vCPUs, computed once per `v`.
    pub fn placements(
        &self,
        v: usize,
    ) -> Result<Arc<placed_core::placement::PlacementSet>, DaemonError> {
        self.core.node.placements(v)
    }

    /// The override policy of containers that set none.
    fn on_override_default(&self) -> OnOverride {
        self.core.settings.config().policy.on_override
    }

    pub fn containers(&self) -> Vec<ContainerView> {
        let default = self.on_override_default();
        self.core
            .containers
            .registry()
            .entries
            .values()
            .map(|e| view(e, default))
            .collect()
    }

    pub fn container(&self, reference: &str) -> Result<ContainerView, DaemonError> {
        let handle = Handle::find(&self.core, reference)?;
        handle.with(|e| view(e, self.on_override_default()))
    }

    /// Takes a container under management, or changes its settings; with a reservation,
    /// starts it on the reserved units.
    pub async fn manage(&self, req: ManageRequest) -> Result<ContainerView, DaemonError> {
        self.check_manage(&req)?;
        let claim = self.claim_of(&req)?;
        let req = with_reservation(req, claim.as_ref());
        if req.dry_run {
            return self.manage_dry_run(&req).await;
        }
        let handle = match Handle::find(&self.core, &req.container) {
            Ok(h) => h,
            Err(_) => {
                let container = self.resolve_new(&req).await?;
                // Taken again after it was handed back: discovery follows it from now on.
                self.core
                    .containers
                    .unmanaged()
                    .remove(&container.cgroup.to_string());
                match register(&self.core, container, Some(&req), claim.as_ref()).await? {
                    // Registered with the requested settings before its task started.
                    Registered::New(h) => return h.with(|e| view(e, self.on_override_default())),
                    // Discovery got there first: change its settings like any other's.
                    Registered::Known(h) => h,
                }
            }
        };
        // One operation per container: settings never change under a measurement or a move
        // (an evaluation for the old v would write its result back for the new one, and a
        // container mid-migration would be sent back to the start of its lifecycle).
        let v = match req.vcpus {
            Some(v) => v,
            None => handle.with(|e| e.record.vcpus)?,
        };
        self.check_pinned(req.policy.as_ref(), v)?;
        let guard = handle.try_begin("changing its settings")?;
        handle.with(|entry| apply_settings(entry, &req))?;
        let saved = match &claim {
            Some(r) => start_on(&handle, r).await,
            None => self.core.persist().await,
        };
        drop(guard);
        saved?;
        handle.with(|e| view(e, self.on_override_default()))
    }

    /// A container not managed yet, found on the host, checked as `Manage` requires.
    async fn resolve_new(
        &self,
        req: &ManageRequest,
    ) -> Result<placed_host::containers::Container, DaemonError> {
        let core = self.core.clone();
        let reference = req.container.clone();
        let resolved =
            tokio::task::spawn_blocking(move || core.node.host.resolve(&reference)).await;
        let container =
            joined("finding a container", resolved)?.map_err(|source| DaemonError::Host {
                doing: "finding",
                container: req.container.clone(),
                source: Box::new(source),
            })?;
        // The root holds every other tenant: placing it would move the whole host, and a
        // FAILED root could never be handed back.
        if container.cgroup.is_root() {
            return Err(DaemonError::bad(
                "container",
                "the root cgroup is never managed; name a container or a cgroup below the root",
            ));
        }
        let cgroup = container.cgroup.to_string();
        let nested = self.core.containers.registry().nested_with(&cgroup);
        if !nested.is_empty() {
            return Err(DaemonError::Nested {
                cgroup,
                others: nested.join(", "),
            });
        }
        let (v, _) = super::register::initial_vcpus(&self.core, &container, Some(req));
        self.check_pinned(req.policy.as_ref(), v)?;
        Ok(container)
    }

    /// The reservation a request claims, checked against it.
    fn claim_of(&self, req: &ManageRequest) -> Result<Option<ReservationRecord>, DaemonError> {
        let Some(id) = &req.reservation else {
            return Ok(None);
        };
        let r = self
            .core
            .reservations
            .get(id)
            .ok_or_else(|| DaemonError::UnknownReservation { id: id.clone() })?;
        if let Some(v) = req.vcpus.filter(|&v| v != r.vcpus) {
            return Err(DaemonError::ReservationMismatch {
                id: id.clone(),
                reason: format!(
                    "it holds a placement for {} vCPUs and the request asks for {v}",
                    r.vcpus
                ),
            });
        }
        Ok(Some(r))
    }

    /// What `Manage` would make of the container, with nothing changed.
    async fn manage_dry_run(&self, req: &ManageRequest) -> Result<ContainerView, DaemonError> {
        let default = self.on_override_default();
        if let Ok(handle) = Handle::find(&self.core, &req.container) {
            let v = req.vcpus.unwrap_or(handle.with(|e| e.record.vcpus)?);
            self.check_pinned(req.policy.as_ref(), v)?;
            return handle.with(|e| {
                let mut record = e.record.clone();
                settings_applied(&mut record, req);
                ContainerView {
                    record,
                    on_override: req.on_override.or(e.record.on_override).unwrap_or(default),
                    doing: Some("dry run: nothing changed".into()),
                }
            });
        }
        let container = self.resolve_new(req).await?;
        let record = super::register::record_for(&self.core, &container, Some(req));
        Ok(ContainerView {
            on_override: record.on_override.unwrap_or(default),
            record,
            doing: Some("dry run: not managed; nothing changed".into()),
        })
    }

    /// What `manage` refuses before touching anything.
    fn check_manage(&self, req: &ManageRequest) -> Result<(), DaemonError> {
        if req.vcpus == Some(0) {
            return Err(DaemonError::bad(
                "vcpus",
                "must be at least 1 (0 means: take it from the container)",
            ));
        }
        if let Some(p) = &req.policy {
            p.validate().map_err(DaemonError::policy)?;
        }
        if let Some(v) = req.vcpus {
            // Refuse a v with no placement now, not later in the task.
            self.core.node.placements(v)?;
        }
        if matches!(&req.metric, Some(SourceSpec::Perf { .. })) && !self.core.node.pmu {
            return Err(DaemonError::NoPmu);
        }
        if let Some(metric) = &req.metric {
            self.core.settings.check_metric(metric, &req.container)?;
        }
        Ok(())
    }

    /// A pinned policy must name an important placement for the container's `v`, as `Place`
    /// and `Recommend` require: a container pinned to nothing stayed FAILED for good.
    fn check_pinned(&self, policy: Option<&Policy>, v: usize) -> Result<(), DaemonError> {
        if let Some(Policy::Pinned { placement }) = policy {
            if self.core.node.placements(v)?.get(placement).is_none() {
                return Err(DaemonError::UnknownPlacement {
                    placement: placement.clone(),
                    vcpus: v,
                });
            }
        }
        Ok(())
    }

    /// The container's prediction: the last one, or a fresh one (which measures it in the
    /// model's baseline and probe placements, then puts it back).
    pub async fn predict(&self, reference: &str) -> Result<PredictionRecord, DaemonError> {
        let handle = Handle::find(&self.core, reference)?;
        if let Some(p) = handle.with(|e| e.record.prediction.clone())? {
            return Ok(p);
        }
        // Concurrent requests share one evaluation, which goes on if its callers give up.
        let predicting = handle.clone();
        join_or_start(
            &handle,
            |e| &mut e.predicting,
            "predict".to_owned(),
            async move { predicting.predict_now().await },
        )
        .await
    }

    /// What a policy (the container's own by default) would choose, without moving it.
    pub async fn recommend(
        &self,
        reference: &str,
        policy: Option<Policy>,
    ) -> Result<Recommendation, DaemonError> {
        let handle = Handle::find(&self.core, reference)?;
        let record = handle.record()?;
        let policy = policy.unwrap_or_else(|| record.policy.clone());
        policy.validate().map_err(DaemonError::policy)?;
        let set = self.core.node.placements(record.vcpus)?;
        let target = handle
            .choose(&set, &policy, usable_prediction(&record))?
            .ok_or(DaemonError::NeverMoves {
                policy: policy.name(),
            })?;
        let decision = handle.worth_moving(&record, &target).await;
        let would_move = decision.worth_it && !handle.is_at(&record, &target).await;
        Ok(Recommendation {
            container: record.name,
            would_move,
            reason: format!("{}; {}", target.reason, decision.reason),
            target,
        })
    }

    /// Moves a container now, by its own policy or a new one.
    pub async fn place(
        &self,
        reference: &str,
        target: PlaceTarget,
        mode: Option<Mode>,
    ) -> Result<PlaceOutcome, DaemonError> {
        let handle = Handle::find(&self.core, reference)?;
        if let PlaceTarget::Policy(p) | PlaceTarget::Once(p) = &target {
            p.validate().map_err(DaemonError::policy)?;
            let v = handle.with(|e| e.record.vcpus)?;
            self.check_pinned(Some(p), v)?;
        }
        // The move goes on if its caller gives up (a client's deadline is no reason to
        // leave a container half-moved), and a request for the same joins it instead of
        // ordering a second move behind it.
        let key = format!("place {target:?} {mode:?}");
        let placing = handle.clone();
        join_or_start(&handle, |e| &mut e.placing, key, async move {
            placing.place_now(target, mode).await
        })
        .await
    }

    /// What `place` would do, with nothing moved: where the policy would put the container
    /// and whether that is a move (an order moves whatever the move costs).
    pub async fn place_dry_run(
        &self,
        reference: &str,
        target: PlaceTarget,
    ) -> Result<PlaceOutcome, DaemonError> {
        let handle = Handle::find(&self.core, reference)?;
        let record = handle.record()?;
        let policy = match target {
            PlaceTarget::OwnPolicy => record.policy.clone(),
            PlaceTarget::Policy(p) | PlaceTarget::Once(p) => {
                p.validate().map_err(DaemonError::policy)?;
                self.check_pinned(Some(&p), record.vcpus)?;
                p
            }
        };
        let set = self.core.node.placements(record.vcpus)?;
        let chosen = handle.choose(&set, &policy, usable_prediction(&record))?;
        let (placement, cpus, mems, reason) = match chosen {
            None => (
                record.assigned.as_ref().and_then(|a| a.placement.clone()),
                record
                    .assigned
                    .as_ref()
                    .map(|a| a.cpus.clone())
                    .unwrap_or_default(),
                record
                    .assigned
                    .as_ref()
                    .map(|a| a.mems.clone())
                    .unwrap_or_default(),
                format!("dry run: the {} policy never moves it", policy.name()),
            ),
            Some(t) => {
                let reason = if handle.is_at(&record, &t).await {
                    format!("dry run: already in place: {}", t.reason)
                } else {
                    let cost = handle.worth_moving(&record, &t).await;
                    format!("dry run: would move it: {}; {}", t.reason, cost.reason)
                };
                (t.placement, t.cpus, t.mems, reason)
            }
        };
        Ok(PlaceOutcome {
            container: record.name,
            placement,
            cpus,
            mems,
            moved: false,
            bytes_moved: 0,
            duration: std::time::Duration::ZERO,
            reason,
        })
    }

    /// A performance sample pushed for a container whose metric source is `pushed`.
    /// Takes one pushed sample, taken at `taken` (wall clock) or now.
    pub fn report(
        &self,
        reference: &str,
        value: f64,
        taken: Option<std::time::SystemTime>,
    ) -> Result<(), DaemonError> {
        let handle = Handle::find(&self.core, reference)?;
        let (name, reporter, metric) = handle.with(|e| {
            (
                e.record.name.clone(),
                e.reporter.clone(),
                e.record.metric.clone(),
            )
        })?;
        let reporter = reporter.ok_or_else(|| DaemonError::NotPushed {
            container: name.clone(),
            metric: metric
                .as_ref()
                .map_or_else(|| "unset".into(), SourceSpec::describe),
        })?;
        reporter
            .report_at(value, taken)
            .map_err(|source: PushedError| DaemonError::Sample {
                container: name,
                source: Box::new(source),
            })?;
        self.core.telemetry.metrics.metric_samples.inc();
        Ok(())
    }

    pub fn status(&self) -> StatusView {
        let s = &self.core;
        let models = s.models.all();
        let live = s.live.all();
        let stopped = live.iter().filter_map(|m| m.stopped.as_ref()).map(|st| {
            format!(
                "model {} is stopped by the live gate since {} ({}): containers it covers are observed, never moved; retrain it or enable it again (placectl model enable {})",
                st.model_id,
                super::live::rfc3339(st.since_unix_ms),
                st.reason,
                st.model_id
            )
        });
        let warnings: Vec<String> = stopped.collect();
        StatusView {
            fingerprint: s.node.machine.fingerprint().to_owned(),
            uptime: s.started.elapsed(),
            counts: s.containers.registry().counts(),
            models: models.clone(),
            across: s.models.all_across(),
            classes: s.models.classes_model(),
            state_file: s.persistence.store().path().display().to_string(),
            cgroup: s.node.host.cgroup_summary(),
            warnings: s
                .warnings
                .lock()
                .map(|w| w.clone())
                .unwrap_or_default()
                .into_iter()
                .chain(
                    s.conditions
                        .lock()
                        .map(|c| c.values().cloned().collect::<Vec<_>>())
                        .unwrap_or_default(),
                )
                .chain(models.iter().filter_map(below_gate_warning))
                .chain(s.models.refused())
                .chain(warnings)
                .collect(),
            live,
        }
    }

    /// An operator's word that a model the live gate stopped may move containers again:
    /// its window starts afresh, and containers waiting on it are woken.
    pub async fn enable_model(&self, model_id: &str) -> Result<ModelLive, DaemonError> {
        let core = &self.core;
        let was = core
            .live
            .enable(model_id)
            .ok_or_else(|| DaemonError::NotStopped {
                model_id: model_id.to_owned(),
            })?;
        let message = format!(
            "model {model_id} enabled again by an operator (stopped since {}: {}); its live window starts afresh",
            super::live::rfc3339(was.since_unix_ms),
            was.reason
        );
        tracing::warn!("{message}");
        core.telemetry.send(super::events::Event {
            unix_ms: now_ms(),
            container: model_id.to_owned(),
            kind: super::events::EventKind::ModelEnabled,
            state: Lifecycle::Watched,
            placement: None,
            message,
            cpuset_override: None,
            outcome: None,
            labels: Default::default(),
        });
        let live = core.live.of(model_id).unwrap_or(ModelLive {
            model_id: model_id.to_owned(),
            provenance: was.provenance,
            summary: placed_models::live::LiveSummary::of([]),
            judgement: placed_models::live::LiveGate::default()
                .judge(&placed_models::live::LiveWindow::new(1)),
            stopped: None,
        });
        core.telemetry.metrics.live.set(&live);
        for e in core.containers.registry().entries.values() {
            e.wake.notify_one();
        }
        core.persist().await?;
        Ok(live)
    }
}

/// Status's line for a model installed over the accuracy gate: the operator must know that
/// containers of its size are observed, not placed.
fn below_gate_warning(m: &LoadedModel) -> Option<String> {
    m.model.below_gate().map(|failure| {
        format!(
            "model {} ({}, v = {}) is below the accuracy gate: containers it covers are observed, never moved ({failure})",
            m.model.id(),
            m.path.display(),
            m.model.machine().v
        )
    })
}

/// Applies `Manage`'s settings to a container's entry; a change (or a container stuck
/// waiting) sends its task back to the start of its lifecycle.
fn apply_settings(entry: &mut Entry, req: &ManageRequest) {
    let metric_before = entry.record.metric.clone();
    let changed = settings_applied(&mut entry.record, req);
    // The same spec again keeps the source, and with it a pushed metric's reporter:
    // dropping that would refuse every later sample (an idempotent Manage must not).
    if entry.record.metric != metric_before {
        entry.reporter = None;
    }
    if changed {
        entry.settings += 1;
        // New settings place it anew, from where it really is.
        entry.release_override();
    }
    entry.wake.notify_one();
}

/// `Manage`'s settings applied to a record; whether a setting that restarts its lifecycle
/// changed (labels do not).
fn settings_applied(record: &mut ContainerRecord, req: &ManageRequest) -> bool {
    // `on_override` counts as a setting: a container held after an override it adopted or
    // left is released by the operator choosing another way to handle overrides.
    let before = (
        record.vcpus,
        record.policy.clone(),
        record.metric.clone(),
        record.on_override,
    );
    if let Some(v) = req.vcpus {
        if record.vcpus != v {
            // A prediction is for one v: a new v needs a new one.
            record.prediction = None;
        }
        record.vcpus = v;
        record.vcpus_source = VcpuSource::Request;
    }
    if let Some(p) = req.policy.clone() {
        record.policy = p;
    }
    if let Some(o) = req.on_override {
        record.on_override = Some(o);
    }
    if let Some(m) = &req.metric {
        record.metric = Some(m.clone());
    }
    record.labels = merged(&record.labels, &req.labels);
    if let Some(name) = &req.name {
        record.name.clone_from(name);
    }
    let changed = before
        != (
            record.vcpus,
            record.policy.clone(),
            record.metric.clone(),
            record.on_override,
        );
    if changed || matches!(record.state, Lifecycle::Waiting | Lifecycle::Failed) {
        record.state = Lifecycle::Discovered;
        record.detail.clear();
    }
    record.updated_unix_ms = now_ms();
    changed
}

/// A request claiming `claim`: what it leaves unset comes from the reservation.
fn with_reservation(mut req: ManageRequest, claim: Option<&ReservationRecord>) -> ManageRequest {
    if let Some(r) = claim {
        req.vcpus = req.vcpus.or(Some(r.vcpus));
        req.policy = req.policy.or_else(|| Some(r.policy.clone()));
        req.labels = merged(&r.labels, &req.labels);
    }
    req
}
