//! ReportMetric: a client stream of pushed samples, each accepted or rejected alone, the
//! stream failing as a whole only where every sample would be lost.

use placed_core::fault::Fault;
use placed_proto::v1 as pb;
use tokio_stream::StreamExt;
use tonic::{Request, Response, Streaming};

use super::{Api, Refusal, StreamEnd, bad_request};
use crate::lifecycle::DaemonError;

/// A pushed sample's time, if it has one a clock can hold.
fn sample_time(
    time: Option<&prost_types::Timestamp>,
) -> Result<Option<std::time::SystemTime>, DaemonError> {
    time.map(|t| {
        std::time::SystemTime::try_from(*t).map_err(|e| DaemonError::BadRequest {
            field: "time",
            reason: e.to_string(),
        })
    })
    .transpose()
}

impl Api {
    pub(super) async fn do_report_metric(
        &self,
        request: Request<Streaming<pb::ReportMetricRequest>>,
    ) -> Result<Response<pb::ReportMetricResponse>, StreamEnd> {
        let daemon = self.daemon().map_err(StreamEnd::Answer)?.clone();
        let mut stream = request.into_inner();
        let mut accepted = 0u64;
        let mut rejected = 0u64;
        let mut last_error = String::new();
        loop {
            match stream.next().await {
                None => break,
                // The same argument error answers the same code on every call: a sample
                // naming no container is INVALID_ARGUMENT, not "no container ''".
                Some(Ok(sample)) if sample.container.is_empty() => {
                    return Err(StreamEnd::Answer(bad_request(
                        "container",
                        format!(
                            "the request names no container ({accepted} earlier samples of this stream were accepted)"
                        ),
                    )));
                }
                Some(Ok(sample)) => match sample_time(sample.time.as_ref())
                    .and_then(|taken| daemon.report(&sample.container, sample.value, taken))
                {
                    Ok(()) => accepted += 1,
                    // A container placed does not manage: the stream is aimed at the wrong
                    // daemon or an old name, and every sample would be lost, so it fails
                    // as a whole instead of counting rejections.
                    Err(e) if e.fault() == Fault::NotFound => {
                        let line = format!(
                            "{} ({accepted} earlier samples of this stream were accepted)",
                            e.line()
                        );
                        return Err(StreamEnd::Answer(
                            Refusal::new(tonic::Code::NotFound, e.reason(), line).status(),
                        ));
                    }
                    // One bad sample (NaN, a container not taking pushed metrics) is
                    // rejected alone: the stream goes on.
                    Err(e) => {
                        rejected += 1;
                        last_error = e.line();
                    }
                },
                // A message that does not decode is the caller's error; a client that went
                // away mid-stream waits for no answer (what arrived counts). Neither is
                // the daemon's error.
                Some(Err(status)) => {
                    tracing::debug!(%status, accepted, "metric stream ended by the client");
                    return Err(StreamEnd::Client(
                        crate::service::status::malformed(&status).unwrap_or(status),
                    ));
                }
            }
        }
        Ok(Response::new(pb::ReportMetricResponse {
            accepted,
            rejected,
            last_error,
        }))
    }
}
