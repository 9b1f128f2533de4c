//! Fifty containers measured with perf counters on a synthetic 2 x 112-PU machine and a
//! simulated PMU: the descriptors held at once never pass the budget, a measurement that
//! would pass it fails with the budget's error, and nothing stays open after a measurement.
//! Simulated: the counts are the fake PMU's, not a workload's.

use std::sync::Arc;

use placed_core::machine::{Machine, TopologySource};

use super::fake::FakePmu;
use super::*;
use crate::observe::testing::sim::{Params, workload};
use crate::observe::{ObserveError, Protocol, measure};

fn big_machine() -> Machine {
    Machine::load(
        &TopologySource::Synthetic("pack:2 numa:2 core:28 pu:2".into()),
        None,
    )
    .expect("hwloc builds a synthetic topology")
}

struct Fixture {
    pmu: FakePmu,
    budget: FdBudget,
    perf: Perf,
    _dir: tempfile::TempDir,
    cgroups: Vec<PathBuf>,
}

/// 50 "cgroup" directories (plain ones: the fake PMU only needs them to open).
fn fixture(limit: u64) -> Fixture {
    let pmu = FakePmu::new();
    let budget = FdBudget::for_limit(limit);
    let perf = Perf::new(Arc::new(pmu.clone()), budget.clone());
    let dir = tempfile::tempdir().unwrap();
    let cgroups = (0..50)
        .map(|i| {
            let p = dir.path().join(format!("c{i}"));
            std::fs::create_dir(&p).unwrap();
            p
        })
        .collect();
    Fixture {
        pmu,
        budget,
        perf,
        _dir: dir,
        cgroups,
    }
}

/// Measures every source at once (each in a task of its own, as the daemon's containers
/// are); the results in order.
async fn measure_all(sources: &mut Vec<PerfSource>) -> Vec<Result<f64, ObserveError>> {
    let protocol = Protocol::default();
    let tasks: Vec<_> = sources
        .drain(..)
        .enumerate()
        .map(|(i, mut s)| {
            let protocol = protocol.clone();
            tokio::spawn(async move {
                let (_, probe) = workload(Params::steady(1000.0, 0.0), i as u64);
                let r = measure(&mut s, &probe, &protocol)
                    .await
                    .map(|m| m.estimate.value);
                (s, r)
            })
        })
        .collect();
    let mut results = Vec::new();
    for t in tasks {
        let (s, r) = t.await.unwrap();
        sources.push(s);
        results.push(r);
    }
    results
}

fn is_budget_error(r: &Result<f64, ObserveError>) -> bool {
    matches!(
        r,
        Err(ObserveError::Source { source, .. })
            if matches!(source.failure(), Some(PerfError::Budget(_)))
    )
}

#[tokio::test(start_paused = true)]
async fn fifty_containers_on_224_pus_stay_within_the_descriptor_budget() {
    let machine = big_machine();
    let usable = machine.pus.usable.clone();
    assert_eq!(usable.len(), 224);

    // The unit's LimitNOFILE=65536: 50 IPC measurements on every PU fit at once.
    let f = fixture(65536);
    let mut sources: Vec<PerfSource> = f
        .cgroups
        .iter()
        .map(|c| PerfSource::new(f.perf.clone(), c, &usable, PerfMetric::Ipc).unwrap())
        .collect();
    // Built, not measured: nothing open.
    assert_eq!(f.pmu.open(), 0);
    let results = measure_all(&mut sources).await;
    for r in &results {
        let ipc = *r.as_ref().unwrap();
        assert!((ipc - 2.0).abs() < 1e-9, "{ipc}");
    }
    // Two descriptors (one group) per PU per container, all held at once at most.
    assert_eq!(f.pmu.peak(), 50 * 2 * 224);
    assert!(f.pmu.peak() <= f.budget.budget());
    assert!(f.budget.peak() <= f.budget.budget());
    // Measured, then closed: the next measurement opens them again.
    assert_eq!((f.pmu.open(), f.budget.open()), (0, 0));
    assert!(sources.iter().all(|s| !s.is_open()));
}

#[tokio::test(start_paused = true)]
async fn past_the_budget_a_measurement_fails_with_the_budget_error_and_waits_for_a_turn() {
    let machine = big_machine();
    let usable = machine.pus.usable.clone();
    // The default soft limit of 1,024: a budget of 768, room for one IPC measurement on
    // all 224 PUs (448 descriptors, 449 while opening).
    let f = fixture(1024);
    assert_eq!(f.budget.budget(), 768);
    let mut sources: Vec<PerfSource> = f
        .cgroups
        .iter()
        .map(|c| PerfSource::new(f.perf.clone(), c, &usable, PerfMetric::Ipc).unwrap())
        .collect();
    let results = measure_all(&mut sources).await;
    let measured = results.iter().filter(|r| r.is_ok()).count();
    let refused = results.iter().filter(|r| is_budget_error(r)).count();
    assert_eq!((measured, refused), (1, 49), "{results:?}");
    let Some(Err(e)) = results.iter().find(|r| r.is_err()) else {
        unreachable!()
    };
    let text = std::error::Error::source(e)
        .map(ToString::to_string)
        .unwrap();
    assert!(
        text.starts_with("descriptor budget exhausted: 448 open of 768;"),
        "{text}"
    );
    assert!(f.pmu.peak() <= f.budget.budget());
    assert_eq!(f.pmu.open(), 0);
    // Taking turns (the daemon's retry), every container is measured, one at a time.
    for s in sources {
        let mut one = vec![s];
        let r = measure_all(&mut one).await;
        assert!(r[0].is_ok(), "{r:?}");
    }
    assert_eq!(f.pmu.peak(), 448);
    assert!(f.budget.peak() <= f.budget.budget());
}

#[tokio::test(start_paused = true)]
async fn counting_on_their_own_pus_fifty_containers_fit_under_the_default_limit() {
    let machine = big_machine();
    let usable = machine.pus.usable.clone();
    let f = fixture(1024);
    let pus: Vec<u32> = usable.iter().collect();
    let mut sources: Vec<PerfSource> = f
        .cgroups
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut s = PerfSource::new(f.perf.clone(), c, &usable, PerfMetric::Ipc).unwrap();
            // Four PUs of its own each, as a placement gives a 4-vCPU container.
            let own: CpuSet = pus[i * 4..i * 4 + 4].iter().copied().collect();
            s.count_on(&own);
            s
        })
        .collect();
    let results = measure_all(&mut sources).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(f.pmu.peak(), 50 * 2 * 4);
    assert!(f.budget.peak() <= f.budget.budget());
    assert_eq!(f.pmu.open(), 0);
}

#[tokio::test(start_paused = true)]
async fn ipc_is_one_read_per_pu_and_a_cancelled_measurement_closes_its_counters() {
    let f = fixture(65536);
    let cpus: CpuSet = "0-3".parse().unwrap();
    let mut s = PerfSource::new(f.perf.clone(), &f.cgroups[0], &cpus, PerfMetric::Ipc).unwrap();
    s.begin().unwrap();
    assert_eq!((f.pmu.opened_groups(), f.pmu.open()), (4, 8));
    let reading = s.poll().await.unwrap();
    assert_eq!(reading[0].denominator, Some(4.0 * 1000.0));
    assert_eq!(f.pmu.reads(), 4, "instructions and cycles read together");
    s.end();
    assert_eq!(f.pmu.open(), 0);
    // A measurement dropped half-way (its task cancelled) leaves nothing open.
    let (_, probe) = workload(Params::steady(1000.0, 0.0), 1);
    let protocol = Protocol::default();
    let cancelled = tokio::time::timeout(
        protocol.warmup + protocol.window,
        measure(&mut s, &probe, &protocol),
    )
    .await;
    assert!(cancelled.is_err(), "the measurement was still running");
    assert_eq!((f.pmu.open(), f.budget.open()), (0, 0));
}

#[test]
fn a_missing_hardware_event_is_no_pmu_and_nothing_stays_open() {
    let pmu = FakePmu::without(&[PerfEvent::Instructions, PerfEvent::Cycles]);
    let budget = FdBudget::new(100);
    let perf = Perf::new(Arc::new(pmu.clone()), budget.clone());
    let dir = tempfile::tempdir().unwrap();
    let cpus: CpuSet = "0-7".parse().unwrap();
    let e = perf
        .open(
            dir.path(),
            &cpus,
            &[PerfEvent::Instructions, PerfEvent::Cycles],
        )
        .unwrap_err();
    assert!(matches!(e, PerfError::NoPmu { .. }), "{e}");
    assert_eq!((pmu.open(), budget.open()), (0, 0));
}
