//! The daemon as the service and the binary hold it: started on an [`Environment`], asked
//! through its commands (`commands`, `unmanage`), stopped in order.

use std::sync::Arc;

use crate::config::Config;
use crate::telemetry::Metrics;
use placed_core::machine::Machine;
use placed_host::migrate::{Mode, ModeKind};

use super::adopt;
use super::core::Core;
use super::discovery::Discovery;
use super::environment::{Environment, StartError};
use super::events;
use super::expiry::Expiry;
use super::reconcile::Reconciler;

/// A handle to the running daemon; cheap to clone.
#[derive(Debug, Clone)]
pub struct Daemon {
    pub(super) core: Arc<Core>,
}

impl Daemon {
    /// Loads the models and the state file, adopts the containers it names, and starts
    /// discovery on `env`. The returned daemon is ready to serve.
    pub async fn start(
        config: Config,
        env: Environment,
        metrics: Arc<Metrics>,
    ) -> Result<Self, StartError> {
        let core = Core::new(config, env, metrics)?;
        let check = core.clone();
        tokio::task::spawn_blocking(move || check.check_default_policy())
            .await
            .map_err(|source| StartError::Task {
                doing: "checking policy.default",
                source,
            })??;
        // Weak: the metrics outlive no daemon, and must not keep one alive.
        let weak = Arc::downgrade(&core);
        core.telemetry.metrics.per_container.set_source(move || {
            weak.upgrade().map_or_else(Vec::new, |s| {
                s.containers
                    .registry()
                    .entries
                    .values()
                    .map(|e| crate::telemetry::containers::View::of(&e.record))
                    .collect()
            })
        });
        adopt::restore(&core).await?;
        core.update_gauges();
        Reconciler::new(&core).start();
        Expiry::new(&core).start();
        Discovery::new(&core).start();
        Ok(Self { core })
    }

    pub fn machine(&self) -> &Machine {
        &self.core.node.machine
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.core.telemetry.metrics
    }

    /// A migration mode with the configured defaults (the throttled mode's cap).
    pub fn mode_of(&self, kind: ModeKind) -> Mode {
        self.core.settings.mode_of(kind)
    }

    /// Takes the live settings of `config` (the `[policy]` and `[observe]` sections and
    /// the resync interval) from now on: new containers get the new default policy, and
    /// each task uses the new settings from its next step.
    pub fn reconfigure(&self, config: Config) -> Result<(), StartError> {
        self.core.settings.reconfigure(config)
    }

    /// The model policy's default goal, for requests that leave it unset.
    pub fn config_goal(&self) -> f64 {
        self.core.settings.config().policy.goal
    }

    /// Live events (`after = None`), or the kept events after sequence `after` and then
    /// the live ones, none lost or repeated between the two.
    pub fn events(&self, after: Option<u64>) -> Result<events::Feed, events::ResumeError> {
        self.core.telemetry.events.feed(after)
    }

    /// Tells watchers and the log something about a container that is not the daemon's
    /// doing (a pod's annotations it could not use, a pod left to the runtime).
    pub fn note(&self, container: &str, message: String) {
        tracing::warn!(container, "{message}");
        self.core.telemetry.send(events::Event {
            unix_ms: events::now_ms(),
            container: container.to_owned(),
            kind: events::EventKind::Error,
            state: crate::state::Lifecycle::Discovered,
            placement: None,
            message,
            cpuset_override: None,
            labels: Default::default(),
            outcome: None,
        });
    }

    /// Sets (`Some`) or clears the warning `placectl status` shows about `about` while a
    /// condition lasts; a change is logged once.
    pub fn set_condition(&self, about: &'static str, warning: Option<String>) {
        let mut c = self
            .core
            .conditions
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        match warning {
            Some(w) if c.get(about) != Some(&w) => {
                tracing::warn!("{w}");
                c.insert(about, w);
            }
            None => {
                c.remove(about);
            }
            Some(_) => {}
        }
    }

    /// The sequence number of the last event issued.
    pub fn last_event(&self) -> u64 {
        self.core.telemetry.events.last_sequence()
    }

    /// Answers when the daemon's core state is reachable: for the watchdog.
    pub async fn alive(&self) -> bool {
        let core = self.core.clone();
        tokio::task::spawn_blocking(move || core.containers.registry().entries.len())
            .await
            .is_ok()
    }

    /// Stops every task (each leaves its container whole and thawed), writes the state, and
    /// thaws anything still frozen.
    pub async fn shutdown(&self) {
        self.core.cancel.cancel();
        self.core.tasks.close();
        self.core.tasks.wait().await;
        if let Err(e) = self.core.persist().await {
            tracing::error!(error = %e.line(), "could not write the state file at shutdown");
        }
        let thawed = self.core.node.host.thaw_all();
        if thawed > 0 {
            tracing::warn!(thawed, "thawed containers left frozen at shutdown");
        }
    }
}
