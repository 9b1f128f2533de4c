//! The daemon's whole life, from bound listeners to exit: serve (health NOT_SERVING) while
//! the environment is detected and the daemon restores its state, report ready to
//! systemd, run until told to stop, then stop in order: health NOT_SERVING, every stream
//! ended, every container task (each leaves its container whole and thawed), the state
//! file, the listeners, the socket file.
//!
//! The binary parses flags, reads the configuration, sets up logging and signals, binds
//! ([`Listeners::bind`]) and calls [`run`] with this host's [`Environment`]; tests call the
//! same [`run`] with listeners in a temporary directory and a fake host, and watch the
//! whole start and stop order in-process.

use std::future::Future;
use std::sync::Arc;

use crate::config::{Config, ConfigError};
use crate::lifecycle::{Daemon, Environment, StartError};
use crate::service::{self, Listening, ServeError, ServeHandle, Serving, listen::ListenError};
use crate::state::StateLock;
use crate::systemd;
use crate::telemetry::Metrics;
use crate::telemetry::logging::LogControl;
use crate::telemetry::serve::{self as metrics_endpoint, Endpoint};
use placed_core::fault::Fault;
use placed_host::stop::{Signal, Stop};

/// Why the daemon stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("setting up the API listeners")]
    Listen(#[source] ListenError),
    #[error("serving metrics on {addr} (metrics.listen)")]
    Metrics {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("serving the API")]
    Serve(#[source] ServeError),
    #[error("starting")]
    Start(#[source] StartError),
    #[error(transparent)]
    State(crate::state::StateError),
}

impl RunError {
    /// Who has to act.
    pub fn fault(&self) -> Fault {
        match self {
            Self::Start(e) => e.fault(),
            Self::Serve(e) => e.fault(),
            Self::Listen(e) => e.fault(),
            Self::Metrics { .. } => Fault::HostConfig,
            Self::State(e) => e.fault(),
        }
    }
}

/// What the daemon serves on, bound before it runs, with the state file's lock.
#[derive(Debug)]
pub struct Listeners {
    /// Held until the daemon has stopped: a second daemon on the same state file is refused
    /// before it touches a socket or a cgroup.
    _state_lock: StateLock,
    pub api: Listening,
    /// The metrics endpoint's, when metrics are enabled.
    pub metrics: Option<tokio::net::TcpListener>,
}

impl Listeners {
    /// Takes the state file's lock, then binds the Unix socket, the TCP listener and the
    /// metrics endpoint `config` names.
    pub async fn bind(config: &Config) -> Result<Self, RunError> {
        let state_lock = crate::state::StateStore::new(config.daemon.state_file.clone())
            .lock()
            .map_err(RunError::State)?;
        let unix = service::listen::bind_unix(config)
            .await
            .map_err(RunError::Listen)?;
        let tcp = match service::listen::bind_tcp(config).await {
            Ok(t) => t,
            Err(e) => {
                drop(unix);
                let _ = std::fs::remove_file(&config.grpc.socket);
                return Err(RunError::Listen(e));
            }
        };
        let metrics = match metrics_endpoint::bind(&config.metrics).await {
            Ok(m) => m,
            Err(source) => {
                drop(unix);
                let _ = std::fs::remove_file(&config.grpc.socket);
                return Err(RunError::Metrics {
                    addr: config.metrics.listen,
                    source,
                });
            }
        };
        Ok(Self {
            _state_lock: state_lock,
            api: Listening { unix, tcp },
            metrics,
        })
    }
}

/// Raises the soft limit on open descriptors to the hard one. The default soft limit of
/// 1,024 was all that about a thousand idle TCP connections needed to hang the Unix socket
/// and discovery too; the hard limit (systemd's LimitNOFILE) is what the operator allows.
/// Returns the limit now in force.
pub fn raise_nofile() -> std::io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: setrlimit reads the struct we own.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        lim = raised;
    }
    Ok(lim.rlim_cur)
}

/// How the daemon reloads its configuration (SIGHUP).
pub struct Reload {
    /// Notified once per reload request.
    pub requests: Arc<tokio::sync::Notify>,
    /// Reads the configuration file again (with the command line's overrides applied).
    pub load: Arc<dyn Fn() -> Result<Config, ConfigError> + Send + Sync>,
    /// Changes the log level, when this process set up logging.
    pub logs: Option<LogControl>,
}

impl std::fmt::Debug for Reload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reload").finish_non_exhaustive()
    }
}

/// Runs the daemon on `listeners` until `stop` is requested (a signal, or the caller):
/// serves at once, NOT_SERVING until `environment` is ready and the daemon has adopted
/// what the state file names; reloads the configuration whenever `reload` asks.
pub async fn run(
    config: Config,
    listeners: Listeners,
    environment: impl Future<Output = Result<Environment, StartError>> + Send,
    stop: Stop,
    reload: Option<Reload>,
) -> Result<(), RunError> {
    let token = stop.token();
    let Listeners {
        _state_lock,
        api,
        metrics: metrics_listener,
    } = listeners;
    let metrics = Arc::new(Metrics::default());
    let limits = service::Limits::of(&config.grpc);
    let socket = config.grpc.socket.clone();
    let (serving, servers) = match service::serve(api, limits, &metrics, token.clone()).await {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_file(&socket);
            return Err(RunError::Serve(e));
        }
    };
    let mut endpoint = Endpoint::new(metrics.clone(), token.clone());
    if let Some(l) = metrics_listener {
        endpoint.serve(config.metrics.listen, l);
    }
    tracing::info!(socket = %socket.display(), "listening; restoring state");
    systemd::status("restoring state");

    let running = config.clone();
    let nri = config.nri.clone();
    let env = tokio::select! {
        env = environment => env,
        () = token.cancelled() => {
            tracing::info!("stopped while starting");
            close(&serving, servers, &socket).await;
            return Ok(());
        }
    };
    let started = match env {
        Ok(env) => Daemon::start(config, env, metrics).await,
        Err(e) => Err(e),
    };
    let daemon = match started {
        Ok(d) => d,
        Err(e) => {
            stop.request();
            close(&serving, servers, &socket).await;
            return Err(RunError::Start(e));
        }
    };
    serving.ready(daemon.clone()).await;
    let m = daemon.machine();
    let ready = format!(
        "serving on {}: {} ({}), {} allocation units",
        socket.display(),
        m.source,
        m.fingerprint(),
        m.units.len()
    );
    tracing::info!("{ready}");
    systemd::ready(&ready);
    if let Some(interval) = systemd::watchdog_interval() {
        let d = daemon.clone();
        tokio::spawn(systemd::watchdog(interval, token.clone(), move || {
            let d = d.clone();
            async move { d.alive().await }
        }));
    }

    if let Some(r) = reload {
        tokio::spawn(reloads(r, running, daemon.clone(), endpoint, token.clone()));
    }
    // Validated with the configuration: a refusal here is a defect, and the daemon still
    // serves its API.
    let node = crate::kubernetes::Node::start(&nri, &daemon).unwrap_or_else(|e| {
        tracing::error!(error = %placed_core::text::error_line(&e), "the NRI plugin did not start");
        None
    });

    token.cancelled().await;
    tracing::info!(
        signal = stop.signal().map_or("none", Signal::name),
        "stopping"
    );
    systemd::stopping();
    serving.stopping().await;
    // Pods start as the runtime starts them from here on; placed's decisions stay in force.
    if let Some(node) = node {
        node.stop().await;
    }
    daemon.shutdown().await;
    let result = servers.wait().await;
    let _ = std::fs::remove_file(&socket);
    result.map_err(RunError::Serve)
}

/// Stops serving without a daemon to shut down (it never started): every stream ended,
/// the servers stopped, the socket file removed.
async fn close(serving: &Serving, servers: ServeHandle, socket: &std::path::Path) {
    serving.stopping().await;
    let _ = servers.wait().await;
    let _ = std::fs::remove_file(socket);
}

/// Applies each reload request until the daemon stops.
async fn reloads(
    reload: Reload,
    mut running: Config,
    daemon: Daemon,
    mut endpoint: Endpoint,
    cancel: tokio_util::sync::CancellationToken,
) {
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = reload.requests.notified() => {}
        }
        systemd::reloading();
        let load = reload.load.clone();
        match tokio::task::spawn_blocking(move || load()).await {
            Ok(Ok(new)) => {
                if let Some(r) = apply(&reload, &running, new, &daemon, &mut endpoint).await {
                    running = r;
                }
            }
            Ok(Err(e)) => tracing::error!(
                error = %placed_core::text::error_line(&e),
                "configuration not reloaded: the file is refused and the running configuration kept"
            ),
            Err(e) => {
                tracing::error!(error = %e, "configuration not reloaded: reading it failed")
            }
        }
        // READY=1 ends the reload for systemd whatever its outcome: a refused file leaves
        // the daemon serving on its running configuration.
        systemd::ready("serving");
    }
}

/// Applies what may change live of `new`; returns the configuration now running, or
/// `None` when nothing was applied.
async fn apply(
    reload: &Reload,
    running: &Config,
    new: Config,
    daemon: &Daemon,
    endpoint: &mut Endpoint,
) -> Option<Config> {
    let plan = match crate::reload::plan(running, new) {
        Ok(p) => p,
        Err(e) => {
            tracing::error!(error = %e, "configuration not reloaded");
            return None;
        }
    };
    if !plan.refused.is_empty() {
        tracing::warn!(
            keys = %plan.refused.join(", "),
            "configuration changes that need a restart were not applied; the running values stay until placed is restarted"
        );
    }
    if plan.applied.is_empty() {
        tracing::info!("configuration reloaded: nothing to change while running");
        return None;
    }
    let mut config = plan.config;
    if let Err(e) = endpoint.reconfigure(&config.metrics).await {
        tracing::error!(
            error = %e,
            listen = %config.metrics.listen,
            "metrics endpoint not moved; it stays where it was"
        );
        config.metrics = running.metrics.clone();
    }
    if let Err(e) = daemon.reconfigure(config.clone()) {
        tracing::error!(error = %placed_core::text::error_line(&e), "configuration not reloaded");
        return None;
    }
    if let Some(logs) = &reload.logs {
        match logs.set_level(&config.daemon.log_level) {
            Ok(true) => {}
            Ok(false) if config.daemon.log_level != running.daemon.log_level => {
                tracing::warn!("daemon.log_level changed, but RUST_LOG is set and overrides it");
            }
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "log level not changed"),
        }
    }
    tracing::info!(changed = %plan.applied.join(", "), "configuration reloaded");
    Some(config)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_soft_descriptor_limit_is_raised_to_the_hard_one() {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct we own.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
        let now = super::raise_nofile().unwrap();
        assert_eq!(now, lim.rlim_max);
        // SAFETY: as above.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
        assert_eq!(lim.rlim_cur, lim.rlim_max);
    }
}
