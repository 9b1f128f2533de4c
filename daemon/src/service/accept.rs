//! Accepting connections for the gRPC servers, within each listener's limits
//! ([`super::admit`]): a task per listener accepts, decides, and hands each admitted
//! connection to its server through a channel; it stops, closing the listener, when the
//! daemon stops, so that clients arriving then are refused by the kernel instead of
//! waiting in the backlog for a server that no longer accepts.
//!
//! - Unix socket: the peer's uid from SO_PEERCRED; at most `grpc.max_connections_per_peer`
//!   per uid, and of `grpc.max_unix_connections` a reserve only root may take, so that
//!   no local user can lock root out.
//! - TCP: TLS handshakes first, in a table of their own (at most [`HANDSHAKES`], at most
//!   [`HANDSHAKES_PER_PEER`] per address; a new one takes the place of the oldest of the
//!   busiest address when full), each within the handshake bound. A finished handshake
//!   moves to the established table: with client certificates (`grpc.tls.client_ca`) a
//!   connection is authenticated and takes any of its [`MAX_CONNECTIONS`] places;
//!   without, at most `grpc.max_connections_per_peer` per address. Connections that have not
//!   authenticated can only ever fill the handshake table, never the other.
//! - Every accepted TCP socket has TCP_NODELAY: a gRPC answer is a few small writes (headers,
//!   message, trailers), and with Nagle's algorithm against the client's delayed ACK a
//!   `GetStatus` over TLS took about 45 ms instead of a fraction of one.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;
use tokio_util::sync::CancellationToken;

use super::admit::{Evict, Peer, RefusalLog, Rules, Table};
use super::authority::Repaired;
use super::guard::{Guarded, IDLE, MAX_CONNECTIONS};
use super::refuse::Refuser;

/// TLS handshakes in progress at once on a TCP listener.
pub const HANDSHAKES: usize = 128;
/// TLS handshakes in progress at once from one address.
pub const HANDSHAKES_PER_PEER: usize = 16;
/// Of the Unix socket's connections, those only root may take (at most a quarter of them).
pub const ROOT_RESERVE: usize = 16;

/// Connections admitted to a server, waiting to be served.
const QUEUE: usize = 64;

/// A listener's connection limits (`[grpc]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections on the Unix socket.
    pub unix: usize,
    /// Connections of one unprivileged peer: a uid other than root on the Unix socket, an
    /// address without a client certificate on TCP.
    pub per_peer: usize,
    /// How long a TLS handshake, and then a connection's first bytes, may take.
    pub handshake: Duration,
}

/// A Unix socket connection as its server reads it.
pub type UnixConn = Guarded<Repaired<UnixStream>>;
/// A TCP connection as its server reads it.
pub type TcpConn = Guarded<TlsStream<TcpStream>>;

/// The Unix socket's rules.
pub fn unix_rules(limits: &ConnectionLimits) -> Rules {
    Rules {
        listener: "the Unix socket",
        cap: limits.unix,
        cap_setting: "grpc.max_unix_connections",
        per_peer: limits.per_peer,
        per_peer_setting: "grpc.max_connections_per_peer",
        reserved: ROOT_RESERVE.min(limits.unix / 4),
        reserved_for: "root",
        evict: Evict::Never,
    }
}

/// Accepts on the Unix socket until `stop`; the admitted connections come out of the
/// returned channel.
pub fn unix(
    listener: UnixListener,
    limits: ConnectionLimits,
    stop: CancellationToken,
) -> mpsc::Receiver<UnixConn> {
    let (tx, rx) = mpsc::channel(QUEUE);
    let table = Table::new(unix_rules(&limits));
    let log = RefusalLog::new("grpc unix");
    let refuser = Refuser::new(limits.handshake);
    tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                () = stop.cancelled() => return,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        accept_failed("grpc unix", &e).await;
                        continue;
                    }
                },
            };
            let uid = match stream.peer_cred() {
                Ok(cred) => cred.uid(),
                Err(e) => {
                    tracing::warn!(error = %e, "Unix socket connection closed: its peer's credentials cannot be read (SO_PEERCRED)");
                    continue;
                }
            };
            match table.admit(Peer::Uid(uid), uid == 0) {
                Ok(slot) => {
                    let conn = Guarded::new(Repaired::new(stream), slot, limits.handshake, IDLE);
                    if tx.send(conn).await.is_err() {
                        return;
                    }
                }
                Err(why) => {
                    log.refused(&why);
                    refuser.refuse(Repaired::new(stream), why.to_string());
                }
            }
        }
    });
    rx
}

/// The TCP listener's two tables: handshakes, and established connections.
fn tcp_tables(limits: &ConnectionLimits) -> (Arc<Table>, Arc<Table>) {
    let handshakes = Table::new(Rules {
        listener: "the TCP listener's TLS handshakes",
        cap: HANDSHAKES,
        cap_setting: "fixed",
        per_peer: HANDSHAKES_PER_PEER,
        per_peer_setting: "fixed",
        reserved: 0,
        reserved_for: "nobody",
        // A handshake proves nothing until it ends: the oldest of the busiest address
        // makes room for a new one, so that a flood mostly closes its own connections.
        evict: Evict::Quiet(Duration::ZERO),
    });
    let established = Table::new(Rules {
        listener: "the TCP listener",
        cap: MAX_CONNECTIONS,
        cap_setting: "fixed",
        per_peer: limits.per_peer,
        per_peer_setting: "grpc.max_connections_per_peer",
        reserved: 0,
        reserved_for: "nobody",
        evict: Evict::Never,
    });
    (handshakes, established)
}

/// Accepts on TCP with TLS until `stop`; the admitted connections come out of the returned
/// channel. `authenticated` says whether a finished handshake proves a client certificate
/// (`grpc.tls.client_ca`).
pub fn tcp(
    listener: TcpListener,
    tls: tokio_rustls::TlsAcceptor,
    authenticated: bool,
    limits: ConnectionLimits,
    stop: CancellationToken,
) -> mpsc::Receiver<TcpConn> {
    let (tx, rx) = mpsc::channel(QUEUE);
    let (handshakes, established) = tcp_tables(&limits);
    let log = RefusalLog::new("grpc tcp");
    let refuser = Refuser::new(limits.handshake);
    tokio::spawn(async move {
        loop {
            let (stream, addr) = tokio::select! {
                () = stop.cancelled() => return,
                accepted = listener.accept() => match accepted {
                    Ok(c) => c,
                    Err(e) => {
                        accept_failed("grpc tcp", &e).await;
                        continue;
                    }
                },
            };
            let stream = match configure(stream) {
                Ok(s) => s,
                Err(e) => {
                    tracing::debug!(error = %e, %addr, "TCP connection closed: its socket options cannot be set");
                    continue;
                }
            };
            let peer = Peer::Addr(addr.ip());
            let Ok(pending) = handshakes.admit(peer, false) else {
                continue;
            };
            let (tls, established, tx, log, refuser, stop) = (
                tls.clone(),
                established.clone(),
                tx.clone(),
                log.clone(),
                refuser.clone(),
                stop.clone(),
            );
            tokio::spawn(async move {
                let closed = pending.closed();
                let stream = tokio::select! {
                    () = stop.cancelled() => return,
                    () = closed => return,
                    done = tokio::time::timeout(limits.handshake, tls.accept(stream)) => match done {
                        Ok(Ok(s)) => s,
                        Ok(Err(e)) => return handshake_failed(addr, &e.to_string()),
                        Err(_) => return handshake_failed(addr, "not finished within grpc.handshake_timeout"),
                    },
                };
                drop(pending);
                match established.admit(peer, authenticated) {
                    Ok(slot) => {
                        let conn = Guarded::new(stream, slot, limits.handshake, IDLE);
                        let _ = tx.send(conn).await;
                    }
                    Err(why) => {
                        log.refused(&why);
                        refuser.refuse(stream, why.to_string());
                    }
                }
            });
        }
    });
    rx
}

/// An accepted TCP socket as the daemon serves it: TCP_NODELAY set.
pub fn configure(stream: TcpStream) -> std::io::Result<TcpStream> {
    stream.set_nodelay(true)?;
    Ok(stream)
}

fn handshake_failed(addr: SocketAddr, why: &str) {
    // Debug: anyone who reaches the port can fail a handshake, as often as they like.
    tracing::debug!(%addr, error = why, "TLS handshake failed; connection closed");
}

/// After a failed accept: out of descriptors, or a connection reset before it was
/// accepted. Waits a little rather than spin.
pub async fn accept_failed(listener: &'static str, e: &std::io::Error) {
    tracing::debug!(listener, error = %e, "accept failed");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

#[cfg(test)]
mod tests;
