//! Unix-socket connections whose `:authority` the HTTP/2 layer would refuse, repaired.
//!
//! gRPC clients derive `:authority` from the target they dial. On a Unix socket some make
//! it from the socket path: gRPC C-core (Python, C++, Ruby, PHP) sends
//! `run%2Fplaced%2Fplaced.sock` for `unix:/run/placed/placed.sock`, and clients that pass
//! the path through send `/run/placed/placed.sock`. h2, under tonic, checks the field with
//! `http::uri::Authority` before any service sees the request, and refuses both (a `%` in a
//! host name, a `/`) with a stream reset (PROTOCOL_ERROR), logged at debug level only.
//! The client sees `INTERNAL: RST_STREAM with error code 1`.
//!
//! h2 has no setting for this, so each connection on the socket is read through a
//! [`Rewriter`] that puts `localhost` (what grpc-go and recent C-core send on Unix sockets)
//! in place of an authority h2 would refuse, and logs that it did. Nothing else changes:
//! on a Unix socket the authority names nothing (there is no virtual hosting), and the
//! TCP listener is not wrapped (clients dialing host:port send a valid authority).
//! docs/api.md has what was found and how other clients and servers deal with it.

mod block;
mod frames;

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tonic::transport::server::Connected;

pub use block::BlockError;
pub use frames::{RewriteError, Rewriter};

/// Read size from the socket.
const CHUNK: usize = 16 << 10;

/// A connection read through a [`Rewriter`]; writes go straight to the socket.
#[derive(Debug)]
pub struct Repaired<S> {
    inner: S,
    rewriter: Rewriter,
    /// Rewritten bytes not yet handed to the server; `served` of them already were.
    ready: Vec<u8>,
    served: usize,
    /// Set once the connection has been refused: every later read fails too.
    failed: bool,
}

impl<S> Repaired<S> {
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            rewriter: Rewriter::default(),
            ready: Vec::new(),
            served: 0,
            failed: false,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Repaired<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.served < this.ready.len() {
                let n = buf.remaining().min(this.ready.len() - this.served);
                buf.put_slice(&this.ready[this.served..this.served + n]);
                this.served += n;
                if this.served == this.ready.len() {
                    this.ready.clear();
                    this.served = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.failed {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "connection refused earlier",
                )));
            }
            let mut raw = [0u8; CHUNK];
            let mut raw_buf = ReadBuf::new(&mut raw);
            match Pin::new(&mut this.inner).poll_read(cx, &mut raw_buf) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) if raw_buf.filled().is_empty() => {
                    return Poll::Ready(Ok(()));
                }
                Poll::Ready(Ok(())) => {
                    if let Err(e) = this.rewriter.push(raw_buf.filled(), &mut this.ready) {
                        this.failed = true;
                        tracing::warn!(
                            error = %placed_core::text::error_line(&e),
                            "refused a connection on the Unix socket: its HTTP/2 header block could not be read, so its :authority could not be checked"
                        );
                        return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, e)));
                    }
                    if let Some(authority) = this.rewriter.take_refused() {
                        // Debug, not info: every Python client does this, once per connection.
                        tracing::debug!(
                            authority = %String::from_utf8_lossy(&authority),
                            "a client on the Unix socket sent an :authority the HTTP/2 layer refuses (made from the socket path, as gRPC C-core does); this connection is served as authority \"localhost\""
                        );
                    }
                }
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Repaired<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

impl<S: Connected> Connected for Repaired<S> {
    type ConnectInfo = S::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.inner.connect_info()
    }
}
