//! The daemon's core: one task per container lifecycle (discovered -> baseline -> probe ->
//! predicted -> placed -> watched), the commands the API drives it with, discovery, and the
//! state that survives restarts.
//!
//! # Layout
//!
//! - [`Daemon`] (this file): start-up on an [`Environment`] (the host, or a fake one in
//!   tests), shutdown, and the handle the service holds.
//! - `commands`: what the API asks of the daemon (manage, predict, recommend, place, report,
//!   status), each a method of [`Daemon`].
//! - `shared`: what the tasks and commands share (machine, host, registry, state file,
//!   metrics), and the move-or-stay rule's inputs.
//! - `handle`: one managed container, as its task and the commands act on it: its record,
//!   its state changes and events, its operation lock, its registration.
//! - `task`: the per-container state machine, and watching a placed container for drift.
//! - `evaluate`: measuring a container in the model's baseline and probe placements and
//!   predicting the rest, in its lifecycle or on demand.
//! - `decide`: applying a policy: what it chooses, and whether moving there pays.
//! - `moving`: moving a container, journalled in the state file so a crash is settled.
//! - `adopt`: settling what a previous run left (thaw, finish or undo a migration).
//! - `discovery`: the cgroup tree watched (inotify) and listed again periodically.
//! - `reconcile`: cpusets changed outside placed, noticed (inotify on the cpuset files, and
//!   at every resync) and handled by the container's override policy.
//! - `inotify`: the inotify instance discovery and reconciliation share the code of.
//! - `discovery`: the cgroup tree watched (inotify) and listed again periodically; it
//!   leaves alone the containers handed back.
//! - `unmanage`: handing a container back (`Unmanage`): its task stopped, what it was
//!   doing settled, its original cpuset put back on request, its record gone.
//! - `registry`: the managed containers in memory; one operation per container at a time.
//! - `models`: the model files, by machine class and vCPU count.
//! - [`events`]: what `Watch` streams and the logs show.
//! - [`error`]: [`DaemonError`], each with its fault and its cause.
//!
//! No gRPC type crosses into this module: the service converts requests into calls here
//! and [`DaemonError`]s into status codes.

mod adopt;
mod commands;
mod decide;
mod discovery;
mod drift;
pub mod error;
mod evaluate;
pub mod events;
mod handle;
mod inotify;
mod models;
mod moving;
mod reconcile;
mod registry;
mod shared;
mod task;
mod unmanage;

use std::sync::Arc;
use std::time::Duration;

use crate::config::Config;
use crate::state::{ContainerRecord, Lifecycle, StateError};
use crate::telemetry::Metrics;
use placed_core::cpuset::{CpuSet, NodeSet};
use placed_core::machine::{Machine, TopologySource};
use placed_core::policy::{self, Policy};
use placed_core::reconcile::OnOverride;
use placed_host::enact::Host;
use placed_host::migrate::{HOLD_ENV, HoldPoint, Mode, ModeKind};
use placed_host::observe::SourceSpec;

pub use error::DaemonError;
pub use events::{Event, EventKind};
pub use models::{LoadedModel, LoadedSizesModel};
pub use unmanage::Unmanaged;

use shared::Shared;

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
        Ok(Self {
            machine,
            host,
            pmu: placed_host::observe::perf::probe_pmu().is_ok(),
            migration_hold,
        })
    }
}

/// A container as the API shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerView {
    pub record: ContainerRecord,
    /// Its override policy in force: its own, else the configured default.
    pub on_override: OnOverride,
    /// The operation in progress, if any.
    pub doing: Option<String>,
}

/// What `Manage` asks for; unset fields keep the container's current settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ManageRequest {
    pub container: String,
    pub vcpus: Option<usize>,
    pub policy: Option<Policy>,
    pub metric: Option<SourceSpec>,
    pub on_override: Option<OnOverride>,
}

/// Where `Place` puts a container.
#[derive(Debug, Clone, PartialEq)]
pub enum PlaceTarget {
    /// The container's own policy.
    OwnPolicy,
    /// A policy, which becomes the container's.
    Policy(Policy),
    /// A policy for this move only: the container keeps its own, which may move it again
    /// at its next evaluation (`placectl place --keep-policy`).
    Once(Policy),
}

/// What `Place` did.
#[derive(Debug, Clone, PartialEq)]
pub struct PlaceOutcome {
    pub container: String,
    pub placement: Option<String>,
    pub cpus: CpuSet,
    pub mems: NodeSet,
    pub moved: bool,
    pub bytes_moved: u64,
    pub duration: Duration,
    pub reason: String,
}

/// What `Recommend` answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Recommendation {
    pub container: String,
    pub target: policy::Target,
    pub would_move: bool,
    pub reason: String,
}

/// The daemon's own state, for `GetStatus` and `placectl status`.
#[derive(Debug, Clone)]
pub struct StatusView {
    pub fingerprint: String,
    pub uptime: Duration,
    pub counts: Vec<(Lifecycle, usize)>,
    pub models: Vec<LoadedModel>,
    /// Models across sizes, for sizes without their own.
    pub across: Vec<LoadedSizesModel>,
    pub state_file: String,
    pub cgroup: String,
    pub warnings: Vec<String>,
}

/// A handle to the running daemon; cheap to clone.
#[derive(Debug, Clone)]
pub struct Daemon {
    shared: Arc<Shared>,
}

impl Daemon {
    /// Loads the models and the state file, adopts the containers it names, and starts
    /// discovery on `env`. The returned daemon is ready to serve.
    pub async fn start(
        config: Config,
        env: Environment,
        metrics: Arc<Metrics>,
    ) -> Result<Self, StartError> {
        let shared = Shared::new(config, env, metrics)?;
        let check = shared.clone();
        tokio::task::spawn_blocking(move || check.check_default_policy())
            .await
            .map_err(|source| StartError::Task {
                doing: "checking policy.default",
                source,
            })??;
        // Weak: the metrics outlive no daemon, and must not keep one alive.
        let weak = Arc::downgrade(&shared);
        shared.metrics.per_container.set_source(move || {
            weak.upgrade().map_or_else(Vec::new, |s| {
                s.registry()
                    .entries
                    .values()
                    .map(|e| crate::telemetry::containers::View::of(&e.record))
                    .collect()
            })
        });
        adopt::restore(&shared).await?;
        shared.update_gauges();
        reconcile::start(&shared);
        discovery::start(&shared);
        Ok(Self { shared })
    }

    pub fn machine(&self) -> &Machine {
        &self.shared.machine
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.shared.metrics
    }

    /// A migration mode with the configured defaults (the throttled mode's cap).
    pub fn mode_of(&self, kind: ModeKind) -> Mode {
        self.shared.mode_of(kind)
    }

    /// Takes the live settings of `config` (the `[policy]` and `[observe]` sections and
    /// the resync interval) from now on: new containers get the new default policy, and
    /// each task uses the new settings from its next step.
    pub fn reconfigure(&self, config: Config) -> Result<(), StartError> {
        self.shared.reconfigure(config)
    }

    /// The model policy's default goal, for requests that leave it unset.
    pub fn config_goal(&self) -> f64 {
        self.shared.config().policy.goal
    }

    /// Live events (`after = None`), or the kept events after sequence `after` and then
    /// the live ones, none lost or repeated between the two.
    pub fn events(&self, after: Option<u64>) -> Result<events::Feed, events::ResumeError> {
        self.shared.events.feed(after)
    }

    /// The sequence number of the last event issued.
    pub fn last_event(&self) -> u64 {
        self.shared.events.last_sequence()
    }

    /// Answers when the daemon's shared state is reachable: for the watchdog.
    pub async fn alive(&self) -> bool {
        let shared = self.shared.clone();
        tokio::task::spawn_blocking(move || shared.registry().entries.len())
            .await
            .is_ok()
    }

    /// Stops every task (each leaves its container whole and thawed), writes the state, and
    /// thaws anything still frozen.
    pub async fn shutdown(&self) {
        self.shared.cancel.cancel();
        self.shared.tasks.close();
        self.shared.tasks.wait().await;
        if let Err(e) = self.shared.persist().await {
            tracing::error!(error = %e.line(), "could not write the state file at shutdown");
        }
        let thawed = self.shared.host.thaw_all();
        if thawed > 0 {
            tracing::warn!(thawed, "thawed containers left frozen at shutdown");
        }
    }
}
