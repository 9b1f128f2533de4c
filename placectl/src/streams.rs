//! The two streaming calls: `watch` (events out, until the reader goes away) and `report`
//! (samples in, from arguments or from stdin as lines arrive).

use placectl::cli::{self, Exit, StatusError};
use placed_proto::v1 as pb;

use crate::{Client, Failure, Output};

/// Streams events until the daemon ends the stream, Ctrl-C, or the reader goes away.
pub(crate) async fn watch(
    c: &mut Client,
    out: Output,
    container: Option<String>,
    after: Option<u64>,
) -> Result<Exit, Failure> {
    let mut stream = c
        .watch(pb::WatchRequest {
            container: container.unwrap_or_default(),
            resume_after_sequence: after.unwrap_or(0),
        })
        .await
        .map_err(StatusError)?
        .into_inner();
    loop {
        let next = tokio::select! {
            m = stream.message() => m.map_err(StatusError)?,
            _ = tokio::signal::ctrl_c() => return Ok(Exit::Success),
        };
        let Some(e) = next else {
            return Ok(Exit::Success);
        };
        let line = if out.json {
            let mut s = serde_json::to_string(&cli::daemon::event_json(&e))?;
            s.push('\n');
            s
        } else {
            cli::daemon::render_event(&e)
        };
        match cli::write_out(&line) {
            cli::Output::Open => {}
            // The reader went away (`| head -1`): done, successfully.
            cli::Output::Closed => return Ok(Exit::Success),
            cli::Output::Failed => return Ok(Exit::Failed),
        }
    }
}

/// Sends the given values, or one per line of stdin as each line arrives (stamped with the
/// time it was read, so a pipe's buffering does not shift it); rejected samples are a
/// failure.
pub(crate) async fn report(
    c: &mut Client,
    out: Output,
    container: &str,
    values: &[f64],
) -> Result<Exit, Failure> {
    let r = if values.is_empty() {
        let (tx, rx) = tokio::sync::mpsc::channel(1024);
        let owner = container.to_owned();
        // stdin is read on a thread of its own: a blocking read must not stall the runtime
        // that sends what came before it.
        let reader = std::thread::spawn(move || read_samples(&owner, &tx));
        let r = c
            .report_metric(tokio_stream::wrappers::ReceiverStream::new(rx))
            .await
            .map_err(StatusError)?
            .into_inner();
        // The stream ended, so the reader is done (end of input or a line it refused).
        reader
            .join()
            .map_err(|_| "the stdin reader panicked".to_owned())??;
        r
    } else {
        let samples: Vec<_> = values.iter().map(|&x| sample(container, x, None)).collect();
        c.report_metric(tokio_stream::iter(samples))
            .await
            .map_err(StatusError)?
            .into_inner()
    };
    let last = if r.last_error.is_empty() {
        String::new()
    } else {
        format!(" (last: {})", r.last_error)
    };
    let code = out.print(
        serde_json::json!({"schema": "placed.report/v1", "accepted": r.accepted, "rejected": r.rejected, "last_error": r.last_error}),
        format!("{} accepted, {} rejected{last}\n", r.accepted, r.rejected),
    )?;
    if r.rejected > 0 {
        return Err(format!(
            "{} of {} samples rejected: {}",
            r.rejected,
            r.accepted + r.rejected,
            r.last_error
        )
        .into());
    }
    Ok(code)
}

/// Sends one sample per non-empty line of stdin, stamped when read, until end of input, a
/// line that is not a number (named in the error), or the call ending.
fn read_samples(
    container: &str,
    tx: &tokio::sync::mpsc::Sender<pb::ReportMetricRequest>,
) -> Result<(), String> {
    for (n, line) in std::io::stdin().lines().enumerate() {
        let line = line.map_err(|e| format!("stdin: {e}"))?;
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        let taken = prost_types::Timestamp::from(std::time::SystemTime::now());
        let value: f64 = t
            .parse()
            .map_err(|_| format!("stdin line {}: {t:?} is not a number", n + 1))?;
        if tx
            .blocking_send(sample(container, value, Some(taken)))
            .is_err()
        {
            break;
        }
    }
    Ok(())
}

fn sample(
    container: &str,
    value: f64,
    time: Option<prost_types::Timestamp>,
) -> pb::ReportMetricRequest {
    pb::ReportMetricRequest {
        container: container.to_owned(),
        value,
        time,
    }
}
