//! What every container task and every command shares: the configuration, the machine,
//! the host, the models, the registry of managed containers, the state file, events and
//! metrics; and the inputs of the move-or-stay rule.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Instant;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::Config;
use crate::state::{ContainerRecord, StateStore};
use crate::telemetry::{Metrics, StateLabel};
use placed_core::cpuset::NodeSet;
use placed_core::machine::Machine;
use placed_core::placement::{PlacementSet, important_placements};
use placed_core::policy::{self, Policy};
use placed_host::containers::Container;
use placed_host::enact::Host;
use placed_host::migrate::{HoldPoint, Mode, ModeKind};
use placed_host::observe::{PatternError, PatternInput, Protocol, RunAs, SourceSpec};

use super::error::{DaemonError, joined};
use super::events::{Events, now_ms};
use super::handle::Handle;
use super::models::ModelLibrary;
use super::registry::{Entry, Registry};
use super::{Environment, StartError};

/// 1 GiB/s: a conservative guess for the kernel's cpuset migration on a server until a move
/// measures the real figure (the guest here moved 0.2-0.6 GiB/s under emulation).
const DEFAULT_MIGRATION_BYTES_PER_S: f64 = 1024.0 * 1024.0 * 1024.0;

/// Everything the tasks and commands share.
#[derive(Debug)]
pub(crate) struct Shared {
    /// Replaced whole on reload; readers take the current one ([`Shared::config`]).
    config: RwLock<Arc<Config>>,
    pub machine: Machine,
    pub host: Host,
    pub models: ModelLibrary,
    /// Whether hardware counters work here (perf is offered only then).
    pub pmu: bool,
    protocol: RwLock<Arc<Protocol>>,
    /// Whom command metrics run as; `None` when the configuration does not allow them.
    pub command_user: Option<RunAs>,
    registry: Mutex<Registry>,
    /// Containers an orchestrator handed back (`Unmanage`), by id: discovery leaves them
    /// alone until they disappear or `Manage` takes them again. Kept in the state file.
    unmanaged: Mutex<BTreeSet<String>>,
    placements: Mutex<HashMap<usize, Arc<PlacementSet>>>,
    pub events: Events,
    pub store: StateStore,
    /// Orders state-file writes: each takes its snapshot while holding it, so the last write
    /// is always the newest state. Held by a task of its own for the whole write, so that a
    /// request cancelled mid-save cannot let a second save start beside the first.
    save_lock: tokio::sync::Mutex<()>,
    pub metrics: Arc<Metrics>,
    pub cancel: CancellationToken,
    pub tasks: TaskTracker,
    pub started: Instant,
    /// Migration throughput assumed for the move-or-not rule until a move measures it.
    migration_bytes_per_s: Mutex<f64>,
    pub warnings: Mutex<Vec<String>>,
    /// Tests only: where migrations wait ([`HoldPoint`]).
    pub migration_hold: Option<HoldPoint>,
    /// The managed containers, or where their cpuset files are, changed: the cpuset
    /// watches are brought up to date.
    pub watch_list: Notify,
}

/// The user command metrics run as, looked up once at start; `None` when they are off.
fn command_user(config: &Config) -> Result<Option<RunAs>, StartError> {
    if !config.observe.allow_command_metrics {
        return Ok(None);
    }
    let name = &config.observe.command_user;
    let user = nix::unistd::User::from_name(name)
        .ok()
        .flatten()
        .ok_or_else(|| StartError::CommandUser { user: name.clone() })?;
    if user.uid.is_root() {
        return Err(StartError::CommandUser { user: name.clone() });
    }
    // The packaged unit leaves CAP_SETUID and CAP_SETGID out of its bounding set while
    // command metrics are off: said at start, not as EPERM at every measurement.
    if !can_switch_user(bounding_set_has) {
        return Err(StartError::CommandUserCapabilities);
    }
    tracing::warn!(user = %name, "command metrics are allowed: API callers can run programs on this host as this user");
    Ok(Some(RunAs {
        uid: user.uid.as_raw(),
        gid: user.gid.as_raw(),
    }))
}

/// `linux/capability.h` (the libc crate does not have them).
const CAP_SETGID: libc::c_ulong = 6;
const CAP_SETUID: libc::c_ulong = 7;

/// Whether capability `cap` is in this process's bounding set (a root process then holds
/// it, as placed runs as root).
fn bounding_set_has(cap: libc::c_ulong) -> bool {
    // SAFETY: PR_CAPBSET_READ reads one flag of this process; no pointers are passed.
    unsafe { libc::prctl(libc::PR_CAPBSET_READ, cap, 0, 0, 0) == 1 }
}

/// Whether the daemon may switch to the command user: setuid and setgid both need their
/// capabilities (`has` answers for one).
fn can_switch_user(has: impl Fn(libc::c_ulong) -> bool) -> bool {
    has(CAP_SETUID) && has(CAP_SETGID)
}

impl Shared {
    pub fn new(
        config: Config,
        env: Environment,
        metrics: Arc<Metrics>,
    ) -> Result<Arc<Self>, StartError> {
        let mut warnings = Vec::new();
        if !env.pmu {
            warnings.push(
                "no hardware performance counters here: containers need a metric source (pushed, Prometheus or command) for the model policy".to_owned(),
            );
        }
        let protocol = config.protocol().map_err(StartError::Protocol)?;
        let command_user = command_user(&config)?;
        for w in config.warnings() {
            tracing::warn!("{w}");
            warnings.push(w);
        }
        Ok(Arc::new(Self {
            command_user,
            models: ModelLibrary::new(config.daemon.model_dir.clone()),
            store: StateStore::new(config.daemon.state_file.clone()),
            protocol: RwLock::new(Arc::new(protocol)),
            events: Events::with_history(config.grpc.watch_history),
            config: RwLock::new(Arc::new(config)),
            machine: env.machine,
            host: env.host,
            pmu: env.pmu,
            registry: Mutex::new(Registry::default()),
            unmanaged: Mutex::new(BTreeSet::new()),
            placements: Mutex::new(HashMap::new()),
            save_lock: tokio::sync::Mutex::new(()),
            metrics,
            cancel: CancellationToken::new(),
            tasks: TaskTracker::new(),
            started: Instant::now(),
            migration_bytes_per_s: Mutex::new(DEFAULT_MIGRATION_BYTES_PER_S),
            warnings: Mutex::new(warnings),
            migration_hold: env.migration_hold,
            watch_list: Notify::new(),
        }))
    }

    /// Checks `policy.default` against the machine: a `pinned:<id>` default must name a
    /// placement that exists for some vCPU count, or every container it applies to fails.
    pub fn check_default_policy(&self) -> Result<(), StartError> {
        let Ok(Policy::Pinned { placement }) =
            Policy::parse(&self.config().policy.default, self.config().policy.goal)
        else {
            return Ok(());
        };
        let known = (1..=self.machine.pus.usable.len()).any(|v| {
            self.placements(v)
                .is_ok_and(|s| s.get(&placement).is_some())
        });
        if known {
            Ok(())
        } else {
            Err(StartError::DefaultPolicy {
                placement: placed_core::text::clip(&placement, 200),
            })
        }
    }

    /// Whether `observe.command_allow` lets a command metric run `argv`'s program (the
    /// daemon's `PATH` searched, as spawning it would); the error names `container`.
    fn check_command(&self, argv: &[String], container: &str) -> Result<(), DaemonError> {
        let Some(program) = argv.first() else {
            return Ok(());
        };
        placed_host::observe::check_allowed(
            program,
            &self.config().observe.command_allow,
            std::env::var_os("PATH").as_deref(),
        )
        .map_err(|e| DaemonError::MetricSource {
            container: container.to_owned(),
            source: Box::new(e.into()),
        })
    }

    /// Whether and as whom metric commands run.
    pub fn commands(&self) -> placed_host::observe::Commands {
        self.command_user.map_or(
            placed_host::observe::Commands::Refused,
            placed_host::observe::Commands::As,
        )
    }

    /// What sources built for API callers may do: run commands as [`Shared::commands`]
    /// says, read the files `observe.pattern_files` lists.
    pub fn access(&self) -> placed_host::observe::Access {
        placed_host::observe::Access {
            commands: self.commands(),
            files: self.config().observe.pattern_files.clone(),
        }
    }

    /// The operator's rules for a metric source, for Manage and before each measurement
    /// alike (a record kept in the state file from before a rule is held to it too): a
    /// command, or a pattern metric's program, only where command metrics are allowed and
    /// `observe.command_allow` holds its program; a pattern metric's file only under
    /// `observe.pattern_files` (checked again on the file when it is opened).
    pub fn check_metric(&self, spec: &SourceSpec, container: &str) -> Result<(), DaemonError> {
        let argv = match spec {
            SourceSpec::Command { argv, .. }
            | SourceSpec::Pattern {
                input: PatternInput::Program { argv, .. },
                ..
            } => argv,
            SourceSpec::Pattern {
                input: PatternInput::File { path },
                ..
            } => {
                return placed_host::observe::pattern::check_path(
                    path,
                    &self.config().observe.pattern_files,
                )
                .map_err(|e| DaemonError::MetricSource {
                    container: container.to_owned(),
                    source: Box::new(PatternError::from(e).into()),
                });
            }
            SourceSpec::Pushed { .. } | SourceSpec::Prometheus { .. } | SourceSpec::Perf { .. } => {
                return Ok(());
            }
        };
        if !self.config().observe.allow_command_metrics {
            return Err(DaemonError::CommandMetricsOff);
        }
        self.check_command(argv, container)
    }

    /// The configuration now in force.
    pub fn config(&self) -> Arc<Config> {
        self.config
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The measurement protocol now in force.
    pub fn protocol(&self) -> Arc<Protocol> {
        self.protocol
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Replaces the configuration and the protocol derived from it. A measurement already
    /// running keeps the protocol it started with.
    pub fn reconfigure(&self, config: Config) -> Result<(), StartError> {
        let protocol = config.protocol().map_err(StartError::Protocol)?;
        *self.protocol.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(protocol);
        *self.config.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(config);
        Ok(())
    }

    /// Takes the registry lock. Holders never await or do I/O, so a panic inside cannot
    /// leave a half-done change that matters more than losing the daemon; poisoning is
    /// ignored rather than turning one panic into a dead daemon.
    pub fn registry(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The containers handed back, which discovery leaves alone.
    pub fn unmanaged(&self) -> MutexGuard<'_, BTreeSet<String>> {
        self.unmanaged.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The container a reference names (id, name, runtime id or its unique prefix).
    pub fn find(self: &Arc<Self>, reference: &str) -> Result<Handle, DaemonError> {
        self.registry()
            .key_of(reference)
            .map(|id| Handle::new(self.clone(), id))
            .ok_or_else(|| DaemonError::UnknownContainer {
                reference: reference.to_owned(),
            })
    }

    /// The important placements for `v` vCPUs, computed once per `v`.
    pub fn placements(&self, v: usize) -> Result<Arc<PlacementSet>, DaemonError> {
        let cached = self
            .placements
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&v)
            .cloned();
        if let Some(s) = cached {
            return Ok(s);
        }
        let set = Arc::new(important_placements(&self.machine, v).map_err(|source| {
            DaemonError::Placements {
                vcpus: v,
                source: Box::new(source),
            }
        })?);
        self.placements
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(v, set.clone());
        Ok(set)
    }

    /// Writes the state file from a snapshot taken now.
    pub async fn persist(self: &Arc<Self>) -> Result<(), DaemonError> {
        let shared = self.clone();
        // The whole save runs in a task of its own, which takes the snapshot once it holds
        // the lock and keeps the lock until the file is renamed into place. A caller that
        // gives up (a cancelled request drops this future) can no longer release the lock
        // while its write goes on and let a second save start beside the first; and since
        // each snapshot is taken in lock order, the last write is the newest state.
        let save = tokio::spawn(async move {
            let _order = shared.save_lock.lock().await;
            let state = shared.snapshot();
            let store = shared.store.clone();
            tokio::task::spawn_blocking(move || store.save(&state)).await
        });
        let saved = joined("writing the state file", save.await)?;
        joined("writing the state file", saved)?.map_err(|e| {
            self.metrics.error("state");
            DaemonError::State(Box::new(e))
        })
    }

    fn snapshot(&self) -> crate::state::State {
        // Taken on its own: no lock is held while another is taken.
        let unmanaged = self.unmanaged().iter().cloned().collect();
        crate::state::State {
            written_unix_ms: now_ms(),
            fingerprint: self.machine.fingerprint().to_owned(),
            containers: self
                .registry()
                .entries
                .values()
                .map(|e| e.record.clone())
                .collect(),
            unmanaged,
        }
    }

    /// Refreshes the per-state gauge.
    pub fn update_gauges(&self) {
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

    /// Units the container `id` may use: the free ones and its own.
    pub fn available_units(&self, id: &str) -> Vec<usize> {
        let taken = self.registry().taken_units(id);
        (0..self.machine.units.len())
            .filter(|u| !taken.contains(u))
            .collect()
    }

    /// The move-or-stay rule's inputs for moving `record` to `target`, and its verdict.
    pub async fn worth_moving(
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
        let current_predicted = super::evaluate::usable_prediction(record).and_then(|p| {
            record
                .assigned
                .as_ref()
                .and_then(|a| a.placement.as_deref())
                .and_then(|id| p.relative(id))
        });
        let held = self.registry().taken_units(id);
        let shared = self.clone();
        let (rec, to_mems) = (record.clone(), target.mems.clone());
        // /proc/<pid>/numa_maps of a large process takes a while to read.
        let (trespassing, bytes_to_move) =
            tokio::task::spawn_blocking(move || shared.exposure(&rec, &held, &to_mems))
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
                horizon_s: self.config().policy.horizon.as_secs_f64(),
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
        to_mems: &NodeSet,
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
                    .fold(NodeSet::new(), |acc, u| acc.union(&u.mems)),
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
        // A container gone meanwhile has nothing to move.
        let bytes = self.host.bytes_outside(&cg, to_mems).unwrap_or_else(|e| {
            tracing::debug!(container = %record.name, error = %placed_core::text::Chain(&e), "resident memory unreadable");
            0
        });
        (trespassing, bytes)
    }

    /// Wakes every aggressive container but `except`, to be placed again: they share only
    /// units nobody holds, and what nobody holds just changed.
    pub fn wake_sharers(&self, except: &str) {
        let reg = self.registry();
        for (key, e) in &reg.entries {
            if key != except && matches!(e.record.policy, Policy::Aggressive) {
                e.wake.notify_one();
            }
        }
    }

    /// A migration mode with the configured defaults (the throttled mode's cap).
    pub fn mode_of(&self, kind: ModeKind) -> Mode {
        kind.mode(
            self.config()
                .policy
                .throttle_mib_per_s
                .saturating_mul(1 << 20),
        )
    }

    /// The configured migration mode.
    pub fn migration_mode(&self) -> Mode {
        self.mode_of(self.config().policy.migration)
    }

    pub fn learn_migration_speed(&self, bytes: u64, seconds: f64) {
        // Only moves big enough to time meaningfully update the estimate.
        if bytes >= 64 << 20 && seconds > 0.01 {
            let mut bw = self
                .migration_bytes_per_s
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            *bw = bytes as f64 / seconds;
        }
    }

    pub fn new_entry(&self, record: ContainerRecord, container: Container) -> Entry {
        Entry {
            record,
            container,
            op: Arc::new(tokio::sync::Mutex::new(())),
            doing: None,
            by_api: false,
            in_host: Arc::new(tokio::sync::Mutex::new(())),
            reporter: None,
            cancel: self.cancel.child_token(),
            wake: Arc::new(Notify::new()),
            settings: 0,
            reasserts: Vec::new(),
            check_pending: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switching_user_needs_both_capabilities() {
        assert!(can_switch_user(|_| true));
        assert!(!can_switch_user(|c| c != CAP_SETUID));
        assert!(!can_switch_user(|c| c != CAP_SETGID));
        // This process: as the test runs (root or not, no unit around it), both are in
        // its bounding set.
        assert!(can_switch_user(bounding_set_has));
    }
}
