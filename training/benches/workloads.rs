//! Run-to-run spread of the built-in training workloads, measured as the collector does.
//!
//! For each built-in workload: `threads` = 2, R fresh runs (default 5; `PLACED_BENCH_RUNS`),
//! each started in a fresh cgroup and measured with the observation protocol (warm-up
//! 1 s, 8 windows of 0.5 s, `ProcProbe` on the cgroup). Prints the median rate over runs,
//! the coefficient of variation of the runs' estimates (what separates placements), and
//! the mean CV of the windows within a run. Windows the protocol flags as disturbed are
//! counted in the last column; when too many are, the run's median of all its windows is
//! used and the row is marked `*`.
//!
//! Root and a cpuset hierarchy are needed: `cargo bench -p placed-training --bench
//! workloads`. A filter argument (`-- latency`) runs only the workloads whose name
//! contains it.

use std::time::Duration;

use anyhow::Context as _;
use placed_host::cgroup::{CgroupPath, Cgroups};
use placed_host::enact::Host;
use placed_host::observe::{
    ObserveError, ProcProbe, Protocol, Target, WindowRecord, block_on, measure,
};
use placed_training::workloads::{self, Launch};

/// A cgroup removed (with whatever is left in it) when dropped.
struct BenchCgroup {
    cgroups: Cgroups,
    path: CgroupPath,
}

impl Drop for BenchCgroup {
    fn drop(&mut self) {
        for pid in self.cgroups.procs(&self.path).unwrap_or_default() {
            let _ = self.cgroups.attach(&CgroupPath::root(), pid);
        }
        if let Err(e) = self.cgroups.remove(&self.path) {
            eprintln!("warning: cannot remove {}: {e}", self.path);
        }
    }
}

struct Row {
    name: String,
    unit: String,
    median: f64,
    run_cv: f64,
    window_cv: f64,
    dropped: usize,
    fallback: bool,
}

fn main() -> anyhow::Result<()> {
    let runs: usize = std::env::var("PLACED_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let host = Host::detect().context("no usable cpuset hierarchy (run as root)")?;
    let cpus = host.online_cpus()?;
    let mems = host.memory_nodes()?;
    let scratch = tempfile::tempdir()?;
    // A private copy: a shared target directory may rebuild the binary meanwhile.
    let exe = scratch.path().join("placed-train");
    std::fs::copy(env!("CARGO_BIN_EXE_placed-train"), &exe)?;
    let protocol = Protocol {
        warmup: Duration::from_secs(1),
        window: Duration::from_millis(500),
        windows: 8,
        extra_windows: 4,
        min_windows: 6,
        ..Protocol::default()
    };
    println!(
        "built-in workloads, threads = 2, {runs} runs each, warm-up 1 s + 8 x 0.5 s windows, PUs {cpus}"
    );
    let mut rows = Vec::new();
    let mut serial = 0;
    for workload in workloads::builtin() {
        if filter
            .as_ref()
            .is_some_and(|f| !workload.name.contains(f.as_str()))
        {
            continue;
        }
        let mut estimates = Vec::new();
        let mut window_cvs = Vec::new();
        let mut dropped = 0;
        let mut fallback = false;
        for _ in 0..runs {
            serial += 1;
            let path =
                CgroupPath::parse(&format!("placed-wlbench-{}-{serial}", std::process::id()))?;
            host.cgroups().create(&path, &cpus, &mems)?;
            let cg = BenchCgroup {
                cgroups: host.cgroups().clone(),
                path,
            };
            let dir = cg.path.under(cg.cgroups.root());
            let launch = Launch {
                threads: 2,
                cgroup_dir: &dir,
                extra_cgroup_dirs: &[],
                scratch: scratch.path(),
                exe: &exe,
            };
            let mut running = workload.launch(&launch)?;
            let probe = ProcProbe::new(Target::Cgroup(dir.clone()), Some(cpus.clone()));
            let result = block_on(measure(running.source(), &probe, &protocol))?;
            running.stop()?;
            drop(cg);
            let (estimate, windows): (f64, Vec<WindowRecord>) = match result {
                Ok(m) => (m.estimate.value, m.windows),
                Err(ObserveError::TooDisturbed { windows, .. }) => {
                    fallback = true;
                    let values: Vec<f64> = windows.iter().map(|w| w.value).collect();
                    (median(&values), windows)
                }
                Err(e) => return Err(e).with_context(|| format!("measuring {}", workload.name)),
            };
            dropped += windows
                .iter()
                .filter(|w| !w.disturbances.is_empty())
                .count();
            let values: Vec<f64> = windows.iter().map(|w| w.value).collect();
            window_cvs.push(cv(&values));
            estimates.push(estimate);
        }
        let row = Row {
            name: workload.name.clone(),
            unit: workload.unit.clone(),
            median: median(&estimates),
            run_cv: cv(&estimates),
            window_cv: window_cvs.iter().sum::<f64>() / window_cvs.len().max(1) as f64,
            dropped,
            fallback,
        };
        eprintln!("{}: {estimates:?}", row.name);
        rows.push(row);
    }
    println!(
        "{:<20} {:>12} {:<15} {:>8} {:>10} {:>8}",
        "workload", "median", "unit", "run CV", "window CV", "flagged"
    );
    for r in &rows {
        println!(
            "{:<20} {:>12.4e} {:<15} {:>7.2}% {:>9.2}% {:>7}{}",
            r.name,
            r.median,
            r.unit,
            100.0 * r.run_cv,
            100.0 * r.window_cv,
            r.dropped,
            if r.fallback { " *" } else { "" }
        );
    }
    Ok(())
}

fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Sample standard deviation over the mean.
fn cv(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    if values.len() < 2 {
        return 0.0;
    }
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    var.sqrt() / mean
}
