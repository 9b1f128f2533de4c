//! `Unmanage`: an orchestrator hands a container back.
//!
//! The container's task is stopped (an evaluation or a watch measurement in progress is
//! dropped; a move in flight is told to stop at its next chunk and waited for), whatever an
//! interrupted move left is settled on one whole cpuset (as at start-up), the cpuset it had
//! before placed managed it is put back when asked and recorded, and its record goes. Its id
//! is remembered as handed back, in the state file too, so that discovery does not adopt it
//! again with the default policy; it is forgotten once the container disappears, or when
//! `Manage` takes the container again.
//!
//! Another caller's request on the container (`Manage`, `Predict`, `Place`) is never cut
//! short: `Unmanage` answers [`DaemonError::Busy`] instead. A restore the host refuses
//! leaves the container managed, its task started again.

use placed_core::cpuset::{CpuSet, NodeSet};
use placed_core::policy::Target;
use placed_host::migrate::Mode;

use super::daemon::Daemon;
use super::entry::OpGuard;
use super::error::{DaemonError, joined};
use super::events::{Event, EventKind, now_ms};
use super::handle::Handle;
use super::moving::Journal;
use super::settle::settle_interrupted;
use super::task;

/// What `Unmanage` did.
#[derive(Debug, Clone, PartialEq)]
pub struct Unmanaged {
    /// The container's id (its cgroup path).
    pub id: String,
    pub name: String,
    /// Whether the cpuset it had before placed managed it was put back.
    pub restored: bool,
    /// Where it was left.
    pub cpus: CpuSet,
    pub mems: NodeSet,
    /// What was done, in words.
    pub detail: String,
}

/// How `Unmanage` got hold of the container.
enum Claim {
    /// Nothing held it: taken at once.
    Free(OpGuard),
    /// Its own task was working on it (what, and the lock to wait for once it is stopped).
    Task {
        doing: String,
        op: std::sync::Arc<tokio::sync::Mutex<()>>,
    },
}

impl Daemon {
    /// Hands a container back; `restore` puts back the cpuset it had before placed first
    /// moved it, when the state records one.
    pub async fn unmanage(&self, reference: &str, restore: bool) -> Result<Unmanaged, DaemonError> {
        let handle = Handle::find(&self.core, reference)?;
        // In a task of its own: a caller that gives up (a cancelled request) must not leave
        // the container with its task stopped and its record still there.
        let this = self.clone();
        let whole = tokio::spawn(async move { this.unmanage_whole(handle, restore).await });
        joined("handing a container back", whole.await)?
    }

    async fn unmanage_whole(
        &self,
        handle: Handle,
        restore: bool,
    ) -> Result<Unmanaged, DaemonError> {
        let claim = handle.with(|e| match e.try_begin("being handed back") {
            Ok(guard) => Ok(Claim::Free(guard)),
            Err(busy) if e.by_api => Err(busy),
            Err(_) => Ok(Claim::Task {
                doing: e
                    .doing
                    .as_ref()
                    .map_or_else(|| "an operation".to_owned(), |(d, _)| d.clone()),
                op: e.op.clone(),
            }),
        })??;
        let (cancel, in_host) = handle.with(|e| (e.cancel.clone(), e.in_host.clone()))?;
        // The task stops at its next await; a move in flight stops at its next chunk.
        cancel.cancel();
        let mut notes = Vec::new();
        let guard = match claim {
            Claim::Free(guard) => guard,
            Claim::Task { doing, op } => {
                notes.push(format!("stopped {doing}"));
                OpGuard::from(op.lock_owned().await)
            }
        };
        // A move outlives the future that started it: wait until its blocking work ended.
        drop(in_host.lock().await);
        let outcome = self.hand_back(&handle, restore, &mut notes).await;
        drop(guard);
        match outcome {
            Ok(left) => Ok(self.forget_handed_back(&handle, left, notes).await),
            Err(e) => {
                // Still managed: its task starts again, under a token of its own.
                let _ = handle.with(|entry| entry.cancel = self.core.cancel.child_token());
                task::spawn(handle.clone());
                Err(e)
            }
        }
    }

    /// Settles what a stopped operation left, then restores the original cpuset when
    /// asked; the container's name, whether it was restored and where it is now.
    async fn hand_back(
        &self,
        handle: &Handle,
        restore: bool,
        notes: &mut Vec<String>,
    ) -> Result<(String, bool, CpuSet, NodeSet), DaemonError> {
        let (mut rec, container) = handle.with(|e| (e.record.clone(), e.container.clone()))?;
        if rec.migration.is_some() || rec.resume.is_some() {
            let core = self.core.clone();
            let settled = tokio::task::spawn_blocking(move || {
                let notes = settle_interrupted(&core, &container, &mut rec);
                (rec, notes)
            })
            .await;
            let (settled, more) = joined("settling a container", settled)?;
            notes.extend(more);
            rec = settled;
            handle.with(|e| {
                e.record.migration = rec.migration.clone();
                e.record.resume = rec.resume.clone();
                e.record.assigned = rec.assigned.clone();
            })?;
        }
        // The stopped task's token is spent; a restore's move (and a restarted task, if the
        // restore fails) gets a new one, still stopped by shutdown.
        handle.with(|e| e.cancel = self.core.cancel.child_token())?;
        let restored = match (restore, rec.original.clone()) {
            (false, _) => false,
            (true, None) => {
                notes.push("nothing to restore: placed never moved it".into());
                false
            }
            (true, Some(original)) => {
                let target = Target {
                    placement: None,
                    units: Vec::new(),
                    cpus: original.cpus.clone(),
                    mems: original.mems.clone(),
                    predicted: None,
                    reason: "handed back: the cpuset it had before placed managed it".into(),
                };
                // Journalled like any move: a crash half-way is settled at the next start,
                // where the container is still managed.
                handle
                    .move_to(&target, &Mode::Kernel, Journal::EachMove)
                    .await?;
                notes.push(format!(
                    "restored cpus {} mems {}",
                    original.cpus, original.mems
                ));
                true
            }
        };
        let (cpus, mems) = match handle.current_cpuset().await {
            Ok(now) => (now.effective_cpus, now.effective_mems),
            Err(_) => rec.assigned.as_ref().map_or_else(
                || (CpuSet::new(), NodeSet::new()),
                |a| (a.cpus.clone(), a.mems.clone()),
            ),
        };
        if !restored {
            notes.push(format!("left on cpus {cpus} mems {mems}"));
        }
        Ok((rec.name, restored, cpus, mems))
    }

    /// Forgets the container and remembers it as handed back (in that order, so that a
    /// resync in between never adopts it again).
    async fn forget_handed_back(
        &self,
        handle: &Handle,
        (name, restored, cpus, mems): (String, bool, CpuSet, NodeSet),
        mut notes: Vec<String>,
    ) -> Unmanaged {
        let core = &self.core;
        core.containers.unmanaged().insert(handle.id.clone());
        let removed = core.containers.registry().entries.remove(&handle.id);
        let (state, held_units, removed_labels) = removed.map_or(
            (
                crate::state::Lifecycle::Discovered,
                false,
                Default::default(),
            ),
            |e| {
                (
                    e.record.state,
                    e.record
                        .assigned
                        .as_ref()
                        .is_some_and(|a| !a.units.is_empty()),
                    e.record.labels,
                )
            },
        );
        if held_units {
            // Its units are free again: aggressive containers may share them.
            core.containers.wake_sharers(&handle.id);
        }
        core.update_gauges();
        if let Err(e) = core.persist().await {
            tracing::error!(error = %e.line(), "cannot write the state file after handing a container back");
            notes.push(format!(
                "the state file could not be written ({}); the next write records it",
                e.line()
            ));
        }
        let detail = notes.join("; ");
        core.telemetry.events.send(Event {
            unix_ms: now_ms(),
            container: handle.id.clone(),
            kind: EventKind::Unmanaged,
            state,
            placement: None,
            message: format!("{name} handed back: {detail}"),
            cpuset_override: None,
            outcome: None,
            labels: removed_labels,
        });
        Unmanaged {
            id: handle.id.clone(),
            name,
            restored,
            cpus,
            mems,
            detail,
        }
    }
}
