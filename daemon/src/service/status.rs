//! Errors as gRPC statuses: the one code each fault maps to, the message clipped, and the
//! details a client acts on without reading the message: `google.rpc.ErrorInfo` with a
//! stable reason (domain `placed.io`, the table in docs/api.md), `BadRequest` naming the
//! field at fault on INVALID_ARGUMENT, and `RetryInfo` on ABORTED and UNAVAILABLE.

use std::collections::HashMap;
use std::time::Duration;

use placed_core::fault::Fault;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use crate::lifecycle::DaemonError;

/// The one place daemon errors become gRPC codes: from who has to act ([`Fault`]), with
/// the error and its causes on one line as the message.
pub fn status_of(e: DaemonError) -> Status {
    Refusal::new(code_of(e.fault()), e.reason(), e.line())
        .field(e.field().map(|f| (f, e.to_string())))
        .status()
}

/// The domain of every `ErrorInfo` placed sends.
pub const DOMAIN: &str = "placed.io";

/// The `ErrorInfo.metadata` key of a Watch's resume point: the sequence to pass as
/// `resume_after_sequence` when watching again.
pub const RESUME_AFTER: &str = "resume_after_sequence";

/// How long a client should wait before retrying a call that failed with `code`: ABORTED
/// (another operation on the container, a fallen-behind watcher) and UNAVAILABLE (starting,
/// stopping, a noisy measurement) may succeed later; nothing else will by itself.
pub fn retry_after(code: Code) -> Option<Duration> {
    match code {
        Code::Aborted => Some(Duration::from_secs(1)),
        Code::Unavailable => Some(Duration::from_secs(5)),
        _ => None,
    }
}

/// Longest `grpc-message` sent: a message echoing a 100 KB id came back as an h2 protocol
/// error or RESOURCE_EXHAUSTED instead of the real error. Each error already clips what it
/// echoes; this bounds the whole line, causes included.
const MESSAGE_MAX: usize = 1000;

/// The gRPC code of an error of this fault.
pub fn code_of(fault: Fault) -> Code {
    match fault {
        Fault::InvalidInput => Code::InvalidArgument,
        Fault::NotFound => Code::NotFound,
        Fault::HostConfig => Code::FailedPrecondition,
        Fault::Transient => Code::Unavailable,
        Fault::Conflict => Code::Aborted,
        Fault::Internal => Code::Internal,
    }
}

/// The gRPC status of an error of this fault, with the reason its code has when no
/// daemon error says more.
pub fn status_for(fault: Fault, message: String) -> Status {
    let code = code_of(fault);
    Refusal::new(code, generic_reason(code), message).status()
}

fn generic_reason(code: Code) -> &'static str {
    match code {
        Code::InvalidArgument => "BAD_REQUEST",
        Code::Internal => "INTERNAL",
        _ => "UNSPECIFIED",
    }
}

/// A request field that is malformed or out of range: INVALID_ARGUMENT, reason
/// `BAD_REQUEST`, the field named in `BadRequest`.
pub fn bad_request(field: impl Into<String>, message: impl Into<String>) -> Status {
    let message = message.into();
    Refusal::new(Code::InvalidArgument, "BAD_REQUEST", message.clone())
        .field(Some((field, message)))
        .status()
}

/// A request message tonic could not decode, which its codec answers INTERNAL (by the
/// proto's own definition "a bug", and counted as the daemon's error): the caller's fault,
/// INVALID_ARGUMENT with reason `MALFORMED_REQUEST`. `None` for any other status.
pub fn malformed(status: &Status) -> Option<Status> {
    let m = status.message();
    let undecodable = m.starts_with("failed to decode Protobuf message")
        || m.starts_with("Missing request message")
        || m.starts_with("Unexpected EOF decoding stream");
    (status.code() == Code::Internal && undecodable).then(|| {
        Refusal::new(
            Code::InvalidArgument,
            "MALFORMED_REQUEST",
            format!("the request message could not be decoded as the method's request type: {m}"),
        )
        .status()
    })
}

/// A status the service builds (every one goes through here): its code, the stable
/// reason in `ErrorInfo` (docs/api.md), the field at fault in `BadRequest`, `RetryInfo`
/// where a retry may succeed, and data a client acts on in `ErrorInfo.metadata`.
#[derive(Debug)]
pub struct Refusal {
    code: Code,
    reason: &'static str,
    message: String,
    field: Option<(String, String)>,
    metadata: HashMap<String, String>,
}

impl Refusal {
    pub fn new(code: Code, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            field: None,
            metadata: HashMap::new(),
        }
    }

    /// The request field at fault and what is wrong with it.
    pub fn field<F: Into<String>>(mut self, field: Option<(F, String)>) -> Self {
        self.field = field.map(|(f, why)| (f.into(), why));
        self
    }

    /// A datum for `ErrorInfo.metadata`.
    pub fn with(mut self, key: &str, value: impl ToString) -> Self {
        self.metadata.insert(key.to_owned(), value.to_string());
        self
    }

    pub fn status(self) -> Status {
        let mut details = ErrorDetails::new();
        details.set_error_info(self.reason, DOMAIN, self.metadata);
        if let Some((field, why)) = self.field {
            details.add_bad_request_violation(field, placed_core::text::clip(&why, 500));
        }
        if let Some(after) = retry_after(self.code) {
            details.set_retry_info(Some(after));
        }
        let message = placed_core::text::clip(&self.message, MESSAGE_MAX);
        Status::with_error_details(self.code, message, details)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_carries_its_reason_and_the_field_or_retry_it_needs() {
        let bad = status_of(DaemonError::bad("vcpus", "must be at least 1"));
        assert_eq!(bad.code(), Code::InvalidArgument);
        let d = bad.get_error_details();
        let info = d.error_info().expect("ErrorInfo");
        assert_eq!(
            (info.reason.as_str(), info.domain.as_str()),
            ("BAD_REQUEST", DOMAIN)
        );
        let field = &d.bad_request().expect("BadRequest").field_violations[0];
        assert_eq!(field.field, "vcpus");
        assert!(d.retry_info().is_none());

        let busy = status_of(DaemonError::Busy {
            container: "web".into(),
            operation: "placing".into(),
            seconds: 3,
        });
        assert_eq!(busy.code(), Code::Aborted);
        let d = busy.get_error_details();
        assert_eq!(d.error_info().expect("ErrorInfo").reason, "CONTAINER_BUSY");
        assert_eq!(
            d.retry_info().and_then(|r| r.retry_delay),
            Some(Duration::from_secs(1))
        );
        assert!(d.bad_request().is_none());

        let gone = status_of(DaemonError::UnknownContainer {
            reference: "web".into(),
        });
        assert_eq!(gone.code(), Code::NotFound);
        assert_eq!(
            gone.get_error_details()
                .error_info()
                .expect("ErrorInfo")
                .reason,
            "CONTAINER_NOT_FOUND"
        );
    }
}
