//! What stands in front of every service of a listener, before routing: the listener's
//! [`Access`] decided by the call's path (a call it does not allow is answered
//! PERMISSION_DENIED), the call's deadline (one passed is answered DEADLINE_EXCEEDED,
//! [`super::deadline`]), a request message that does not decode answered INVALID_ARGUMENT
//! instead of tonic's INTERNAL, and the daemon's stop applied to the body of every request
//! and response it lets through ([`Ends`]), so that every stream ends when the daemon stops.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio_util::sync::CancellationToken;
use tonic::body::Body;

use super::access::{self, Access};
use super::deadline;
use super::ending::{Ends, Side};

/// The layer: a listener's access, and the daemon's stop.
#[derive(Debug, Clone)]
pub struct Front {
    access: Access,
    stop: CancellationToken,
}

impl Front {
    pub fn new(access: Access, stop: CancellationToken) -> Self {
        Self { access, stop }
    }
}

impl<S> tower::Layer<S> for Front {
    type Service = Fronted<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Fronted {
            inner,
            front: self.clone(),
        }
    }
}

/// The services of a listener behind their [`Front`].
#[derive(Debug, Clone)]
pub struct Fronted<S> {
    inner: S,
    front: Front,
}

type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<S> tower::Service<http::Request<Body>> for Fronted<S>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<Body>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let path = request.uri().path();
        if !self.front.access.allows(path) {
            let answer = access::denied(path).into_http::<Body>();
            return Box::pin(std::future::ready(Ok(answer)));
        }
        let deadline = deadline::of(request.headers());
        if deadline.is_some_and(|d| d <= tokio::time::Instant::now()) {
            let answer = deadline::passed_before_start().into_http::<Body>();
            return Box::pin(std::future::ready(Ok(answer)));
        }
        let stop = self.front.stop.clone();
        let request = request.map(|b| Body::new(Ends::new(b, Side::Request, &stop)));
        let response = self.inner.call(request);
        Box::pin(async move {
            // This deadline was read before tonic's timer for the same grpc-timeout was
            // set, and the handler is polled before that timer: DEADLINE_EXCEEDED answers
            // first, and the handler is dropped here as tonic would drop it.
            let response = match deadline {
                None => response.await?,
                Some(at) => tokio::select! {
                    biased;
                    r = response => r?,
                    () = tokio::time::sleep_until(at) => {
                        return Ok(deadline::passed_while_running().into_http::<Body>());
                    }
                },
            };
            // tonic answers a request message that does not decode before any handler
            // runs, with INTERNAL ("a bug"): it is the caller's error.
            if let Some(status) = tonic::Status::from_header_map(response.headers())
                .as_ref()
                .and_then(super::status::malformed)
            {
                return Ok(status.into_http::<Body>());
            }
            Ok(response.map(|b| Body::new(Ends::new(b, Side::Response, &stop))))
        })
    }
}
