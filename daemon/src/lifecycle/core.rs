//! The daemon's rooms put together: what every container task, command, discovery and the
//! reconciliation share. Each room holds what changes together and guards itself; this
//! struct only composes them and does the few things that span rooms (a save, forgetting
//! a container, the units a container may use).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::Config;
use crate::state::{ContainerRecord, Lifecycle, StateStore};
use crate::telemetry::Metrics;
use placed_core::policy::Policy;
use placed_host::containers::Container;

use super::containers::Containers;
use super::entry::Entry;
use super::environment::{Environment, StartError};
use super::error::DaemonError;
use super::events::{Event, EventKind, Events, now_ms};
use super::live::Live;
use super::models::ModelLibrary;
use super::node::Node;
use super::persistence::Persistence;
use super::production::Production;
use super::reservations::Reservations;
use super::settings::Settings;
use super::telemetry::Telemetry;

#[derive(Debug)]
pub(crate) struct Core {
    pub settings: Settings,
    pub node: Node,
    pub containers: Containers,
    pub reservations: Reservations,
    pub persistence: Arc<Persistence>,
    pub telemetry: Telemetry,
    pub models: ModelLibrary,
    /// Every model's decisions checked against what happened, and its live gate.
    pub live: Live,
    /// What the daemon measures of managed containers, kept as training data.
    pub production: Production,
    /// Cancelled at shutdown: every task and check stops at its next await.
    pub cancel: CancellationToken,
    /// Every task the daemon starts, waited for at shutdown.
    pub tasks: TaskTracker,
    pub started: Instant,
    /// What `placectl status` warns about (missing hardware counters, configuration).
    pub warnings: Mutex<Vec<String>>,
    /// Warnings that last while a condition does (the NRI connection, the kubelet's CPU
    /// manager), by what they are about.
    pub conditions: Mutex<std::collections::BTreeMap<&'static str, String>>,
}

impl Core {
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
        for w in config.warnings() {
            tracing::warn!("{w}");
            warnings.push(w);
        }
        let models = ModelLibrary::new(config.daemon.model_dir.clone(), env.pmu)
            .on_host(env.machine.clone());
        let store = StateStore::new(config.daemon.state_file.clone());
        let events = Events::with_history(config.grpc.watch_history);
        let production = Production::new(
            &config.daemon.state_file,
            env.provenance,
            env.host.kernel().files().proc("sys/kernel/hostname").ok(),
            metrics.clone(),
        )
        .describing(env.machine.clone());
        Ok(Arc::new(Self {
            settings: Settings::new(config)?,
            node: Node::new(env.machine, env.host, env.pmu, env.migration_hold),
            containers: Containers::default(),
            reservations: Reservations::default(),
            persistence: Arc::new(Persistence::new(store, metrics.state_writes.clone())),
            telemetry: Telemetry::new(events, metrics),
            models,
            live: Live::new(placed_models::live::LiveGate::default()),
            production,
            cancel: CancellationToken::new(),
            tasks: TaskTracker::new(),
            started: Instant::now(),
            warnings: Mutex::new(warnings),
            conditions: Mutex::default(),
        }))
    }

    /// Checks `policy.default` against the machine: a `pinned:<id>` default must name a
    /// placement that exists for some vCPU count, or every container it applies to fails.
    pub fn check_default_policy(&self) -> Result<(), StartError> {
        let Policy::Pinned { placement } = self.settings.default_policy() else {
            return Ok(());
        };
        let known = (1..=self.node.machine.pus.usable.len()).any(|v| {
            self.node
                .placements(v)
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

    /// Adds a warning `placectl status` shows from now on.
    pub fn warn(&self, warning: String) {
        tracing::warn!("{warning}");
        self.warnings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(warning);
    }

    /// Writes the state file from a snapshot (or finds a newer write already covered it).
    pub async fn persist(self: &Arc<Self>) -> Result<(), DaemonError> {
        let core = self.clone();
        self.persistence
            .save(move || core.snapshot())
            .await
            .inspect_err(|e| {
                if matches!(e, DaemonError::State(_)) {
                    self.telemetry.metrics.error("state");
                }
            })
    }

    /// Everything the state file keeps, as it is now.
    pub fn snapshot(&self) -> crate::state::State {
        // Taken on its own: no lock is held while another is taken.
        let unmanaged = self.containers.unmanaged().iter().cloned().collect();
        let reservations = self.reservations.records();
        crate::state::State {
            written_unix_ms: now_ms(),
            fingerprint: self.node.machine.fingerprint().to_owned(),
            containers: self
                .containers
                .registry()
                .entries
                .values()
                .map(|e| e.record.clone())
                .collect(),
            unmanaged,
            reservations,
            stopped_models: self.live.stopped_all(),
        }
    }

    /// Refreshes the per-state gauge.
    pub fn update_gauges(&self) {
        let counts = self.containers.registry().counts();
        self.telemetry.set_counts(&counts);
    }

    /// Units the container `id` may use: the free ones and its own (never those held for
    /// a container not started yet).
    pub fn available_units(&self, id: &str) -> Vec<usize> {
        let reserved = self.reservations.units();
        let taken = self.containers.registry().taken_units(id);
        (0..self.node.machine.units.len())
            .filter(|u| !taken.contains(u) && !reserved.contains_key(u))
            .collect()
    }

    /// A registry entry for a container newly under management, stopped with the daemon.
    pub fn new_entry(&self, record: ContainerRecord, container: Container) -> Entry {
        Entry::new(record, container, self.cancel.child_token())
    }

    /// A container that is gone: its task stops, its units are free, its record goes.
    pub async fn forget(self: &Arc<Self>, id: &str) {
        let removed = self.containers.registry().entries.remove(id);
        let Some(entry) = removed else {
            return;
        };
        entry.cancel.cancel();
        self.containers.watch_list.notify_one();
        // Its units are free again: aggressive containers may share them.
        if entry
            .record
            .assigned
            .as_ref()
            .is_some_and(|a| !a.units.is_empty())
        {
            self.containers.wake_sharers(id);
        }
        self.update_gauges();
        self.telemetry.send(Event {
            unix_ms: now_ms(),
            container: id.to_owned(),
            kind: EventKind::Vanished,
            state: Lifecycle::Discovered,
            placement: None,
            message: format!("{} vanished; forgotten", entry.record.name),
            cpuset_override: None,
            outcome: None,
            labels: entry.record.labels.clone(),
        });
        if let Err(e) = self.persist().await {
            tracing::error!(error = %e.line(), "cannot write the state file");
        }
    }
}
