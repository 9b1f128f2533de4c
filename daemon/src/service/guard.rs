//! Limits on the listeners' connections (TCP and the Unix socket), so that idle or
//! abandoned ones cannot take the API down.
//!
//! Without them, about 1,010 idle connections (to the TLS port before its handshake, or to
//! the metrics port, which any local user reaches) used up the default 1,024 descriptors:
//! the root-only Unix socket hung too, and discovery failed with EMFILE. Each listener
//! now holds at most a fixed number of connections (one past the cap is accepted and closed
//! at once, keeping descriptors for the Unix socket and the cgroup tree), and a connection
//! that sends nothing for a while (no TLS handshake, no HTTP/2 frame, no answer to the
//! server's keepalive pings, no request header) is closed. The Unix socket holds
//! `grpc.max_unix_connections` (256 by default) the same way: a local client that opens
//! connections in a loop meets the cap, not the descriptor limit.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};
use tokio_stream::{Stream, StreamExt as _};

/// Connections each TCP listener holds at once, and the Unix socket unless
/// `grpc.max_unix_connections` says otherwise.
pub const MAX_CONNECTIONS: usize = 256;
/// How long a connection may send nothing: it covers a TLS handshake, a request header, and
/// two of the server's HTTP/2 keepalive pings ([`KEEPALIVE`]) going unanswered.
pub const IDLE: Duration = Duration::from_secs(60);
/// How often the gRPC server pings an HTTP/2 connection that is otherwise quiet; a live
/// client's answer counts as traffic.
pub const KEEPALIVE: Duration = Duration::from_secs(20);

/// A connection that fails its reads once nothing has arrived for `idle`, and holds one
/// of its listener's connection slots until it is dropped.
#[derive(Debug)]
pub struct Guarded<S> {
    inner: S,
    idle: Duration,
    deadline: Pin<Box<Sleep>>,
    _slot: OwnedSemaphorePermit,
}

impl<S> Guarded<S> {
    fn new(inner: S, idle: Duration, slot: OwnedSemaphorePermit) -> Self {
        Self {
            inner,
            idle,
            deadline: Box::pin(tokio::time::sleep(idle)),
            _slot: slot,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Guarded<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    let next = Instant::now() + self.idle;
                    self.deadline.as_mut().reset(next);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => match self.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "connection idle for too long",
                ))),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Guarded<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

impl<S: tonic::transport::server::Connected> tonic::transport::server::Connected for Guarded<S> {
    type ConnectInfo = S::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.inner.connect_info()
    }
}

/// The connections of `incoming`, each guarded, at most `cap` at once: one past the cap is
/// closed as soon as it is accepted (logged), so that its descriptor is given back.
pub fn guard<S, E>(
    incoming: impl Stream<Item = Result<S, E>>,
    what: &'static str,
    cap: usize,
    idle: Duration,
) -> impl Stream<Item = Result<Guarded<S>, E>> {
    let slots = Arc::new(Semaphore::new(cap));
    incoming.filter_map(move |conn| match conn {
        Err(e) => Some(Err(e)),
        Ok(s) => match slots.clone().try_acquire_owned() {
            Ok(slot) => Some(Ok(Guarded::new(s, idle, slot))),
            Err(_) => {
                tracing::warn!(
                    listener = what,
                    cap,
                    "connection refused: the listener holds as many as it may"
                );
                None
            }
        },
    })
}

/// The metrics endpoint's listener for axum, with the same cap and idle bound: a request
/// header trickled in more slowly than `idle` per byte is the only way to hold a slot.
#[derive(Debug)]
pub struct GuardedListener {
    inner: tokio::net::TcpListener,
    slots: Arc<Semaphore>,
    idle: Duration,
}

impl GuardedListener {
    pub fn new(inner: tokio::net::TcpListener, cap: usize, idle: Duration) -> Self {
        Self {
            inner,
            slots: Arc::new(Semaphore::new(cap)),
            idle,
        }
    }
}

impl axum::serve::Listener for GuardedListener {
    type Io = Guarded<tokio::net::TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (stream, addr) = match self.inner.accept().await {
                Ok(c) => c,
                Err(e) => {
                    // Out of descriptors or a connection reset before accept: wait a
                    // little rather than spin.
                    tracing::debug!(error = %e, "metrics accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            match self.slots.clone().try_acquire_owned() {
                Ok(slot) => return (Guarded::new(stream, self.idle, slot), addr),
                Err(_) => tracing::warn!(
                    listener = "metrics",
                    "connection refused: the listener holds as many as it may"
                ),
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    fn slot() -> OwnedSemaphorePermit {
        Arc::new(Semaphore::new(1)).try_acquire_owned().unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_connection_times_out_and_a_talking_one_does_not() {
        let (mut client, server) = tokio::io::duplex(64);
        let mut guarded = Guarded::new(server, Duration::from_secs(60), slot());
        let mut buf = [0u8; 8];
        // Traffic every 40 s keeps it open past the 60 s bound.
        for _ in 0..3 {
            tokio::time::advance(Duration::from_secs(40)).await;
            client.write_all(b"x").await.unwrap();
            assert_eq!(guarded.read(&mut buf).await.unwrap(), 1);
        }
        // Then silence: the pending read fails once 60 s have passed, not before.
        let read = guarded.read(&mut buf);
        tokio::pin!(read);
        tokio::select! {
            biased;
            r = &mut read => panic!("read ended early: {r:?}"),
            () = tokio::time::sleep(Duration::from_secs(59)) => {}
        }
        let err = read.await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    }

    #[tokio::test]
    async fn one_connection_past_the_cap_is_closed_and_its_slot_comes_back() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let incoming = guard(
            tokio_stream::wrappers::TcpListenerStream::new(listener),
            "test",
            2,
            Duration::from_secs(60),
        );
        tokio::pin!(incoming);
        let mut clients = Vec::new();
        let mut held = Vec::new();
        for _ in 0..2 {
            clients.push(tokio::net::TcpStream::connect(addr).await.unwrap());
            held.push(incoming.next().await.unwrap().unwrap());
        }
        // The third is accepted and closed: its client reads end of stream.
        let mut third = tokio::net::TcpStream::connect(addr).await.unwrap();
        let next = incoming.next();
        tokio::pin!(next);
        let mut buf = [0u8; 1];
        tokio::select! {
            n = third.read(&mut buf) => assert_eq!(n.unwrap(), 0),
            c = &mut next => panic!("a third connection was let in: {c:?}"),
        }
        // Once one held connection goes, a new one is let in.
        held.pop();
        let _fourth = tokio::net::TcpStream::connect(addr).await.unwrap();
        next.await.unwrap().unwrap();
    }
}
