//! Hardware performance counters on the container's cgroup: instructions per second, or
//! instructions per cycle.
//!
//! Cgroup events are per CPU (the kernel refuses `cpu = -1` with a cgroup), so the events
//! are opened as one group on each PU the container may run on ([`counters`]), and readings
//! sum them, each scaled by `time_enabled / time_running` to undo multiplexing. The
//! counters are open only while the container is measured ([`MetricSource::begin`] to
//! [`MetricSource::end`]), under a descriptor budget shared by every container
//! ([`budget`]): `events × PUs` descriptors each, refused with
//! [`PerfError::Budget`] past it.
//!
//! Many VMs have no PMU: opening a hardware event fails with ENOENT (this project's CI VM),
//! ENODEV or EOPNOTSUPP. Opening then returns [`PerfError::NoPmu`] and the daemon must
//! offer another source. It never returns zeros as data: a window in which no counter was
//! ever scheduled is an error, not a rate of zero.
//!
//! Task-clock and context switches, the software context worth recording next to these
//! counters, are recorded for every source by the noise probe from procfs (`noise`), which
//! works with and without a PMU, so they are not duplicated here.

pub mod budget;
pub mod counters;
pub mod fake;
pub mod pmu;

use std::io;
use std::path::{Path, PathBuf};

use perf_event::Builder;
use perf_event::events::Hardware;
use tokio::time::Instant;

pub use self::budget::{BudgetExhausted, FdBudget};
pub use self::counters::{CgroupCounters, Perf};
pub use self::pmu::{CounterGroup, GroupCounts, KernelPmu, PerfEvent, Pmu};

use super::source::{Kind, MetricSource, Reading, SourceError};
use placed_core::cpuset::CpuSet;

/// The metric to derive from the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerfMetric {
    /// Instructions retired per second.
    InstructionsPerSecond,
    /// Instructions retired per CPU cycle.
    Ipc,
}

/// Why the counters cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PerfError {
    /// Hardware events do not exist here (typically a VM without a virtual PMU), while
    /// software events do. Not a failure of the container: use another source.
    #[error(
        "no hardware performance counters on this host (perf_event_open of {event} gave {errno}); use an application metric instead"
    )]
    NoPmu {
        /// The event that was refused.
        event: &'static str,
        /// The errno's name and text.
        errno: String,
    },
    /// The kernel refuses the counters to this process.
    #[error(
        "not allowed to open perf counters on {cgroup:?}; run as root or with CAP_PERFMON, or lower /proc/sys/kernel/perf_event_paranoid"
    )]
    Permission {
        /// The cgroup.
        cgroup: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// The cgroup directory cannot be opened.
    #[error(
        "cannot open cgroup {cgroup:?} for perf counters (it must be on cgroup v2 or the v1 perf_event hierarchy)"
    )]
    Cgroup {
        /// The cgroup.
        cgroup: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// Opening a counter failed for another reason.
    #[error("cannot open {event} counter on CPU {cpu} for {cgroup:?}")]
    Open {
        /// The event.
        event: &'static str,
        /// The PU.
        cpu: u32,
        /// The cgroup.
        cgroup: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// Reading a counter failed.
    #[error("cannot read the {event} counter on CPU {cpu}")]
    Read {
        /// The event.
        event: &'static str,
        /// The PU.
        cpu: u32,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// No PU was given to count on.
    #[error("no PUs to count on for {cgroup:?}")]
    NoCpus {
        /// The cgroup.
        cgroup: PathBuf,
    },
    /// Opening the counters would pass the descriptor budget.
    #[error(transparent)]
    Budget(BudgetExhausted),
    /// None of the counters ran since the last reading (all multiplexed out): there is no
    /// data, and zero would be a lie.
    #[error(
        "the {event} counters of {cgroup:?} were never scheduled in this window; too many perf users on this host?"
    )]
    NeverScheduled {
        /// The event.
        event: &'static str,
        /// The cgroup.
        cgroup: PathBuf,
    },
}

/// Maps perf_event_open's errno to what the operator should do about it.
fn classify(event: &'static str, cpu: u32, cgroup: &Path, source: io::Error) -> PerfError {
    match source.raw_os_error() {
        Some(libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP) => PerfError::NoPmu {
            event,
            errno: source.to_string(),
        },
        Some(libc::EACCES | libc::EPERM) => PerfError::Permission {
            cgroup: cgroup.to_owned(),
            source,
        },
        _ => PerfError::Open {
            event,
            cpu,
            cgroup: cgroup.to_owned(),
            source,
        },
    }
}

/// Whether this host has hardware counters at all: asked once at start-up, on this very
/// process (no cgroup needed), so that the perf source is not offered where it cannot work.
pub fn probe_pmu() -> Result<(), PerfError> {
    match Builder::new().kind(Hardware::INSTRUCTIONS).build() {
        Ok(_) => Ok(()),
        Err(source) => Err(classify("instructions", 0, Path::new("/proc/self"), source)),
    }
}

/// A [`MetricSource`] over hardware counters of one cgroup. Holds no counter until
/// [`MetricSource::begin`] (or the first poll) and none after [`MetricSource::end`].
pub struct PerfSource {
    perf: Perf,
    cgroup: PathBuf,
    cpus: CpuSet,
    metric: PerfMetric,
    open: Option<CgroupCounters>,
}

impl std::fmt::Debug for PerfSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerfSource")
            .field("cgroup", &self.cgroup)
            .field("metric", &self.metric)
            .field("open", &self.open.is_some())
            .finish_non_exhaustive()
    }
}

impl PerfSource {
    /// A source for `cgroup` (a cgroup v2 directory, or one on the v1 perf_event hierarchy)
    /// on each PU of `cpus`, whose counters `perf` opens when a measurement begins. Checks
    /// now what can be checked without holding counters: PUs to count on, and a cgroup
    /// directory that opens.
    pub fn new(
        perf: Perf,
        cgroup: &Path,
        cpus: &CpuSet,
        metric: PerfMetric,
    ) -> Result<Self, PerfError> {
        if cpus.is_empty() {
            return Err(PerfError::NoCpus {
                cgroup: cgroup.to_owned(),
            });
        }
        std::fs::File::open(cgroup).map_err(|source| PerfError::Cgroup {
            cgroup: cgroup.to_owned(),
            source,
        })?;
        Ok(Self {
            perf,
            cgroup: cgroup.to_owned(),
            cpus: cpus.clone(),
            metric,
            open: None,
        })
    }

    /// [`PerfSource::new`] on the kernel's counters, opened at once: an error says now
    /// whether they can be opened at all ([`PerfError::NoPmu`] where the host has none).
    pub fn open(cgroup: &Path, cpus: &CpuSet, metric: PerfMetric) -> Result<Self, PerfError> {
        let mut source = Self::new(Perf::host(), cgroup, cpus, metric)?;
        source.start()?;
        Ok(source)
    }

    /// Counts on `cpus` from the next measurement on (the container's own PUs, where it
    /// has been given some: fewer descriptors than every usable PU).
    pub fn count_on(&mut self, cpus: &CpuSet) {
        if !cpus.is_empty() && *cpus != self.cpus {
            self.cpus = cpus.clone();
            self.open = None;
        }
    }

    /// The events the metric needs, read together as one group per PU.
    fn events(&self) -> &'static [PerfEvent] {
        match self.metric {
            PerfMetric::InstructionsPerSecond => &[PerfEvent::Instructions],
            PerfMetric::Ipc => &[PerfEvent::Instructions, PerfEvent::Cycles],
        }
    }

    /// Whether counters are open now.
    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }

    fn start(&mut self) -> Result<&mut CgroupCounters, PerfError> {
        let counters = match self.open.take() {
            Some(open) => open,
            None => self.perf.open(&self.cgroup, &self.cpus, self.events())?,
        };
        Ok(self.open.insert(counters))
    }
}

impl From<PerfError> for SourceError {
    fn from(e: PerfError) -> Self {
        Self::failed(e)
    }
}

impl MetricSource for PerfSource {
    fn describe(&self) -> String {
        let what = match self.metric {
            PerfMetric::InstructionsPerSecond => "instructions/s",
            PerfMetric::Ipc => "IPC",
        };
        format!("perf {what} of {}", self.cgroup.display())
    }

    fn kind(&self) -> Kind {
        match self.metric {
            PerfMetric::InstructionsPerSecond => Kind::Counter,
            PerfMetric::Ipc => Kind::Ratio,
        }
    }

    fn is_pulled(&self) -> bool {
        true
    }

    fn begin(&mut self) -> Result<(), SourceError> {
        self.start()?;
        Ok(())
    }

    fn end(&mut self) {
        self.open = None;
    }

    async fn poll(&mut self) -> Result<Vec<Reading>, SourceError> {
        // Reading a group is one read(2) per PU, microseconds each: no need to leave the
        // async thread for it.
        let cgroup = self.cgroup.clone();
        let metric = self.metric;
        let counters = self.start()?;
        let Some(totals) = counters.read()? else {
            return Err(PerfError::NeverScheduled {
                event: counters.events()[0].name(),
                cgroup,
            }
            .into());
        };
        let now = Instant::now();
        Ok(match metric {
            PerfMetric::InstructionsPerSecond => vec![Reading::new(now, totals[0])],
            PerfMetric::Ipc => vec![Reading::ratio(now, totals[0], totals[1])],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::testing::TestCgroup;

    /// Whether this host has a PMU, asked independently of the code under test: a hardware
    /// counter on this very process.
    fn host_has_pmu() -> bool {
        match Builder::new().kind(Hardware::INSTRUCTIONS).build() {
            Ok(_) => true,
            Err(e) => {
                assert_eq!(
                    e.raw_os_error(),
                    Some(libc::ENOENT),
                    "unexpected perf error {e}"
                );
                false
            }
        }
    }

    /// The kernel's group opener, with software events (there without a PMU): one group
    /// per PU on a real cgroup, read in one read(2) per PU, counting a busy loop in it.
    #[test]
    fn kernel_groups_of_software_events_count_a_cgroup() {
        let Some(cg) = TestCgroup::create("perf-group") else {
            eprintln!("skipped, because no writable cgroup v2 mount was found");
            return;
        };
        let _busy = cg.spawn_busy_loop();
        let pmu = std::sync::Arc::new(KernelPmu);
        let budget = FdBudget::new(64);
        let perf = Perf::new(pmu, budget.clone());
        let cpus = cg.online_cpus();
        let events = [PerfEvent::TaskClock, PerfEvent::TaskClock];
        let mut counters = match perf.open(cg.path(), &cpus, &events) {
            Ok(c) => c,
            Err(e @ PerfError::Permission { .. }) => {
                eprintln!("skipped: {e}");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        assert_eq!(budget.open(), 2 * cpus.len());
        assert_eq!(counters.descriptors(), 2 * cpus.len());
        // When the busy loop first runs depends on what else the machine runs: a first read
        // 200 ms after the spawn found no group scheduled yet in 3 of 20 runs. Each read
        // waits for the counters to advance; the guard only stops a loop that never runs.
        let mut last = 0.0;
        for _ in 0..3 {
            let totals = read_until(&mut counters, |t| t[0] > last);
            assert_eq!(totals.len(), 2);
            // Both members of the group count the same thing over the same time.
            assert!(
                (totals[0] - totals[1]).abs() <= totals[0] * 0.01,
                "{totals:?}"
            );
            last = totals[0];
        }
        drop(counters);
        assert_eq!(budget.open(), 0);
    }

    /// Reads `counters` until a group has been scheduled and `advanced` holds for the
    /// totals; fails after [`GUARD`] (nothing counted, or nothing more).
    fn read_until(counters: &mut CgroupCounters, advanced: impl Fn(&[f64]) -> bool) -> Vec<f64> {
        let guard = std::time::Instant::now() + GUARD;
        let mut seen = None;
        loop {
            seen = counters.read().unwrap().or(seen);
            if seen.as_deref().is_some_and(&advanced) {
                return seen.unwrap_or_default();
            }
            assert!(
                std::time::Instant::now() < guard,
                "the counters did not advance in {GUARD:?}: last read {seen:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// How long a test waits for a busy loop to be counted: only a loop that never runs
    /// (or counters that never count it) reaches it, however loaded the machine.
    const GUARD: std::time::Duration = std::time::Duration::from_secs(120);

    #[tokio::test]
    async fn without_a_pmu_the_source_says_so_and_with_one_it_counts() {
        let Some(cg) = TestCgroup::create("perf") else {
            eprintln!("skipped, because no writable cgroup v2 mount was found");
            return;
        };
        let busy = cg.spawn_busy_loop();
        let cpus: CpuSet = "0".parse().unwrap();
        let all: CpuSet = cg.online_cpus();
        let opened = PerfSource::open(cg.path(), &all, PerfMetric::InstructionsPerSecond);
        let has_pmu = host_has_pmu();
        assert_eq!(
            probe_pmu().is_ok(),
            has_pmu,
            "probe_pmu agrees with a direct open"
        );
        if has_pmu {
            // Polled until the count rises (see `read_until`): how soon the loop runs is
            // the machine's business.
            let mut source = opened.unwrap();
            let guard = std::time::Instant::now() + GUARD;
            let mut first = None;
            loop {
                match source.poll().await {
                    Ok(r) if first.is_some_and(|f| r[0].value > f) => break,
                    Ok(r) => first = first.or(Some(r[0].value)),
                    Err(e) => assert!(
                        matches!(e.failure(), Some(PerfError::NeverScheduled { .. })),
                        "{e}"
                    ),
                }
                assert!(
                    std::time::Instant::now() < guard,
                    "a busy loop retires no instructions in {GUARD:?}"
                );
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        } else {
            assert!(
                matches!(
                    opened,
                    Err(PerfError::NoPmu {
                        event: "instructions",
                        ..
                    })
                ),
                "{opened:?}"
            );
        }
        drop(busy);
        // A wrong path is not mistaken for a missing PMU.
        let err = PerfSource::open(Path::new("/nonexistent/cgroup"), &cpus, PerfMetric::Ipc);
        assert!(matches!(err, Err(PerfError::Cgroup { .. })), "{err:?}");
        let err = PerfSource::open(cg.path(), &CpuSet::new(), PerfMetric::Ipc);
        assert!(matches!(err, Err(PerfError::NoCpus { .. })), "{err:?}");
    }
}

#[cfg(test)]
mod budget_tests;
