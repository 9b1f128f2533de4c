//! A trained model for one machine class and one `v`, and the prediction it makes from a
//! container's two observations. Reading and writing model files is in
//! [`crate::model_file`].

use std::collections::BTreeMap;

use ndarray::ArrayView1;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::accuracy::ErrorSummary;
use crate::categories::Categories;
use crate::data::{PlacementInfo, Provenance};
use crate::features::{Feature, Observation, ObservationError, feature_vector};
use crate::forest::{Forest, ForestError, ForestValidParams, OutOfBag};
use crate::gate::GateFailure;
use crate::interval::{CALIBRATION_VERSION, Calibration, Interval};

/// What a model is for: a machine class and a container size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineClass {
    /// Machine-class fingerprint from the machine model.
    pub fingerprint: String,
    /// vCPUs per container.
    pub v: u32,
}

/// The training set a model was fitted on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainingSummary {
    /// Distinct workloads.
    pub workloads: usize,
    /// Workload runs (training rows).
    pub runs: usize,
    /// Runs per family.
    pub families: BTreeMap<String, usize>,
    /// Counters present in every record (used as inputs only if listed in the features).
    pub counters: Vec<String>,
    /// Forest hyperparameters of the final model.
    pub forest: ForestValidParams,
    /// Out-of-bag error of the final forest.
    pub out_of_bag: Option<OutOfBag>,
}

/// One probe candidate's cross-validated error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeCandidate {
    /// Placement id.
    pub placement: String,
    /// Error over the placements neither measured (baseline, this probe) in held-out
    /// families.
    pub error: ErrorSummary,
}

/// Cross-validated accuracy, leaving one family out at a time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CvAccuracy {
    /// Every probe candidate, the chosen one included.
    pub probe_candidates: Vec<ProbeCandidate>,
    /// The forest with the chosen probe.
    pub forest: ErrorSummary,
    /// The mean of the category the same two observations fit.
    pub category_mean: ErrorSummary,
    /// The iterative method (algorithm 4), which may measure more placements.
    pub iterative: ErrorSummary,
    /// The forest fed baseline-placement counters only; `None` without counters.
    pub counter_baseline: Option<ErrorSummary>,
}

/// Everything a model file's body holds; the file adds a format, a version and a checksum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ModelBody {
    pub(crate) machine: MachineClass,
    pub(crate) concerns: Vec<String>,
    pub(crate) placements: Vec<PlacementInfo>,
    pub(crate) baseline: String,
    pub(crate) probe: String,
    pub(crate) features: Vec<Feature>,
    pub(crate) provenance: Provenance,
    pub(crate) training: TrainingSummary,
    pub(crate) accuracy: CvAccuracy,
    pub(crate) categories: Categories,
    pub(crate) forest: Forest,
    /// Set when the model was installed although it failed the accuracy gate: the daemon
    /// then observes with it and never moves a container on its predictions. Absent (and
    /// not written) for a model that passed, so older files read and keep their ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) below_gate: Option<GateFailure>,
    /// Prediction intervals calibrated in cross-validation. Absent in files written before
    /// intervals (they load, and predict without intervals, keeping their ids); a layout
    /// other than [`CALIBRATION_VERSION`] is set aside on load the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) calibration: Option<Calibration>,
}

/// A trained model. Invariant (checked on load): the forest maps `features` to one output
/// per placement, categories have one interval per placement, and the baseline and probe
/// are placements of the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    pub(crate) body: ModelBody,
    baseline: usize,
    probe: usize,
    id: String,
}

/// Why a prediction could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PredictError {
    /// The observations do not fit the model's inputs.
    #[error(transparent)]
    Observation(#[from] ObservationError),
    /// The forest refused the features.
    #[error(transparent)]
    Forest(#[from] ForestError),
}

/// The prediction for one placement.
#[derive(Debug, Clone, PartialEq)]
pub struct PlacementPrediction {
    /// Placement id.
    pub id: String,
    /// Performance relative to the baseline placement.
    pub relative: f64,
    /// Uncertainty: standard deviation across trees, or for the two measured placements the
    /// measurement's own relative spread.
    pub spread: f64,
    /// Whether this value was measured (baseline and probe) rather than predicted.
    pub measured: bool,
    /// The calibrated interval of a predicted value; `None` for a measured one, or from a
    /// model without calibration.
    pub interval: Option<Interval>,
}

/// The observations fit no category: no training workload behaved like this container, so
/// the forest is extrapolating. The daemon may measure a third placement.
#[derive(Debug, Clone, PartialEq)]
pub struct NoveltyWarning {
    /// The probe's observed performance relative to the baseline.
    pub probe_ratio: f64,
    /// The category whose interval is nearest.
    pub nearest_category: usize,
    /// That category's interval at the probe, `(low, high)`.
    pub nearest_interval: (f64, f64),
}

/// A container's predicted performance vector.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// The model that made it ([`Model::id`]).
    pub model_id: String,
    /// Where the model's training data came from; `Simulated` must be shown as such.
    pub provenance: Provenance,
    /// One entry per important placement, in the model's order.
    pub placements: Vec<PlacementPrediction>,
    /// The category the observations fit best, `None` when novel.
    pub category: Option<usize>,
    /// Set when the observations fit no category.
    pub novelty: Option<NoveltyWarning>,
}

impl Model {
    /// Checks a body (from a file or just trained) and wraps it; `id` derives from its
    /// serialised bytes.
    pub(crate) fn from_body(mut body: ModelBody, id: String) -> Result<Self, String> {
        // Names come from training data, which bounds them; a file past that bound was not
        // written by placed-train, and its names would make messages of any length.
        let counters = body.features.iter().filter_map(|f| match f {
            Feature::Counter { name, .. } => Some(name.as_str()),
            Feature::ProbeRatio => None,
        });
        let names = [
            body.machine.fingerprint.as_str(),
            body.baseline.as_str(),
            body.probe.as_str(),
        ]
        .into_iter()
        .chain(body.concerns.iter().map(String::as_str))
        .chain(body.placements.iter().map(|p| p.id.as_str()))
        .chain(counters);
        for name in names {
            let length = name.chars().count();
            if length > crate::data::MAX_NAME {
                return Err(format!(
                    "a name of {length} characters ({:?}), more than {}",
                    crate::json_error::clip(name, 40),
                    crate::data::MAX_NAME
                ));
            }
        }
        let index = |id: &str| {
            body.placements
                .iter()
                .position(|p| p.id == id)
                .ok_or_else(|| format!("placement {id:?} is not one of the model's"))
        };
        let baseline = index(&body.baseline)?;
        let probe = index(&body.probe)?;
        if baseline == probe {
            return Err("the probe is the baseline".into());
        }
        body.forest
            .check(body.features.len(), body.placements.len())
            .map_err(|e| e.to_string())?;
        body.categories.check(body.placements.len())?;
        if let Some(c) = &body.calibration {
            if c.version == CALIBRATION_VERSION {
                c.check(body.placements.len())?;
            } else {
                // The id covers the bytes as read, so setting it aside changes nothing
                // the daemon compares.
                tracing::warn!(
                    version = c.version,
                    supported = CALIBRATION_VERSION,
                    "the model's interval calibration has a layout this build does not read: predicting without intervals"
                );
                body.calibration = None;
            }
        }
        Ok(Self {
            body,
            baseline,
            probe,
            id,
        })
    }

    /// Wraps a freshly trained body, deriving its id from its serialised bytes as a file
    /// would.
    pub(crate) fn from_trained(body: ModelBody) -> Result<Self, String> {
        let bytes = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
        Self::from_body(body, id_of(&bytes))
    }

    /// Short id of the model: the start of its body's SHA-256.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The machine class and `v` it is for.
    pub fn machine(&self) -> &MachineClass {
        &self.body.machine
    }

    /// Concern names, in score order.
    pub fn concerns(&self) -> &[String] {
        &self.body.concerns
    }

    /// The important placements it predicts, in output order.
    pub fn placements(&self) -> &[PlacementInfo] {
        &self.body.placements
    }

    /// Placement id to measure first.
    pub fn baseline(&self) -> &str {
        &self.body.baseline
    }

    /// Placement id to measure second.
    pub fn probe(&self) -> &str {
        &self.body.probe
    }

    /// Its inputs.
    pub fn features(&self) -> &[Feature] {
        &self.body.features
    }

    /// Where its training data came from.
    pub fn provenance(&self) -> Provenance {
        self.body.provenance
    }

    /// Its training set.
    pub fn training(&self) -> &TrainingSummary {
        &self.body.training
    }

    /// Its cross-validated accuracy.
    pub fn accuracy(&self) -> &CvAccuracy {
        &self.body.accuracy
    }

    /// Why the model failed the accuracy gate, when it was installed over it
    /// (`--accept-inaccurate`): such a model must not move containers.
    pub fn below_gate(&self) -> Option<&GateFailure> {
        self.body.below_gate.as_ref()
    }

    /// The same model marked as accepted below the gate; its id changes with its body.
    pub fn accepted_below_gate(mut self, failure: GateFailure) -> Result<Self, String> {
        self.body.below_gate = Some(failure);
        Self::from_trained(self.body)
    }

    /// Its interval calibration, `None` for a model trained before intervals.
    pub fn calibration(&self) -> Option<&Calibration> {
        self.body.calibration.as_ref()
    }

    /// Its performance categories.
    pub fn categories(&self) -> &Categories {
        &self.body.categories
    }

    /// Predicts performance in every placement from the container's performance in the
    /// baseline and the probe placement.
    pub fn predict(
        &self,
        baseline: &Observation,
        probe: &Observation,
    ) -> Result<Prediction, PredictError> {
        let x = feature_vector(&self.body.features, baseline, probe)?;
        let forest = self
            .body
            .forest
            .predict_with_spread(ArrayView1::from(&x[..]))?;
        let (ratio, ratio_uncertainty) = probe.ratio_over(baseline);
        let placements = self
            .body
            .placements
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let (relative, spread, measured) = if i == self.baseline {
                    (1.0, 0.0, true)
                } else if i == self.probe {
                    (ratio, ratio * ratio_uncertainty, true)
                } else {
                    (forest.mean[i], forest.spread[i], false)
                };
                let interval = if measured {
                    None
                } else {
                    self.body
                        .calibration
                        .as_ref()
                        .and_then(|c| c.interval(i, relative, spread))
                };
                PlacementPrediction {
                    id: p.id.clone(),
                    relative,
                    spread,
                    measured,
                    interval,
                }
            })
            .collect();
        let categories = &self.body.categories;
        let class = categories.classify(self.probe, ratio, ratio_uncertainty);
        let novelty = class.novel.then(|| {
            let c = &categories.all()[class.category];
            NoveltyWarning {
                probe_ratio: ratio,
                nearest_category: class.category,
                nearest_interval: (c.low[self.probe], c.high[self.probe]),
            }
        });
        let category = (!class.novel).then_some(class.category);
        Ok(Prediction {
            model_id: self.id.clone(),
            provenance: self.body.provenance,
            placements,
            category,
            novelty,
        })
    }
}

/// A model id from the bytes of its body.
pub(crate) fn id_of(body: &[u8]) -> String {
    sha256_hex(body)[..16].to_owned()
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
