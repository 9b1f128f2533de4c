//! What can explain noise in a sub-window, recorded next to its value: CPU steal and
//! interrupts on the container's PUs, the container's involuntary context switches,
//! migrations, CPU time and run-queue wait, and whether the PUs' frequency changed.
//!
//! These are the variability sources the seeds single out: interrupts and the timer tick
//! (Tsafrir, *The Context-Switch Overhead Inflicted by Hardware Interrupts*: 0.5-1.5% of CPU at 1000 Hz, most of it indirect;
//! Dawson, JabPerf blog, "System Interrupts: How to Hunt Them Down"), preemption by
//! other tasks and frequency scaling (Kozak, *Chasing Zero Variability*, §2.1 and §5.1.1:
//! DVFS ramps look like a slow warm-up), and, on a VM, the hypervisor taking the CPU away
//! (steal). A [`NoiseProbe`] takes cumulative [`Snapshot`]s at window boundaries;
//! [`Noise::between`] turns two of them into per-second figures.

mod procfs;

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;

use tokio::time::Instant;

pub use self::procfs::ProcProbe;

/// Whose noise to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Every thread of a cgroup (v2 `cgroup.threads`, or v1 `tasks`): a container.
    Cgroup(PathBuf),
    /// Every thread of one process: a training workload run without a container.
    Process(u32),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Cgroup(p) => write!(f, "cgroup {}", p.display()),
            Self::Process(pid) => write!(f, "process {pid}"),
        }
    }
}

/// Which run of the workload is measured: its oldest process and that process's start
/// time (clock ticks after boot, `/proc/<pid>/stat` field 22). A restart changes it, even
/// when the pid is reused, and two observations are only ever compared when theirs match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Incarnation {
    /// The oldest process.
    pub pid: u32,
    /// Its start time in clock ticks after boot.
    pub start_ticks: u64,
}

/// Cumulative counters of one thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadCounters {
    /// Time on a CPU (`schedstat` field 1), ns.
    pub run_ns: u64,
    /// Time runnable but waiting for a CPU (`schedstat` field 2), ns.
    pub wait_ns: u64,
    /// Involuntary context switches: preempted while runnable.
    pub involuntary_switches: u64,
    /// Migrations between CPUs; `None` without `/proc/<tid>/sched` (CONFIG_SCHED_DEBUG).
    pub migrations: Option<u64>,
}

/// Jiffies of a set of PUs since boot, from `/proc/stat`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    /// All jiffies (busy, idle, iowait and steal).
    pub total: u64,
    /// Jiffies running anything: user, nice, system, irq, softirq.
    pub busy: u64,
    /// Jiffies the hypervisor took away.
    pub steal: u64,
    /// PUs counted.
    pub pus: usize,
}

/// Cumulative counters at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// When it was taken.
    pub at: Instant,
    /// Time accounting of the container's PUs (`/proc/stat`).
    pub ticks: CpuTicks,
    /// Interrupts delivered to the container's PUs (`/proc/interrupts`, all sources).
    pub interrupts: u64,
    /// Current frequency of each of the container's PUs in kHz; `None` without cpufreq
    /// (this project's CI VM has none).
    pub frequencies_khz: Option<Vec<u64>>,
    /// The container's threads by tid.
    pub threads: HashMap<u32, ThreadCounters>,
}

/// Noise figures of one window.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Noise {
    /// Fraction of the PUs' time the hypervisor took away.
    pub steal: f64,
    /// Fraction of the PUs' time spent running something other than the container: other
    /// tasks, kernel threads, interrupts. Containers never share an allocation unit, so on
    /// a placed host this is housekeeping only; more means a neighbour is on our PUs. A lower
    /// bound when the container also runs outside these PUs.
    pub foreign: f64,
    /// Interrupts per second on the container's PUs.
    pub interrupts_per_s: f64,
    /// The container's involuntary context switches per second.
    pub involuntary_switches_per_s: f64,
    /// The container's migrations per second, when the kernel exposes them.
    pub migrations_per_s: Option<f64>,
    /// Average number of the container's threads waiting for a CPU: preemption by others,
    /// or more runnable threads than PUs.
    pub runqueue_wait: f64,
    /// CPUs' worth of time the container ran (task-clock per second).
    pub cpu_use: f64,
    /// Lowest and highest PU frequency seen at the window's two ends, kHz.
    pub frequency_khz: Option<(u64, u64)>,
    /// Threads at the window's end.
    pub threads: usize,
}

impl Noise {
    /// The noise of the window from `prev` to `now`. Threads that appeared count from zero;
    /// threads that exited inside the window are missed (their counters went with them).
    pub fn between(prev: &Snapshot, now: &Snapshot) -> Self {
        let secs = now.at.saturating_duration_since(prev.at).as_secs_f64();
        let per_s = |d: u64| if secs > 0.0 { d as f64 / secs } else { 0.0 };
        let ticks = now.ticks.total.saturating_sub(prev.ticks.total);
        let share = |now: u64, prev: u64| {
            if ticks > 0 {
                now.saturating_sub(prev) as f64 / ticks as f64
            } else {
                0.0
            }
        };
        let steal = share(now.ticks.steal, prev.ticks.steal);
        let busy = share(now.ticks.busy, prev.ticks.busy);
        let mut sum = ThreadCounters::default();
        let mut migrations = Some(0_u64);
        for (tid, t) in &now.threads {
            let p = prev.threads.get(tid).copied().unwrap_or_default();
            // A counter that went down means the tid was reused by a new thread.
            let p = if t.run_ns < p.run_ns || t.involuntary_switches < p.involuntary_switches {
                ThreadCounters::default()
            } else {
                p
            };
            sum.run_ns += t.run_ns - p.run_ns;
            sum.wait_ns += t.wait_ns.saturating_sub(p.wait_ns);
            sum.involuntary_switches += t.involuntary_switches - p.involuntary_switches;
            migrations = match (migrations, t.migrations) {
                (Some(acc), Some(m)) => Some(acc + m.saturating_sub(p.migrations.unwrap_or(0))),
                _ => None,
            };
        }
        let frequency_khz = match (&prev.frequencies_khz, &now.frequencies_khz) {
            (Some(a), Some(b)) => {
                let all = a.iter().chain(b);
                all.clone().min().copied().zip(all.max().copied())
            }
            _ => None,
        };
        let ns_per_s = |ns: u64| {
            if secs > 0.0 {
                ns as f64 / 1e9 / secs
            } else {
                0.0
            }
        };
        let cpu_use = ns_per_s(sum.run_ns);
        let pus = now.ticks.pus.max(1) as f64;
        Self {
            steal,
            foreign: (busy - cpu_use / pus).max(0.0),
            interrupts_per_s: per_s(now.interrupts.saturating_sub(prev.interrupts)),
            involuntary_switches_per_s: per_s(sum.involuntary_switches),
            migrations_per_s: migrations.map(per_s),
            runqueue_wait: ns_per_s(sum.wait_ns),
            cpu_use,
            frequency_khz,
            threads: now.threads.len(),
        }
    }
}

/// Why the noise could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum NoiseError {
    /// A procfs or sysfs file could not be read (the error names it).
    #[error(transparent)]
    Read(#[from] crate::kernel::fs::IoError),
    /// A file did not have the expected format.
    #[error("unexpected content in {path:?}: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What was expected.
        reason: &'static str,
    },
    /// The process exited, or the cgroup has no process left.
    #[error("{target} has no process: the workload exited")]
    Gone {
        /// The target, as text.
        target: String,
    },
}

/// Takes noise snapshots of one target. Implemented on procfs by [`ProcProbe`]; tests
/// substitute a noise injector.
pub trait NoiseProbe: Send + Sync {
    /// Which run of the workload is there now.
    fn incarnation(&self) -> impl Future<Output = Result<Incarnation, NoiseError>> + Send;
    /// Cumulative counters now.
    fn snapshot(&self) -> impl Future<Output = Result<Snapshot, NoiseError>> + Send;
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn snap(at: Instant, threads: &[(u32, ThreadCounters)]) -> Snapshot {
        Snapshot {
            at,
            ticks: CpuTicks::default(),
            interrupts: 0,
            frequencies_khz: None,
            threads: threads.iter().copied().collect(),
        }
    }

    fn t(run_ms: u64, wait_ms: u64, invol: u64, migr: Option<u64>) -> ThreadCounters {
        ThreadCounters {
            run_ns: run_ms * 1_000_000,
            wait_ns: wait_ms * 1_000_000,
            involuntary_switches: invol,
            migrations: migr,
        }
    }

    #[test]
    fn per_second_figures_from_two_snapshots() {
        let t0 = Instant::now();
        let mut a = snap(t0, &[(10, t(100, 0, 5, Some(1)))]);
        a.ticks = CpuTicks {
            total: 1_000,
            busy: 500,
            steal: 10,
            pus: 2,
        };
        a.interrupts = 500;
        a.frequencies_khz = Some(vec![2_000_000, 2_100_000]);
        // 0.5 s later: thread 10 ran 400 ms and waited 100 ms; thread 11 is new.
        let mut b = snap(
            t0 + Duration::from_millis(500),
            &[(10, t(500, 100, 15, Some(3))), (11, t(100, 0, 1, Some(0)))],
        );
        // Of 100 jiffies on 2 PUs, 80 busy: the container ran 1.0 CPU of the 2, so 30% of
        // the PUs' time went to something else.
        b.ticks = CpuTicks {
            total: 1_100,
            busy: 580,
            steal: 15,
            pus: 2,
        };
        b.interrupts = 750;
        b.frequencies_khz = Some(vec![1_900_000, 2_100_000]);
        let n = Noise::between(&a, &b);
        assert!((n.steal - 0.05).abs() < 1e-12);
        assert!((n.foreign - 0.3).abs() < 1e-9, "{n:?}");
        assert!((n.interrupts_per_s - 500.0).abs() < 1e-9);
        assert!((n.involuntary_switches_per_s - 22.0).abs() < 1e-9, "{n:?}");
        assert_eq!(n.migrations_per_s, Some(4.0));
        assert!((n.cpu_use - 1.0).abs() < 1e-9);
        assert!((n.runqueue_wait - 0.2).abs() < 1e-9);
        assert_eq!(n.frequency_khz, Some((1_900_000, 2_100_000)));
        assert_eq!(n.threads, 2);
    }

    #[test]
    fn a_reused_tid_counts_from_zero_and_missing_migrations_stay_unknown() {
        let t0 = Instant::now();
        let a = snap(t0, &[(10, t(900, 0, 50, None))]);
        let b = snap(t0 + Duration::from_secs(1), &[(10, t(100, 0, 2, None))]);
        let n = Noise::between(&a, &b);
        assert!((n.cpu_use - 0.1).abs() < 1e-9);
        assert!((n.involuntary_switches_per_s - 2.0).abs() < 1e-9);
        assert_eq!(n.migrations_per_s, None);
    }
}
