//! What the plugin asks of placed: the [`Placer`] the daemon implements.

use std::future::Future;

use placed_core::reconcile::Sets;

use crate::events::StateChange;
use crate::objects::{Container, Pod, Resources};

/// A cpuset for a running container, sent to the runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    pub container_id: String,
    pub sets: Sets,
}

/// placed's decisions, called by the plugin for the runtime's events.
///
/// Every call is answered within the plugin's budget ([`crate::Config::budget`]), well
/// inside the runtime's own 2 s timeout: when a call has not returned by then, the runtime
/// gets "no change" (the container is created or updated as it would be without placed),
/// the call goes on, and what it returns later is sent as an update of the running
/// container ([`crate::Updater`]). So a call is never cancelled half-way, and a slow
/// placed never delays a pod or fails it. A call that returns an error is answered "no
/// change" as well, and logged; the Placer reports its own errors where it wants them (the
/// container's record, events).
///
/// The plugin passes owned values: each call runs in its own task.
pub trait Placer: Send + Sync + 'static {
    type Error: std::error::Error + Send + Sync + 'static;

    /// The plugin (re)connected: every pod and container the runtime has. Returns the
    /// cpusets to set now: the containers placed had placed before (adoption: their
    /// placements kept), and any it re-places.
    fn synchronize(
        &self,
        pods: Vec<Pod>,
        containers: Vec<Container>,
    ) -> impl Future<Output = Vec<Update>> + Send;

    /// A container is being created: its cpuset, or `None` to leave it as the runtime
    /// would create it. Nothing should be measured here; this is the decision a container
    /// gets before it exists.
    fn create_container(
        &self,
        pod: Pod,
        container: Container,
    ) -> impl Future<Output = Result<Option<Sets>, Self::Error>> + Send;

    /// Someone asked the runtime to update the container's resources to `requested` (CRI
    /// UpdateContainerResources: the kubelet's CPU manager, an in-place resize). `Some`:
    /// the cpuset the container keeps (the hold), whatever was requested; `None`: the
    /// update goes through as requested.
    fn update_container(
        &self,
        pod: Pod,
        container: Container,
        requested: Resources,
    ) -> impl Future<Output = Result<Option<Sets>, Self::Error>> + Send;

    /// The container is being stopped: its units may be freed.
    fn stop_container(&self, pod: Pod, container: Container) -> impl Future<Output = ()> + Send;

    /// Any other event the plugin subscribed to ([`crate::EventMask::PLACED`]).
    fn state_change(&self, change: StateChange) -> impl Future<Output = ()> + Send;

    /// The connection to the runtime is gone (the runtime stopped, restarted or dropped
    /// placed). The plugin reconnects by itself; the next [`Placer::synchronize`] says
    /// what the runtime has then.
    fn disconnected(&self) -> impl Future<Output = ()> + Send {
        async {}
    }
}
