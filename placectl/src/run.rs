//! Running a validated command line, and the one place where an error becomes its line on
//! stderr and its exit code.

use std::time::Duration;

use crate::args::Cli;
use crate::cli::{self, Exit, StatusError};
use crate::client::{self, Target};
use crate::commands::{Call, Failure, Format};
use crate::request::{Connection, Request, Task};

/// Validates the command line, runs it, and says why it failed if it did: the process's
/// exit code.
pub fn run(cli: Cli) -> Exit {
    let request = match cli.validate() {
        Ok(r) => r,
        Err(e) => return failed(e.as_ref(), None),
    };
    // Over TLS, and whether with a client certificate: a connection the daemon closes
    // under a call is explained by what the client sent.
    let tls_identity = match &request.task {
        Task::Daemon {
            connection:
                Connection {
                    target: Target::Tls { identity, .. },
                    ..
                },
            ..
        } => Some(identity.is_some()),
        _ => None,
    };
    match execute(request) {
        Ok(code) => code,
        Err(e) => failed(e.as_ref(), tls_identity),
    }
}

fn execute(request: Request) -> Result<Exit, Failure> {
    match request.task {
        Task::Local(job) => job.run(request.format),
        Task::Daemon { call, connection } => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(on_daemon(call.as_ref(), &connection, request.format))
        }
    }
}

/// Connects and calls, within `--timeout` unless the call streams.
async fn on_daemon(
    call: &dyn Call,
    connection: &Connection,
    format: Format,
) -> Result<Exit, Failure> {
    let request = async {
        let mut client = client::connect(&connection.target).await?;
        if connection.wait && call.waits_when_busy() {
            until_free(call, &mut client, format).await
        } else {
            call.call(&mut client, format).await
        }
    };
    if call.streams() {
        return request.await;
    }
    match tokio::time::timeout(connection.timeout, request).await {
        Ok(r) => r,
        // A timeout is "try again", as DEADLINE_EXCEEDED from the daemon is.
        Err(_) => Err(StatusError(tonic::Status::deadline_exceeded(format!(
            "no answer from placed within {} (--timeout){}",
            humantime::format_duration(connection.timeout),
            call.after_timeout()
                .map_or_else(String::new, |more| format!(": {more}"))
        )))
        .into()),
    }
}

/// The call sent again while the daemon answers that the container is busy, with growing
/// pauses up to 5 s; the caller's --timeout bounds the whole.
async fn until_free(
    call: &dyn Call,
    client: &mut crate::commands::Client,
    format: Format,
) -> Result<Exit, Failure> {
    let mut pause = Duration::from_millis(250);
    let mut said = false;
    loop {
        match call.call(client, format).await {
            Err(e) if busy(e.as_ref()) => {
                if !said {
                    eprintln!("placectl: {e}; waiting (--wait)");
                    said = true;
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(5));
            }
            r => return r,
        }
    }
}

fn busy(e: &(dyn std::error::Error + 'static)) -> bool {
    e.downcast_ref::<StatusError>()
        .is_some_and(|s| s.0.code() == tonic::Code::Aborted)
}

/// Prints the error's one line and returns its exit code. `tls_identity`: over TLS,
/// whether with a client certificate.
fn failed(e: &(dyn std::error::Error + 'static), tls_identity: Option<bool>) -> Exit {
    let tls = cli::tls::failure(e)
        .or_else(|| tls_identity.and_then(|with| cli::tls::closed_by_daemon(e, with)));
    let line = match &tls {
        // The TLS case and its advice, instead of "transport error" or "operation was
        // canceled" and the causes that only hide it.
        Some(why) => match e.downcast_ref::<client::ConnectError>() {
            Some(c) => format!("{c}: {why}"),
            None => format!("the TLS connection to the daemon failed: {why}"),
        },
        None if cli::exit::tls_refused(e) || e.source().is_some_and(cli::exit::tls_refused) => {
            format!("{} ({})", cli::error_line(e), cli::exit::TLS_HINT)
        }
        None => cli::error_line(e),
    };
    eprintln!("placectl: error: {line}");
    // A named TLS case carries its own code: under load the same refusal reached the
    // client with or without an InvalidData error in the chain (CI saw the "closed" line
    // with exit 4 once).
    tls.map_or_else(|| cli::exit_of(e), |why| why.exit())
}
