//! `placed-train classes trial` (docs/models.md, "From the prior to the host's own
//! model"): does a host's own model, fitted on what the daemon measured while the model
//! across classes decided (`fit --prior`), beat that prior, and after how many runs?
//!
//! One class is held out of the corpus and the prior built on the others. The class's data
//! stands for its host: the runs of its first families are cut to what the daemon would
//! keep of them ([`crate::simulate::production_runs`]: the prior's baseline and probe and
//! one other placement each), completed by the prior and fitted on as `fit --prior` does;
//! its last families, whole, are the test both models are checked on. On SIMULATED data
//! the figures describe the simulator, not any machine.

use std::sync::Arc;

use placed_models::accuracy::ErrorSummary;
use placed_models::check::{CheckError, check};
use placed_models::classes_model::ForHostError;
use placed_models::data::DataError;
use placed_models::impute::{ImputeError, completed, measured_where};
use placed_models::train::TrainError;
use placed_models::{Dataset, Predictor, TrainOptions, fit};

use super::classes::{ClassesPipelineError, build};
use crate::simulate::production_runs;

/// Why a trial could not be run.
#[derive(Debug, thiserror::Error)]
pub enum TrialError {
    /// Fewer families than the largest production and the test take together.
    #[error(
        "the class's data has {found} workload families: {production} in production and {test} to test on need {} (simulate it with more --families, or ask for fewer)",
        production + test
    )]
    TooFewFamilies {
        found: usize,
        production: usize,
        test: usize,
    },
    /// The class's data has no resources line: the prior cannot be made ready for it.
    #[error(
        "the class's data has no resources line: the model across classes needs what the machine has"
    )]
    NoResources,
    /// No cell of the test was predicted by a model.
    #[error("no cell of the test families was predicted: nothing to judge the models on")]
    NothingChecked,
    #[error(transparent)]
    Classes(#[from] ClassesPipelineError),
    #[error(transparent)]
    ForHost(#[from] ForHostError),
    #[error("completing the production runs")]
    Impute(#[from] ImputeError),
    #[error("fitting the host's own model")]
    Train(#[from] TrainError),
    #[error(transparent)]
    Check(#[from] CheckError),
    #[error(transparent)]
    Data(#[from] DataError),
}

/// A model's figures on the test families.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Checked {
    pub error: ErrorSummary,
    /// Interval coverage; `None` for a model without intervals.
    pub coverage: Option<f64>,
}

/// The host's own model after some production runs.
#[derive(Debug, Clone, PartialEq)]
pub struct HostModel {
    /// Families run in production.
    pub families: usize,
    /// Partial runs the daemon would have kept of them.
    pub runs: usize,
    /// Its cross-validated error (measured cells only), what the gate judges.
    pub cross_validated: ErrorSummary,
    pub checked: Checked,
}

/// A trial's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Trial {
    /// The held-out class.
    pub fingerprint: String,
    pub placements: usize,
    /// Families tested on.
    pub test_families: usize,
    /// The prior on the test families.
    pub prior: Checked,
    /// The host's own model after each production count asked for, in that order.
    pub hosts: Vec<HostModel>,
}

/// `class` held out of `corpus` (its files of the same fingerprint left out), the prior
/// built on the rest, and the host's own model fitted after the runs of each count of
/// `families` in production; all checked on the last `test_families` families of `class`.
pub fn trial(
    corpus: &[Dataset],
    class: &Dataset,
    families: &[usize],
    test_families: usize,
    options: &TrainOptions,
) -> Result<Trial, TrialError> {
    let h = class.header();
    let resources = class.resources().ok_or(TrialError::NoResources)?;
    let names = families_in_order(class);
    let most = families.iter().copied().max().unwrap_or(0);
    if most + test_families > names.len() {
        return Err(TrialError::TooFewFamilies {
            found: names.len(),
            production: most,
            test: test_families,
        });
    }
    let others: Vec<Dataset> = corpus
        .iter()
        .filter(|d| d.header().fingerprint != h.fingerprint)
        .cloned()
        .collect();
    let (prior, _) = build(&others, options)?;
    let prior = Arc::new(prior).for_host(&h.fingerprint, h.v, resources, h.placements.clone())?;
    let tested = &names[names.len() - test_families..];
    let test = Dataset::from_parts(
        h.clone(),
        class
            .records()
            .iter()
            .filter(|r| tested.contains(&r.family.as_str()))
            .cloned()
            .collect(),
    )?;
    let judge = |model: &dyn Predictor| -> Result<Checked, TrialError> {
        let report = check(model, &test)?;
        Ok(Checked {
            error: report.overall().ok_or(TrialError::NothingChecked)?,
            coverage: report.coverage(),
        })
    };
    let hosts = families
        .iter()
        .map(|&n| {
            let ran = &names[..n];
            let production =
                production_runs(class, prior.baseline(), prior.probe(), |f| ran.contains(&f))?;
            let (records, _) = completed(&production, &prior)?;
            let data = Dataset::from_parts(h.clone(), records)?;
            let (host, _) = fit(&data, &measured_where(&prior, options))?;
            Ok(HostModel {
                families: n,
                runs: production.partial_runs(),
                cross_validated: host.accuracy().forest,
                checked: judge(&host)?,
            })
        })
        .collect::<Result<Vec<_>, TrialError>>()?;
    Ok(Trial {
        fingerprint: h.fingerprint.clone(),
        placements: h.placements.len(),
        test_families,
        prior: judge(&prior)?,
        hosts,
    })
}

/// `data`'s families in the order their first record appears.
fn families_in_order(data: &Dataset) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for r in data.records() {
        if !names.contains(&r.family.as_str()) {
            names.push(r.family.as_str());
        }
    }
    names
}
