//! placed on a Kubernetes node: the node's NRI plugin (through `placed-nri`), placing a
//! pod's containers when the runtime creates them, managing them while they run, holding
//! their cpusets against others and telling the runtime of every move. See
//! docs/kubernetes.md.
//!
//! - `settings`: the `[nri]` section.
//! - `intent`: what a pod's container asks for (annotations, size, identity).
//! - `cpu_manager`: the kubelet's CPU manager, which placed stands aside for.
//! - `agent`: the daemon as the plugin's `Placer`.
//! - `follow`: placed's own moves told to the runtime.

mod agent;
pub mod cpu_manager;
mod follow;
pub mod intent;
pub mod settings;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use placed_nri::{Plugin, Status};

use crate::lifecycle::Daemon;

pub use agent::Agent;
pub use settings::{NriConfig, OptIn};

/// The plugin and what follows the daemon for it, while the daemon runs.
#[derive(Debug)]
pub struct Node {
    plugin: Plugin,
    tasks: Vec<JoinHandle<()>>,
    stop: CancellationToken,
}

impl Node {
    /// Starts the plugin when `[nri]` enables it; it connects (and reconnects) by itself,
    /// and pods start as the runtime starts them until it has.
    pub fn start(
        config: &NriConfig,
        daemon: &Daemon,
    ) -> Result<Option<Self>, placed_nri::config::ConfigError> {
        if !config.enabled {
            return Ok(None);
        }
        let agent = Agent::new(daemon.clone(), config.clone());
        let plugin = Plugin::start(config.plugin()?, agent)?;
        Ok(Some(Self::around(plugin, config, daemon)))
    }

    /// The daemon's side around a started plugin: its moves told to the runtime, the
    /// connection's state in status. (Tests start the plugin on placed-nri's fake runtime.)
    pub fn around(plugin: Plugin, config: &NriConfig, daemon: &Daemon) -> Self {
        let stop = CancellationToken::new();
        let tasks = vec![
            tokio::spawn(follow::follow(
                daemon.clone(),
                plugin.updater(),
                stop.clone(),
            )),
            tokio::spawn(report(
                daemon.clone(),
                plugin.status(),
                config.socket.display().to_string(),
                stop.clone(),
            )),
        ];
        Self {
            plugin,
            tasks,
            stop,
        }
    }

    /// Disconnects from the runtime (pods start without placed from now on).
    pub async fn stop(self) {
        self.stop.cancel();
        self.plugin.stop().await;
        for t in self.tasks {
            let _ = t.await;
        }
    }
}

/// Keeps `placectl status` saying whether the runtime is connected.
async fn report(
    daemon: Daemon,
    mut status: tokio::sync::watch::Receiver<Status>,
    socket: String,
    stop: CancellationToken,
) {
    loop {
        let line = match &*status.borrow_and_update() {
            Status::Connected { runtime, version } => {
                tracing::info!(%runtime, %version, "NRI: connected to the container runtime");
                None
            }
            Status::Disconnected { error, retry_in } => Some(format!(
                "NRI: not connected to the container runtime at {socket}{}{}: pods start without placed until it is",
                error
                    .as_ref()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default(),
                retry_in
                    .map(|d| format!(", next attempt in {d:?}"))
                    .unwrap_or_default(),
            )),
        };
        daemon.set_condition("nri", line);
        tokio::select! {
            () = stop.cancelled() => break,
            changed = status.changed() => if changed.is_err() { break },
        }
    }
    daemon.set_condition("nri", None);
}
