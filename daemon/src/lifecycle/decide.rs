//! Applying a policy to a container: what the policy chooses, whether moving there pays
//! for its migration, and the move when it does (or when an operator orders it).

use std::time::Duration;

use crate::state::{ContainerRecord, Lifecycle, PredictionRecord};
use placed_core::placement::PlacementSet;
use placed_core::policy::{self, Policy, Predicted, Situation, Target};
use placed_host::migrate::Mode;

use super::entry::Entry;
use super::entry::usable_prediction;
use super::error::DaemonError;
use super::handle::Handle;
use super::moving::Journal;
use super::requests::{PlaceOutcome, PlaceTarget};

/// Who asked for a move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Why {
    /// The lifecycle applying a policy: moves only when the move pays.
    Automatic,
    /// An explicit `Place`: an order, carried out whatever the cost.
    Order,
}

/// Whether to move: `Ok` with the reason to record, or `Err` with why it stays.
fn verdict(
    why: Why,
    already_there: bool,
    target: &Target,
    decision: &policy::MoveDecision,
) -> Result<String, String> {
    if already_there {
        return Err(format!("already in place: {}", target.reason));
    }
    match why {
        _ if decision.worth_it => Ok(format!("{}; {}", target.reason, decision.reason)),
        Why::Order => Ok(format!(
            "{}; on request, although {}",
            target.reason, decision.reason
        )),
        Why::Automatic => Err(format!("left in place: {}", decision.reason)),
    }
}

/// The predictions a policy reads, from a stored prediction.
pub(crate) fn predicted_list(p: &PredictionRecord) -> Vec<Predicted> {
    p.placements
        .iter()
        .map(|x| Predicted {
            placement: x.placement.clone(),
            relative: x.relative,
            spread: x.spread,
            interval: x.interval.map(|i| (i.low, i.high)),
            measured: x.measured,
        })
        .collect()
}

fn unmoved(rec: &ContainerRecord, why: &str) -> PlaceOutcome {
    let (placement, cpus, mems) = match &rec.assigned {
        Some(a) => (a.placement.clone(), a.cpus.clone(), a.mems.clone()),
        None => (None, Default::default(), Default::default()),
    };
    PlaceOutcome {
        container: rec.name.clone(),
        placement,
        cpus,
        mems,
        moved: false,
        bytes_moved: 0,
        duration: Duration::ZERO,
        reason: why.to_owned(),
    }
}

impl Handle {
    /// What `policy` chooses for the container now, among the units it may use; `None` for
    /// a policy that never moves anything.
    pub fn choose(
        &self,
        set: &PlacementSet,
        policy: &Policy,
        prediction: Option<&PredictionRecord>,
    ) -> Result<Option<Target>, DaemonError> {
        let target = self
            .in_situation(set, prediction, |s| policy::decide(policy, s))
            .map_err(DaemonError::policy)?;
        // A decision on a prediction the model policy checked says so.
        let third = prediction.and_then(|p| p.third.as_deref());
        Ok(target.map(|mut t| {
            if let (Policy::Model { .. }, Some(third)) = (policy, third) {
                t.reason = format!("{}; {third}", t.reason);
            }
            t
        }))
    }

    /// Runs `f` on the container's situation now: the units it may use, `prediction`, and
    /// the goal bound (the configured one, or the lower bound for a prior).
    pub(crate) fn in_situation<R>(
        &self,
        set: &PlacementSet,
        prediction: Option<&PredictionRecord>,
        f: impl FnOnce(&Situation<'_>) -> R,
    ) -> R {
        let predicted = prediction.map(predicted_list);
        let available = self.available_units();
        f(&Situation {
            machine: &self.core.node.machine,
            placements: set,
            available: &available,
            predictions: predicted.as_deref(),
            goal_bound: PredictionRecord::goal_bound(
                prediction,
                self.core.settings.config().policy.goal_bound,
            ),
        })
    }

    /// Applies `policy` and moves the container when that pays (automatic) or when ordered.
    /// The caller holds the container's operation lock.
    pub async fn apply_policy(
        &self,
        set: &PlacementSet,
        policy: &Policy,
        prediction: Option<&PredictionRecord>,
        mode: Option<Mode>,
        why: Why,
    ) -> Result<PlaceOutcome, DaemonError> {
        let rec = self.record()?;
        let Some(target) = self.choose(set, policy, prediction)? else {
            self.set_state(Lifecycle::Watched, "observe policy: never moved");
            return Ok(unmoved(&rec, "observe policy: never moved"));
        };
        let decision = self.worth_moving(&rec, &target).await;
        let here = self.is_at(&rec, &target).await;
        let reason = match verdict(why, here, &target, &decision) {
            Ok(reason) => reason,
            Err(stays) => {
                self.set_state(Lifecycle::Watched, &stays);
                return Ok(unmoved(&rec, &stays));
            }
        };
        let mode = mode.unwrap_or_else(|| self.core.settings.migration_mode());
        let outcome = self.move_to(&target, &mode, Journal::EachMove).await?;
        self.set_state(Lifecycle::Watched, &reason);
        self.core.persist().await?;
        Ok(PlaceOutcome { reason, ..outcome })
    }

    /// An operator's or orchestrator's move: by the container's own policy or a new one,
    /// which becomes the container's once the move is done.
    pub async fn place_now(
        &self,
        target: PlaceTarget,
        mode: Option<Mode>,
    ) -> Result<PlaceOutcome, DaemonError> {
        let guard = self.try_begin("placing")?;
        // An order ends what an override held, from where the container really is.
        self.with(Entry::release_override)?;
        let rec = self.record()?;
        let policy = match &target {
            PlaceTarget::Policy(p) | PlaceTarget::Once(p) => p.clone(),
            PlaceTarget::OwnPolicy => rec.policy.clone(),
        };
        let set = self.core.node.placements(rec.vcpus)?;
        let prediction = usable_prediction(&rec).cloned();
        if matches!(policy, Policy::Model { .. }) && prediction.is_none() {
            if let Some(gated) = rec.prediction.as_ref().filter(|p| p.vcpus == rec.vcpus) {
                if let Some(reason) = &gated.below_gate {
                    return Err(DaemonError::BelowGate {
                        model_id: gated.model_id.clone(),
                        path: gated.model_path.clone(),
                        reason: reason.clone(),
                        vcpus: rec.vcpus,
                        dir: self.core.models.dir().display().to_string(),
                    });
                }
            }
            return Err(DaemonError::NeedsPrediction {
                container: rec.name.clone(),
            });
        }
        let result = self
            .apply_policy(&set, &policy, prediction.as_ref(), mode, Why::Order)
            .await;
        // A new policy becomes the container's only once it has been carried out: a Place
        // that failed leaves the container, and its policy, as they were.
        if let (Ok(_), PlaceTarget::Policy(p)) = (&result, target) {
            let _ = self.with(|e| {
                if e.record.policy != p {
                    e.record.policy = p;
                    // A task waiting to apply the old policy must not undo this.
                    e.settings += 1;
                }
            });
        }
        self.core.persist().await?;
        drop(guard);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use placed_core::cpuset::{CpuSet, NodeSet};
    use placed_core::policy::{MoveCost, MoveDecision, worth_moving};

    fn target() -> Target {
        Target {
            placement: Some("numa2-a".into()),
            units: vec![2, 3],
            cpus: CpuSet::new(),
            mems: NodeSet::new(),
            predicted: Some(1.001),
            reason: "model: fewest units".into(),
        }
    }

    /// A 0.1% predicted gain against 100 GiB to migrate at 1 GiB/s over a 60 s horizon.
    fn small_gain_large_memory() -> MoveDecision {
        worth_moving(
            &MoveCost {
                current_units: 2,
                current_predicted: Some(1.0),
                trespassing: false,
                bytes_to_move: 100 << 30,
                migration_bytes_per_s: (1u64 << 30) as f64,
                horizon_s: 60.0,
            },
            &target(),
        )
    }

    #[test]
    fn automatic_moves_obey_the_cost_rule_and_orders_do_not() {
        let d = small_gain_large_memory();
        assert!(!d.worth_it, "{}", d.reason);
        // The lifecycle (after an evaluation, or applying any policy) leaves it in place...
        let stays = verdict(Why::Automatic, false, &target(), &d).unwrap_err();
        assert!(stays.starts_with("left in place"), "{stays}");
        assert!(stays.contains("does not outweigh"), "{stays}");
        // ... an explicit Place moves it, saying the move does not pay.
        let goes = verdict(Why::Order, false, &target(), &d).unwrap();
        assert!(goes.contains("on request"), "{goes}");
        // Where it already is, neither moves.
        let here = verdict(Why::Order, true, &target(), &d).unwrap_err();
        assert!(here.starts_with("already in place"), "{here}");
        let pays = MoveDecision {
            worth_it: true,
            reason: "frees 2 allocation units".into(),
        };
        let goes = verdict(Why::Automatic, false, &target(), &pays).unwrap();
        assert!(goes.contains("frees 2 allocation units"), "{goes}");
    }
}
