//! Benchmarks of the model across machine classes, on SIMULATED data for the real
//! topologies of the corpus (`placed_training::pipeline::classes::CORPUS_TOPOLOGIES`),
//! printed as medians (the build machine is shared and noisy; nothing is asserted on
//! timings):
//!
//! - fitting it on the whole corpus: the classes' own cross-validation, leaving each class
//!   out, and the final forest (target: under 60 s);
//! - predicting one container on a host of a class it never saw (target: under 50 µs).
//!
//! Run with `cargo bench -p placed-training --bench classes`. `PLACED_BENCH_CORPUS=DIR`
//! uses a corpus already simulated there instead of simulating one; `PLACED_BENCH_TREES=N`
//! fits a final forest of N trees instead of `placed-train classes build`'s default
//! (`placed_models::classes::FINAL_TREES`).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use placed_models::classes::Corpus;
use placed_models::forest::ForestParams;
use placed_models::{ClassesModel, Dataset, Observation, Predictor, TrainOptions};
use placed_training::pipeline::classes::{CORPUS_TOPOLOGIES, load_corpus, simulate_corpus};
use placed_training::simulate::SimulationOptions;

fn median(mut runs: Vec<Duration>) -> (Duration, Duration, Duration) {
    runs.sort();
    (runs[runs.len() / 2], runs[0], runs[runs.len() - 1])
}

/// The corpus: `PLACED_BENCH_CORPUS`, or the real topologies simulated into a temporary
/// directory.
fn corpus_dir() -> PathBuf {
    match std::env::var_os("PLACED_BENCH_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => {
            let dir =
                std::env::temp_dir().join(format!("placed-bench-corpus-{}", std::process::id()));
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/topologies");
            let topologies: Vec<PathBuf> = CORPUS_TOPOLOGIES.iter().map(|t| root.join(t)).collect();
            simulate_corpus(
                &topologies,
                &SimulationOptions {
                    families: 16,
                    workloads_per_family: 4,
                    ..SimulationOptions::default()
                },
                &dir,
            )
            .expect("simulates the corpus");
            dir
        }
    }
}

/// Per-call times of predicting one container, for the host of most placements the model
/// does not refuse; that host; calls per timing.
fn bench_predict(model: &Arc<ClassesModel>, data: &[Dataset]) -> (Vec<Duration>, String, u32) {
    // Predict for the host of most placements it does not refuse, as the daemon would:
    // a prediction costs a forest walk per predicted placement, so that is the dearest.
    let (ready, host) = data
        .iter()
        .filter_map(|d| {
            let ready = model
                .for_host(
                    "bench-host",
                    d.header().v,
                    d.resources()?,
                    d.header().placements.clone(),
                )
                .ok()?;
            Some((ready, d))
        })
        .max_by_key(|(_, d)| d.header().placements.len())
        .expect("some class is predicted");
    let host_label = format!(
        "{}, {} placements",
        host.resources().map_or("", |r| r.machine.topology.as_str()),
        host.header().placements.len()
    );
    let base = Observation {
        value: 1000.0,
        spread: 5.0,
        ..Default::default()
    };
    let probe = Observation {
        value: 1200.0,
        spread: 5.0,
        ..Default::default()
    };
    let batch = 1000;
    let mut predicts = Vec::new();
    for _ in 0..9 {
        let start = Instant::now();
        for _ in 0..batch {
            black_box(
                ready
                    .predict(black_box(&base), black_box(&probe))
                    .expect("predicts"),
            );
        }
        predicts.push(start.elapsed() / batch);
    }
    (predicts, host_label, batch)
}

fn main() {
    let dir = corpus_dir();
    let data = load_corpus(&dir).expect("reads the corpus");
    // The final forest's trees (`placed-train classes build --trees`): predicting walks
    // every tree once per predicted placement.
    let trees = std::env::var("PLACED_BENCH_TREES")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(placed_models::classes::FINAL_TREES);
    let options = TrainOptions {
        forest: ForestParams::new().n_trees(trees),
        cv_trees: Some(20),
        ..TrainOptions::default()
    };
    let runs = 3;
    let (mut fits, mut owns, mut across) = (Vec::new(), Vec::new(), Vec::new());
    let mut model = None;
    for _ in 0..runs {
        let start = Instant::now();
        let corpus = Corpus::new(&data, &options).expect("a corpus");
        let own = start.elapsed();
        let (m, _) = ClassesModel::fit(&corpus, &options).expect("fits");
        fits.push(start.elapsed());
        owns.push(own);
        across.push(start.elapsed() - own);
        model = Some(m);
    }
    let model = Arc::new(model.expect("fitted"));
    let (predicts, host_label, batch) = bench_predict(&model, &data);
    let runs_total: usize = data
        .iter()
        .map(|d| d.records().len() / d.header().placements.len())
        .sum();
    println!(
        "rayon threads: {}; corpus: {} classes, {runs_total} workload runs (SIMULATED); final forest of {trees} trees",
        rayon::current_num_threads(),
        data.len()
    );
    println!(
        "{:<64} {:>5} {:>11} {:>11} {:>11}  target",
        "operation (SIMULATED data)", "runs", "median", "min", "max"
    );
    let (m, lo, hi) = median(fits);
    println!(
        "{:<64} {:>5} {:>11.3?} {:>11.3?} {:>11.3?}  < 60 s",
        "fit on the whole corpus (own CV, leave one class out, forest)", runs, m, lo, hi
    );
    let (m, lo, hi) = median(owns);
    println!(
        "{:<64} {:>5} {:>11.3?} {:>11.3?} {:>11.3?}",
        "  of which each class's own cross-validation", runs, m, lo, hi
    );
    let (m, lo, hi) = median(across);
    println!(
        "{:<64} {:>5} {:>11.3?} {:>11.3?} {:>11.3?}",
        "  of which leaving each class out and the final forest", runs, m, lo, hi
    );
    let (m, lo, hi) = median(predicts);
    println!(
        "{:<64} {:>5} {:>11.3?} {:>11.3?} {:>11.3?}  < 50 µs",
        format!("predict one container (mean of {batch} calls; {host_label})"),
        9,
        m,
        lo,
        hi
    );
    if std::env::var_os("PLACED_BENCH_CORPUS").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
