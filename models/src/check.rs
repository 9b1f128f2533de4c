//! A fitted model applied to data it was not trained on: another host of the machine class,
//! or a later collection. Each workload run is predicted from its own baseline and probe
//! measurements exactly as the daemon predicts a container ([`crate::Model::predict`]), and its
//! measurements in the other placements score the prediction: the error, whether the
//! calibrated interval held the measurement, and whether the novelty warning was raised.
//! Without this, checking a model meant re-implementing the prediction from its file.

use std::collections::BTreeMap;

use crate::accuracy::ErrorSummary;
use crate::data::{Dataset, Provenance};
use crate::features::Observation;
use crate::model::PredictError;
use crate::predictor::Predictor;
use crate::table::{PerformanceTable, RowInfo};

/// An error this far off (percent) makes a run one the novelty warning should have caught:
/// the threshold the novelty target is stated in.
pub const FAR_OFF_PERCENT: f64 = 10.0;

/// One workload run checked.
#[derive(Debug, Clone, PartialEq)]
pub struct RunCheck {
    /// Who.
    pub row: RowInfo,
    /// Absolute percentage error per predicted placement, in the model's placement order
    /// (`None` for the two measured placements).
    pub errors: Vec<Option<f64>>,
    /// Predicted placements whose calibrated interval held the measurement.
    pub covered: usize,
    /// Predicted placements that had an interval (0 for a model without calibration).
    pub with_interval: usize,
    /// Whether the prediction carried the novelty warning.
    pub novel: bool,
}

impl RunCheck {
    /// Mean and worst error over the predicted placements.
    pub fn error(&self) -> Option<ErrorSummary> {
        ErrorSummary::of(self.errors.iter().flatten().copied())
    }

    /// Whether some predicted placement is more than [`FAR_OFF_PERCENT`] off.
    pub fn far_off(&self) -> bool {
        self.errors.iter().flatten().any(|&e| e > FAR_OFF_PERCENT)
    }
}

/// The model on the data.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckReport {
    /// The model's id.
    pub model_id: String,
    /// Where the checked data came from.
    pub provenance: Provenance,
    /// The model's placements, in its order.
    pub placements: Vec<String>,
    /// Every usable run of the data, in data order: whole runs, then partial runs
    /// (production data) measured in the model's baseline and probe, each scored on the
    /// other placements it was measured in.
    pub runs: Vec<RunCheck>,
    /// Partial runs of the data.
    pub partial_runs: usize,
    /// Partial runs left out: not measured in both the model's baseline and probe (an
    /// evaluation with another model, or one cut short).
    pub partial_skipped: usize,
}

impl CheckReport {
    /// Mean and worst error over every predicted cell.
    pub fn overall(&self) -> Option<ErrorSummary> {
        ErrorSummary::of(
            self.runs
                .iter()
                .flat_map(|r| r.errors.iter().flatten().copied()),
        )
    }

    /// Mean and worst error in one placement (model order).
    pub fn placement(&self, p: usize) -> Option<ErrorSummary> {
        ErrorSummary::of(
            self.runs
                .iter()
                .filter_map(|r| r.errors.get(p).copied().flatten()),
        )
    }

    /// Fraction of predicted cells whose interval held the measurement; `None` without
    /// intervals.
    pub fn coverage(&self) -> Option<f64> {
        let (covered, cells) = self
            .runs
            .iter()
            .fold((0, 0), |(c, n), r| (c + r.covered, n + r.with_interval));
        (cells > 0).then(|| covered as f64 / cells as f64)
    }

    /// Per workload, in the order the data first names them.
    pub fn workloads(&self) -> Vec<WorkloadCheck<'_>> {
        let mut out: Vec<WorkloadCheck<'_>> = Vec::new();
        for r in &self.runs {
            if out.iter().any(|w| w.workload == r.row.workload) {
                continue;
            }
            let runs: Vec<&RunCheck> = self
                .runs
                .iter()
                .filter(|o| o.row.workload == r.row.workload)
                .collect();
            out.push(WorkloadCheck {
                workload: &r.row.workload,
                runs: runs.len(),
                error: ErrorSummary::of(
                    runs.iter().flat_map(|o| o.errors.iter().flatten().copied()),
                ),
                covered: runs.iter().map(|o| o.covered).sum(),
                with_interval: runs.iter().map(|o| o.with_interval).sum(),
                novel: runs.iter().filter(|o| o.novel).count(),
            });
        }
        out
    }

    /// Runs flagged novel, runs more than [`FAR_OFF_PERCENT`] off, and those of them flagged.
    pub fn novelty(&self) -> NoveltyCounts {
        NoveltyCounts::count(self.runs.iter().map(|r| (r.far_off(), r.novel)))
    }
}

/// One workload's runs checked, together.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadCheck<'a> {
    /// Workload name.
    pub workload: &'a str,
    /// Its runs in the data.
    pub runs: usize,
    /// Mean and worst error over its predicted cells.
    pub error: Option<ErrorSummary>,
    /// Predicted cells whose interval held the measurement.
    pub covered: usize,
    /// Predicted cells that had an interval.
    pub with_interval: usize,
    /// Runs flagged novel.
    pub novel: usize,
}

/// How well the novelty warning picked out the runs the model got wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoveltyCounts {
    /// Runs checked.
    pub runs: usize,
    /// Runs flagged novel.
    pub flagged: usize,
    /// Runs with some placement more than [`FAR_OFF_PERCENT`] off.
    pub far_off: usize,
    /// Of those, the flagged ones.
    pub far_off_flagged: usize,
}

impl NoveltyCounts {
    /// Counts runs given as (more than [`FAR_OFF_PERCENT`] off, flagged novel).
    pub fn count(runs: impl IntoIterator<Item = (bool, bool)>) -> Self {
        runs.into_iter().fold(
            Self {
                runs: 0,
                flagged: 0,
                far_off: 0,
                far_off_flagged: 0,
            },
            |c, (far_off, novel)| Self {
                runs: c.runs + 1,
                flagged: c.flagged + usize::from(novel),
                far_off: c.far_off + usize::from(far_off),
                far_off_flagged: c.far_off_flagged + usize::from(far_off && novel),
            },
        )
    }

    /// Share of the far-off runs flagged, percent; `None` when none is far off.
    pub fn far_off_flagged_percent(&self) -> Option<f64> {
        (self.far_off > 0).then(|| 100.0 * self.far_off_flagged as f64 / self.far_off as f64)
    }

    /// Share of all runs flagged, percent; `None` without runs.
    pub fn flagged_percent(&self) -> Option<f64> {
        (self.runs > 0).then(|| 100.0 * self.flagged as f64 / self.runs as f64)
    }
}

/// Why the data cannot check the model.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// Another machine class or v: the placements mean something else there.
    #[error(
        "the data is for machine class {data} with v = {data_v}, the model for {model} with v = {model_v}"
    )]
    OtherMachine {
        /// The model's class.
        model: String,
        /// The model's v.
        model_v: u32,
        /// The data's class.
        data: String,
        /// The data's v.
        data_v: u32,
    },
    /// A placement of the model the data does not have.
    #[error("the data has no placement {id} of the model")]
    MissingPlacement {
        /// The placement id.
        id: String,
    },
    /// The model could not predict a run.
    #[error("predicting {workload} run {run} failed")]
    Predict {
        /// Workload.
        workload: String,
        /// Run.
        run: u32,
        /// Why.
        source: PredictError,
    },
}

/// One run scored: each predicted placement's error and interval against `actual(i)`, the
/// measured performance relative to the baseline of the model's `i`-th placement, where
/// the run has it.
fn run_check(
    row: &RowInfo,
    prediction: &crate::model::Prediction,
    actual: impl Fn(usize) -> Option<f64>,
) -> RunCheck {
    let mut check = RunCheck {
        row: row.clone(),
        errors: Vec::with_capacity(prediction.placements.len()),
        covered: 0,
        with_interval: 0,
        novel: prediction.novelty.is_some(),
    };
    for (i, predicted) in prediction.placements.iter().enumerate() {
        let Some(actual) = actual(i).filter(|_| !predicted.measured) else {
            check.errors.push(None);
            continue;
        };
        check
            .errors
            .push(Some((predicted.relative - actual).abs() / actual * 100.0));
        if let Some(interval) = &predicted.interval {
            check.with_interval += 1;
            check.covered += usize::from(interval.contains(actual));
        }
    }
    check
}

/// Applies `model` to every usable run of `data`.
pub fn check(model: &dyn Predictor, data: &Dataset) -> Result<CheckReport, CheckError> {
    let header = data.header();
    let machine = model.machine();
    if header.fingerprint != machine.fingerprint || header.v != machine.v {
        return Err(CheckError::OtherMachine {
            model: machine.fingerprint.clone(),
            model_v: machine.v,
            data: header.fingerprint.clone(),
            data_v: header.v,
        });
    }
    // Data column of each of the model's placements.
    let columns = model
        .placements()
        .iter()
        .map(|p| {
            header
                .placements
                .iter()
                .position(|h| h.id == p.id)
                .ok_or_else(|| CheckError::MissingPlacement { id: p.id.clone() })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let column_of = |id: &str| {
        model
            .placements()
            .iter()
            .position(|p| p.id == id)
            .map(|i| columns[i])
    };
    let (Some(baseline), Some(probe)) = (column_of(model.baseline()), column_of(model.probe()))
    else {
        // A loaded model's baseline and probe are among its placements.
        return Err(CheckError::MissingPlacement {
            id: model.probe().to_owned(),
        });
    };
    let table = PerformanceTable::new(data, baseline);
    let mut runs = Vec::with_capacity(table.rows().len());
    for (r, row) in table.rows().iter().enumerate() {
        let prediction = model
            .predict(table.observation(r, baseline), table.observation(r, probe))
            .map_err(|source| CheckError::Predict {
                workload: row.workload.clone(),
                run: row.run,
                source,
            })?;
        runs.push(run_check(row, &prediction, |i| {
            Some(table.relative()[[r, columns[i]]])
        }));
    }
    let partial = partial_runs(data);
    let mut partial_skipped = 0;
    for (row, cells) in &partial {
        let (Some(b), Some(p)) = (cells.get(model.baseline()), cells.get(model.probe())) else {
            partial_skipped += 1;
            continue;
        };
        let prediction = model.predict(b, p).map_err(|source| CheckError::Predict {
            workload: row.workload.clone(),
            run: row.run,
            source,
        })?;
        let placements = model.placements();
        runs.push(run_check(row, &prediction, |i| {
            cells
                .get(placements[i].id.as_str())
                .map(|cell| cell.value / b.value)
        }));
    }
    Ok(CheckReport {
        model_id: model.id().to_owned(),
        provenance: data.provenance(),
        placements: model.placements().iter().map(|p| p.id.clone()).collect(),
        runs,
        partial_runs: partial.len(),
        partial_skipped,
    })
}

/// The data's usable partial runs in file order, each with its measured cells by placement.
pub(crate) fn partial_runs(data: &Dataset) -> Vec<(RowInfo, BTreeMap<&str, Observation>)> {
    let mut runs: Vec<(RowInfo, BTreeMap<&str, Observation>)> = Vec::new();
    let mut index: BTreeMap<(&str, u32), usize> = BTreeMap::new();
    for r in data.records() {
        if !data.run_is_partial(&r.workload, r.run) || r.unusable.is_some() {
            continue;
        }
        let at = *index
            .entry((r.workload.as_str(), r.run))
            .or_insert_with(|| {
                runs.push((
                    RowInfo {
                        workload: r.workload.clone(),
                        family: r.family.clone(),
                        run: r.run,
                    },
                    BTreeMap::new(),
                ));
                runs.len() - 1
            });
        runs[at].1.insert(
            r.placement.as_str(),
            Observation {
                value: r.performance.value,
                spread: r.performance.spread,
                counters: r.counters.clone(),
            },
        );
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_data;
    use crate::train::{TrainOptions, fit};

    fn options() -> TrainOptions {
        TrainOptions {
            forest: crate::forest::ForestParams::new().n_trees(30),
            cv_trees: Some(10),
            ..TrainOptions::default()
        }
    }

    #[test]
    fn a_model_checked_on_its_own_kind_of_data_is_close_and_unflagged() {
        let train = test_data::standard();
        let (model, _) = fit(&train, &options()).expect("fits");
        // Other workloads of the same three behaviours: the data of another host.
        let other = test_data::dataset(&["flat-c", "scales-c", "hates-c"], 3);
        let report = check(&model, &other).expect("checks");
        assert_eq!(report.runs.len(), 9);
        let overall = report.overall().expect("cells");
        assert_eq!(overall.cells, 9 * 2, "two placements predicted per run");
        assert!(overall.mean < 5.0, "{overall:?}");
        assert_eq!(report.novelty().flagged, 0);
        assert!(report.coverage().is_some());
        for run in &report.runs {
            let measured: Vec<bool> = run.errors.iter().map(Option::is_none).collect();
            assert_eq!(measured.iter().filter(|&&m| m).count(), 2, "{run:?}");
        }
    }

    #[test]
    fn partial_runs_are_scored_on_the_cells_they_measured() {
        let (model, _) = fit(&test_data::standard(), &options()).expect("fits");
        let other = test_data::dataset(&["flat-c", "scales-c", "hates-c"], 3);
        let whole = check(&model, &other).expect("checks");
        // As production measures: the baseline, the probe and one other placement; one
        // run lacks its probe.
        let placements = &model.placements();
        let predicted: Vec<&str> = placements
            .iter()
            .map(|p| p.id.as_str())
            .filter(|id| *id != model.baseline() && *id != model.probe())
            .collect();
        let (kept, dropped) = (predicted[0], predicted[1]);
        let records = other
            .records()
            .iter()
            .filter(|r| r.placement != dropped)
            .filter(|r| !(r.workload == "hates-c-2" && r.placement == model.probe()))
            .cloned()
            .map(|mut r| {
                r.partial = true;
                r
            })
            .collect();
        let production = Dataset::from_parts(other.header().clone(), records).expect("valid");
        let report = check(&model, &production).expect("checks");
        assert_eq!(report.partial_runs, 9);
        assert_eq!(report.partial_skipped, 1);
        assert_eq!(report.runs.len(), 8);
        let column = |id: &str| placements.iter().position(|p| p.id == id).expect("known");
        for run in &report.runs {
            let same = whole
                .runs
                .iter()
                .find(|w| w.row == run.row)
                .expect("the run checked whole");
            assert_eq!(run.errors[column(kept)], same.errors[column(kept)]);
            assert_eq!(
                run.errors[column(dropped)],
                None,
                "not measured: not scored"
            );
        }
        assert_eq!(report.overall().expect("cells").cells, 8);
    }

    #[test]
    fn behaviour_the_model_never_saw_is_far_off_and_flagged() {
        let train = test_data::dataset(&["flat-a", "flat-b", "scales-a", "scales-b"], 6);
        let (model, _) = fit(&train, &options()).expect("fits");
        let unseen = test_data::dataset(&["hates-a"], 3);
        let report = check(&model, &unseen).expect("checks");
        let n = report.novelty();
        assert_eq!(n.runs, 3);
        assert_eq!(n.far_off, 3, "{report:?}");
        assert_eq!(n.far_off_flagged, 3, "{report:?}");
    }

    #[test]
    fn data_of_another_machine_is_refused() {
        let (model, _) = fit(&test_data::standard(), &options()).expect("fits");
        let data = test_data::standard();
        let mut header = data.header().clone();
        header.v += 1;
        let records = data
            .records()
            .iter()
            .cloned()
            .map(|mut r| {
                r.v = header.v;
                r
            })
            .collect();
        let other = Dataset::from_parts(header, records).expect("valid");
        let err = check(&model, &other).unwrap_err();
        assert!(matches!(err, CheckError::OtherMachine { .. }), "{err}");
        assert!(err.to_string().contains("v = 5"), "{err}");
    }
}
