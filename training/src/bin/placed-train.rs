//! `placed-train`: collect training data on this host, calibrate its interconnect, fit and
//! evaluate models, the whole loop in one command, and simulated data for experiments.
//!
//! Parses the command line, sets up logging, and runs the command of
//! `placed_training::cli`; exit codes follow the table shared by the three binaries
//! (`placed_core::exit`), chosen by `placed_training::exit`. Collections install their own
//! signal handling (`placed_training::interrupt`), so that a stopped one cleans up.

use std::process::ExitCode;

use placed_core::exit::Exit;
use placed_training::cli::{self, Cli};

fn main() -> ExitCode {
    let cli = match placed_core::exit::parse_args::<Cli>() {
        Ok(cli) => cli,
        Err(code) => return code.into(),
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, not in a log file or a pipe.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                // Warnings, the probe search's progress (most of what evaluate, fit
                // and train spend their time on) and the size search's checks.
                .unwrap_or_else(|_| {
                    tracing_subscriber::EnvFilter::new(
                        "warn,placed_models::probe=info,placed_models::size_search=info",
                    )
                }),
        )
        .init();
    match cli::run(cli) {
        Ok(()) => Exit::Success.into(),
        Err(e) => {
            eprintln!("placed-train: error: {}", placed_core::text::error_line(&e));
            placed_training::exit::exit_of(&e).into()
        }
    }
}
