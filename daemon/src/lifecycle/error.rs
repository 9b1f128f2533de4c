//! What the daemon's commands and lifecycle can fail with.
//!
//! Each error keeps its cause as `source()` and knows its [`Fault`] (who has to act), so
//! that the gRPC status (`service::status_of`), the log line and the container's `detail`
//! all come from the type: the message says what the daemon was doing, the cause chain
//! says why, and nothing is printed twice ([`placed_core::text::Chain`]).

use placed_core::cpuset::{CpuSet, NodeSet};
use placed_core::fault::Fault;
use placed_core::placement::PlacementError;
use placed_core::policy::PolicyError;
use placed_host::observe::{CompareError, ObserveError, PushedError, SpecError};

use crate::state::StateError;

/// Container names and ids in messages are cut to this many characters: they come from
/// requests and runtimes, and an answer must not echo 100 KB back.
const NAME_MAX: usize = 200;

fn clip(s: &str) -> String {
    placed_core::text::clip(s, NAME_MAX)
}

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// A request field that is malformed or out of range.
    #[error("{field}: {reason}")]
    BadRequest { field: &'static str, reason: String },

    /// A policy the request names is unknown or out of range, or a policy cannot decide.
    #[error("policy")]
    Policy(#[source] Box<PolicyError>),

    /// A pinned policy or `Place` names a placement that is not an important one.
    #[error(
        "placement {} is not an important placement for {vcpus} vCPUs on this machine (placectl placements --vcpus {vcpus} lists them)",
        clip(.placement)
    )]
    UnknownPlacement { placement: String, vcpus: usize },

    /// No important placement exists for this many vCPUs here.
    #[error("no placement for {vcpus} vCPUs on this machine")]
    Placements {
        vcpus: usize,
        #[source]
        source: Box<PlacementError>,
    },

    /// The daemon manages no such container.
    #[error(
        "placed manages no container {}; `placectl containers` lists them, and Manage (placectl manage) takes one over",
        clip(.reference)
    )]
    UnknownContainer { reference: String },

    /// A name or id prefix several managed containers share.
    #[error(
        "{} names several managed containers ({candidates}): name one by its id",
        clip(.reference)
    )]
    AmbiguousContainer {
        reference: String,
        candidates: String,
    },

    /// A cgroup nested with a managed one: a parent's cpuset bounds its children's.
    #[error(
        "{cgroup} cannot be managed with {others}: one contains the other, and a parent's cpuset bounds its children's; manage the containers, not the cgroup above them"
    )]
    Nested { cgroup: String, others: String },

    /// Another operation on this container is in progress.
    #[error(
        "container {} is busy: {operation} since {seconds} s ago; retry when it is done",
        clip(.container)
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

    /// The model for this machine class was installed over the accuracy gate
    /// (`placed-train --accept-inaccurate`): its predictions are shown, never acted on.
    #[error(
        "model {model_id} ({path}) is below the accuracy gate ({reason}): the daemon observes with it and moves nothing; retrain on this host (`{cmd}`) to act on predictions",
        cmd = placed_models::train_command(.vcpus, .dir)
    )]
    BelowGate {
        model_id: String,
        path: String,
        reason: String,
        vcpus: usize,
        dir: String,
    },

    /// The live gate stopped the model: on this host's own containers its intervals missed
    /// what was measured far more often than its calibration promised.
    #[error(
        "model {model_id} is stopped by the live gate since {since} ({reason}): the daemon observes with it and moves nothing; retrain it with this host's production data, or enable it again with `placectl model enable {model_id}`"
    )]
    ModelStopped {
        model_id: String,
        /// When it was stopped, RFC 3339.
        since: String,
        reason: String,
    },

    /// No model of that id is stopped (enabling one).
    #[error("model {} is not stopped by the live gate: nothing to enable", clip(.model_id))]
    NotStopped { model_id: String },

    /// The container has no metric source to be measured with.
    #[error(
        "container {} has no metric source: give it one with Manage (placectl manage {} --metric ...), or run on a host with hardware counters",
        clip(.container), clip(.container)
    )]
    NoMetric { container: String },

    /// A perf metric was asked for on a host without a PMU.
    #[error(
        "perf counters are not available on this host (no PMU): use a pushed, Prometheus or command metric"
    )]
    NoPmu,

    /// A command metric was asked for while the configuration does not allow them.
    #[error(
        "command metrics are off: a command runs on the host, so the operator must allow them (observe.allow_command_metrics, run as observe.command_user); use a pushed or Prometheus metric"
    )]
    CommandMetricsOff,

    /// A sample was pushed for a container whose metric is not pushed.
    #[error(
        "container {} does not take pushed metrics (its metric source is {metric}); set one with Manage",
        clip(.container)
    )]
    NotPushed { container: String, metric: String },

    /// A pushed sample was refused.
    #[error("sample for {}", clip(.container))]
    Sample {
        container: String,
        #[source]
        source: Box<PushedError>,
    },

    /// The units a measurement placement needs are held by other containers.
    #[error(
        "no room to measure {} in {placement}: the units it needs are held by other containers",
        clip(.container)
    )]
    NoRoom {
        container: String,
        placement: String,
    },

    /// `Recommend` with a policy that never moves anything.
    #[error(
        "policy {policy} never moves a container; choose another policy to get a recommendation"
    )]
    NeverMoves { policy: String },

    /// The model policy was ordered before the container had a prediction.
    #[error(
        "the model policy needs a prediction for {} first (placectl predict {})",
        clip(.container), clip(.container)
    )]
    NeedsPrediction { container: String },

    /// The container's settings changed while an on-demand prediction ran.
    #[error("the settings of {} changed during the prediction; ask again", clip(.container))]
    SettingsChanged { container: String },

    /// The container's metric source could not be built.
    #[error("metric source of {}", clip(.container))]
    MetricSource {
        container: String,
        #[source]
        source: Box<SpecError>,
    },

    /// Measuring the container failed.
    #[error("measuring {}", clip(.container))]
    Measure {
        container: String,
        #[source]
        source: Box<ObserveError>,
    },

    /// Baseline and probe measured different runs of the workload.
    #[error("comparing the baseline and probe of {}; measuring again", clip(.container))]
    Compare {
        container: String,
        #[source]
        source: Box<CompareError>,
    },

    /// The model could not predict from the observations.
    #[error("predicting {}", clip(.container))]
    Predict {
        container: String,
        #[source]
        source: Box<placed_models::model::PredictError>,
    },

    /// Something the host layer did for the daemon failed (resolve, read, move).
    #[error("{doing} {}", clip(.container))]
    Host {
        /// What the daemon was doing ("moving", "resolving", "reading the cpuset of").
        doing: &'static str,
        container: String,
        #[source]
        source: Box<placed_host::enact::Error>,
    },

    /// Shutdown stopped a throttled move half-way; the next start settles it.
    #[error(
        "moving {}: stopped by shutdown half-way (cpus {cpus}, mems {mems}); the next start settles it",
        clip(.container)
    )]
    StoppedHalfway {
        container: String,
        cpus: CpuSet,
        mems: NodeSet,
    },

    /// The state file could not be written.
    #[error("recording the daemon's state")]
    State(#[source] std::sync::Arc<StateError>),

    /// A batch placed all or nothing, and another container of it could not be placed.
    #[error("{name} was not placed: the batch is all or nothing, and {failed} could not be placed")]
    BatchRefused { name: String, failed: String },

    /// No reservation of that id is held (never made, claimed, released or expired).
    #[error(
        "no reservation {}: never made, or already claimed, released or expired",
        clip(.id)
    )]
    UnknownReservation { id: String },

    /// A claim that does not fit its reservation.
    #[error("reservation {} does not fit: {reason}", clip(.id))]
    ReservationMismatch { id: String, reason: String },

    /// The error of an operation this caller joined (a `Place` or `Predict` in flight).
    #[error(transparent)]
    Shared(std::sync::Arc<DaemonError>),

    /// The daemon is stopping: the operation was not carried out.
    #[error("placed is stopping")]
    Stopping,

    /// A blocking task of the daemon panicked or was cancelled.
    #[error("internal error while {doing}")]
    Task {
        doing: &'static str,
        #[source]
        source: tokio::task::JoinError,
    },
}

impl DaemonError {
    /// Who has to act; the gRPC code and the exit code follow from it.
    pub fn fault(&self) -> Fault {
        match self {
            Self::BadRequest { .. } | Self::UnknownPlacement { .. } => Fault::InvalidInput,
            // The policy is valid; it just never chooses anywhere.
            Self::NeverMoves { .. } => Fault::HostConfig,
            Self::Policy(e) if e.is_bad_request() => Fault::InvalidInput,
            // No prediction yet, no room: the state of the host, not the request.
            Self::Policy(_) => Fault::HostConfig,
            Self::Placements { .. } => Fault::InvalidInput,
            Self::UnknownContainer { .. }
            | Self::UnknownReservation { .. }
            | Self::NotStopped { .. } => Fault::NotFound,
            Self::ReservationMismatch { .. }
            | Self::AmbiguousContainer { .. }
            | Self::Nested { .. } => Fault::InvalidInput,
            Self::BatchRefused { .. } => Fault::HostConfig,
            Self::Busy { .. } => Fault::Conflict,
            Self::NoModel { .. }
            | Self::BelowGate { .. }
            | Self::ModelStopped { .. }
            | Self::NoMetric { .. }
            | Self::NoPmu
            | Self::CommandMetricsOff
            | Self::NotPushed { .. }
            | Self::NeedsPrediction { .. }
            | Self::Predict { .. } => Fault::HostConfig,
            Self::NoRoom { .. } => Fault::HostConfig,
            Self::Sample { source, .. } => match source.as_ref() {
                PushedError::Invalid { .. } | PushedError::Time { .. } => Fault::InvalidInput,
                _ => Fault::HostConfig,
            },
            Self::MetricSource { source, .. } => {
                if source.is_bad_input() {
                    Fault::InvalidInput
                } else {
                    Fault::HostConfig
                }
            }
            Self::Measure { source, .. } => match source.as_ref() {
                ObserveError::TooDisturbed { .. } | ObserveError::Restarted { .. } => {
                    Fault::Transient
                }
                ObserveError::Source { .. } | ObserveError::Noise { .. } => Fault::HostConfig,
                _ => Fault::Internal,
            },
            Self::Compare { .. }
            | Self::SettingsChanged { .. }
            | Self::StoppedHalfway { .. }
            | Self::Stopping => Fault::Transient,
            Self::Host { source, .. } => source.fault(),
            // A full disk or a read-only state directory: the operator must act.
            Self::State(_) => Fault::HostConfig,
            Self::Task { .. } => Fault::Internal,
            Self::Shared(e) => e.fault(),
        }
    }

    /// Whether the condition may clear by itself (no model yet, no room, a noisy window),
    /// so that a container waits and retries instead of being marked failed.
    pub fn may_clear(&self) -> bool {
        matches!(self.fault(), Fault::HostConfig | Fault::Transient)
    }

    /// The stable reason a client can act on without parsing the message: sent as
    /// `google.rpc.ErrorInfo.reason` (domain `placed.io`), listed in docs/api.md. Never
    /// renamed; a new error gets a new reason.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::BadRequest { .. } => "BAD_REQUEST",
            Self::Policy(e) if e.is_bad_request() => "BAD_POLICY",
            Self::Policy(_) => "POLICY_CANNOT_DECIDE",
            Self::UnknownPlacement { .. } => "UNKNOWN_PLACEMENT",
            Self::Placements { .. } => "NO_PLACEMENTS",
            Self::UnknownContainer { .. } => "CONTAINER_NOT_FOUND",
            Self::AmbiguousContainer { .. } => "AMBIGUOUS_CONTAINER",
            Self::Nested { .. } => "NESTED_CGROUP",
            Self::Busy { .. } => "CONTAINER_BUSY",
            Self::NoModel { .. } => "NO_MODEL",
            Self::BelowGate { .. } => "MODEL_BELOW_GATE",
            Self::ModelStopped { .. } => "MODEL_STOPPED",
            Self::NotStopped { .. } => "MODEL_NOT_STOPPED",
            Self::NoMetric { .. } => "NO_METRIC",
            Self::NoPmu => "NO_PMU",
            Self::CommandMetricsOff => "COMMAND_METRICS_OFF",
            Self::NotPushed { .. } => "METRIC_NOT_PUSHED",
            Self::Sample { .. } => "SAMPLE_REFUSED",
            Self::NoRoom { .. } => "NO_ROOM",
            Self::NeverMoves { .. } => "POLICY_NEVER_MOVES",
            Self::NeedsPrediction { .. } => "NEEDS_PREDICTION",
            Self::SettingsChanged { .. } => "SETTINGS_CHANGED",
            Self::MetricSource { .. } => "METRIC_SOURCE",
            Self::Measure { .. } => "MEASUREMENT_FAILED",
            Self::Compare { .. } => "MEASUREMENTS_INCONCLUSIVE",
            Self::Predict { .. } => "PREDICTION_FAILED",
            Self::Host { .. } => "HOST_REFUSED",
            Self::StoppedHalfway { .. } => "STOPPED_HALFWAY",
            Self::State(_) => "STATE_NOT_WRITTEN",
            Self::BatchRefused { .. } => "BATCH_REFUSED",
            Self::UnknownReservation { .. } => "RESERVATION_NOT_FOUND",
            Self::ReservationMismatch { .. } => "RESERVATION_MISMATCH",
            Self::Shared(e) => e.reason(),
            Self::Stopping => "STOPPING",
            Self::Task { .. } => "INTERNAL",
        }
    }

    /// The request field at fault, for `google.rpc.BadRequest`.
    pub fn field(&self) -> Option<&'static str> {
        match self.inner() {
            Self::BadRequest { field, .. } => Some(field),
            Self::UnknownPlacement { .. } => Some("placement_id"),
            Self::ReservationMismatch { .. } => Some("reservation"),
            Self::AmbiguousContainer { .. } | Self::Nested { .. } => Some("container"),
            Self::Policy(e) if e.is_bad_request() => Some("policy"),
            _ => None,
        }
    }

    /// The error itself, for an error of an operation this caller joined.
    pub fn inner(&self) -> &DaemonError {
        match self {
            Self::Shared(e) => e.inner(),
            other => other,
        }
    }

    /// A policy error, in the box the enum keeps it in.
    pub fn policy(e: PolicyError) -> Self {
        Self::Policy(Box::new(e))
    }

    /// A refused request field.
    pub fn bad(field: &'static str, reason: impl Into<String>) -> Self {
        Self::BadRequest {
            field,
            reason: reason.into(),
        }
    }

    /// The message and its causes on one line, as logs, events and answers show it.
    pub fn line(&self) -> String {
        placed_core::text::error_line(self)
    }
}

/// A blocking task's result, with its panic or cancellation as [`DaemonError::Task`].
pub(crate) fn joined<T>(
    doing: &'static str,
    r: Result<T, tokio::task::JoinError>,
) -> Result<T, DaemonError> {
    r.map_err(|source| DaemonError::Task { doing, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_below_the_gate_waits_for_the_operator_and_says_how_to_act() {
        let e = DaemonError::BelowGate {
            model_id: "abc".into(),
            path: "/m/mc1-x-v4.json".into(),
            reason: "cross-validated error 217.0% mean".into(),
            vcpus: 4,
            dir: "/m".into(),
        };
        let text = e.to_string();
        assert!(
            text.contains("observes with it and moves nothing"),
            "{text}"
        );
        assert!(
            text.contains(&placed_models::train_command(4, "/m")),
            "{text}"
        );
        assert_eq!(e.fault(), Fault::HostConfig);
        assert!(e.may_clear(), "retried, so a retrained model is picked up");
    }

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
        assert_eq!(e.fault(), Fault::HostConfig);
    }

    #[test]
    fn causes_are_printed_once_and_long_names_are_clipped() {
        let e = DaemonError::Policy(Box::new(PolicyError::Goal { goal: 5.0 }));
        assert_eq!(
            e.line(),
            "policy: goal 5 is outside (0, 2]: it is the fraction of baseline performance to keep"
        );
        assert_eq!(e.fault(), Fault::InvalidInput);
        let e = DaemonError::UnknownContainer {
            reference: "x".repeat(100_000),
        };
        assert!(e.line().len() < 500, "{}", e.line().len());
        assert_eq!(e.fault(), Fault::NotFound);
    }
}
