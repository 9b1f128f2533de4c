//! Placement policies (docs/design.md, "Decisions"; thesis §2.5.1): pure decisions from the important
//! placements, the model's predictions and the free allocation units to a target placement,
//! and whether a move is worth its migration.

use crate::cpuset::{CpuSet, NodeSet};
use crate::machine::{Machine, Scope};
use crate::placement::{Placement, PlacementError, PlacementSet, instantiate};

/// How a container's placement is chosen.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Policy {
    /// Observe and predict, never move.
    Observe,
    /// Fewest units whose predicted performance is at least `goal` x baseline.
    Model { goal: f64 },
    /// The whole machine, reserved, unpinned (one container per machine).
    Conservative,
    /// Unpinned over the units nobody holds, reserving none: aggressive containers share
    /// them and the kernel's scheduler decides (thesis §2.5). The one policy that opts out
    /// of exclusive units, for itself only: it never runs on units another container holds.
    Aggressive,
    /// The fewest units that hold the container, best interconnect first.
    SmartAggressive,
    /// One placement, by id.
    Pinned { placement: String },
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PolicyError {
    #[error(
        "unknown policy {name:?}: expected observe, model, conservative, aggressive, smart-aggressive or pinned:<placement id>"
    )]
    Unknown { name: String },
    #[error("goal {goal} is outside (0, 2]: it is the fraction of baseline performance to keep")]
    Goal { goal: f64 },
    #[error("placement {id:?} is not an important placement for {v} vCPUs on this machine")]
    UnknownPlacement { id: String, v: usize },
    #[error("the model policy needs a prediction, and there is none for this container yet")]
    NoPrediction,
    #[error("no free allocation units can hold {what}: {free} of {total} units are free")]
    NoRoom {
        what: String,
        free: usize,
        total: usize,
    },
    #[error(transparent)]
    Placement(#[from] PlacementError),
}

impl PolicyError {
    /// True when the request itself is wrong (INVALID_ARGUMENT), false when the state of
    /// the machine or the container prevents it (FAILED_PRECONDITION).
    pub fn is_bad_request(&self) -> bool {
        matches!(
            self,
            Self::Unknown { .. } | Self::Goal { .. } | Self::UnknownPlacement { .. }
        )
    }
}

impl Policy {
    /// Parses `observe`, `model`, `conservative`, `aggressive`, `smart-aggressive`,
    /// `pinned:<id>`; `goal` applies to the model policy.
    pub fn parse(name: &str, goal: f64) -> Result<Self, PolicyError> {
        let p = match name {
            "observe" | "none" => Self::Observe,
            "model" => Self::Model { goal },
            "conservative" => Self::Conservative,
            "aggressive" => Self::Aggressive,
            "smart-aggressive" => Self::SmartAggressive,
            other => match other.strip_prefix("pinned:") {
                Some(id) if !id.is_empty() => Self::Pinned {
                    placement: id.to_owned(),
                },
                _ => {
                    return Err(PolicyError::Unknown {
                        name: name.to_owned(),
                    });
                }
            },
        };
        p.validate()?;
        Ok(p)
    }

    pub fn validate(&self) -> Result<(), PolicyError> {
        match self {
            Self::Model { goal } if !(*goal > 0.0 && *goal <= 2.0) => {
                Err(PolicyError::Goal { goal: *goal })
            }
            _ => Ok(()),
        }
    }

    pub fn name(&self) -> String {
        match self {
            Self::Observe => "observe".into(),
            Self::Model { goal } => format!("model (goal {goal})"),
            Self::Conservative => "conservative".into(),
            Self::Aggressive => "aggressive".into(),
            Self::SmartAggressive => "smart-aggressive".into(),
            Self::Pinned { placement } => format!("pinned:{placement}"),
        }
    }
}

/// A prediction as policies need it: performance relative to baseline, per placement id.
#[derive(Debug, Clone, PartialEq)]
pub struct Predicted {
    pub placement: String,
    pub relative: f64,
    pub spread: f64,
    /// The model's calibrated interval of `relative` (low, high); `None` for a measured
    /// placement or a model without calibration.
    pub interval: Option<(f64, f64)>,
    /// Measured in this placement rather than predicted.
    pub measured: bool,
}

/// What the model policy holds against its goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GoalBound {
    /// The point prediction (the thesis's rule).
    #[default]
    Point,
    /// The lower end of the calibrated interval where the cell has one (else the point
    /// prediction): a cell the model is unsure of must be sure enough to meet the goal.
    LowerBound,
}

/// Where a policy puts a container.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// The important placement, or `None` for unpinned (all usable PUs and nodes).
    pub placement: Option<String>,
    /// Units reserved for the container (empty when nothing is reserved).
    pub units: Vec<usize>,
    pub cpus: CpuSet,
    pub mems: NodeSet,
    pub predicted: Option<f64>,
    pub reason: String,
}

/// What a decision needs to know.
#[derive(Debug)]
pub struct Situation<'a> {
    pub machine: &'a Machine,
    pub placements: &'a PlacementSet,
    /// Units the container may use: the free ones plus its own.
    pub available: &'a [usize],
    pub predictions: Option<&'a [Predicted]>,
    /// What the model policy compares with its goal.
    pub goal_bound: GoalBound,
}

/// The target a policy chooses, or `None` for [`Policy::Observe`].
pub fn decide(policy: &Policy, s: &Situation<'_>) -> Result<Option<Target>, PolicyError> {
    policy.validate()?;
    let d = Decision { s, m: s.machine };
    match policy {
        Policy::Observe => Ok(None),
        Policy::Aggressive => d.aggressive().map(Some),
        Policy::Conservative => d.conservative().map(Some),
        Policy::Pinned { placement } => d.pinned(placement).map(Some),
        Policy::SmartAggressive => d.smart_aggressive().map(Some),
        Policy::Model { goal } => d.model(*goal).map(Some),
    }
}

/// One decision's situation, with what every policy needs to turn a placement into a target.
struct Decision<'s, 'a> {
    s: &'s Situation<'a>,
    m: &'a Machine,
}

impl Decision<'_, '_> {
    fn no_room(&self, what: String) -> PolicyError {
        PolicyError::NoRoom {
            what,
            free: self.s.available.len(),
            total: self.m.units.len(),
        }
    }

    fn predicted_of(&self, id: &str) -> Option<f64> {
        self.s
            .predictions
            .and_then(|ps| ps.iter().find(|p| p.placement == id).map(|p| p.relative))
    }

    /// The placement on available units, or `None` when it does not fit there.
    fn place(&self, p: &Placement, reason: String) -> Result<Option<Target>, PolicyError> {
        let v = self.s.placements.vcpus;
        Ok(
            instantiate(self.m, v, p, self.s.available)?.map(|inst| Target {
                placement: Some(inst.id.clone()),
                predicted: self.predicted_of(&inst.id),
                units: inst.units,
                cpus: inst.cpus,
                mems: inst.mems,
                reason,
            }),
        )
    }

    fn aggressive(&self) -> Result<Target, PolicyError> {
        let (s, m) = (self.s, self.m);
        // Sharing is among aggressive containers only: the units other containers hold
        // stay theirs alone, so an aggressive container gets what nobody holds.
        if s.available.is_empty() {
            return Err(self.no_room("any unit (aggressive)".into()));
        }
        let (cpus, mems) = s
            .available
            .iter()
            .fold((CpuSet::new(), NodeSet::new()), |(c, n), &u| {
                (c.union(&m.units[u].cpus), n.union(&m.units[u].mems))
            });
        let everything = s.available.len() == m.units.len();
        Ok(Target {
            placement: None,
            units: Vec::new(),
            cpus: cpus.intersection(&m.pus.usable),
            mems,
            predicted: None,
            reason: if everything {
                "aggressive: unpinned, nothing reserved, the scheduler decides".into()
            } else {
                format!(
                    "aggressive: unpinned over the {} of {} units no other container holds, nothing reserved",
                    s.available.len(),
                    m.units.len()
                )
            },
        })
    }

    fn conservative(&self) -> Result<Target, PolicyError> {
        let m = self.m;
        let all: Vec<usize> = (0..m.units.len()).collect();
        if !all.iter().all(|u| self.s.available.contains(u)) {
            return Err(self.no_room("the whole machine (conservative)".into()));
        }
        Ok(Target {
            placement: None,
            units: all,
            cpus: m.pus.usable.clone(),
            mems: m
                .units
                .iter()
                .fold(NodeSet::new(), |acc, u| acc.union(&u.mems)),
            predicted: None,
            reason: "conservative: the whole machine, reserved".into(),
        })
    }

    fn pinned(&self, placement: &str) -> Result<Target, PolicyError> {
        let p = self
            .s
            .placements
            .get(placement)
            .ok_or_else(|| PolicyError::UnknownPlacement {
                id: placement.to_owned(),
                v: self.s.placements.vcpus,
            })?;
        self.place(p, format!("pinned to {placement}"))?
            .ok_or_else(|| self.no_room(format!("placement {placement}")))
    }

    fn smart_aggressive(&self) -> Result<Target, PolicyError> {
        let m = self.m;
        // Fewest units first; among those, the best filterable scores (interconnect).
        let mut order: Vec<&Placement> = self.s.placements.placements.iter().collect();
        order.sort_by_key(|p| (p.units.len(), std::cmp::Reverse(filterable_sum(m, p))));
        let min_units = order.first().map_or(0, |p| p.units.len());
        for p in order.iter().filter(|p| p.units.len() == min_units) {
            let reason = format!(
                "smart-aggressive: the fewest units ({min_units}) with the best interconnect"
            );
            if let Some(mut t) = self.place(p, reason)? {
                // Pinned to the units, unpinned within them.
                t.cpus = t
                    .units
                    .iter()
                    .fold(CpuSet::new(), |acc, &u| acc.union(&m.units[u].cpus));
                return Ok(t);
            }
        }
        Err(self.no_room(format!("{min_units} units (smart-aggressive)")))
    }

    /// The value of `id` the model policy holds against its goal.
    fn goal_value_of(&self, id: &str) -> Option<f64> {
        let p = self.s.predictions?.iter().find(|p| p.placement == id)?;
        Some(match self.s.goal_bound {
            GoalBound::Point => p.relative,
            GoalBound::LowerBound => p.interval.map_or(p.relative, |(low, _)| low),
        })
    }

    fn model(&self, goal: f64) -> Result<Target, PolicyError> {
        let preds = self.s.predictions.ok_or(PolicyError::NoPrediction)?;
        let what = match self.s.goal_bound {
            GoalBound::Point => "predicted",
            GoalBound::LowerBound => "predicted (lower bound of the interval)",
        };
        let mut candidates: Vec<(&Placement, f64)> = self
            .s
            .placements
            .placements
            .iter()
            .filter_map(|p| self.goal_value_of(&p.id).map(|r| (p, r)))
            .collect();
        if candidates.is_empty() || preds.is_empty() {
            return Err(PolicyError::NoPrediction);
        }
        // Fewest units meeting the goal, then the highest prediction.
        candidates.sort_by(|a, b| {
            a.0.units
                .len()
                .cmp(&b.0.units.len())
                .then(b.1.total_cmp(&a.1))
        });
        for (p, r) in candidates.iter().filter(|(_, r)| *r >= goal) {
            let reason = format!(
                "model: fewest units ({}) {what} at {r:.2} x baseline, goal {goal}",
                p.units.len()
            );
            if let Some(t) = self.place(p, reason)? {
                return Ok(t);
            }
        }
        // Nothing meets the goal where there is room: the best prediction that fits.
        candidates.sort_by(|a, b| b.1.total_cmp(&a.1));
        for (p, r) in &candidates {
            let reason =
                format!("model: no free placement keeps {goal} x baseline; best {what} is {r:.2}");
            if let Some(t) = self.place(p, reason)? {
                return Ok(t);
            }
        }
        Err(self.no_room("any predicted placement".into()))
    }
}

/// Why the model policy measures one more placement before it moves a container: the
/// choice would change with that cell's true value, or the model says it does not know
/// this kind of workload (docs/design.md, "Decisions").
#[derive(Debug, Clone, PartialEq)]
pub struct ThirdMeasurement {
    pub placement: String,
    pub hinge: Hinge,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Hinge {
    /// The cell's interval holds the goal: measured, it may meet the goal or miss it, and
    /// it is the first placement in the policy's order for which that changes the choice.
    Straddles { low: f64, high: f64, goal: f64 },
    /// No training workload behaved like this container: the placement the policy would
    /// choose is measured before the container is left there.
    Novel,
}

impl std::fmt::Display for ThirdMeasurement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.hinge {
            Hinge::Straddles { low, high, goal } => write!(
                f,
                "{} measured as well: its predicted interval {low:.2}-{high:.2} holds the goal {goal}",
                self.placement
            ),
            Hinge::Novel => write!(
                f,
                "{} measured as well: the container is unlike every training workload",
                self.placement
            ),
        }
    }
}

/// The placement to measure before the model policy with `goal` moves a container, if any:
/// for a novel container the placement the policy chooses; otherwise the first predicted
/// placement, in the policy's order (fewest units, then the highest prediction), whose
/// calibrated interval holds the goal and which fits on the available units, among those
/// the choice hinges on: the choice itself (it may miss the goal) and every placement of
/// fewer units (it may meet it, for less). Cells without an interval (measured, or an
/// uncalibrated model) never straddle.
pub fn third_measurement(
    goal: f64,
    s: &Situation<'_>,
    novel: bool,
) -> Result<Option<ThirdMeasurement>, PolicyError> {
    let preds = s.predictions.ok_or(PolicyError::NoPrediction)?;
    let d = Decision { s, m: s.machine };
    let choice = d.model(goal)?;
    let cell = |id: &str| preds.iter().find(|p| p.placement == id);
    if novel {
        return Ok(choice
            .placement
            .filter(|id| cell(id).is_some_and(|p| !p.measured))
            .map(|placement| ThirdMeasurement {
                placement,
                hinge: Hinge::Novel,
            }));
    }
    // A choice that misses the goal (nothing free keeps it) bounds nothing.
    let chosen = choice
        .placement
        .as_deref()
        .filter(|id| d.goal_value_of(id).is_some_and(|r| r >= goal))
        .and_then(|id| s.placements.get(id));
    let hinges =
        |p: &Placement| chosen.is_none_or(|c| p.units.len() < c.units.len() || p.id == c.id);
    let mut order: Vec<(&Placement, &Predicted)> = s
        .placements
        .placements
        .iter()
        .filter(|p| hinges(p))
        .filter_map(|p| cell(&p.id).map(|c| (p, c)))
        .collect();
    order.sort_by(|a, b| {
        a.0.units
            .len()
            .cmp(&b.0.units.len())
            .then(b.1.relative.total_cmp(&a.1.relative))
    });
    for (p, c) in order {
        let Some((low, high)) = c.interval.filter(|_| !c.measured) else {
            continue;
        };
        if !(low < goal && goal <= high) {
            continue;
        }
        if instantiate(s.machine, s.placements.vcpus, p, s.available)?.is_some() {
            return Ok(Some(ThirdMeasurement {
                placement: p.id.clone(),
                hinge: Hinge::Straddles { low, high, goal },
            }));
        }
    }
    Ok(None)
}

fn filterable_sum(m: &Machine, p: &Placement) -> i64 {
    m.concerns
        .iter()
        .zip(&p.scores)
        .filter(|(c, _)| c.filterable() && !matches!(c.scope, Scope::Below { .. }))
        .map(|(_, &s)| s)
        .sum()
}

/// Whether moving from the current placement to the target pays for itself.
#[derive(Debug, Clone, PartialEq)]
pub struct MoveDecision {
    pub worth_it: bool,
    pub reason: String,
}

/// What a move would cost and what the container has now, for [`worth_moving`].
#[derive(Debug, Clone, PartialEq)]
pub struct MoveCost {
    /// Allocation units the container holds now (all of them when it holds none: it may
    /// run anywhere).
    pub current_units: usize,
    /// Predicted performance where it is now, relative to the baseline, when known.
    pub current_predicted: Option<f64>,
    /// It runs on units another container holds (an aggressive container that was there
    /// first, or one never placed): it must leave them whatever the cost.
    pub trespassing: bool,
    /// Resident memory on nodes the target does not include: what has to migrate.
    pub bytes_to_move: u64,
    pub migration_bytes_per_s: f64,
    /// A move must pay for itself within this time.
    pub horizon_s: f64,
}

/// The move-or-stay rule for automatic moves (docs/design.md, "Decisions"): a move pays when it leaves
/// units another container holds, when it frees units, when no memory has to move, or when
/// the predicted gain over the horizon exceeds the time the migration takes (memory to move
/// over the migration bandwidth). Without a prediction there is no gain to weigh, so a move
/// that has to migrate memory does not pay; an explicit `Place` can still order it.
pub fn worth_moving(cost: &MoveCost, target: &Target) -> MoveDecision {
    let migration_s = if cost.bytes_to_move == 0 {
        0.0
    } else if cost.migration_bytes_per_s > 0.0 {
        cost.bytes_to_move as f64 / cost.migration_bytes_per_s
    } else {
        f64::INFINITY
    };
    let mib = cost.bytes_to_move as f64 / f64::from(1u32 << 20);
    let yes = |reason: String| MoveDecision {
        worth_it: true,
        reason,
    };
    if cost.trespassing {
        return yes(format!(
            "it runs on units another container holds (migration about {migration_s:.1} s)"
        ));
    }
    if !target.units.is_empty() && target.units.len() < cost.current_units {
        return yes(format!(
            "frees {} allocation units (migration about {migration_s:.1} s)",
            cost.current_units - target.units.len()
        ));
    }
    if cost.bytes_to_move == 0 {
        return yes("no memory has to move".into());
    }
    let horizon_s = cost.horizon_s;
    match (cost.current_predicted, target.predicted) {
        (Some(now), Some(then)) if now > 0.0 => {
            let gain = (then - now) / now;
            let worth_it = gain * horizon_s > migration_s;
            MoveDecision {
                worth_it,
                reason: format!(
                    "predicted gain {:+.1}% over {horizon_s:.0} s {} migrating {mib:.0} MiB (about {migration_s:.1} s)",
                    gain * 100.0,
                    if worth_it {
                        "outweighs"
                    } else {
                        "does not outweigh"
                    }
                ),
            }
        }
        _ => MoveDecision {
            worth_it: false,
            reason: format!(
                "no predicted gain to outweigh migrating {mib:.0} MiB (about {migration_s:.1} s); an explicit place moves it anyway"
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::tests::xml;
    use crate::placement::important_placements;

    fn opteron() -> (Machine, PlacementSet) {
        let m = xml("hwloc-xml/x86+linux-64amd64-4p2n4ca2co.xml");
        let set = important_placements(&m, 16).unwrap();
        (m, set)
    }

    #[test]
    fn parses_names_and_refuses_bad_goals() {
        assert_eq!(Policy::parse("model", 0.9), Ok(Policy::Model { goal: 0.9 }));
        assert_eq!(
            Policy::parse("pinned:numa2", 0.9),
            Ok(Policy::Pinned {
                placement: "numa2".into()
            })
        );
        assert!(matches!(
            Policy::parse("model", 2.5),
            Err(PolicyError::Goal { .. })
        ));
        assert!(matches!(
            Policy::parse("model", 0.0),
            Err(PolicyError::Goal { .. })
        ));
        assert!(matches!(
            Policy::parse("greedy", 0.9),
            Err(PolicyError::Unknown { .. })
        ));
    }

    #[test]
    fn model_policy_takes_the_fewest_units_meeting_the_goal() {
        let (m, set) = opteron();
        let predictions: Vec<Predicted> = set
            .placements
            .iter()
            .map(|p| Predicted {
                placement: p.id.clone(),
                // Two nodes lose 30%, four lose 5%, eight are the baseline.
                relative: match p.units.len() {
                    2 => 0.7,
                    4 => 0.95 + (p.scores[3] as f64) / 1e6,
                    _ => 1.0,
                },
                spread: 0.01,
                // The four-node placements' calibrated intervals reach down to 0.85.
                interval: (p.units.len() == 4).then_some((0.85, 1.05)),
                measured: false,
            })
            .collect();
        let all: Vec<usize> = (0..8).collect();
        let s = Situation {
            machine: &m,
            placements: &set,
            available: &all,
            predictions: Some(&predictions),
            goal_bound: GoalBound::Point,
        };
        let t = decide(&Policy::Model { goal: 0.9 }, &s).unwrap().unwrap();
        assert_eq!(t.units.len(), 4);
        assert_eq!(t.placement.as_deref(), Some("numa4-package2-l2x8-ic2.759"));
        let t = decide(&Policy::Model { goal: 0.6 }, &s).unwrap().unwrap();
        assert_eq!(t.units.len(), 2);
        // With only units 0-1 free, the goal of 0.9 cannot be met: best that fits.
        let s2 = Situation {
            available: &[0, 1],
            ..s
        };
        let t = decide(&Policy::Model { goal: 0.9 }, &s2).unwrap().unwrap();
        assert_eq!(t.units, vec![0, 1]);
        assert!(t.reason.contains("no free placement keeps"), "{}", t.reason);
        // On the lower bound the four-node placements may miss 0.9: eight nodes it is.
        let sure = Situation {
            goal_bound: GoalBound::LowerBound,
            ..s2
        };
        let s3 = Situation {
            available: &all,
            ..sure
        };
        let t = decide(&Policy::Model { goal: 0.9 }, &s3).unwrap().unwrap();
        assert_eq!(t.units.len(), 8);
        assert!(t.reason.contains("lower bound"), "{}", t.reason);
        // A goal the lower bound meets still takes four.
        let t = decide(&Policy::Model { goal: 0.8 }, &s3).unwrap().unwrap();
        assert_eq!(t.units.len(), 4);
    }

    /// The Opteron's predictions: two nodes at 0.7 (interval 0.6-0.78), four at 0.95
    /// (0.85-1.05), eight at 1.0 (measured).
    fn straddling(set: &PlacementSet) -> Vec<Predicted> {
        set.placements
            .iter()
            .map(|p| {
                let (relative, interval) = match p.units.len() {
                    2 => (0.7, Some((0.6, 0.78))),
                    4 => (0.95 + (p.scores[3] as f64) / 1e6, Some((0.85, 1.05))),
                    _ => (1.0, None),
                };
                Predicted {
                    placement: p.id.clone(),
                    relative,
                    spread: 0.01,
                    interval,
                    measured: interval.is_none(),
                }
            })
            .collect()
    }

    #[test]
    fn a_third_measurement_goes_to_the_first_cell_whose_interval_holds_the_goal() {
        let (m, set) = opteron();
        let predictions = straddling(&set);
        let all: Vec<usize> = (0..8).collect();
        let s = Situation {
            machine: &m,
            placements: &set,
            available: &all,
            predictions: Some(&predictions),
            goal_bound: GoalBound::Point,
        };
        let best_four = "numa4-package2-l2x8-ic2.759";
        // On the point the policy takes four nodes, whose interval reaches below 0.9: that
        // very cell is measured before the move.
        let t = third_measurement(0.9, &s, false).unwrap().unwrap();
        assert_eq!(t.placement, best_four);
        assert_eq!(
            t.hinge,
            Hinge::Straddles {
                low: 0.85,
                high: 1.05,
                goal: 0.9
            }
        );
        assert!(
            t.to_string().contains("0.85-1.05 holds the goal 0.9"),
            "{t}"
        );
        // Where the choice's own interval keeps the goal, other four-node cells (no cheaper)
        // change nothing.
        let sure_choice: Vec<Predicted> = predictions
            .iter()
            .map(|p| Predicted {
                interval: if p.placement == best_four {
                    Some((0.92, 1.0))
                } else {
                    p.interval
                },
                ..p.clone()
            })
            .collect();
        let s_sure_choice = Situation {
            predictions: Some(&sure_choice),
            ..s
        };
        assert_eq!(third_measurement(0.9, &s_sure_choice, false).unwrap(), None);
        // On the lower bound it takes eight; the four-node cell, smaller, might do.
        let sure = Situation {
            goal_bound: GoalBound::LowerBound,
            ..s
        };
        assert_eq!(
            third_measurement(0.9, &sure, false)
                .unwrap()
                .unwrap()
                .placement,
            best_four
        );
        // Goal 0.8: four nodes surely meet it and the two-node cells surely miss it.
        assert_eq!(third_measurement(0.8, &sure, false).unwrap(), None);
        // Goal 0.75: the two-node cells straddle, and come first.
        let t = third_measurement(0.75, &sure, false).unwrap().unwrap();
        assert_eq!(set.get(&t.placement).unwrap().units.len(), 2);
        // Only units 0-1 free: the four-node cells cannot be had, so nothing hinges on them.
        let crowded = Situation {
            available: &[0, 1],
            ..sure
        };
        assert_eq!(third_measurement(0.9, &crowded, false).unwrap(), None);
        // Without calibration nothing straddles.
        let bare: Vec<Predicted> = predictions
            .iter()
            .map(|p| Predicted {
                interval: None,
                ..p.clone()
            })
            .collect();
        let uncalibrated = Situation {
            predictions: Some(&bare),
            ..sure
        };
        assert_eq!(third_measurement(0.9, &uncalibrated, false).unwrap(), None);
    }

    #[test]
    fn a_novel_container_is_measured_where_the_policy_would_put_it() {
        let (m, set) = opteron();
        let predictions = straddling(&set);
        let all: Vec<usize> = (0..8).collect();
        let s = Situation {
            machine: &m,
            placements: &set,
            available: &all,
            predictions: Some(&predictions),
            goal_bound: GoalBound::LowerBound,
        };
        // Even where no interval holds the goal.
        let t = third_measurement(0.8, &s, true).unwrap().unwrap();
        assert_eq!(t.hinge, Hinge::Novel);
        let chosen = decide(&Policy::Model { goal: 0.8 }, &s).unwrap().unwrap();
        assert_eq!(Some(t.placement), chosen.placement);
        // A choice already measured needs no third measurement.
        assert_eq!(third_measurement(0.95, &s, true).unwrap(), None);
        let none = Situation {
            predictions: None,
            ..s
        };
        assert!(matches!(
            third_measurement(0.9, &none, true),
            Err(PolicyError::NoPrediction)
        ));
    }

    #[test]
    fn other_policies() {
        let (m, set) = opteron();
        let all: Vec<usize> = (0..8).collect();
        let s = Situation {
            machine: &m,
            placements: &set,
            available: &all,
            predictions: None,
            goal_bound: GoalBound::Point,
        };
        assert_eq!(decide(&Policy::Observe, &s).unwrap(), None);
        let t = decide(&Policy::Conservative, &s).unwrap().unwrap();
        assert_eq!(t.units.len(), 8);
        assert_eq!(t.cpus.len(), 64);
        let t = decide(&Policy::Aggressive, &s).unwrap().unwrap();
        assert!(t.units.is_empty());
        let t = decide(&Policy::SmartAggressive, &s).unwrap().unwrap();
        assert_eq!(t.units.len(), 2);
        assert_eq!(t.cpus.len(), 16);
        assert!(matches!(
            decide(&Policy::Model { goal: 0.9 }, &s),
            Err(PolicyError::NoPrediction)
        ));
        let busy = Situation {
            available: &[0, 1, 2],
            ..s
        };
        assert!(matches!(
            decide(&Policy::Conservative, &busy),
            Err(PolicyError::NoRoom { .. })
        ));
        assert!(matches!(
            decide(
                &Policy::Pinned {
                    placement: "numa9".into()
                },
                &s
            ),
            Err(PolicyError::UnknownPlacement { .. })
        ));
    }

    #[test]
    fn aggressive_shares_only_what_nobody_holds() {
        let (m, set) = opteron();
        let all: Vec<usize> = (0..8).collect();
        let s = Situation {
            machine: &m,
            placements: &set,
            available: &all,
            predictions: None,
            goal_bound: GoalBound::Point,
        };
        let t = decide(&Policy::Aggressive, &s).unwrap().unwrap();
        assert!(t.units.is_empty(), "aggressive reserves nothing");
        assert_eq!(t.cpus, m.pus.usable);
        // Units 0 and 1 are held by another container: never handed to an aggressive one.
        let free: Vec<usize> = (2..8).collect();
        let t = decide(
            &Policy::Aggressive,
            &Situation {
                available: &free,
                ..s
            },
        )
        .unwrap()
        .unwrap();
        assert!(t.units.is_empty());
        for held in [0, 1] {
            assert!(
                !t.cpus.intersects(&m.units[held].cpus),
                "unit {held}'s cpus handed out: {}",
                t.cpus
            );
            assert!(!t.mems.intersects(&m.units[held].mems), "{}", t.mems);
        }
        assert_eq!(t.cpus.len(), 48);
        assert!(matches!(
            decide(
                &Policy::Aggressive,
                &Situation {
                    available: &[],
                    ..s
                }
            ),
            Err(PolicyError::NoRoom { .. })
        ));
    }

    fn target(units: Vec<usize>, predicted: Option<f64>) -> Target {
        Target {
            placement: Some("x".into()),
            units,
            cpus: CpuSet::new(),
            mems: NodeSet::new(),
            predicted,
            reason: String::new(),
        }
    }

    fn cost(current_units: usize, current_predicted: Option<f64>, bytes: u64) -> MoveCost {
        MoveCost {
            current_units,
            current_predicted,
            trespassing: false,
            bytes_to_move: bytes,
            migration_bytes_per_s: (1u64 << 30) as f64,
            horizon_s: 600.0,
        }
    }

    #[test]
    fn moves_pay_for_themselves() {
        // Same units, 10% gain over 600 s against 1 GiB at 1 GiB/s: worth it.
        let d = worth_moving(
            &cost(2, Some(1.0), 1 << 30),
            &target(vec![0, 1], Some(1.10)),
        );
        assert!(d.worth_it, "{}", d.reason);
        // 0.1% gain against 100 GiB (100 s of migration) over 60 s: refused.
        let small_gain_big_memory = MoveCost {
            horizon_s: 60.0,
            ..cost(2, Some(1.0), 100 << 30)
        };
        let d = worth_moving(&small_gain_big_memory, &target(vec![2, 3], Some(1.001)));
        assert!(!d.worth_it, "{}", d.reason);
        assert!(d.reason.contains("does not outweigh"), "{}", d.reason);
        // Freeing units always pays.
        let d = worth_moving(
            &MoveCost {
                current_units: 4,
                ..small_gain_big_memory.clone()
            },
            &target(vec![2, 3], Some(1.001)),
        );
        assert!(d.worth_it, "{}", d.reason);
        // So does leaving units another container holds.
        let d = worth_moving(
            &MoveCost {
                trespassing: true,
                ..small_gain_big_memory.clone()
            },
            &target(vec![2, 3], Some(1.001)),
        );
        assert!(d.worth_it, "{}", d.reason);
    }

    #[test]
    fn without_a_prediction_only_free_moves_pay() {
        // The non-model policies predict nothing: a move that must migrate memory has no
        // gain to set against it.
        let d = worth_moving(&cost(2, None, 8 << 30), &target(vec![2, 3], None));
        assert!(!d.worth_it, "{}", d.reason);
        assert!(d.reason.contains("no predicted gain"), "{}", d.reason);
        // Nothing to migrate (same nodes, or more of them): it costs nothing.
        let d = worth_moving(&cost(2, None, 0), &target(vec![2, 3], None));
        assert!(d.worth_it, "{}", d.reason);
        // No bandwidth known and memory to move: never worth it.
        let d = worth_moving(
            &MoveCost {
                migration_bytes_per_s: 0.0,
                ..cost(2, Some(1.0), 1 << 20)
            },
            &target(vec![2, 3], Some(2.0)),
        );
        assert!(!d.worth_it, "{}", d.reason);
    }
}
