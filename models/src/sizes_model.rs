//! The model across sizes as a file the daemon predicts with (docs/models.md, "Across
//! sizes"): one forest over placements described by their resources
//! ([`crate::sizes::Describer`]), fitted on data of several container sizes of one machine
//! class, and made ready for any size of that class with [`SizesModel::for_size`].
//!
//! Its predictions carry intervals from the leave-one-size-out errors: the 90% quantile of
//! the held-out sizes' relative errors (split-conformal rank), so the daemon's lower-bound and third-measurement
//! rules treat a size the model never saw as uncertain as those sizes were.

use std::path::Path;
use std::sync::Arc;

use ndarray::Array1;
use serde::{Deserialize, Serialize};

use crate::across::{nearest, row_features};
use crate::data::{Dataset, PlacementInfo, Provenance};
use crate::dominance::Order;
use crate::evaluation::Evaluation;
use crate::features::Observation;
use crate::forest::Forest;
use crate::forest_file::{self, ForestBody};
use crate::gate::GateFailure;
use crate::interval::{Interval, conformal_quantile};
use crate::model::{MachineClass, PlacementPrediction, PredictError, Prediction};
use crate::model_file::{Head, ModelFileError};
use crate::predictor::Predictor;
use crate::sizes::{ACROSS_LEVEL, AcrossSizes, Describer, HeldOutSize, Prepared, SizesError};
use crate::spread_scale::relative_spread;
use crate::train::TrainOptions;

/// The `format` field of a model-across-sizes file.
pub const SIZES_MODEL_FORMAT: &str = "placed-sizes-model";
/// The version this build reads and writes.
pub const SIZES_MODEL_VERSION: u32 = 1;

/// Everything the file's body holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct SizesBody {
    fingerprint: String,
    concerns: Vec<String>,
    /// The sizes trained on, smallest first.
    sizes: Vec<u32>,
    describer: Describer,
    /// Where a size is probed: its placement described nearest this.
    probe_description: Vec<f64>,
    forest: Forest,
    provenance: Provenance,
    /// Workload runs over all sizes.
    runs: usize,
    /// Each size held out in turn, for the record and for `placed-train sizes`.
    held_out: Vec<HeldOutSizeRecord>,
    /// The held-out relative errors' [`ACROSS_LEVEL`] quantile (a fraction).
    error_quantile: f64,
}

impl ForestBody for SizesBody {
    const FORMAT: &'static str = SIZES_MODEL_FORMAT;
    const VERSION: u32 = SIZES_MODEL_VERSION;
    fn description_width(&self) -> usize {
        self.describer.width()
    }
    fn probe_description(&self) -> &[f64] {
        &self.probe_description
    }
    fn forest(&self) -> &Forest {
        &self.forest
    }
    fn error_quantile(&self) -> f64 {
        self.error_quantile
    }
    fn check(&self) -> Result<(), String> {
        if self.describer.largest.len() != self.concerns.len() {
            return Err("its placement description does not match its concerns".into());
        }
        if self.sizes.is_empty() {
            return Err("it records no sizes".into());
        }
        Ok(())
    }
}

/// [`HeldOutSize`] as the file keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct HeldOutSizeRecord {
    v: u32,
    per_size_mean: f64,
    across_mean: f64,
    across_worst: f64,
}

impl From<&HeldOutSize> for HeldOutSizeRecord {
    fn from(h: &HeldOutSize) -> Self {
        Self {
            v: h.v,
            per_size_mean: h.per_size.mean,
            across_mean: h.across.mean,
            across_worst: h.across.worst,
        }
    }
}

/// A model across container sizes of one machine class.
#[derive(Debug, Clone, PartialEq)]
pub struct SizesModel {
    body: SizesBody,
    id: String,
}

/// Why a model across sizes cannot predict for a size.
#[derive(Debug, thiserror::Error)]
pub enum ForSizeError {
    /// The placements' scores do not match the model's concerns.
    #[error("placement {id} has {found} scores, the model's machine class has {expected} concerns")]
    Scores {
        /// The placement.
        id: String,
        /// Its scores.
        found: usize,
        /// The model's concerns.
        expected: usize,
    },
    /// A model needs a probe beside the baseline.
    #[error(
        "containers of {v} vCPUs have {found} important placement(s): no probe beside the baseline"
    )]
    TooFewPlacements {
        /// The size.
        v: u32,
        /// Placements it has.
        found: usize,
    },
}

impl SizesModel {
    /// Fits the model on data of several sizes, holding each out in turn first so that the
    /// file records how well it does on a size it did not see.
    pub fn fit(
        data: &[Dataset],
        options: &TrainOptions,
    ) -> Result<(Self, AcrossSizes), SizesError> {
        Self::fit_prepared(&Prepared::new(data, options)?, options)
    }

    /// [`Self::fit`] for sizes already cross-validated: `evaluations[i]` is
    /// [`crate::sizes::evaluate_size`]'s of `data[i]` with the same options (the size
    /// search has them).
    pub fn fit_evaluated(
        data: &[Dataset],
        evaluations: Vec<Evaluation>,
        options: &TrainOptions,
    ) -> Result<(Self, AcrossSizes), SizesError> {
        Self::fit_prepared(&Prepared::evaluated(data, evaluations)?, options)
    }

    fn fit_prepared(
        prepared: &Prepared,
        options: &TrainOptions,
    ) -> Result<(Self, AcrossSizes), SizesError> {
        let (report, mut errors) = prepared.held_out(options)?;
        // Too few held-out cells for the rank: the worst of them.
        let error_quantile = conformal_quantile(&mut errors, ACROSS_LEVEL)
            .or_else(|| errors.iter().copied().max_by(f64::total_cmp))
            .unwrap_or(0.0);
        let forest = prepared.fit(options)?;
        let body = SizesBody {
            fingerprint: prepared.fingerprint.clone(),
            concerns: prepared.concerns.clone(),
            sizes: prepared.vs(),
            describer: prepared.describer.clone(),
            probe_description: prepared.probe_description(),
            forest,
            provenance: prepared.provenance,
            runs: prepared.runs(),
            held_out: report.sizes.iter().map(HeldOutSizeRecord::from).collect(),
            error_quantile,
        };
        let id = forest_file::body_id(&body).map_err(|e| SizesError::Encode {
            reason: e.to_string(),
        })?;
        Ok((Self { id, body }, report))
    }

    /// Its id: the start of its body's SHA-256.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The machine class.
    pub fn fingerprint(&self) -> &str {
        &self.body.fingerprint
    }

    /// The sizes it was trained on, smallest first.
    pub fn sizes(&self) -> &[u32] {
        &self.body.sizes
    }

    /// Where its training data came from.
    pub fn provenance(&self) -> Provenance {
        self.body.provenance
    }

    /// The relative error its intervals allow for (the held-out sizes' 90% quantile).
    pub fn error_quantile(&self) -> f64 {
        self.body.error_quantile
    }

    /// The model made ready for containers of `v` vCPUs whose important placements are
    /// `placements` (the first is the baseline, as in training data).
    pub fn for_size(
        self: &Arc<Self>,
        v: u32,
        placements: Vec<PlacementInfo>,
    ) -> Result<SizedModel, ForSizeError> {
        let expected = self.body.concerns.len();
        if let Some(p) = placements.iter().find(|p| p.scores.len() != expected) {
            return Err(ForSizeError::Scores {
                id: p.id.clone(),
                found: p.scores.len(),
                expected,
            });
        }
        let described: Vec<Vec<f64>> = placements
            .iter()
            .map(|p| self.body.describer.describe(p, v))
            .collect();
        let probe = nearest(&described, 0, &self.body.probe_description).ok_or(
            ForSizeError::TooFewPlacements {
                v,
                found: placements.len(),
            },
        )?;
        Ok(SizedModel {
            machine: MachineClass {
                fingerprint: self.body.fingerprint.clone(),
                v,
            },
            id: format!("{}-v{v}", self.id),
            model: Arc::clone(self) as Arc<dyn AcrossForest>,
            placements,
            described,
            // Concern scores do not say which placement is no better than which.
            order: Order::default(),
            probe,
        })
    }

    /// Reads and checks a model-across-sizes file.
    pub fn load(path: &Path) -> Result<Self, ModelFileError> {
        let (body, id) = forest_file::load(path)?;
        Ok(Self { body, id })
    }

    pub(crate) fn from_file_text(
        text: &str,
        path: &Path,
        head: &Head,
    ) -> Result<Self, ModelFileError> {
        let (body, id) = forest_file::read(text, path, head)?;
        Ok(Self { body, id })
    }

    /// The model file's content, written as model files are ([`Model::file_text`]).
    ///
    /// [`Model::file_text`]: crate::Model::file_text
    pub fn file_text(&self) -> Result<String, serde_json::Error> {
        forest_file::text(&self.body)
    }
}

/// What a model across sizes or across classes lends the host it is made ready for.
pub(crate) trait AcrossForest: std::fmt::Debug + Send + Sync {
    /// The forest over described placements.
    fn forest(&self) -> &Forest;
    /// The relative error its intervals allow for.
    fn error_quantile(&self) -> f64;
    /// The relative error a cell's interval allows for, where the forest's trees spread
    /// by `relative_spread` (their deviation over their mean): the error quantile unless
    /// the model scales its intervals by the spread.
    fn half_width(&self, _relative_spread: f64) -> f64 {
        self.error_quantile()
    }
    /// Where its training data came from.
    fn provenance(&self) -> Provenance;
    /// The sizes it was trained on, for a model across sizes.
    fn trained_sizes(&self) -> Option<&[u32]>;
    /// What a model across classes says in every prediction.
    fn across_classes(&self) -> Option<&str>;
}

impl AcrossForest for SizesModel {
    fn forest(&self) -> &Forest {
        &self.body.forest
    }
    fn error_quantile(&self) -> f64 {
        self.body.error_quantile
    }
    fn provenance(&self) -> Provenance {
        self.body.provenance
    }
    fn trained_sizes(&self) -> Option<&[u32]> {
        Some(&self.body.sizes)
    }
    fn across_classes(&self) -> Option<&str> {
        None
    }
}

/// A model across sizes or across classes made ready for one size of one host: its
/// placements described, its probe chosen.
#[derive(Debug, Clone)]
pub struct SizedModel {
    model: Arc<dyn AcrossForest>,
    machine: MachineClass,
    id: String,
    placements: Vec<PlacementInfo>,
    described: Vec<Vec<f64>>,
    order: Order,
    probe: usize,
}

/// How far above a prediction its interval reaches at most: a quantile of 100% relative
/// error or more bounds nothing, and a state file cannot hold infinity.
const MAX_HIGH: f64 = 10.0;

impl SizedModel {
    /// Made ready from a model's parts: `described[0]` is the baseline's description.
    pub(crate) fn new(
        model: Arc<dyn AcrossForest>,
        machine: MachineClass,
        id: String,
        placements: Vec<PlacementInfo>,
        described: Vec<Vec<f64>>,
        order: Order,
        probe: usize,
    ) -> Self {
        Self {
            model,
            machine,
            id,
            placements,
            described,
            order,
            probe,
        }
    }

    fn interval(&self, predicted: f64, q: f64) -> Interval {
        let high = if q < 1.0 - 1.0 / MAX_HIGH {
            predicted / (1.0 - q)
        } else {
            predicted * MAX_HIGH
        };
        Interval {
            low: predicted / (1.0 + q),
            high,
            level: ACROSS_LEVEL,
        }
    }
}

impl Predictor for SizedModel {
    fn id(&self) -> &str {
        &self.id
    }
    fn machine(&self) -> &MachineClass {
        &self.machine
    }
    fn placements(&self) -> &[PlacementInfo] {
        &self.placements
    }
    fn baseline(&self) -> &str {
        &self.placements[0].id
    }
    fn probe(&self) -> &str {
        &self.placements[self.probe].id
    }
    fn provenance(&self) -> Provenance {
        self.model.provenance()
    }
    fn below_gate(&self) -> Option<&GateFailure> {
        None
    }
    fn trained_sizes(&self) -> Option<&[u32]> {
        self.model.trained_sizes()
    }
    fn across_classes(&self) -> Option<&str> {
        self.model.across_classes()
    }

    fn predict(
        &self,
        baseline: &Observation,
        probe: &Observation,
    ) -> Result<Prediction, PredictError> {
        let (ratio, ratio_uncertainty) = probe.ratio_over(baseline);
        let base = &self.described[0];
        let placements = self
            .placements
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let (relative, spread, measured, half_width) = if i == 0 {
                    (1.0, 0.0, true, 0.0)
                } else if i == self.probe {
                    (ratio, ratio * ratio_uncertainty, true, 0.0)
                } else {
                    let x =
                        row_features(base, &self.described[self.probe], ratio, &self.described[i]);
                    let out = self
                        .model
                        .forest()
                        .predict_with_spread(Array1::from(x).view())?;
                    let relative = self.order.bound(i, 0, self.probe, ratio, out.mean[0]);
                    let half_width = self
                        .model
                        .half_width(relative_spread(out.mean[0], out.spread[0]));
                    (relative, out.spread[0], false, half_width)
                };
                Ok(PlacementPrediction {
                    id: p.id.clone(),
                    relative,
                    spread,
                    measured,
                    interval: (!measured).then(|| self.interval(relative, half_width)),
                })
            })
            .collect::<Result<Vec<_>, PredictError>>()?;
        Ok(Prediction {
            model_id: self.id.clone(),
            provenance: self.model.provenance(),
            placements,
            // No categories across sizes or classes: a category is one size's performance
            // vector.
            category: None,
            novelty: None,
        })
    }
}

#[cfg(test)]
mod tests;
