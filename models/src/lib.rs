//! `placed-models`: everything that turns training data into a predictor of a container's
//! performance in every important placement, from its performance in two of them (thesis
//! §2.4). This crate knows nothing of Linux: placements are ids and score vectors.
//!
//! # Layout
//!
//! - [`data`]: the training-data format (JSON lines), its validation, and merging the
//!   files of several hosts of one class ([`data::merge`]).
//! - [`features`]: observations and the features made from them, the same for training and
//!   prediction.
//! - [`forest`]: the joint multi-output random-forest regressor, behind linfa's traits.
//! - [`cv`]: leave-one-family-out folds.
//! - [`accuracy`]: absolute percentage errors, mean and worst.
//! - [`gate`]: the accuracy gate a model must pass to move containers.
//! - [`interval`]: prediction intervals calibrated on the held-out folds (conformal).
//! - [`check`]: a fitted model applied to data it was not trained on, partial production
//!   runs scored on the cells they measured.
//! - [`impute`]: partial production runs completed by a model, so a forest of whole vectors
//!   learns from them.
//! - [`live`]: decisions checked against what happened afterwards, and the live gate.
//! - [`categories`]: k-means categories, the category tree (linfa-trees), the iterative
//!   method (algorithm 4), novelty.
//! - [`evaluation`]: probe selection and the cross-validated comparison of the forest, the
//!   category mean and the counter baseline.
//! - [`train`]: fitting the final model, and the data as a linfa data set for experiments.
//! - [`model`]: a trained model and its predictions; [`model_file`] reads it and makes the
//!   text a model file holds (placed-train writes it, durably, through placed-host).
//! - [`sizes`]: one model across container sizes, measured by leaving one size out;
//!   [`sizes_model`] is that model as a file the daemon predicts with, and [`size_search`]
//!   chooses the fewest sizes to collect for it.
//! - [`resources`]: placements described by the share of any machine they use;
//!   [`classes`] measures one model across machine classes by leaving one class out, and
//!   [`classes_model`] is that model as a file the daemon predicts with on a host of a
//!   class nobody trained.
//! - [`predictor`]: what the daemon predicts with, any kind of model.
//!
//! Internally, `across` is what the models across sizes and across classes share, `table` arranges a data set as matrices, `probe` selects the probe, and
//! `test_data` holds small hand-made data sets for unit tests.
//!
//! # Use from the daemon
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use placed_models::{MachineClass, Model, Observation};
//! let machine = MachineClass { fingerprint: "…".into(), v: 16 };
//! let model = Model::load_for("model.json".as_ref(), &machine)?;
//! // Measure the container in model.baseline(), then in model.probe().
//! let baseline = Observation { value: 1000.0, spread: 10.0, ..Default::default() };
//! let probe = Observation { value: 1200.0, spread: 12.0, ..Default::default() };
//! let prediction = model.predict(&baseline, &probe)?;
//! if prediction.novelty.is_some() { /* no training workload behaved like this */ }
//! # Ok(()) }
//! ```

pub mod accuracy;
mod across;
pub mod categories;
pub mod check;
pub mod classes;
pub mod classes_model;
pub mod cv;
pub mod data;
mod dominance;
pub mod evaluation;
#[cfg(feature = "fake")]
pub mod fake;
pub mod features;
pub mod forest;
mod forest_file;
pub mod gate;
pub mod hold_out;
pub mod impute;
pub mod interval;
pub mod json_error;
pub mod live;
pub mod model;
pub mod model_file;
pub mod predictor;
mod probe;
pub mod regular_file;
pub mod resources;
pub mod size_search;
pub mod sizes;
pub mod sizes_model;
pub mod spread_scale;
mod table;
#[cfg(test)]
mod test_data;
pub mod train;

pub use classes_model::ClassesModel;
pub use data::{Dataset, Provenance};
pub use evaluation::{Evaluation, evaluate};
pub use features::Observation;
pub use gate::{Gate, GateFailure};
pub use model::{MachineClass, Model, Prediction};
pub use model_file::{ModelFile, ModelFileError, train_command};
pub use predictor::Predictor;
pub use sizes_model::{SizedModel, SizesModel};
pub use table::RowInfo;
pub use train::{TrainOptions, fit, linfa_dataset};
