//! Taking a container under management: its record made with the settings `Manage` asked
//! for (or the defaults), registered, saved, and its lifecycle task started, in that order,
//! so that no task ever runs on settings about to change.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::state::{ContainerRecord, Lifecycle, ReservationRecord, VcpuSource};
use placed_host::containers::{Container, Runtime};
use placed_host::migrate::Mode;
use placed_host::observe::SourceSpec;

use super::core::Core;
use super::error::DaemonError;
use super::events::{EventKind, now_ms};
use super::handle::Handle;
use super::moving::{Journal, target_at};
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
/// A container claiming a reservation is moved onto the reserved units before its task
/// takes it (the task waits for the move, then starts from there).
pub(crate) async fn register(
    core: &Arc<Core>,
    container: Container,
    settings: Option<&ManageRequest>,
    claim: Option<&ReservationRecord>,
) -> Result<Registered, DaemonError> {
    let id = container.cgroup.to_string();
    let record = record_for(core, &container, settings);
    let (vcpus, vcpus_source) = (record.vcpus, record.vcpus_source);
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
    // Uncontended: the task that could hold it is not started yet.
    let first = match claim {
        Some(_) => Some(handle.try_begin("starting on its reservation")?),
        None => None,
    };
    task::spawn(handle.clone());
    if let (Some(r), Some(guard)) = (claim, first) {
        let started = start_on(&handle, r).await;
        drop(guard);
        started?;
    }
    Ok(Registered::New(handle))
}

/// Moves a container onto the units a reservation holds for it, then ends the hold. The
/// caller holds the container's operation lock. The hold lasts until the move is done, so
/// that no other decision takes the units in between; a failed move leaves the hold for a
/// retry (or its expiry).
pub(crate) async fn start_on(handle: &Handle, r: &ReservationRecord) -> Result<(), DaemonError> {
    let target = target_at(r.assigned.clone(), &format!("claimed reservation {}", r.id));
    if !handle.is_at(&handle.record()?, &target).await {
        handle
            .move_to(&target, &Mode::Kernel, Journal::EachMove)
            .await?;
    } else {
        handle.with(|e| e.record.assigned = Some(r.assigned.clone()))?;
    }
    let core = &handle.core;
    core.reservations.take(&r.id);
    handle.event(
        EventKind::Claimed,
        Lifecycle::Placed,
        r.assigned.placement.clone(),
        format!(
            "claimed reservation {}: cpus {} mems {}",
            r.id, r.assigned.cpus, r.assigned.mems
        ),
    );
    core.persist().await
}

/// A container's labels after a request's: an empty value removes a label.
pub(crate) fn merged(
    labels: &BTreeMap<String, String>,
    changes: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut out = labels.clone();
    for (k, v) in changes {
        if v.is_empty() {
            out.remove(k);
        } else {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

/// The record a newly found container gets, with the settings `Manage` asked for (or the
/// defaults).
pub(crate) fn record_for(
    core: &Core,
    container: &Container,
    settings: Option<&ManageRequest>,
) -> ContainerRecord {
    let id = container.cgroup.to_string();
    let (vcpus, vcpus_source) = initial_vcpus(core, container, settings);
    let policy = settings
        .and_then(|s| s.policy.clone())
        .unwrap_or_else(|| core.settings.default_policy());
    let metric = match settings.and_then(|s| s.metric.clone()) {
        Some(m) => Some(m),
        None => core.node.pmu.then_some(SourceSpec::Perf { ipc: false }),
    };
    // A plain cgroup is known by its last component, as a container by its name.
    let name = match (
        settings.and_then(|s| s.name.clone()),
        &container.runtime,
        &container.name,
    ) {
        (Some(name), _, _) => name,
        (None, Runtime::Cgroup, None) => container.cgroup.name().to_owned(),
        _ => container.label(),
    };
    ContainerRecord {
        runtime: container.runtime.to_string(),
        runtime_id: container.id.clone(),
        vcpus_source,
        metric,
        updated_unix_ms: now_ms(),
        on_override: settings.and_then(|s| s.on_override),
        labels: settings
            .map(|s| merged(&BTreeMap::new(), &s.labels))
            .unwrap_or_default(),
        ..ContainerRecord::new(&id, &name, vcpus, policy)
    }
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
