//! SIMULATED: a model trained without one behaviour meets production containers with it; the
//! daemon's production data of them (partial runs: baseline, probe and one other placement
//! each) completed by the model and added to its training data cuts its error on other
//! workloads of that behaviour by at least 30% (issue 26). `docs/models.md` ("Production
//! data") has the figures.

use placed_models::check::check;
use placed_models::data::RunRecord;
use placed_models::forest::ForestParams;
use placed_models::impute::completed;
use placed_models::{Dataset, Predictor, TrainOptions, fit};

/// Held-out mean error of `model` on `data`.
fn error(model: &dyn Predictor, data: &Dataset) -> f64 {
    check(model, data)
        .expect("checks")
        .overall()
        .expect("cells")
        .mean
}

fn subset(data: &Dataset, keep: impl Fn(&RunRecord) -> bool) -> Dataset {
    let records = data.records().iter().filter(|r| keep(r)).cloned().collect();
    Dataset::from_parts(data.header().clone(), records).expect("a valid subset")
}

#[test]
fn production_data_of_a_left_out_behaviour_cuts_its_held_out_error() {
    let data = crate::support::simulated_data(6);
    let options = TrainOptions {
        forest: ForestParams::new().n_trees(20),
        cv_trees: Some(10),
        ..TrainOptions::default()
    };
    let left_out = |f: &str| f.starts_with("sim-latency-") && !f.starts_with("sim-latency-cache");
    // Two families of the behaviour run in production, the other two are the held-out test.
    let in_production = |f: &str| f == "sim-latency-0" || f == "sim-latency-1";
    let train = subset(&data, |r| !left_out(&r.family));
    let test = subset(&data, |r| left_out(&r.family) && !in_production(&r.family));
    let (before, _) = fit(&train, &options).expect("fits");

    // Each production run: the baseline, the probe and one other placement, in turn.
    let production = placed_training::simulate::production_runs(
        &data,
        before.baseline(),
        before.probe(),
        in_production,
    )
    .expect("valid");
    let (records, skipped) = completed(&production, &before).expect("completes");
    assert_eq!(skipped, 0);
    let mut all = train.records().to_vec();
    all.extend(records);
    let retrain = Dataset::from_parts(data.header().clone(), all).expect("valid");
    let (after, _) = fit(&retrain, &options).expect("fits");

    let (was, is) = (error(&before, &test), error(&after, &test));
    eprintln!(
        "SIMULATED ({} placements, {} production runs of 2 latency families, one extra cell each): held-out error on the other 2 latency families {was:.2}% before, {is:.2}% after ({:.0}% cut)",
        data.header().placements.len(),
        production.partial_runs(),
        100.0 * (1.0 - is / was)
    );
    assert!(is <= 0.7 * was, "{was:.2}% -> {is:.2}%");
}
