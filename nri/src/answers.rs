//! What placed answers the runtime, built from cpusets: the adjustment of a container being
//! created, updates of running ones, and the hold that keeps placed's cpuset against an
//! update someone else asked for.
//!
//! Only `cpus` and `mems` are ever set. The runtime refuses to create a container when two
//! plugins set the same field, so placed claims nothing else; and an empty list means "not
//! set" in the protocol, so a cpuset with an empty half is refused here rather than sent
//! as a pin that silently pins nothing.

use protobuf::MessageField;

use placed_core::fault::Fault;
use placed_core::reconcile::Sets;

use crate::api::nri as pb;
use crate::convert;
use crate::objects::Resources;

/// A cpuset with no CPUs or no memory nodes: nothing may run there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("container {container}: refusing a cpuset with no {half} ({sets})")]
pub struct EmptySet {
    pub container: String,
    pub half: &'static str,
    pub sets: Sets,
}

impl EmptySet {
    pub fn fault(&self) -> Fault {
        Fault::Internal
    }
}

fn check(container: &str, sets: &Sets) -> Result<(), EmptySet> {
    let half = if sets.cpus.is_empty() {
        "cpus"
    } else if sets.mems.is_empty() {
        "mems"
    } else {
        return Ok(());
    };
    Err(EmptySet {
        container: container.to_owned(),
        half,
        sets: sets.clone(),
    })
}

/// The adjustment that creates `container` in `sets`.
pub(crate) fn adjustment(
    container: &str,
    sets: &Sets,
) -> Result<pb::ContainerAdjustment, EmptySet> {
    check(container, sets)?;
    Ok(pb::ContainerAdjustment {
        linux: MessageField::some(pb::LinuxContainerAdjustment {
            resources: MessageField::some(convert::cpuset(sets)),
            ..Default::default()
        }),
        ..Default::default()
    })
}

/// The update that moves `container` to `sets`. A failure is reported back
/// (`ignore_failure` off): placed wants to know when the runtime's record disagrees.
pub(crate) fn update(container: &str, sets: &Sets) -> Result<pb::ContainerUpdate, EmptySet> {
    check(container, sets)?;
    Ok(pb::ContainerUpdate {
        container_id: container.to_owned(),
        linux: MessageField::some(pb::LinuxContainerUpdate {
            resources: MessageField::some(convert::cpuset(sets)),
            ..Default::default()
        }),
        ..Default::default()
    })
}

/// The hold: the answer to an update of `container` that asks for `requested`, when placed
/// keeps it in `keep`. `None` when the update leaves placed's cpuset as it is; otherwise
/// an update of the same container, which the runtime applies over the requested one (a
/// static CPU manager's `cpuset 0-1` then becomes placed's cpus; the quota, shares and
/// everything else requested go through untouched). A request that names no cpuset is
/// held too: the runtime would record the container's cpuset as unset, and a restart of
/// the container would then lose placed's.
pub(crate) fn hold(
    container: &str,
    requested: &Resources,
    keep: &Sets,
) -> Result<Option<pb::ContainerUpdate>, EmptySet> {
    check(container, keep)?;
    let same =
        requested.cpus.as_ref() == Some(&keep.cpus) && requested.mems.as_ref() == Some(&keep.mems);
    if same {
        return Ok(None);
    }
    update(container, keep).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(cpus: &str, mems: &str) -> Sets {
        Sets {
            cpus: cpus.parse().unwrap(),
            mems: mems.parse().unwrap(),
        }
    }

    fn cpu_of(r: &MessageField<pb::LinuxResources>) -> (String, String, bool) {
        let cpu = r.as_ref().unwrap().cpu.as_ref().unwrap();
        (
            cpu.cpus.clone(),
            cpu.mems.clone(),
            cpu.shares.is_some() || cpu.quota.is_some() || cpu.period.is_some(),
        )
    }

    #[test]
    fn an_adjustment_sets_cpus_and_mems_only() {
        let a = adjustment("c1", &sets("1,3-5", "0")).unwrap();
        let linux = a.linux.as_ref().unwrap();
        assert_eq!(
            cpu_of(&linux.resources),
            ("1,3-5".into(), "0".into(), false)
        );
    }

    #[test]
    fn an_update_names_its_container_and_reports_failures() {
        let u = update("c1", &sets("0-1", "0-1")).unwrap();
        assert_eq!(u.container_id, "c1");
        assert!(!u.ignore_failure);
        assert_eq!(
            cpu_of(&u.linux.as_ref().unwrap().resources),
            ("0-1".into(), "0-1".into(), false)
        );
    }

    #[test]
    fn empty_halves_are_refused_not_sent() {
        let e = adjustment("c1", &sets("", "0")).unwrap_err();
        assert_eq!(e.half, "cpus");
        assert_eq!(
            e.to_string(),
            "container c1: refusing a cpuset with no cpus (cpus  mems 0)"
        );
        assert_eq!(update("c1", &sets("1", "")).unwrap_err().half, "mems");
        assert_eq!(
            hold("c1", &Resources::default(), &sets("1", ""))
                .unwrap_err()
                .half,
            "mems"
        );
    }

    #[test]
    fn the_hold_overrides_a_requested_cpuset_and_keeps_the_rest() {
        // What a static CPU manager sends: its own cpuset, the same quota.
        let requested = Resources {
            cpu_quota: Some(100_000),
            cpu_period: Some(100_000),
            cpus: Some("0-1".parse().unwrap()),
            mems: Some("0".parse().unwrap()),
            ..Resources::default()
        };
        let u = hold("c1", &requested, &sets("1", "0")).unwrap().unwrap();
        assert_eq!(u.container_id, "c1");
        // Only the cpuset is in the update: the requested quota is not overridden.
        assert_eq!(
            cpu_of(&u.linux.as_ref().unwrap().resources),
            ("1".into(), "0".into(), false)
        );
    }

    #[test]
    fn the_hold_says_nothing_when_the_request_agrees() {
        let requested = Resources {
            cpus: Some("1".parse().unwrap()),
            mems: Some("0".parse().unwrap()),
            ..Resources::default()
        };
        assert_eq!(hold("c1", &requested, &sets("1", "0")).unwrap(), None);
    }

    #[test]
    fn the_hold_answers_a_request_without_a_cpuset() {
        // A quota-only resize: the runtime would otherwise record no cpuset.
        let requested = Resources {
            cpu_quota: Some(50_000),
            ..Resources::default()
        };
        assert!(hold("c1", &requested, &sets("1", "0")).unwrap().is_some());
        // Mems alone differing is enough.
        let requested = Resources {
            cpus: Some("1".parse().unwrap()),
            mems: Some("0-1".parse().unwrap()),
            ..Resources::default()
        };
        assert!(hold("c1", &requested, &sets("1", "0")).unwrap().is_some());
    }
}
