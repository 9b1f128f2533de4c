//! Moving a container: the migration is written to the state file before it starts, so a
//! daemon killed mid-move finds it at start-up and settles the container on one whole
//! cpuset; the move itself is `Host::apply_with`, which verifies through /proc and rolls
//! back on failure.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::state::{Assigned, ContainerRecord, Cpuset, Lifecycle, Migration};
use crate::telemetry::{Outcome, OutcomeLabel};
use placed_core::policy::{Policy, Target};
use placed_host::cgroup::CpusetState;
use placed_host::enact::{ApplyOptions, ApplyReport, Rollback};
use placed_host::migrate::Mode;

use super::error::{DaemonError, joined};
use super::events::{EventKind, now_ms};
use super::handle::Handle;
use super::requests::PlaceOutcome;

/// Whether each move is recorded in the state file before and after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Journal {
    /// Recorded: a crash mid-move is settled at the next start from the record.
    EachMove,
    /// Not recorded: the caller has recorded where the container goes back to (an
    /// on-demand prediction), which a crash mid-move is settled by instead.
    Covered,
}

/// A move leaves the container in the state it was in (baseline, probe), or placed.
fn state_after_move(before: Lifecycle) -> Lifecycle {
    match before {
        Lifecycle::Baseline | Lifecycle::Probe => before,
        _ => Lifecycle::Placed,
    }
}

/// A move's target that puts a container back on an assignment it had.
pub(crate) fn target_at(a: Assigned, reason: &str) -> Target {
    Target {
        placement: a.placement,
        units: a.units,
        cpus: a.cpus,
        mems: a.mems,
        predicted: None,
        reason: reason.to_owned(),
    }
}

fn label(a: &Assigned) -> String {
    match &a.placement {
        Some(p) => p.clone(),
        None => format!("cpus {} (unpinned)", a.cpus),
    }
}

impl Handle {
    /// Where the container's tasks may run now. On cgroup v2 a container's cgroup has no
    /// cpuset files until `+cpuset` is enabled in its ancestors, so the cgroup is prepared
    /// first (which changes nothing for its tasks: it inherits its parent's sets).
    pub async fn current_cpuset(&self) -> Result<CpusetState, DaemonError> {
        let container = self.with(|e| e.container.clone())?;
        let core = self.core.clone();
        let cg = container.cgroup.clone();
        let read = tokio::task::spawn_blocking(move || core.node.host.prepared_cpuset(&cg)).await;
        joined("reading a cpuset", read)?.map_err(|source| DaemonError::Host {
            doing: "reading the cpuset of",
            container: container.label(),
            source: Box::new(source),
        })
    }

    /// Whether the container is where `target` would put it: its record says so and the
    /// kernel holds those sets. The record alone once answered "already in place" for a
    /// container whose cpuset the kernel had changed (issue 28).
    pub async fn is_at(&self, rec: &ContainerRecord, target: &Target) -> bool {
        let recorded = rec.assigned.as_ref().is_some_and(|a| {
            a.cpus == target.cpus && a.mems == target.mems && a.units == target.units
        });
        recorded
            && self.current_cpuset().await.is_ok_and(|now| {
                now.effective_cpus == target.cpus && now.effective_mems == target.mems
            })
    }

    /// Moves the container to `target`.
    pub async fn move_to(
        &self,
        target: &Target,
        mode: &Mode,
        journal: Journal,
    ) -> Result<PlaceOutcome, DaemonError> {
        let rec = self.record()?;
        let now = self.current_cpuset().await?;
        let from = Cpuset {
            cpus: now.effective_cpus,
            mems: now.effective_mems,
        };
        let to = Assigned {
            placement: target.placement.clone(),
            units: target.units.clone(),
            cpus: target.cpus.clone(),
            mems: target.mems.clone(),
        };
        self.start_migration(&from, &to, mode)?;
        if journal == Journal::EachMove {
            self.core.persist().await?;
        }
        self.event(
            EventKind::MigrationStarted,
            Lifecycle::Migrating,
            to.placement.clone(),
            format!(
                "from cpus {} mems {} to cpus {} mems {}",
                from.cpus, from.mems, to.cpus, to.mems
            ),
        );
        let started = Instant::now();
        let result = self.apply(&to, mode).await?;
        let elapsed = started.elapsed();
        let after = state_after_move(rec.state);
        let mut left_on_old_nodes = 0;
        let outcome = match result {
            Ok(report) if report.migration.cancelled && report.after.mems != to.mems => {
                // Shutdown stopped a throttled move half-way: it keeps the old nodes beside
                // the new ones rather than let the kernel move the rest uncapped. The record
                // keeps the migration, so the next start settles it like any interrupted
                // move instead of taking the wider cpuset for a change made outside placed.
                tracing::warn!(
                    container = %self.id,
                    mems = %report.after.mems,
                    moved = report.migration.bytes_moved,
                    "move stopped by shutdown half-way; the next start settles it"
                );
                if journal == Journal::EachMove {
                    self.core.persist().await?;
                }
                return Err(DaemonError::StoppedHalfway {
                    container: rec.name,
                    cpus: report.after.cpus,
                    mems: report.after.mems,
                });
            }
            Ok(report) => {
                self.finish_migration(&to, &report, elapsed)?;
                left_on_old_nodes = report.migration.left_on_old_nodes;
                Ok(PlaceOutcome {
                    container: rec.name.clone(),
                    placement: to.placement.clone(),
                    cpus: to.cpus.clone(),
                    mems: to.mems.clone(),
                    moved: true,
                    bytes_moved: report.migration.bytes_moved,
                    duration: elapsed,
                    reason: target.reason.clone(),
                })
            }
            Err(e) => Err(self.move_failed(rec.name.clone(), e)),
        };
        self.set_state(after, "");
        if journal == Journal::EachMove {
            self.core.persist().await?;
        }
        if let Ok(o) = &outcome {
            self.event(
                EventKind::MigrationFinished,
                after,
                o.placement.clone(),
                format!(
                    "moved {} bytes in {:.3} s; {left_on_old_nodes} bytes still on old nodes",
                    o.bytes_moved,
                    elapsed.as_secs_f64()
                ),
            );
        }
        outcome
    }

    /// A move the host refused or rolled back: the record forgets the migration, and the
    /// outcome is counted. Whatever the rollback achieved, the kernel is read again once this
    /// operation ends, and a difference from the record handled.
    fn move_failed(&self, container: String, e: placed_host::enact::Error) -> DaemonError {
        let _ = self.with(|entry| entry.record.migration = None);
        self.core.containers.request_check(&self.id);
        let outcome = match &e {
            placed_host::enact::Error::Failed {
                rollback: Rollback::Restored,
                ..
            } => Outcome::RolledBack,
            _ => Outcome::Failed,
        };
        self.count_migration(outcome, None);
        self.core.telemetry.metrics.error("enact");
        DaemonError::Host {
            doing: "moving",
            container,
            source: Box::new(e),
        }
    }

    /// Records the move on the container (where it comes from, where it goes) and shows it
    /// migrating.
    fn start_migration(
        &self,
        from: &Cpuset,
        to: &Assigned,
        mode: &Mode,
    ) -> Result<(), DaemonError> {
        // Only a freeze placed makes is journalled: a container someone else froze
        // (`docker pause`) stays frozen through the move, and recovery after a crash must
        // not thaw it behind their back.
        let frozen = matches!(mode, Mode::Fast { freeze: true, .. }) && {
            let cg = self.with(|e| e.container.cgroup.clone())?;
            !self.core.node.host.is_frozen(&cg).unwrap_or(false)
        };
        self.with(|e| {
            if e.record.original.is_none() {
                e.record.original = Some(from.clone());
            }
            e.record.migration = Some(Migration {
                from: from.clone(),
                to: to.clone(),
                started_unix_ms: now_ms(),
                frozen,
            });
        })?;
        self.set_state(
            Lifecycle::Migrating,
            &format!("moving to {} ({} mode)", label(to), mode.name()),
        );
        Ok(())
    }

    /// The host's move, off the async threads. Shutdown, and `Unmanage`, ask an in-flight
    /// migration to stop at its next chunk (the container's token is a child of the
    /// daemon's).
    async fn apply(
        &self,
        to: &Assigned,
        mode: &Mode,
    ) -> Result<Result<ApplyReport, placed_host::enact::Error>, DaemonError> {
        let (container, stop, in_host) =
            self.with(|e| (e.container.clone(), e.cancel.clone(), e.in_host.clone()))?;
        // Taken before the move starts and released by the blocking work itself, so that it
        // is held until the move has ended even if this future is dropped.
        let in_host = in_host.lock_owned().await;
        let cancel = Arc::new(AtomicBool::new(false));
        let flag = cancel.clone();
        let watcher = tokio::spawn(async move {
            stop.cancelled().await;
            flag.store(true, Ordering::Relaxed);
        });
        let opts = ApplyOptions {
            cancel: Some(cancel),
            hold: self.core.node.migration_hold.clone(),
            ..Default::default()
        };
        let core = self.core.clone();
        let (cpus, mems, mode) = (to.cpus.clone(), to.mems.clone(), mode.clone());
        let r = tokio::task::spawn_blocking(move || {
            let _in_host = in_host;
            core.node
                .host
                .apply_with(&container, &cpus, &mems, &mode, &opts)
        })
        .await;
        watcher.abort();
        joined("moving a container", r)
    }

    /// A completed move: the container holds its new units, aggressive containers share
    /// what it left, and the metrics and the migration-speed estimate learn from it.
    fn finish_migration(
        &self,
        to: &Assigned,
        report: &ApplyReport,
        elapsed: Duration,
    ) -> Result<(), DaemonError> {
        let bytes = report.migration.bytes_moved;
        let sharer = self.with(|e| {
            e.record.assigned = Some(to.clone());
            e.record.migration = None;
            // Placed again: an earlier change from outside no longer describes it.
            e.record.overridden = None;
            matches!(e.record.policy, Policy::Aggressive)
        })?;
        // On v2 the container's cpuset files may exist only from this move on.
        self.core.containers.watch_list.notify_one();
        // What nobody holds changed: aggressive containers share it anew (and leave units
        // this one now holds).
        if !sharer {
            self.core.containers.wake_sharers(&self.id);
        }
        self.count_migration(Outcome::Ok, Some((bytes, elapsed)));
        self.core
            .telemetry
            .metrics
            .per_container
            .moved(&self.id, bytes);
        self.core
            .node
            .learn_migration_speed(bytes, report.migration.duration.as_secs_f64());
        Ok(())
    }

    fn count_migration(&self, outcome: Outcome, moved: Option<(u64, Duration)>) {
        let m = &self.core.telemetry.metrics;
        m.migrations.get_or_create(&OutcomeLabel { outcome }).inc();
        if let Some((bytes, elapsed)) = moved {
            m.migration_bytes.inc_by(bytes);
            m.migration_seconds.observe(elapsed.as_secs_f64());
        }
    }
}
