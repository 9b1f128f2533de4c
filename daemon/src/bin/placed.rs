//! `placed`: the NUMA placement daemon.
//!
//! Parses flags, reads the config, sets up logging and signals (SIGINT, SIGTERM and SIGHUP
//! stop it cleanly, through `placed_host::stop`), and hands over to the library's
//! [`placed::run::run`]. Exit codes follow the table shared by the three
//! binaries (`placed_core::exit`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use placed::config::Config;
use placed::telemetry;
use placed_core::exit::Exit;
use placed_host::stop::{OnHangup, SignalWatch, Stop};

#[derive(Parser, Debug)]
#[command(
    name = "placed",
    version,
    about = "NUMA placement daemon",
    after_help = Exit::help_table()
)]
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
            return if e.use_stderr() {
                Exit::BadInput
            } else {
                Exit::Success
            }
            .into();
        }
    };
    let mut config = match Config::load(args.config.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("placed: error: {}", placed_core::text::error_line(&e));
            return Exit::of(e.fault()).into();
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
                Exit::Success.into()
            }
            Err(e) => {
                eprintln!("placed: error: cannot print the configuration: {e}");
                Exit::Failed.into()
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
            return Exit::Failed.into();
        }
    };
    let result = runtime.block_on(async {
        let stop = Stop::new();
        // SIGHUP stops cleanly too until the daemon reloads its configuration on it
        // (OnHangup::Reload is the hook for that).
        let _signals = SignalWatch::start(&stop, OnHangup::Stop, |signal| {
            tracing::info!(signal = signal.name(), "stop requested");
        })
        .map_err(Failure::Signals)?;
        placed::run::run(config, stop).await.map_err(Failure::Run)
    });
    match result {
        Ok(()) => Exit::Success.into(),
        Err(e) => {
            let line = placed_core::text::error_line(&e);
            tracing::error!("{line}");
            eprintln!("placed: error: {line}");
            Exit::of(e.fault()).into()
        }
    }
}

/// What ends the daemon with an error.
#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error("cannot handle signals")]
    Signals(#[source] placed_host::stop::SignalError),
    #[error(transparent)]
    Run(placed::run::RunError),
}

impl Failure {
    fn fault(&self) -> placed_core::fault::Fault {
        match self {
            Self::Signals(_) => placed_core::fault::Fault::Internal,
            Self::Run(e) => e.fault(),
        }
    }
}
