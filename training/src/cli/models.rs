//! The commands on collected data: `fit`, `evaluate`, `check`, `policies` and `simulate`.

use std::path::{Path, PathBuf};

use placed_core::machine::Machine;
use placed_core::placement::important_placements;
use placed_models::{Dataset, TrainOptions, evaluate, fit};

use super::CliError;
use super::collect::print_refused;
use super::production::Basis;
use super::request::{Fitting, MachineSpec};
use crate::save::Save as _;
use crate::simulate::{SimMachine, SimulationOptions, simulate};
use crate::{plot, policies, report};

/// `placed-train fit`: a model from a data file and the daemon's production data, or from
/// production data completed by the model across classes, judged by the gate, written.
pub fn fit_model(
    basis: &Basis,
    out: &Path,
    production: &[PathBuf],
    fitting: &Fitting,
) -> Result<(), CliError> {
    let (dataset, options) =
        super::production::with_production(basis, production, &fitting.options)?;
    let (model, _) = fit(&dataset, &options).map_err(|e| CliError::step("fitting the model", e))?;
    let model = fitting.acceptance.judge(model).inspect_err(print_refused)?;
    model.save(out)?;
    print!("{}", report::model_summary(&model));
    println!("wrote {}", out.display());
    Ok(())
}

/// `placed-train evaluate`: cross-validated accuracy, and with `--hold-out` the model on
/// the families left out.
pub fn evaluate_data(
    data: &Path,
    plots: Option<&Path>,
    hold_out: &[String],
    options: &TrainOptions,
) -> Result<(), CliError> {
    let dataset = Dataset::load(data)?;
    print!("{}", report::left_out(&dataset));
    let split = (!hold_out.is_empty())
        .then(|| placed_models::hold_out::hold_out(&dataset, hold_out))
        .transpose()?;
    let kept = split.as_ref().map_or(&dataset, |s| &s.kept);
    let evaluation = evaluate(kept, options).map_err(|e| CliError::step("evaluating", e))?;
    print!("{}", report::evaluation_tables(&evaluation));
    if let Some(split) = &split {
        let (model, _) = fit(kept, options).map_err(|e| CliError::step("fitting the model", e))?;
        let checked = placed_models::check::check(&model, &split.held)?;
        println!("\nthe model on the held-out families:");
        print!("{}", report::check_tables(&checked, &model));
        print!(
            "{}",
            report::hold_out_summary(split, hold_out, &evaluation, &checked)
        );
    }
    if let Some(dir) = plots {
        let written = plot::write_plots(&evaluation, dir)?;
        println!("\nwrote {} plots into {}", written.len(), dir.display());
    }
    Ok(())
}

/// `placed-train check`: a fitted model on data it was not trained on.
pub fn check(model: &Path, data: &Path) -> Result<(), CliError> {
    let dataset = Dataset::load(data)?;
    let model = load_predictor(model, &dataset, data)?;
    print!("{}", report::left_out(&dataset));
    let checked = placed_models::check::check(model.as_ref(), &dataset)?;
    print!("{}", report::check_tables(&checked, model.as_ref()));
    Ok(())
}

/// The model file at `model`, made ready for `dataset`'s (read from `data`) machine class
/// and size as the daemon makes one ready for a container.
pub fn load_predictor(
    model: &Path,
    dataset: &Dataset,
    data: &Path,
) -> Result<Box<dyn placed_models::Predictor>, CliError> {
    Ok(match placed_models::ModelFile::load(model)? {
        placed_models::ModelFile::PerSize(m) => m,
        // Made ready for the data's size, as the daemon makes it ready for a container's.
        placed_models::ModelFile::AcrossSizes(m) => Box::new(
            std::sync::Arc::<placed_models::SizesModel>::from(m)
                .for_size(dataset.header().v, dataset.header().placements.clone())?,
        ),
        // Made ready for the data's machine class, as for a host nobody trained.
        placed_models::ModelFile::AcrossClasses(m) => {
            let h = dataset.header();
            let resources = dataset.resources().ok_or_else(|| {
                CliError::Usage(format!(
                    "{} has no resources line: a model across classes needs what the machine has",
                    data.display()
                ))
            })?;
            Box::new(
                std::sync::Arc::<placed_models::ClassesModel>::from(m).for_host(
                    &h.fingerprint,
                    h.v,
                    resources,
                    h.placements.clone(),
                )?,
            )
        }
    })
}

/// `placed-train policies`: the placement policies replayed on collected data.
pub fn replay_policies(
    data: &Path,
    machine: &MachineSpec,
    goals: &[f64],
    plots: Option<&Path>,
    json: bool,
    options: &TrainOptions,
) -> Result<(), CliError> {
    let dataset = Dataset::load(data)?;
    let machine = Machine::load(&machine.source, machine.machine_file.as_deref())?;
    let set = important_placements(&machine, dataset.header().v as usize)?;
    let replay = policies::replay(&dataset, &machine, &set, goals, options)
        .map_err(|e| CliError::step("replaying the policies", e))?;
    if json {
        print!("{}", policies::json_lines(&replay));
    } else {
        print!("{}", report::left_out(&dataset));
        print!("{}", policies::text(&replay));
    }
    if let Some(dir) = plots {
        let written = plot::policies::write_plots(&replay, dir)?;
        if !json {
            println!("\nwrote {} plots into {}", written.len(), dir.display());
        }
    }
    Ok(())
}

/// `placed-train simulate`: simulated data for a topology and `v`, said to be simulated.
pub fn simulate_data(
    machine: &MachineSpec,
    vcpus: usize,
    out: &Path,
    options: &SimulationOptions,
) -> Result<(), CliError> {
    let machine = Machine::load(&machine.source, machine.machine_file.as_deref())?;
    let set = important_placements(&machine, vcpus)?;
    let sim = SimMachine::from_placed(&machine, &set)?;
    let dataset = simulate(&sim, options)?;
    dataset.save(out)?;
    println!(
        "wrote SIMULATED training data (no hardware measured): {} workloads in {} families x {} placements of {} for v = {vcpus} to {}",
        options.families * options.workloads_per_family,
        options.families,
        set.placements.len(),
        set.fingerprint,
        out.display()
    );
    Ok(())
}
