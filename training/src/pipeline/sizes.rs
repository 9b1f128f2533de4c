//! The whole loop for several container sizes (docs/training.md, "Several sizes"): collect
//! the fewest sizes for which the model across sizes meets the accuracy gate
//! ([`placed_models::size_search`]), install a model of its own for each size collected,
//! and the model across sizes for the rest.

use std::path::{Path, PathBuf};

use placed_models::size_search::{SizeChoice, fewest_sizes};
use placed_models::sizes::AcrossSizes;
use placed_models::train::fit_evaluated;
use placed_models::{Dataset, Evaluation, Model, SizesModel, TrainOptions};

use super::{Acceptance, PipelineError, judge_and_install};
use crate::save::Save as _;

/// One collected size's model, installed or refused.
#[derive(Debug)]
pub struct SizeModel {
    /// vCPUs.
    pub v: u32,
    /// What fitting left out ([`crate::report::left_out`]).
    pub left_out: String,
    /// The model, its evaluation and where it was installed; or why not.
    pub result: Result<(Model, Evaluation, PathBuf), PipelineError>,
}

/// The model across sizes as installed.
#[derive(Debug)]
pub struct Across {
    pub model: SizesModel,
    /// Every collected size held out in turn.
    pub report: AcrossSizes,
    pub installed: PathBuf,
}

/// What the loop over sizes produced.
#[derive(Debug)]
pub struct TrainedSizes {
    pub choice: SizeChoice,
    /// One per collected size, smallest first.
    pub per_size: Vec<SizeModel>,
    /// Installed when sizes were left to it and it met the gate held out; `None` otherwise.
    pub across: Option<Across>,
}

/// The file name of the model across sizes in the model directory: one per machine class,
/// so retraining replaces it.
pub fn across_file_name(fingerprint: &str) -> String {
    format!("{fingerprint}-sizes.json")
}

/// Collects the fewest of `wanted` (through `collect`, one size at a time) for the gate's
/// mean error, fits and installs each collected size's model, and the model across sizes
/// when it serves the sizes left. A collected size whose model fails the gate is reported
/// in [`SizeModel::result`], not as the whole loop's failure: the others are still good.
pub fn train_sizes(
    wanted: &[u32],
    train: &TrainOptions,
    acceptance: &Acceptance,
    model_dir: &Path,
    collect: impl FnMut(u32) -> Result<Dataset, PipelineError>,
) -> Result<TrainedSizes, PipelineError> {
    let choice = fewest_sizes(wanted, acceptance.gate.max_mean_error, train, collect)
        .map_err(|e| PipelineError::Search(Box::new(e)))?;
    // Each size was cross-validated when it was collected; neither fit repeats that.
    let per_size = choice
        .data
        .iter()
        .zip(&choice.evaluations)
        .map(|(d, evaluation)| SizeModel {
            v: d.header().v,
            left_out: crate::report::left_out(d),
            result: fit_evaluated(d, evaluation.clone(), train)
                .map_err(PipelineError::from)
                .and_then(|(model, evaluation)| {
                    judge_and_install(model, evaluation, acceptance, model_dir)
                }),
        })
        .collect();
    let across = if choice.reached() && !choice.left.is_empty() {
        let (model, report) =
            SizesModel::fit_evaluated(&choice.data, choice.evaluations.clone(), train)?;
        let installed = model_dir.join(across_file_name(model.fingerprint()));
        model.save(&installed)?;
        Some(Across {
            model,
            report,
            installed,
        })
    } else {
        None
    };
    Ok(TrainedSizes {
        choice,
        per_size,
        across,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate::{SimMachine, SimulationOptions, simulate};
    use placed_core::machine::{Machine, TopologySource};
    use placed_core::placement::important_placements;

    const MACHINE: &str = "pack:2 numa:2 l3:1 core:4 pu:2";

    fn simulated(v: u32) -> Dataset {
        let machine = Machine::load(&TopologySource::Synthetic(MACHINE.into()), None).unwrap();
        let set = important_placements(&machine, v as usize).unwrap();
        let sim = SimMachine::from_placed(&machine, &set).unwrap();
        simulate(
            &sim,
            &SimulationOptions {
                families: 8,
                workloads_per_family: 3,
                ..SimulationOptions::default()
            },
        )
        .unwrap()
    }

    fn options() -> TrainOptions {
        TrainOptions {
            forest: placed_models::forest::ForestParams::new().n_trees(10),
            ..TrainOptions::default()
        }
    }

    /// A gate the model across sizes meets: four sizes collected, each with its model
    /// installed, and the model across sizes installed for the one left, loadable as the
    /// daemon loads it.
    #[test]
    fn sizes_left_to_the_model_across_sizes_get_it_installed() {
        let dir = tempfile::tempdir().unwrap();
        let acceptance = Acceptance {
            gate: placed_models::Gate {
                max_mean_error: 100.0,
            },
            accept_inaccurate: false,
        };
        let mut asked = Vec::new();
        let t = train_sizes(
            &[4, 6, 8, 12, 16],
            &options(),
            &acceptance,
            dir.path(),
            |v| {
                asked.push(v);
                Ok(simulated(v))
            },
        )
        .unwrap();
        // The ends, the middle, then 4..8 (as wide as 8..16, and the smaller sizes').
        assert_eq!(asked, [4, 16, 8, 6]);
        assert_eq!(t.choice.left, [12]);
        let vs: Vec<u32> = t.per_size.iter().map(|s| s.v).collect();
        assert_eq!(vs, [4, 6, 8, 16]);
        for s in &t.per_size {
            let (model, _, path) = s.result.as_ref().unwrap();
            assert_eq!(model.machine().v, s.v);
            assert!(path.exists());
        }
        let across = t.across.unwrap();
        assert_eq!(across.model.sizes(), [4, 6, 8, 16]);
        let back = SizesModel::load(&across.installed).unwrap();
        assert_eq!(back.id(), across.model.id());
        assert!(
            across
                .installed
                .to_string_lossy()
                .ends_with(&across_file_name(back.fingerprint()))
        );
    }

    /// A gate nothing meets: every size collected, each size's model refused on its own,
    /// no model across sizes, and no file written.
    #[test]
    fn a_gate_nothing_meets_collects_every_size_and_installs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let acceptance = Acceptance {
            gate: placed_models::Gate {
                max_mean_error: 1e-6,
            },
            accept_inaccurate: false,
        };
        let t = train_sizes(&[4, 8, 16], &options(), &acceptance, dir.path(), |v| {
            Ok(simulated(v))
        })
        .unwrap();
        assert_eq!(t.choice.order, [4, 16, 8]);
        assert!(t.choice.left.is_empty() && t.across.is_none());
        assert!(
            t.per_size
                .iter()
                .all(|s| matches!(s.result, Err(PipelineError::BelowGate { .. })))
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_failed_collection_names_the_size() {
        let dir = tempfile::tempdir().unwrap();
        let e = train_sizes(
            &[4, 8],
            &options(),
            &Acceptance::default(),
            dir.path(),
            |v| {
                Err(PipelineError::Incomplete {
                    count: 1,
                    first: format!("v{v}"),
                })
            },
        )
        .unwrap_err();
        let chain = placed_core::text::error_line(&e);
        assert!(chain.contains("v = 4"), "{chain}");
        assert!(chain.contains("run the same command again"), "{chain}");
    }
}
