//! The commands on the daemon's production data: `merge` (the files of a fleet's hosts of
//! one class made one) and `challenge` (a retrained model against the installed one on
//! held-out production data; it replaces it only when it beats it).

use std::path::{Path, PathBuf};

use placed_models::Dataset;
use placed_models::accuracy::ErrorSummary;
use placed_models::data::merge::merge;

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
