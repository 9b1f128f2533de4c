//! The exit codes of `placed`, `placectl` and `placed-train`: one table for the three
//! binaries, so that a script can tell "not found" from "try again" from "fix the host"
//! whichever of them it runs.
//!
//! | code | name | meaning |
//! |---|---|---|
//! | 0 | `Success` | the command did what was asked |
//! | 1 | `No` | a clean "no": the question had an answer and it was negative |
//! | 2 | `BadInput` | bad input: unknown flag, malformed value, refused request |
//! | 3 | `NotFound` | what the command names does not exist |
//! | 4 | `Refused` | the host or the daemon is not set up for this; the operator must act |
//! | 5 | `Unavailable` | not now: the daemon is down, starting or busy; retrying may work |
//! | 6 | `Failed` | anything else: a failure the message explains |
//! | 130 | `Interrupted` | stopped by SIGINT, SIGTERM or SIGHUP, in good order |

use std::error::Error;

use crate::fault::Fault;

/// A process exit code from the shared table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Exit {
    Success = 0,
    No = 1,
    BadInput = 2,
    NotFound = 3,
    Refused = 4,
    Unavailable = 5,
    Failed = 6,
    Interrupted = 130,
}

impl Exit {
    /// Every code, in the order of the table (for help texts and man pages).
    pub const ALL: [Exit; 8] = [
        Exit::Success,
        Exit::No,
        Exit::BadInput,
        Exit::NotFound,
        Exit::Refused,
        Exit::Unavailable,
        Exit::Failed,
        Exit::Interrupted,
    ];

    /// The code of an error of this fault.
    pub fn of(fault: Fault) -> Self {
        match fault {
            Fault::InvalidInput => Exit::BadInput,
            Fault::NotFound => Exit::NotFound,
            Fault::HostConfig => Exit::Refused,
            Fault::Transient | Fault::Conflict => Exit::Unavailable,
            Fault::Internal => Exit::Failed,
        }
    }

    pub fn code(self) -> u8 {
        self as u8
    }

    /// One line per code, for `--help` texts and man pages.
    pub fn describe(self) -> &'static str {
        match self {
            Exit::Success => "success",
            Exit::No => "a clean \"no\" (for example: recommend says stay)",
            Exit::BadInput => {
                "bad input: unknown flag, malformed value, request refused as invalid"
            }
            Exit::NotFound => "not found: no such container, file or placement",
            Exit::Refused => {
                "refused: the host or daemon is not set up for this (operator must act)"
            }
            Exit::Unavailable => "unavailable: daemon down, starting or busy; retrying may work",
            Exit::Failed => "failed: any other error, explained on stderr",
            Exit::Interrupted => "interrupted by SIGINT, SIGTERM or SIGHUP, stopped in good order",
        }
    }

    /// The table as text, for the end of `--help`.
    pub fn help_table() -> String {
        let mut s = String::from("Exit status:\n");
        for e in Self::ALL {
            s.push_str(&format!("  {:>3}  {}\n", e.code(), e.describe()));
        }
        s
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> Self {
        std::process::ExitCode::from(e.code())
    }
}

/// The exit code of an error: that of the first error in its chain `known` recognises
/// (the binaries know their own error types), else [`Exit::Failed`].
pub fn from_chain(
    err: &(dyn Error + 'static),
    known: impl Fn(&(dyn Error + 'static)) -> Option<Exit>,
) -> Exit {
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(code) = known(e) {
            return code;
        }
        next = e.source();
    }
    Exit::Failed
}

/// Parses the command line the way all three binaries do: `--help` and `--version` print
/// and end in success, a usage error prints and ends in [`Exit::BadInput`] like every
/// other bad input (clap's own code would be 2 for both kinds of failure).
#[cfg(feature = "cli")]
pub fn parse_args<P: clap::Parser>() -> Result<P, Exit> {
    P::try_parse().map_err(|e| {
        let _ = e.print();
        if e.use_stderr() {
            Exit::BadInput
        } else {
            Exit::Success
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fault_has_its_code_and_codes_are_distinct() {
        assert_eq!(Exit::of(Fault::InvalidInput).code(), 2);
        assert_eq!(Exit::of(Fault::NotFound).code(), 3);
        assert_eq!(Exit::of(Fault::HostConfig).code(), 4);
        assert_eq!(Exit::of(Fault::Transient).code(), 5);
        assert_eq!(Exit::of(Fault::Conflict).code(), 5);
        assert_eq!(Exit::of(Fault::Internal).code(), 6);
        let mut codes: Vec<u8> = Exit::ALL.iter().map(|e| e.code()).collect();
        codes.dedup();
        assert_eq!(codes.len(), Exit::ALL.len());
        assert!(Exit::help_table().contains("130  interrupted"));
    }
}
