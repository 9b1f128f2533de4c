//! Lifecycle events, broadcast to `Watch` streams and logged.

use serde::Serialize;
use tokio::sync::broadcast;

use crate::state::Lifecycle;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Discovered,
    State,
    Predicted,
    MigrationStarted,
    MigrationFinished,
    Vanished,
    Error,
}

/// One event about one container.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    pub unix_ms: i64,
    pub container: String,
    pub kind: EventKind,
    pub state: Lifecycle,
    pub placement: Option<String>,
    pub message: String,
}

/// Events are dropped for a watcher that falls this far behind (it is told how many).
const BACKLOG: usize = 1024;

#[derive(Debug, Clone)]
pub struct Events {
    tx: broadcast::Sender<Event>,
}

impl Default for Events {
    fn default() -> Self {
        Self {
            tx: broadcast::channel(BACKLOG).0,
        }
    }
}

impl Events {
    pub fn send(&self, event: Event) {
        tracing::info!(
            container = %event.container,
            kind = ?event.kind,
            state = event.state.name(),
            placement = event.placement.as_deref().unwrap_or("-"),
            "{}",
            event.message
        );
        // No receiver is fine: nobody is watching.
        let _ = self.tx.send(event);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.tx.subscribe()
    }
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
