//! One managed container, as its lifecycle task and the API's commands act on it: its
//! record, its state changes and the events they send, its operation lock, and its
//! registration.
//!
//! A [`Handle`] is the container's id with the shared daemon state; it holds no lock. Its
//! methods take the registry lock briefly and fail with
//! [`DaemonError::UnknownContainer`] once the container has been forgotten (it vanished).

use std::sync::Arc;
use std::time::Instant;

use crate::state::{ContainerRecord, Lifecycle, VcpuSource};
use placed_core::policy::Policy;
use placed_host::cgroup::CgroupPath;
use placed_host::containers::{Container, Runtime};
use placed_host::observe::SourceSpec;

use super::error::DaemonError;
use super::events::{Event, EventKind, now_ms};
use super::registry::{Entry, OpGuard};
use super::shared::Shared;
use super::{ManageRequest, task};

#[derive(Debug, Clone)]
pub(crate) struct Handle {
    pub shared: Arc<Shared>,
    pub id: String,
}

/// What [`Handle::register`] found.
#[derive(Debug)]
pub(crate) enum Registered {
    /// Taken under management now, with the settings asked for.
    New(Handle),
    /// Already managed (found by discovery meanwhile): its settings are unchanged.
    Known(Handle),
}

impl Handle {
    pub fn new(shared: Arc<Shared>, id: String) -> Self {
        Self { shared, id }
    }

    fn gone(&self) -> DaemonError {
        DaemonError::UnknownContainer {
            reference: self.id.clone(),
        }
    }

    /// Runs `f` on the container's registry entry.
    pub fn with<R>(&self, f: impl FnOnce(&mut Entry) -> R) -> Result<R, DaemonError> {
        let mut reg = self.shared.registry();
        match reg.entries.get_mut(&self.id) {
            Some(e) => Ok(f(e)),
            None => Err(self.gone()),
        }
    }

    /// A copy of the container's record.
    pub fn record(&self) -> Result<ContainerRecord, DaemonError> {
        self.with(|e| e.record.clone())
    }

    /// The record and the generation of its settings, read together.
    pub fn settings(&self) -> Result<(ContainerRecord, u64), DaemonError> {
        self.with(|e| (e.record.clone(), e.settings))
    }

    /// Whether the container's settings are still those of generation `since`.
    pub fn unchanged_since(&self, since: u64) -> bool {
        self.with(|e| e.settings).ok() == Some(since)
    }

    /// Whether the container's cgroup is gone: it stopped, and what failed on it is not
    /// worth reporting.
    pub fn vanished(&self) -> bool {
        let Ok(cg) = CgroupPath::parse(&self.id) else {
            return false;
        };
        matches!(self.shared.host.cgroups().exists(&cg), Ok(false))
    }

    /// Units this container may use: the free ones and its own.
    pub fn available_units(&self) -> Vec<usize> {
        self.shared.available_units(&self.id)
    }

    /// Sends one event about this container.
    pub fn event(
        &self,
        kind: EventKind,
        state: Lifecycle,
        placement: Option<String>,
        message: String,
    ) {
        self.shared.events.send(Event {
            unix_ms: now_ms(),
            container: self.id.clone(),
            kind,
            state,
            placement,
            message,
            cpuset_override: None,
        });
    }

    /// Moves the container to `state`; an event only when something changed.
    pub fn set_state(&self, state: Lifecycle, detail: &str) {
        let changed = self.with(|e| {
            let changed = e.record.state != state || e.record.detail != detail;
            e.record.state = state;
            e.record.detail = detail.to_owned();
            e.record.updated_unix_ms = now_ms();
            (
                changed,
                e.record.assigned.as_ref().and_then(|a| a.placement.clone()),
            )
        });
        if let Ok((true, placement)) = changed {
            self.shared.update_gauges();
            let message = if detail.is_empty() {
                state.name().to_owned()
            } else {
                detail.to_owned()
            };
            self.event(EventKind::State, state, placement, message);
        }
    }

    /// Records an error on the container: waiting when it may clear by itself, failed when
    /// someone has to act. One event for it, not a state change and an error saying the
    /// same.
    pub fn fail(&self, e: &DaemonError) {
        let state = if e.may_clear() {
            Lifecycle::Waiting
        } else {
            Lifecycle::Failed
        };
        let line = e.line();
        self.shared.metrics.error("lifecycle");
        let _ = self.with(|entry| {
            entry.record.state = state;
            entry.record.detail = line.clone();
            entry.record.updated_unix_ms = now_ms();
        });
        self.shared.update_gauges();
        self.event(EventKind::Error, state, None, line);
    }

    /// Takes the container's operation lock, waiting for an API command to finish: the
    /// lifecycle task's way in.
    pub async fn begin(&self, what: &str) -> Result<OpGuard, DaemonError> {
        let op = self.with(|e| e.op.clone())?;
        let guard = op.lock_owned().await;
        self.with(|e| {
            e.doing = Some((what.to_owned(), Instant::now()));
            e.by_api = false;
        })?;
        Ok(OpGuard::from(guard))
    }

    /// Claims the container for an operation without waiting: the API's way in.
    pub fn try_begin(&self, what: &str) -> Result<OpGuard, DaemonError> {
        self.with(|e| e.try_begin(what))?
    }

    /// Registers a newly found container with the settings `Manage` asked for (or the
    /// defaults) and starts its task, so that no task ever runs on settings about to change.
    pub async fn register(
        shared: &Arc<Shared>,
        container: Container,
        settings: Option<&ManageRequest>,
    ) -> Result<Registered, DaemonError> {
        let id = container.cgroup.to_string();
        let (vcpus, vcpus_source) = initial_vcpus(shared, &container, settings);
        let policy = match settings.and_then(|s| s.policy.clone()) {
            Some(p) => p,
            // The configuration was validated at load (and reload): its default policy parses.
            None => {
                let policy = &shared.config().policy;
                Policy::parse(&policy.default, policy.goal).unwrap_or(Policy::Observe)
            }
        };
        let metric = match settings.and_then(|s| s.metric.clone()) {
            Some(m) => Some(m),
            None => shared.pmu.then_some(SourceSpec::Perf { ipc: false }),
        };
        // A plain cgroup is known by its last component, as a container by its name.
        let name = match (&container.runtime, &container.name) {
            (Runtime::Cgroup, None) => container.cgroup.name().to_owned(),
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
            on_override: settings.and_then(|s| s.on_override),
            overridden: None,
        };
        let handle = Handle::new(shared.clone(), id.clone());
        {
            let mut reg = shared.registry();
            if reg.entries.contains_key(&id) {
                return Ok(Registered::Known(handle));
            }
            let entry = shared.new_entry(record, container);
            reg.entries.insert(id, entry);
        }
        shared.watch_list.notify_one();
        handle.event(
            EventKind::Discovered,
            Lifecycle::Discovered,
            None,
            format!("discovered, {vcpus} vCPUs ({vcpus_source:?})"),
        );
        shared.update_gauges();
        shared.persist().await?;
        task::spawn(handle.clone());
        Ok(Registered::New(handle))
    }
}

/// `v` for a new container: the request's, else its CPU quota's, else its cpuset's size.
pub(super) fn initial_vcpus(
    shared: &Shared,
    container: &Container,
    settings: Option<&ManageRequest>,
) -> (usize, VcpuSource) {
    if let Some(v) = settings.and_then(|s| s.vcpus) {
        return (v, VcpuSource::Request);
    }
    if let Some(v) = shared.host.vcpus_from_quota(&container.cgroup) {
        return (v.min(shared.machine.pus.usable.len()), VcpuSource::Quota);
    }
    let cpus = shared
        .host
        .cgroups()
        .cpuset(&container.cgroup)
        .map(|c| c.effective_cpus.len())
        .unwrap_or(0);
    (cpus.max(1), VcpuSource::Cpuset)
}
