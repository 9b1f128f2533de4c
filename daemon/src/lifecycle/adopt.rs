//! Start-up: the state file's containers adopted where they are.
//!
//! A container the previous run had settled stays put (no measuring, no moving). One it
//! was moving when it died is thawed if the move froze it, and settled on one whole cpuset:
//! the target if the kernel already holds it, else back to where it came from. One it had
//! taken elsewhere for an on-demand prediction goes back. Containers that stopped meanwhile
//! are forgotten. One whose cpuset was changed outside placed meanwhile is handled by its
//! override policy before its task starts, as the reconciliation handles it at run time.

use std::sync::Arc;

use crate::state::{ContainerRecord, Cpuset, Lifecycle};
use placed_core::fault::Fault;
use placed_host::containers::Container;
use placed_host::migrate::Mode;

use super::events::{Event, EventKind, now_ms};
use super::handle::Handle;
use super::shared::Shared;
use super::{StartError, task};

pub(super) async fn restore(shared: &Arc<Shared>) -> Result<(), StartError> {
    let store = shared.store.clone();
    let fingerprint = shared.machine.fingerprint().to_owned();
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
    crate::state::validate(&state, &shared.machine, shared.store.path())
        .map_err(StartError::State)?;
    // Still handed back; discovery drops those that have disappeared.
    shared.unmanaged().extend(state.unmanaged.iter().cloned());
    let loaded = state.containers.clone();
    let mut adopted = Vec::new();
    let mut records = Vec::new();
    for rec in state.containers {
        let task_shared = shared.clone();
        let settled = tokio::task::spawn_blocking(move || settle(&task_shared, rec))
            .await
            .map_err(|source| StartError::Task {
                doing: "adopting a container",
                source,
            })?;
        let Some((rec, container, note)) = settled else {
            continue;
        };
        shared.events.send(Event {
            unix_ms: now_ms(),
            container: rec.id.clone(),
            kind: EventKind::State,
            state: rec.state,
            placement: rec.assigned.as_ref().and_then(|a| a.placement.clone()),
            message: format!("adopted from the state file: {note}"),
            cpuset_override: None,
        });
        let id = rec.id.clone();
        records.push(rec.clone());
        let entry = shared.new_entry(rec, container);
        shared.registry().entries.insert(id.clone(), entry);
        adopted.push(id);
    }
    shared.update_gauges();
    if records == loaded {
        // Nothing changed: writing the same state again could only fail (a full disk) and
        // keep a daemon whose file is intact from serving.
        tracing::debug!("every container is where the state file says; not rewritten");
    } else if let Err(e) = shared.persist().await {
        // The adopted state is in memory and the file still holds the previous run's:
        // serve, and say so; the next change writes it again.
        tracing::error!(error = %e.line(), "cannot write the state file after adoption; serving from memory");
    }
    for id in adopted {
        let handle = Handle::new(shared.clone(), id);
        if let Err(e) = super::reconcile::check(&handle).await {
            tracing::warn!(container = %handle.id, error = %e.line(), "checking its cpuset at start failed");
        }
        task::spawn(handle);
    }
    Ok(())
}

/// Brings one record in line with the host. `None` when the container is gone.
fn settle(
    shared: &Shared,
    mut rec: ContainerRecord,
) -> Option<(ContainerRecord, Container, String)> {
    let container = match shared.host.resolve(&rec.id) {
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
    let notes = settle_interrupted(shared, &container, &mut rec);
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

/// Settles what an interrupted operation left on `rec`'s container: a move (thawed if it
/// froze it, then on one whole cpuset: the target if the kernel holds it, else where it came
/// from) and an on-demand prediction's way back. Clears both from the record; the notes say
/// what was done. At start-up for the previous run's records, and by `Unmanage` for a
/// container whose operation it stopped.
pub(super) fn settle_interrupted(
    shared: &Shared,
    container: &Container,
    rec: &mut ContainerRecord,
) -> Vec<String> {
    let cgroups = shared.host.cgroups();
    let mut notes = Vec::new();
    if let Some(m) = rec.migration.take() {
        // A fast move freezes the container; if the daemon died then, the freeze stayed.
        if m.frozen && cgroups.is_frozen(&container.cgroup).unwrap_or(false) {
            match cgroups.set_frozen(&container.cgroup, false) {
                Ok(()) => notes.push("thawed (left frozen by an interrupted move)".to_owned()),
                Err(e) => notes.push(format!("COULD NOT THAW: {}", placed_core::text::Chain(&e))),
            }
        }
        let now = cgroups.cpuset(&container.cgroup).ok();
        let at = |c: &Cpuset| {
            now.as_ref()
                .is_some_and(|n| n.effective_cpus == c.cpus && n.effective_mems == c.mems)
        };
        let to = Cpuset {
            cpus: m.to.cpus.clone(),
            mems: m.to.mems.clone(),
        };
        if at(&to) {
            rec.assigned = Some(m.to.clone());
            notes.push("an interrupted move had completed".into());
        } else if at(&m.from) {
            notes.push("an interrupted move had not started; left where it was".into());
        } else {
            // Half-way (new CPUs, both nodes' memory): put it back where it came from.
            match shared
                .host
                .apply(container, &m.from.cpus, &m.from.mems, &Mode::Kernel)
            {
                Ok(_) => notes.push(format!(
                    "an interrupted move was undone (cpus {}, mems {})",
                    m.from.cpus, m.from.mems
                )),
                Err(e) => notes.push(format!(
                    "undoing an interrupted move failed: {}",
                    placed_core::text::Chain(&e)
                )),
            }
        }
    }
    if let Some(back) = rec.resume.take() {
        match shared
            .host
            .apply(container, &back.cpus, &back.mems, &Mode::Kernel)
        {
            Ok(_) => {
                notes.push("put back after an interrupted prediction".into());
                rec.assigned = (!back.units.is_empty() || back.placement.is_some()).then_some(back);
            }
            Err(e) => notes.push(format!(
                "could not put it back after a prediction: {}",
                placed_core::text::Chain(&e)
            )),
        }
    }
    notes
}
