//! The reservations room: allocation units held for containers that do not exist yet.
//!
//! An orchestrator asks where a new container should start and holds those units until
//! the container claims them (`Manage` with the reservation's id, or NRI's CreateContainer
//! for the container the reservation names) or the hold expires. Held units count as
//! taken for every other decision, the lifecycle's included. Expiry runs on tokio's clock
//! (paused in tests); the state file keeps the wall-clock time, so a restart honours the
//! hold's remaining time.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::state::ReservationRecord;

use super::events::now_ms;

/// One hold: what the state file keeps, and when it ends on tokio's clock.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    pub record: ReservationRecord,
    pub deadline: Instant,
}

#[derive(Debug, Default)]
pub(crate) struct Reservations {
    held: Mutex<BTreeMap<String, Held>>,
    /// A hold was added, claimed or released: the expiry task looks at the next deadline.
    pub changed: Notify,
    /// Makes ids unique within one run; the start time separates runs.
    counter: AtomicU64,
}

impl Reservations {
    /// Takes the lock. Holders never await or do I/O. Taken before the registry's, never
    /// after it, when a decision needs both (admission reads the units containers hold while
    /// it holds this lock, so that two admissions cannot hold the same units).
    pub fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Held>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new reservation's id.
    pub fn new_id(&self) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        format!("rsv-{:x}-{n}", now_ms())
    }

    /// Holds the ones a previous run left, each for what remains of its time (those past it
    /// are dropped).
    pub fn restore(&self, records: Vec<ReservationRecord>) -> Vec<ReservationRecord> {
        let now = now_ms();
        let mut expired = Vec::new();
        let mut held = self.lock();
        for r in records {
            let left = r.expires_unix_ms.saturating_sub(now);
            if left <= 0 {
                expired.push(r);
                continue;
            }
            let left = Duration::from_millis(u64::try_from(left).unwrap_or(0));
            held.insert(
                r.id.clone(),
                Held {
                    deadline: Instant::now() + left,
                    record: r,
                },
            );
        }
        drop(held);
        self.changed.notify_one();
        expired
    }

    /// What the state file keeps.
    pub fn records(&self) -> Vec<ReservationRecord> {
        self.lock().values().map(|h| h.record.clone()).collect()
    }

    /// Every unit held, by reservation id.
    pub fn units(&self) -> BTreeMap<usize, String> {
        units_of(&self.lock())
    }

    /// The reservation `id`.
    pub fn get(&self, id: &str) -> Option<ReservationRecord> {
        self.lock().get(id).map(|h| h.record.clone())
    }

    /// Removes and returns the reservation `id`.
    pub fn take(&self, id: &str) -> Option<ReservationRecord> {
        let taken = self.lock().remove(id).map(|h| h.record);
        if taken.is_some() {
            self.changed.notify_one();
        }
        taken
    }

    /// The reservation made for the container with runtime id `runtime_id`, if any.
    pub fn for_container(&self, runtime_id: &str) -> Option<String> {
        self.lock()
            .values()
            .find(|h| h.record.for_container.as_deref() == Some(runtime_id))
            .map(|h| h.record.id.clone())
    }

    /// Removes and returns the holds whose time is up at `now`.
    pub fn take_expired(&self, now: Instant) -> Vec<ReservationRecord> {
        let mut held = self.lock();
        let gone: Vec<String> = held
            .iter()
            .filter(|(_, h)| h.deadline <= now)
            .map(|(id, _)| id.clone())
            .collect();
        gone.into_iter()
            .filter_map(|id| held.remove(&id).map(|h| h.record))
            .collect()
    }

    /// When the next hold ends.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.lock().values().map(|h| h.deadline).min()
    }
}

/// The units the holds in `held` take, each with its reservation's id.
pub(crate) fn units_of(held: &BTreeMap<String, Held>) -> BTreeMap<usize, String> {
    held.values()
        .flat_map(|h| {
            h.record
                .assigned
                .units
                .iter()
                .map(|&u| (u, h.record.id.clone()))
        })
        .collect()
}
