//! `placectl watch`: lifecycle events as they happen, until interrupted, until the daemon
//! ends the stream, or until the reader goes away (`placectl watch | head -1`), noticed
//! without waiting for the next event.

use placed_proto::v1 as pb;
use serde_json::{Value, json};

use super::labels::SelectorArgs;
use super::{Action, Call, Client, Failure, Format, Reply, Typed};
use crate::cli::daemon::{outcome_json, override_json, rfc3339, state_name, unix_ms};
use crate::cli::{self, Exit, StatusError};

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    container: Option<String>,
    /// Start with the events kept after this sequence number (the last one seen).
    #[arg(long, value_name = "SEQUENCE")]
    after: Option<u64>,
    #[command(flatten)]
    selector: SelectorArgs,
}

impl Typed for Args {
    fn validate(self) -> Result<Action, Failure> {
        Action::daemon(pb::WatchRequest {
            container: self.container.unwrap_or_default(),
            resume_after_sequence: self.after.unwrap_or(0),
            label_selector: self.selector.to_wire(),
            ..pb::WatchRequest::default()
        })
    }
}

/// The daemon went away under an open watch (stopped, restarted, killed): the connection
/// closed without the daemon ending the stream.
#[derive(Debug, thiserror::Error)]
#[error("placed went away during the watch (it stopped, restarted or was killed): watch again once it is back{}", resume(*.last_sequence))]
pub struct DaemonGone {
    /// The last event's sequence number, to resume after.
    pub last_sequence: Option<u64>,
}

fn resume(last: Option<u64>) -> String {
    last.map_or_else(String::new, |s| format!(", with --after {s}"))
}

impl Call for pb::WatchRequest {
    fn call<'a>(&'a self, c: &'a mut Client, format: Format) -> Reply<'a> {
        Box::pin(async move {
            let mut stream = c
                .watch(self.clone())
                .await
                .map_err(StatusError)?
                .into_inner();
            let reader_gone = cli::reader::gone();
            tokio::pin!(reader_gone);
            let mut last_sequence = None;
            loop {
                let next = tokio::select! {
                    m = stream.message() => m.map_err(|s| {
                        if cli::exit::lost_connection(&s) {
                            Failure::from(DaemonGone { last_sequence })
                        } else {
                            StatusError(s).into()
                        }
                    })?,
                    () = &mut reader_gone => return Ok(Exit::Success),
                    _ = tokio::signal::ctrl_c() => return Ok(Exit::Success),
                };
                let Some(e) = next else {
                    return Ok(Exit::Success);
                };
                last_sequence = Some(e.sequence);
                let line = if format.json {
                    let mut s = serde_json::to_string(&event_json(&e))?;
                    s.push('\n');
                    s
                } else {
                    render_event(&e)
                };
                match cli::write_out(&line) {
                    cli::Output::Open => {}
                    // The reader went away (`| head -1`): done, successfully.
                    cli::Output::Closed => return Ok(Exit::Success),
                    cli::Output::Failed => return Ok(Exit::Failed),
                }
            }
        })
    }

    fn streams(&self) -> bool {
        true
    }
}

fn kind_name(k: i32) -> &'static str {
    match pb::EventKind::try_from(k) {
        Ok(pb::EventKind::Discovered) => "discovered",
        Ok(pb::EventKind::State) => "state",
        Ok(pb::EventKind::Predicted) => "predicted",
        Ok(pb::EventKind::MigrationStarted) => "migration-started",
        Ok(pb::EventKind::MigrationFinished) => "migration-finished",
        Ok(pb::EventKind::Vanished) => "vanished",
        Ok(pb::EventKind::Error) => "error",
        Ok(pb::EventKind::Overridden) => "overridden",
        Ok(pb::EventKind::Unmanaged) => "unmanaged",
        Ok(pb::EventKind::Outcome) => "outcome",
        Ok(pb::EventKind::ModelStopped) => "model-stopped",
        Ok(pb::EventKind::ModelEnabled) => "model-enabled",
        Ok(pb::EventKind::Reserved) => "reserved",
        Ok(pb::EventKind::Released) => "released",
        Ok(pb::EventKind::Claimed) => "claimed",
        Ok(pb::EventKind::Bookmark) => "bookmark",
        _ => "unknown",
    }
}

pub fn render_event(e: &pb::WatchResponse) -> String {
    format!(
        "{} #{} {} {} [{}] {}{}\n",
        rfc3339(e.time.as_ref()),
        e.sequence,
        e.container,
        kind_name(e.kind),
        state_name(e.state),
        e.message,
        if e.placement_id.is_empty() {
            String::new()
        } else {
            format!(" ({})", e.placement_id)
        }
    )
}

/// One JSON line per event.
pub fn event_json(e: &pb::WatchResponse) -> Value {
    json!({
        "schema": "placed.event/v1",
        "sequence": e.sequence,
        "unix_ms": unix_ms(e.time.as_ref()), "time": rfc3339(e.time.as_ref()), "container": e.container, "kind": kind_name(e.kind),
        "state": state_name(e.state),
        "placement": if e.placement_id.is_empty() { Value::Null } else { json!(e.placement_id) },
        "message": e.message,
        "cpuset_override": e.cpuset_override.as_ref().map_or(Value::Null, override_json),
        "outcome": e.outcome.as_ref().map_or(Value::Null, outcome_json),
        "labels": e.labels,
    })
}
