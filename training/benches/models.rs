//! Benchmarks of the models' speed targets, on SIMULATED data, printed as a table of medians over
//! several runs (the build machine is shared and noisy; no assertion is made on timings):
//!
//! - fitting a 100-tree forest on 1,000 workloads x 12 placements (target: under 2 s);
//! - predicting one container from its two observations (target: under 50 µs);
//! - loading that model's file, which the daemon does at start (no target).
//!
//! Run with `cargo bench -p placed-training --bench models`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use linfa::prelude::*;
use placed_core::machine::{Machine, TopologySource};
use placed_core::placement::important_placements;
use placed_models::forest::ForestParams;
use placed_models::{Dataset, Model, Observation, TrainOptions, fit, linfa_dataset};
use placed_training::save::Save as _;
use placed_training::simulate::{SimMachine, SimulationOptions, simulate};

/// Invented: 2 packages x 2 NUMA nodes x 2 L3 x 4 cores x SMT2. For v = 8 the machine model
/// finds 14 important placements; the first 12 are kept to match the target's size.
const TOPOLOGY: &str = "pack:2 numa:2 l3:2 core:4 pu:2";
const V: usize = 8;
const PLACEMENTS: usize = 12;
const WORKLOADS: usize = 1000;

fn data(families: usize) -> Dataset {
    let machine = Machine::load(&TopologySource::Synthetic(TOPOLOGY.into()), None)
        .expect("synthetic topology loads");
    let set = important_placements(&machine, V).expect("placements exist");
    let mut sim = SimMachine::from_placed(&machine, &set).expect("resources");
    sim.placements.truncate(PLACEMENTS);
    let options = SimulationOptions {
        families,
        workloads_per_family: WORKLOADS / families,
        ..SimulationOptions::default()
    };
    simulate(&sim, &options).expect("simulates")
}

struct Timing {
    what: String,
    runs: Vec<Duration>,
    target: &'static str,
}

fn time(what: String, runs: usize, target: &'static str, mut f: impl FnMut()) -> Timing {
    f(); // warm-up: page faults, rayon's pool
    let runs = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    Timing { what, runs, target }
}

fn print(timings: &[Timing]) {
    println!(
        "{:<58} {:>5} {:>11} {:>11} {:>11}  target",
        "operation (SIMULATED data)", "runs", "median", "min", "max"
    );
    for t in timings {
        let mut sorted = t.runs.clone();
        sorted.sort();
        let median = sorted[sorted.len() / 2];
        println!(
            "{:<58} {:>5} {:>11.3?} {:>11.3?} {:>11.3?}  {}",
            t.what,
            sorted.len(),
            median,
            sorted[0],
            sorted[sorted.len() - 1],
            t.target
        );
    }
}

fn main() {
    let threads = rayon::current_num_threads();
    // 125 families of 8, as cross-validation by family would see them.
    let many = data(125);
    let probe = many.header().placements[3].id.clone();
    let options = TrainOptions::default();
    let set = linfa_dataset(&many, &options, &probe).expect("design matrices");
    let mut timings = vec![time(
        format!(
            "fit: {WORKLOADS} workloads x {PLACEMENTS} placements x 100 trees, {} inputs",
            set.nfeatures()
        ),
        7,
        "< 2 s",
        || {
            black_box(ForestParams::new().n_trees(100).fit(&set).expect("fits"));
        },
    )];

    // A whole model for predict: 20 families of 50 keep its cross-validation short; the
    // final forest still has 100 trees on 1,000 workloads.
    let few = data(20);
    let quick = TrainOptions {
        cv_trees: Some(5),
        ..TrainOptions::default()
    };
    let (model, _) = fit(&few, &quick).expect("fits");
    let rows = few.records();
    let observation = |placement: &str| {
        rows.iter()
            .find(|r| r.placement == placement && r.workload == rows[0].workload)
            .map(|r| Observation {
                value: r.performance.value,
                spread: r.performance.spread,
                counters: r.counters.clone(),
            })
            .expect("the workload was measured everywhere")
    };
    let (baseline, probe) = (observation(model.baseline()), observation(model.probe()));
    let batch = 1000;
    let per_call = time(
        format!("predict one container (mean of {batch} calls)"),
        9,
        "< 50 µs",
        || {
            for _ in 0..batch {
                black_box(
                    model
                        .predict(black_box(&baseline), black_box(&probe))
                        .expect("ok"),
                );
            }
        },
    );
    timings.push(Timing {
        runs: per_call.runs.iter().map(|d| *d / batch).collect(),
        ..per_call
    });
    let dir = std::env::temp_dir().join(format!("placed-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let file = dir.join("model.json");
    model.save(&file).expect("writable");
    let size = std::fs::metadata(&file).map_or(0, |m| m.len());
    timings.push(time(
        format!("load and check the model file ({} KiB)", size / 1024),
        5,
        "-",
        || {
            black_box(Model::load(&file).expect("loads"));
        },
    ));
    let _ = std::fs::remove_dir_all(&dir);
    println!("rayon threads: {threads}; topology {TOPOLOGY:?}, v = {V}");
    print(&timings);
}
