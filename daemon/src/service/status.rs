//! Errors as gRPC statuses: the one code each fault maps to, the message clipped, and the
//! details a client acts on without reading the message: `google.rpc.ErrorInfo` with a
//! stable reason (domain `placed.io`, the table in docs/api.md), `BadRequest` naming the
//! field at fault on INVALID_ARGUMENT, and `RetryInfo` on ABORTED and UNAVAILABLE.

use std::collections::HashMap;
use std::time::Duration;

use placed_core::fault::Fault;
use tonic::Status;
use tonic_types::{ErrorDetails, StatusExt};

use crate::lifecycle::DaemonError;

/// The one place daemon errors become gRPC codes: from who has to act ([`Fault`]), with
/// the error and its causes on one line as the message.
pub fn status_of(e: DaemonError) -> Status {
    let fault = e.fault();
    let line = e.line();
    let mut details = ErrorDetails::new();
    details.set_error_info(e.reason(), DOMAIN, HashMap::new());
    if let Some(field) = e.field() {
        details.add_bad_request_violation(field, placed_core::text::clip(&e.to_string(), 500));
    }
    if let Some(after) = retry_after(fault) {
        details.set_retry_info(Some(after));
    }
    with_details(status_for(fault, line), details)
}

/// The domain of every `ErrorInfo` placed sends.
pub const DOMAIN: &str = "placed.io";

/// How long a client should wait before retrying a call that failed with `fault`: ABORTED
/// (another operation on the container, a fallen-behind watcher) and UNAVAILABLE (starting,
/// stopping, a noisy measurement) may succeed later; nothing else will by itself.
pub fn retry_after(fault: Fault) -> Option<Duration> {
    match fault {
        Fault::Conflict => Some(Duration::from_secs(1)),
        Fault::Transient => Some(Duration::from_secs(5)),
        _ => None,
    }
}

/// `status` with `details` attached (as `grpc-status-details-bin`).
pub fn with_details(status: Status, details: ErrorDetails) -> Status {
    Status::with_error_details(status.code(), status.message(), details)
}

/// Longest `grpc-message` sent: a message echoing a 100 KB id came back as an h2 protocol
/// error or RESOURCE_EXHAUSTED instead of the real error. Each error already clips what it
/// echoes; this bounds the whole line, causes included.
const MESSAGE_MAX: usize = 1000;

/// The gRPC status of an error of this fault.
pub fn status_for(fault: Fault, message: String) -> Status {
    let message = placed_core::text::clip(&message, MESSAGE_MAX);
    match fault {
        Fault::InvalidInput => Status::invalid_argument(message),
        Fault::NotFound => Status::not_found(message),
        Fault::HostConfig => Status::failed_precondition(message),
        Fault::Transient => Status::unavailable(message),
        Fault::Conflict => Status::aborted(message),
        Fault::Internal => Status::internal(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

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
