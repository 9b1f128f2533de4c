//! `placed-train classes simulate | evaluate | build | trial`: the model across machine classes
//! (docs/models.md, "Across classes"). The work is `crate::pipeline::classes`'; this prints.

use std::fmt::Write as _;

use placed_models::Provenance;
use placed_models::classes::AcrossClasses;
use placed_models::resources::FeatureGroup;

use super::CliError;
use super::request::{ClassesRequest, ModelDestination};
use crate::pipeline::classes as pipeline;

/// Runs one `classes` command.
pub fn run(request: ClassesRequest) -> Result<(), CliError> {
    match request {
        ClassesRequest::Simulate {
            topologies,
            out_dir,
            options,
        } => {
            let written = pipeline::simulate_corpus(&topologies, &options, &out_dir)?;
            for f in &written {
                println!(
                    "wrote SIMULATED data (no hardware measured) for {} ({}), v = {}, {} placements, {} workloads: {}",
                    f.source.display(),
                    f.topology,
                    f.v,
                    f.placements,
                    options.families * options.workloads_per_family,
                    f.path.display()
                );
            }
            Ok(())
        }
        ClassesRequest::Evaluate {
            corpus,
            ablation,
            options,
        } => {
            let data = pipeline::load_corpus(&corpus)?;
            let results = pipeline::evaluate(&data, &options, ablation)?;
            if let Some((_, full)) = results.first() {
                print!("{}", table(full));
            }
            if ablation {
                print!("{}", ablation_table(&results));
            }
            Ok(())
        }
        ClassesRequest::Build {
            corpus,
            destination,
            options,
        } => build(&corpus, destination, &options),
        ClassesRequest::Trial {
            corpus,
            data,
            families,
            test_families,
            options,
        } => trial(&corpus, &data, &families, test_families, &options),
    }
}

/// A trial's table: the prior and the host's own model after each production count, on
/// the same test cells.
fn trial_table(t: &crate::pipeline::trial::Trial, provenance: Provenance) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "class {} ({} placements) held out of the corpus ({} data{}); checked on its last {} families, mean / worst % error over {} cells",
        t.fingerprint,
        t.placements,
        label(provenance),
        if provenance == Provenance::Real {
            ""
        } else {
            ": these figures say nothing about any real machine"
        },
        t.test_families,
        t.prior.error.cells
    );
    let _ = writeln!(
        out,
        "{:<30} {:>8} {:>6} {:>15} {:>15} {:>9}",
        "model", "families", "runs", "on the test", "cross-valid.", "coverage"
    );
    let pair = |s: placed_models::accuracy::ErrorSummary| format!("{:.2} / {:.2}", s.mean, s.worst);
    let coverage =
        |c: Option<f64>| c.map_or_else(|| "none".to_owned(), |c| format!("{:.1}%", 100.0 * c));
    let _ = writeln!(
        out,
        "{:<30} {:>8} {:>6} {:>15} {:>15} {:>9}",
        "the prior (across classes)",
        "-",
        "-",
        pair(t.prior.error),
        "-",
        coverage(t.prior.coverage)
    );
    for h in &t.hosts {
        let _ = writeln!(
            out,
            "{:<30} {:>8} {:>6} {:>15} {:>15} {:>9}",
            "the host's own (fit --prior)",
            h.families,
            h.runs,
            pair(h.checked.error),
            pair(h.cross_validated),
            coverage(h.checked.coverage)
        );
    }
    out
}

/// `classes build`: fitted, written or installed, and said what it refuses.
fn build(
    corpus: &std::path::Path,
    destination: ModelDestination,
    options: &placed_models::TrainOptions,
) -> Result<(), CliError> {
    let data = pipeline::load_corpus(corpus)?;
    let (model, report) = pipeline::build(&data, options)?;
    print!("{}", table(&report));
    let path = match destination {
        ModelDestination::File(path) => {
            pipeline::write(&model, &path)?;
            path
        }
        ModelDestination::ModelDir(dir) => pipeline::install(&model, &dir)?,
    };
    let intervals = model.spread_scale().map_or_else(
        || format!("+/- {:.1}% relative", 100.0 * model.error_quantile()),
        |s| {
            format!(
                "+/- {:.2} x (the trees' relative spread + {}), so at least +/- {:.1}%",
                s.quantile,
                s.floor,
                100.0 * s.half_width(0.0)
            )
        },
    );
    println!(
        "wrote the model across classes {} ({} data, intervals {intervals}, nominal 90%) to {}",
        model.id(),
        label(model.provenance()),
        path.display()
    );
    let refused: Vec<&str> = model
        .classes()
        .iter()
        .filter(|c| c.worse_than_no_model())
        .map(|c| c.topology.as_str())
        .collect();
    if !refused.is_empty() {
        println!(
            "it refuses hosts shaped most like: {} (worse than the category mean there)",
            refused.join("; ")
        );
    }
    Ok(())
}

/// `classes trial`: the prior against the host's own model on a class held out.
fn trial(
    corpus: &std::path::Path,
    data: &std::path::Path,
    families: &[usize],
    test_families: usize,
    options: &placed_models::TrainOptions,
) -> Result<(), CliError> {
    let corpus = pipeline::load_corpus(corpus)?;
    let class = placed_models::Dataset::load(data)?;
    let result = crate::pipeline::trial::trial(&corpus, &class, families, test_families, options)?;
    let provenance = Provenance::least_real(
        corpus
            .iter()
            .chain(std::iter::once(&class))
            .map(placed_models::Dataset::provenance),
    );
    print!("{}", trial_table(&result, provenance));
    Ok(())
}

fn label(p: Provenance) -> String {
    if p == Provenance::Real {
        p.to_string()
    } else {
        p.to_string().to_uppercase()
    }
}

/// The leave-one-class-out table: per class, the model across the other classes against
/// its own model and the category mean (mean / worst % error), its intervals' coverage and
/// their median half-width.
pub fn table(a: &AcrossClasses) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "leave one machine class out ({} data{}); mean / worst % error over the predicted cells",
        label(a.provenance),
        if a.provenance == Provenance::Real {
            ""
        } else {
            ": these figures say nothing about any real machine"
        }
    );
    let _ = writeln!(
        out,
        "{:<44} {:>4} {:>4} {:>15} {:>15} {:>15} {:>9} {:>6}",
        "class (topology)",
        "v",
        "pl.",
        "own model",
        "category mean",
        "across classes",
        "coverage",
        "+/- %"
    );
    let pair = |s: placed_models::accuracy::ErrorSummary| format!("{:.1} / {:.1}", s.mean, s.worst);
    for c in &a.classes {
        let _ = writeln!(
            out,
            "{:<44} {:>4} {:>4} {:>15} {:>15} {:>15} {:>8.1}% {:>6.1}{}",
            clip(&c.topology, 44),
            c.v,
            c.placements,
            pair(c.own),
            pair(c.category_mean),
            pair(c.across),
            100.0 * c.coverage,
            100.0 * c.half_width,
            if c.worse_than_no_model() {
                "  worse than no model: refused"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(
        out,
        "{:<44} {:>4} {:>4} {:>15} {:>15} {:>15} {:>8.1}%",
        "all cells",
        "",
        "",
        pair(a.own()),
        pair(a.category_mean()),
        pair(a.overall()),
        100.0 * a.coverage()
    );
    out
}

/// The ablation: every group, then each left out, over all classes.
pub fn ablation_table(results: &[(Option<FeatureGroup>, AcrossClasses)]) -> String {
    let mut out = String::from(
        "\nablation: the model across classes without each group of resource descriptions\n",
    );
    let _ = writeln!(
        out,
        "{:<24} {:>10} {:>10} {:>10}",
        "descriptions", "mean %", "worst %", "coverage"
    );
    for (left_out, a) in results {
        let name = left_out.map_or_else(|| "all".to_owned(), |g| format!("without {}", g.name()));
        let s = a.overall();
        let _ = writeln!(
            out,
            "{:<24} {:>10.2} {:>10.1} {:>9.1}%",
            name,
            s.mean,
            s.worst,
            100.0 * a.coverage()
        );
    }
    out
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        let mut c: String = s.chars().take(n - 1).collect();
        c.push('~');
        c
    }
}
