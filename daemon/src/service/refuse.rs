//! Telling a refused gRPC client why, in its own protocol: its requests are answered with
//! RESOURCE_EXHAUSTED and the reason, then the connection ends with GOAWAY.
//!
//! A connection past a listener's limit used to be accepted and closed at once: clients saw
//! `Broken pipe`, `Connection reset by peer` or `tls handshake eof`, nothing that named a
//! limit. A refused connection is now served by a minimal HTTP/2 server (hyper) for at most
//! the handshake bound, at most [`AT_ONCE`] of them per listener; past that it is closed as
//! before, so that refusing costs little however many clients are refused.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Notify, Semaphore};

/// Refused connections answered at once per listener.
pub const AT_ONCE: usize = 32;

/// Answers refused connections of one listener.
#[derive(Debug, Clone)]
pub struct Refuser {
    permits: Arc<Semaphore>,
    within: Duration,
}

impl Refuser {
    /// Answers at most [`AT_ONCE`] connections at a time, each for at most `within`.
    pub fn new(within: Duration) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(AT_ONCE)),
            within,
        }
    }

    /// Answers every request of `io` with RESOURCE_EXHAUSTED and `why`, then ends the
    /// connection; or closes it at once when enough refusals are being answered already.
    pub fn refuse<IO>(&self, io: IO, why: String)
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let Ok(permit) = self.permits.clone().try_acquire_owned() else {
            return;
        };
        let within = self.within;
        tokio::spawn(async move {
            let _permit = permit;
            let _ = tokio::time::timeout(within, answer(io, why)).await;
        });
    }
}

async fn answer<IO>(io: IO, why: String)
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let answered = Arc::new(Notify::new());
    let service = {
        let answered = answered.clone();
        hyper::service::service_fn(move |_request| {
            answered.notify_one();
            let status = super::status::Refusal::new(
                tonic::Code::ResourceExhausted,
                "CONNECTION_LIMIT",
                format!("placed refused this connection: {why}"),
            )
            .status();
            std::future::ready(Ok::<_, Infallible>(status.into_http::<tonic::body::Body>()))
        })
    };
    let conn = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        () = answered.notified() => {}
    }
    // The answer is queued: GOAWAY lets it go out and takes no further request.
    conn.as_mut().graceful_shutdown();
    let _ = conn.await;
}
