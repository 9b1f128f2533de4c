//! The runtime told of placed's own moves: after placed moves a container it took through
//! NRI (or one claims the units held for it), UpdateContainers with the same cpus and mems,
//! so the runtime's record agrees and a restart of the container keeps its placement.

use placed_core::reconcile::Sets;
use placed_nri::{Update, Updater};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use crate::lifecycle::{Daemon, EventKind};

use super::intent::{RUNTIME_ID, VIA};

/// Follows the daemon's events until `stop`.
pub async fn follow(daemon: Daemon, updater: Updater, stop: CancellationToken) {
    let mut live = match daemon.events(None) {
        Ok(feed) => feed.live,
        // Live events only: no resume point, so nothing can have expired.
        Err(e) => {
            tracing::error!(error = %e, "cannot follow the daemon's events: moves are not told to the runtime");
            return;
        }
    };
    loop {
        let event = tokio::select! {
            () = stop.cancelled() => return,
            e = live.recv() => e,
        };
        let event = match event {
            Ok(e) => e,
            Err(RecvError::Lagged(n)) => {
                tracing::warn!(
                    missed = n,
                    "fell behind the daemon's events: telling the runtime every NRI container's cpuset again"
                );
                tell(&daemon, &updater, None).await;
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        if matches!(
            event.event.kind,
            EventKind::MigrationFinished | EventKind::Claimed | EventKind::Overridden
        ) {
            tell(&daemon, &updater, Some(&event.event.container)).await;
        }
    }
}

/// Sends the cpusets of `only` (a record id), or of every container taken through NRI.
async fn tell(daemon: &Daemon, updater: &Updater, only: Option<&str>) {
    // One container's view when an event names it, not a copy of every record.
    let views = match only {
        Some(id) => daemon.container(id).into_iter().collect(),
        None => daemon.containers(),
    };
    let updates: Vec<Update> = views
        .into_iter()
        .filter(|v| v.record.labels.get(VIA).map(String::as_str) == Some("nri"))
        .filter_map(|v| {
            let id = v.record.labels.get(RUNTIME_ID)?.clone();
            let a = v.record.assigned?;
            Some(Update {
                container_id: id,
                sets: Sets {
                    cpus: a.cpus,
                    mems: a.mems,
                },
            })
        })
        .collect();
    if updates.is_empty() {
        return;
    }
    if let Err(e) = updater.update(&updates).await {
        // The next Synchronize (a reconnection) sends them again.
        tracing::warn!(error = %placed_core::text::error_line(&e), "the runtime was not told of a move");
    }
}
