//! Partial runs (production data) made whole for a forest that learns whole vectors: each
//! run measured in the model's baseline and probe keeps every cell it measured, and the
//! cells it did not measure are the model's prediction from its baseline and probe. The
//! measured cells are the new knowledge (where decisions took containers of behaviours the
//! model may never have seen); the predicted ones only keep the row whole. Used by
//! `placed-train fit --production` (docs/models.md, "Production data").

use crate::check::partial_runs;
use crate::data::{DataError, Dataset, Measurement, RunRecord};
use crate::model::PredictError;
use crate::predictor::Predictor;

/// Why partial runs could not be completed.
#[derive(Debug, thiserror::Error)]
pub enum ImputeError {
    /// The data is for another machine class or size than the model.
    #[error(
        "the production data is for machine class {data} with v = {data_v}, the model for {model} with v = {model_v}"
    )]
    OtherMachine {
        model: String,
        model_v: u32,
        data: String,
        data_v: u32,
    },
    /// The model could not predict a run.
    #[error("predicting {workload} run {run} failed")]
    Predict {
        workload: String,
        run: u32,
        source: PredictError,
    },
    /// The completed records did not validate.
    #[error(transparent)]
    Data(#[from] DataError),
}

/// The options a model of the runs `model` completed is fitted with: in `model`'s baseline
/// and probe, where every such run was measured (a probe chosen among completed cells would
/// be chosen on `model`'s predictions, not on measurements).
pub fn measured_where(model: &dyn Predictor, options: &crate::TrainOptions) -> crate::TrainOptions {
    crate::TrainOptions {
        baseline: Some(model.baseline().to_owned()),
        probe: Some(model.probe().to_owned()),
        ..options.clone()
    }
}

/// The partial runs of `data` that `model` can complete, made whole; with how many partial
/// runs were left out (not measured in the model's baseline and probe).
pub fn completed(
    data: &Dataset,
    model: &dyn Predictor,
) -> Result<(Vec<RunRecord>, usize), ImputeError> {
    let header = data.header();
    let machine = model.machine();
    if header.fingerprint != machine.fingerprint || header.v != machine.v {
        return Err(ImputeError::OtherMachine {
            model: machine.fingerprint.clone(),
            model_v: machine.v,
            data: header.fingerprint.clone(),
            data_v: header.v,
        });
    }
    let mut records = Vec::new();
    let mut skipped = 0;
    for (row, cells) in partial_runs(data) {
        let (Some(b), Some(p)) = (cells.get(model.baseline()), cells.get(model.probe())) else {
            skipped += 1;
            continue;
        };
        let prediction = model.predict(b, p).map_err(|source| ImputeError::Predict {
            workload: row.workload.clone(),
            run: row.run,
            source,
        })?;
        // The run's own record of any placement gives the identity every record repeats.
        let Some(template) = data
            .records()
            .iter()
            .find(|r| r.workload == row.workload && r.run == row.run)
        else {
            continue;
        };
        let whole = header.placements.iter().all(|h| {
            cells.contains_key(h.id.as_str()) || prediction.placements.iter().any(|c| c.id == h.id)
        });
        if !whole {
            skipped += 1;
            continue;
        }
        for h in &header.placements {
            let mut r = template.clone();
            r.placement = h.id.clone();
            r.partial = false;
            r.counters.clear();
            match cells.get(h.id.as_str()) {
                Some(measured) => {
                    r.performance.value = measured.value;
                    r.performance.spread = measured.spread;
                    r.counters = measured.counters.clone();
                }
                None => {
                    let Some(cell) = prediction.placements.iter().find(|c| c.id == h.id) else {
                        continue;
                    };
                    r.completed = true;
                    r.performance = Measurement {
                        value: b.value * cell.relative,
                        unit: template.performance.unit.clone(),
                        repetitions: 1,
                        spread: b.value * cell.spread,
                    };
                }
            }
            records.push(r);
        }
    }
    Ok((records, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::check;
    use crate::test_data;
    use crate::train::fit;

    /// A completed cell keeps its row whole for the forest but is never scored: with every
    /// run's cells of one predicted placement completed, the cross-validated error and the
    /// intervals are judged on the other placements alone, whatever those cells hold.
    #[test]
    fn completed_cells_are_learned_from_but_never_scored() {
        let data = test_data::dataset(&["flat-a", "flat-b", "scales-a", "scales-b"], 6);
        let whole = crate::evaluate(&data, &test_data::quick_options()).expect("evaluates");
        // The probe as chosen on whole runs: completed cells must not choose it.
        let options = crate::TrainOptions {
            probe: Some(whole.placements[whole.probe].clone()),
            ..test_data::quick_options()
        };
        let target = (0..whole.placements.len())
            .find(|&p| p != whole.baseline && p != whole.probe)
            .expect("a predicted placement");
        let id = &whole.placements[target];
        let records = data
            .records()
            .iter()
            .cloned()
            .map(|mut r| {
                if &r.placement == id {
                    r.completed = true;
                    // Far from anything the forest predicts: scored, it would dominate.
                    r.performance.value *= 5.0;
                }
                r
            })
            .collect();
        let completed = Dataset::from_parts(data.header().clone(), records).expect("valid");
        let judged = crate::evaluate(&completed, &options).expect("evaluates");
        let (all, some) = (
            whole.forest.accuracy.overall(),
            judged.forest.accuracy.overall(),
        );
        assert_eq!(some.cells, all.cells - whole.rows.len());
        assert!(judged.forest.accuracy.placement(target).is_none());
        assert!(judged.calibration.placements[target].is_none());
        assert!(some.mean < 100.0, "the 5x cells are not scored: {some:?}");
    }

    /// SIMULATED: a model trained without the `hates` behaviour meets production containers
    /// with it; each production run measures the baseline, the probe and one other placement
    /// (in turn). Retrained on its training data and the completed production runs, its error
    /// on other `hates` workloads falls by at least 30%.
    #[test]
    fn production_runs_of_a_left_out_behaviour_cut_its_error() {
        let options = test_data::quick_options();
        let train = test_data::dataset(&["flat-a", "flat-b", "scales-a", "scales-b"], 6);
        let (before, _) = fit(&train, &options).expect("fits");
        let held = test_data::dataset(&["hates-x"], 4);
        let error = |m: &dyn Predictor| {
            check(m, &held)
                .expect("checks")
                .overall()
                .expect("cells")
                .mean
        };
        let predicted: Vec<String> = before
            .placements()
            .iter()
            .map(|p| p.id.clone())
            .filter(|id| id != before.baseline() && id != before.probe())
            .collect();
        let stream = test_data::dataset(&["hates-p", "hates-q"], 6);
        let production: Vec<RunRecord> = stream
            .records()
            .iter()
            .filter(|r| {
                let n: usize = r.workload.bytes().map(usize::from).sum();
                r.placement == before.baseline()
                    || r.placement == before.probe()
                    || r.placement == predicted[n % predicted.len()]
            })
            .cloned()
            .map(|mut r| {
                r.partial = true;
                r
            })
            .collect();
        let production = Dataset::from_parts(stream.header().clone(), production).expect("valid");
        let (records, skipped) = completed(&production, &before).expect("completes");
        assert_eq!(skipped, 0);
        let mut all = train.records().to_vec();
        all.extend(records);
        let retrain = Dataset::from_parts(train.header().clone(), all).expect("valid");
        let (after, _) = fit(&retrain, &options).expect("fits");
        let (was, is) = (error(&before), error(&after));
        eprintln!(
            "SIMULATED left-out behaviour: held-out error {was:.2}% before, {is:.2}% after retraining with production data ({:.0}% cut)",
            100.0 * (1.0 - is / was)
        );
        assert!(is <= 0.7 * was, "{was} -> {is}");
    }
}
