//! The reports of the model across sizes: leave one size out, and the search for the fewest sizes.

use std::fmt::Write as _;

use placed_models::accuracy::ErrorSummary;
use placed_models::size_search::SizeChoice;
use placed_models::sizes::AcrossSizes;
use placed_models::{Dataset, Provenance};

use super::{aligned, banner_for};

/// Leave-one-size-out against the per-size models, with what each size's collection took.
pub fn sizes_table(a: &AcrossSizes) -> String {
    let v_list: Vec<String> = a.sizes.iter().map(|s| s.v.to_string()).collect();
    let mut out = banner_for(a.provenance, &a.fingerprint, &v_list.join(", "));
    out.push_str(
        "leave one size out: each size predicted by one forest trained on the other sizes (placements described by their resources, the size's family left out too), against the size's own model (leave one family out)\n",
    );
    let summary = |s: &ErrorSummary| format!("{:.1}/{:.1}%", s.mean, s.worst);
    let rows: Vec<[String; 7]> = a
        .sizes
        .iter()
        .map(|s| {
            [
                s.v.to_string(),
                s.placements.to_string(),
                s.runs.to_string(),
                s.measurements.to_string(),
                summary(&s.per_size),
                summary(&s.across),
                s.probe.clone(),
            ]
        })
        .collect();
    out.push_str(&aligned(
        [
            "V",
            "PLACEMENTS",
            "RUNS",
            "MEASUREMENTS",
            "OWN MODEL MEAN/WORST",
            "ACROSS SIZES MEAN/WORST",
            "PROBE ACROSS SIZES",
        ],
        &rows,
    ));
    let total: usize = a.sizes.iter().map(|s| s.measurements).sum();
    let _ = writeln!(
        out,
        "collection: {total} placement measurements for every size; a size left to the model across sizes saves its own (at the collector's default protocol about 10 s each: 2 s warm-up, 16 windows of 0.5 s)"
    );
    out
}

/// Sizes as a report lists them: "4, 8, 16".
pub fn size_list<T: ToString>(vs: &[T]) -> String {
    vs.iter().map(T::to_string).collect::<Vec<_>>().join(", ")
}

/// Which sizes the search for the fewest sizes collected, each check on the way, and the
/// collection it saved; `measurements(v)` is a size's placement measurements (runs x
/// placements), `None` where unknown.
pub fn size_choice(c: &SizeChoice, measurements: &dyn Fn(u32) -> Option<usize>) -> String {
    let mut out = String::new();
    if let Some(first) = c.data.first() {
        let provenance = Provenance::least_real(c.data.iter().map(Dataset::provenance));
        out.push_str(&banner_for(
            provenance,
            &first.header().fingerprint,
            &size_list(&c.wanted),
        ));
    }
    let _ = writeln!(
        out,
        "fewest sizes: the ends first, then the middle of the widest gap, until every collected size but the ends (two at least, or one of four), held out, is predicted by the model across the others within {:.1}% mean error",
        c.target
    );
    let _ = writeln!(out, "collected, in order: v = {}", size_list(&c.order));
    for check in &c.checks {
        let held: Vec<String> = check
            .held_out
            .iter()
            .map(|h| {
                if h.across.cells == 0 {
                    format!("v={} nothing to predict", h.v)
                } else {
                    format!(
                        "v={} {:.1}/{:.1}% (own model {:.1}%)",
                        h.v, h.across.mean, h.across.worst, h.per_size.mean
                    )
                }
            })
            .collect();
        let _ = writeln!(
            out,
            "  with v = {}: held out, mean/worst {}: {}",
            size_list(&check.collected),
            held.join(", "),
            if check.passed {
                "within the target"
            } else if check
                .held_out
                .iter()
                .filter(|h| h.across.cells > 0)
                .all(|h| h.across.mean <= c.target)
            {
                "within the target, but one held-out size is too little evidence: collecting more"
            } else {
                "not within the target, collecting more"
            }
        );
    }
    if c.left.is_empty() {
        let why = if c.wanted.len() <= 2 {
            "every size asked for is an end of the range (two or fewer), so nothing is left to predict"
        } else if c.checks.is_empty() {
            "the ends and the size between them are every size asked for, so nothing is left to predict"
        } else {
            "the model across sizes never met the target"
        };
        let _ = writeln!(out, "every size collected: {why}");
        return out;
    }
    let _ = writeln!(
        out,
        "left to the model across sizes: v = {}",
        size_list(&c.left)
    );
    let all: Option<usize> = c.wanted.iter().map(|&v| measurements(v)).sum();
    let saved: Option<usize> = c.left.iter().map(|&v| measurements(v)).sum();
    if let (Some(all), Some(saved)) = (all, saved) {
        let _ = writeln!(
            out,
            "collection: {} of {all} placement measurements, {saved} saved ({:.0}%), about {:.1} h of an idle host at the default protocol (about 10 s each)",
            all - saved,
            100.0 * saved as f64 / all.max(1) as f64,
            saved as f64 * 10.0 / 3600.0
        );
    }
    out
}
