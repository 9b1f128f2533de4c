//! The gRPC service (placed.v1) with standard health and reflection (v1 and v1alpha), on a
//! Unix socket and optionally on TCP with TLS.
//!
//! Handlers ([`api`]) convert requests into [`crate::lifecycle::Daemon`] calls; nothing
//! below them sees tonic types. Health reports NOT_SERVING until the daemon has restored
//! its state, so probes and orchestrators wait instead of failing. Connections on the Unix
//! socket are read through [`authority::Repaired`], so that clients that name the socket
//! path as `:authority` (gRPC C-core: Python, C++, Ruby, PHP) are served.
//!
//! In front of the servers: [`accept`] lets connections in within each listener's limits
//! ([`admit`]: per peer, with room kept for root and for authenticated clients), does TLS
//! itself, and answers refused ones with RESOURCE_EXHAUSTED ([`refuse`]); [`guard`] closes
//! connections that stay silent. In front of every service ([`front`]): [`access`] serves
//! a read-only listener only its read-only calls, and [`ending`] ends every stream when
//! the daemon stops. `Watch` streams are capped over all listeners ([`Limits`]). Memory freed when a
//! burst of connections and streams closes is given back to the system ([`reclaim`]).
//!
//! - `api`: the handlers; `convert`: daemon values to messages; `paging`: list pages and
//!   their tokens; `watch`: the event stream with resume.

pub mod accept;
pub mod access;
pub mod admit;
mod api;
pub mod authority;
mod convert;
mod deadline;
pub mod ending;
pub mod front;
pub mod guard;
pub mod listen;
mod orchestrate;
mod paging;
pub mod reclaim;
pub mod refuse;
mod status;
mod watch;

use placed_proto::v1::placed_service_server::{PlacedServiceServer, SERVICE_NAME};
use tokio_stream::StreamExt;
use tokio_util::sync::CancellationToken;
use tonic::transport::Server;
use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;

pub use access::Access;
pub use api::{Api, status_of};
pub use convert::metric_from_pb;

/// The service name health reports under (and "" for the whole server).
pub const SERVICE: &str = SERVICE_NAME;

/// Everything being served, before and after the daemon is ready.
#[derive(Debug, Clone)]
pub struct Serving {
    pub api: Api,
    health: HealthReporter,
    /// Cancelled once the daemon stops: every stream still open ends ([`ending`]).
    ending: CancellationToken,
    /// Whether health says SERVING: a stop before then sends nothing new to health
    /// watchers before their streams end.
    serving: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Serving {
    /// Marks the daemon ready: the API answers and health says SERVING.
    pub async fn ready(&self, daemon: crate::lifecycle::Daemon) {
        self.api.ready(daemon);
        self.serving
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.health
            .set_service_status(SERVICE, ServingStatus::Serving)
            .await;
        self.health
            .set_service_status("", ServingStatus::Serving)
            .await;
    }

    /// Marks the daemon as stopping: health says NOT_SERVING, and then every stream ends,
    /// so that the servers' graceful stop waits on none: placed's `Watch` streams with
    /// their resume point, health `Watch` streams once they have sent NOT_SERVING, and any
    /// other (reflection, a `ReportMetric` upload) with UNAVAILABLE.
    pub async fn stopping(&self) {
        self.api.stopping();
        if self
            .serving
            .swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            self.health
                .set_service_status(SERVICE, ServingStatus::NotServing)
                .await;
            self.health
                .set_service_status("", ServingStatus::NotServing)
                .await;
        }
        self.ending.cancel();
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("gRPC server on {what}")]
    Transport {
        what: String,
        #[source]
        source: tonic::transport::Error,
    },
    #[error("reflection service")]
    Reflection(#[source] tonic_reflection::server::Error),
    #[error("no random numbers to sign page tokens with (the system's getrandom failed)")]
    Random,
}

impl ServeError {
    /// Who has to act: ours (unusable TLS files are refused earlier, by [`listen`]).
    pub fn fault(&self) -> placed_core::fault::Fault {
        match self {
            Self::Transport { .. } | Self::Reflection(_) | Self::Random => {
                placed_core::fault::Fault::Internal
            }
        }
    }
}

/// What the listeners and streams may hold at once (`[grpc]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `Watch` streams over all listeners.
    pub max_watchers: usize,
    /// Connections per listener and per peer, and the handshake bound.
    pub connections: accept::ConnectionLimits,
}

impl Limits {
    pub fn of(grpc: &crate::config::GrpcConfig) -> Self {
        Self {
            max_watchers: grpc.max_watchers,
            connections: accept::ConnectionLimits {
                unix: grpc.max_unix_connections,
                per_peer: grpc.max_connections_per_peer,
                handshake: grpc.handshake_timeout,
            },
        }
    }
}

/// The API's listeners, bound.
#[derive(Debug)]
pub struct Listening {
    pub unix: tokio::net::UnixListener,
    pub tcp: Option<TcpListening>,
}

/// The TCP listener, with what its TLS needs.
#[derive(Debug)]
pub struct TcpListening {
    pub listener: tokio::net::TcpListener,
    pub tls: std::sync::Arc<tokio_rustls::rustls::ServerConfig>,
    /// Whether clients must present a certificate (`grpc.tls.client_ca`): then a finished
    /// handshake authenticates its client, and the listener serves every call.
    pub client_certificates: bool,
}

type Layers = tower::layer::util::Stack<front::Front, tower::layer::util::Identity>;

/// The server of one listener, whose callers have `access`, before its services: calls
/// `access` does not allow are refused before routing, and every stream ends at stop.
fn server(access: Access, ending: &CancellationToken) -> Server<Layers> {
    // Keepalive pings make a live but quiet client answer within guard::IDLE; a
    // connection that answers nothing is closed by the guard.
    Server::builder()
        .http2_keepalive_interval(Some(guard::KEEPALIVE))
        .http2_keepalive_timeout(Some(guard::KEEPALIVE))
        .layer(front::Front::new(access, ending.clone()))
}

/// Serves on the Unix listener and, when given, on TCP with TLS, until `shutdown`, within
/// `limits`; the open `Watch` streams are counted in `metrics`.
pub async fn serve(
    listening: Listening,
    limits: Limits,
    metrics: &crate::telemetry::Metrics,
    shutdown: CancellationToken,
) -> Result<(Serving, ServeHandle), ServeError> {
    let (health, health_service) = tonic_health::server::health_reporter();
    health
        .set_service_status(SERVICE, ServingStatus::NotServing)
        .await;
    health
        .set_service_status("", ServingStatus::NotServing)
        .await;
    // Both reflection versions: grpcurl before 1.8.8, grpc_cli and GUI clients still ask
    // for v1alpha only.
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(placed_proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            // Each version lists both reflection services, not only itself.
            .register_encoded_file_descriptor_set(tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(
                tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
            )
            .include_reflection_service(false)
    };
    let reflection_v1 = reflection().build_v1().map_err(ServeError::Reflection)?;
    let reflection_v1alpha = reflection()
        .build_v1alpha()
        .map_err(ServeError::Reflection)?;
    let api =
        Api::new(limits.max_watchers, metrics.watchers.clone()).map_err(|_| ServeError::Random)?;
    let ending = CancellationToken::new();
    let serving = Serving {
        api: api.clone(),
        health,
        ending: ending.clone(),
        serving: std::sync::Arc::default(),
    };
    let routes = |access: Access| {
        let mut server = server(access, &ending);
        server
            .add_service(health_service.clone())
            .add_service(reflection_v1.clone())
            .add_service(reflection_v1alpha.clone())
            .add_service(PlacedServiceServer::new(api.clone()))
    };

    let Listening { unix, tcp } = listening;
    let unix_incoming = accept::unix(unix, limits.connections, shutdown.clone());
    let unix_router = routes(Access::Full);
    let stop = shutdown.clone();
    let unix_task = tokio::spawn(async move {
        unix_router
            .serve_with_incoming_shutdown(incoming(unix_incoming), stop.cancelled_owned())
            .await
            .map_err(|source| ServeError::Transport {
                what: "the Unix socket".into(),
                source,
            })
    });
    let tcp_task = tcp.map(|t| {
        let addr = t
            .listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        let access = Access::of_tcp(t.client_certificates);
        let tcp_incoming = accept::tcp(
            t.listener,
            tokio_rustls::TlsAcceptor::from(t.tls),
            t.client_certificates,
            limits.connections,
            shutdown.clone(),
        );
        let tcp_router = routes(access);
        let stop = shutdown.clone();
        tokio::spawn(async move {
            tcp_router
                .serve_with_incoming_shutdown(incoming(tcp_incoming), stop.cancelled_owned())
                .await
                .map_err(|source| ServeError::Transport {
                    what: format!("TCP {addr}"),
                    source,
                })
        })
    });
    Ok((
        serving,
        ServeHandle {
            tasks: std::iter::once(unix_task).chain(tcp_task).collect(),
        },
    ))
}

/// The admitted connections of an accept task, as the server takes them.
fn incoming<T>(
    rx: tokio::sync::mpsc::Receiver<T>,
) -> impl tokio_stream::Stream<Item = Result<T, std::io::Error>> {
    tokio_stream::wrappers::ReceiverStream::new(rx).map(Ok)
}

/// The running servers.
#[derive(Debug)]
pub struct ServeHandle {
    tasks: Vec<tokio::task::JoinHandle<Result<(), ServeError>>>,
}

impl ServeHandle {
    /// Waits until every server has stopped; the first error, if any.
    pub async fn wait(self) -> Result<(), ServeError> {
        let mut first = Ok(());
        for t in self.tasks {
            match t.await {
                Ok(Err(e)) if first.is_ok() => first = Err(e),
                _ => {}
            }
        }
        first
    }
}
