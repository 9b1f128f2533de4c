//! Who has to act on an error: the caller, the operator, or nobody (retry).
//!
//! Every error of the host layer (`placed_host::cgroup`, `containers`, `migrate`, `enact`)
//! and of the daemon answers [`Fault`] through its `fault()` method, so that the daemon
//! maps errors to gRPC codes, and the binaries to exit codes ([`crate::exit::Exit`]), in one
//! place each, without matching on variants they do not own.

/// The class of an error, as seen by whoever called the library.
///
/// | fault | gRPC code | exit code | who fixes it |
/// |---|---|---|---|
/// | `InvalidInput` | `INVALID_ARGUMENT` | 2 | the caller: another name, another set |
/// | `NotFound` | `NOT_FOUND` | 3 | nobody: the container is not (or no longer) there |
/// | `HostConfig` | `FAILED_PRECONDITION` | 4 | the operator: mount a controller, train a model, ... |
/// | `Transient` | `UNAVAILABLE` | 5 | nobody: a race with the kernel or a runtime, retry later |
/// | `Conflict` | `ABORTED` | 5 | nobody: another operation holds the container, retry when it is done |
/// | `Internal` | `INTERNAL` | 6 | the developers: a bug or a failure nothing foresaw |
///
/// A requested set that the host cannot give (an offline CPU, a node without memory, CPUs
/// outside the parent cgroup's cpuset) is `InvalidInput`: the request must change, not the
/// host. A host that cannot do what any request needs (no cpuset controller, no freezer,
/// permission denied) is `HostConfig`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    /// Bad input: a malformed or unsafe name, an empty set, CPUs or nodes the host does not offer.
    InvalidInput,
    /// The container or cgroup does not exist, or vanished while we worked on it.
    NotFound,
    /// The host is not set up for this: missing controller, missing permission, no model,
    /// a kernel rule that the operator's configuration violates.
    HostConfig,
    /// A race or a temporary refusal (a freeze that did not complete, a runtime that did not
    /// answer, a daemon starting or stopping); trying again may work.
    Transient,
    /// Another operation on the same object is in progress; trying again when it is done
    /// will work.
    Conflict,
    /// Nothing the caller or the operator did: a bug, or a failure nothing foresaw.
    Internal,
}

impl Fault {
    /// A stable lower-case name, for logs, metrics labels and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Fault::InvalidInput => "invalid_input",
            Fault::NotFound => "not_found",
            Fault::HostConfig => "host_config",
            Fault::Transient => "transient",
            Fault::Conflict => "conflict",
            Fault::Internal => "internal",
        }
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
