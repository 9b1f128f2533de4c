//! On SIMULATED data held out by family, the forest on two observations must beat the
//! category mean, the iterative method and the counter baseline (thesis §2.4.3's finding).
//! A small data set and few trees keep this quick; `docs/models.md` has the full-size
//! figures.

use placed_models::forest::ForestParams;
use placed_models::{TrainOptions, evaluate};

#[test]
fn the_forest_beats_every_comparator_on_held_out_families() {
    let data = crate::support::simulated_data(4);
    let options = TrainOptions {
        forest: ForestParams::new().n_trees(20),
        ..TrainOptions::default()
    };
    let e = evaluate(&data, &options).expect("evaluates");
    let forest = e.forest.accuracy.overall().mean;
    let category = e.category_mean.accuracy.overall().mean;
    let iterative = e.iterative.accuracy.overall().mean;
    let counters = e
        .counter_baseline
        .as_ref()
        .expect("simulated data has counters");
    let counters = counters.accuracy.overall().mean;
    eprintln!(
        "forest {forest:.2}%, category {category:.2}%, iterative {iterative:.2}%, counters {counters:.2}%"
    );
    assert!(forest < category && forest < iterative && forest < counters);
}
