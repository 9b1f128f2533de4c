//! Fitting a model from a data set: evaluate (probe selection and the cross-validated
//! comparison), then train the final forest and categories on every row.

use linfa::prelude::*;
use ndarray::Array2;

use crate::categories::{Categories, CategoryError, CategoryParams};
use crate::cv::CvError;
use crate::data::Dataset;
use crate::evaluation::{Evaluation, evaluate_table};
use crate::features::{Feature, performance_features};
use crate::forest::{ForestError, ForestParams};
use crate::interval::IntervalParams;
use crate::model::{CvAccuracy, Model, ModelBody, TrainingSummary};
use crate::table::PerformanceTable;

/// How to fit and evaluate.
#[derive(Debug, Clone)]
pub struct TrainOptions {
    /// Baseline placement id; `None` takes the data header's first placement.
    pub baseline: Option<String>,
    /// Probe placement id; `None` chooses it by cross-validation. Given where the data's
    /// rows were measured in one probe only and completed by another model elsewhere (the
    /// daemon's production data under the model across classes): a probe chosen among
    /// completed cells would be chosen on that model's predictions, not on measurements.
    pub probe: Option<String>,
    /// The final forest's hyperparameters.
    pub forest: ForestParams,
    /// Trees per cross-validation forest; `None` for as many as the final forest. Fewer
    /// makes probe selection faster at little cost in the ranking.
    pub cv_trees: Option<usize>,
    /// Category discovery.
    pub categories: CategoryParams,
    /// Feed counters (present in every record) to the forest beside the probe ratio.
    pub counters_as_inputs: bool,
    /// How the prediction intervals are calibrated.
    pub intervals: IntervalParams,
}

impl Default for TrainOptions {
    fn default() -> Self {
        Self {
            baseline: None,
            probe: None,
            forest: ForestParams::default(),
            cv_trees: None,
            categories: CategoryParams::default(),
            counters_as_inputs: true,
            intervals: IntervalParams::default(),
        }
    }
}

/// Why a model could not be fitted or evaluated.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// The requested baseline or probe is not a placement of the data.
    #[error("placement {id:?} is not one of the data's ({known})")]
    UnknownPlacement {
        /// The id asked for.
        id: String,
        /// The ids available, comma-separated.
        known: String,
    },
    /// One important placement: nothing to predict.
    #[error(
        "the data has {found} important placement(s): a model needs at least 2 (a baseline and a probe), so on this machine class and v there is nothing to predict"
    )]
    TooFewPlacements {
        /// Placements in the data header.
        found: usize,
    },
    /// Cross-validation impossible.
    #[error(transparent)]
    Cv(#[from] CvError),
    /// The forest failed.
    #[error("training the forest failed")]
    Forest(#[from] ForestError),
    /// Category discovery failed.
    #[error("finding performance categories failed")]
    Categories(#[from] CategoryError),
    /// The trained model failed its own consistency check (a bug).
    #[error("the trained model is inconsistent: {reason}")]
    Inconsistent {
        /// What is inconsistent.
        reason: String,
    },
}

impl TrainOptions {
    /// The data as a performance table relative to the baseline. A data file may hold one
    /// placement (a host where every container of this size runs the same way), but a
    /// model needs a probe beside the baseline.
    pub(crate) fn table(&self, data: &Dataset) -> Result<PerformanceTable, TrainError> {
        let found = data.header().placements.len();
        if found < 2 {
            return Err(TrainError::TooFewPlacements { found });
        }
        Ok(PerformanceTable::new(data, self.baseline_index(data)?))
    }

    pub(crate) fn baseline_index(&self, data: &Dataset) -> Result<usize, TrainError> {
        Ok(self
            .placement_index(self.baseline.as_deref(), data)?
            .unwrap_or(0))
    }

    /// The probe asked for, if any: never the baseline.
    pub(crate) fn probe_index(&self, data: &Dataset) -> Result<Option<usize>, TrainError> {
        let probe = self.placement_index(self.probe.as_deref(), data)?;
        if probe.is_some() && probe == Some(self.baseline_index(data)?) {
            return Err(TrainError::UnknownPlacement {
                id: self.probe.clone().unwrap_or_default(),
                known: format!("the baseline cannot be the probe; {}", known_ids(data)),
            });
        }
        Ok(probe)
    }

    fn placement_index(
        &self,
        id: Option<&str>,
        data: &Dataset,
    ) -> Result<Option<usize>, TrainError> {
        let Some(id) = id else {
            return Ok(None);
        };
        let placements = &data.header().placements;
        placements
            .iter()
            .position(|p| p.id == id)
            .map(Some)
            .ok_or_else(|| TrainError::UnknownPlacement {
                id: id.to_owned(),
                known: known_ids(data),
            })
    }

    pub(crate) fn cv_forest(&self) -> ForestParams {
        match self.cv_trees {
            Some(n) => self.forest.clone().n_trees(n),
            None => self.forest.clone(),
        }
    }

    pub(crate) fn input_counters<'t>(&self, table: &'t PerformanceTable) -> &'t [String] {
        if self.counters_as_inputs {
            table.counter_names()
        } else {
            &[]
        }
    }
}

/// `data` as a linfa data set with the forest's inputs for the given probe as records and
/// relative performance in every placement as targets, named, so other linfa models can be
/// tried on it.
pub fn linfa_dataset(
    data: &Dataset,
    options: &TrainOptions,
    probe: &str,
) -> Result<DatasetBase<Array2<f64>, Array2<f64>>, TrainError> {
    let table = options.table(data)?;
    let probe = table
        .placements()
        .iter()
        .position(|p| p.id == probe)
        .ok_or_else(|| TrainError::UnknownPlacement {
            id: probe.to_owned(),
            known: known_ids(data),
        })?;
    let features = performance_features(options.input_counters(&table));
    let (x, y) = design(&table, &features, probe)?;
    Ok(DatasetBase::new(x, y)
        .with_feature_names(features.iter().map(ToString::to_string).collect())
        .with_target_names(table.placements().iter().map(|p| p.id.clone()).collect()))
}

/// Inputs and targets of every row.
fn design(
    table: &PerformanceTable,
    features: &[Feature],
    probe: usize,
) -> Result<(Array2<f64>, Array2<f64>), TrainError> {
    let all: Vec<usize> = (0..table.rows().len()).collect();
    let x = table
        .features(features, probe, &all)
        .map_err(|e| TrainError::Inconsistent {
            reason: e.to_string(),
        })?;
    Ok((x, table.targets(&all)))
}

fn known_ids(data: &Dataset) -> String {
    data.header()
        .placements
        .iter()
        .map(|p| p.id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Fits a model on every row of `data`, with the probe chosen by cross-validation; returns
/// it with the evaluation that chose the probe.
pub fn fit(data: &Dataset, options: &TrainOptions) -> Result<(Model, Evaluation), TrainError> {
    let table = options.table(data)?;
    let evaluation = evaluate_table(data, &table, options)?;
    fit_table(data, &table, evaluation, options)
}

/// [`fit`] for data already cross-validated: `evaluation` must be [`crate::evaluate`]'s of the
/// same data and options (the size search evaluates each size once and fits it afterwards).
pub fn fit_evaluated(
    data: &Dataset,
    evaluation: Evaluation,
    options: &TrainOptions,
) -> Result<(Model, Evaluation), TrainError> {
    let table = options.table(data)?;
    fit_table(data, &table, evaluation, options)
}

fn fit_table(
    data: &Dataset,
    table: &PerformanceTable,
    evaluation: Evaluation,
    options: &TrainOptions,
) -> Result<(Model, Evaluation), TrainError> {
    let features = performance_features(options.input_counters(table));
    let (x, y) = design(table, &features, evaluation.probe)?;
    let forest = options.forest.fit(&DatasetBase::new(x, y))?;
    let workloads: Vec<&str> = table.rows().iter().map(|r| r.workload.as_str()).collect();
    let categories = Categories::discover(
        table.relative(),
        &workloads,
        &[evaluation.baseline, evaluation.probe],
        &options.categories,
    )?;
    for (i, c) in categories.under_populated() {
        tracing::info!(
            category = i,
            workloads = ?c.workloads,
            "category has too few workloads: add training workloads that behave like these"
        );
    }
    let header = data.header();
    let body = ModelBody {
        machine: evaluation.machine.clone(),
        concerns: header.concerns.clone(),
        placements: header.placements.clone(),
        baseline: evaluation.placements[evaluation.baseline].clone(),
        probe: evaluation.placements[evaluation.probe].clone(),
        features,
        provenance: data.provenance(),
        training: TrainingSummary {
            workloads: table.workloads().len(),
            runs: table.rows().len(),
            families: table
                .rows_per_family()
                .into_iter()
                .map(|(f, n)| (f.to_owned(), n))
                .collect(),
            counters: table.counter_names().to_vec(),
            forest: options.forest.clone().check()?,
            out_of_bag: forest.out_of_bag(),
        },
        accuracy: CvAccuracy {
            probe_candidates: evaluation.probe_candidates.clone(),
            forest: evaluation.forest.accuracy.overall(),
            category_mean: evaluation.category_mean.accuracy.overall(),
            iterative: evaluation.iterative.accuracy.overall(),
            counter_baseline: evaluation
                .counter_baseline
                .as_ref()
                .map(|c| c.accuracy.overall()),
        },
        categories,
        forest,
        below_gate: None,
        calibration: Some(evaluation.calibration.clone()),
    };
    let model = Model::from_trained(body).map_err(|reason| TrainError::Inconsistent { reason })?;
    Ok((model, evaluation))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::{Observation, ObservationError, ObservedIn};
    use crate::model::PredictError;
    use crate::test_data;

    fn options(trees: usize) -> TrainOptions {
        TrainOptions {
            forest: ForestParams::new().n_trees(trees),
            ..TrainOptions::default()
        }
    }

    #[test]
    fn fit_chooses_a_probe_and_predicts_held_out_families_well() {
        let (model, evaluation) = fit(&test_data::standard(), &options(20)).expect("fits");
        assert_eq!(model.baseline(), "p0");
        assert_eq!(
            model.accuracy().probe_candidates.len(),
            3,
            "every placement but the baseline"
        );
        let chosen = model
            .accuracy()
            .probe_candidates
            .iter()
            .find(|c| c.placement == model.probe())
            .expect("the probe is a candidate");
        assert!(
            model
                .accuracy()
                .probe_candidates
                .iter()
                .all(|c| chosen.error.mean <= c.error.mean)
        );
        // Each behaviour has a sibling family, so held-out error is small.
        assert!(
            evaluation.forest.accuracy.overall().mean < 5.0,
            "{:?}",
            evaluation.forest.accuracy.overall()
        );
        assert_eq!(model.provenance(), crate::data::Provenance::Simulated);
        assert_eq!(model.training().workloads, 36);
        assert_eq!(model.training().counters, vec!["ipc".to_owned()]);
    }

    #[test]
    fn a_family_unlike_any_other_is_not_predicted_from_itself() {
        // "hates" has a single family: if cross-validation leaked, the forest would have seen
        // its siblings and predict it as well as the others.
        let data = test_data::dataset(&["flat-a", "flat-b", "scales-a", "scales-b", "hates-a"], 6);
        let opts = TrainOptions {
            counters_as_inputs: false,
            ..options(20)
        };
        let evaluation = crate::evaluation::evaluate(&data, &opts).expect("evaluates");
        let rows_of = |family: &str| -> Vec<usize> {
            (0..evaluation.rows.len())
                .filter(|&r| evaluation.rows[r].family == family)
                .collect()
        };
        let lonely = evaluation
            .forest
            .accuracy
            .rows(&rows_of("hates-a"))
            .expect("rows");
        let sibling = evaluation
            .forest
            .accuracy
            .rows(&rows_of("flat-a"))
            .expect("rows");
        assert!(lonely.mean > 10.0, "{lonely:?}");
        assert!(sibling.mean < 2.0, "{sibling:?}");
    }

    #[test]
    fn predictions_keep_measured_values_and_flag_novel_containers() {
        let (model, _) = fit(&test_data::standard(), &options(20)).expect("fits");
        let probe = model
            .placements()
            .iter()
            .position(|p| p.id == model.probe())
            .expect("probe");
        let with_ipc = |value: f64| Observation {
            value,
            spread: 0.0,
            counters: [("ipc".to_owned(), 1.1)].into(),
        };
        let typical = test_data_ratio(probe);
        let p = model
            .predict(&with_ipc(1000.0), &with_ipc(1000.0 * typical))
            .expect("ok");
        assert_eq!(p.placements[0].relative, 1.0);
        assert!(p.placements[0].measured && p.placements[probe].measured);
        assert!((p.placements[probe].relative - typical).abs() < 1e-12);
        assert!(p.novelty.is_none());
        assert!(p.category.is_some());
        assert_eq!(p.model_id, model.id());

        let odd = model
            .predict(&with_ipc(1000.0), &with_ipc(1000.0 * 7.0))
            .expect("ok");
        let warning = odd
            .novelty
            .expect("a ratio of 7 is like no training workload");
        assert_eq!(warning.probe_ratio, 7.0);
        assert_eq!(odd.category, None);
    }

    /// The "scales" behaviour's ratio in `probe` (test_data's vectors with no jitter).
    fn test_data_ratio(probe: usize) -> f64 {
        [1.0, 1.5, 2.0, 1.2][probe]
    }

    #[test]
    fn predictions_need_the_counters_the_model_was_trained_with() {
        let (model, _) = fit(&test_data::standard(), &options(5)).expect("fits");
        let bare = Observation {
            value: 1.0,
            ..Observation::default()
        };
        assert!(matches!(
            model.predict(&bare, &bare),
            Err(PredictError::Observation(
                ObservationError::MissingCounter {
                    observed_in: ObservedIn::Baseline,
                    ..
                }
            ))
        ));
        let zero = Observation {
            value: 0.0,
            ..Observation::default()
        };
        assert!(matches!(
            model.predict(&zero, &bare),
            Err(PredictError::Observation(
                ObservationError::NotPositive { .. }
            ))
        ));
    }

    #[test]
    fn an_unknown_baseline_is_refused() {
        let opts = TrainOptions {
            baseline: Some("p9".into()),
            ..options(5)
        };
        assert!(matches!(
            fit(&test_data::standard(), &opts),
            Err(TrainError::UnknownPlacement { id, .. }) if id == "p9"
        ));
    }

    #[test]
    fn one_placement_is_nothing_to_predict() {
        let data = Dataset::from_jsonl(
            &crate::data::tests::one_placement().join("\n"),
            std::path::Path::new("one.jsonl"),
        )
        .expect("valid data");
        assert!(matches!(
            fit(&data, &options(5)),
            Err(TrainError::TooFewPlacements { found: 1 })
        ));
        assert!(matches!(
            crate::evaluate(&data, &options(5)),
            Err(TrainError::TooFewPlacements { found: 1 })
        ));
    }

    #[test]
    fn the_same_seed_fits_the_same_model() {
        let a = fit(&test_data::standard(), &options(10)).expect("fits").0;
        let b = fit(&test_data::standard(), &options(10)).expect("fits").0;
        assert_eq!(a, b);
        assert_eq!(a.id(), b.id());
    }
}
