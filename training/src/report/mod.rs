//! What `placed-train fit` and `placed-train evaluate` print: accuracy tables for people.
//! Simulated data is announced on the first line of every report.

use std::fmt::Write as _;

use placed_models::accuracy::{Accuracy, ErrorSummary};
use placed_models::check::{CheckReport, NoveltyCounts};
use placed_models::hold_out::Split;
use placed_models::interval::{Calibration, CellCoverage, Score};
use placed_models::model::ProbeCandidate;
use placed_models::{Dataset, Evaluation, Model, Predictor, Provenance};

mod sizes;
pub use sizes::{size_choice, size_list, sizes_table};

/// The banner every report starts with: what the numbers are about and where they came from.
pub fn banner(provenance: Provenance, fingerprint: &str, v: u32) -> String {
    banner_for(provenance, fingerprint, &v.to_string())
}

/// [`banner`] for one or several sizes (`v` as shown).
fn banner_for(provenance: Provenance, fingerprint: &str, v: &str) -> String {
    let warning = match provenance {
        Provenance::Simulated => {
            "\n*** SIMULATED DATA: these figures say nothing about any real machine ***"
        }
        Provenance::VirtualMachine => {
            "\n*** VIRTUAL-MACHINE DATA: timings do not represent real hardware ***"
        }
        Provenance::Real => "",
    };
    format!("machine class {fingerprint}, v = {v}, data: {provenance}{warning}\n")
}

fn cell(s: Option<ErrorSummary>) -> String {
    // No scored cell (every placement measured) is no error figure, not a perfect one.
    s.filter(|s| s.cells > 0)
        .map_or_else(|| "-".into(), |s| format!("{:6.2} {:7.2}", s.mean, s.worst))
}

struct Columns<'a> {
    forest: &'a Accuracy,
    category: &'a Accuracy,
    iterative: &'a Accuracy,
    counters: Option<&'a Accuracy>,
}

impl Columns<'_> {
    fn names(&self) -> Vec<&'static str> {
        let mut names = vec!["forest", "category mean", "iterative"];
        if self.counters.is_some() {
            names.push("counters");
        }
        names
    }

    /// Two header lines: the predictors, then mean and worst under each.
    fn header(&self, first: &str, width: usize) -> String {
        let mut top = format!("{:<width$}", "");
        let mut bottom = format!("{first:<width$}");
        for name in self.names() {
            let _ = write!(top, "  {name:>14}");
            let _ = write!(bottom, "  {:>6} {:>7}", "mean", "worst");
        }
        format!("{top}\n{bottom}")
    }

    fn line(
        &self,
        label: &str,
        width: usize,
        pick: impl Fn(&Accuracy) -> Option<ErrorSummary>,
    ) -> String {
        let mut l = format!("{label:<width$}");
        for a in [
            Some(self.forest),
            Some(self.category),
            Some(self.iterative),
            self.counters,
        ]
        .into_iter()
        .flatten()
        {
            let _ = write!(l, "  {:>14}", cell(pick(a)));
        }
        l
    }
}

/// The category predictors with the classification tree and with the thesis's interval
/// rules it replaces, overall.
fn category_comparison(e: &Evaluation) -> String {
    let per_row = |m: &[usize]| m.iter().sum::<usize>() as f64 / e.rows.len().max(1) as f64;
    let mut out = format!(
        "\ncategories assigned by the tree (linfa-trees) and by interval rules (thesis §2.4.1):\n{:<14}  {:>14}  {:>14}  {:>9}\n{:<14}  {:>6} {:>7}  {:>6} {:>7}  {:>9}\n",
        "",
        "category mean",
        "iterative",
        "iterative",
        "",
        "mean",
        "worst",
        "mean",
        "worst",
        "measured"
    );
    for (name, mean, iterative, measured) in [
        (
            "tree",
            &e.category_mean,
            &e.iterative,
            &e.iterative_measurements,
        ),
        (
            "interval rules",
            &e.category_mean_intervals,
            &e.iterative_intervals,
            &e.iterative_intervals_measurements,
        ),
    ] {
        let _ = writeln!(
            out,
            "{name:<14}  {:>14}  {:>14}  {:>9.1}",
            cell(Some(mean.accuracy.overall())),
            cell(Some(iterative.accuracy.overall())),
            per_row(measured)
        );
    }
    out
}

/// A model checked on data it was not trained on: overall, per placement and per workload.
pub fn check_tables(c: &CheckReport, model: &dyn Predictor) -> String {
    let machine = model.machine();
    let mut out = banner(c.provenance, &machine.fingerprint, machine.v);
    let _ = writeln!(
        out,
        "model {} on {} workload runs; errors in % over the placements predicted (all but the baseline {} and the probe {})",
        c.model_id,
        c.runs.len(),
        model.baseline(),
        model.probe()
    );
    if c.partial_runs > 0 {
        let _ = writeln!(
            out,
            "{} of them partial runs (production data), each scored on the placements it was measured in; {} more partial runs lacked the model's baseline or probe and were left out",
            c.partial_runs - c.partial_skipped,
            c.partial_skipped
        );
    }
    if model.provenance() != c.provenance {
        let _ = writeln!(
            out,
            "the model was trained on {} data, this data is {}",
            model.provenance(),
            c.provenance
        );
    }
    let coverage = c.coverage().map_or_else(
        || "no intervals (the model has no calibration)".to_owned(),
        |v| format!("interval coverage {:.1}% (nominal 90%)", 100.0 * v),
    );
    let _ = writeln!(
        out,
        "\noverall: {}; {coverage}\nnovelty: {}",
        c.overall().map_or_else(
            || "nothing predicted".to_owned(),
            |s| format!(
                "{:.2}% mean, {:.2}% worst over {} cells",
                s.mean, s.worst, s.cells
            )
        ),
        novelty_line(c.novelty()),
    );
    let width = id_width(&c.placements);
    let _ = writeln!(
        out,
        "\nper placement:\n{:<width$}  {:>6} {:>7}",
        "placement", "mean", "worst"
    );
    for (p, id) in c.placements.iter().enumerate() {
        match c.placement(p) {
            Some(s) => {
                let _ = writeln!(out, "{id:<width$}  {}", cell(Some(s)));
            }
            None => {
                let _ = writeln!(out, "{id:<width$}  (measured)");
            }
        }
    }
    let workloads = c.workloads();
    let width = column_width(workloads.iter().map(|w| w.workload.len()), 8);
    let _ = writeln!(
        out,
        "\nper workload:\n{:<width$}  {:>4}  {:>14}  {:>8}  {:>5}",
        "workload", "runs", "mean   worst", "covered", "novel"
    );
    for w in workloads {
        let covered = if w.with_interval == 0 {
            "-".to_owned()
        } else {
            format!("{}/{}", w.covered, w.with_interval)
        };
        let _ = writeln!(
            out,
            "{:<width$}  {:>4}  {:>14}  {covered:>8}  {:>5}",
            w.workload,
            w.runs,
            cell(w.error),
            w.novel
        );
    }
    out
}

/// How the novelty warning picked out the runs far off, in one line.
fn novelty_line(n: NoveltyCounts) -> String {
    format!(
        "{} of {} runs flagged; {} runs more than {}% off somewhere, {} of them flagged",
        n.flagged,
        n.runs,
        n.far_off,
        placed_models::check::FAR_OFF_PERCENT,
        n.far_off_flagged
    )
}

/// The leave-one-behaviour-out summary of `evaluate --hold-out`: the novelty warning on the
/// held-out families (a behaviour the model never saw) against the in-distribution rows
/// (the other families, out of fold).
pub fn hold_out_summary(
    split: &Split,
    groups: &[String],
    e: &Evaluation,
    c: &CheckReport,
) -> String {
    let marked = match e.provenance {
        Provenance::Real => "",
        Provenance::Simulated => " (SIMULATED data)",
        Provenance::VirtualMachine => " (VIRTUAL-MACHINE data)",
    };
    let mut out = format!(
        "\nleave one behaviour out{marked}: held out {} ({} families, {} runs); model trained on the other {} runs\n",
        groups.join(", "),
        split.families.len(),
        c.runs.len(),
        e.rows.len()
    );
    let percent = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}%"));
    let row = |label: &str, n: NoveltyCounts, error: Option<ErrorSummary>| {
        [
            label.to_owned(),
            n.runs.to_string(),
            error.map_or_else(|| "-".into(), |s| format!("{:.1}/{:.1}%", s.mean, s.worst)),
            n.far_off.to_string(),
            format!(
                "{} ({})",
                n.far_off_flagged,
                percent(n.far_off_flagged_percent())
            ),
            format!("{} ({})", n.flagged, percent(n.flagged_percent())),
        ]
    };
    out.push_str(&aligned(
        [
            "RUNS",
            "N",
            "FOREST MEAN/WORST",
            &format!(">{}% OFF", placed_models::check::FAR_OFF_PERCENT),
            "FLAGGED OF THOSE",
            "FLAGGED OF ALL",
        ],
        &[
            row("held out", c.novelty(), c.overall()),
            row(
                "in distribution (out of fold)",
                e.novelty(),
                Some(e.forest.accuracy.overall()),
            ),
        ],
    ));
    out
}

/// Width of a column of placement ids, at least as wide as its header.
fn id_width(ids: &[String]) -> usize {
    column_width(ids.iter().map(String::len), 9)
}

/// Width of a column whose cells are `lengths` long, at least `at_least`.
fn column_width(lengths: impl IntoIterator<Item = usize>, at_least: usize) -> usize {
    lengths.into_iter().max().unwrap_or(at_least).max(at_least)
}

/// Every probe candidate's cross-validated error, the chosen one marked.
fn probe_table(candidates: &[ProbeCandidate], chosen: &str) -> String {
    let width = column_width(candidates.iter().map(|c| c.placement.len()), 9);
    let mut out = format!(
        "\nprobe candidates (forest, cross-validated % error):\n{:<width$}  {:>6} {:>7}\n",
        "placement", "mean", "worst"
    );
    for c in candidates {
        let mark = if c.placement == chosen {
            "  <- chosen"
        } else {
            ""
        };
        let figures = if c.error.cells == 0 {
            // With the probe and the baseline measured, nothing is left to predict.
            format!("{:>6} {:>7}", "-", "-")
        } else {
            format!("{:6.2} {:7.2}", c.error.mean, c.error.worst)
        };
        let _ = writeln!(out, "{:<width$}  {figures}{mark}", c.placement);
    }
    out
}

/// The evaluation as tables: probe candidates, overall, per placement and per workload, in
/// absolute percentage error (mean and worst) over the placements that were not measured.
pub fn evaluation_tables(e: &Evaluation) -> String {
    let mut out = banner(e.provenance, &e.machine.fingerprint, e.machine.v);
    let _ = writeln!(
        out,
        "leave-one-family-out cross-validation over {} workload runs in {} placements",
        e.rows.len(),
        e.placements.len()
    );
    let _ = writeln!(
        out,
        "baseline {}, probe {} (chosen below); errors in % over the other {} placements",
        e.placements[e.baseline],
        e.placements[e.probe],
        e.placements.len().saturating_sub(2)
    );
    out.push_str(&probe_table(&e.probe_candidates, &e.placements[e.probe]));
    let width = id_width(&e.placements);
    let cols = Columns {
        forest: &e.forest.accuracy,
        category: &e.category_mean.accuracy,
        iterative: &e.iterative.accuracy,
        counters: e.counter_baseline.as_ref().map(|c| &c.accuracy),
    };
    let _ = writeln!(out, "\noverall:\n{}", cols.header("", 10));
    let _ = writeln!(out, "{}", cols.line("all", 10, |a| Some(a.overall())));
    let measured: f64 =
        e.iterative_measurements.iter().sum::<usize>() as f64 / e.rows.len().max(1) as f64;
    let _ = writeln!(
        out,
        "forest and category mean use the baseline and probe observations; the iterative method \
         (algorithm 4) measured {measured:.1} placements per workload on average"
    );
    if !e.dropped_counters.is_empty() {
        let _ = writeln!(
            out,
            "counters left out because some records lack them: {} (collect them on every run to use them)",
            e.dropped_counters.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "novelty warning, out of fold: {}",
        novelty_line(e.novelty())
    );
    out.push_str(&category_comparison(e));
    let _ = writeln!(out, "\nper placement:\n{}", cols.header("placement", width));
    for (p, id) in e.placements.iter().enumerate() {
        if p == e.baseline || p == e.probe {
            let _ = writeln!(out, "{id:<width$}  (measured)");
        } else {
            let _ = writeln!(out, "{}", cols.line(id, width, |a| a.placement(p)));
        }
    }
    out.push_str(&coverage_table(&e.calibration, &e.placements, width));
    let width = column_width(e.rows.iter().map(|r| r.workload.len() + 4), 8);
    let _ = writeln!(out, "\nper workload:\n{}", cols.header("workload", width));
    for (r, row) in e.rows.iter().enumerate() {
        let label = if row.run == 0 {
            row.workload.clone()
        } else {
            format!("{} #{}", row.workload, row.run)
        };
        let _ = writeln!(out, "{}", cols.line(&label, width, |a| a.row(r)));
    }
    out
}

/// How often the forest's calibrated intervals covered held-out families' actual values,
/// per placement and overall.
fn coverage_table(c: &Calibration, placements: &[String], width: usize) -> String {
    let level = c.level * 100.0;
    let mut out = format!(
        "\nprediction intervals (nominal {level:.0}%, {} score; coverage of each family's cells by intervals calibrated on the other families):\n{:<width$}  {:>8} {:>6} {:>10}\n",
        score_name(c.score),
        "placement",
        "coverage",
        "cells",
        "+-mean %"
    );
    let line = |label: &str, cov: &CellCoverage| {
        let fraction = cov
            .fraction()
            .map_or_else(|| "n/a".to_owned(), |f| format!("{:.1}%", f * 100.0));
        let half = cov
            .mean_half_width
            .map_or_else(|| "unbounded".to_owned(), |w| format!("{w:.2}"));
        format!(
            "{label:<width$}  {fraction:>8} {:>6} {half:>10}\n",
            cov.cells
        )
    };
    for (id, cov) in placements.iter().zip(&c.coverage.placements) {
        match cov {
            Some(cov) => out.push_str(&line(id, cov)),
            None => {
                let _ = writeln!(out, "{id:<width$}  (measured)");
            }
        }
    }
    out.push_str(&line("all", &c.coverage.overall));
    out
}

fn score_name(score: Score) -> &'static str {
    match score {
        Score::Relative => "relative-error",
        Score::Spread => "tree-spread",
    }
}

/// What `fit` reports about the model it wrote.
pub fn model_summary(model: &Model) -> String {
    let m = model.machine();
    let mut out = banner(model.provenance(), &m.fingerprint, m.v);
    let t = model.training();
    let a = model.accuracy();
    let _ = writeln!(
        out,
        "model {}: {} workloads ({} runs, {} families), {} trees, inputs: {}",
        model.id(),
        t.workloads,
        t.runs,
        t.families.len(),
        t.forest.n_trees(),
        model
            .features()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    out.push_str(&probe_table(&a.probe_candidates, model.probe()));
    let _ = writeln!(
        out,
        "\nmeasure {} first, then {}",
        model.baseline(),
        model.probe()
    );
    let pair = |e: ErrorSummary| {
        if e.cells == 0 {
            "n/a".to_owned()
        } else {
            format!("{:.2} / {:.2}", e.mean, e.worst)
        }
    };
    if a.forest.cells == 0 {
        let _ = writeln!(
            out,
            "cross-validated error: none, nothing is predicted (every placement is measured)"
        );
    } else {
        let _ = writeln!(
            out,
            "cross-validated error (% mean / worst): forest {}, category mean {}, iterative method {}{}",
            pair(a.forest),
            pair(a.category_mean),
            pair(a.iterative),
            a.counter_baseline
                .map_or_else(String::new, |c| format!(", counter baseline {}", pair(c)))
        );
    }
    match model.calibration() {
        Some(c) => {
            let _ = writeln!(
                out,
                "prediction intervals: nominal {:.0}% ({} score), cross-validated coverage {}",
                c.level * 100.0,
                score_name(c.score),
                c.coverage
                    .overall
                    .fraction()
                    .map_or_else(|| "n/a".to_owned(), |f| format!("{:.1}%", f * 100.0))
            );
        }
        None => {
            let _ = writeln!(out, "prediction intervals: none (no calibration)");
        }
    }
    if let Some(failure) = model.below_gate() {
        let _ = writeln!(
            out,
            "*** BELOW THE ACCURACY GATE (installed with --accept-inaccurate): the daemon only observes with this model ***\n    {failure}"
        );
    }
    if let Some(oob) = t.out_of_bag {
        let _ = writeln!(
            out,
            "out-of-bag mean absolute error of relative performance: {:.4}",
            oob.mean_absolute_error
        );
    }
    let cats = model.categories();
    let _ = writeln!(
        out,
        "{} performance categories (silhouette {})",
        cats.all().len(),
        cats.silhouette()
            .map_or_else(|| "n/a".into(), |s| format!("{s:.3}"))
    );
    for (i, c) in cats.under_populated() {
        let _ = writeln!(
            out,
            "  category {i} has only {} workload(s) ({}): add training workloads that behave like these",
            c.workloads.len(),
            c.workloads.join(", ")
        );
    }
    out
}

/// The records a later measurement replaced, and the workload runs fitting leaves out
/// because a measurement of theirs is unusable; empty when there are none.
pub fn left_out(data: &Dataset) -> String {
    let mut out = String::new();
    if data.superseded() > 0 {
        let _ = writeln!(
            out,
            "measured again: {} record(s) replaced by a later measurement of the same workload run and placement (the usable one is kept)",
            data.superseded()
        );
    }
    if data.partial_runs() > 0 {
        let _ = writeln!(
            out,
            "partial runs (production data): {}; fit, evaluate and sizes learn from whole runs only and leave them out, check scores each on the placements it measured",
            data.partial_runs()
        );
    }
    let unusable: Vec<_> = data.unusable().collect();
    if unusable.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "left out of fitting: {} unusable measurement(s), and with each its whole workload run:",
        unusable.len()
    );
    for r in unusable {
        let _ = writeln!(
            out,
            "  {} run {} in {}: {}",
            r.workload,
            r.run,
            r.placement,
            r.unusable.as_deref().unwrap_or_default()
        );
    }
    out
}

/// Rows as left-aligned columns two spaces apart, the header first; trailing blanks cut.
pub fn aligned<const N: usize>(header: [&str; N], rows: &[[String; N]]) -> String {
    let header = header.map(String::from);
    let mut widths = [0usize; N];
    for row in std::iter::once(&header).chain(rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}
