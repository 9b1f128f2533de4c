//! The metrics endpoint's listener: connections let in within limits, as the gRPC
//! listeners' are ([`crate::service::admit`]).
//!
//! Any local user reaches this port, and a scrape carries no credentials: at most
//! [`PER_PEER`] connections per address, [`MAX_CONNECTIONS`] in all; the request must begin
//! within the handshake bound; and when the endpoint is full, a connection that has sent
//! nothing yet, or nothing for that long (an idle keep-alive between scrapes), is closed
//! to let a new scrape in. A connection that still cannot come in is answered `503 Service
//! Unavailable` with the reason in text, instead of a bare reset.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use crate::service::admit::{Evict, Peer, Refusal, RefusalLog, Rules, Table};
use crate::service::guard::{Guarded, HANDSHAKE, IDLE, MAX_CONNECTIONS};

/// Connections one address holds at once.
pub const PER_PEER: usize = 32;
/// Refusals answered at once; past this a refused connection is closed unanswered.
const ANSWERING: usize = 32;

/// The endpoint's limits.
pub fn rules() -> Rules {
    Rules {
        listener: "the metrics endpoint",
        cap: MAX_CONNECTIONS,
        cap_setting: "fixed",
        per_peer: PER_PEER,
        per_peer_setting: "fixed",
        reserved: 0,
        reserved_for: "nobody",
        evict: Evict::Quiet(HANDSHAKE),
    }
}

/// The endpoint's listener for axum.
#[derive(Debug)]
pub struct Admitted {
    inner: TcpListener,
    table: Arc<Table>,
    log: Arc<RefusalLog>,
    answering: Arc<Semaphore>,
    first: Duration,
}

impl Admitted {
    pub fn new(inner: TcpListener) -> Self {
        Self {
            inner,
            table: Table::new(rules()),
            log: RefusalLog::new("metrics"),
            answering: Arc::new(Semaphore::new(ANSWERING)),
            first: HANDSHAKE,
        }
    }
}

impl axum::serve::Listener for Admitted {
    type Io = Guarded<TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (stream, addr) = match self.inner.accept().await {
                Ok(c) => c,
                Err(e) => {
                    crate::service::accept::accept_failed("metrics", &e).await;
                    continue;
                }
            };
            let Ok(stream) = crate::service::accept::configure(stream) else {
                continue;
            };
            match self.table.admit(Peer::Addr(addr.ip()), false) {
                Ok(slot) => return (Guarded::new(stream, slot, self.first, IDLE), addr),
                Err(why) => {
                    self.log.refused(&why);
                    if let Ok(permit) = self.answering.clone().try_acquire_owned() {
                        tokio::spawn(async move {
                            let _permit = permit;
                            let _ =
                                tokio::time::timeout(HANDSHAKE, unavailable(stream, &why)).await;
                        });
                    }
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// Answers a refused connection `503` with why, then reads what the client sent until it
/// closes, so that closing does not reset the connection under the answer.
async fn unavailable(mut stream: TcpStream, why: &Refusal) -> std::io::Result<()> {
    let body = format!("placed refused this connection: {why}\n");
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nRetry-After: 5\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await?;
    let mut sink = [0u8; 1024];
    while stream.read(&mut sink).await? > 0 {}
    Ok(())
}
