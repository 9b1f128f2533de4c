//! `placectl`'s command line validated: the command's own arguments checked
//! ([`crate::commands::Typed`]), and for a command that talks to the daemon, where the
//! daemon is and how long to wait for it, from the connection options typed before and
//! after its name, `PLACED_SOCKET` and the defaults.

use std::path::PathBuf;
use std::time::Duration;

use crate::args::{Cli, ConnectionArgs};
use crate::cli::UsageError;
use crate::client::{self, Target};
use crate::commands::{Action, Call, Failure, Format, Local};

/// The socket's environment variable, below `--socket` and above the default.
pub const SOCKET_ENV: &str = "PLACED_SOCKET";

/// How long a daemon command may take unless `--timeout` says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A validated command line.
#[derive(Debug)]
pub struct Request {
    pub format: Format,
    pub task: Task,
}

/// What runs.
#[derive(Debug)]
pub enum Task {
    /// On this host, without the daemon.
    Local(Box<dyn Local>),
    /// A call to the daemon.
    Daemon {
        call: Box<dyn Call>,
        connection: Connection,
    },
}

/// Where the daemon is, and how long to wait for it.
#[derive(Debug, Clone)]
pub struct Connection {
    pub target: Target,
    /// Bounds the call, unless it streams.
    pub timeout: Duration,
    /// Ask again while the container is busy (`--wait`).
    pub wait: bool,
}

impl Cli {
    /// Validates the command line.
    pub fn validate(self) -> Result<Request, Failure> {
        let format = Format { json: self.json };
        let typed = match self.command.connection() {
            Some(after) => after.clone().over(self.connection),
            None => self.connection,
        };
        let name = self.command.name();
        let task = match self.command.validate()? {
            Action::Local(job) => {
                if let Some(flag) = typed.first_typed() {
                    return Err(UsageError(format!(
                        "{flag} is for the commands that talk to the daemon, and `placectl {name}` as given does not"
                    ))
                    .into());
                }
                Task::Local(job)
            }
            Action::Daemon(call) => Task::Daemon {
                call,
                connection: Connection::validate(typed)?,
            },
        };
        Ok(Request { format, task })
    }
}

impl Connection {
    /// The connection options as typed, checked and completed with `PLACED_SOCKET` and the
    /// defaults.
    pub fn validate(typed: ConnectionArgs) -> Result<Self, UsageError> {
        let identity = match (typed.cert, typed.key) {
            (Some(cert), Some(key)) => Some((cert, key)),
            (None, None) => None,
            (Some(_), None) => return Err(UsageError("--cert needs --key".into())),
            (None, Some(_)) => return Err(UsageError("--key needs --cert".into())),
        };
        let target = match (typed.addr, typed.ca) {
            (Some(url), Some(ca)) => Target::Tls { url, ca, identity },
            (Some(_), None) => {
                return Err(UsageError(
                    "--addr needs --ca, the CA certificate the daemon's certificate is checked against"
                        .into(),
                ));
            }
            (None, _) => Target::Unix(
                typed
                    .socket
                    .or_else(|| std::env::var_os(SOCKET_ENV).map(PathBuf::from))
                    .unwrap_or_else(|| PathBuf::from(client::DEFAULT_SOCKET)),
            ),
        };
        Ok(Self {
            target,
            timeout: typed.timeout.unwrap_or(DEFAULT_TIMEOUT),
            wait: typed.wait,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn request(args: &[&str]) -> Result<Request, String> {
        let cli = Cli::try_parse_from(std::iter::once("placectl").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        cli.validate().map_err(|e| e.to_string())
    }

    fn connection(args: &[&str]) -> Connection {
        match request(args) {
            Ok(Request {
                task: Task::Daemon { connection, .. },
                ..
            }) => connection,
            other => panic!("{args:?}: expected a daemon call, got {other:?}"),
        }
    }

    fn socket(c: &Connection) -> &std::path::Path {
        match &c.target {
            Target::Unix(path) => path,
            Target::Tls { url, .. } => panic!("a TLS target {url}"),
        }
    }

    #[test]
    fn connection_options_are_taken_before_and_after_the_command() {
        let before = connection(&[
            "--socket",
            "/a.sock",
            "--timeout",
            "5s",
            "--wait",
            "manage",
            "web",
        ]);
        assert_eq!(socket(&before), std::path::Path::new("/a.sock"));
        assert_eq!(before.timeout, Duration::from_secs(5));
        assert!(before.wait);
        let after = connection(&["manage", "web", "--socket", "/b.sock", "--timeout", "7s"]);
        assert_eq!(socket(&after), std::path::Path::new("/b.sock"));
        assert_eq!(after.timeout, Duration::from_secs(7));
        assert!(!after.wait);
        // Typed in both places, the one after the command's name wins, option by option.
        let both = connection(&[
            "--socket",
            "/a.sock",
            "--timeout",
            "5s",
            "status",
            "--socket",
            "/b.sock",
        ]);
        assert_eq!(socket(&both), std::path::Path::new("/b.sock"));
        assert_eq!(both.timeout, Duration::from_secs(5));
        let tls = connection(&["--addr", "https://h:7443", "watch", "--ca", "ca.pem"]);
        assert!(
            matches!(tls.target, Target::Tls { identity: None, .. }),
            "{tls:?}"
        );
    }

    #[test]
    fn a_command_that_does_not_talk_to_the_daemon_refuses_connection_options() {
        let err = request(&["--socket", "/a.sock", "topology"]).unwrap_err();
        assert!(
            err.contains("--socket is for the commands that talk to the daemon"),
            "{err}"
        );
        let err = request(&["containers", "--host", "--wait"]).unwrap_err();
        assert!(err.contains("`placectl containers` as given"), "{err}");
        // After the name of a command that has none, clap refuses it as any unknown flag.
        let err = request(&["topology", "--socket", "/a.sock"]).unwrap_err();
        assert!(err.contains("unexpected argument '--socket'"), "{err}");
        assert!(matches!(
            request(&["topology"]),
            Ok(Request {
                task: Task::Local(_),
                ..
            })
        ));
    }

    #[test]
    fn tls_options_come_in_pairs() {
        for (args, says) in [
            (
                &["--addr", "https://h:1", "status"][..],
                "--addr needs --ca",
            ),
            (&["status", "--cert", "c.pem"], "--cert needs --key"),
            (&["--key", "k.pem", "status"], "--key needs --cert"),
        ] {
            let err = request(args).unwrap_err();
            assert!(err.contains(says), "{args:?}: {err}");
        }
    }

    #[test]
    fn what_a_command_takes_is_checked_before_connecting() {
        let err = request(&["manage", "web", "--policy", "fastest"]).unwrap_err();
        assert!(err.contains("fastest"), "{err}");
        let err = request(&[
            "move",
            "web",
            "--cpus",
            "0",
            "--mems",
            "0",
            "--workers",
            "2",
        ])
        .unwrap_err();
        assert!(err.contains("--workers"), "{err}");
    }
}
