//! Hardware counters per run, where the PMU allows: instructions, cycles, last-level cache
//! misses and back-end stall cycles, summed over the run's cgroup on its PUs with the
//! daemon's perf code (one group per PU, under the same descriptor budget), and recorded as
//! the ratios the model's counter baseline compares across placements: `ipc`,
//! `llc_misses_per_kilo_instruction`, `memory_stall_fraction` (the names simulated data
//! uses). Raw totals would grow with the run's length, which differs between attempts.
//!
//! On a host without a PMU this is said once per collection, and records keep an empty
//! `counters` map.

use std::collections::BTreeMap;
use std::path::Path;

use placed_core::cpuset::CpuSet;
use placed_host::observe::perf::CgroupCounters;
use placed_host::observe::{Perf, PerfError, PerfEvent};

/// The events, most wanted first: a PMU without the stall event still gives the others.
const EVENTS: [PerfEvent; 4] = [
    PerfEvent::Instructions,
    PerfEvent::Cycles,
    PerfEvent::LlcMisses,
    PerfEvent::StalledCyclesBackend,
];

/// Opens each run's counters, and says once why there are none.
#[derive(Debug)]
pub struct RunCounters {
    perf: Perf,
    /// Events this host lacks (ENOENT), learned on the first run: not asked for again.
    events: usize,
    /// Set once the host is known to have no PMU.
    no_pmu: bool,
}

impl RunCounters {
    /// Counters from `perf`.
    pub fn new(perf: Perf) -> Self {
        Self {
            perf,
            events: EVENTS.len(),
            no_pmu: false,
        }
    }

    /// Whether the host was found to have no PMU.
    #[cfg(test)]
    pub fn no_pmu(&self) -> bool {
        self.no_pmu
    }

    /// The counters of a run in `cgroup` on `cpus`, open until dropped; `None` without a
    /// PMU (said once, on the first run) or when they cannot be opened (said per run: it
    /// is about that run).
    pub fn open(&mut self, cgroup: &Path, cpus: &CpuSet) -> Option<CgroupCounters> {
        if self.no_pmu {
            return None;
        }
        loop {
            match self.perf.open(cgroup, cpus, &EVENTS[..self.events]) {
                Ok(c) => return Some(c),
                // A missing optional event (stalls, then LLC misses): count without it.
                Err(PerfError::NoPmu { .. }) if self.events > 2 => self.events -= 1,
                Err(e @ PerfError::NoPmu { .. }) => {
                    self.no_pmu = true;
                    eprintln!(
                        "placed-train: {}; run records keep an empty counters map (the counter baseline needs a host with a PMU)",
                        placed_core::text::error_line(&e)
                    );
                    return None;
                }
                Err(e) => {
                    tracing::warn!(error = %placed_core::text::error_line(&e), "this run's counters are not recorded");
                    return None;
                }
            }
        }
    }
}

/// What a run's counters come to, as the record's `counters` map; empty when they cannot
/// be read or never ran.
pub fn record(counters: &mut CgroupCounters) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let totals = match counters.read() {
        Ok(Some(t)) => t,
        Ok(None) => return out,
        Err(e) => {
            tracing::warn!(error = %placed_core::text::error_line(&e), "this run's counters are not recorded");
            return out;
        }
    };
    let get = |event| {
        counters
            .events()
            .iter()
            .position(|e| *e == event)
            .map(|i| totals[i])
    };
    let (Some(instructions), Some(cycles)) = (get(PerfEvent::Instructions), get(PerfEvent::Cycles))
    else {
        return out;
    };
    if instructions <= 0.0 || cycles <= 0.0 {
        return out;
    }
    out.insert("ipc".to_owned(), instructions / cycles);
    if let Some(misses) = get(PerfEvent::LlcMisses) {
        out.insert(
            "llc_misses_per_kilo_instruction".to_owned(),
            1000.0 * misses / instructions,
        );
    }
    if let Some(stalled) = get(PerfEvent::StalledCyclesBackend) {
        out.insert("memory_stall_fraction".to_owned(), stalled / cycles);
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use placed_host::observe::FdBudget;
    use placed_host::observe::perf::fake::FakePmu;

    use super::*;

    fn cpus() -> CpuSet {
        "0-3".parse().unwrap()
    }

    #[test]
    fn with_a_pmu_each_run_records_its_grouped_counters_as_ratios() {
        let pmu = FakePmu::new();
        let mut runs = RunCounters::new(Perf::new(Arc::new(pmu.clone()), FdBudget::new(1000)));
        let dir = tempfile::tempdir().unwrap();
        let mut c = runs.open(dir.path(), &cpus()).unwrap();
        assert_eq!((pmu.opened_groups(), pmu.open()), (4, 16));
        let map = record(&mut c);
        assert_eq!(pmu.reads(), 4, "one read per PU for all four events");
        // The fake's counts per read: 2,000 instructions, 1,000 cycles, 10 misses, 300
        // stalled cycles.
        assert_eq!(map.len(), 3, "{map:?}");
        assert!((map["ipc"] - 2.0).abs() < 1e-12, "{map:?}");
        assert!((map["llc_misses_per_kilo_instruction"] - 5.0).abs() < 1e-12);
        assert!((map["memory_stall_fraction"] - 0.3).abs() < 1e-12);
        drop(c);
        assert_eq!(pmu.open(), 0);
    }

    #[test]
    fn without_the_stall_event_the_other_counters_are_still_recorded() {
        let pmu = FakePmu::without(&[PerfEvent::StalledCyclesBackend]);
        let mut runs = RunCounters::new(Perf::new(Arc::new(pmu.clone()), FdBudget::new(1000)));
        let dir = tempfile::tempdir().unwrap();
        let map = record(&mut runs.open(dir.path(), &cpus()).unwrap());
        assert_eq!(
            map.keys().collect::<Vec<_>>(),
            ["ipc", "llc_misses_per_kilo_instruction"]
        );
        assert!(!runs.no_pmu());
    }

    #[test]
    fn without_a_pmu_it_says_so_once_and_records_nothing() {
        let pmu = FakePmu::without(&[PerfEvent::Instructions, PerfEvent::Cycles]);
        let mut runs = RunCounters::new(Perf::new(Arc::new(pmu.clone()), FdBudget::new(1000)));
        let dir = tempfile::tempdir().unwrap();
        assert!(runs.open(dir.path(), &cpus()).is_none());
        assert!(runs.no_pmu());
        let groups = pmu.opened_groups();
        // Later runs do not ask the PMU again (and so say nothing again).
        for _ in 0..5 {
            assert!(runs.open(dir.path(), &cpus()).is_none());
        }
        assert_eq!(pmu.opened_groups(), groups);
        assert_eq!(pmu.open(), 0);
    }
}
