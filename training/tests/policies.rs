//! The thesis's use case on SIMULATED data (§2.5, figures 2.13-2.14): with goals relative to
//! the whole machine, the model policy keeps the goal for most workloads while packing more
//! containers per machine than the conservative policy or any one placement chosen blind,
//! and it misses the goal less than smart-aggressive, which packs the most. The shape is
//! asserted, not the figures; a small data set and few trees keep this quick.

use placed_core::machine::{Machine, TopologySource};
use placed_core::placement::important_placements;
use placed_models::forest::ForestParams;
use placed_models::{Provenance, TrainOptions};
use placed_training::policies::{self, Replayed};
use placed_training::simulate::{SimMachine, SimulationOptions, simulate};

#[test]
fn the_model_policy_keeps_the_goal_and_packs_more_than_one_placement() {
    let machine = Machine::load(
        &TopologySource::Synthetic("pack:2 numa:2 l3:1 core:4 pu:2".into()),
        None,
    )
    .expect("synthetic topology");
    let set = important_placements(&machine, 8).expect("placements");
    let sim = SimMachine::from_placed(&machine, &set).expect("resources");
    let data = simulate(
        &sim,
        &SimulationOptions {
            families: 8,
            workloads_per_family: 3,
            ..SimulationOptions::default()
        },
    )
    .expect("simulates");
    // Goals relative to the whole machine, as the thesis sets them: the placement with the
    // most units (the set lists fewest units first).
    let whole = set.placements.last().expect("a placement").id.clone();
    let options = TrainOptions {
        baseline: Some(whole),
        forest: ForestParams::new().n_trees(10),
        cv_trees: Some(5),
        ..TrainOptions::default()
    };
    let replay = policies::replay(&data, &machine, &set, &[0.9, 1.0], &options).expect("replays");
    assert_eq!(replay.provenance, Provenance::Simulated);
    for goal in [0.9, 1.0] {
        let model = replay.summary(goal, Replayed::Model);
        let smart = replay.summary(goal, Replayed::SmartAggressive);
        let conservative = replay.summary(goal, Replayed::Conservative);
        let one = replay.summary(goal, Replayed::OnePlacement);
        eprintln!("goal {goal}: model {model:?}\nsmart {smart:?}\none {one:?}");
        assert_eq!(model.workloads, 24);
        assert!(
            model.met * 3 >= model.workloads * 2,
            "the model keeps the goal on most workloads"
        );
        assert!(model.containers > one.containers);
        assert!(model.containers > conservative.containers);
        assert_eq!(conservative.containers, 1.0, "one container per machine");
        assert_eq!(conservative.measured, 0, "unpinned is not in the data");
        assert!(smart.containers >= model.containers);
        assert!(
            model.shortfall_mean < smart.shortfall_mean,
            "smart-aggressive packs blindly and misses more"
        );
        // Holding the interval's lower end to the goal buys goals with containers: never
        // more containers than the point rule, never fewer goals kept.
        let lower = replay.summary(goal, Replayed::ModelLowerBound);
        eprintln!("lower bound {lower:?}");
        assert!(lower.containers <= model.containers, "{lower:?} {model:?}");
        assert!(lower.met >= model.met, "{lower:?} {model:?}");
    }
}
