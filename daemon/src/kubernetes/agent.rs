//! The daemon as the NRI plugin's [`Placer`]: a container is placed when it is created (the
//! decision a new container gets through `Admit`, its units held until it starts), taken
//! under management once it runs, held against cpuset updates from others, re-placed on a
//! resize, and handed back when it stops.

use std::sync::Arc;
use std::time::Duration;

use placed_core::reconcile::Sets;
use placed_nri::{Container, ContainerState, Event, Placer, Pod, Resources, StateChange, Update};

use crate::lifecycle::{AdmitRequest, Daemon, DaemonError, ManageRequest};

use super::cpu_manager;
use super::intent::{self, Wanted};
use super::settings::NriConfig;

/// Answers the runtime's calls for one daemon.
#[derive(Debug)]
pub struct Agent {
    daemon: Daemon,
    config: NriConfig,
}

impl Agent {
    pub fn new(daemon: Daemon, config: NriConfig) -> Arc<Self> {
        Arc::new(Self { daemon, config })
    }

    /// Whether placed may act at all: not while the kubelet's static CPU manager owns the
    /// node's cpusets. Said in status while it lasts.
    fn may_act(&self) -> bool {
        let conflict = cpu_manager::conflict(&self.config.kubelet_cpu_manager_state);
        let free = conflict.is_none();
        self.daemon.set_condition("kubelet-cpu-manager", conflict);
        free
    }

    /// What the container asks for; its unusable annotations reported on the way.
    fn wanted(&self, pod: &Pod, container: &Container) -> Option<Wanted> {
        let reading = intent::read(&self.config, pod, container, self.daemon.config_goal());
        let who = format!("{}/{}/{}", pod.namespace, pod.name, container.name);
        if !reading.errors.is_empty() {
            self.daemon.note(
                &who,
                format!(
                    "annotations not used (the rest apply): {}",
                    reading.errors.join("; ")
                ),
            );
        }
        match reading.decision {
            Ok(w) => Some(w),
            Err(why) => {
                tracing::debug!(container = %who, "left to the runtime: {why}");
                None
            }
        }
    }

    /// Takes a running container under management, on the units held for it at creation
    /// when there are any.
    async fn take(&self, w: Wanted, runtime_id: &str) -> Result<(), DaemonError> {
        let reservation = self.daemon.reservation_for(runtime_id);
        let req = ManageRequest {
            container: w.cgroup,
            vcpus: Some(w.vcpus),
            policy: w.policy,
            metric: w.metric,
            on_override: w.on_override,
            labels: w.labels,
            reservation,
            name: Some(w.name),
            dry_run: false,
        };
        manage_when_free(&self.daemon, req).await
    }

    /// The cpuset placed holds for a managed container.
    fn held(&self, cgroup: &str) -> Option<Sets> {
        let view = self.daemon.container(cgroup).ok()?;
        let a = view.record.assigned?;
        Some(Sets {
            cpus: a.cpus,
            mems: a.mems,
        })
    }

    /// A container is gone (stopped or removed): its hold released, itself handed back
    /// with its cpuset as it is (restoring would write into a dying cgroup).
    async fn forget(&self, pod: &Pod, container: &Container) {
        if let Some(r) = self.daemon.reservation_for(&container.id) {
            let _ = self.daemon.release(&r).await;
        }
        let cgroup = intent::cgroup_path(&container.cgroups_path, &container.id);
        match self.daemon.unmanage(&cgroup, false).await {
            Ok(_) | Err(DaemonError::UnknownContainer { .. }) => {}
            Err(e) => tracing::warn!(
                container = %format!("{}/{}/{}", pod.namespace, pod.name, container.name),
                error = %e.line(),
                "a stopped container could not be handed back"
            ),
        }
    }
}

/// How long a change from the runtime waits for a container busy being measured or moved.
const BUSY_PATIENCE: Duration = Duration::from_secs(120);

/// `Manage`, again while the container is busy (a measurement or a move holds it): the
/// runtime's change (a resize) must not be lost to a step in progress.
async fn manage_when_free(daemon: &Daemon, req: ManageRequest) -> Result<(), DaemonError> {
    let deadline = tokio::time::Instant::now() + BUSY_PATIENCE;
    loop {
        match daemon.manage(req.clone()).await {
            Err(e)
                if matches!(e.inner(), DaemonError::Busy { .. })
                    && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            other => return other.map(|_| ()),
        }
    }
}

impl Placer for Agent {
    type Error = DaemonError;

    async fn synchronize(&self, pods: Vec<Pod>, containers: Vec<Container>) -> Vec<Update> {
        if !self.may_act() {
            return Vec::new();
        }
        let mut updates = Vec::new();
        for c in containers
            .iter()
            .filter(|c| c.state == ContainerState::Running)
        {
            let Some(pod) = pods.iter().find(|p| p.id == c.pod_id) else {
                continue;
            };
            let Some(w) = self.wanted(pod, c) else {
                continue;
            };
            // Adopted from the state file: the runtime's record gets placed's cpuset back.
            if let Some(sets) = self.held(&w.cgroup) {
                updates.push(Update {
                    container_id: c.id.clone(),
                    sets,
                });
                continue;
            }
            // Started while placed was away: taken now, and placed like any new container
            // (the update follows the move).
            if let Err(e) = self.take(w, &c.id).await {
                self.daemon
                    .note(&c.name, format!("not taken: {}", e.line()));
            }
        }
        updates
    }

    async fn create_container(
        &self,
        pod: Pod,
        container: Container,
    ) -> Result<Option<Sets>, DaemonError> {
        if !self.may_act() {
            return Ok(None);
        }
        let Some(w) = self.wanted(&pod, &container) else {
            return Ok(None);
        };
        let req = AdmitRequest {
            name: w.name.clone(),
            vcpus: w.vcpus,
            policy: w.policy,
            labels: w.labels,
            reserve: Some(self.config.start_hold),
            for_container: Some(container.id.clone()),
            ..AdmitRequest::default()
        };
        match self.daemon.admit(req).await {
            // Only a placement pins: an unpinned answer (observe, aggressive) leaves the
            // cpuset to the runtime, and a hold of nothing would only clutter status.
            Ok(a) if a.target.placement.is_some() => Ok(Some(Sets {
                cpus: a.target.cpus,
                mems: a.target.mems,
            })),
            Ok(a) => {
                if let Some(r) = a.reservation {
                    let _ = self.daemon.release(&r.id).await;
                }
                Ok(None)
            }
            Err(e) => {
                self.daemon.note(
                    &w.name,
                    format!("started where the runtime puts it: {}", e.line()),
                );
                Ok(None)
            }
        }
    }

    async fn update_container(
        &self,
        pod: Pod,
        container: Container,
        requested: Resources,
    ) -> Result<Option<Sets>, DaemonError> {
        let cgroup = intent::cgroup_path(&container.cgroups_path, &container.id);
        let Some(sets) = self.held(&cgroup) else {
            return Ok(None);
        };
        // An in-place resize: the container is placed again for its new size, in the
        // background (a move does not fit in the runtime's budget); until then it keeps
        // its cpuset, which the move then updates.
        let now = self.daemon.container(&cgroup)?.record.vcpus;
        let resized = Container {
            resources: requested,
            ..container.clone()
        };
        if let Some(w) = self.wanted(&pod, &resized).filter(|w| w.vcpus != now) {
            let daemon = self.daemon.clone();
            tokio::spawn(async move {
                let req = ManageRequest {
                    container: cgroup,
                    vcpus: Some(w.vcpus),
                    ..ManageRequest::default()
                };
                if let Err(e) = manage_when_free(&daemon, req).await {
                    daemon.note(
                        &w.name,
                        format!("not re-placed after a resize: {}", e.line()),
                    );
                }
            });
        }
        Ok(Some(sets))
    }

    async fn stop_container(&self, pod: Pod, container: Container) {
        self.forget(&pod, &container).await;
    }

    async fn state_change(&self, change: StateChange) {
        let Some(container) = change.container else {
            return;
        };
        match change.event {
            Event::PostStartContainer => {
                if !self.may_act() {
                    return;
                }
                if let Some(w) = self.wanted(&change.pod, &container) {
                    let name = w.name.clone();
                    if let Err(e) = self.take(w, &container.id).await {
                        self.daemon.note(&name, format!("not taken: {}", e.line()));
                    }
                }
            }
            Event::RemoveContainer => self.forget(&change.pod, &container).await,
            _ => {}
        }
    }
}
