//! placectl's exit code for an error: the shared table of `placed_core::exit`, chosen from
//! the error's type (a gRPC status's code, a host error's fault, an interrupted move), never
//! from its text.

use std::error::Error;

pub use placed_core::exit::Exit;

use placed_core::fault::Fault;

/// A gRPC status from the daemon, as an error: its message and its code on one line.
#[derive(Debug)]
pub struct StatusError(pub tonic::Status);

impl std::fmt::Display for StatusError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({:?})", self.0.message(), self.0.code())
    }
}

impl Error for StatusError {
    /// What the transport said, when the status came from the client's side of the
    /// connection (a TLS refusal, a reset) rather than from the daemon.
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.0.source().map(|s| s as &(dyn Error + 'static))
    }
}

impl From<tonic::Status> for StatusError {
    fn from(s: tonic::Status) -> Self {
        Self(s)
    }
}

/// The exit code of a gRPC status code.
pub fn exit_of_code(code: tonic::Code) -> Exit {
    use tonic::Code;
    match code {
        Code::Ok => Exit::Success,
        Code::InvalidArgument | Code::OutOfRange => Exit::BadInput,
        Code::NotFound => Exit::NotFound,
        Code::FailedPrecondition
        | Code::PermissionDenied
        | Code::Unauthenticated
        | Code::AlreadyExists => Exit::Refused,
        Code::Unavailable
        | Code::Aborted
        | Code::DeadlineExceeded
        | Code::ResourceExhausted
        | Code::Cancelled => Exit::Unavailable,
        Code::Unknown | Code::Unimplemented | Code::Internal | Code::DataLoss => Exit::Failed,
    }
}

/// The exit code of an error, from the first error in its chain whose type says.
pub fn exit_of(err: &(dyn Error + 'static)) -> Exit {
    placed_core::exit::from_chain(err, known)
}

fn known(e: &(dyn Error + 'static)) -> Option<Exit> {
    if tls_refused(e) {
        return Some(Exit::Refused);
    }
    if let Some(s) = e.downcast_ref::<StatusError>() {
        // Not the daemon's answer: the connection went away under the call (a server that
        // closes it, on a refused client certificate or a restart). Try again.
        if lost_connection(&s.0) {
            return Some(Exit::Unavailable);
        }
        return Some(exit_of_code(s.0.code()));
    }
    if e.is::<crate::commands::DaemonGone>() {
        return Some(Exit::Unavailable);
    }
    if let Some(s) = e.downcast_ref::<tonic::Status>() {
        return Some(exit_of_code(s.code()));
    }
    if let Some(m) = e.downcast_ref::<super::enact::MoveError>() {
        return Some(match m {
            super::enact::MoveError::Interrupted { .. } => Exit::Interrupted,
            super::enact::MoveError::Apply(a) => Exit::of(a.fault()),
            super::enact::MoveError::Signals(_) => Exit::Failed,
        });
    }
    if let Some(c) = e.downcast_ref::<crate::client::ConnectError>() {
        return Some(match c {
            crate::client::ConnectError::File { source, .. }
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                Exit::NotFound
            }
            crate::client::ConnectError::File { .. } => Exit::Refused,
            // No daemon to answer: try again when it runs.
            _ => Exit::Unavailable,
        });
    }
    if let Some(h) = e.downcast_ref::<placed_host::enact::Error>() {
        return Some(Exit::of(h.fault()));
    }
    if let Some(m) = e.downcast_ref::<placed_core::machine::MachineError>() {
        return Some(if !m.is_bad_input() {
            Exit::of(Fault::HostConfig)
        } else if io_not_found(e) {
            Exit::NotFound
        } else {
            Exit::BadInput
        });
    }
    if e.is::<placed_core::placement::PlacementError>()
        || e.is::<placed_core::policy::PolicyError>()
        || e.is::<UsageError>()
        || e.is::<crate::metric::MetricError>()
    {
        return Some(Exit::BadInput);
    }
    None
}

/// Whether a status is not the daemon's answer but the client's report that the connection
/// closed or was reset under the call (the daemon stopped, restarted or was killed; over
/// TLS, it may also have refused the client).
pub fn lost_connection(s: &tonic::Status) -> bool {
    s.code() == tonic::Code::Unknown
        && any_in(
            s.source().map(|e| e as &(dyn Error + 'static)),
            connection_lost,
        )
}

/// Whether a connection failed in TLS: a certificate one side does not trust, or one the
/// server requires and the client did not give. On a TLS connection only the TLS layer
/// reports `InvalidData`; depending on the TLS version the failure shows while connecting
/// or on the first call, so both places are looked at.
pub fn tls_refused(e: &(dyn Error + 'static)) -> bool {
    let over_tls = matches!(
        e.downcast_ref::<crate::client::ConnectError>(),
        Some(crate::client::ConnectError::Tcp { .. })
    ) || e.is::<StatusError>();
    over_tls && chain_has(e, |io| io.kind() == std::io::ErrorKind::InvalidData)
}

/// What to do about a TLS refusal, for the error line.
pub const TLS_HINT: &str = "TLS refused the connection: --ca must be the CA that signed the daemon's certificate, and --cert/--key a client certificate signed by the daemon's grpc.tls.client_ca";

fn chain_has(e: &(dyn Error + 'static), pred: impl Fn(&std::io::Error) -> bool) -> bool {
    any_in(e.source(), pred)
}

/// Whether `first` or an error below it is an I/O error `pred` holds for.
fn any_in(first: Option<&(dyn Error + 'static)>, pred: impl Fn(&std::io::Error) -> bool) -> bool {
    let mut next = first;
    while let Some(s) = next {
        if io_of(s).is_some_and(&pred) {
            return true;
        }
        next = s.source();
    }
    false
}

/// The I/O error an error is: a plain one, or the one inside an HTTP/2 error.
fn io_of<'a>(e: &'a (dyn Error + 'static)) -> Option<&'a std::io::Error> {
    e.downcast_ref::<std::io::Error>()
        .or_else(|| e.downcast_ref::<h2::Error>().and_then(h2::Error::get_io))
}

/// The peer closed or reset the connection.
fn connection_lost(io: &std::io::Error) -> bool {
    use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset, UnexpectedEof};
    matches!(
        io.kind(),
        BrokenPipe | ConnectionReset | ConnectionAborted | UnexpectedEof
    )
}

/// Whether the chain below `e` ends in a file that does not exist.
fn io_not_found(e: &(dyn Error + 'static)) -> bool {
    chain_has(e, |io| io.kind() == std::io::ErrorKind::NotFound)
}

/// A command line that parsed but makes no sense (an empty metric command, say).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_map_to_the_shared_table_by_type() {
        let status = StatusError(tonic::Status::not_found("placed manages no container x"));
        assert_eq!(exit_of(&status), Exit::NotFound);
        let busy = StatusError(tonic::Status::aborted("busy"));
        assert_eq!(exit_of(&busy), Exit::Unavailable);
        let refused = StatusError(tonic::Status::failed_precondition("no model"));
        assert_eq!(exit_of(&refused), Exit::Refused);
        assert_eq!(exit_of(&UsageError("x".into())), Exit::BadInput);
        let io = std::io::Error::other("disk on fire");
        assert_eq!(exit_of(&io), Exit::Failed);
    }

    #[test]
    fn a_connection_lost_under_a_call_is_try_again() {
        use std::io::{Error as Io, ErrorKind};
        let lost = |e: Box<dyn Error + Send + Sync>| StatusError(tonic::Status::from_error(e));
        // h2 wraps these (a server that closed the stream) in errors of its own that tests
        // cannot build; the TLS end-to-end test meets the real one.
        let pipe = Io::new(ErrorKind::BrokenPipe, "stream closed");
        assert_eq!(exit_of(&lost(Box::new(pipe))), Exit::Unavailable);
        let reset = Io::new(ErrorKind::ConnectionReset, "reset");
        assert_eq!(exit_of(&lost(Box::new(reset))), Exit::Unavailable);
        // Any other transport failure stays a failure.
        let other = Io::other("certificate store unreadable");
        assert_eq!(exit_of(&lost(Box::new(other))), Exit::Failed);
    }
}
