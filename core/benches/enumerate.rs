//! Enumeration time of the important placements for every corpus topology, plus synthetic
//! machines of 12, 16 and 64 NUMA nodes that the corpus lacks, and v in {4, 8, 16, 32, 64}
//! where legal. Target (docs/placements.md): median at most 100 ms per (topology, v) in release, exact
//! up to 8 allocation units.
//!
//! `cargo bench -p placed --bench enumerate [-- FILTER] [--runs N]`. Prints a table; the
//! machine is shared and noisy, so each cell is the median of N runs (default 7).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use placed_core::machine::{Machine, TopologySource};
use placed_core::placement::{PlacementError, important_placements};

/// Sizes the corpus does not have: 9-16 units (exact within the step budget, or not) and
/// 64 units (always bounded).
const SYNTHETIC: [&str; 3] = [
    "pack:2 numa:6 l3:1 core:4 pu:2",
    "pack:4 numa:4 l3:2 core:4 pu:2",
    "pack:8 numa:8 core:4 pu:2",
];

/// Every machine of the run: corpus files by their path under tests/topologies, then the
/// synthetic ones.
fn machines() -> Vec<(String, TopologySource)> {
    let mut out: Vec<(String, TopologySource)> = corpus()
        .into_iter()
        .map(|f| {
            let name = f
                .strip_prefix(f.parent().and_then(|p| p.parent()).unwrap_or(&f))
                .unwrap_or(&f)
                .display()
                .to_string();
            (name, TopologySource::XmlFile(f))
        })
        .collect();
    out.extend(SYNTHETIC.iter().map(|d| {
        (
            format!("synthetic {d}"),
            TopologySource::Synthetic((*d).into()),
        )
    }));
    out
}

fn corpus() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/topologies");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|d| d.path().is_dir())
        .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "xml"))
        .collect();
    files.sort();
    files
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runs = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(7usize);
    let filter = args
        .iter()
        .find(|a| !a.starts_with("--") && a.parse::<usize>().is_err() && *a != "--bench");
    unsafe_quiet();
    println!(
        "{:<52} {:>5} {:>3} {:>6} {:>10} {:>10}  search",
        "topology", "units", "v", "places", "median", "max"
    );
    let mut worst = Duration::ZERO;
    let mut cells = 0;
    let mut over = 0;
    let mut inexact_small = 0;
    for (name, source) in machines() {
        if filter.is_some_and(|flt| !name.contains(flt.as_str())) {
            continue;
        }
        let m = match Machine::load(&source, None) {
            Ok(m) => m,
            Err(e) => {
                println!("{name:<52} load error: {e}");
                continue;
            }
        };
        for v in [4usize, 8, 16, 32, 64] {
            let mut times = Vec::with_capacity(runs);
            let mut result = None;
            for _ in 0..runs {
                let t = Instant::now();
                let r = important_placements(&m, v);
                times.push(t.elapsed());
                result = Some(r);
            }
            let set = match result {
                Some(Ok(set)) => set,
                Some(Err(
                    PlacementError::TooManyVcpus { .. } | PlacementError::Unbalanced { .. },
                )) => continue,
                Some(Err(e)) => {
                    println!("{name:<52} v={v}: {e}");
                    continue;
                }
                None => continue,
            };
            let med = median(times.clone());
            let max = times.iter().max().copied().unwrap_or_default();
            worst = worst.max(med);
            cells += 1;
            if med > Duration::from_millis(100) {
                over += 1;
            }
            let exact = set.search.is_exact();
            if m.units.len() <= 8 && !exact {
                inexact_small += 1;
            }
            println!(
                "{name:<52} {:>5} {v:>3} {:>6} {:>8.2}ms {:>8.2}ms  {}",
                m.units.len(),
                set.placements.len(),
                med.as_secs_f64() * 1e3,
                max.as_secs_f64() * 1e3,
                if exact { "exact" } else { "bounded" }
            );
        }
    }
    println!(
        "\n{cells} (topology, v) cells, {runs} runs each; worst median {:.2} ms; {over} over 100 ms; {inexact_small} inexact with <= 8 units",
        worst.as_secs_f64() * 1e3
    );
}

fn unsafe_quiet() {
    // SAFETY: called from main before any thread is started.
    unsafe { placed_core::machine::quiet_hwloc() };
}
