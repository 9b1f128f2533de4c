//! The daemon's core (DESIGN.md §3.7): one task per container lifecycle (discovered ->
//! baseline -> probe -> predicted -> placed -> watched), the commands the API drives it
//! with, discovery, and the state that survives restarts.
//!
//! # Layout
//!
//! - [`Daemon`]: start-up (machine, models, state, adoption), the commands, shutdown.
//! - `registry`: the managed containers in memory; one operation per container at a time.
//! - `task`: the per-container lifecycle and the two operations it is built from:
//!   measuring a container in a placement, and moving it.
//! - `adopt`: settling what a previous run left (thaw, finish or undo a migration).
//! - `discovery`: the cgroup tree watched (inotify) and listed again periodically.
//! - `models`: the model files, by machine class and vCPU count.
//! - `quota`: vCPUs from CPU quotas; where perf counters attach.
//! - [`events`]: what `Watch` streams and the logs show.
//!
//! No gRPC type crosses into this module: the service converts requests into calls here
//! and [`DaemonError`]s into status codes.

mod adopt;
mod discovery;
mod error;
pub mod events;
mod models;
mod quota;
mod registry;
mod task;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::Config;
use crate::state::{
    ContainerRecord, Lifecycle, PredictionRecord, StateError, StateStore, VcpuSource,
};
use crate::telemetry::{Metrics, StateLabel};
use placed_core::machine::{Machine, TopologySource};
use placed_core::placement::{PlacementSet, important_placements};
use placed_core::policy::{self, Policy, Situation};
use placed_host::enact::Host;
use placed_host::migrate::Mode;
use placed_host::observe::{Protocol, SourceSpec};

pub use error::DaemonError;
pub use events::{Event, EventKind};
pub use models::LoadedModel;

use events::Events;
use models::ModelLibrary;
use quota::Controllers;
use registry::{Entry, Registry};

/// Why the daemon could not start. Each says what to fix.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Machine(#[from] placed_core::machine::MachineError),
    #[error(transparent)]
    Host(#[from] placed_host::enact::Error),
    #[error(transparent)]
    State(#[from] StateError),
    #[error("invalid configuration: {0}")]
    Config(String),
}

/// A container as the API shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerView {
    pub record: ContainerRecord,
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
}

/// Where `Place` puts a container.
#[derive(Debug, Clone, PartialEq)]
pub enum PlaceTarget {
    /// The container's own policy.
    OwnPolicy,
    /// A policy, which becomes the container's.
    Policy(Policy),
}

/// What `Place` did.
#[derive(Debug, Clone, PartialEq)]
pub struct PlaceOutcome {
    pub container: String,
    pub placement: Option<String>,
    pub cpus: placed_core::cpuset::CpuSet,
    pub mems: placed_core::cpuset::NodeSet,
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
    pub state_file: String,
    pub cgroup: String,
    pub warnings: Vec<String>,
}

/// Everything the tasks and commands share.
#[derive(Debug)]
pub(crate) struct Inner {
    pub config: Config,
    pub machine: Machine,
    pub host: Host,
    pub controllers: Controllers,
    pub models: ModelLibrary,
    /// Whether hardware counters work here (perf is offered only then).
    pub pmu: bool,
    pub protocol: Protocol,
    registry: Mutex<Registry>,
    placements: Mutex<HashMap<usize, Arc<PlacementSet>>>,
    pub events: Events,
    store: StateStore,
    /// Orders state-file writes: each takes its snapshot while holding it, so the last write
    /// is always the newest state.
    save_lock: tokio::sync::Mutex<()>,
    pub metrics: Arc<Metrics>,
    pub cancel: CancellationToken,
    pub tasks: TaskTracker,
    started: Instant,
    /// Migration throughput assumed for the move-or-not rule until a move measures it.
    migration_bytes_per_s: Mutex<f64>,
    pub warnings: Mutex<Vec<String>>,
    /// Tests only: where migrations wait ([`placed_host::migrate::HoldPoint`]).
    pub migration_hold: Option<placed_host::migrate::HoldPoint>,
}

/// A handle to the running daemon; cheap to clone.
#[derive(Debug, Clone)]
pub struct Daemon {
    inner: Arc<Inner>,
}

/// 1 GiB/s: a conservative guess for the kernel's cpuset migration on a server until a move
/// measures the real figure (the guest here moved 0.2-0.6 GiB/s under emulation).
const DEFAULT_MIGRATION_BYTES_PER_S: f64 = 1024.0 * 1024.0 * 1024.0;

impl Daemon {
    /// Builds the machine model, finds the cgroup hierarchy, loads models and the state
    /// file, adopts the containers it names, and starts discovery. The returned daemon is
    /// ready to serve.
    pub async fn start(config: Config, metrics: Arc<Metrics>) -> Result<Self, StartError> {
        let source = match &config.machine.topology {
            Some(p) => TopologySource::XmlFile(p.clone()),
            None => TopologySource::Host,
        };
        let machine_file = config.machine.machine_file.clone();
        let machine =
            tokio::task::spawn_blocking(move || Machine::load(&source, machine_file.as_deref()))
                .await
                .map_err(|e| StartError::Config(format!("machine model task failed: {e}")))??;
        let host = Host::detect()?;
        let pmu = placed_host::observe::perf::probe_pmu().is_ok();
        let mut warnings = Vec::new();
        if !pmu {
            warnings.push(
                "no hardware performance counters here: containers need a metric source (pushed, Prometheus or command) for the model policy".to_owned(),
            );
        }
        let migration_hold = placed_host::migrate::HoldPoint::from_env();
        if let Some(h) = &migration_hold {
            tracing::warn!(
                release = %h.release.display(),
                "{} is set: migrations wait after their first chunk while that file exists (a test hook)",
                placed_host::migrate::HOLD_ENV
            );
        }
        let protocol = config
            .protocol()
            .map_err(|e| StartError::Config(e.to_string()))?;
        let inner = Arc::new(Inner {
            models: ModelLibrary::new(config.daemon.model_dir.clone()),
            store: StateStore::new(config.daemon.state_file.clone()),
            controllers: Controllers::from_mountinfo(Path::new("/proc/self/mountinfo")),
            protocol,
            events: Events::with_history(config.grpc.watch_history),
            config,
            machine,
            host,
            pmu,
            registry: Mutex::new(Registry::default()),
            placements: Mutex::new(HashMap::new()),
            save_lock: tokio::sync::Mutex::new(()),
            metrics,
            cancel: CancellationToken::new(),
            tasks: TaskTracker::new(),
            started: Instant::now(),
            migration_bytes_per_s: Mutex::new(DEFAULT_MIGRATION_BYTES_PER_S),
            warnings: Mutex::new(warnings),
            migration_hold,
        });
        adopt::restore(&inner).await?;
        inner.update_gauges();
        discovery::start(&inner);
        Ok(Self { inner })
    }

    pub fn machine(&self) -> &Machine {
        &self.inner.machine
    }

    /// The throttled migration mode at the configured cap.
    pub fn throttled_mode(&self) -> Mode {
        Mode::Throttled {
            bytes_per_sec: self
                .inner
                .config
                .policy
                .throttle_mib_per_s
                .saturating_mul(1 << 20),
        }
    }

    /// The model policy's default goal, for requests that leave it unset.
    pub fn config_goal(&self) -> f64 {
        self.inner.config.policy.goal
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.inner.metrics
    }

    /// The important placements for `v` vCPUs, computed once per `v`.
    pub fn placements(&self, v: usize) -> Result<Arc<PlacementSet>, DaemonError> {
        self.inner.placements(v)
    }

    pub fn containers(&self) -> Vec<ContainerView> {
        let reg = self.inner.registry();
        reg.entries.values().map(view).collect()
    }

    pub fn container(&self, reference: &str) -> Result<ContainerView, DaemonError> {
        let reg = self.inner.registry();
        reg.find(reference)
            .map(view)
            .ok_or_else(|| not_found(reference))
    }

    /// Takes a container under management, or changes its settings.
    pub async fn manage(&self, req: ManageRequest) -> Result<ContainerView, DaemonError> {
        if req.vcpus == Some(0) {
            return Err(DaemonError::BadRequest(
                "vcpus must be at least 1 (0 means: take it from the container)".into(),
            ));
        }
        if let Some(p) = &req.policy {
            p.validate()
                .map_err(|e| DaemonError::BadRequest(e.to_string()))?;
        }
        if let Some(v) = req.vcpus {
            // Refuse a v with no placement now, not later in the task.
            self.inner.placements(v)?;
        }
        if let Some(SourceSpec::Perf { .. }) = &req.metric {
            if !self.inner.pmu {
                return Err(DaemonError::Precondition(
                    "perf counters are not available on this host (no PMU): use a pushed, Prometheus or command metric".into(),
                ));
            }
        }
        let known = self.inner.registry().key_of(&req.container);
        let id = match known {
            Some(id) => id,
            None => {
                let inner = self.inner.clone();
                let reference = req.container.clone();
                let container = tokio::task::spawn_blocking(move || inner.host.resolve(&reference))
                    .await
                    .map_err(|e| DaemonError::Internal(e.to_string()))?
                    .map_err(|e| DaemonError::from_fault(e.fault(), e.to_string()))?;
                match task::register(&self.inner, container, Some(&req)).await? {
                    // Registered with the requested settings before its task started.
                    task::Registered::New(id) => return self.container(&id),
                    // Discovery got there first: change its settings like any other's.
                    task::Registered::Known(id) => id,
                }
            }
        };
        // One operation per container: settings never change under a measurement or a move
        // (an evaluation for the old v would write its result back for the new one, and a
        // container mid-migration would be sent back to the start of its lifecycle).
        let guard = self
            .inner
            .with_entry(&id, |e| e.try_begin("changing its settings"))
            .ok_or_else(|| not_found(&req.container))??;
        {
            let mut reg = self.inner.registry();
            let entry = reg
                .entries
                .get_mut(&id)
                .ok_or_else(|| not_found(&req.container))?;
            let before = (
                entry.record.vcpus,
                entry.record.policy.clone(),
                entry.record.metric.clone(),
            );
            if let Some(v) = req.vcpus {
                if entry.record.vcpus != v {
                    // A prediction is for one v: a new v needs a new one.
                    entry.record.prediction = None;
                }
                entry.record.vcpus = v;
                entry.record.vcpus_source = VcpuSource::Request;
            }
            if let Some(p) = req.policy.clone() {
                entry.record.policy = p;
            }
            if let Some(m) = req.metric.clone() {
                entry.record.metric = Some(m);
                entry.reporter = None;
            }
            let changed = before
                != (
                    entry.record.vcpus,
                    entry.record.policy.clone(),
                    entry.record.metric.clone(),
                );
            if changed {
                entry.settings += 1;
            }
            // New settings, or a container stuck waiting: its task starts over.
            if changed || matches!(entry.record.state, Lifecycle::Waiting | Lifecycle::Failed) {
                entry.record.state = Lifecycle::Discovered;
                entry.record.detail.clear();
            }
            entry.record.updated_unix_ms = events::now_ms();
            entry.wake.notify_one();
        }
        let saved = self.inner.persist().await;
        drop(guard);
        saved?;
        self.container(&id)
    }

    /// The container's prediction: the last one, or a fresh one (which measures it in the
    /// model's baseline and probe placements, then puts it back).
    pub async fn predict(&self, reference: &str) -> Result<PredictionRecord, DaemonError> {
        let id = self.key(reference)?;
        if let Some(p) = self
            .inner
            .with_entry(&id, |e| e.record.prediction.clone())
            .flatten()
        {
            return Ok(p);
        }
        task::predict_now(&self.inner, &id).await
    }

    /// What a policy (the container's own by default) would choose, without moving it.
    pub async fn recommend(
        &self,
        reference: &str,
        policy: Option<Policy>,
    ) -> Result<Recommendation, DaemonError> {
        let id = self.key(reference)?;
        let (record, taken) = {
            let reg = self.inner.registry();
            let e = reg.entries.get(&id).ok_or_else(|| not_found(reference))?;
            (e.record.clone(), reg.taken_units(&id))
        };
        let policy = policy.unwrap_or_else(|| record.policy.clone());
        policy
            .validate()
            .map_err(|e| DaemonError::BadRequest(e.to_string()))?;
        let set = self.inner.placements(record.vcpus)?;
        let available: Vec<usize> = (0..self.inner.machine.units.len())
            .filter(|u| !taken.contains(u))
            .collect();
        let predicted = task::usable_prediction(&record).map(task::predicted_list);
        let situation = Situation {
            machine: &self.inner.machine,
            placements: &set,
            available: &available,
            predictions: predicted.as_deref(),
        };
        let target = policy::decide(&policy, &situation)
            .map_err(task::policy_error)?
            .ok_or_else(|| {
                DaemonError::Precondition(format!(
                    "policy {} never moves a container; choose another policy to get a recommendation",
                    policy.name()
                ))
            })?;
        let decision = self.inner.worth_moving(&id, &record, &target).await;
        let would_move = decision.worth_it && !task::already_there(&record, &target);
        Ok(Recommendation {
            container: record.name,
            would_move,
            reason: format!("{}; {}", target.reason, decision.reason),
            target,
        })
    }

    /// Moves a container now, by its own policy or a new one.
    pub async fn place(
        &self,
        reference: &str,
        target: PlaceTarget,
        mode: Option<Mode>,
    ) -> Result<PlaceOutcome, DaemonError> {
        let id = self.key(reference)?;
        if let PlaceTarget::Policy(p) = &target {
            p.validate()
                .map_err(|e| DaemonError::BadRequest(e.to_string()))?;
            if let Policy::Pinned { placement } = p {
                let v = self
                    .inner
                    .with_entry(&id, |e| e.record.vcpus)
                    .ok_or_else(|| not_found(reference))?;
                let set = self.inner.placements(v)?;
                if set.get(placement).is_none() {
                    return Err(DaemonError::BadRequest(format!(
                        "placement {placement:?} is not an important placement for {v} vCPUs on this machine (placectl placements --vcpus {v} lists them)"
                    )));
                }
            }
        }
        task::place_now(&self.inner, &id, target, mode).await
    }

    /// A performance sample pushed for a container whose metric source is `pushed`.
    pub fn report(&self, reference: &str, value: f64) -> Result<(), DaemonError> {
        let reg = self.inner.registry();
        let e = reg.find(reference).ok_or_else(|| not_found(reference))?;
        let reporter = e.reporter.as_ref().ok_or_else(|| {
            DaemonError::Precondition(format!(
                "container {} does not take pushed metrics (its metric source is {}); set one with Manage",
                e.record.name,
                e.record
                    .metric
                    .as_ref()
                    .map_or_else(|| "unset".into(), SourceSpec::describe)
            ))
        })?;
        reporter.report(value).map_err(|e| match e {
            placed_host::observe::PushedError::Invalid { .. } => {
                DaemonError::BadRequest(e.to_string())
            }
            other => DaemonError::Precondition(other.to_string()),
        })?;
        self.inner.metrics.metric_samples.inc();
        Ok(())
    }

    /// Live events (`after = None`), or the kept events after sequence `after` and then
    /// the live ones, none lost or repeated between the two.
    pub fn events(&self, after: Option<u64>) -> Result<events::Feed, events::ResumeError> {
        self.inner.events.feed(after)
    }

    /// The sequence number of the last event issued.
    pub fn last_event(&self) -> u64 {
        self.inner.events.last_sequence()
    }

    pub fn status(&self) -> StatusView {
        let counts = self.inner.registry().counts();
        StatusView {
            fingerprint: self.inner.machine.fingerprint().to_owned(),
            uptime: self.inner.started.elapsed(),
            counts,
            models: self.inner.models.all(),
            state_file: self.inner.store.path().display().to_string(),
            cgroup: format!(
                "{} ({})",
                self.inner.host.cgroups().root().display(),
                self.inner.host.cgroups().version()
            ),
            warnings: self
                .inner
                .warnings
                .lock()
                .map(|w| w.clone())
                .unwrap_or_default(),
        }
    }

    /// Answers when the daemon's shared state is reachable: for the watchdog.
    pub async fn alive(&self) -> bool {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || inner.registry().entries.len())
            .await
            .is_ok()
    }

    /// Stops every task (each leaves its container whole and thawed), writes the state, and
    /// thaws anything still frozen.
    pub async fn shutdown(&self) {
        self.inner.cancel.cancel();
        self.inner.tasks.close();
        self.inner.tasks.wait().await;
        if let Err(e) = self.inner.persist().await {
            tracing::error!(error = %e, "could not write the state file at shutdown");
        }
        let thawed = placed_host::cgroup::thaw_all();
        if thawed > 0 {
            tracing::warn!(thawed, "thawed containers left frozen at shutdown");
        }
    }

    fn key(&self, reference: &str) -> Result<String, DaemonError> {
        self.inner
            .registry()
            .key_of(reference)
            .ok_or_else(|| not_found(reference))
    }
}

fn view(e: &Entry) -> ContainerView {
    ContainerView {
        record: e.record.clone(),
        doing: if e.op.try_lock().is_err() {
            e.doing.as_ref().map(|(d, _)| d.clone())
        } else {
            None
        },
    }
}

/// Resident memory of the processes, from /proc/<pid>/statm.
fn resident_bytes(pids: &[u32]) -> u64 {
    // SAFETY: sysconf has no preconditions; it returns -1 for an unknown name.
    let page = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    pids.iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/statm")).ok())
        .filter_map(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum::<u64>()
        * page
}

fn not_found(reference: &str) -> DaemonError {
    DaemonError::NotFound(format!(
        "placed manages no container {reference:?}; `placectl containers` lists them, and Manage (placectl manage) takes one over"
    ))
}

impl Inner {
    /// Takes the registry lock. Holders never await or do I/O, so a panic inside cannot
    /// leave a half-done change that matters more than losing the daemon; poisoning is
    /// ignored rather than turning one panic into a dead daemon.
    pub(crate) fn registry(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn with_entry<R>(&self, id: &str, f: impl FnOnce(&mut Entry) -> R) -> Option<R> {
        self.registry().entries.get_mut(id).map(f)
    }

    pub(crate) fn placements(&self, v: usize) -> Result<Arc<PlacementSet>, DaemonError> {
        if let Some(s) = self
            .placements
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&v)
        {
            return Ok(s.clone());
        }
        let set = Arc::new(
            important_placements(&self.machine, v)
                .map_err(|e| DaemonError::BadRequest(e.to_string()))?,
        );
        self.placements
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(v, set.clone());
        Ok(set)
    }

    /// Writes the state file from a snapshot taken now.
    pub(crate) async fn persist(&self) -> Result<(), DaemonError> {
        let _order = self.save_lock.lock().await;
        let state = crate::state::State {
            written_unix_ms: events::now_ms(),
            fingerprint: self.machine.fingerprint().to_owned(),
            containers: self
                .registry()
                .entries
                .values()
                .map(|e| e.record.clone())
                .collect(),
        };
        let store = self.store.clone();
        let result = tokio::task::spawn_blocking(move || store.save(&state))
            .await
            .map_err(|e| DaemonError::Internal(e.to_string()))?;
        result.map_err(|e| {
            self.metrics.error("state");
            DaemonError::Internal(e.to_string())
        })
    }

    /// Refreshes the per-state gauge.
    pub(crate) fn update_gauges(&self) {
        let counts = self.registry().counts();
        for (state, n) in counts {
            self.metrics
                .containers
                .get_or_create(&StateLabel {
                    state: state.name().into(),
                })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    /// The move-or-stay rule's inputs for moving `record` to `target`, and its verdict.
    pub(crate) async fn worth_moving(
        self: &Arc<Self>,
        id: &str,
        record: &ContainerRecord,
        target: &policy::Target,
    ) -> policy::MoveDecision {
        let current_units = record
            .assigned
            .as_ref()
            .map_or(self.machine.units.len(), |a| {
                if a.units.is_empty() {
                    self.machine.units.len()
                } else {
                    a.units.len()
                }
            });
        let current_predicted = task::usable_prediction(record).and_then(|p| {
            record
                .assigned
                .as_ref()
                .and_then(|a| a.placement.as_deref())
                .and_then(|id| p.relative(id))
        });
        let held = self.registry().taken_units(id);
        let inner = self.clone();
        let (rec, to_mems) = (record.clone(), target.mems.clone());
        // /proc/<pid>/numa_maps of a large process takes a while to read.
        let (trespassing, bytes_to_move) =
            tokio::task::spawn_blocking(move || inner.exposure(&rec, &held, &to_mems))
                .await
                .unwrap_or((false, u64::MAX));
        let migration_bytes_per_s = *self
            .migration_bytes_per_s
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        policy::worth_moving(
            &policy::MoveCost {
                current_units,
                current_predicted,
                trespassing,
                bytes_to_move,
                migration_bytes_per_s,
                horizon_s: self.config.policy.horizon.as_secs_f64(),
            },
            target,
        )
    }

    /// Where the container runs now, against the units others hold and the target's nodes:
    /// whether it runs on another container's units, and the resident bytes on nodes the
    /// target leaves out (what a move would migrate).
    fn exposure(
        &self,
        record: &ContainerRecord,
        held_by_others: &[usize],
        to_mems: &placed_core::cpuset::NodeSet,
    ) -> (bool, u64) {
        let Ok(cg) = placed_host::cgroup::CgroupPath::parse(&record.id) else {
            return (false, 0);
        };
        let (cpus, mems) = match (self.host.cgroups().cpuset(&cg), &record.assigned) {
            (Ok(now), _) => (now.effective_cpus, now.effective_mems),
            (Err(_), Some(a)) => (a.cpus.clone(), a.mems.clone()),
            (Err(_), None) => (
                self.machine.pus.usable.clone(),
                self.machine
                    .units
                    .iter()
                    .fold(placed_core::cpuset::NodeSet::new(), |acc, u| {
                        acc.union(&u.mems)
                    }),
            ),
        };
        let trespassing = held_by_others.iter().any(|&u| {
            self.machine
                .units
                .get(u)
                .is_some_and(|unit| unit.cpus.intersects(&cpus) || unit.mems.intersects(&mems))
        });
        if mems.is_subset(to_mems) {
            // The target keeps every node the memory may be on: nothing migrates.
            return (trespassing, 0);
        }
        let procs = self.host.cgroups().procs(&cg).unwrap_or_default();
        let bytes = match placed_host::migrate::Proc::host().footprint(&procs) {
            Ok(per_node) => per_node.outside(to_mems),
            // Per-node figures unreadable: count all of it, the most a move can migrate.
            Err(e) => {
                tracing::debug!(container = %record.name, error = %e, "numa_maps unreadable; counting all resident memory");
                resident_bytes(&procs)
            }
        };
        (trespassing, bytes)
    }

    /// Wakes every aggressive container but `except`, to be placed again: they share only
    /// units nobody holds, and what nobody holds just changed.
    pub(crate) fn wake_sharers(&self, except: &str) {
        let reg = self.registry();
        for (key, e) in &reg.entries {
            if key != except && matches!(e.record.policy, Policy::Aggressive) {
                e.wake.notify_one();
            }
        }
    }

    /// The configured migration mode.
    pub(crate) fn migration_mode(&self) -> Mode {
        match self.config.policy.migration.as_str() {
            "fast" => Mode::fast(),
            "throttled" => Mode::Throttled {
                bytes_per_sec: self
                    .config
                    .policy
                    .throttle_mib_per_s
                    .saturating_mul(1 << 20),
            },
            _ => Mode::Kernel,
        }
    }

    pub(crate) fn learn_migration_speed(&self, bytes: u64, seconds: f64) {
        // Only moves big enough to time meaningfully update the estimate.
        if bytes >= 64 << 20 && seconds > 0.01 {
            let mut bw = self
                .migration_bytes_per_s
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            *bw = bytes as f64 / seconds;
        }
    }

    pub(crate) fn new_entry(
        &self,
        record: ContainerRecord,
        container: placed_host::containers::Container,
    ) -> Entry {
        Entry {
            record,
            container,
            op: Arc::new(tokio::sync::Mutex::new(())),
            doing: None,
            reporter: None,
            cancel: self.cancel.child_token(),
            wake: Arc::new(Notify::new()),
            settings: 0,
        }
    }
}
