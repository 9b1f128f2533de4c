//! `Watch`: the kept events after the client's resume point, then the live ones; a
//! watcher that falls behind the live broadcast is ended with ABORTED and the sequence to
//! resume after, instead of silently losing events.

use std::pin::Pin;
use std::sync::Arc;

use placed_proto::v1 as pb;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;
use tokio_stream::{Stream, StreamExt};
use tonic::Status;

use crate::lifecycle::Daemon;
use crate::lifecycle::events::{Feed, ResumeError, Sequenced};

use super::convert;

pub type EventStream = Pin<Box<dyn Stream<Item = Result<pb::WatchResponse, Status>> + Send>>;

/// The stream for one `Watch` request.
pub fn stream(daemon: &Daemon, request: pb::WatchRequest) -> Result<EventStream, Status> {
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
    let after = (request.resume_after_sequence > 0).then_some(request.resume_after_sequence);
    let Feed { backlog, live } = daemon.events(after).map_err(resume_status)?;
    let wanted = move |e: &Sequenced| only.as_ref().is_none_or(|id| *id == e.event.container);
    let mut last = backlog
        .last()
        .map_or_else(|| daemon.last_event(), |e| e.sequence);
    let backlog = tokio_stream::iter(backlog).map(Ok::<Arc<Sequenced>, Status>);
    let live = BroadcastStream::new(live).map(move |item| match item {
        Ok(e) => {
            last = e.sequence;
            Ok(e)
        }
        Err(BroadcastStreamRecvError::Lagged(n)) => Err(Status::aborted(format!(
            "this watcher fell behind and {n} events were dropped: watch again with resume_after_sequence = {last}"
        ))),
    });
    let events = backlog.chain(live).filter_map(move |item| match item {
        Ok(e) if wanted(&e) => Some(Ok(convert::event(&e))),
        Ok(_) => None,
        Err(status) => Some(Err(status)),
    });
    // The stream ends after an error (a lagged watcher must reconnect to resume).
    let mut failed = false;
    let events = events.take_while(move |item| {
        let go_on = !failed;
        failed = item.is_err();
        go_on
    });
    Ok(Box::pin(events))
}

fn resume_status(e: ResumeError) -> Status {
    let advice = "list the containers again (ListContainers) and watch from its event_sequence";
    Status::out_of_range(format!("{e}; {advice}"))
}
