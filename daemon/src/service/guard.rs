//! A connection held within its listener's limits: it fails its reads when it sends
//! nothing for too long, or when its table closes it to make room ([`super::admit`]), and
//! gives its slot back when dropped.
//!
//! Two bounds, so that a silent connection cannot hold a slot for long: the first bytes
//! (the HTTP/2 preface, or the request line on the metrics port) must arrive within the
//! handshake bound, a few seconds; after that a connection may be quiet for up to
//! [`IDLE`], which covers two of the server's HTTP/2 keepalive pings ([`KEEPALIVE`]) going
//! unanswered. Before, a connection that sent nothing kept its slot for 60 s, and 256 of
//! them renewed every minute held a listener.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};
use tokio_util::sync::WaitForCancellationFutureOwned;

use super::admit::Slot;

/// Connections each TCP listener (and the metrics endpoint) holds at once, and the Unix
/// socket unless `grpc.max_unix_connections` says otherwise.
pub const MAX_CONNECTIONS: usize = 256;
/// How long an established connection may send nothing: it covers a request header and two
/// of the server's HTTP/2 keepalive pings ([`KEEPALIVE`]) going unanswered.
pub const IDLE: Duration = Duration::from_secs(60);
/// How often the gRPC server pings an HTTP/2 connection that is otherwise quiet; a live
/// client's answer counts as traffic.
pub const KEEPALIVE: Duration = Duration::from_secs(20);
/// How long a new connection may take to finish its TLS handshake and to send its first
/// bytes, unless `grpc.handshake_timeout` says otherwise.
pub const HANDSHAKE: Duration = Duration::from_secs(5);

/// A connection that fails its reads once it is silent for too long or closed by its
/// table, and holds its table slot until it is dropped.
#[derive(Debug)]
pub struct Guarded<S> {
    inner: S,
    idle: Duration,
    /// Whether any byte has arrived: until then the deadline is the handshake bound.
    started: bool,
    deadline: Pin<Box<Sleep>>,
    closed: Pin<Box<WaitForCancellationFutureOwned>>,
    slot: Slot,
}

impl<S> Guarded<S> {
    /// `inner`, holding `slot`, which must send its first bytes within `first` and then
    /// never be silent for `idle`.
    pub fn new(inner: S, slot: Slot, first: Duration, idle: Duration) -> Self {
        Self {
            inner,
            idle,
            started: false,
            deadline: Box::pin(tokio::time::sleep(first)),
            closed: Box::pin(slot.closed()),
            slot,
        }
    }

    /// The connection inside.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Guarded<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.closed.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "connection closed to make room for another: it had sent nothing, or nothing for a while",
            )));
        }
        let before = buf.filled().len();
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    self.started = true;
                    self.slot.touch();
                    let next = Instant::now() + self.idle;
                    self.deadline.as_mut().reset(next);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => match self.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    if self.started {
                        "connection idle for too long"
                    } else {
                        "connection sent nothing within the handshake bound"
                    },
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::admit::{Evict, Peer, Rules, Table};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    fn table(evict: Evict) -> std::sync::Arc<Table> {
        Table::new(Rules {
            listener: "test",
            cap: 1,
            cap_setting: "none",
            per_peer: 1,
            per_peer_setting: "none",
            reserved: 0,
            reserved_for: "nobody",
            evict,
        })
    }

    fn slot(t: &std::sync::Arc<Table>) -> Slot {
        t.admit(Peer::Uid(1), false).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_connection_times_out_and_a_talking_one_does_not() {
        let t = table(Evict::Never);
        let (mut client, server) = tokio::io::duplex(64);
        let mut guarded = Guarded::new(server, slot(&t), HANDSHAKE, Duration::from_secs(60));
        let mut buf = [0u8; 8];
        // Its first bytes within the handshake bound, then traffic every 40 s keeps it
        // open past the 60 s bound.
        tokio::time::advance(HANDSHAKE - Duration::from_millis(1)).await;
        for _ in 0..3 {
            client.write_all(b"x").await.unwrap();
            assert_eq!(guarded.read(&mut buf).await.unwrap(), 1);
            tokio::time::advance(Duration::from_secs(40)).await;
        }
        // Then silence: the pending read fails once 60 s have passed since the last
        // bytes, not before.
        client.write_all(b"x").await.unwrap();
        assert_eq!(guarded.read(&mut buf).await.unwrap(), 1);
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

    /// 256 idle connections renewed every minute held a listener: one that sends nothing
    /// at all is now closed after the handshake bound, not the idle one.
    #[tokio::test(start_paused = true)]
    async fn a_connection_that_never_speaks_is_closed_after_the_handshake_bound() {
        let t = table(Evict::Never);
        let (_client, server) = tokio::io::duplex(64);
        let mut guarded = Guarded::new(server, slot(&t), HANDSHAKE, IDLE);
        let started = Instant::now();
        let err = guarded.read(&mut [0u8; 8]).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), HANDSHAKE);
        drop(guarded);
        assert!(t.is_empty(), "the slot was not given back");
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_its_table_closes_fails_its_pending_read() {
        let t = table(Evict::Quiet(Duration::ZERO));
        let (_client, server) = tokio::io::duplex(64);
        let mut guarded = Guarded::new(server, slot(&t), HANDSHAKE, IDLE);
        let mut buf = [0u8; 8];
        let read = guarded.read(&mut buf);
        tokio::pin!(read);
        tokio::select! {
            biased;
            r = &mut read => panic!("read ended early: {r:?}"),
            () = tokio::task::yield_now() => {}
        }
        // A newcomer takes its place.
        let _newer = slot(&t);
        let err = read.await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::ConnectionAborted);
    }
}
