//! Cross-validated comparison of the predictors on a data set, leaving one family out at a
//! time: the forest on the two observations (with the probe chosen here); the category mean
//! of the category the same two observations fit; the iterative method (algorithm 4), which
//! may measure more placements, both with the category tree and with the thesis's interval
//! rules; and the forest on baseline-placement counters.

use ndarray::{Array2, Axis};

use crate::accuracy::Accuracy;
use crate::categories::{Categories, CategoryError, CategoryParams};
use crate::check::{FAR_OFF_PERCENT, NoveltyCounts};
use crate::cv::{Fold, leave_one_family_out};
use crate::data::{Dataset, Provenance};
use crate::features::{Feature, counter_features, performance_features};
use crate::interval::{Calibration, HeldOut, IntervalParams};
use crate::model::{MachineClass, ProbeCandidate};
use crate::probe::{forest_out_of_fold, select_probe};
use crate::table::{PerformanceTable, RowInfo};
use crate::train::{TrainError, TrainOptions};

/// One predictor's out-of-fold predictions and their accuracy.
#[derive(Debug, Clone, PartialEq)]
pub struct Predicted {
    /// rows x placements, relative to the baseline.
    pub values: Array2<f64>,
    /// Errors against the actual values, on the placements not measured.
    pub accuracy: Accuracy,
}

/// The outcome of [`evaluate`]. Every prediction of every row comes from models that never
/// saw that row's family.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// Machine class and v of the data.
    pub machine: MachineClass,
    /// Where the data came from.
    pub provenance: Provenance,
    /// Placement ids, in column order.
    pub placements: Vec<String>,
    /// Column of the baseline placement.
    pub baseline: usize,
    /// Column of the chosen probe placement.
    pub probe: usize,
    /// Who each row is.
    pub rows: Vec<RowInfo>,
    /// rows x placements actual relative performance.
    pub actual: Array2<f64>,
    /// The forest's inputs.
    pub features: Vec<Feature>,
    /// Every probe candidate's error.
    pub probe_candidates: Vec<ProbeCandidate>,
    /// The forest with the chosen probe.
    pub forest: Predicted,
    /// rows x placements: the spread across the forest's trees of each held-out prediction.
    pub forest_spread: Array2<f64>,
    /// rows x placements: the lower end of each held-out prediction's interval, calibrated
    /// without the row's family; NaN for the measured placements or where unbounded.
    pub forest_low: Array2<f64>,
    /// The upper ends of the same intervals.
    pub forest_high: Array2<f64>,
    /// Intervals calibrated on the forest's held-out predictions, with their coverage
    /// measured one family at a time.
    pub calibration: Calibration,
    /// The mean of the category the baseline and probe observations fit (the category
    /// tree choosing where intervals overlap, as the daemon reports it).
    pub category_mean: Predicted,
    /// The iterative method (algorithm 4) driven by the category tree, predicting its
    /// category's mean.
    pub iterative: Predicted,
    /// Placements the iterative method measured per row, the baseline included.
    pub iterative_measurements: Vec<usize>,
    /// `category_mean` by the thesis's interval rules alone, for comparison.
    pub category_mean_intervals: Predicted,
    /// Algorithm 4 by the thesis's interval rules, for comparison.
    pub iterative_intervals: Predicted,
    /// Placements that measured per row, the baseline included.
    pub iterative_intervals_measurements: Vec<usize>,
    /// The forest on baseline-placement counters; `None` when the data has no counters.
    pub counter_baseline: Option<Predicted>,
    /// Counters some records have and others lack, left out of every feature set.
    pub dropped_counters: Vec<String>,
    /// Per row, whether the novelty warning is raised, out of fold (categories found
    /// without the row's family), as the daemon would raise it.
    pub novel: Vec<bool>,
}

impl Evaluation {
    /// How the out-of-fold novelty warning picks out the rows the forest gets more than
    /// [`crate::check::FAR_OFF_PERCENT`] wrong in some predicted placement.
    pub fn novelty(&self) -> NoveltyCounts {
        let measured = [self.baseline, self.probe];
        NoveltyCounts::count(self.novel.iter().enumerate().map(|(r, &novel)| {
            let far_off = (0..self.placements.len())
                .filter(|p| !measured.contains(p))
                .any(|p| {
                    let actual = self.actual[[r, p]];
                    (self.forest.values[[r, p]] - actual).abs() / actual * 100.0 > FAR_OFF_PERCENT
                });
            (far_off, novel)
        }))
    }
}

/// Selects the probe and compares the three predictors on `data`.
pub fn evaluate(data: &Dataset, options: &TrainOptions) -> Result<Evaluation, TrainError> {
    let table = options.table(data)?;
    evaluate_table(data, &table, options)
}

pub(crate) fn evaluate_table(
    data: &Dataset,
    table: &PerformanceTable,
    options: &TrainOptions,
) -> Result<Evaluation, TrainError> {
    let folds = leave_one_family_out(table.rows())?;
    let cv_forest = options.cv_forest();
    let features = performance_features(options.input_counters(table));
    let only = options.probe_index(data)?;
    let selection = select_probe(table, &folds, &features, &cv_forest, only)?;
    let (baseline, probe) = (table.baseline(), selection.best);
    let measured = [baseline, probe];
    // What a prediction shows for the two measured placements is the measurement itself,
    // as in Model::predict; they are not scored either way.
    let mut forest_values = selection.predicted.mean;
    for p in measured {
        forest_values
            .column_mut(p)
            .assign(&table.relative().column(p));
    }
    let predicted = |values: Array2<f64>| Predicted {
        accuracy: Accuracy::new(values.view(), table.measured(), &measured),
        values,
    };
    let counter_baseline = if table.counter_names().is_empty() {
        None
    } else {
        let features = counter_features(table.counter_names());
        Some(predicted(
            forest_out_of_fold(table, &folds, &features, probe, &cv_forest)?.mean,
        ))
    };
    let held_out = HeldOut {
        predicted: forest_values.view(),
        spread: selection.predicted.spread.view(),
        actual: table.measured(),
        measured: &measured,
        rows: table.rows(),
    };
    let calibration = held_out.calibrate(options.intervals);
    let (forest_low, forest_high) = held_out.bounds(options.intervals);
    let categorised = category_out_of_fold(table, &folds, probe, &options.categories)?;
    let header = data.header();
    Ok(Evaluation {
        machine: MachineClass {
            fingerprint: header.fingerprint.clone(),
            v: header.v,
        },
        provenance: data.provenance(),
        placements: header.placements.iter().map(|p| p.id.clone()).collect(),
        baseline,
        probe,
        rows: table.rows().to_vec(),
        actual: table.measured().to_owned(),
        features,
        probe_candidates: selection.candidates,
        forest: predicted(forest_values),
        forest_spread: selection.predicted.spread,
        forest_low,
        forest_high,
        calibration,
        category_mean: predicted(categorised.two_observations.values),
        iterative: predicted(categorised.iterative.values),
        iterative_measurements: categorised.iterative.measurements,
        category_mean_intervals: predicted(categorised.two_observations_intervals.values),
        iterative_intervals: predicted(categorised.iterative_intervals.values),
        iterative_intervals_measurements: categorised.iterative_intervals.measurements,
        counter_baseline,
        dropped_counters: table.dropped_counters().to_vec(),
        novel: categorised.novel,
    })
}

impl Evaluation {
    /// The forest's held-out predictions calibrated again with other interval parameters
    /// (another level or score), without refitting anything.
    pub fn calibrate(&self, params: IntervalParams) -> Calibration {
        HeldOut {
            predicted: self.forest.values.view(),
            spread: self.forest_spread.view(),
            actual: self.actual.view(),
            measured: &[self.baseline, self.probe],
            rows: &self.rows,
        }
        .calibrate(params)
    }
}

/// The placements the iterative method may measure after the baseline, in table order.
fn iterative_candidates(n_placements: usize, baseline: usize) -> Vec<usize> {
    (0..n_placements).filter(|&p| p != baseline).collect()
}

/// A category predictor's out-of-fold values and how many placements it measured per row.
struct CategoryPredictions {
    values: Array2<f64>,
    measurements: Vec<usize>,
}

impl CategoryPredictions {
    fn new(n_rows: usize, n_placements: usize) -> Self {
        Self {
            values: Array2::zeros((n_rows, n_placements)),
            measurements: vec![2; n_rows],
        }
    }
}

/// The category predictors, each with the tree and with the thesis's interval rules.
struct Categorised {
    /// Per row, whether the novelty rule flags it (categories found without its family).
    novel: Vec<bool>,
    two_observations: CategoryPredictions,
    iterative: CategoryPredictions,
    two_observations_intervals: CategoryPredictions,
    iterative_intervals: CategoryPredictions,
}

/// Every category predictor, out of fold: categories found on the training families, then
/// each held-out row assigned from its probe observation alone, and by algorithm 4 (the
/// tree's variant measures in the tree's separating order; the interval rules', as the
/// thesis, the probe first then table order).
fn category_out_of_fold(
    table: &PerformanceTable,
    folds: &[Fold],
    probe: usize,
    params: &CategoryParams,
) -> Result<Categorised, CategoryError> {
    let relative = table.relative();
    let (n_rows, n_placements) = relative.dim();
    let baseline = table.baseline();
    let candidates = iterative_candidates(n_placements, baseline);
    let interval_order: Vec<usize> = std::iter::once(probe)
        .chain(candidates.iter().copied().filter(|&p| p != probe))
        .collect();
    let workloads: Vec<&str> = table.rows().iter().map(|r| r.workload.as_str()).collect();
    let mut out = Categorised {
        novel: vec![false; n_rows],
        two_observations: CategoryPredictions::new(n_rows, n_placements),
        iterative: CategoryPredictions::new(n_rows, n_placements),
        two_observations_intervals: CategoryPredictions::new(n_rows, n_placements),
        iterative_intervals: CategoryPredictions::new(n_rows, n_placements),
    };
    for fold in folds {
        let train_workloads: Vec<&str> = fold.train.iter().map(|&r| workloads[r]).collect();
        let train = relative.select(Axis(0), &fold.train);
        let categories =
            Categories::discover(train.view(), &train_workloads, &[baseline, probe], params)?;
        let trees =
            categories.iterative_trees(train.view(), &categories.separating_order(&candidates))?;
        for &r in &fold.test {
            let observed = |p: usize| relative[[r, p]];
            // What the daemon reports for a container measured in the same two placements.
            let by_tree = categories.classify(probe, observed(probe), 0.0);
            // The novelty warning as Model::predict raises it, from the measurements with
            // their spreads.
            let (ratio, uncertainty) = table
                .observation(r, probe)
                .ratio_over(table.observation(r, baseline));
            out.novel[r] = categories.classify(probe, ratio, uncertainty).novel;
            out.two_observations
                .values
                .row_mut(r)
                .assign(&categories.mean(by_tree.category));
            let rule = categories.classify_by_intervals(probe, observed(probe), 0.0);
            out.two_observations_intervals
                .values
                .row_mut(r)
                .assign(&categories.mean(rule.category));
            for (outcome, into) in [
                (trees.run(&categories, observed), &mut out.iterative),
                (
                    categories.iterative(&interval_order, observed),
                    &mut out.iterative_intervals,
                ),
            ] {
                into.values
                    .row_mut(r)
                    .assign(&categories.mean(outcome.category));
                into.measurements[r] = outcome.measured;
            }
        }
    }
    Ok(out)
}
