//! `placed-train classes ...` validated: the model across machine classes' commands.

use std::path::PathBuf;

use placed_models::TrainOptions;

use super::super::CliError;
use super::super::args::ClassesCmd;
use crate::simulate::SimulationOptions;

/// `placed-train classes ...`, validated.
#[derive(Debug)]
pub enum ClassesRequest {
    Simulate {
        topologies: Vec<PathBuf>,
        out_dir: PathBuf,
        options: SimulationOptions,
    },
    Evaluate {
        corpus: PathBuf,
        ablation: bool,
        options: TrainOptions,
    },
    Build {
        corpus: PathBuf,
        destination: ModelDestination,
        options: TrainOptions,
    },
    Trial {
        corpus: PathBuf,
        data: PathBuf,
        families: Vec<usize>,
        test_families: usize,
        options: TrainOptions,
    },
}

/// Where a built model goes.
#[derive(Debug, PartialEq)]
pub enum ModelDestination {
    /// This file.
    File(PathBuf),
    /// Installed in this model directory.
    ModelDir(PathBuf),
}

impl ClassesCmd {
    pub(super) fn validate(self) -> Result<ClassesRequest, CliError> {
        Ok(match self {
            ClassesCmd::Simulate {
                topologies,
                out_dir,
                families,
                workloads_per_family,
                noise,
                seed,
            } => {
                if !(noise.is_finite() && noise >= 0.0) {
                    return Err(CliError::Usage("--noise must be 0 or more".into()));
                }
                ClassesRequest::Simulate {
                    topologies,
                    out_dir,
                    options: SimulationOptions {
                        families,
                        workloads_per_family,
                        noise,
                        seed,
                        ..SimulationOptions::default()
                    },
                }
            }
            ClassesCmd::Evaluate {
                corpus,
                ablation,
                train,
            } => ClassesRequest::Evaluate {
                corpus,
                ablation,
                options: train.options()?,
            },
            ClassesCmd::Build {
                corpus,
                out,
                model_dir,
                train,
            } => ClassesRequest::Build {
                corpus,
                destination: match (out, model_dir) {
                    (Some(out), None) => ModelDestination::File(out),
                    (None, Some(dir)) => ModelDestination::ModelDir(dir),
                    _ => {
                        return Err(CliError::Usage(
                            "give either --out FILE or --model-dir DIR".into(),
                        ));
                    }
                },
                options: train.options_defaulting(placed_models::classes::FINAL_TREES)?,
            },
            ClassesCmd::Trial {
                corpus,
                data,
                families,
                test_families,
                train,
            } => ClassesRequest::Trial {
                corpus,
                data,
                families,
                test_families,
                options: train.options_defaulting(placed_models::classes::FINAL_TREES)?,
            },
        })
    }
}
