//! What stands in front of every service of a listener, before routing: the listener's
//! [`Access`] decided by the call's path (a call it does not allow is answered
//! PERMISSION_DENIED), and the daemon's stop applied to the body of every request and
//! response it lets through ([`Ends`]), so that every stream ends when the daemon stops.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio_util::sync::CancellationToken;
use tonic::body::Body;

use super::access::{self, Access};
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
        let stop = self.front.stop.clone();
        let request = request.map(|b| Body::new(Ends::new(b, Side::Request, &stop)));
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await?;
            Ok(response.map(|b| Body::new(Ends::new(b, Side::Response, &stop))))
        })
    }
}
