//! `placectl report`: performance samples pushed for a container, from the arguments or
//! from stdin as lines arrive.

use placed_proto::v1 as pb;

use super::{Action, Call, Client, Failure, Format, Reply, Typed};
use crate::cli::{Exit, StatusError};

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    container: String,
    values: Vec<f64>,
}

impl Typed for Args {
    fn validate(self) -> Result<Action, Failure> {
        Action::daemon(self)
    }
}

impl Call for Args {
    fn call<'a>(&'a self, c: &'a mut Client, format: Format) -> Reply<'a> {
        Box::pin(report(c, format, &self.container, &self.values))
    }

    /// Samples piped in as they happen last as long as they last.
    fn streams(&self) -> bool {
        self.values.is_empty()
    }
}

/// Sends the given values, or one per line of stdin as each line arrives (stamped with the
/// time it was read, so a pipe's buffering does not shift it); rejected samples are a
/// failure.
async fn report(
    c: &mut Client,
    format: Format,
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
    let code = format.print(
        || serde_json::json!({"schema": "placed.report/v1", "accepted": r.accepted, "rejected": r.rejected, "last_error": r.last_error}),
        || format!("{} accepted, {} rejected{last}\n", r.accepted, r.rejected),
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
