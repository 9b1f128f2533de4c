//! The commands on the daemon's production data: what `fit --production` learns from
//! (the runs completed by a model of the class or by the model across classes), `merge`
//! (the files of a fleet's hosts of one class made one) and `challenge` (a retrained model against the installed one on
//! held-out production data; it replaces it only when it beats it).

use std::path::{Path, PathBuf};

use placed_models::accuracy::ErrorSummary;
use placed_models::data::merge::{RunNumbers, merge};
use placed_models::data::{MachineHeader, RunRecord};
use placed_models::impute::{completed, measured_where};
use placed_models::resources::ClassResources;
use placed_models::{Dataset, Provenance, TrainOptions};

use super::CliError;
use super::models::load_predictor;
use crate::save::Save as _;
use crate::{pipeline, report};

/// `placed-train merge`: data files of one machine class and size made one.
pub fn merge_data(data: &[PathBuf], out: &Path) -> Result<(), CliError> {
    let files = data
        .iter()
        .map(|p| Dataset::load(p).map(|d| (p.clone(), d)))
        .collect::<Result<Vec<_>, _>>()?;
    let (merged, counts) = merge(&files).map_err(|e| CliError::step("merging", e))?;
    merged.save(out)?;
    println!(
        "merged {} files ({}): {} records kept, {} seen before dropped, {} runs renumbered (another host used their number); wrote {}",
        files.len(),
        merged.provenance(),
        counts.kept,
        counts.duplicates,
        counts.renumbered,
        out.display()
    );
    Ok(())
}

/// What completes the daemon's partial runs for `placed-train fit --production`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Basis {
    /// Training data of the class (`--data`): a model fitted on it completes the runs, and
    /// its own runs are learned from too.
    Data(PathBuf),
    /// The model across classes (`--prior`), made ready for the host the production files
    /// describe (their resources line): it completes the runs, which alone are learned
    /// from. A host nobody collected on gets a model of its own from what the daemon
    /// measured while the prior decided.
    Prior(PathBuf),
}

/// The data a model is fitted on: `basis`'s, with the partial runs of the `production`
/// files completed ([`placed_models::impute`]); with the options to fit it with. The
/// records take the least real provenance of all, the prior's included, as a model trained
/// on them would. Runs completed by the prior were measured in its baseline and probe only,
/// so the model keeps those two (a probe chosen among the other placements would be chosen
/// on the prior's predictions).
pub fn with_production(
    basis: &Basis,
    production: &[PathBuf],
    options: &TrainOptions,
) -> Result<(Dataset, TrainOptions), CliError> {
    match basis {
        Basis::Data(path) => {
            let data = Dataset::load(path)?;
            print!("{}", report::left_out(&data));
            pipeline::usable_enough(&data, path)?;
            if production.is_empty() {
                return Ok((data, options.clone()));
            }
            let (first, _) = placed_models::fit(&data, options)
                .map_err(|e| CliError::step("fitting the model", e))?;
            let name = format!("the model on {}", data.header().fingerprint);
            let resources = data.resources().cloned();
            let start = Learned {
                header: data.header().clone(),
                resources,
                provenances: vec![data.provenance()],
                records: data.records().to_vec(),
            };
            let data = learn(start, production, &name, |p, path| {
                completed(p, &first).map_err(|e| completing(path, e))
            })?;
            Ok((data, options.clone()))
        }
        Basis::Prior(prior) => {
            let Some(first_path) = production.first() else {
                return Err(CliError::Usage(
                    "--prior completes the daemon's production data: give at least one --production FILE".into(),
                ));
            };
            let first = Dataset::load(first_path)?;
            let name = format!("the model across classes {}", prior.display());
            let start = Learned {
                header: first.header().clone(),
                resources: first.resources().cloned(),
                provenances: vec![placed_models::ClassesModel::load(prior)?.provenance()],
                records: Vec::new(),
            };
            // Made ready for the first file's host; each file's has the same placements
            // (`learn` checks), so the same baseline and probe.
            let ready = load_predictor(prior, &first, first_path)?;
            let data = learn(start, production, &name, |p, path| {
                let model = load_predictor(prior, p, path)?;
                completed(p, model.as_ref()).map_err(|e| completing(path, e))
            })?;
            pipeline::usable_enough(&data, first_path)?;
            Ok((data, measured_where(ready.as_ref(), options)))
        }
    }
}

fn completing(path: &Path, e: placed_models::impute::ImputeError) -> CliError {
    CliError::step(format!("completing {}", path.display()), e)
}

/// What a model will learn from, gathered file by file.
struct Learned {
    header: MachineHeader,
    resources: Option<ClassResources>,
    provenances: Vec<Provenance>,
    records: Vec<RunRecord>,
}

/// `start` with the partial runs of each `production` file completed by `complete` (named
/// `name` in what is printed). A production run of a workload `start` names too is another
/// run of it: runs are numbered per source ([`RunNumbers`]).
fn learn(
    start: Learned,
    production: &[PathBuf],
    name: &str,
    complete: impl Fn(&Dataset, &Path) -> Result<(Vec<RunRecord>, usize), CliError>,
) -> Result<Dataset, CliError> {
    let Learned {
        header,
        resources,
        mut provenances,
        mut records,
    } = start;
    let mut numbers = RunNumbers::default();
    for r in &mut records {
        r.run = numbers.claim(&0, &r.workload, r.run).0;
    }
    for (source, path) in (1usize..).zip(production) {
        let p = Dataset::load(path)?;
        let h = p.header();
        if h.fingerprint != header.fingerprint
            || h.v != header.v
            || h.placements != header.placements
        {
            return Err(CliError::Usage(format!(
                "{} is production data of machine class {} with v = {} ({} placements), not of {} with v = {} ({} placements): one class and size per model",
                path.display(),
                h.fingerprint,
                h.v,
                h.placements.len(),
                header.fingerprint,
                header.v,
                header.placements.len()
            )));
        }
        let (completed, skipped) = complete(&p, path)?;
        let runs = p.partial_runs() - skipped;
        println!(
            "{}: {runs} partial runs completed by {name} and learned from ({skipped} without its baseline and probe left out)",
            path.display(),
        );
        provenances.push(p.provenance());
        for mut r in completed {
            r.run = numbers.claim(&source, &r.workload, r.run).0;
            records.push(r);
        }
    }
    let provenance = Provenance::least_real(provenances);
    for r in &mut records {
        r.provenance = provenance;
    }
    let mut data = Dataset::from_parts(header, records)?;
    if let Some(resources) = resources {
        data = data.with_resources(resources)?;
    }
    Ok(data)
}

/// The figures of a challenge, for the refusal.
#[derive(Debug, thiserror::Error)]
#[error(
    "the challenger {challenger} ({challenger_mean:.2}% mean error) does not beat the installed {champion} ({champion_mean:.2}%) on the same {cells} cells: not installed"
)]
pub struct NotBetter {
    pub challenger: String,
    pub challenger_mean: f64,
    pub champion: String,
    pub champion_mean: f64,
    pub cells: usize,
}

/// Where a better challenger is installed: over the champion when both are of one kind; a
/// model of one class and size beating a model across sizes or classes goes beside it, as
/// the class's own model for the size (`<fingerprint>-v<N>.json`, which the daemon trusts
/// first), since the champion serves other sizes or classes too.
fn installed_as(challenger: &Path, champion: &Path) -> Result<PathBuf, CliError> {
    use placed_models::ModelFile;
    Ok(
        match (ModelFile::load(challenger)?, ModelFile::load(champion)?) {
            (ModelFile::PerSize(_), ModelFile::PerSize(_))
            | (ModelFile::AcrossSizes(_), ModelFile::AcrossSizes(_))
            | (ModelFile::AcrossClasses(_), ModelFile::AcrossClasses(_)) => champion.to_owned(),
            (ModelFile::PerSize(m), ModelFile::AcrossSizes(_) | ModelFile::AcrossClasses(_)) => {
                let machine = m.machine();
                champion
                    .parent()
                    .unwrap_or_else(|| Path::new("."))
                    .join(pipeline::model_file_name(&machine.fingerprint, machine.v))
            }
            _ => {
                return Err(CliError::Usage(format!(
                    "{} cannot replace {}: a model across sizes or classes replaces only one of its kind",
                    challenger.display(),
                    champion.display()
                )));
            }
        },
    )
}

/// `placed-train challenge`: `challenger` and `champion` checked on `data` (production data
/// neither was trained on); with `install`, the challenger replaces the champion's file only
/// when its mean error is lower. Refused otherwise ([`NotBetter`], exit 1).
pub fn challenge(
    challenger: &Path,
    champion: &Path,
    data: &Path,
    install: bool,
) -> Result<(), CliError> {
    // Where a winner would go is known before judging: kinds that cannot replace each
    // other are refused before any figure is printed.
    let target = install
        .then(|| installed_as(challenger, champion))
        .transpose()?;
    let dataset = Dataset::load(data)?;
    let score = |path: &Path| -> Result<(String, Option<ErrorSummary>), CliError> {
        let model = load_predictor(path, &dataset, data)?;
        let report = placed_models::check::check(model.as_ref(), &dataset)?;
        Ok((model.id().to_owned(), report.overall()))
    };
    let (new_id, new) = score(challenger)?;
    let (old_id, old) = score(champion)?;
    let (Some(new), Some(old)) = (new, old) else {
        return Err(CliError::Usage(format!(
            "{} has no cell either model predicts and the data measured: nothing to judge them on",
            data.display()
        )));
    };
    println!(
        "on {} ({}):\n  challenger {new_id}: {:.2}% mean, {:.2}% worst over {} cells\n  installed  {old_id}: {:.2}% mean, {:.2}% worst over {} cells",
        data.display(),
        dataset.provenance(),
        new.mean,
        new.worst,
        new.cells,
        old.mean,
        old.worst,
        old.cells
    );
    if new.mean >= old.mean {
        return Err(CliError::failed(NotBetter {
            challenger: new_id,
            challenger_mean: new.mean,
            champion: old_id,
            champion_mean: old.mean,
            cells: new.cells,
        }));
    }
    if let Some(target) = target {
        let text = std::fs::read_to_string(challenger)
            .map_err(|e| CliError::step(format!("reading {}", challenger.display()), e))?;
        crate::save::write_model_file(&target, Ok(text))?;
        println!(
            "the challenger is better: installed as {}",
            target.display()
        );
    } else {
        println!("the challenger is better (--install replaces the installed model)");
    }
    Ok(())
}
