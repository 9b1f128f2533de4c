//! The model across machine classes as a file the daemon predicts with (docs/models.md,
//! "Across classes"): one forest over placements described by the share of the machine
//! they use ([`crate::resources`]), fitted on data of many machine classes, and made ready
//! for a host of any class with [`ClassesModel::for_host`].
//!
//! Its intervals come from leaving whole classes out: the 90% quantile of the held-out
//! classes' relative errors. It refuses a host shaped most like a class on which leaving it
//! out did worse than the category mean (no model at all): there it would be a guess
//! dressed as a prediction.

use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::across::nearest;
use crate::classes::{AcrossClasses, ClassesError, Corpus, quantile_of};
use crate::data::{PlacementInfo, Provenance};
use crate::dominance::Order;
use crate::forest::Forest;
use crate::forest_file::{self, ForestBody};
use crate::model::MachineClass;
use crate::model_file::{Head, ModelFileError};
use crate::resources::{ClassResources, ResourceDescriber, ResourcesError, machine_shape};
use crate::sizes_model::{AcrossForest, SizedModel};
use crate::spread_scale::SpreadScale;
use crate::train::TrainOptions;

/// The `format` field of a model-across-classes file.
pub const CLASSES_MODEL_FORMAT: &str = "placed-classes-model";
/// The version this build reads and writes.
pub const CLASSES_MODEL_VERSION: u32 = 1;

/// Everything the file's body holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ClassesBody {
    describer: ResourceDescriber,
    /// Where a host is probed: its placement described nearest this.
    probe_description: Vec<f64>,
    forest: Forest,
    provenance: Provenance,
    /// Workload runs over all classes.
    runs: usize,
    /// Each class held out in turn: for the record, and for refusing hosts like those it
    /// did worse on than no model.
    classes: Vec<HeldOutClassRecord>,
    /// The held-out relative errors' 90% quantile (a fraction).
    error_quantile: f64,
    /// Each cell's interval scaled by its spread. Files written before it was kept have
    /// none: their intervals are `error_quantile` everywhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    spread_scale: Option<SpreadScale>,
}

impl ForestBody for ClassesBody {
    const FORMAT: &'static str = CLASSES_MODEL_FORMAT;
    const VERSION: u32 = CLASSES_MODEL_VERSION;
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
        if self.classes.is_empty() {
            return Err("it records no machine classes".into());
        }
        if let Some(scale) = self.spread_scale.filter(|s| !s.is_valid()) {
            return Err(format!(
                "its spread scale (floor {}, quantile {}) scales no interval",
                scale.floor, scale.quantile
            ));
        }
        Ok(())
    }
}

/// A held-out class as the file keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldOutClassRecord {
    /// Machine-class fingerprint.
    pub fingerprint: String,
    /// Topology.
    pub topology: String,
    /// vCPUs of its data.
    pub v: u32,
    /// How its machine is shaped.
    pub shape: Vec<f64>,
    /// Its own model's mean error, %.
    pub own_mean: f64,
    /// The category mean's, %.
    pub category_mean: f64,
    /// The model across the other classes', %.
    pub across_mean: f64,
    /// Its worst cell, %.
    pub across_worst: f64,
    /// The share of its cells inside the interval calibrated on the other classes.
    pub coverage: f64,
}

impl HeldOutClassRecord {
    /// Whether the model across classes did worse on it than no model.
    pub fn worse_than_no_model(&self) -> bool {
        self.across_mean > self.category_mean
    }
}

/// A model across machine classes.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassesModel {
    body: ClassesBody,
    id: String,
    note: String,
}

/// Why a model across classes does not predict for a host.
#[derive(Debug, thiserror::Error)]
pub enum ForHostError {
    /// The host's resources do not match its placements.
    #[error("the host's resources: {0}")]
    Resources(#[from] ResourcesError),
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
    /// Leaving out the class most like this host, the model did worse than no model.
    #[error(
        "this host is shaped most like {like}, where the model across classes, not trained on it, was {across:.1}% off against {category_mean:.1}% for the category mean: worse than no model, so it does not predict here; train a model on this host"
    )]
    WorseThanNoModel {
        /// That class's topology.
        like: String,
        /// The model's mean error on it, %.
        across: f64,
        /// The category mean's, %.
        category_mean: f64,
    },
}

impl ClassesModel {
    /// Fits the model on a corpus, holding each class out in turn first so that the file
    /// records how well it does on a class it did not see.
    pub fn fit(
        corpus: &Corpus,
        options: &TrainOptions,
    ) -> Result<(Self, AcrossClasses), ClassesError> {
        let describer = ResourceDescriber::default();
        let (report, mut cells) = corpus.held_out(&describer, options)?;
        let error_quantile = quantile_of(&mut cells.errors);
        let spread_scale = Some(SpreadScale::calibrated(&mut cells.scores));
        let (forest, probe_description) = corpus.fit(&describer, options)?;
        let body = ClassesBody {
            describer,
            probe_description,
            forest,
            provenance: corpus.provenance(),
            runs: corpus.runs(),
            classes: report
                .classes
                .iter()
                .map(|c| HeldOutClassRecord {
                    fingerprint: c.fingerprint.clone(),
                    topology: c.topology.clone(),
                    v: c.v,
                    shape: c.shape.clone(),
                    own_mean: c.own.mean,
                    category_mean: c.category_mean.mean,
                    across_mean: c.across.mean,
                    across_worst: c.across.worst,
                    coverage: c.coverage,
                })
                .collect(),
            error_quantile,
            spread_scale,
        };
        let id = forest_file::body_id(&body).map_err(|e| ClassesError::Encode {
            reason: e.to_string(),
        })?;
        Ok((Self::from_body(body, id), report))
    }

    fn from_body(body: ClassesBody, id: String) -> Self {
        let note = format!(
            "across classes, not trained on this host: predicted by model {id}, trained on {} other machine classes, {} data; its intervals as wide as its errors on classes it did not see",
            body.classes.len(),
            body.provenance
        );
        Self { body, id, note }
    }

    /// Its id: the start of its body's SHA-256.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Where its training data came from.
    pub fn provenance(&self) -> Provenance {
        self.body.provenance
    }

    /// The relative error its intervals allow for where they do not scale with the spread.
    pub fn error_quantile(&self) -> f64 {
        self.body.error_quantile
    }

    /// How its intervals scale with each cell's spread, where they do.
    pub fn spread_scale(&self) -> Option<SpreadScale> {
        self.body.spread_scale
    }

    /// The classes it was trained on, each as it did held out.
    pub fn classes(&self) -> &[HeldOutClassRecord] {
        &self.body.classes
    }

    /// What every prediction it makes says.
    pub fn note(&self) -> &str {
        &self.note
    }

    /// The model made ready for containers of `v` vCPUs on a host of machine class
    /// `fingerprint`, whose important placements are `placements` (the first is the
    /// baseline) using `resources` of it.
    pub fn for_host(
        self: &Arc<Self>,
        fingerprint: &str,
        v: u32,
        resources: &ClassResources,
        placements: Vec<PlacementInfo>,
    ) -> Result<SizedModel, ForHostError> {
        let ids: Vec<&str> = placements.iter().map(|p| p.id.as_str()).collect();
        resources.check(&ids)?;
        let shape = machine_shape(&resources.machine);
        let like = self
            .body
            .classes
            .iter()
            .min_by(|a, b| distance(&a.shape, &shape).total_cmp(&distance(&b.shape, &shape)));
        if let Some(like) = like.filter(|c| c.worse_than_no_model()) {
            return Err(ForHostError::WorseThanNoModel {
                like: like.topology.clone(),
                across: like.across_mean,
                category_mean: like.category_mean,
            });
        }
        let described = self.body.describer.describe_all(resources, v);
        let order = Order::of(resources);
        let probe = nearest(&described, 0, &self.body.probe_description).ok_or(
            ForHostError::TooFewPlacements {
                v,
                found: placements.len(),
            },
        )?;
        Ok(SizedModel::new(
            Arc::clone(self) as Arc<dyn AcrossForest>,
            MachineClass {
                fingerprint: fingerprint.to_owned(),
                v,
            },
            format!("{}-classes-v{v}", self.id),
            placements,
            described,
            order,
            probe,
        ))
    }

    /// Reads and checks a model-across-classes file.
    pub fn load(path: &Path) -> Result<Self, ModelFileError> {
        let (body, id) = forest_file::load(path)?;
        Ok(Self::from_body(body, id))
    }

    pub(crate) fn from_file_text(
        text: &str,
        path: &Path,
        head: &Head,
    ) -> Result<Self, ModelFileError> {
        let (body, id) = forest_file::read(text, path, head)?;
        Ok(Self::from_body(body, id))
    }

    /// The model file's content, written as model files are.
    pub fn file_text(&self) -> Result<String, serde_json::Error> {
        forest_file::text(&self.body)
    }
}

impl AcrossForest for ClassesModel {
    fn forest(&self) -> &Forest {
        &self.body.forest
    }
    fn error_quantile(&self) -> f64 {
        self.body.error_quantile
    }
    fn half_width(&self, relative_spread: f64) -> f64 {
        self.body
            .spread_scale
            .map_or(self.body.error_quantile, |s| s.half_width(relative_spread))
    }
    fn provenance(&self) -> Provenance {
        self.body.provenance
    }
    fn trained_sizes(&self) -> Option<&[u32]> {
        None
    }
    fn across_classes(&self) -> Option<&str> {
        Some(&self.note)
    }
}

fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predictor::Predictor;
    use crate::test_data::{class, quick_options};
    use crate::{Observation, model_file::ModelFile};

    fn fitted() -> (Arc<ClassesModel>, AcrossClasses) {
        let corpus = Corpus::new(&[class(2), class(4), class(8)], &quick_options()).unwrap();
        let (model, report) = ClassesModel::fit(&corpus, &quick_options()).unwrap();
        (Arc::new(model), report)
    }

    /// The fitted model taken as better than no model on every class (on this toy corpus of
    /// three classes some held out do worse than the category mean; refusing those is
    /// tested below), made ready for a three-node machine: no class of the corpus has three
    /// nodes.
    fn ready_for_three_nodes(fitted: &ClassesModel) -> (Arc<ClassesModel>, SizedModel) {
        let mut body = fitted.body.clone();
        for c in &mut body.classes {
            c.category_mean = c.across_mean + 1.0;
        }
        let model = Arc::new(ClassesModel::from_body(body, fitted.id.clone()));
        let host = class(3);
        let ready = model
            .for_host(
                "never-trained",
                8,
                host.resources().unwrap(),
                host.header().placements.clone(),
            )
            .unwrap();
        (model, ready)
    }

    #[test]
    fn a_host_of_a_class_never_trained_gets_labelled_predictions_with_intervals() {
        let (fitted, report) = fitted();
        assert_eq!(fitted.classes().len(), report.classes.len());
        assert!(fitted.error_quantile() > 0.0);
        let (model, ready) = ready_for_three_nodes(&fitted);
        let host = class(3);
        assert_eq!(ready.machine().fingerprint, "never-trained");
        assert_eq!(ready.baseline(), "n1-c4");
        let note = ready.across_classes().expect("says it is across classes");
        assert!(
            note.starts_with("across classes, not trained on this host"),
            "{note}"
        );
        assert!(note.contains("SIMULATED"), "{note}");
        assert!(ready.trained_sizes().is_none());
        let base = Observation {
            value: 1000.0,
            ..Default::default()
        };
        let probe = Observation {
            value: 1100.0,
            ..Default::default()
        };
        let p = ready.predict(&base, &probe).unwrap();
        assert_eq!(p.provenance, Provenance::Simulated);
        assert!(p.model_id.starts_with(model.id()));
        let predicted: Vec<_> = p.placements.iter().filter(|c| !c.measured).collect();
        assert_eq!(predicted.len(), host.header().placements.len() - 2);
        for c in &predicted {
            let i = c.interval.expect("every predicted cell has an interval");
            assert!(i.low < c.relative && c.relative < i.high, "{c:?}");
        }
        // Each cell's interval is as wide as its trees disagree, in proportion.
        let scale = model
            .spread_scale()
            .expect("intervals scale with the spread");
        for c in &predicted {
            let i = c.interval.unwrap();
            let expected = scale.half_width(c.spread / c.relative);
            let half = c.relative / i.low - 1.0;
            assert!(
                (half - expected).abs() < 1e-9,
                "{c:?}: {half} against {expected}"
            );
        }
        let widest = predicted
            .iter()
            .max_by(|a, b| (a.spread / a.relative).total_cmp(&(b.spread / b.relative)))
            .unwrap();
        let narrowest = predicted
            .iter()
            .min_by(|a, b| (a.spread / a.relative).total_cmp(&(b.spread / b.relative)))
            .unwrap();
        let ratio = |c: &crate::model::PlacementPrediction| {
            let i = c.interval.unwrap();
            i.high / i.low
        };
        assert!(ratio(widest) > ratio(narrowest), "{widest:?} {narrowest:?}");
    }

    #[test]
    fn no_prediction_crosses_what_was_measured_in_a_placement_no_better() {
        let (fitted, _) = fitted();
        let (_, ready) = ready_for_three_nodes(&fitted);
        assert_eq!(ready.baseline(), "n1-c4");
        assert_eq!(ready.probe(), "n2-c8");
        let value = |value| Observation {
            value,
            ..Default::default()
        };
        // The probe's two nodes ran at 0.3 x the baseline. The forest, trained on classes
        // where fewer cores never helped, still says 1.0 for the same two nodes with half
        // the cores; that placement has nothing the probe lacks, so it is held at 0.3.
        let p = ready.predict(&value(1000.0), &value(300.0)).unwrap();
        let fewer_cores = p.placements.iter().find(|c| c.id == "n2-c4").unwrap();
        assert!(!fewer_cores.measured);
        assert!(fewer_cores.relative <= 0.3 + 1e-9, "{fewer_cores:?}");
        // Other placements are the forest's.
        let more_nodes = p.placements.iter().find(|c| c.id == "n3-c4").unwrap();
        assert!(more_nodes.relative > 0.3, "{more_nodes:?}");
    }

    #[test]
    fn a_host_like_a_class_it_did_worse_on_than_no_model_is_refused() {
        let (model, _) = fitted();
        let mut worse = (*model).clone();
        for c in &mut worse.body.classes {
            c.across_mean = c.category_mean + 1.0;
        }
        let host = class(4);
        let e = Arc::new(worse)
            .for_host(
                "x",
                8,
                host.resources().unwrap(),
                host.header().placements.clone(),
            )
            .unwrap_err();
        assert!(matches!(e, ForHostError::WorseThanNoModel { .. }), "{e}");
        assert!(e.to_string().contains("worse than no model"), "{e}");
        // Resources that are not the placements'.
        let other = class(8);
        let e = model
            .for_host(
                "x",
                8,
                other.resources().unwrap(),
                host.header().placements.clone(),
            )
            .unwrap_err();
        assert!(matches!(e, ForHostError::Resources(_)), "{e}");
    }

    #[test]
    fn the_file_reads_back_as_the_same_model() {
        let (model, _) = fitted();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("classes.json");
        std::fs::write(&path, model.file_text().unwrap()).unwrap();
        let ModelFile::AcrossClasses(back) = ModelFile::load(&path).unwrap() else {
            panic!("read as another kind");
        };
        assert_eq!(*back, *model);
        // A file written before intervals scaled with the spread has no such field, and
        // still loads: its intervals are its error quantile everywhere.
        let mut before = model.body.clone();
        before.spread_scale = None;
        let text = forest_file::text(&before).unwrap();
        assert!(!text.contains("spread_scale"));
        let old = dir.path().join("old.json");
        std::fs::write(&old, text).unwrap();
        let old = ClassesModel::load(&old).unwrap();
        assert_eq!(old.spread_scale(), None);
        assert_eq!(old.half_width(0.3), old.error_quantile());
        // A scale that scales nothing is refused by name, checksum or not.
        let mut broken = model.body.clone();
        broken.spread_scale = Some(SpreadScale {
            floor: 0.0,
            quantile: 1.0,
        });
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, forest_file::text(&broken).unwrap()).unwrap();
        let e = ClassesModel::load(&bad).unwrap_err();
        assert!(matches!(e, ModelFileError::Inconsistent { .. }), "{e}");
        assert!(e.to_string().contains("spread scale"), "{e}");
        // A damaged file is refused by its checksum.
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replacen("\"runs\":", "\"runs\":1", 1);
        std::fs::write(&path, text).unwrap();
        assert!(matches!(
            ClassesModel::load(&path),
            Err(ModelFileError::ChecksumMismatch { .. })
        ));
    }
}
