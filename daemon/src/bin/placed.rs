//! `placed`: the NUMA placement daemon.
//!
//! Parses flags, reads the config, sets up logging and signals (SIGINT and SIGTERM stop it
//! cleanly, through `placed_host::stop`; SIGHUP reloads the configuration file; SIGUSR1 and
//! SIGUSR2 are logged and ignored), binds its listeners and hands over to the library's
//! [`placed::run::run`] with this host's environment. Exit codes follow the table shared
//! by the three binaries (`placed_core::exit`), except that a stop asked for with SIGTERM
//! or SIGINT is the daemon's normal end: 0 once it has stopped in good order, as systemd
//! expects of a service it stops (130 is for commands interrupted half-way).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;

use placed::config::Config;
use placed::lifecycle::Environment;
use placed::run::Listeners;
use placed::telemetry;
use placed_core::exit::Exit;
use placed_host::stop::{OnHangup, SignalWatch, Stop};

#[derive(Parser, Debug)]
#[command(
    name = "placed",
    version,
    about = "NUMA placement daemon",
    after_help = exit_help()
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
    /// Print the man page, placed(8), as roff (for packaging).
    #[arg(long, hide = true)]
    man: bool,
}

fn main() -> ExitCode {
    // SAFETY: first statement of main, before any thread exists.
    unsafe { placed_core::machine::quiet_hwloc() };
    let args = match placed_core::exit::parse_args::<Args>() {
        Ok(a) => a,
        Err(code) => return code.into(),
    };
    if args.man {
        return print_man();
    }
    let print_config = args.print_config;
    let load = loader(args);
    let config = match load() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("placed: error: {}", placed_core::text::error_line(&e));
            return Exit::of(e.fault()).into();
        }
    };
    if print_config {
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
    let logs = telemetry::logging::init(config.daemon.log_format, &config.daemon.log_level);
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
    match runtime.block_on(serve(config, Arc::new(load), logs)) {
        Ok(()) => Exit::Success.into(),
        Err(e) => {
            let line = placed_core::text::error_line(&e);
            tracing::error!("{line}");
            eprintln!("placed: error: {line}");
            Exit::of(e.fault()).into()
        }
    }
}

/// placed(8) as roff, on standard output.
fn print_man() -> ExitCode {
    use clap::CommandFactory;
    let mut page = Vec::new();
    match clap_mangen::Man::new(Args::command())
        .section("8")
        .render(&mut page)
    {
        Ok(()) => {
            print!("{}", String::from_utf8_lossy(&page));
            Exit::Success.into()
        }
        Err(e) => {
            eprintln!("placed: error: cannot write the man page: {e}");
            Exit::Failed.into()
        }
    }
}

/// Loads the configuration with the command line's overrides: at start and again at each
/// reload, so that a reload keeps what the command line said.
fn loader(
    args: Args,
) -> impl Fn() -> Result<Config, placed::config::ConfigError> + Send + Sync + 'static {
    let (path, socket, state_file) = (args.config, args.socket, args.state_file);
    move || {
        let mut config = Config::load(path.as_deref())?;
        if let Some(s) = &socket {
            config.grpc.socket = s.clone();
        }
        if let Some(s) = &state_file {
            config.daemon.state_file = s.clone();
        }
        Ok(config)
    }
}

/// The daemon, from its signals to its end.
async fn serve(
    config: Config,
    load: Arc<dyn Fn() -> Result<Config, placed::config::ConfigError> + Send + Sync>,
    logs: Option<telemetry::logging::LogControl>,
) -> Result<(), Failure> {
    let stop = Stop::new();
    let requests = Arc::new(tokio::sync::Notify::new());
    let hangup = {
        let requests = requests.clone();
        // A permit is kept when no reload is waiting: a SIGHUP during start-up is
        // applied once the daemon is ready.
        OnHangup::Reload(Box::new(move || requests.notify_one()))
    };
    let _signals = SignalWatch::start(&stop, hangup, |signal| {
        tracing::info!(signal = signal.name(), "stop requested");
    })
    .map_err(Failure::Signals)?;
    ignore_user_signals();
    match placed::run::raise_nofile() {
        Ok(n) => tracing::info!(
            limit = n,
            perf_budget = placed_host::observe::FdBudget::host().budget(),
            "open file limit; perf counters may hold perf_budget descriptors at once"
        ),
        Err(e) => tracing::warn!(error = %e, "cannot raise the open file limit"),
    }
    let listeners = Listeners::bind(&config).await.map_err(Failure::Run)?;
    let reload = placed::run::Reload {
        requests,
        load,
        logs,
    };
    let detect = {
        let config = config.clone();
        async move { Environment::detect(&config).await }
    };
    placed::run::run(config, listeners, detect, stop, Some(reload))
        .await
        .map_err(Failure::Run)
}

/// The exit codes `placed` ends with, for `--help` and placed(8): the shared table, but a
/// requested stop is success, not an interruption.
fn exit_help() -> String {
    let mut s = String::from("Exit status:\n");
    for e in Exit::ALL {
        let says = match e {
            Exit::Success => {
                "success, and a stop asked for with SIGTERM or SIGINT once placed has stopped in good order (containers whole and thawed, state written, socket removed)"
            }
            // A daemon answers no question and is never interrupted half-way.
            Exit::No | Exit::Interrupted => continue,
            other => other.describe(),
        };
        s.push_str(&format!("  {:>3}  {says}\n", e.code()));
    }
    s
}

/// SIGUSR1 and SIGUSR2 would end the process silently (their default action): they are
/// logged and ignored instead.
fn ignore_user_signals() {
    use tokio::signal::unix::{SignalKind, signal};
    for (kind, name) in [
        (SignalKind::user_defined1(), "SIGUSR1"),
        (SignalKind::user_defined2(), "SIGUSR2"),
    ] {
        match signal(kind) {
            Ok(mut s) => {
                tokio::spawn(async move {
                    while s.recv().await.is_some() {
                        tracing::warn!(
                            signal = name,
                            "signal ignored: placed stops on SIGTERM or SIGINT and reloads on SIGHUP"
                        );
                    }
                });
            }
            Err(e) => tracing::warn!(signal = name, error = %e, "cannot take the signal"),
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
