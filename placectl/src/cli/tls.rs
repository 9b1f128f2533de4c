//! Why a TLS connection to the daemon failed, in one line that says what to change.
//!
//! tonic reports every TLS failure as `transport error` while connecting, or as `operation
//! was canceled (Cancelled)` or `(Unknown)` on the first call, depending on the TLS version
//! and on which side refused. The cause is a `rustls::Error` inside an I/O error somewhere
//! in the chain (tokio-rustls wraps it as `InvalidData`, h2 keeps its I/O error out of
//! `source()`); this module finds it and names the case.

use std::error::Error;

use rustls::{AlertDescription, CertificateError, InvalidMessage};

/// What went wrong in TLS, each with its own advice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsFailure {
    /// The daemon's certificate is not signed by the CA given with `--ca`.
    UnknownCa,
    /// The daemon's certificate does not name the host in `--addr`.
    WrongName,
    /// The daemon's certificate has expired.
    Expired,
    /// The daemon's certificate is not valid yet.
    NotYetValid,
    /// The daemon requires a client certificate and got none.
    ClientCertificateRequired,
    /// The daemon refused the client certificate given.
    ClientCertificateRefused,
    /// The daemon closed the connection under a call, and the client sent no certificate:
    /// what a daemon requiring client certificates does under TLS 1.3 when its alert loses
    /// the race with its closing the connection.
    ClosedWithoutCertificate,
    /// The same with a client certificate: the daemon may have refused it.
    ClosedWithCertificate,
    /// The server does not speak TLS (a plaintext server, another service on that port).
    NotTls,
    /// Anything else TLS refused, as rustls says it.
    Other(String),
}

impl std::fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::UnknownCa => f.write_str(
                "the daemon's certificate is not signed by the CA given with --ca: pass the CA that signed the daemon's grpc.tls.cert",
            ),
            Self::WrongName => f.write_str(
                "the daemon's certificate is not valid for the host name in --addr: use a name the certificate lists (its subject alternative names), or reissue it for this one",
            ),
            Self::Expired => f.write_str(
                "the daemon's certificate has expired: renew grpc.tls.cert and restart placed (or check this host's clock)",
            ),
            Self::NotYetValid => f.write_str(
                "the daemon's certificate is not valid yet: check the clocks of this host and the daemon's",
            ),
            Self::ClientCertificateRequired => f.write_str(
                "the daemon requires a client certificate (grpc.tls.client_ca): pass --cert and --key",
            ),
            Self::ClientCertificateRefused => f.write_str(
                "the daemon refused the client certificate: --cert must be signed by the CA of the daemon's grpc.tls.client_ca, and still be valid",
            ),
            Self::ClosedWithoutCertificate => f.write_str(
                "the daemon closed the TLS connection without answering: if it requires client certificates (grpc.tls.client_ca), pass --cert and --key",
            ),
            Self::ClosedWithCertificate => f.write_str(
                "the daemon closed the TLS connection without answering: if it refused the client certificate, --cert must be signed by the CA of its grpc.tls.client_ca (its log says why it closed)",
            ),
            Self::NotTls => f.write_str(
                "the server at --addr does not speak TLS (a plaintext server, or another service on that port): check the address and port of the daemon's grpc.tcp",
            ),
            Self::Other(e) => write!(
                f,
                "TLS refused the connection ({e}): --ca must be the CA that signed the daemon's certificate, and --cert/--key a client certificate signed by the daemon's grpc.tls.client_ca"
            ),
        }
    }
}

impl TlsFailure {
    /// The exit code that goes with the line: a connection the daemon closed without
    /// saying why may be a restart (try again, 5); every other case is a refusal that
    /// repeats until a setting changes (4). Decided here, with the wording, so that the
    /// two never disagree whatever else the error chain holds.
    pub fn exit(&self) -> placed_core::exit::Exit {
        match self {
            Self::ClosedWithCertificate | Self::ClosedWithoutCertificate => {
                placed_core::exit::Exit::Unavailable
            }
            _ => placed_core::exit::Exit::Refused,
        }
    }
}

/// The TLS failure behind `e`, if TLS is why it failed.
pub fn failure(e: &(dyn Error + 'static)) -> Option<TlsFailure> {
    let mut next: Option<&(dyn Error + 'static)> = Some(e);
    while let Some(err) = next {
        if let Some(t) = rustls_of(err).map(classify) {
            return Some(t);
        }
        next = err.source();
    }
    None
}

/// A TLS connection the daemon closed under a call, with no TLS error to say why (the
/// status comes from the client's transport, not from the daemon, which never answers
/// CANCELLED or UNKNOWN): named by whether the client sent a certificate.
pub fn closed_by_daemon(e: &(dyn Error + 'static), with_certificate: bool) -> Option<TlsFailure> {
    let status = &e.downcast_ref::<crate::cli::StatusError>()?.0;
    let from_transport = status.source().is_some()
        && matches!(status.code(), tonic::Code::Cancelled | tonic::Code::Unknown);
    from_transport.then_some(if with_certificate {
        TlsFailure::ClosedWithCertificate
    } else {
        TlsFailure::ClosedWithoutCertificate
    })
}

/// The rustls error an error is or carries (inside an I/O error, or an HTTP/2 error's).
fn rustls_of<'a>(e: &'a (dyn Error + 'static)) -> Option<&'a rustls::Error> {
    if let Some(r) = e.downcast_ref::<rustls::Error>() {
        return Some(r);
    }
    let io = e
        .downcast_ref::<std::io::Error>()
        .or_else(|| e.downcast_ref::<h2::Error>().and_then(h2::Error::get_io))?;
    io.get_ref()?.downcast_ref::<rustls::Error>()
}

fn classify(e: &rustls::Error) -> TlsFailure {
    use rustls::Error as E;
    match e {
        E::InvalidCertificate(c) => match c {
            CertificateError::UnknownIssuer | CertificateError::BadSignature => {
                TlsFailure::UnknownCa
            }
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                TlsFailure::WrongName
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                TlsFailure::Expired
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                TlsFailure::NotYetValid
            }
            other => TlsFailure::Other(format!("the daemon's certificate: {other:?}")),
        },
        E::AlertReceived(AlertDescription::CertificateRequired) => {
            TlsFailure::ClientCertificateRequired
        }
        E::AlertReceived(
            AlertDescription::BadCertificate
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateUnknown
            | AlertDescription::CertificateExpired
            | AlertDescription::CertificateRevoked
            | AlertDescription::DecryptError
            | AlertDescription::AccessDenied,
        ) => TlsFailure::ClientCertificateRefused,
        E::InvalidMessage(InvalidMessage::InvalidContentType)
        | E::InvalidMessage(InvalidMessage::UnknownProtocolVersion)
        | E::InvalidMessage(InvalidMessage::MessageTooLarge) => TlsFailure::NotTls,
        other => TlsFailure::Other(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::StatusError;

    /// As tokio-rustls hands a rustls error up: inside an `InvalidData` I/O error.
    fn wrapped(e: rustls::Error) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidData, e)
    }

    #[test]
    fn each_tls_failure_is_named_wherever_it_sits_in_the_chain() {
        let cases = [
            (
                rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer),
                TlsFailure::UnknownCa,
            ),
            (
                rustls::Error::InvalidCertificate(CertificateError::NotValidForName),
                TlsFailure::WrongName,
            ),
            (
                rustls::Error::InvalidCertificate(CertificateError::Expired),
                TlsFailure::Expired,
            ),
            (
                rustls::Error::AlertReceived(AlertDescription::CertificateRequired),
                TlsFailure::ClientCertificateRequired,
            ),
            (
                rustls::Error::AlertReceived(AlertDescription::UnknownCA),
                TlsFailure::ClientCertificateRefused,
            ),
            (
                rustls::Error::InvalidMessage(InvalidMessage::InvalidContentType),
                TlsFailure::NotTls,
            ),
        ];
        for (e, want) in cases {
            let text = format!("{e}");
            // On the first call: a status whose source is the transport's I/O error.
            let status = StatusError(tonic::Status::from_error(Box::new(wrapped(e))));
            assert_eq!(failure(&status), Some(want.clone()), "{text}");
            // And plain, as a connect error's cause.
            let io = wrapped(rustls::Error::General(text.clone()));
            assert!(matches!(failure(&io), Some(TlsFailure::Other(_))), "{text}");
        }
        let plain = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        assert_eq!(failure(&plain), None);
        // A close is "try again"; every named refusal is "refused".
        use placed_core::exit::Exit;
        assert_eq!(
            TlsFailure::ClosedWithoutCertificate.exit(),
            Exit::Unavailable
        );
        assert_eq!(TlsFailure::ClosedWithCertificate.exit(), Exit::Unavailable);
        assert_eq!(TlsFailure::ClientCertificateRequired.exit(), Exit::Refused);
        assert_eq!(TlsFailure::UnknownCa.exit(), Exit::Refused);
    }

    #[test]
    fn a_connection_the_daemon_closed_is_explained_by_what_the_client_sent() {
        let closed = || {
            let io = std::io::Error::new(std::io::ErrorKind::BrokenPipe, "connection closed");
            let mut s = tonic::Status::cancelled("operation was canceled");
            s.set_source(std::sync::Arc::new(io));
            StatusError(s)
        };
        assert_eq!(
            closed_by_daemon(&closed(), false),
            Some(TlsFailure::ClosedWithoutCertificate)
        );
        assert_eq!(
            closed_by_daemon(&closed(), true),
            Some(TlsFailure::ClosedWithCertificate)
        );
        // The daemon's own answer is never taken for a closed connection.
        let answered = StatusError(tonic::Status::not_found("no container x"));
        assert_eq!(closed_by_daemon(&answered, false), None);
        let unknown = StatusError(tonic::Status::unknown("from the server"));
        assert_eq!(closed_by_daemon(&unknown, false), None);
    }

    #[test]
    fn every_line_says_what_to_change() {
        for (t, says) in [
            (TlsFailure::UnknownCa, "--ca"),
            (TlsFailure::WrongName, "--addr"),
            (TlsFailure::Expired, "renew"),
            (TlsFailure::ClientCertificateRequired, "--cert and --key"),
            (TlsFailure::ClientCertificateRefused, "client_ca"),
            (TlsFailure::NotTls, "does not speak TLS"),
            (
                TlsFailure::ClosedWithoutCertificate,
                "pass --cert and --key",
            ),
            (TlsFailure::ClosedWithCertificate, "client_ca"),
        ] {
            let line = t.to_string();
            assert!(line.contains(says), "{line}");
            assert!(!line.contains('\n'), "{line}");
        }
    }
}
