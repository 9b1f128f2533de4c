//! Every stream ends when the daemon stops.
//!
//! The servers' graceful stop waits for every open stream, and some never end by
//! themselves: a `grpc.health.v1` `Health/Watch` sent NOT_SERVING at SIGTERM and then stayed
//! open, and the daemon with it, for as long as its client did (new clients hung
//! meanwhile); a reflection stream or a `ReportMetric` upload lasts as long as its client
//! wants. [`Ends`] wraps the body of every request and response (`super::front`): once
//! the daemon stops,
//! a response body that has nothing more ready ends with UNAVAILABLE ("placed is
//! stopping"), and a request body still being sent ends with the same status, which the
//! handler reading it sees. What a stream had ready before is sent first: the NOT_SERVING
//! health sends at stop, and placed's own `Watch` end with its resume point
//! ([`super::watch`]), which is set before this takes over.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http_body::{Frame, SizeHint};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tonic::body::Body;

/// What a stream ended at stop gets.
fn stopping() -> tonic::Status {
    super::status::Refusal::new(
        tonic::Code::Unavailable,
        "STOPPING",
        "placed is stopping: call again once it is back",
    )
    .status()
}

/// Which body of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Request,
    Response,
}

/// A body that ends at stop.
pub struct Ends {
    inner: Body,
    side: Side,
    stop: Pin<Box<WaitForCancellationFutureOwned>>,
    done: bool,
}

impl std::fmt::Debug for Ends {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ends")
            .field("side", &self.side)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl Ends {
    pub fn new(inner: Body, side: Side, stop: &CancellationToken) -> Self {
        Self {
            inner,
            side,
            stop: Box::pin(stop.clone().cancelled_owned()),
            done: false,
        }
    }
}

impl http_body::Body for Ends {
    type Data = bytes::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        if self.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(None) => {
                self.done = true;
                Poll::Ready(None)
            }
            Poll::Ready(Some(Ok(frame))) => {
                if frame.is_trailers() {
                    self.done = true;
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                self.done = true;
                Poll::Ready(Some(Err(e)))
            }
            Poll::Pending => {
                if self.stop.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.done = true;
                match self.side {
                    Side::Request => Poll::Ready(Some(Err(stopping()))),
                    Side::Response => {
                        let mut trailers = http::HeaderMap::new();
                        match stopping().add_header(&mut trailers) {
                            Ok(()) => Poll::Ready(Some(Ok(Frame::trailers(trailers)))),
                            Err(status) => Poll::Ready(Some(Err(status))),
                        }
                    }
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt as _;

    /// A body with one frame ready, then nothing for ever.
    fn stuck(first: &'static [u8]) -> Body {
        use tokio_stream::StreamExt as _;
        let frames = tokio_stream::iter([Ok::<_, tonic::Status>(Frame::data(
            bytes::Bytes::from_static(first),
        ))])
        .chain(tokio_stream::pending());
        Body::new(http_body_util::StreamBody::new(frames))
    }

    #[tokio::test]
    async fn a_response_sends_what_it_had_then_ends_unavailable_at_stop() {
        let stop = CancellationToken::new();
        let mut body = Ends::new(stuck(b"ready"), Side::Response, &stop);
        stop.cancel();
        let first = body.frame().await.unwrap().unwrap();
        assert_eq!(first.into_data().unwrap(), "ready");
        let last = body.frame().await.unwrap().unwrap();
        let trailers = last.into_trailers().unwrap();
        assert_eq!(trailers["grpc-status"], "14");
        assert!(body.frame().await.is_none());
        assert!(http_body::Body::is_end_stream(&body));
    }

    #[tokio::test]
    async fn a_request_still_sent_at_stop_fails_unavailable() {
        let stop = CancellationToken::new();
        let mut body = Ends::new(stuck(b"sample"), Side::Request, &stop);
        body.frame().await.unwrap().unwrap();
        let pending = body.frame();
        tokio::pin!(pending);
        tokio::select! {
            biased;
            f = &mut pending => panic!("ended before the stop: {f:?}"),
            () = tokio::task::yield_now() => {}
        }
        stop.cancel();
        let err = pending.await.unwrap().unwrap_err();
        assert_eq!(err.code(), tonic::Code::Unavailable);
        assert!(err.message().starts_with("placed is stopping"), "{err:?}");
    }
}
