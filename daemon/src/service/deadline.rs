//! A call's deadline, from its `grpc-timeout` header, answered DEADLINE_EXCEEDED.
//!
//! tonic bounds every call by its `grpc-timeout` itself, outside any layer of ours, and
//! answers one that runs out `CANCELLED: Timeout expired`: a code that says the client gave
//! up, not that the deadline passed, and that clients do not retry as they retry a
//! deadline. The front layer ([`super::front`]) therefore reads the deadline first: a call
//! whose deadline has passed before its handler starts is answered DEADLINE_EXCEEDED
//! without running it, and one whose deadline passes while it runs is dropped at that
//! point (nothing after it happens) and answered DEADLINE_EXCEEDED just before tonic's own
//! timer would answer CANCELLED.

use std::time::Duration;

use tokio::time::Instant;
use tonic::Code;

use super::status::Refusal;

/// When a call with these headers must be answered by; `None` without a valid
/// `grpc-timeout` (a malformed one is ignored, as tonic ignores it).
pub fn of(headers: &http::HeaderMap) -> Option<Instant> {
    let timeout = parse(headers.get("grpc-timeout")?.to_str().ok()?)?;
    Some(
        Instant::now()
            .checked_add(timeout)
            .unwrap_or_else(far_future),
    )
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400 * 365)
}

/// `grpc-timeout`: at most 8 digits and a unit (H, M, S, m, u, n), as the gRPC over
/// HTTP/2 protocol defines it.
fn parse(value: &str) -> Option<Duration> {
    let (digits, unit) = value.split_at(value.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// The answer to a call whose deadline passed before it started: nothing was done.
pub fn passed_before_start() -> tonic::Status {
    Refusal::new(
        Code::DeadlineExceeded,
        "DEADLINE_EXCEEDED",
        "the call's deadline (grpc-timeout) had passed when placed took it up: nothing was done; call again with a longer deadline",
    )
    .status()
}

/// The answer to a call whose deadline passed while it ran: it was stopped there.
pub fn passed_while_running() -> tonic::Status {
    Refusal::new(
        Code::DeadlineExceeded,
        "DEADLINE_EXCEEDED",
        "the call's deadline (grpc-timeout) passed before placed could answer: the call was stopped there (a move already under way goes on, and Watch follows it); read the state again before retrying",
    )
    .status()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeouts_parse_in_every_unit_and_nonsense_is_ignored() {
        assert_eq!(parse("0n"), Some(Duration::ZERO));
        assert_eq!(parse("1500m"), Some(Duration::from_millis(1500)));
        assert_eq!(parse("99999999u"), Some(Duration::from_micros(99_999_999)));
        assert_eq!(parse("2H"), Some(Duration::from_secs(7200)));
        assert_eq!(parse("3M"), Some(Duration::from_secs(180)));
        assert_eq!(parse("4S"), Some(Duration::from_secs(4)));
        for bad in ["", "S", "123456789S", "1x", "-1S", "1.5S", "1 S"] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }
}
