//! `placed`: the NUMA placement daemon.
//!
//! Parses flags, reads the config, sets up logging and signals (SIGINT, SIGTERM and SIGHUP
//! stop it cleanly, through `placed_host::stop`), binds the listeners, and
//! hands over to the library: `service::serve` for the API and `lifecycle::Daemon` for
//! everything else.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;

use placed::config::Config;
use placed::lifecycle::Daemon;
use placed::service;
use placed::systemd;
use placed::telemetry::{self, Metrics};
use placed_host::stop::{OnHangup, Signal, SignalWatch, Stop};

#[derive(Parser, Debug)]
#[command(name = "placed", version, about = "NUMA placement daemon")]
struct Args {
    /// TOML config file; without it /etc/placed/placed.toml is read if it exists, else the
    /// defaults are used.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Unix socket to serve on, overriding the config.
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// State file, overriding the config.
    #[arg(long, value_name = "PATH")]
    state_file: Option<PathBuf>,
    /// Print the effective configuration (defaults filled in) and exit.
    #[arg(long)]
    print_config: bool,
}

fn main() -> ExitCode {
    // SAFETY: first statement of main, before any thread exists.
    unsafe { placed_core::machine::quiet_hwloc() };
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let mut config = match Config::load(args.config.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("placed: error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(s) = args.socket {
        config.grpc.socket = s;
    }
    if let Some(s) = args.state_file {
        config.daemon.state_file = s;
    }
    if args.print_config {
        return match toml::to_string_pretty(&config) {
            Ok(t) => {
                print!("{t}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("placed: error: {e}");
                ExitCode::from(2)
            }
        };
    }
    telemetry::init_logging(config.daemon.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("placed")
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("placed: error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{}", placed_core::text::error_line(e.as_ref()));
            eprintln!(
                "placed: error: {}",
                placed_core::text::error_line(e.as_ref())
            );
            ExitCode::from(2)
        }
    }
}

async fn run(config: Config) -> anyhow::Result<()> {
    let stop = Stop::new();
    // SIGHUP stops cleanly too until the daemon reloads its configuration on it
    // (OnHangup::Reload is the hook for that).
    let _signals = SignalWatch::start(&stop, OnHangup::Stop, |signal| {
        tracing::info!(signal = signal.name(), "stop requested");
    })?;
    let cancel = stop.token();

    let unix = service::listen::bind_unix(&config).await?;
    let tcp = match (&config.grpc.tcp, &config.grpc.tls) {
        (Some(addr), Some(tls)) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr}"))?;
            Some((listener, service::listen::server_tls(tls)?))
        }
        _ => None,
    };
    let metrics = Arc::new(Metrics::default());
    let metrics_listener = if config.metrics.enabled {
        let addr = config.metrics.listen;
        Some(
            telemetry::bind_metrics(addr)
                .await
                .with_context(|| format!("cannot serve metrics on {addr} (metrics.listen)"))?,
        )
    } else {
        None
    };
    let (serving, servers) = service::serve(unix, tcp, cancel.clone()).await?;
    if let Some(l) = metrics_listener {
        tokio::spawn(telemetry::serve_metrics(l, metrics.clone(), cancel.clone()));
    }
    tracing::info!(socket = %config.grpc.socket.display(), "listening; restoring state");
    systemd::status("restoring state");

    let socket = config.grpc.socket.clone();
    let daemon = match Daemon::start(config, metrics).await {
        Ok(d) => d,
        Err(e) => {
            stop.request();
            let _ = servers.wait().await;
            let _ = std::fs::remove_file(&socket);
            return Err(e.into());
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
        tokio::spawn(systemd::watchdog(interval, cancel.clone(), move || {
            let d = d.clone();
            async move { d.alive().await }
        }));
    }

    cancel.cancelled().await;
    tracing::info!(
        signal = stop.signal().map_or("none", Signal::name),
        "stopping"
    );
    systemd::stopping();
    serving.stopping().await;
    daemon.shutdown().await;
    let result = servers.wait().await;
    let _ = std::fs::remove_file(&socket);
    result.map_err(Into::into)
}
