//! Core values (machine, placements, policies) to placed.v1 messages and back, shared by
//! the daemon's service and `placectl`. The daemon's own types are converted in its service.

use crate::v1 as pb;

use placed_core::lifecycle::Lifecycle;
use placed_core::machine::{InterconnectSource, Machine, Scope};
use placed_core::placement::PlacementSet;
use placed_core::policy::Policy;
use placed_core::reconcile::{Action, OnOverride};

/// The machine model as placed.v1 shows it.
pub fn machine(m: &Machine) -> pb::Machine {
    pb::Machine {
        fingerprint: m.fingerprint().to_owned(),
        source: m.source.clone(),
        cpu_model: m.cpu_model.clone().unwrap_or_default(),
        usable_pus: m.pus.usable.to_string(),
        allocation_unit: m.unit_level().name.clone(),
        units: m
            .units
            .iter()
            .map(|u| pb::Unit {
                cpus: u.cpus.to_string(),
                mems: u.mems.to_string(),
            })
            .collect(),
        concerns: m
            .concerns
            .iter()
            .map(|c| {
                let (lo, hi) = c.capacity.unwrap_or((0, 0));
                pb::Concern {
                    name: c.name.clone(),
                    title: c.title.clone(),
                    scope: match c.scope {
                        Scope::Unit { .. } => pb::ConcernScope::Unit,
                        Scope::Above { .. } => pb::ConcernScope::Above,
                        Scope::Below { .. } => pb::ConcernScope::Below,
                        Scope::Interconnect => pb::ConcernScope::Interconnect,
                        Scope::NodeWeights { .. } => pb::ConcernScope::NodeWeights,
                    } as i32,
                    count: u32::try_from(c.count).unwrap_or(u32::MAX),
                    capacity_min: u32::try_from(lo).unwrap_or(u32::MAX),
                    capacity_max: u32::try_from(hi).unwrap_or(u32::MAX),
                    lower_cost: c.lower_cost,
                    lower_can_raise_perf: c.lower_can_raise_perf,
                    score: c.score.clone(),
                }
            })
            .collect(),
        interconnect_source: match &m.interconnect.source {
            InterconnectSource::Distances { .. } => pb::InterconnectSource::Distances,
            InterconnectSource::Uniform => pb::InterconnectSource::Uniform,
            InterconnectSource::Measured { .. } => pb::InterconnectSource::Measured,
        } as i32,
        interconnect_detail: match &m.interconnect.source {
            InterconnectSource::Distances { matrix } => matrix.clone(),
            InterconnectSource::Uniform => String::new(),
            InterconnectSource::Measured { unit } => unit.clone(),
        },
        notes: m.notes.clone(),
    }
}

/// One page of a placement set: `range` indexes `set.placements` (clamped to it).
pub fn placements_page(
    set: &PlacementSet,
    range: std::ops::Range<usize>,
    next_page_token: String,
) -> pb::ListPlacementsResponse {
    let (exact, bound) = match &set.search {
        placed_core::placement::Search::Exact { .. } => (true, String::new()),
        placed_core::placement::Search::Bounded { bound } => (false, bound.clone()),
    };
    let end = range.end.min(set.placements.len());
    let start = range.start.min(end);
    pb::ListPlacementsResponse {
        vcpus: u32::try_from(set.vcpus).unwrap_or(u32::MAX),
        concerns: set.concerns.clone(),
        placements: set.placements[start..end]
            .iter()
            .map(|p| pb::Placement {
                id: p.id.clone(),
                units: p
                    .units
                    .iter()
                    .map(|&u| u32::try_from(u).unwrap_or(u32::MAX))
                    .collect(),
                cpus: p.cpus.to_string(),
                mems: p.mems.to_string(),
                scores: p.scores.iter().map(|&s| s as f64 / 1000.0).collect(),
            })
            .collect(),
        exact,
        bound,
        fingerprint: set.fingerprint.clone(),
        next_page_token,
        total_size: u32::try_from(set.placements.len()).unwrap_or(u32::MAX),
    }
}

/// A lifecycle state as placed.v1 carries it.
pub fn state_to_pb(s: Lifecycle) -> pb::ContainerState {
    match s {
        Lifecycle::Discovered => pb::ContainerState::Discovered,
        Lifecycle::Baseline => pb::ContainerState::Baseline,
        Lifecycle::Probe => pb::ContainerState::Probe,
        Lifecycle::Predicted => pb::ContainerState::Predicted,
        Lifecycle::Placed => pb::ContainerState::Placed,
        Lifecycle::Watched => pb::ContainerState::Watched,
        Lifecycle::Waiting => pb::ContainerState::Waiting,
        Lifecycle::Migrating => pb::ContainerState::Migrating,
        Lifecycle::Failed => pb::ContainerState::Failed,
    }
}

/// The lifecycle state of a message's `state` field; `None` for UNSPECIFIED and for values
/// a newer daemon may send.
pub fn state_from_pb(s: i32) -> Option<Lifecycle> {
    let s = pb::ContainerState::try_from(s).ok()?;
    Lifecycle::ALL.into_iter().find(|l| state_to_pb(*l) == s)
}

/// A policy as placed.v1 carries it.
pub fn policy_to_pb(p: &Policy) -> pb::Policy {
    let (kind, goal, placement_id) = match p {
        Policy::Observe => (pb::PolicyKind::Observe, 0.0, String::new()),
        Policy::Model { goal } => (pb::PolicyKind::Model, *goal, String::new()),
        Policy::Conservative => (pb::PolicyKind::Conservative, 0.0, String::new()),
        Policy::Aggressive => (pb::PolicyKind::Aggressive, 0.0, String::new()),
        Policy::SmartAggressive => (pb::PolicyKind::SmartAggressive, 0.0, String::new()),
        Policy::Pinned { placement } => (pb::PolicyKind::Pinned, 0.0, placement.clone()),
    };
    pb::Policy {
        kind: kind as i32,
        goal,
        placement_id,
    }
}

/// A policy from a request; `None` when the request leaves it unset. Goals are checked by
/// [`Policy::validate`], so an out-of-range goal is INVALID_ARGUMENT, not a silent default.
pub fn policy_from_pb(p: Option<&pb::Policy>, default_goal: f64) -> Result<Option<Policy>, String> {
    let Some(p) = p else { return Ok(None) };
    let kind =
        pb::PolicyKind::try_from(p.kind).map_err(|_| format!("unknown policy kind {}", p.kind))?;
    let policy = match kind {
        pb::PolicyKind::Unspecified => return Ok(None),
        pb::PolicyKind::Observe => Policy::Observe,
        pb::PolicyKind::Model => Policy::Model {
            goal: if p.goal == 0.0 { default_goal } else { p.goal },
        },
        pb::PolicyKind::Conservative => Policy::Conservative,
        pb::PolicyKind::Aggressive => Policy::Aggressive,
        pb::PolicyKind::SmartAggressive => Policy::SmartAggressive,
        pb::PolicyKind::Pinned => {
            if p.placement_id.is_empty() {
                return Err("a pinned policy needs a placement_id".into());
            }
            Policy::Pinned {
                placement: p.placement_id.clone(),
            }
        }
    };
    policy.validate().map_err(|e| e.to_string())?;
    Ok(Some(policy))
}

/// An override policy as the API names it.
pub fn on_override_to_pb(o: OnOverride) -> pb::OnOverride {
    match o {
        OnOverride::Reassert => pb::OnOverride::Reassert,
        OnOverride::Adopt => pb::OnOverride::Adopt,
        OnOverride::Leave => pb::OnOverride::Leave,
    }
}

/// A requested override policy: `None` for UNSPECIFIED (keep the current one), an error
/// naming the value for one this side does not know.
pub fn on_override_from_pb(o: i32) -> Result<Option<OnOverride>, String> {
    match pb::OnOverride::try_from(o) {
        Ok(pb::OnOverride::Unspecified) => Ok(None),
        Ok(pb::OnOverride::Reassert) => Ok(Some(OnOverride::Reassert)),
        Ok(pb::OnOverride::Adopt) => Ok(Some(OnOverride::Adopt)),
        Ok(pb::OnOverride::Leave) => Ok(Some(OnOverride::Leave)),
        Err(_) => Err(format!(
            "on_override = {o}: not an OnOverride this daemon knows (reassert = 1, adopt = 2, leave = 3)"
        )),
    }
}

/// What the daemon did about an override, as the API names it.
pub fn override_action_to_pb(a: Action) -> pb::OverrideAction {
    match a {
        Action::Reasserted => pb::OverrideAction::Reasserted,
        Action::Adopted => pb::OverrideAction::Adopted,
        Action::Left => pb::OverrideAction::Left,
        Action::GaveUp => pb::OverrideAction::GaveUp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_policy_survives_the_round_trip_and_unspecified_means_unset() {
        for p in [
            Policy::Observe,
            Policy::Model { goal: 0.8 },
            Policy::Conservative,
            Policy::Aggressive,
            Policy::SmartAggressive,
            Policy::Pinned {
                placement: "numa2".into(),
            },
        ] {
            let wire = policy_to_pb(&p);
            assert_ne!(
                wire.kind,
                pb::PolicyKind::Unspecified as i32,
                "{p:?} must be expressible on the wire"
            );
            assert_eq!(policy_from_pb(Some(&wire), 0.9), Ok(Some(p)));
        }
        let unset = pb::Policy::default();
        assert_eq!(policy_from_pb(Some(&unset), 0.9), Ok(None));
        assert_eq!(policy_from_pb(None, 0.9), Ok(None));
        // The model policy with goal 0 takes the daemon's goal.
        let model = pb::Policy {
            kind: pb::PolicyKind::Model as i32,
            ..Default::default()
        };
        assert_eq!(
            policy_from_pb(Some(&model), 0.7),
            Ok(Some(Policy::Model { goal: 0.7 }))
        );
    }
}
