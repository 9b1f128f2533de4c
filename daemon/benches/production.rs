//! What keeping production data costs the daemon (issue 26): `cargo bench -p placed --bench
//! production [-- --containers N --evaluations E]`.
//!
//! N containers (default 100) each evaluated E times (default 40): every evaluation keeps
//! four cells (baseline, probe, third measurement, where the decision left it), as the
//! lifecycle does, through the daemon's own `Production` into a real file in a temporary
//! directory. Printed: the CPU time per kept measurement (median over batches of one
//! evaluation of every container), the resident memory the keeper added, and the file's
//! size. With the daemon bench's figures for 100 containers (0.4-0.5% of one core, about
//! 14.5 MiB resident) and one evaluation per container per cool-down (10 min by default)
//! they give the share production data adds.
//!
//! Figures from this shared 2-core VM are indicative only; the ratio is the finding.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use placed::config::ProductionDataConfig;
use placed::lifecycle::production::{Measured, Production};
use placed::telemetry::Metrics;
use placed_core::machine::{Machine, TopologySource};
use placed_host::observe::{Kind, Measurement};
use placed_models::Provenance;

#[path = "support/crowded.rs"]
mod crowded;

/// CPU time this process has used (user and system).
fn cpu_time() -> Duration {
    // SAFETY: getrusage writes into the struct it is given and has no other effect.
    let usage = unsafe {
        let mut u = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let tv = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Resident memory now, from /proc/self/status, in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn measurement(value: f64) -> Measurement {
    Measurement {
        source: "prometheus http://10.0.0.5:9100/metrics requests_total".into(),
        ..Measurement::steady(Kind::Counter, value, 0.02)
    }
}

fn main() {
    let containers = crowded::arg("--containers", 100);
    let evaluations = crowded::arg("--evaluations", 40);
    let machine = Machine::load(
        &TopologySource::Synthetic("pack:2 numa:2 l3:1 core:8 pu:2".into()),
        None,
    )
    .expect("a synthetic machine");
    let set = placed_core::placement::important_placements(&machine, 8).expect("placements");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let metrics = Arc::new(Metrics::default());
    let config = ProductionDataConfig::default();
    let labels: Vec<BTreeMap<String, String>> = (0..containers)
        .map(|i| {
            BTreeMap::from([
                ("io.kubernetes.pod.namespace".to_owned(), "shop".to_owned()),
                ("io.kubernetes.pod.name".to_owned(), format!("web-{i}")),
                ("placed.io/family".to_owned(), format!("web-{}", i % 8)),
            ])
        })
        .collect();
    let names: Vec<String> = (0..containers)
        .map(|i| format!("shop/web-{i}/app"))
        .collect();
    let cells: Vec<&str> = set
        .placements
        .iter()
        .take(4)
        .map(|p| p.id.as_str())
        .collect();
    let rss_before = rss_kib();
    let production = Production::new(
        &dir.path().join("state.json"),
        Provenance::Simulated,
        Some("bench-host".into()),
        metrics.clone(),
    );
    let mut per_keep = Vec::with_capacity(evaluations);
    for e in 0..evaluations {
        let started = cpu_time();
        for (c, name) in names.iter().enumerate() {
            let run = u32::try_from(e * containers + c).unwrap_or(u32::MAX);
            for (k, placement) in cells.iter().enumerate() {
                production.keep(
                    &config,
                    &Measured {
                        set: &set,
                        name,
                        labels: &labels[c],
                        run,
                        placement,
                        measurement: &measurement(1000.0 + k as f64),
                    },
                );
            }
        }
        let kept = u32::try_from(containers * cells.len()).unwrap_or(u32::MAX);
        per_keep.push((cpu_time() - started) / kept.max(1));
    }
    let rss_after = rss_kib();
    per_keep.sort();
    let median = per_keep[per_keep.len() / 2];
    let file = production.file_of(&set);
    let bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    let kept = metrics.production_records.get();
    println!(
        "production data, SIMULATED measurements, {containers} containers x {evaluations} evaluations x {} cells",
        cells.len()
    );
    println!(
        "  kept {kept} records, errors {}",
        metrics.production_errors.get()
    );
    println!(
        "  CPU per kept measurement: median {:.1} us",
        median.as_secs_f64() * 1e6
    );
    println!(
        "  resident memory added: {} KiB ({} KiB before, {} KiB after)",
        rss_after.saturating_sub(rss_before),
        rss_before,
        rss_after
    );
    println!(
        "  file: {bytes} bytes, {:.0} bytes a record",
        bytes as f64 / kept.max(1) as f64
    );
    // One evaluation of every container per cool-down (10 min): four cells each.
    let per_second = (containers * cells.len()) as f64 / 600.0;
    println!(
        "  at one evaluation per container per 10 min: {per_second:.2} records/s, {:.4}% of one core",
        per_second * median.as_secs_f64() * 100.0
    );
}
