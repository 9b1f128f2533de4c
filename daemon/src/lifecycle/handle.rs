//! One managed container, as its lifecycle task and the API's commands act on it: its
//! record, its state changes and the events they send, its operation lock, and its
//! registration.
//!
//! A [`Handle`] is the container's id with the shared daemon state; it holds no lock. Its
//! methods take the registry lock briefly and fail with
//! [`DaemonError::UnknownContainer`] once the container has been forgotten (it vanished).

use std::sync::Arc;
use std::time::Instant;

use crate::state::{ContainerRecord, Lifecycle};
use placed_host::cgroup::CgroupPath;

use super::containers::Lookup;
use super::core::Core;
use super::entry::{Entry, OpGuard};
use super::error::DaemonError;
use super::events::{Event, EventKind, now_ms};

#[derive(Debug, Clone)]
pub(crate) struct Handle {
    pub core: Arc<Core>,
    pub id: String,
}

impl Handle {
    pub fn new(core: Arc<Core>, id: String) -> Self {
        Self { core, id }
    }

    /// The container a reference names (id, name, runtime id or its unique prefix).
    pub fn find(core: &Arc<Core>, reference: &str) -> Result<Self, DaemonError> {
        let found = core.containers.registry().lookup(reference);
        match found {
            Lookup::Found(id) => Ok(Self::new(core.clone(), id)),
            Lookup::Missing => Err(DaemonError::UnknownContainer {
                reference: reference.to_owned(),
            }),
            Lookup::Ambiguous(candidates) => Err(DaemonError::AmbiguousContainer {
                reference: reference.to_owned(),
                candidates: candidates.join(", "),
            }),
        }
    }

    fn gone(&self) -> DaemonError {
        DaemonError::UnknownContainer {
            reference: self.id.clone(),
        }
    }

    /// Runs `f` on the container's registry entry.
    pub fn with<R>(&self, f: impl FnOnce(&mut Entry) -> R) -> Result<R, DaemonError> {
        let mut reg = self.core.containers.registry();
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
        matches!(self.core.node.host.cgroup_exists(&cg), Ok(false))
    }

    /// Units this container may use: the free ones and its own.
    pub fn available_units(&self) -> Vec<usize> {
        self.core.available_units(&self.id)
    }

    /// Sends one event about this container.
    pub fn event(
        &self,
        kind: EventKind,
        state: Lifecycle,
        placement: Option<String>,
        message: String,
    ) {
        let labels = self.with(|e| e.record.labels.clone()).unwrap_or_default();
        self.core.telemetry.send(Event {
            unix_ms: now_ms(),
            container: self.id.clone(),
            kind,
            state,
            placement,
            message,
            cpuset_override: None,
            outcome: None,
            labels,
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
            self.core.update_gauges();
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
        self.core.telemetry.metrics.error("lifecycle");
        let _ = self.with(|entry| {
            entry.record.state = state;
            entry.record.detail = line.clone();
            entry.record.updated_unix_ms = now_ms();
        });
        self.core.update_gauges();
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
}
