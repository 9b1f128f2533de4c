//! Cross-validated comparison of the predictors on a data set, leaving one family out at a
//! time: the forest on the two observations (with the probe chosen here); the category mean
//! of the category the same two observations fit; the iterative method (algorithm 4), which
//! may measure more placements; and the forest on baseline-placement counters.

use ndarray::{Array2, Axis};

use crate::accuracy::Accuracy;
use crate::categories::{Categories, CategoryError, CategoryParams};
use crate::cv::{Fold, leave_one_family_out, out_of_fold};
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
    /// Intervals calibrated on the forest's held-out predictions, with their coverage
    /// measured one family at a time.
    pub calibration: Calibration,
    /// The mean of the category the baseline and probe observations fit.
    pub category_mean: Predicted,
    /// The iterative method (algorithm 4) predicting its category's mean.
    pub iterative: Predicted,
    /// Placements the iterative method measured per row, the baseline included.
    pub iterative_measurements: Vec<usize>,
    /// The forest on baseline-placement counters; `None` when the data has no counters.
    pub counter_baseline: Option<Predicted>,
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
    let selection = select_probe(table, &folds, &features, &cv_forest)?;
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
        accuracy: Accuracy::new(values.view(), table.relative(), &measured),
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
    let calibration = HeldOut {
        predicted: forest_values.view(),
        spread: selection.predicted.spread.view(),
        actual: table.relative(),
        measured: &measured,
        rows: table.rows(),
    }
    .calibrate(options.intervals);
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
        actual: table.relative().to_owned(),
        features,
        probe_candidates: selection.candidates,
        forest: predicted(forest_values),
        forest_spread: selection.predicted.spread,
        calibration,
        category_mean: predicted(categorised.two_observations),
        iterative: predicted(categorised.iterative),
        iterative_measurements: categorised.measurements,
        counter_baseline,
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

/// The order the iterative method measures placements in: the probe first (the forest's
/// second measurement, so both predictors start from the same two), then the rest in table
/// order.
fn iterative_order(n_placements: usize, baseline: usize, probe: usize) -> Vec<usize> {
    std::iter::once(probe)
        .chain((0..n_placements).filter(|&p| p != baseline && p != probe))
        .collect()
}

struct Categorised {
    two_observations: Array2<f64>,
    iterative: Array2<f64>,
    measurements: Vec<usize>,
}

/// Both category predictors, out of fold: categories found on the training families, then
/// each held-out row classified by its probe observation alone, and by algorithm 4.
fn category_out_of_fold(
    table: &PerformanceTable,
    folds: &[Fold],
    probe: usize,
    params: &CategoryParams,
) -> Result<Categorised, CategoryError> {
    let relative = table.relative();
    let (n_rows, n_placements) = relative.dim();
    let order = iterative_order(n_placements, table.baseline(), probe);
    let workloads: Vec<&str> = table.rows().iter().map(|r| r.workload.as_str()).collect();
    let mut iterative = Array2::zeros((n_rows, n_placements));
    let mut measurements = vec![0; n_rows];
    let two_observations = out_of_fold(folds, n_rows, n_placements, |train, test| {
        let train_workloads: Vec<&str> = train.iter().map(|&r| workloads[r]).collect();
        let categories = Categories::discover(
            relative.select(Axis(0), train).view(),
            &train_workloads,
            params,
        )?;
        let mut out = Array2::zeros((test.len(), n_placements));
        for (mut row, &r) in out.axis_iter_mut(Axis(0)).zip(test) {
            let class = categories.classify(probe, relative[[r, probe]], 0.0);
            row.assign(&categories.mean(class.category));
            let outcome = categories.iterative(&order, |p| relative[[r, p]]);
            iterative
                .row_mut(r)
                .assign(&categories.mean(outcome.category));
            measurements[r] = outcome.measured;
        }
        Ok(out)
    })?;
    Ok(Categorised {
        two_observations,
        iterative,
        measurements,
    })
}
