//! Hardware performance counters on the container's cgroup: instructions per second, or
//! instructions per cycle.
//!
//! Cgroup events are per CPU (the kernel refuses `cpu = -1` with a cgroup), so one counter
//! per event is opened on each PU the container may run on, and readings sum them, each
//! scaled by `time_enabled / time_running` to undo multiplexing.
//!
//! Many VMs have no PMU: opening a hardware event fails with ENOENT (this project's CI VM),
//! ENODEV or EOPNOTSUPP. [`PerfSource::open`] then returns [`PerfError::NoPmu`] and the
//! daemon must offer another source. It never returns zeros as data: a window in which no
//! counter was ever scheduled is an error, not a rate of zero.
//!
//! Task-clock and context switches, the software context worth recording next to these
//! counters, are recorded for every source by the noise probe from procfs (`noise`), which
//! works with and without a PMU, so they are not duplicated here.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use perf_event::events::{Event, Hardware, Software};
use perf_event::{Builder, Counter};
use tokio::time::Instant;

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

/// One event counted on each PU.
struct PerCpu {
    event: &'static str,
    counters: Vec<(u32, Counter)>,
}

impl PerCpu {
    fn open(
        event: &'static str,
        kind: Event,
        cgroup: &File,
        path: &Path,
        cpus: &CpuSet,
    ) -> Result<Self, PerfError> {
        let mut counters = Vec::with_capacity(cpus.len());
        for cpu in cpus.iter() {
            let mut counter = Builder::new()
                .kind(kind.clone())
                .observe_cgroup(cgroup)
                .one_cpu(cpu as usize)
                .build()
                .map_err(|source| classify(event, cpu, path, source))?;
            counter
                .enable()
                .map_err(|source| classify(event, cpu, path, source))?;
            counters.push((cpu, counter));
        }
        Ok(Self { event, counters })
    }

    /// The sum of the scaled counts, and whether any counter ran at all.
    fn read(&mut self) -> Result<(f64, bool), PerfError> {
        let mut total = 0.0;
        let mut ran = false;
        for (cpu, counter) in &mut self.counters {
            let ct = counter
                .read_count_and_time()
                .map_err(|source| PerfError::Read {
                    event: self.event,
                    cpu: *cpu,
                    source,
                })?;
            if ct.time_running > 0 {
                ran = true;
                total += ct.count as f64 * ct.time_enabled as f64 / ct.time_running as f64;
            }
        }
        Ok((total, ran))
    }
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

/// A [`MetricSource`] over hardware counters of one cgroup.
pub struct PerfSource {
    cgroup: PathBuf,
    metric: PerfMetric,
    instructions: PerCpu,
    cycles: Option<PerCpu>,
}

impl std::fmt::Debug for PerfSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerfSource")
            .field("cgroup", &self.cgroup)
            .field("metric", &self.metric)
            .finish_non_exhaustive()
    }
}

impl PerfSource {
    /// Opens the counters of `cgroup` (a cgroup v2 directory, or one on the v1 perf_event
    /// hierarchy) on each PU of `cpus`.
    ///
    /// Returns [`PerfError::NoPmu`] only when a software event opens where the hardware
    /// event did not, so that a wrong cgroup or a permission problem is not mistaken for a
    /// missing PMU.
    pub fn open(cgroup: &Path, cpus: &CpuSet, metric: PerfMetric) -> Result<Self, PerfError> {
        if cpus.is_empty() {
            return Err(PerfError::NoCpus {
                cgroup: cgroup.to_owned(),
            });
        }
        let dir = File::open(cgroup).map_err(|source| PerfError::Cgroup {
            cgroup: cgroup.to_owned(),
            source,
        })?;
        let opened = PerCpu::open(
            "instructions",
            Hardware::INSTRUCTIONS.into(),
            &dir,
            cgroup,
            cpus,
        )
        .and_then(|instructions| {
            let cycles = match metric {
                PerfMetric::Ipc => Some(PerCpu::open(
                    "cycles",
                    Hardware::CPU_CYCLES.into(),
                    &dir,
                    cgroup,
                    cpus,
                )?),
                PerfMetric::InstructionsPerSecond => None,
            };
            Ok((instructions, cycles))
        });
        match opened {
            Ok((instructions, cycles)) => Ok(Self {
                cgroup: cgroup.to_owned(),
                metric,
                instructions,
                cycles,
            }),
            Err(no_pmu @ PerfError::NoPmu { .. }) => {
                // Confirm with a software event on the same cgroup and PUs: if that fails
                // too, the problem is not the PMU, and its error says what it is.
                PerCpu::open(
                    "task-clock",
                    Software::TASK_CLOCK.into(),
                    &dir,
                    cgroup,
                    cpus,
                )?;
                Err(no_pmu)
            }
            Err(other) => Err(other),
        }
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

    async fn poll(&mut self) -> Result<Vec<Reading>, SourceError> {
        // Reading a counter is one read(2) on a perf fd, microseconds: no need to leave the
        // async thread for it.
        let never = |event| PerfError::NeverScheduled {
            event,
            cgroup: self.cgroup.clone(),
        };
        let (instructions, ran) = self.instructions.read()?;
        if !ran {
            return Err(never(self.instructions.event).into());
        }
        let now = Instant::now();
        match &mut self.cycles {
            None => Ok(vec![Reading::new(now, instructions)]),
            Some(cycles) => {
                let (c, ran) = cycles.read()?;
                if !ran {
                    return Err(never(cycles.event).into());
                }
                Ok(vec![Reading::ratio(now, instructions, c)])
            }
        }
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
            let mut source = opened.unwrap();
            let first = source.poll().await.unwrap()[0];
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            let second = source.poll().await.unwrap()[0];
            assert!(
                second.value > first.value,
                "a busy loop retires instructions"
            );
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
