//! On SIMULATED data from several topologies and container sizes, the forest's nominal 90%
//! intervals, calibrated on held-out families, must cover held-out families' cells at
//! close to 90%: coverage is measured one family at a time against a calibration fitted on
//! the others (docs/models.md, "Prediction intervals"). Small data sets and forests keep
//! this quick; docs/models.md has full-size figures.

use std::path::PathBuf;

use placed_core::machine::{Machine, TopologySource};
use placed_core::placement::important_placements;
use placed_models::forest::ForestParams;
use placed_models::interval::{IntervalParams, Score};
use placed_models::{TrainOptions, evaluate};
use placed_training::simulate::{SimMachine, SimulationOptions, simulate};

fn topology(name: &str) -> TopologySource {
    TopologySource::XmlFile(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/topologies/hwloc-xml")
            .join(name),
    )
}

#[test]
fn nominal_90_percent_intervals_cover_held_out_families_at_close_to_90_percent() {
    let cases = [
        (
            "synthetic 4x2 numa",
            TopologySource::Synthetic("pack:4 numa:2 l3:1 l2:4 core:2 pu:1".into()),
            16,
            1,
        ),
        (
            "4x Opteron 6272",
            topology("x86-AMD-15h-Bulldozer-4xOpteron-6272.xml"),
            8,
            2,
        ),
        (
            "2x Xeon 6140",
            topology("x86-Intel-Skylake-2xXeon6140.xml"),
            12,
            3,
        ),
    ];
    for (name, source, v, seed) in cases {
        let machine = Machine::load(&source, None).expect("topology");
        let set = important_placements(&machine, v).expect("placements");
        let sim = SimMachine::from_placed(&machine, &set).expect("resources");
        let data = simulate(
            &sim,
            &SimulationOptions {
                families: 24,
                workloads_per_family: 4,
                seed,
                ..SimulationOptions::default()
            },
        )
        .expect("simulates");
        let options = TrainOptions {
            forest: ForestParams::new().n_trees(10).seed(seed),
            ..TrainOptions::default()
        };
        let e = evaluate(&data, &options).expect("evaluates");
        assert_eq!(e.calibration.level, 0.9);
        for score in [Score::Spread, Score::Relative] {
            let c = e.calibrate(IntervalParams { level: 0.9, score });
            let overall = c.coverage.overall;
            let covered = overall.fraction().expect("predicted cells");
            eprintln!(
                "SIMULATED {name}, v={v}, {} placements, {score:?}: coverage {covered:.3} of {} cells, mean half-width {:?}%",
                e.placements.len(),
                overall.cells,
                overall.mean_half_width
            );
            assert!(
                (0.80..=0.97).contains(&covered),
                "{name} v={v} {score:?}: nominal 90% intervals covered {covered:.3}"
            );
            for (p, cov) in c.coverage.placements.iter().enumerate() {
                let measured = p == e.baseline || p == e.probe;
                assert_eq!(cov.is_none(), measured, "placement {p}");
            }
        }
    }
}
