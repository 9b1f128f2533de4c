//! Taking a container under management: its record made with the settings `Manage` asked
//! for (or the defaults), registered, saved, and its lifecycle task started, in that order,
//! so that no task ever runs on settings about to change.

use std::sync::Arc;

use crate::state::{ContainerRecord, Lifecycle, VcpuSource};
use placed_host::containers::{Container, Runtime};
use placed_host::observe::SourceSpec;

use super::core::Core;
use super::error::DaemonError;
use super::events::{EventKind, now_ms};
use super::handle::Handle;
use super::requests::ManageRequest;
use super::task;

/// What [`register`] found.
#[derive(Debug)]
pub(crate) enum Registered {
    /// Taken under management now, with the settings asked for.
    New(Handle),
    /// Already managed (found by discovery meanwhile): its settings are unchanged.
    Known(Handle),
}

/// Registers a newly found container with the settings `Manage` asked for (or the
/// defaults) and starts its task, so that no task ever runs on settings about to change.
pub(crate) async fn register(
    core: &Arc<Core>,
    container: Container,
    settings: Option<&ManageRequest>,
) -> Result<Registered, DaemonError> {
    let id = container.cgroup.to_string();
    let (vcpus, vcpus_source) = initial_vcpus(core, &container, settings);
    let policy = settings
        .and_then(|s| s.policy.clone())
        .unwrap_or_else(|| core.settings.default_policy());
    let metric = match settings.and_then(|s| s.metric.clone()) {
        Some(m) => Some(m),
        None => core.node.pmu.then_some(SourceSpec::Perf { ipc: false }),
    };
    // A plain cgroup is known by its last component, as a container by its name.
    let name = match (&container.runtime, &container.name) {
        (Runtime::Cgroup, None) => container.cgroup.name().to_owned(),
        _ => container.label(),
    };
    let record = ContainerRecord {
        runtime: container.runtime.to_string(),
        runtime_id: container.id.clone(),
        vcpus_source,
        metric,
        updated_unix_ms: now_ms(),
        on_override: settings.and_then(|s| s.on_override),
        ..ContainerRecord::new(&id, &name, vcpus, policy)
    };
    let handle = Handle::new(core.clone(), id.clone());
    {
        let mut reg = core.containers.registry();
        if reg.entries.contains_key(&id) {
            return Ok(Registered::Known(handle));
        }
        let entry = core.new_entry(record, container);
        reg.entries.insert(id, entry);
    }
    core.containers.watch_list.notify_one();
    handle.event(
        EventKind::Discovered,
        Lifecycle::Discovered,
        None,
        format!("discovered, {vcpus} vCPUs ({vcpus_source:?})"),
    );
    core.update_gauges();
    core.persist().await?;
    task::spawn(handle.clone());
    Ok(Registered::New(handle))
}

/// `v` for a new container: the request's, else its CPU quota's, else its cpuset's size.
pub(crate) fn initial_vcpus(
    core: &Core,
    container: &Container,
    settings: Option<&ManageRequest>,
) -> (usize, VcpuSource) {
    if let Some(v) = settings.and_then(|s| s.vcpus) {
        return (v, VcpuSource::Request);
    }
    let host = &core.node.host;
    if let Some(v) = host.vcpus_from_quota(&container.cgroup) {
        return (v.min(core.node.machine.pus.usable.len()), VcpuSource::Quota);
    }
    let cpus = host
        .cpuset(&container.cgroup)
        .map(|c| c.effective_cpus.len())
        .unwrap_or(0);
    (cpus.max(1), VcpuSource::Cpuset)
}
