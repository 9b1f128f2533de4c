//! What the daemon starts on ([`Environment`]: this host, or a fake one in tests) and why
//! it may refuse to start ([`StartError`]).

use crate::config::Config;
use crate::state::StateError;
use placed_core::machine::{Machine, TopologySource};
use placed_host::enact::Host;
use placed_host::migrate::{HOLD_ENV, HoldPoint};

/// Why the daemon could not start. Each says what to fix.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("building the machine model")]
    Machine(#[source] placed_core::machine::MachineError),
    #[error("finding the cgroup hierarchy")]
    Host(#[source] placed_host::enact::Error),
    #[error(transparent)]
    State(StateError),
    #[error("the [observe] settings")]
    Protocol(#[source] placed_host::observe::ObserveError),
    #[error(
        "observe.command_user {user:?} does not exist or is root: command metrics must run as an unprivileged user"
    )]
    CommandUser { user: String },
    #[error(
        "observe.allow_command_metrics needs CAP_SETUID and CAP_SETGID to run commands as observe.command_user, and this process's bounding set lacks them; the packaged unit leaves them out while command metrics are off: add them with a drop-in (docs/daemon.md, \"Hardening\")"
    )]
    CommandUserCapabilities,
    #[error(
        "policy.default pins to placement {placement:?}, which this machine does not have for any vCPU count (placectl placements --vcpus N lists them)"
    )]
    DefaultPolicy { placement: String },
    #[error("internal error while {doing}")]
    Task {
        doing: &'static str,
        #[source]
        source: tokio::task::JoinError,
    },
}

impl StartError {
    /// Who has to act (all but a panic are the operator's: fix the host, the file, the
    /// configuration).
    pub fn fault(&self) -> placed_core::fault::Fault {
        match self {
            Self::Task { .. } => placed_core::fault::Fault::Internal,
            Self::State(e) => e.fault(),
            _ => placed_core::fault::Fault::HostConfig,
        }
    }
}

/// What the daemon runs on. [`Environment::detect`] is this host; tests build one on a
/// fake kernel tree and a synthetic machine, so that the whole lifecycle runs without root.
#[derive(Debug)]
pub struct Environment {
    pub machine: Machine,
    pub host: Host,
    /// Whether hardware counters work here (the perf metric is offered only then).
    pub pmu: bool,
    /// Tests only: where migrations wait ([`HoldPoint`]).
    pub migration_hold: Option<HoldPoint>,
    /// What the daemon's measurements are, as its production data says: real hardware or a
    /// virtual machine here ([`placed_host::virt`]), simulated on a fake host.
    pub provenance: placed_models::Provenance,
}

impl Environment {
    /// This host: its topology (or the configured XML file), its cgroup hierarchy, its PMU.
    pub async fn detect(config: &Config) -> Result<Self, StartError> {
        let source = match &config.machine.topology {
            Some(p) => TopologySource::XmlFile(p.clone()),
            None => TopologySource::Host,
        };
        let machine_file = config.machine.machine_file.clone();
        let machine =
            tokio::task::spawn_blocking(move || Machine::load(&source, machine_file.as_deref()))
                .await
                .map_err(|source| StartError::Task {
                    doing: "building the machine model",
                    source,
                })?
                .map_err(StartError::Machine)?;
        let host = Host::detect().map_err(StartError::Host)?;
        let migration_hold = HoldPoint::from_env();
        if let Some(h) = &migration_hold {
            tracing::warn!(
                release = %h.release.display(),
                "{HOLD_ENV} is set: migrations wait after their first chunk while that file exists (a test hook)"
            );
        }
        let virt = placed_host::virt::detect();
        let provenance = if virt.virtual_machine {
            placed_models::Provenance::VirtualMachine
        } else {
            placed_models::Provenance::Real
        };
        tracing::info!(%provenance, evidence = %virt.evidence, "what the daemon's measurements are");
        Ok(Self {
            machine,
            host,
            pmu: placed_host::observe::perf::probe_pmu().is_ok(),
            migration_hold,
            provenance,
        })
    }
}
