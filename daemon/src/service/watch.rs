//! `Watch`: the kept events after the client's resume point, then the live ones; a
//! watcher that falls behind the live broadcast is ended with ABORTED and the sequence to
//! resume after, instead of silently losing events. At most `grpc.max_watchers` streams
//! are open at once ([`Watchers`]): each holds a broadcast receiver and its buffers, and
//! 10,000 streams took 78 MiB without a cap. When the daemon stops, every stream ends with
//! UNAVAILABLE and the sequence to resume after: the server's graceful stop waits for its
//! streams to end, and an event stream never ends by itself, so without it `placed` hung on
//! SIGTERM for as long as any watcher stayed connected.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use placed_proto::v1 as pb;
use prometheus_client::metrics::gauge::Gauge;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use tokio_stream::wrappers::errors::BroadcastStreamRecvError;
use tokio_stream::wrappers::{BroadcastStream, IntervalStream};
use tokio_stream::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;
use tonic::Status;

use crate::lifecycle::Daemon;
use crate::lifecycle::events::{Feed, ResumeError, Sequenced};
use crate::lifecycle::labels::Selector;

use super::convert;
use super::status::{RESUME_AFTER, Refusal};

pub type EventStream = Pin<Box<dyn Stream<Item = Result<pb::WatchResponse, Status>> + Send>>;

/// The `Watch` streams open now, at most `max` at once, counted in a gauge.
#[derive(Debug)]
pub struct Watchers {
    slots: Arc<Semaphore>,
    max: usize,
    open: Gauge,
    /// Cancelled when the daemon stops: every stream ends.
    closing: CancellationToken,
}

/// One open stream's place; given back when the stream is dropped (it ended, the client
/// cancelled it, or the connection went away).
#[derive(Debug)]
pub struct Slot {
    _permit: OwnedSemaphorePermit,
    open: Gauge,
    closing: CancellationToken,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.open.dec();
        super::reclaim::RECLAIM.closed();
    }
}

impl Watchers {
    pub fn new(max: usize, open: Gauge) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(max)),
            max,
            open,
            closing: CancellationToken::new(),
        }
    }

    /// Ends every stream, open or opened from now on: the daemon is stopping.
    pub fn close(&self) {
        self.closing.cancel();
    }

    /// A place for one more stream, or RESOURCE_EXHAUSTED naming the limit and its setting.
    pub fn claim(&self) -> Result<Slot, Status> {
        let permit = self.slots.clone().try_acquire_owned().map_err(|_| {
            Refusal::new(
                tonic::Code::ResourceExhausted,
                "TOO_MANY_WATCHERS",
                format!(
                    "{} Watch streams are open, as many as this daemon serves at once (grpc.max_watchers); close one, or raise the setting and restart placed",
                    self.max
                ),
            )
            .status()
        })?;
        self.open.inc();
        super::reclaim::RECLAIM.opened();
        Ok(Slot {
            _permit: permit,
            open: self.open.clone(),
            closing: self.closing.clone(),
        })
    }
}

/// The stream for one `Watch` request, holding `slot` for as long as it lives.
pub fn stream(
    daemon: &Daemon,
    request: pb::WatchRequest,
    slot: Slot,
) -> Result<EventStream, Status> {
    let only = if request.container.is_empty() {
        None
    } else {
        Some(
            daemon
                .container(&request.container)
                .map_err(super::status_of)?
                .record
                .id,
        )
    };
    let selector = Selector::parse(&request.label_selector).map_err(super::status_of)?;
    let bookmarks = convert::duration_from_pb(
        request.bookmark_interval.as_ref(),
        "bookmark_interval",
        Duration::from_secs(1),
    )?;
    let after = (request.resume_after_sequence > 0).then_some(request.resume_after_sequence);
    let Feed { backlog, live } = daemon.events(after).map_err(resume_status)?;
    let wanted = move |e: &Sequenced| {
        only.as_ref().is_none_or(|id| *id == e.event.container) && selector.matches(&e.event.labels)
    };
    // The last sequence sent or passed over: where a client resumes after this stream
    // ends, lagged or stopped. Backlog sequences all precede the live ones.
    let last = Arc::new(AtomicU64::new(
        backlog
            .last()
            .map_or_else(|| daemon.last_event(), |e| e.sequence),
    ));
    let backlog = tokio_stream::iter(backlog).map(Ok::<Arc<Sequenced>, Status>);
    let in_live = Arc::clone(&last);
    let live = BroadcastStream::new(live).map(move |item| match item {
        Ok(e) => {
            in_live.store(e.sequence, Ordering::Relaxed);
            Ok(e)
        }
        Err(BroadcastStreamRecvError::Lagged(n)) => {
            let resume = in_live.load(Ordering::Relaxed);
            Err(Refusal::new(
                tonic::Code::Aborted,
                "WATCHER_FELL_BEHIND",
                format!(
                    "this watcher fell behind and {n} events were dropped: watch again with resume_after_sequence = {resume}"
                ),
            )
            .with(RESUME_AFTER, resume)
            .status())
        }
    });
    // When an event last went out, for the bookmarks.
    let started = tokio::time::Instant::now();
    let sent_ms = Arc::new(AtomicU64::new(0));
    let on_send = Arc::clone(&sent_ms);
    let events = backlog.chain(live).filter_map(move |item| match item {
        Ok(e) if wanted(&e) => {
            on_send.store(millis_since(started), Ordering::Relaxed);
            Some(Ok(convert::event(&e)))
        }
        Ok(_) => None,
        Err(status) => Some(Err(status)),
    });
    let marks = bookmark_stream(bookmarks, started, sent_ms, Arc::clone(&last));
    let closing = slot.closing.clone();
    let stopped = tokio_stream::once(()).then(move |()| {
        let (closing, last) = (closing.clone(), Arc::clone(&last));
        async move {
            closing.cancelled().await;
            let resume = last.load(Ordering::Relaxed);
            Err(Refusal::new(
                tonic::Code::Unavailable,
                "STOPPING",
                format!(
                    "placed is stopping: watch again once it is back, with resume_after_sequence = {resume}"
                ),
            )
            .with(RESUME_AFTER, resume)
            .status())
        }
    });
    let events = events.merge(stopped).merge(marks);
    // The stream ends after an error (a lagged watcher must reconnect to resume).
    let mut failed = false;
    let events = events.take_while(move |item| {
        // The slot lives in this closure, so as long as the stream does.
        let _held = &slot;
        let go_on = !failed;
        failed = item.is_err();
        go_on
    });
    Ok(Box::pin(events))
}

/// Milliseconds from `started` to now.
fn millis_since(started: tokio::time::Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A BOOKMARK every `every` in which nothing went out, carrying `last`: every event up to
/// it has been sent or passed over by the filters, so a watcher may resume after it.
fn bookmark_stream(
    every: Option<Duration>,
    started: tokio::time::Instant,
    sent_ms: Arc<AtomicU64>,
    last: Arc<AtomicU64>,
) -> Pin<Box<dyn Stream<Item = Result<pb::WatchResponse, Status>> + Send>> {
    let Some(every) = every else {
        return Box::pin(tokio_stream::empty());
    };
    let ticks = IntervalStream::new(tokio::time::interval_at(started + every, every));
    let every_ms = u64::try_from(every.as_millis()).unwrap_or(u64::MAX);
    Box::pin(ticks.filter_map(move |_| {
        let quiet = millis_since(started).saturating_sub(sent_ms.load(Ordering::Relaxed));
        (quiet >= every_ms).then(|| {
            sent_ms.store(millis_since(started), Ordering::Relaxed);
            Ok(pb::WatchResponse {
                sequence: last.load(Ordering::Relaxed),
                kind: pb::EventKind::Bookmark as i32,
                ..pb::WatchResponse::default()
            })
        })
    }))
}

fn resume_status(e: ResumeError) -> Status {
    let advice = "list the containers again (ListContainers) and watch from its event_sequence";
    let reason = match e {
        ResumeError::Expired { .. } => "RESUME_POINT_EXPIRED",
        ResumeError::NeverIssued { .. } => "RESUME_POINT_NEVER_ISSUED",
    };
    Refusal::new(tonic::Code::OutOfRange, reason, format!("{e}; {advice}")).status()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_cap_a_watcher_is_refused_naming_the_setting_and_a_dropped_one_frees_its_slot() {
        let open = Gauge::default();
        let w = Watchers::new(2, open.clone());
        let a = w.claim().unwrap();
        let _b = w.claim().unwrap();
        assert_eq!(open.get(), 2);
        let refused = w.claim().unwrap_err();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        assert!(
            refused.message().contains("grpc.max_watchers"),
            "{refused:?}"
        );
        assert!(
            refused.message().starts_with("2 Watch streams"),
            "{refused:?}"
        );
        drop(a);
        assert_eq!(open.get(), 1);
        let _c = w.claim().unwrap();
        assert_eq!(open.get(), 2);
    }
}
