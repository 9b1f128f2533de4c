//! What a daemon command can fail with, classified by who has to act, so that the service
//! maps each to its gRPC code in one place.

use placed_core::fault::Fault;

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// The request is malformed (vcpus = 0, goal outside (0, 2], unknown placement id).
    #[error("{0}")]
    BadRequest(String),
    /// No such container, or it stopped.
    #[error("{0}")]
    NotFound(String),
    /// Another operation on this container is in progress.
    #[error(
        "container {container} is busy: {operation} since {seconds} s ago; retry when it is done"
    )]
    Busy {
        container: String,
        operation: String,
        seconds: u64,
    },
    /// No model for this machine class and vCPU count.
    #[error(
        "no model for machine class {fingerprint} with {vcpus} vCPUs in {dir}; train one on this host with `{cmd}` (or copy one trained on an identical host)",
        cmd = placed_models::train_command(.vcpus, .dir)
    )]
    NoModel {
        fingerprint: String,
        vcpus: usize,
        dir: String,
    },
    /// The host or the daemon's state does not allow it (no metric source, no room,
    /// cgroup not writable).
    #[error("{0}")]
    Precondition(String),
    /// The daemon is starting or stopping, or a transient failure: retry.
    #[error("{0}")]
    Unavailable(String),
    /// A bug or an unexpected failure.
    #[error("{0}")]
    Internal(String),
}

impl DaemonError {
    /// From an error that knows its fault (enactment, containers, cgroups).
    pub fn from_fault(fault: Fault, message: String) -> Self {
        match fault {
            Fault::InvalidInput => Self::BadRequest(message),
            Fault::NotFound => Self::NotFound(message),
            Fault::HostConfig => Self::Precondition(message),
            Fault::Transient => Self::Unavailable(message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_no_model_error_names_the_real_training_command() {
        let e = DaemonError::NoModel {
            fingerprint: "mc1-x".into(),
            vcpus: 4,
            dir: "/var/lib/placed/models".into(),
        };
        let text = e.to_string();
        assert!(
            text.contains(
                "`placed-train train --vcpus 4 --workloads builtin --model-dir /var/lib/placed/models`"
            ),
            "{text}"
        );
        assert!(text.contains(&placed_models::train_command(4, "/var/lib/placed/models")));
    }
}
