//! The thesis's use case, replayed from collected data (thesis §2.5, figures 2.13-2.14): for
//! each goal, the placement each policy gives each workload, how many such containers fit on
//! one machine, and how far the workload's measured performance there falls short of the goal.
//!
//! Only policies that pin a container to exclusive allocation units can be replayed this way:
//! their performance is the measured performance in the chosen placement, and a machine holds
//! as many of them as the placement can be laid out on its units. Every decision is the
//! daemon's own ([`placed_core::policy::decide`]); the model policy decides on out-of-fold
//! predictions ([`placed_models::evaluate`]), so no workload is placed by a model that saw its
//! family.

mod table;

use std::collections::HashMap;

use ndarray::Axis;
use placed_core::machine::Machine;
use placed_core::placement::{PlacementError, PlacementSet, instantiate};
use placed_core::policy::{self, Policy, PolicyError, Predicted, Situation};
use placed_models::cv::{CvError, leave_one_family_out};
use placed_models::train::TrainError;
use placed_models::{Dataset, Evaluation, Provenance, TrainOptions, evaluate};

pub use table::{json_lines, text};

/// The goals the thesis evaluates, as fractions of the baseline.
pub const DEFAULT_GOALS: [f64; 3] = [0.9, 1.0, 1.1];

/// The policies replayed, in the order they are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Replayed {
    /// The fewest units predicted to keep the goal (predictions out of fold).
    Model,
    /// The same with the lower end of each prediction's calibrated interval held against
    /// the goal (`policy.goal_bound = "lower-bound"`).
    ModelLowerBound,
    /// The point rule after the daemon's third measurement (`policy.third_measurement`):
    /// where the choice hinges on a cell whose interval holds the goal, that cell's
    /// measured value replaces its prediction. Novelty is not replayed.
    ModelThird,
    /// The fewest units, best interconnect.
    SmartAggressive,
    /// The whole machine for one container.
    Conservative,
    /// The one placement with the best mean over the other families' workloads, for
    /// everyone: the best an operator can do without a model.
    OnePlacement,
}

impl Replayed {
    /// Every replayed policy, in display order.
    pub const ALL: [Self; 6] = [
        Self::Model,
        Self::ModelLowerBound,
        Self::ModelThird,
        Self::SmartAggressive,
        Self::Conservative,
        Self::OnePlacement,
    ];

    /// The name tables, plots and JSON use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Model => "model",
            Self::ModelLowerBound => "model-lower-bound",
            Self::ModelThird => "model-third-measurement",
            Self::SmartAggressive => "smart-aggressive",
            Self::Conservative => "conservative",
            Self::OnePlacement => "one-placement",
        }
    }
}

/// One workload run under one policy and goal.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    /// The important placement chosen; `None` when the policy does not pin (conservative).
    pub placement: Option<String>,
    /// Containers like this one a machine holds.
    pub containers: usize,
    /// Measured performance there, relative to the baseline; `None` when the data has no
    /// measurement of it (an unpinned policy).
    pub performance: Option<f64>,
    /// A third placement was measured before the choice.
    pub third: bool,
}

/// One workload under one policy and goal: every run of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Fraction of the baseline to keep.
    pub goal: f64,
    /// The policy.
    pub policy: Replayed,
    /// Workload name.
    pub workload: String,
    /// Its family.
    pub family: String,
    /// One outcome per run, in data order.
    pub runs: Vec<RunOutcome>,
}

impl Cell {
    /// Mean containers per machine over the runs.
    pub fn containers(&self) -> f64 {
        self.runs.iter().map(|r| r.containers as f64).sum::<f64>() / self.runs.len() as f64
    }

    /// Shortfall below the goal of each run, in percent of the goal (0 when met); `None`
    /// when a run's performance was not measured.
    fn shortfalls(&self) -> Option<Vec<f64>> {
        self.runs
            .iter()
            .map(|r| r.performance.map(|p| shortfall(p, self.goal)))
            .collect()
    }

    /// Mean shortfall over the runs, percent.
    pub fn shortfall_mean(&self) -> Option<f64> {
        let s = self.shortfalls()?;
        Some(s.iter().sum::<f64>() / s.len() as f64)
    }

    /// Worst shortfall over the runs, percent.
    pub fn shortfall_worst(&self) -> Option<f64> {
        Some(self.shortfalls()?.into_iter().fold(0.0, f64::max))
    }

    /// Whether every run kept the goal; `None` when not measured.
    pub fn met(&self) -> Option<bool> {
        self.shortfall_worst().map(|w| w == 0.0)
    }
}

/// How far `performance` is below `goal`, in percent of the goal; 0 when it keeps it.
pub fn shortfall(performance: f64, goal: f64) -> f64 {
    (100.0 * (1.0 - performance / goal)).max(0.0)
}

/// One policy at one goal over every workload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Mean containers per machine over the workloads.
    pub containers: f64,
    /// Workloads whose every run kept the goal, of those measured.
    pub met: usize,
    /// Workloads with a measured performance.
    pub measured: usize,
    /// Workloads in all.
    pub workloads: usize,
    /// Mean over the workloads of their mean shortfall, percent; `None` when none measured.
    pub shortfall_mean: Option<f64>,
    /// Worst shortfall of any run, percent.
    pub shortfall_worst: Option<f64>,
    /// Runs that took a third measurement, and runs in all.
    pub thirds: (usize, usize),
}

/// The replay of every policy at every goal.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    /// Where the data came from; anything not real is marked where shown.
    pub provenance: Provenance,
    /// Machine class of the data.
    pub fingerprint: String,
    /// vCPUs per container.
    pub v: u32,
    /// Allocation units of the machine.
    pub units: usize,
    /// The baseline placement goals are relative to.
    pub baseline: String,
    /// The goals, in order.
    pub goals: Vec<f64>,
    /// One cell per goal, policy and workload: goals outermost, then policies in
    /// [`Replayed::ALL`] order, then workloads in data order.
    pub cells: Vec<Cell>,
}

impl Replay {
    /// The cells of one goal and policy.
    pub fn cells_of(&self, goal: f64, policy: Replayed) -> impl Iterator<Item = &Cell> {
        self.cells
            .iter()
            .filter(move |c| c.goal == goal && c.policy == policy)
    }

    /// One policy at one goal, over every workload.
    pub fn summary(&self, goal: f64, policy: Replayed) -> Summary {
        let cells: Vec<&Cell> = self.cells_of(goal, policy).collect();
        let measured: Vec<&Cell> = cells
            .iter()
            .copied()
            .filter(|c| c.met().is_some())
            .collect();
        let workloads = cells.len();
        Summary {
            containers: cells.iter().map(|c| c.containers()).sum::<f64>() / workloads as f64,
            met: measured.iter().filter(|c| c.met() == Some(true)).count(),
            measured: measured.len(),
            workloads,
            shortfall_mean: (!measured.is_empty()).then(|| {
                measured
                    .iter()
                    .filter_map(|c| c.shortfall_mean())
                    .sum::<f64>()
                    / measured.len() as f64
            }),
            shortfall_worst: measured
                .iter()
                .filter_map(|c| c.shortfall_worst())
                .reduce(f64::max),
            thirds: cells
                .iter()
                .flat_map(|c| &c.runs)
                .fold((0, 0), |(t, n), r| (t + usize::from(r.third), n + 1)),
        }
    }
}

/// Why the policies cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The machine given is not the one the data was collected on.
    #[error(
        "the data is for machine class {data} and v = {data_v}, the machine given is {machine} with v = {machine_v}: replaying needs the machine the data was collected on"
    )]
    OtherMachine {
        /// The data header's fingerprint.
        data: String,
        /// Its v.
        data_v: u32,
        /// The machine's fingerprint.
        machine: String,
        /// The placement set's v.
        machine_v: usize,
    },
    /// A placement of the data is not one of the machine's.
    #[error("placement {id:?} of the data is not an important placement of the machine given")]
    UnknownPlacement {
        /// The placement id.
        id: String,
    },
    /// A goal outside what the model policy accepts.
    #[error("goal {goal}% is not a valid goal")]
    Goal {
        /// The goal, percent.
        goal: f64,
        /// Why.
        source: PolicyError,
    },
    /// Cross-validating the model failed.
    #[error("cross-validating the model")]
    Evaluate(#[from] TrainError),
    /// Leaving one family out failed.
    #[error(transparent)]
    Folds(#[from] CvError),
    /// A policy refused a decision on an empty machine.
    #[error("policy {policy} for workload {workload}")]
    Decide {
        /// The policy.
        policy: &'static str,
        /// The workload.
        workload: String,
        /// Why.
        source: PolicyError,
    },
    /// Laying out a placement failed.
    #[error("laying out placement {id}")]
    Layout {
        /// The placement id.
        id: String,
        /// Why.
        source: PlacementError,
    },
}

/// Replays every policy at every goal (fractions of the baseline) on `data`, collected on
/// `machine` whose important placements for the data's v are `set`.
pub fn replay(
    data: &Dataset,
    machine: &Machine,
    set: &PlacementSet,
    goals: &[f64],
    options: &TrainOptions,
) -> Result<Replay, ReplayError> {
    let header = data.header();
    if header.fingerprint != set.fingerprint || header.v as usize != set.vcpus {
        return Err(ReplayError::OtherMachine {
            data: header.fingerprint.clone(),
            data_v: header.v,
            machine: set.fingerprint.clone(),
            machine_v: set.vcpus,
        });
    }
    for goal in goals {
        Policy::Model { goal: *goal }
            .validate()
            .map_err(|source| ReplayError::Goal {
                goal: 100.0 * goal,
                source,
            })?;
    }
    let e = evaluate(data, options)?;
    if let Some(id) = e.placements.iter().find(|id| set.get(id).is_none()) {
        return Err(ReplayError::UnknownPlacement { id: id.clone() });
    }
    let one_placement = one_placement_per_row(&e)?;
    let layout = Layout::new(machine, set);
    let mut cells = Vec::new();
    for &goal in goals {
        for policy in Replayed::ALL {
            cells.extend(cells_for(&e, &layout, goal, policy, &one_placement)?);
        }
    }
    Ok(Replay {
        provenance: e.provenance,
        fingerprint: e.machine.fingerprint.clone(),
        v: e.machine.v,
        units: machine.units.len(),
        baseline: e.placements[e.baseline].clone(),
        goals: goals.to_vec(),
        cells,
    })
}

/// The one placement (column) each row gets: the best mean over the rows of the other
/// families, so it is chosen as blind to the workload as the model's predictions are.
fn one_placement_per_row(e: &Evaluation) -> Result<Vec<usize>, CvError> {
    let mut chosen = vec![0; e.rows.len()];
    for fold in leave_one_family_out(&e.rows)? {
        let means = e.actual.select(Axis(0), &fold.train).mean_axis(Axis(0));
        // Columns are in the placement set's order, fewest units first: a tie keeps the
        // smaller placement.
        let best = means.map_or(0, |m| {
            m.iter()
                .enumerate()
                .fold((0, f64::NEG_INFINITY), |(bi, bv), (i, &v)| {
                    if v > bv { (i, v) } else { (bi, bv) }
                })
                .0
        });
        for &r in &fold.test {
            chosen[r] = best;
        }
    }
    Ok(chosen)
}

/// The machine and what each placement takes of it.
struct Layout<'a> {
    machine: &'a Machine,
    set: &'a PlacementSet,
    all: Vec<usize>,
    per_machine: std::cell::RefCell<HashMap<String, usize>>,
}

impl<'a> Layout<'a> {
    fn new(machine: &'a Machine, set: &'a PlacementSet) -> Self {
        Self {
            machine,
            set,
            all: (0..machine.units.len()).collect(),
            per_machine: Default::default(),
        }
    }

    /// The empty machine with `predictions` for one container.
    fn situation<'s>(
        &'s self,
        predictions: &'s [Predicted],
        goal_bound: policy::GoalBound,
    ) -> Situation<'s> {
        Situation {
            machine: self.machine,
            placements: self.set,
            available: &self.all,
            predictions: Some(predictions),
            goal_bound,
        }
    }

    /// How many containers in placement `id` the daemon lays out on an empty machine, each
    /// on units the others leave free.
    fn per_machine(&self, id: &str) -> Result<usize, ReplayError> {
        if let Some(n) = self.per_machine.borrow().get(id) {
            return Ok(*n);
        }
        let layout_error = |source| ReplayError::Layout {
            id: id.to_owned(),
            source,
        };
        let p = self
            .set
            .get(id)
            .ok_or_else(|| ReplayError::UnknownPlacement { id: id.to_owned() })?;
        let mut free = self.all.clone();
        let mut n = 0;
        while let Some(inst) =
            instantiate(self.machine, self.set.vcpus, p, &free).map_err(layout_error)?
        {
            free.retain(|u| !inst.units.contains(u));
            n += 1;
        }
        self.per_machine.borrow_mut().insert(id.to_owned(), n);
        Ok(n)
    }
}

/// A row's predictions as the daemon would have had them: out of fold, the baseline and the
/// probe measured.
fn out_of_fold(e: &Evaluation, row: usize) -> Vec<Predicted> {
    e.placements
        .iter()
        .enumerate()
        .map(|(col, id)| {
            let (low, high) = (e.forest_low[[row, col]], e.forest_high[[row, col]]);
            let measured = col == e.baseline || col == e.probe;
            Predicted {
                placement: id.clone(),
                relative: e.forest.values[[row, col]],
                spread: 0.0,
                // Out of fold, as the point: calibrated without this row's family.
                interval: (!measured && low.is_finite() && high.is_finite()).then_some((low, high)),
                measured,
            }
        })
        .collect()
}

/// Every workload's cell for one policy and goal.
fn cells_for(
    e: &Evaluation,
    layout: &Layout<'_>,
    goal: f64,
    replayed: Replayed,
    one_placement: &[usize],
) -> Result<Vec<Cell>, ReplayError> {
    let mut cells: Vec<Cell> = Vec::new();
    for (row, info) in e.rows.iter().enumerate() {
        let mut predictions = out_of_fold(e, row);
        let policy = match replayed {
            Replayed::Model | Replayed::ModelLowerBound | Replayed::ModelThird => {
                Policy::Model { goal }
            }
            Replayed::SmartAggressive => Policy::SmartAggressive,
            Replayed::Conservative => Policy::Conservative,
            Replayed::OnePlacement => Policy::Pinned {
                placement: e.placements[one_placement[row]].clone(),
            },
        };
        let goal_bound = if replayed == Replayed::ModelLowerBound {
            policy::GoalBound::LowerBound
        } else {
            policy::GoalBound::Point
        };
        let decide_error = |source| ReplayError::Decide {
            policy: replayed.name(),
            workload: info.workload.clone(),
            source,
        };
        let mut third = false;
        if replayed == Replayed::ModelThird {
            let which =
                policy::third_measurement(goal, &layout.situation(&predictions, goal_bound), false)
                    .map_err(decide_error)?;
            if let Some(col) =
                which.and_then(|w| e.placements.iter().position(|p| *p == w.placement))
            {
                // The measurement is what the data holds for that placement.
                predictions[col] = Predicted {
                    relative: e.actual[[row, col]],
                    interval: None,
                    measured: true,
                    ..predictions[col].clone()
                };
                third = true;
            }
        }
        let target = policy::decide(&policy, &layout.situation(&predictions, goal_bound))
            .map_err(decide_error)?
            .ok_or_else(|| decide_error(PolicyError::NoPrediction))?;
        let outcome = match &target.placement {
            Some(id) => RunOutcome {
                containers: layout.per_machine(id)?,
                performance: e
                    .placements
                    .iter()
                    .position(|p| p == id)
                    .map(|col| e.actual[[row, col]]),
                placement: Some(id.clone()),
                third,
            },
            // Unpinned: what it reserves decides how many fit; how it performs there was
            // never measured.
            None => RunOutcome {
                placement: None,
                containers: layout.all.len() / target.units.len().max(1),
                performance: None,
                third,
            },
        };
        match cells.iter_mut().find(|c| c.workload == info.workload) {
            Some(cell) => cell.runs.push(outcome),
            None => cells.push(Cell {
                goal,
                policy: replayed,
                workload: info.workload.clone(),
                family: info.family.clone(),
                runs: vec![outcome],
            }),
        }
    }
    Ok(cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortfall_is_zero_when_the_goal_is_kept_and_relative_to_the_goal_otherwise() {
        assert_eq!(shortfall(1.2, 1.1), 0.0);
        assert_eq!(shortfall(1.1, 1.1), 0.0);
        assert!((shortfall(0.45, 0.9) - 50.0).abs() < 1e-9);
    }
}
