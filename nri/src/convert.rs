//! Protocol messages to placed's plain values and back: the only place that reads a
//! protobuf field, so a change of the protocol stays here.

use std::str::FromStr;

use protobuf::{EnumOrUnknown, MessageField};

use placed_core::cpuset::IdSet;
use placed_core::reconcile::Sets;

use crate::api::nri as pb;
use crate::events::{Event, StateChange};
use crate::objects::{Container, ContainerState, Map, Pod, Resources};

pub(crate) fn pod(p: &pb::PodSandbox) -> Pod {
    Pod {
        id: p.id.clone(),
        uid: p.uid.clone(),
        name: p.name.clone(),
        namespace: p.namespace.clone(),
        labels: map(&p.labels),
        annotations: map(&p.annotations),
        cgroup_parent: p
            .linux
            .as_ref()
            .map(|l| l.cgroup_parent.clone())
            .unwrap_or_default(),
    }
}

pub(crate) fn container(c: &pb::Container) -> Container {
    let linux = c.linux.as_ref();
    Container {
        id: c.id.clone(),
        pod_id: c.pod_sandbox_id.clone(),
        name: c.name.clone(),
        state: state(c.state),
        labels: map(&c.labels),
        annotations: map(&c.annotations),
        cgroups_path: linux.map(|l| l.cgroups_path.clone()).unwrap_or_default(),
        pid: (c.pid != 0).then_some(c.pid),
        resources: linux
            .and_then(|l| l.resources.as_ref())
            .map(|r| resources(r, &c.id))
            .unwrap_or_default(),
    }
}

/// `owner` names the container in the warning about a cpuset that does not parse.
pub(crate) fn resources(r: &pb::LinuxResources, owner: &str) -> Resources {
    let Some(cpu) = r.cpu.as_ref() else {
        return Resources::default();
    };
    Resources {
        cpu_shares: cpu.shares.as_ref().map(|v| v.value),
        cpu_quota: cpu.quota.as_ref().map(|v| v.value),
        cpu_period: cpu.period.as_ref().map(|v| v.value),
        cpus: set(&cpu.cpus, owner, "cpus"),
        mems: set(&cpu.mems, owner, "mems"),
    }
}

pub(crate) fn state_change(e: &pb::StateChangeEvent) -> Option<StateChange> {
    let event = Event::from_number(e.event.value())?;
    Some(StateChange {
        event,
        pod: e.pod.as_ref().map(pod).unwrap_or_default(),
        container: e.container.as_ref().map(container),
    })
}

/// The resources message that sets a cpuset and nothing else.
pub(crate) fn cpuset(sets: &Sets) -> pb::LinuxResources {
    pb::LinuxResources {
        cpu: MessageField::some(pb::LinuxCPU {
            cpus: sets.cpus.to_string(),
            mems: sets.mems.to_string(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The plain values back as messages: the fake runtime's side of the conversation.
#[cfg(any(test, feature = "fake"))]
pub(crate) mod back {
    use super::*;

    pub(crate) fn pod(p: &Pod) -> pb::PodSandbox {
        pb::PodSandbox {
            id: p.id.clone(),
            name: p.name.clone(),
            uid: p.uid.clone(),
            namespace: p.namespace.clone(),
            labels: p.labels.clone().into_iter().collect(),
            annotations: p.annotations.clone().into_iter().collect(),
            linux: MessageField::some(pb::LinuxPodSandbox {
                cgroup_parent: p.cgroup_parent.clone(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    pub(crate) fn container(c: &Container) -> pb::Container {
        pb::Container {
            id: c.id.clone(),
            pod_sandbox_id: c.pod_id.clone(),
            name: c.name.clone(),
            state: EnumOrUnknown::new(match c.state {
                ContainerState::Unknown => pb::ContainerState::CONTAINER_UNKNOWN,
                ContainerState::Created => pb::ContainerState::CONTAINER_CREATED,
                ContainerState::Paused => pb::ContainerState::CONTAINER_PAUSED,
                ContainerState::Running => pb::ContainerState::CONTAINER_RUNNING,
                ContainerState::Stopped => pb::ContainerState::CONTAINER_STOPPED,
            }),
            labels: c.labels.clone().into_iter().collect(),
            annotations: c.annotations.clone().into_iter().collect(),
            linux: MessageField::some(pb::LinuxContainer {
                resources: MessageField::some(resources(&c.resources)),
                cgroups_path: c.cgroups_path.clone(),
                ..Default::default()
            }),
            pid: c.pid.unwrap_or(0),
            ..Default::default()
        }
    }

    pub(crate) fn resources(r: &Resources) -> pb::LinuxResources {
        pb::LinuxResources {
            cpu: MessageField::some(pb::LinuxCPU {
                shares: r
                    .cpu_shares
                    .map(|value| pb::OptionalUInt64 {
                        value,
                        ..Default::default()
                    })
                    .into(),
                quota: r
                    .cpu_quota
                    .map(|value| pb::OptionalInt64 {
                        value,
                        ..Default::default()
                    })
                    .into(),
                period: r
                    .cpu_period
                    .map(|value| pb::OptionalUInt64 {
                        value,
                        ..Default::default()
                    })
                    .into(),
                cpus: r.cpus.as_ref().map(ToString::to_string).unwrap_or_default(),
                mems: r.mems.as_ref().map(ToString::to_string).unwrap_or_default(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    pub(crate) fn event(e: Event) -> EnumOrUnknown<pb::Event> {
        EnumOrUnknown::from_i32(e.number())
    }
}

fn map(m: &std::collections::HashMap<String, String>) -> Map {
    m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn state(s: EnumOrUnknown<pb::ContainerState>) -> ContainerState {
    match s.enum_value() {
        Ok(pb::ContainerState::CONTAINER_CREATED) => ContainerState::Created,
        Ok(pb::ContainerState::CONTAINER_PAUSED) => ContainerState::Paused,
        Ok(pb::ContainerState::CONTAINER_RUNNING) => ContainerState::Running,
        Ok(pb::ContainerState::CONTAINER_STOPPED) => ContainerState::Stopped,
        Ok(pb::ContainerState::CONTAINER_UNKNOWN) | Err(_) => ContainerState::Unknown,
    }
}

/// An empty list is "not set". runc validated the lists it was given, so one that does not
/// parse is a runtime's bug: said, and taken as not set rather than failing the event.
fn set<K>(list: &str, owner: &str, what: &str) -> Option<IdSet<K>> {
    if list.trim().is_empty() {
        return None;
    }
    match IdSet::from_str(list) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!(container = owner, "NRI gave {what} that do not parse: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containers_round_trip_through_the_messages() {
        let c = Container {
            id: "c1".into(),
            pod_id: "p1".into(),
            name: "web".into(),
            state: ContainerState::Running,
            labels: [("app".to_string(), "web".to_string())].into(),
            annotations: [("a".to_string(), "b".to_string())].into(),
            cgroups_path: "/kubepods/burstable/podu1/c1".into(),
            pid: Some(42),
            resources: Resources {
                cpu_shares: Some(1024),
                cpu_quota: Some(200_000),
                cpu_period: Some(100_000),
                cpus: Some("0-1".parse().unwrap()),
                mems: Some("0".parse().unwrap()),
            },
        };
        assert_eq!(container(&back::container(&c)), c);
        let p = Pod {
            id: "p1".into(),
            uid: "u1".into(),
            name: "web-0".into(),
            namespace: "shop".into(),
            labels: [("tier".to_string(), "front".to_string())].into(),
            annotations: [("placed.io/policy".to_string(), "model".to_string())].into(),
            cgroup_parent: "/kubepods/burstable/podu1".into(),
        };
        assert_eq!(pod(&back::pod(&p)), p);
    }

    #[test]
    fn absent_fields_are_absent_not_zero() {
        let c = container(&pb::Container {
            id: "c1".into(),
            ..Default::default()
        });
        assert_eq!(c.pid, None);
        assert_eq!(c.resources, Resources::default());
        assert_eq!(c.state, ContainerState::Unknown);
        // A zero quota given is a zero quota, not a missing one.
        let r = back::resources(&Resources {
            cpu_quota: Some(0),
            ..Resources::default()
        });
        assert_eq!(resources(&r, "c1").cpu_quota, Some(0));
        assert_eq!(resources(&r, "c1").cpu_period, None);
    }

    #[test]
    fn a_cpuset_that_does_not_parse_is_taken_as_not_set() {
        let r = pb::LinuxResources {
            cpu: MessageField::some(pb::LinuxCPU {
                cpus: "0-".into(),
                mems: "0".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let r = resources(&r, "c1");
        assert_eq!(r.cpus, None);
        assert_eq!(r.mems, Some("0".parse().unwrap()));
    }

    #[test]
    fn unknown_events_are_not_guessed() {
        let e = pb::StateChangeEvent {
            event: EnumOrUnknown::from_i32(42),
            ..Default::default()
        };
        assert_eq!(state_change(&e), None);
        let e = pb::StateChangeEvent {
            event: back::event(Event::RemoveContainer),
            ..Default::default()
        };
        assert_eq!(
            state_change(&e).map(|s| s.event),
            Some(Event::RemoveContainer)
        );
    }
}
