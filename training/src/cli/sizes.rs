//! The commands over several container sizes: `placed-train train --vcpus a,b,...` (the
//! fewest sizes collected, docs/training.md "Several sizes") and `placed-train sizes` (one
//! model across sizes, measured on data already collected).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use placed_core::machine::{Machine, TopologySource};
use placed_core::placement::important_placements;
use placed_models::{Dataset, TrainOptions};

use super::CliError;
use super::collect::{print_collection, print_refused};
use super::request::{Collection, Fitting, SizesOutput};
use crate::pipeline::{self, PipelineError, sizes::TrainedSizes};
use crate::report;
use crate::save::Save as _;

/// `placed-train train` for several sizes: the fewest collected, a model for each of those,
/// the model across sizes for the rest.
pub fn train_sizes(
    vcpus: &[usize],
    collection: &Collection,
    model_dir: &Path,
    fitting: &Fitting,
) -> Result<(), CliError> {
    let placements = placeable_sizes(vcpus, collection.machine_file.as_deref())?;
    let wanted: Vec<u32> = placements.keys().copied().collect();
    if wanted.is_empty() {
        return Err(PipelineError::NoSizeToTrain {
            sizes: report::size_list(vcpus),
        }
        .into());
    }
    let per_size_measurements = collection.jobs.len() * collection.runs as usize;
    let trained = pipeline::sizes::train_sizes(
        &wanted,
        &fitting.options,
        &fitting.acceptance,
        model_dir,
        |v| {
            println!("collecting v = {v}");
            let options =
                collection.options(v as usize, model_dir.join(pipeline::data_file_name(v)));
            let (summary, data) = pipeline::collect_size(&collection.jobs, &options, model_dir)?;
            print_collection(&summary, &options.out);
            Ok(data)
        },
    )?;
    print!(
        "{}",
        report::size_choice(&trained.choice, &|v| placements
            .get(&v)
            .map(|p| p * per_size_measurements))
    );
    print_trained(trained)
}

/// The sizes of `vcpus` worth training on this host, with their number of important
/// placements: a size it cannot place, or with fewer than three important placements
/// (nothing to predict once the baseline and the probe are measured), is said and passed
/// over, not the end of the others.
fn placeable_sizes(
    vcpus: &[usize],
    machine_file: Option<&Path>,
) -> Result<BTreeMap<u32, usize>, CliError> {
    let machine = Machine::load(&TopologySource::Host, machine_file)?;
    let mut placements = BTreeMap::new();
    for &v in vcpus {
        let v32 =
            u32::try_from(v).map_err(|_| CliError::Usage(format!("--vcpus {v} is too large")))?;
        let set = match important_placements(&machine, v) {
            Ok(set) => set,
            Err(e) => {
                println!(
                    "v = {v}: {}: not collected",
                    placed_core::text::error_line(&e)
                );
                continue;
            }
        };
        if set.placements.len() < 3 {
            println!(
                "v = {v}: this host has {} important placement(s) for it, all measured whenever a container is: nothing to predict, not collected",
                set.placements.len()
            );
            continue;
        }
        placements.insert(v32, set.placements.len());
    }
    Ok(placements)
}

/// Each collected size's model (or why it was refused) and the model across sizes; the
/// first refusal is the command's error, the others are said on stderr.
fn print_trained(trained: TrainedSizes) -> Result<(), CliError> {
    let mut refused = Vec::new();
    for size in trained.per_size {
        print!("{}", size.left_out);
        match size.result {
            Ok((model, _, installed)) => {
                print!("{}", report::model_summary(&model));
                println!(
                    "installed model {} for v = {} in {}",
                    model.id(),
                    size.v,
                    installed.display()
                );
            }
            Err(e) => {
                print_refused(&e);
                refused.push((size.v, e));
            }
        }
    }
    if let Some(across) = &trained.across {
        print!("{}", report::sizes_table(&across.report));
        println!(
            "installed model across sizes {} in {}: it predicts v = {} (and any other size of this machine class without a model of its own)",
            across.model.id(),
            across.installed.display(),
            report::size_list(&trained.choice.left)
        );
    }
    // Each refusal said once: all but the first here, the first as the command's error.
    let mut refused = refused.into_iter();
    let Some((v, first)) = refused.next() else {
        return Ok(());
    };
    for (v, e) in refused {
        eprintln!(
            "placed-train: v = {v}: {}",
            placed_core::text::error_line(&e)
        );
    }
    Err(CliError::step(format!("v = {v}"), first))
}

/// `placed-train sizes`: each size held out in turn, the model across sizes written, or the
/// size search replayed.
pub fn sizes(
    data: &[PathBuf],
    output: &SizesOutput,
    options: &TrainOptions,
) -> Result<(), CliError> {
    let datasets = data
        .iter()
        .map(|path| Dataset::load(path))
        .collect::<Result<Vec<_>, _>>()?;
    for d in &datasets {
        print!("{}", report::left_out(d));
    }
    match output {
        SizesOutput::Fewest { target } => replay_fewest(datasets, *target, options),
        SizesOutput::Table => {
            let across = placed_models::sizes::leave_one_size_out(&datasets, options)
                .map_err(|e| CliError::step("leaving one size out", e))?;
            print!("{}", report::sizes_table(&across));
            Ok(())
        }
        SizesOutput::Model(path) => {
            let (model, across) = placed_models::SizesModel::fit(&datasets, options)
                .map_err(|e| CliError::step("fitting the model across sizes", e))?;
            print!("{}", report::sizes_table(&across));
            model.save(path)?;
            println!(
                "\nwrote model across sizes {} ({}) to {}: trained on v = {:?}, its intervals {:.1}% wide on either side (the held-out sizes' 90% error quantile)",
                model.id(),
                model.provenance(),
                path.display(),
                model.sizes(),
                model.error_quantile() * 100.0
            );
            Ok(())
        }
    }
}

/// `placed-train sizes --fewest`: the size search over data already collected, each file
/// read when the search would have collected it.
fn replay_fewest(
    datasets: Vec<Dataset>,
    target: f64,
    options: &TrainOptions,
) -> Result<(), CliError> {
    placed_models::sizes::belong_together(&datasets)?;
    let measurements: BTreeMap<u32, usize> = datasets
        .iter()
        .map(|d| {
            let mut runs: Vec<(&str, u32)> = d
                .records()
                .iter()
                .map(|r| (r.workload.as_str(), r.run))
                .collect();
            runs.sort_unstable();
            runs.dedup();
            (d.header().v, runs.len() * d.header().placements.len())
        })
        .collect();
    let wanted: Vec<u32> = measurements.keys().copied().collect();
    let mut by_v: BTreeMap<u32, Dataset> =
        datasets.into_iter().map(|d| (d.header().v, d)).collect();
    let choice = placed_models::size_search::fewest_sizes(&wanted, target, options, |v| {
        by_v.remove(&v)
            .ok_or_else(|| std::io::Error::other(format!("no data file for v = {v}")))
    })?;
    print!(
        "{}",
        report::size_choice(&choice, &|v| measurements.get(&v).copied())
    );
    Ok(())
}
