//! Probe selection: the second placement a container is measured in is the one whose
//! observation predicts the rest best, judged by leave-one-family-out cross-validation of
//! the forest (thesis §2.4.2, "selected during the model training").

use linfa::prelude::*;
use ndarray::{Array2, Axis, concatenate, s};

use crate::accuracy::Accuracy;
use crate::cv::{Fold, out_of_fold};
use crate::features::Feature;
use crate::forest::{ForestError, ForestParams};
use crate::model::ProbeCandidate;
use crate::table::PerformanceTable;

/// Out-of-fold forest predictions with `features` observed in the baseline and `probe`:
/// the trees' mean and their spread (which calibrates the intervals), rows x placements.
pub(crate) struct OutOfFold {
    pub(crate) mean: Array2<f64>,
    pub(crate) spread: Array2<f64>,
}

pub(crate) fn forest_out_of_fold(
    table: &PerformanceTable,
    folds: &[Fold],
    features: &[Feature],
    probe: usize,
    params: &ForestParams,
) -> Result<OutOfFold, ForestError> {
    let n_outputs = table.placements().len();
    // Mean and spread side by side in one matrix, so each fold's forest is fitted once.
    let both = out_of_fold(folds, table.rows().len(), 2 * n_outputs, |train, test| {
        let x = table
            .features(features, probe, train)
            .map_err(inconsistent)?;
        let forest = params.fit(&DatasetBase::new(x, table.targets(train)))?;
        let x_test = table
            .features(features, probe, test)
            .map_err(inconsistent)?;
        let (mean, spread) = forest.predict_rows_with_spread(x_test.view())?;
        concatenate(Axis(1), &[mean.view(), spread.view()]).map_err(|e| ForestError::Inconsistent {
            reason: e.to_string(),
        })
    })?;
    Ok(OutOfFold {
        mean: both.slice(s![.., ..n_outputs]).to_owned(),
        spread: both.slice(s![.., n_outputs..]).to_owned(),
    })
}

/// Validated data always has every counter the table lists; anything else is a bug worth
/// a clear message rather than a panic.
fn inconsistent(e: crate::features::ObservationError) -> ForestError {
    ForestError::Inconsistent {
        reason: e.to_string(),
    }
}

/// Every candidate's cross-validated error and the best candidate's predictions.
pub(crate) struct ProbeSelection {
    pub(crate) candidates: Vec<ProbeCandidate>,
    pub(crate) best: usize,
    pub(crate) predicted: OutOfFold,
}

/// Tries every placement but the baseline as the probe (only `only`, when given); the
/// lowest mean error wins, ties going to the earlier placement so the choice is
/// deterministic.
pub(crate) fn select_probe(
    table: &PerformanceTable,
    folds: &[Fold],
    features: &[Feature],
    params: &ForestParams,
    only: Option<usize>,
) -> Result<ProbeSelection, ForestError> {
    let baseline = table.baseline();
    let mut candidates = Vec::new();
    let mut best: Option<(usize, f64, OutOfFold)> = None;
    let tried: Vec<usize> = (0..table.placements().len())
        .filter(|&p| p != baseline && only.is_none_or(|o| o == p))
        .collect();
    let n_candidates = tried.len();
    for (done, probe) in tried.into_iter().enumerate() {
        let predicted = forest_out_of_fold(table, folds, features, probe, params)?;
        let error =
            Accuracy::new(predicted.mean.view(), table.measured(), &[baseline, probe]).overall();
        let id = &table.placements()[probe].id;
        // Progress: this loop is what takes the time of evaluate, fit and train.
        tracing::info!(
            probe = %id,
            mean = error.mean,
            worst = error.worst,
            "probe candidate {} of {n_candidates} cross-validated",
            done + 1
        );
        candidates.push(ProbeCandidate {
            placement: id.clone(),
            error,
        });
        if best.as_ref().is_none_or(|(_, b, _)| error.mean < *b) {
            best = Some((probe, error.mean, predicted));
        }
    }
    // The table has at least two placements (data validation), so there is a candidate.
    let (best, _, predicted) = best.ok_or_else(|| ForestError::Inconsistent {
        reason: "no probe candidate".into(),
    })?;
    Ok(ProbeSelection {
        candidates,
        best,
        predicted,
    })
}
