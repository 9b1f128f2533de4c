//! Lifecycle events, numbered, kept for a while, broadcast to `Watch` streams and logged.
//!
//! Every event gets the next sequence number and goes into a bounded history, under one
//! lock with the broadcast, so that a watcher resuming after sequence N gets the kept
//! events after N and then the live ones with none lost or repeated between the two.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;
use tokio::sync::broadcast;

use crate::state::{Lifecycle, OverrideRecord};

/// Events kept for resuming watchers unless `grpc.watch_history` says otherwise.
pub const DEFAULT_HISTORY: usize = 1024;

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
    /// The container's cpuset was changed outside placed.
    Overridden,
    /// Handed back by an orchestrator (`Unmanage`) and forgotten.
    Unmanaged,
    /// Units held for a container not started yet (the event's `container` is the
    /// reservation's id).
    Reserved,
    /// A hold ended without a claim: it expired, or was released (the reservation's id).
    Released,
    /// A container claimed a hold: it starts on the reserved units.
    Claimed,
    /// A decision set against the watch measurement that followed it (the event's
    /// `outcome`).
    Outcome,
    /// The live gate stopped a model: containers on it are observed, not moved (the
    /// event's `container` is the container whose outcome tripped it).
    ModelStopped,
    /// An operator enabled a stopped model again (`container` is the model's id).
    ModelEnabled,
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
    /// An `Overridden` event's cpusets, expected and found, and what the daemon did.
    pub cpuset_override: Option<OverrideRecord>,
    /// An `Outcome` event's decision and what was measured after it.
    pub outcome: Option<placed_models::live::Outcome>,
    /// The container's labels (a reservation's, for its events), for watchers filtering
    /// on them.
    pub labels: BTreeMap<String, String>,
}

/// An event with its place in the daemon's sequence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sequenced {
    pub sequence: u64,
    pub event: Event,
}

/// Why a watcher cannot resume where it asked to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResumeError {
    #[error(
        "events after sequence {after} are no longer kept: the oldest kept is {oldest} (the daemon keeps the last {kept} events)"
    )]
    Expired {
        after: u64,
        oldest: u64,
        kept: usize,
    },
    #[error("sequence {after} was never issued by this daemon: the last event is {last}")]
    NeverIssued { after: u64, last: u64 },
}

/// The kept events after a resume point, then the live ones.
#[derive(Debug)]
pub struct Feed {
    pub backlog: Vec<Arc<Sequenced>>,
    pub live: broadcast::Receiver<Arc<Sequenced>>,
}

#[derive(Debug)]
struct History {
    /// The number the next event gets.
    next: u64,
    kept: VecDeque<Arc<Sequenced>>,
    capacity: usize,
}

#[derive(Debug, Clone)]
pub struct Events {
    tx: broadcast::Sender<Arc<Sequenced>>,
    history: Arc<Mutex<History>>,
}

impl Default for Events {
    fn default() -> Self {
        Self::with_history(DEFAULT_HISTORY)
    }
}

impl Events {
    /// Keeps the last `capacity` events (at least one). A watcher that falls that far
    /// behind the live broadcast is told so.
    ///
    /// Numbering starts at the current time in microseconds since the epoch, so that the
    /// numbers of a restarted daemon are larger than any its predecessor issued: a client
    /// resuming with an old number is told its events are gone instead of silently
    /// skipping some (unless the clock went back across the restart).
    pub fn with_history(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        let first = u64::try_from(now_ms().max(1))
            .unwrap_or(1)
            .saturating_mul(1000);
        Self {
            tx: broadcast::channel(capacity).0,
            history: Arc::new(Mutex::new(History {
                next: first,
                kept: VecDeque::with_capacity(capacity),
                capacity,
            })),
        }
    }

    fn history(&self) -> MutexGuard<'_, History> {
        // Holders only push, pop and clone: a panic cannot leave a half-made change.
        self.history.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn send(&self, event: Event) {
        tracing::info!(
            container = %event.container,
            kind = ?event.kind,
            state = event.state.name(),
            placement = event.placement.as_deref().unwrap_or("-"),
            "{}",
            event.message
        );
        let mut h = self.history();
        let sequenced = Arc::new(Sequenced {
            sequence: h.next,
            event,
        });
        h.next += 1;
        if h.kept.len() == h.capacity {
            h.kept.pop_front();
        }
        h.kept.push_back(sequenced.clone());
        // No receiver is fine: nobody is watching.
        let _ = self.tx.send(sequenced);
    }

    /// The number of the last event issued (one less than the first, before any).
    pub fn last_sequence(&self) -> u64 {
        self.history().next - 1
    }

    /// Live events from now on (`after = None`), or the kept events after `after` first.
    pub fn feed(&self, after: Option<u64>) -> Result<Feed, ResumeError> {
        let h = self.history();
        let live = self.tx.subscribe();
        let Some(after) = after else {
            return Ok(Feed {
                backlog: Vec::new(),
                live,
            });
        };
        let last = h.next - 1;
        if after > last {
            return Err(ResumeError::NeverIssued { after, last });
        }
        let oldest = h.kept.front().map_or(h.next, |e| e.sequence);
        if after + 1 < oldest {
            return Err(ResumeError::Expired {
                after,
                oldest,
                kept: h.capacity,
            });
        }
        Ok(Feed {
            backlog: h
                .kept
                .iter()
                .filter(|e| e.sequence > after)
                .cloned()
                .collect(),
            live,
        })
    }
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(n: usize) -> Event {
        Event {
            unix_ms: 0,
            container: format!("c{n}"),
            kind: EventKind::State,
            state: Lifecycle::Watched,
            placement: None,
            message: String::new(),
            cpuset_override: None,
            outcome: None,
            labels: BTreeMap::new(),
        }
    }

    fn names(events: &[Arc<Sequenced>]) -> Vec<String> {
        events.iter().map(|e| e.event.container.clone()).collect()
    }

    #[test]
    fn a_resumed_feed_has_the_kept_events_after_the_point_then_the_live_ones() {
        let events = Events::with_history(4);
        let start = events.last_sequence();
        for n in 0..3 {
            events.send(event(n));
        }
        let mut feed = events.feed(Some(start + 1)).unwrap();
        assert_eq!(names(&feed.backlog), ["c1", "c2"]);
        events.send(event(3));
        let live = feed.live.try_recv().unwrap();
        assert_eq!(live.sequence, start + 4);
        assert_eq!(live.event.container, "c3");
        // Resuming at the newest event: nothing kept to replay, live from there.
        let feed = events.feed(Some(events.last_sequence())).unwrap();
        assert!(feed.backlog.is_empty());
    }

    #[test]
    fn resume_points_older_than_the_history_or_never_issued_are_refused() {
        let events = Events::with_history(2);
        let start = events.last_sequence();
        // Before any event, the point just before the first is the only valid one.
        assert!(events.feed(Some(start)).unwrap().backlog.is_empty());
        for n in 0..5 {
            events.send(event(n));
        }
        // Kept: the last two (start+4, start+5); resuming after start+3 loses nothing.
        assert_eq!(
            names(&events.feed(Some(start + 3)).unwrap().backlog),
            ["c3", "c4"]
        );
        assert_eq!(
            events.feed(Some(start + 2)).unwrap_err(),
            ResumeError::Expired {
                after: start + 2,
                oldest: start + 4,
                kept: 2
            }
        );
        assert_eq!(
            events.feed(Some(start + 6)).unwrap_err(),
            ResumeError::NeverIssued {
                after: start + 6,
                last: start + 5
            }
        );
    }

    #[test]
    fn a_restarted_daemon_numbers_after_its_predecessor() {
        let before = Events::default();
        before.send(event(0));
        let last = before.last_sequence();
        // A second history, as a restart makes, in a later millisecond.
        std::thread::sleep(std::time::Duration::from_millis(2));
        let after = Events::default();
        assert!(after.last_sequence() > last);
        assert!(matches!(
            after.feed(Some(last)),
            Err(ResumeError::Expired { .. })
        ));
    }
}
