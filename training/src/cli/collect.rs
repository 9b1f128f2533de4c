//! `placed-train collect` and `placed-train train` for one size: measure on this host,
//! and for `train` fit, evaluate and install; what each prints.

use std::path::{Path, PathBuf};

use super::CliError;
use super::request::{Collection, Fitting};
use crate::collect::{self, Summary, human};
use crate::pipeline;
use crate::report;

/// `placed-train collect`: measure, print the summary, fail while measurements are missing.
pub fn collect(vcpus: usize, collection: &Collection, out: PathBuf) -> Result<(), CliError> {
    let options = collection.options(vcpus, out);
    let summary = collect::collect(&collection.jobs, &options)?;
    print_collection(&summary, &options.out);
    if let [only] = summary.header.placements.as_slice() {
        println!(
            "note: this host has a single important placement for v = {} ({}): the data records the workloads' rates, but no model can be fit from it",
            summary.header.v, only.id
        );
    }
    if !summary.complete() {
        return Err(CliError::Incomplete {
            skipped: summary.skipped.len(),
        });
    }
    Ok(())
}

/// `placed-train train` for one size.
pub fn train_one(
    vcpus: usize,
    collection: &Collection,
    model_dir: &Path,
    fitting: &Fitting,
) -> Result<(), CliError> {
    let out = collection
        .out
        .clone()
        .unwrap_or_else(|| model_dir.join(pipeline::data_file_name(vcpus)));
    let options = collection.options(vcpus, out);
    let trained = pipeline::train(
        &collection.jobs,
        &options,
        &fitting.options,
        &fitting.acceptance,
        model_dir,
    )
    .inspect_err(print_refused)?;
    print_collection(&trained.collection, &options.out);
    print!("{}", trained.left_out);
    print!("{}", report::evaluation_tables(&trained.evaluation));
    print!("{}", report::model_summary(&trained.model));
    println!(
        "installed model {} in {}",
        trained.model.id(),
        trained.installed.display()
    );
    Ok(())
}

/// What a collection did, and where its data is.
pub fn print_collection(s: &Summary, out: &Path) {
    println!(
        "collected {} measurement(s) in {} ({} already in the file, {} of {} done) for v = {} on {}, {} placement(s); data labelled {} ({})",
        s.measured,
        human(s.elapsed),
        s.already_done,
        s.already_done + s.measured,
        s.total,
        s.header.v,
        s.header.fingerprint,
        s.header.placements.len(),
        s.provenance,
        s.provenance_evidence
    );
    if s.again > 0 {
        println!(
            "measured again: {} measurement(s) an earlier collection recorded as unusable, {} of them usable now (the usable record supersedes the unusable one; --keep-unusable leaves them as they are)",
            s.again, s.again_usable
        );
    }
    if s.kept_unusable > 0 {
        println!(
            "kept: {} measurement(s) the file holds as unusable, not measured again (--keep-unusable)",
            s.kept_unusable
        );
    }
    for skipped in &s.skipped {
        println!("skipped: {skipped}");
    }
    for unusable in &s.unusable {
        println!("unusable: {unusable}");
    }
    if !s.unusable.is_empty() {
        println!(
            "{} measurement(s) recorded as unusable (not a number): fitting leaves their workload runs out; an idle host, more --retries or longer --windows may measure them; running the same command again measures each of them again once",
            s.unusable.len()
        );
    }
    println!("data: {}", out.display());
}

/// The figures behind a refusal by the accuracy gate, printed before the error says why.
pub fn print_refused(e: &pipeline::PipelineError) {
    if let pipeline::PipelineError::BelowGate { refused, .. } = e {
        let (model, evaluation) = refused.as_ref();
        if let Some(evaluation) = evaluation {
            print!("{}", report::evaluation_tables(evaluation));
        }
        print!("{}", report::model_summary(model));
    }
}
