//! The persistence room: the state file, written from snapshots, one write at a time, and
//! never more writes than changes need.
//!
//! Every change to a container's record is saved before the caller is answered. Saves used
//! to queue one write each: six clients whose `Manage` calls timed out after a few
//! milliseconds left a queue of writes behind them that kept SIGTERM waiting for minutes.
//! Now each save asks for a generation, and a write covers every generation asked for
//! before it took its snapshot: callers that queued behind a write find their change
//! already written and return at once, so a burst of any size costs at most two writes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use prometheus_client::metrics::counter::Counter;

use crate::state::{State, StateError, StateStore};

use super::error::{DaemonError, joined};

/// The state file and its writer.
#[derive(Debug)]
pub(crate) struct Persistence {
    store: StateStore,
    /// The last generation asked for: each save asks for the next.
    asked: AtomicU64,
    /// The last generation written, and the error of that write if it failed (the callers
    /// it covered all get it).
    written: Mutex<(u64, Option<Arc<StateError>>)>,
    /// Orders writes: each takes its snapshot while holding it, so the last write is always
    /// the newest state. Held by a task of its own for the whole write, so that a caller
    /// that gives up (a cancelled request) cannot let a second write start beside the first.
    order: tokio::sync::Mutex<()>,
    /// Writes made (`placed_state_writes_total`).
    writes: Counter,
}

impl Persistence {
    pub fn new(store: StateStore, writes: Counter) -> Self {
        Self {
            store,
            asked: AtomicU64::new(0),
            written: Mutex::new((0, None)),
            order: tokio::sync::Mutex::new(()),
            writes,
        }
    }

    pub fn store(&self) -> &StateStore {
        &self.store
    }

    /// Saves what `snapshot` returns, unless a write that started after this call already
    /// covered it. Returns once the change is on disk (or its write failed).
    pub async fn save(
        self: &Arc<Self>,
        snapshot: impl FnOnce() -> State + Send + 'static,
    ) -> Result<(), DaemonError> {
        let wanted = self.asked.fetch_add(1, Ordering::SeqCst) + 1;
        let this = self.clone();
        let save = tokio::spawn(async move {
            let _order = this.order.lock().await;
            if let Some(done) = this.covered(wanted) {
                return Ok(done);
            }
            // Every change asked for until now is in the snapshot taken next.
            let generation = this.asked.load(Ordering::SeqCst);
            let state = snapshot();
            let store = this.store.clone();
            let result = tokio::task::spawn_blocking(move || store.save(&state)).await;
            this.writes.inc();
            let error = match result {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(Arc::new(e)),
                Err(source) => {
                    return Err(DaemonError::Task {
                        doing: "writing the state file",
                        source,
                    });
                }
            };
            *this.written.lock().unwrap_or_else(|p| p.into_inner()) = (generation, error.clone());
            Ok(error)
        });
        match joined("writing the state file", save.await)?? {
            None => Ok(()),
            Some(e) => Err(DaemonError::State(e)),
        }
    }

    /// Writes made so far.
    #[cfg(test)]
    pub fn writes(&self) -> u64 {
        self.writes.get()
    }

    /// The outcome of the write that covered generation `wanted`, if one did.
    fn covered(&self, wanted: u64) -> Option<Option<Arc<StateError>>> {
        let written = self.written.lock().unwrap_or_else(|p| p.into_inner());
        (written.0 >= wanted).then(|| written.1.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn state(n: usize) -> State {
        State {
            written_unix_ms: 0,
            fingerprint: "mc1-test".into(),
            containers: Vec::new(),
            unmanaged: (0..n).map(|i| format!("/c{i}")).collect(),
            reservations: Vec::new(),
            stopped_models: Vec::new(),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn saves_queued_behind_a_write_are_covered_by_one_write_of_the_newest_state() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path().join("state.json"));
        let p = Arc::new(Persistence::new(store.clone(), Counter::default()));
        // What the registry would hold: each caller changes it, then saves.
        let changes = Arc::new(AtomicUsize::new(0));
        // A write in progress: every save below queues behind it, as the saves of calls
        // cancelled one after the other did.
        let writing = p.order.lock().await;
        let mut saves = Vec::new();
        for _ in 0..100 {
            let (p, changes) = (p.clone(), changes.clone());
            saves.push(tokio::spawn(async move {
                changes.fetch_add(1, Ordering::SeqCst);
                let now = changes.clone();
                p.save(move || state(now.load(Ordering::SeqCst))).await
            }));
        }
        while p.asked.load(Ordering::SeqCst) < 100 {
            tokio::task::yield_now().await;
        }
        drop(writing);
        for s in saves {
            s.await.unwrap().unwrap();
        }
        assert_eq!(p.writes(), 1, "one write covers the whole queue");
        let loaded = store.load("mc1-test").unwrap().unwrap();
        assert_eq!(loaded.unmanaged.len(), 100, "the newest state is on disk");
        // A later change is written again.
        p.save(|| state(101)).await.unwrap();
        assert_eq!(p.writes(), 2);
    }
}
