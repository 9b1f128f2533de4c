//! Operations that a second caller joins instead of being refused: a `Place` asking for
//! what a `Place` in flight already does, concurrent `Predict`s of one container. The first
//! caller starts the work in a task of the daemon's own, so that it outlives any caller
//! that gives up (a move is never abandoned half-way because its client's deadline
//! passed); every caller waits for the one result.
//!
//! Issue 24: concurrent `Predict`s of one container answered ABORTED ("busy: predicting")
//! even when the answer was an immediate failure; issue 28: a `placectl place` that timed
//! out left its move going on, and a retry ordered a second one behind it.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::watch;

use super::entry::Entry;
use super::error::DaemonError;
use super::handle::Handle;
use super::inflight::InFlight;

/// Runs `work` on the container, or joins the operation with the same `key` already in
/// flight in the entry's `slot`. An operation of another key in flight is not joined:
/// `work` runs and meets the container's lock like any request.
pub(crate) async fn join_or_start<T, F>(
    handle: &Handle,
    slot: fn(&mut Entry) -> &mut Option<InFlight<T>>,
    key: String,
    work: F,
) -> Result<T, DaemonError>
where
    T: Clone + Send + Sync + 'static,
    F: Future<Output = Result<T, DaemonError>> + Send + 'static,
{
    let joined = handle.with(|e| match slot(e) {
        Some(f) if f.key == key => Some(Ok(f.done.clone())),
        Some(_) => None,
        None => {
            let (tx, rx) = watch::channel(None);
            *slot(e) = Some(InFlight {
                key: key.clone(),
                done: rx,
            });
            Some(Err(tx))
        }
    })?;
    let mut done = match joined {
        None => return work.await,
        Some(Ok(rx)) => rx,
        Some(Err(tx)) => {
            let rx = tx.subscribe();
            let (owner, own_key) = (handle.clone(), key);
            handle.core.tasks.spawn(async move {
                let result = work.await.map_err(Arc::new);
                tx.send_replace(Some(result));
                // The slot is freed by the operation that filled it, once its result is out.
                let _ = owner.with(|e| {
                    if slot(e).as_ref().is_some_and(|f| f.key == own_key) {
                        *slot(e) = None;
                    }
                });
            });
            rx
        }
    };
    let outcome = done
        .wait_for(Option::is_some)
        .await
        .map_err(|_| DaemonError::Stopping)?
        .clone();
    match outcome {
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) => Err(DaemonError::Shared(e)),
        None => Err(DaemonError::Stopping),
    }
}
