//! Holds that end unclaimed: a task the daemon starts that sleeps until the next
//! reservation's deadline (on tokio's clock), releases what is due, says so and saves.

use std::sync::Arc;

use crate::state::{Lifecycle, ReservationRecord};

use super::core::Core;
use super::events::{Event, EventKind, now_ms};

#[derive(Debug)]
pub(crate) struct Expiry {
    core: Arc<Core>,
}

impl Expiry {
    pub fn new(core: &Arc<Core>) -> Self {
        Self { core: core.clone() }
    }

    /// Starts its task, which ends when the daemon stops.
    pub fn start(self) {
        let core = self.core;
        let tracker = core.tasks.clone();
        tracker.spawn(async move {
            loop {
                let next = core.reservations.next_deadline();
                tokio::select! {
                    _ = core.cancel.cancelled() => return,
                    _ = core.reservations.changed.notified() => {}
                    _ = async {
                        match next {
                            Some(at) => tokio::time::sleep_until(at).await,
                            None => std::future::pending().await,
                        }
                    } => {
                        let gone = core.reservations.take_expired(tokio::time::Instant::now());
                        release(&core, &gone, "expired unclaimed").await;
                    }
                }
            }
        });
    }
}

/// Says that the holds `gone` ended (`why`), and saves.
pub(crate) async fn release(core: &Arc<Core>, gone: &[ReservationRecord], why: &str) {
    if gone.is_empty() {
        return;
    }
    // Saved first: a watcher told of the release finds it in the state file.
    // Units just came free: aggressive containers may share them.
    core.containers.wake_sharers("");
    if let Err(e) = core.persist().await {
        tracing::error!(error = %e.line(), "cannot write the state file after a reservation ended");
    }
    for r in gone {
        tracing::info!(reservation = %r.id, units = ?r.assigned.units, "reservation {why}");
        core.telemetry.send(Event {
            unix_ms: now_ms(),
            container: r.id.clone(),
            kind: EventKind::Released,
            state: Lifecycle::Discovered,
            placement: r.assigned.placement.clone(),
            message: format!(
                "reservation {} {why}: units {:?} free again",
                r.id, r.assigned.units
            ),
            cpuset_override: None,
            outcome: None,
            labels: r.labels.clone(),
        });
    }
}
