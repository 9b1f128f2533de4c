//! The gRPC service (placed.v1) with standard health and reflection (v1 and v1alpha), on a
//! Unix socket and optionally on TCP with TLS.
//!
//! Handlers ([`api`]) convert requests into [`crate::lifecycle::Daemon`] calls; nothing
//! below them sees tonic types. Health reports NOT_SERVING until the daemon has restored
//! its state, so probes and orchestrators wait instead of failing. Connections on the Unix
//! socket are read through [`authority::Repaired`], so that clients that name the socket
//! path as `:authority` (gRPC C-core: Python, C++, Ruby, PHP) are served. Every listener
//! holds a bounded number of connections and closes idle ones ([`guard`]); `Watch` streams
//! are capped over all of them ([`Limits`]).
//!
//! - `api`: the handlers; `convert`: daemon values to messages; `paging`: list pages and
//!   their tokens; `watch`: the event stream with resume.

mod api;
pub mod authority;
mod convert;
pub mod guard;
pub mod listen;
mod orchestrate;
mod paging;
mod status;
mod watch;

use placed_proto::v1::placed_service_server::{PlacedServiceServer, SERVICE_NAME};
use tokio_stream::StreamExt;
use tokio_util::sync::CancellationToken;
use tonic::transport::{Server, ServerTlsConfig};
use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;

pub use api::{Access, Api, status_of};

/// The service name health reports under (and "" for the whole server).
pub const SERVICE: &str = SERVICE_NAME;

/// Everything being served, before and after the daemon is ready.
#[derive(Debug, Clone)]
pub struct Serving {
    pub api: Api,
    health: HealthReporter,
}

impl Serving {
    /// Marks the daemon ready: the API answers and health says SERVING.
    pub async fn ready(&self, daemon: crate::lifecycle::Daemon) {
        self.api.ready(daemon);
        self.health
            .set_service_status(SERVICE, ServingStatus::Serving)
            .await;
        self.health
            .set_service_status("", ServingStatus::Serving)
            .await;
    }

    /// Marks the daemon as stopping: health says NOT_SERVING and every `Watch` stream
    /// ends, so that the servers' graceful stop does not wait on them.
    pub async fn stopping(&self) {
        self.api.stopping();
        self.health
            .set_service_status(SERVICE, ServingStatus::NotServing)
            .await;
        self.health
            .set_service_status("", ServingStatus::NotServing)
            .await;
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
    #[error("the TLS settings of TCP {addr} (grpc.tls)")]
    Tls {
        addr: String,
        #[source]
        source: tonic::transport::Error,
    },
    #[error("reflection service")]
    Reflection(#[source] tonic_reflection::server::Error),
    #[error("no random numbers to sign page tokens with (the system's getrandom failed)")]
    Random,
}

impl ServeError {
    /// Who has to act: unusable TLS files are the configuration's; the rest is ours.
    pub fn fault(&self) -> placed_core::fault::Fault {
        match self {
            Self::Tls { .. } => placed_core::fault::Fault::InvalidInput,
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
    /// Connections on the Unix socket.
    pub max_unix_connections: usize,
}

impl Limits {
    pub fn of(grpc: &crate::config::GrpcConfig) -> Self {
        Self {
            max_watchers: grpc.max_watchers,
            max_unix_connections: grpc.max_unix_connections,
        }
    }
}

/// Serves on the Unix listener and, when given, on TCP with TLS, until `shutdown`, within
/// `limits`; the open `Watch` streams are counted in `metrics`.
pub async fn serve(
    unix: tokio::net::UnixListener,
    tcp: Option<(tokio::net::TcpListener, ServerTlsConfig, Access)>,
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
    let serving = Serving {
        api: api.clone(),
        health,
    };

    // The Unix socket has the TCP listeners' budget (its own cap, the same idle bound and
    // keepalive pings), so that local clients cannot use up the descriptors either.
    let router = Server::builder()
        .http2_keepalive_interval(Some(guard::KEEPALIVE))
        .http2_keepalive_timeout(Some(guard::KEEPALIVE))
        .add_service(health_service.clone())
        .add_service(reflection_v1.clone())
        .add_service(reflection_v1alpha.clone())
        .add_service(PlacedServiceServer::new(api.clone()));
    let unix_stream = guard::guard(
        tokio_stream::wrappers::UnixListenerStream::new(unix)
            .map(|conn| conn.map(authority::Repaired::new)),
        "grpc unix",
        limits.max_unix_connections,
        guard::IDLE,
    );
    let stop = shutdown.clone();
    let unix_task = tokio::spawn(async move {
        router
            .serve_with_incoming_shutdown(unix_stream, stop.cancelled_owned())
            .await
            .map_err(|source| ServeError::Transport {
                what: "the Unix socket".into(),
                source,
            })
    });
    let tcp_task = match tcp {
        None => None,
        Some((listener, tls, access)) => {
            let addr = listener
                .local_addr()
                .map(|a| a.to_string())
                .unwrap_or_default();
            // Keepalive pings make a live but quiet client answer within guard::IDLE; a
            // connection that answers nothing is closed by the guard.
            let mut builder = Server::builder()
                .http2_keepalive_interval(Some(guard::KEEPALIVE))
                .http2_keepalive_timeout(Some(guard::KEEPALIVE))
                .tls_config(tls)
                .map_err(|source| ServeError::Tls {
                    addr: addr.clone(),
                    source,
                })?;
            let router = builder
                .add_service(health_service)
                .add_service(reflection_v1)
                .add_service(reflection_v1alpha)
                .add_service(PlacedServiceServer::new(api.with_access(access)));
            let incoming = guard::guard(
                tokio_stream::wrappers::TcpListenerStream::new(listener),
                "grpc tcp",
                guard::MAX_CONNECTIONS,
                guard::IDLE,
            );
            let stop = shutdown.clone();
            Some(tokio::spawn(async move {
                router
                    .serve_with_incoming_shutdown(incoming, stop.cancelled_owned())
                    .await
                    .map_err(|source| ServeError::Transport {
                        what: format!("TCP {addr}"),
                        source,
                    })
            }))
        }
    };
    Ok((
        serving,
        ServeHandle {
            tasks: std::iter::once(unix_task).chain(tcp_task).collect(),
        },
    ))
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
