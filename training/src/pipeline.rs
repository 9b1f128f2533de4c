//! The whole loop on one command: collect (resuming), fit and evaluate, and install the
//! model where the daemon's model library finds it (docs/training.md, "The whole loop").

use std::path::{Path, PathBuf};

use placed_models::data::DataError;
use placed_models::train::TrainError;
use placed_models::{Dataset, Evaluation, MachineClass, Model, ModelFileError, TrainOptions, fit};

use crate::collect::{self, CollectError, Job, Summary};

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    Collect(#[from] CollectError),
    #[error(
        "this host has a single important placement for v = {v} ({placement}): every container of that size runs the same way here, so there is nothing to predict and no model can be fit. The data in {data} is kept; train on a host with several NUMA nodes"
    )]
    NothingToPredict {
        v: u32,
        placement: String,
        data: PathBuf,
    },
    #[error(
        "{count} measurement(s) were skipped (first: {first}); run the same command again to retry them before fitting"
    )]
    Incomplete { count: usize, first: String },
    #[error(transparent)]
    Data(#[from] DataError),
    #[error("fitting the model")]
    Train(#[from] TrainError),
    #[error("cannot create the model directory {path}")]
    ModelDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    ModelFile(#[from] ModelFileError),
}

/// What the loop produced.
#[derive(Debug)]
pub struct Trained {
    pub collection: Summary,
    pub model: Model,
    pub evaluation: Evaluation,
    pub installed: PathBuf,
}

/// The file name the model gets in the model directory: one per machine class and `v`, so
/// retraining replaces the model the daemon uses.
pub fn model_file_name(fingerprint: &str, v: u32) -> String {
    format!("{fingerprint}-v{v}.json")
}

/// Collects into `options.out`, then fits, evaluates and installs into `model_dir`.
pub fn train(
    jobs: &[Box<dyn Job>],
    options: &collect::Options,
    train: &TrainOptions,
    model_dir: &Path,
) -> Result<Trained, PipelineError> {
    // The data file defaults to living beside the models.
    std::fs::create_dir_all(model_dir).map_err(|source| PipelineError::ModelDir {
        path: model_dir.to_owned(),
        source,
    })?;
    let collection = collect::collect(jobs, options)?;
    if let [only] = collection.header.placements.as_slice() {
        return Err(PipelineError::NothingToPredict {
            v: collection.header.v,
            placement: only.id.clone(),
            data: options.out.clone(),
        });
    }
    if let Some(first) = collection.skipped.first() {
        return Err(PipelineError::Incomplete {
            count: collection.skipped.len(),
            first: first.clone(),
        });
    }
    let data = Dataset::load(&options.out)?;
    let (model, evaluation) = fit(&data, train)?;
    let installed = install(&model, model_dir)?;
    Ok(Trained {
        collection,
        model,
        evaluation,
        installed,
    })
}

/// Writes the model into `dir` atomically (Model::save) and reads it back as the daemon
/// will, for its machine class.
pub fn install(model: &Model, dir: &Path) -> Result<PathBuf, PipelineError> {
    std::fs::create_dir_all(dir).map_err(|source| PipelineError::ModelDir {
        path: dir.to_owned(),
        source,
    })?;
    let class = model.machine().clone();
    let path = dir.join(model_file_name(&class.fingerprint, class.v));
    model.save(&path)?;
    let back = Model::load_for(&path, &MachineClass { ..class })?;
    debug_assert_eq!(back.id(), model.id());
    Ok(path)
}
