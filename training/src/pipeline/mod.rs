//! The whole loop on one command: collect (resuming), fit and evaluate, and install the
//! model where the daemon's model library finds it (docs/training.md, "The whole loop").

use std::path::{Path, PathBuf};

use placed_models::data::DataError;
use placed_models::train::TrainError;
use placed_models::{
    Dataset, Evaluation, Gate, GateFailure, MachineClass, Model, ModelFileError, TrainOptions, fit,
};

use crate::collect::{self, CollectError, Job, Summary};
use crate::save::Save as _;

pub mod classes;
pub mod sizes;
pub mod trial;

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
    /// Too much of the data was measured too noisily to be used: no model can be fitted.
    #[error(
        "model not fitted: {usable} of {runs} workload runs are usable ({unusable} measurement(s) recorded unusable, their intervals wider than the bound), spanning {families} famil(ies); a model needs usable runs of at least 2 families. Measure on a quieter host or with longer windows (--windows, --window); the data in {data} is kept"
    )]
    TooLittleUsable {
        usable: usize,
        runs: usize,
        unusable: usize,
        families: usize,
        data: PathBuf,
    },
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
    /// Several sizes asked for with one data file named.
    #[error(
        "--out names one data file, and several sizes need one each: leave it out, and each size's data goes to data-v<N>.jsonl in the model directory"
    )]
    OneOutForSeveralSizes,
    /// None of the sizes asked for has anything to predict on this host.
    #[error(
        "none of v = {sizes} has three or more important placements on this host, so there is nothing to predict and nothing to train; train on a host with several NUMA nodes"
    )]
    NoSizeToTrain {
        /// The sizes asked for, as given.
        sizes: String,
    },
    /// Choosing which sizes to collect stopped short (a collection failed, most often).
    #[error(transparent)]
    Search(Box<placed_models::size_search::SearchError<PipelineError>>),
    /// Fitting the model across sizes.
    #[error(transparent)]
    AcrossSizes(#[from] placed_models::sizes::SizesError),
    /// The model failed the accuracy gate and no override was given: nothing is installed.
    #[error("model not installed: {failure}")]
    BelowGate {
        failure: GateFailure,
        /// The refused model and its evaluation, for the report that explains the refusal.
        refused: Box<(Model, Option<Evaluation>)>,
    },
}

/// How strict to be about a model before installing it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Acceptance {
    pub gate: Gate,
    /// Install a model that fails the gate, marked as such (`--accept-inaccurate`).
    pub accept_inaccurate: bool,
}

impl Acceptance {
    /// The model as it may be installed: unchanged when it passes, marked below the gate
    /// when it fails and the operator accepted that, refused otherwise.
    pub fn judge(&self, model: Model) -> Result<Model, PipelineError> {
        match self.gate.check(model.accuracy()) {
            Ok(()) => Ok(model),
            Err(failure) if self.accept_inaccurate => {
                tracing::warn!(%failure, "installing a model below the accuracy gate: the daemon will only observe with it");
                model
                    .accepted_below_gate(failure)
                    .map_err(|reason| PipelineError::Train(TrainError::Inconsistent { reason }))
            }
            Err(failure) => Err(PipelineError::BelowGate {
                failure,
                refused: Box::new((model, None)),
            }),
        }
    }
}

/// What the loop produced.
#[derive(Debug)]
pub struct Trained {
    pub collection: Summary,
    /// What fitting left out ([`crate::report::left_out`]).
    pub left_out: String,
    pub model: Model,
    pub evaluation: Evaluation,
    pub installed: PathBuf,
}

/// The file name the model gets in the model directory: one per machine class and `v`, so
/// retraining replaces the model the daemon uses.
pub fn model_file_name(fingerprint: &str, v: u32) -> String {
    format!("{fingerprint}-v{v}.json")
}

/// The data file a size's collection goes to by default, beside the models.
pub fn data_file_name(v: impl std::fmt::Display) -> String {
    format!("data-v{v}.jsonl")
}

/// Collects into `options.out`, then fits, evaluates and installs into `model_dir`.
pub fn train(
    jobs: &[Box<dyn Job>],
    options: &collect::Options,
    train: &TrainOptions,
    acceptance: &Acceptance,
    model_dir: &Path,
) -> Result<Trained, PipelineError> {
    let (collection, data) = collect_size(jobs, options, model_dir)?;
    let (model, evaluation, installed) = fit_and_install(&data, train, acceptance, model_dir)?;
    Ok(Trained {
        left_out: crate::report::left_out(&data),
        collection,
        model,
        evaluation,
        installed,
    })
}

/// Collects one size into `options.out` (resuming) and reads the data back, refusing data
/// no model can be fitted on.
pub fn collect_size(
    jobs: &[Box<dyn Job>],
    options: &collect::Options,
    model_dir: &Path,
) -> Result<(Summary, Dataset), PipelineError> {
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
    usable_enough(&data, &options.out)?;
    Ok((collection, data))
}

/// Fits and evaluates a model on `data`, judges it by the gate, and installs it into
/// `model_dir`.
pub fn fit_and_install(
    data: &Dataset,
    train: &TrainOptions,
    acceptance: &Acceptance,
    model_dir: &Path,
) -> Result<(Model, Evaluation, PathBuf), PipelineError> {
    let (model, evaluation) = fit(data, train)?;
    judge_and_install(model, evaluation, acceptance, model_dir)
}

/// Judges a fitted model by the gate and installs it into `model_dir`; a refusal carries
/// the evaluation for the report that explains it.
pub fn judge_and_install(
    model: Model,
    evaluation: Evaluation,
    acceptance: &Acceptance,
    model_dir: &Path,
) -> Result<(Model, Evaluation, PathBuf), PipelineError> {
    let model = acceptance.judge(model).map_err(|e| match e {
        PipelineError::BelowGate { failure, refused } => PipelineError::BelowGate {
            failure,
            refused: Box::new((refused.0, Some(evaluation.clone()))),
        },
        other => other,
    })?;
    let installed = install(&model, model_dir)?;
    Ok((model, evaluation, installed))
}

/// Refuses data whose usable runs cannot make a model: leaving one family out needs two,
/// and a collection on a noisy host can leave fewer. Said as a refusal with the figures,
/// not as the cross-validation error it would otherwise end in.
pub fn usable_enough(data: &Dataset, path: &Path) -> Result<(), PipelineError> {
    let mut runs: Vec<(&str, u32, &str)> = data
        .records()
        .iter()
        .map(|r| (r.workload.as_str(), r.run, r.family.as_str()))
        .collect();
    runs.sort_unstable();
    runs.dedup();
    let usable: Vec<&(&str, u32, &str)> = runs
        .iter()
        .filter(|(w, r, _)| data.run_is_usable(w, *r))
        .collect();
    let mut families: Vec<&str> = usable.iter().map(|(_, _, f)| *f).collect();
    families.sort_unstable();
    families.dedup();
    let unusable = data.unusable().count();
    if unusable > 0 && families.len() < 2 {
        return Err(PipelineError::TooLittleUsable {
            usable: usable.len(),
            runs: runs.len(),
            unusable,
            families: families.len(),
            data: path.to_owned(),
        });
    }
    Ok(())
}

/// Writes the model into `dir` atomically (`save::Save`) and reads it back as the daemon
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
