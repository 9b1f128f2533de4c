//! The commands on the daemon's production data: `merge` (the files of a fleet's hosts of
//! one class made one) and `challenge` (a retrained model against the installed one on
//! held-out production data; it replaces it only when it beats it).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use placed_models::accuracy::ErrorSummary;
use placed_models::data::merge::merge;
use placed_models::impute::completed;
use placed_models::{Dataset, Provenance, TrainOptions};

use super::CliError;
use super::models::load_predictor;
use crate::save::Save as _;

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

/// `data` with the partial runs of the `production` files completed by a model fitted on
/// `data` ([`placed_models::impute`]); `data` itself without production files. The
/// records take the least real provenance of all, as a model trained on them would.
pub fn with_production(
    data: Dataset,
    production: &[PathBuf],
    options: &TrainOptions,
) -> Result<Dataset, CliError> {
    if production.is_empty() {
        return Ok(data);
    }
    let (first, _) =
        placed_models::fit(&data, options).map_err(|e| CliError::step("fitting the model", e))?;
    let mut records = data.records().to_vec();
    let mut used: BTreeSet<(String, u32)> = records
        .iter()
        .map(|r| (r.workload.clone(), r.run))
        .collect();
    let mut provenances = vec![data.provenance()];
    for path in production {
        let p = Dataset::load(path)?;
        let (completed, skipped) = completed(&p, &first)
            .map_err(|e| CliError::step(format!("completing {}", path.display()), e))?;
        let runs = p.partial_runs() - skipped;
        println!(
            "{}: {runs} partial runs completed by the model on {} and learned from ({skipped} without its baseline and probe left out)",
            path.display(),
            data.header().fingerprint
        );
        provenances.push(p.provenance());
        // A production run of a workload the data names too is another run of it.
        let mut number: BTreeMap<(String, u32), u32> = BTreeMap::new();
        for mut r in completed {
            let key = (r.workload.clone(), r.run);
            let run = *number.entry(key).or_insert_with(|| {
                let mut run = r.run;
                while used.contains(&(r.workload.clone(), run)) {
                    run = run.wrapping_add(1);
                }
                used.insert((r.workload.clone(), run));
                run
            });
            r.run = run;
            records.push(r);
        }
    }
    let provenance = Provenance::least_real(provenances);
    for r in &mut records {
        r.provenance = provenance;
    }
    let mut merged = Dataset::from_parts(data.header().clone(), records)?;
    if let Some(resources) = data.resources() {
        merged = merged.with_resources(resources.clone())?;
    }
    Ok(merged)
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

/// `placed-train challenge`: `challenger` and `champion` checked on `data` (production data
/// neither was trained on); with `install`, the challenger replaces the champion's file only
/// when its mean error is lower. Refused otherwise ([`NotBetter`], exit 1).
pub fn challenge(
    challenger: &Path,
    champion: &Path,
    data: &Path,
    install: bool,
) -> Result<(), CliError> {
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
    if install {
        let text = std::fs::read_to_string(challenger)
            .map_err(|e| CliError::step(format!("reading {}", challenger.display()), e))?;
        crate::save::write_model_file(champion, Ok(text))?;
        println!(
            "the challenger is better: installed as {}",
            champion.display()
        );
    } else {
        println!("the challenger is better (--install replaces the installed model)");
    }
    Ok(())
}
