//! The plugin's connection to the runtime: connect to the NRI socket, register, serve the
//! runtime's calls, and when the runtime goes away (stopped, restarted, or it dropped
//! placed) connect again with backoff, for as long as the daemon runs.
//!
//! One connection, a session, goes: connect; multiplex the socket ([`crate::mux`]); serve
//! the plugin's service on connection 1; call RegisterPlugin (name, index) on connection
//! 2; the runtime then calls Configure (placed answers its event mask) and Synchronize
//! (every pod and container it has); from then on the events. Until a session has
//! synchronized, pods start as if placed were not there: the runtime only calls plugins
//! it has synchronized.

use std::future::Future;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use ttrpc::r#async::transport::{Listener, Socket};

use placed_core::text::Chain;

use crate::api::nri as pb;
use crate::api::nri_ttrpc::{self, RuntimeClient};
use crate::config::{self, Config, ConfigError};
use crate::mux::{self, End, Mux};
use crate::placer::Placer;
use crate::service::{Service, Signal};
use crate::updater::Updater;

/// Where the plugin stands with the runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Not (yet) registered and synchronized. `error` says why the last connection
    /// failed or ended, `retry_in` when the next attempt is made.
    Disconnected {
        error: Option<String>,
        retry_in: Option<Duration>,
    },
    /// Registered and synchronized: the runtime calls placed for its events.
    Connected { runtime: String, version: String },
}

/// The running plugin. Dropping it stops it (the connection closes; pods then start as
/// the runtime starts them).
#[derive(Debug)]
pub struct Plugin {
    updater: Updater,
    status: watch::Receiver<Status>,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

/// Why a session ended; only said, in logs and [`Status`], never returned to a caller.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Disconnect {
    #[error("cannot connect to the NRI socket")]
    Connect(#[source] io::Error),
    #[error("cannot serve the plugin service")]
    Serve(#[source] ttrpc::Error),
    #[error("the runtime refused the registration")]
    Register(#[source] ttrpc::Error),
    #[error("the runtime did not answer the registration within {0:?}")]
    RegisterTimeout(Duration),
    #[error("the runtime closed the connection")]
    Closed,
    #[error("the NRI connection failed: {0}")]
    Failed(String),
    #[error("the runtime is shutting down")]
    Shutdown,
}

/// A byte stream to the runtime: a Unix socket, or in tests an in-memory pipe.
pub(crate) trait Trunk: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Trunk for T {}

pub(crate) type Connect =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = io::Result<Box<dyn Trunk>>> + Send>> + Send + Sync>;

/// Connects to the Unix socket at `path`.
pub(crate) fn unix(path: &Path) -> Connect {
    let path = path.to_owned();
    Arc::new(move || {
        let path = path.clone();
        Box::pin(async move {
            let s = tokio::net::UnixStream::connect(&path).await?;
            Ok(Box::new(s) as Box<dyn Trunk>)
        })
    })
}

impl Plugin {
    /// Starts the plugin on the current tokio runtime: it connects to `config.socket` and
    /// keeps connected until stopped, calling `placer` for the runtime's events.
    pub fn start<P: Placer>(config: Config, placer: Arc<P>) -> Result<Self, ConfigError> {
        let connect = unix(&config.socket);
        Self::start_with(config, placer, connect)
    }

    pub(crate) fn start_with<P: Placer>(
        config: Config,
        placer: Arc<P>,
        connect: Connect,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        let updater = Updater::new(config.update_timeout);
        let (status_tx, status) = watch::channel(Status::Disconnected {
            error: None,
            retry_in: None,
        });
        let cancel = CancellationToken::new();
        let task = tokio::spawn(run(
            config,
            placer,
            connect,
            updater.clone(),
            status_tx,
            cancel.clone(),
        ));
        Ok(Self {
            updater,
            status,
            cancel,
            task,
        })
    }

    /// Sends cpusets of running containers to the runtime (UpdateContainers).
    pub fn updater(&self) -> Updater {
        self.updater.clone()
    }

    /// Where the plugin stands, and its changes.
    pub fn status(&self) -> watch::Receiver<Status> {
        self.status.clone()
    }

    /// Closes the connection and stops reconnecting.
    pub async fn stop(mut self) {
        self.cancel.cancel();
        // A task that panicked has nothing left to stop.
        let _ = (&mut self.task).await;
    }
}

impl Drop for Plugin {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

async fn run<P: Placer>(
    config: Config,
    placer: Arc<P>,
    connect: Connect,
    updater: Updater,
    status: watch::Sender<Status>,
    cancel: CancellationToken,
) {
    let mut failures: u32 = 0;
    loop {
        let mut synced = false;
        let why = tokio::select! {
            _ = cancel.cancelled() => break,
            why = session(&config, &placer, &connect, &updater, &status, &mut synced) => why,
        };
        updater.set(None);
        if synced {
            tracing::warn!(error = %Chain(&why), "NRI connection lost; pods start without placed until it is back");
            placer.disconnected().await;
            failures = 0;
        } else if failures == 0 {
            tracing::warn!(error = %Chain(&why), socket = %config.socket.display(), "cannot register with the NRI runtime; retrying");
        } else {
            tracing::debug!(error = %Chain(&why), "NRI registration attempt failed");
        }
        failures = failures.saturating_add(1);
        let pause = config::backoff(&config, failures);
        status.send_replace(Status::Disconnected {
            error: Some(Chain(&why).to_string()),
            retry_in: Some(pause),
        });
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep(pause) => {}
        }
    }
    updater.set(None);
    status.send_replace(Status::Disconnected {
        error: Some("stopped".into()),
        retry_in: None,
    });
}

/// One connection, from connect to its end; returns why it ended.
async fn session<P: Placer>(
    config: &Config,
    placer: &Arc<P>,
    connect: &Connect,
    updater: &Updater,
    status: &watch::Sender<Status>,
    synced: &mut bool,
) -> Disconnect {
    let trunk = match connect().await {
        Ok(t) => t,
        Err(e) => return Disconnect::Connect(e),
    };
    let (mux, mut conns) = Mux::start(trunk, &[mux::PLUGIN_SERVICE, mux::RUNTIME_SERVICE]);
    let (Some(runtime_conn), Some(plugin_conn)) = (conns.pop(), conns.pop()) else {
        return Disconnect::Failed("the multiplexer opened no connections".into());
    };
    let (signals, mut signal_rx) = mpsc::unbounded_channel();
    let service = Arc::new(Service {
        placer: placer.clone(),
        budget: config.budget,
        events: config.events,
        updater: updater.clone(),
        signals,
    });
    let incoming = futures::stream::iter([Ok::<_, io::Error>(plugin_conn)]);
    // Dropping the server at the end of the session closes what it serves.
    let mut server = ttrpc::r#async::Server::new()
        .add_listener(Listener::new(incoming))
        .register_service(nri_ttrpc::create_plugin(service));
    if let Err(e) = server.start().await {
        return Disconnect::Serve(e);
    }
    let client = RuntimeClient::new(ttrpc::r#async::Client::new(Socket::new(runtime_conn)));
    let request = pb::RegisterPluginRequest {
        plugin_name: config.name.clone(),
        plugin_idx: config.index.clone(),
        ..Default::default()
    };
    let nanos = i64::try_from(config.register_timeout.as_nanos()).unwrap_or(i64::MAX);
    let registered = tokio::time::timeout(
        config.register_timeout,
        client.register_plugin(ttrpc::context::with_timeout(nanos), &request),
    );
    tokio::select! {
        r = registered => match r {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Disconnect::Register(e),
            Err(_) => return Disconnect::RegisterTimeout(config.register_timeout),
        },
        end = mux.ended() => return ended(end),
    }
    tracing::info!(
        name = config.name,
        index = config.index,
        "registered with the NRI runtime"
    );
    updater.set(Some(client));
    let mut runtime = (String::new(), String::new());
    loop {
        tokio::select! {
            end = mux.ended() => return ended(end),
            signal = signal_rx.recv() => match signal {
                Some(Signal::Configured { runtime: name, version }) => runtime = (name, version),
                Some(Signal::Synchronized) => {
                    *synced = true;
                    status.send_replace(Status::Connected {
                        runtime: runtime.0.clone(),
                        version: runtime.1.clone(),
                    });
                }
                Some(Signal::Shutdown) => {
                    // The answer is still on its way: leave when the runtime closes, or
                    // after a while if it does not.
                    let _ = tokio::time::timeout(config.budget, mux.ended()).await;
                    return Disconnect::Shutdown;
                }
                // The service is owned by the server, which lives as long as this loop.
                None => return Disconnect::Closed,
            },
        }
    }
}

fn ended(end: End) -> Disconnect {
    match end {
        End::Closed => Disconnect::Closed,
        End::Failed(why) => Disconnect::Failed(why),
    }
}
