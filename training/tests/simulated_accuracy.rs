//! On SIMULATED data held out by family, the forest on two observations must beat the
//! category mean, the iterative method and the counter baseline (thesis §2.4.3's finding).
//! A small data set and few trees keep this quick; `docs/models.md` has the full-size
//! figures.

use placed_core::machine::{Machine, TopologySource};
use placed_core::placement::important_placements;
use placed_models::forest::ForestParams;
use placed_models::{TrainOptions, evaluate};
use placed_training::simulate::{SimMachine, SimulationOptions, simulate};

#[test]
fn the_forest_beats_every_comparator_on_held_out_families() {
    let machine = Machine::load(
        &TopologySource::Synthetic("pack:4 numa:2 l3:1 l2:4 core:2 pu:1".into()),
        None,
    )
    .expect("synthetic topology");
    let set = important_placements(&machine, 16).expect("placements");
    let sim = SimMachine::from_placed(&machine, &set).expect("resources");
    let data = simulate(
        &sim,
        &SimulationOptions {
            families: 32,
            workloads_per_family: 4,
            ..SimulationOptions::default()
        },
    )
    .expect("simulates");
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
