//! The counters of one cgroup: one group of events per PU, opened under the descriptor
//! budget, read as sums over the PUs, closed when dropped. The daemon's perf metric and the
//! training collector's per-run counters both count through this.

use std::fmt;
use std::fs::File;
use std::os::fd::AsFd as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use placed_core::cpuset::CpuSet;

use super::PerfError;
use super::budget::{FdBudget, Lease};
use super::pmu::{CounterGroup, KernelPmu, PerfEvent, Pmu};

/// A PMU and the budget its counters are opened under; clones share both.
#[derive(Clone)]
pub struct Perf {
    pmu: Arc<dyn Pmu>,
    budget: FdBudget,
}

impl fmt::Debug for Perf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Perf")
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

impl Perf {
    /// Counters from `pmu`, held within `budget`.
    pub fn new(pmu: Arc<dyn Pmu>, budget: FdBudget) -> Self {
        Self { pmu, budget }
    }

    /// The kernel's counters under this process's budget ([`FdBudget::host`]).
    pub fn host() -> Self {
        static PMU: OnceLock<Arc<dyn Pmu>> = OnceLock::new();
        let pmu = PMU.get_or_init(|| Arc::new(KernelPmu));
        Self::new(Arc::clone(pmu), FdBudget::host().clone())
    }

    /// The budget counters are opened under.
    pub fn budget(&self) -> &FdBudget {
        &self.budget
    }

    /// Opens `events` as one group on each PU of `cpus` for the cgroup at `cgroup`.
    ///
    /// Takes `events × PUs` descriptors from the budget (one more while the cgroup
    /// directory is open), all or none. Returns [`PerfError::NoPmu`] only when a software
    /// event opens where the hardware event did not, so that a wrong cgroup or a permission
    /// problem is not mistaken for a missing PMU.
    pub fn open(
        &self,
        cgroup: &Path,
        cpus: &CpuSet,
        events: &[PerfEvent],
    ) -> Result<CgroupCounters, PerfError> {
        if cpus.is_empty() || events.is_empty() {
            return Err(PerfError::NoCpus {
                cgroup: cgroup.to_owned(),
            });
        }
        let held = events.len() * cpus.len();
        let mut lease = self
            .budget
            .lease(held + 1, || {
                format!(
                    "perf counters of {} ({} events on {} PUs)",
                    cgroup.display(),
                    events.len(),
                    cpus.len()
                )
            })
            .map_err(PerfError::Budget)?;
        let dir = File::open(cgroup).map_err(|source| PerfError::Cgroup {
            cgroup: cgroup.to_owned(),
            source,
        })?;
        let mut groups = Vec::with_capacity(cpus.len());
        for cpu in cpus.iter() {
            match self.pmu.open_group(dir.as_fd(), cpu, events) {
                Ok(group) => groups.push((cpu, group)),
                Err(source) => {
                    let err = super::classify(events[0].name(), cpu, cgroup, source);
                    // Nothing half-open is kept: the groups opened so far close here.
                    drop(groups);
                    return Err(self.confirm_no_pmu(err, &dir, cpu, cgroup));
                }
            }
        }
        drop(dir);
        lease.shrink(1);
        Ok(CgroupCounters {
            cgroup: cgroup.to_owned(),
            events: events.to_vec(),
            groups,
            _lease: lease,
        })
    }

    /// Keeps `NoPmu` only when a software event opens on the same cgroup and PU.
    fn confirm_no_pmu(&self, err: PerfError, dir: &File, cpu: u32, cgroup: &Path) -> PerfError {
        if !matches!(err, PerfError::NoPmu { .. }) {
            return err;
        }
        match self
            .pmu
            .open_group(dir.as_fd(), cpu, &[PerfEvent::TaskClock])
        {
            Ok(_) => err,
            // A software event missing too: the directory is no cgroup of the perf
            // hierarchy (a v1 cpuset directory where perf_event is elsewhere).
            Err(source) if source.raw_os_error() == Some(libc::ENOENT) => PerfError::Cgroup {
                cgroup: cgroup.to_owned(),
                source,
            },
            Err(source) => super::classify(PerfEvent::TaskClock.name(), cpu, cgroup, source),
        }
    }
}

/// Open counters of one cgroup.
pub struct CgroupCounters {
    cgroup: PathBuf,
    events: Vec<PerfEvent>,
    groups: Vec<(u32, Box<dyn CounterGroup>)>,
    _lease: Lease,
}

impl fmt::Debug for CgroupCounters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CgroupCounters")
            .field("cgroup", &self.cgroup)
            .field("events", &self.events)
            .field("pus", &self.groups.len())
            .finish_non_exhaustive()
    }
}

impl CgroupCounters {
    /// The events, in the order of [`CgroupCounters::read`]'s totals.
    pub fn events(&self) -> &[PerfEvent] {
        &self.events
    }

    /// Descriptors held.
    pub fn descriptors(&self) -> usize {
        self.events.len() * self.groups.len()
    }

    /// Each event's count summed over the PUs, each PU's scaled by `time_enabled /
    /// time_running` to undo multiplexing; `None` when no group was ever scheduled (no
    /// data, which zero would misstate). One read per PU.
    pub fn read(&mut self) -> Result<Option<Vec<f64>>, PerfError> {
        let mut totals = vec![0.0; self.events.len()];
        let mut ran = false;
        for (cpu, group) in &mut self.groups {
            let counts = group.read().map_err(|source| PerfError::Read {
                event: self.events[0].name(),
                cpu: *cpu,
                source,
            })?;
            if counts.time_running == 0 {
                continue;
            }
            ran = true;
            let scale = counts.time_enabled as f64 / counts.time_running as f64;
            for (total, value) in totals.iter_mut().zip(&counts.values) {
                *total += *value as f64 * scale;
            }
        }
        Ok(ran.then_some(totals))
    }
}
