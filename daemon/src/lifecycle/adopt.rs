//! Start-up: the state file's containers adopted where they are.
//!
//! A container the previous run had settled stays put (no measuring, no moving). One it
//! was moving when it died is thawed if the move froze it, and settled on one whole cpuset:
//! the target if the kernel already holds it, else back to where it came from. One it had
//! taken elsewhere for an on-demand prediction goes back. Containers that stopped meanwhile
//! are forgotten. One whose cpuset was changed outside placed meanwhile is handled by its
//! override policy before its task starts, as the reconciliation handles it at run time.

use std::sync::Arc;

use crate::state::{ContainerRecord, Lifecycle};
use placed_core::fault::Fault;
use placed_host::containers::Container;

use super::core::Core;
use super::environment::StartError;
use super::events::{Event, EventKind, now_ms};
use super::handle::Handle;
use super::overrides;
use super::settle::settle_interrupted;
use super::task;

pub(crate) async fn restore(core: &Arc<Core>) -> Result<(), StartError> {
    let store = core.persistence.store().clone();
    let fingerprint = core.node.machine.fingerprint().to_owned();
    let loaded = tokio::task::spawn_blocking(move || store.load(&fingerprint))
        .await
        .map_err(|source| StartError::Task {
            doing: "reading the state file",
            source,
        })?
        .map_err(StartError::State)?;
    let Some(state) = loaded else {
        return Ok(());
    };
    crate::state::validate(&state, &core.node.machine, core.persistence.store().path())
        .map_err(StartError::State)?;
    // Still handed back; discovery drops those that have disappeared.
    core.containers
        .unmanaged()
        .extend(state.unmanaged.iter().cloned());
    // Still stopped: a restart does not hand a model proven wrong its containers back.
    core.live.restore(state.stopped_models.clone());
    for stopped in core.live.all() {
        core.telemetry.metrics.live.set(&stopped);
    }
    // Still held, each for what remains of its time; those past it end now.
    let expired = core.reservations.restore(state.reservations.clone());
    super::expiry::release(core, &expired, "expired while placed was down").await;
    let loaded = state.containers.clone();
    let mut adopted = Vec::new();
    let mut records = Vec::new();
    for rec in state.containers {
        let task_core = core.clone();
        let settled = tokio::task::spawn_blocking(move || settle(&task_core, rec))
            .await
            .map_err(|source| StartError::Task {
                doing: "adopting a container",
                source,
            })?;
        let Some((rec, container, note)) = settled else {
            continue;
        };
        core.telemetry.events.send(Event {
            unix_ms: now_ms(),
            container: rec.id.clone(),
            kind: EventKind::State,
            state: rec.state,
            placement: rec.assigned.as_ref().and_then(|a| a.placement.clone()),
            message: format!("adopted from the state file: {note}"),
            cpuset_override: None,
            outcome: None,
            labels: rec.labels.clone(),
        });
        let id = rec.id.clone();
        records.push(rec.clone());
        let entry = core.new_entry(rec, container);
        core.containers.registry().entries.insert(id.clone(), entry);
        adopted.push(id);
    }
    core.update_gauges();
    if records == loaded {
        // Nothing changed: writing the same state again could only fail (a full disk) and
        // keep a daemon whose file is intact from serving.
        tracing::debug!("every container is where the state file says; not rewritten");
    } else if let Err(e) = core.persist().await {
        // The adopted state is in memory and the file still holds the previous run's:
        // serve, and say so; the next change writes it again.
        tracing::error!(error = %e.line(), "cannot write the state file after adoption; serving from memory");
    }
    for id in adopted {
        let handle = Handle::new(core.clone(), id);
        if let Err(e) = overrides::check(&handle).await {
            tracing::warn!(container = %handle.id, error = %e.line(), "checking its cpuset at start failed");
        }
        task::spawn(handle);
    }
    Ok(())
}

/// Brings one record in line with the host. `None` when the container is gone.
fn settle(core: &Core, mut rec: ContainerRecord) -> Option<(ContainerRecord, Container, String)> {
    let container = match core.node.host.resolve(&rec.id) {
        Ok(c) => c,
        Err(e) if e.fault() == Fault::NotFound => {
            tracing::info!(container = %rec.id, "gone since the last run; forgotten");
            return None;
        }
        Err(e) => {
            tracing::warn!(container = %rec.id, error = %placed_core::text::Chain(&e), "cannot find it again; forgotten");
            return None;
        }
    };
    let before = rec.clone();
    let notes = settle_interrupted(core, &container, &mut rec);
    // A cpuset changed outside placed while it was down is the reconciliation's to find
    // and handle (restore checks every adopted container before its task starts).
    rec.state = match rec.state {
        // Interrupted evaluations start again; everything else stays where it is.
        Lifecycle::Baseline | Lifecycle::Probe | Lifecycle::Predicted => Lifecycle::Discovered,
        Lifecycle::Migrating | Lifecycle::Placed => Lifecycle::Watched,
        other => other,
    };
    // A record the host agrees with stays as it was (its detail too), so that an unchanged
    // state file need not be written again.
    if !notes.is_empty() {
        rec.detail = notes.join("; ");
    }
    if rec != before {
        rec.updated_unix_ms = now_ms();
    }
    let note = if notes.is_empty() {
        "where it was".to_owned()
    } else {
        rec.detail.clone()
    };
    Some((rec, container, note))
}
