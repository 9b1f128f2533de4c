//! Test support: cgroups and busy processes that clean up after themselves.
//!
//! Tests create their cgroups under the host's cgroup v2 mount (on this project's CI VM the
//! hybrid `/sys/fs/cgroup/unified`), named `placed-test-<tag>-<pid>-<n>` so that a leftover is
//! easy to attribute; they never touch a cgroup they did not create. Dropping a
//! [`TestCgroup`] kills what is still in it and removes it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use placed_core::cpuset::CpuSet;

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A cgroup this test created.
#[derive(Debug)]
pub(crate) struct TestCgroup {
    path: PathBuf,
}

/// A busy-looping `sh` in a test cgroup; killed and reaped on drop.
#[derive(Debug)]
pub(crate) struct Busy {
    child: Child,
}

impl Drop for Busy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Busy {
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// A process that loops forever, not in any test cgroup (the caller moves it).
pub(crate) fn busy_loop() -> Busy {
    let child = Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .stdin(Stdio::null())
        .spawn()
        .expect("sh starts");
    Busy { child }
}

impl TestCgroup {
    /// Creates a fresh cgroup under the cgroup v2 mount, or `None` when there is no
    /// writable one (not root, or no cgroup2 mount).
    pub(crate) fn create(tag: &str) -> Option<Self> {
        let kernel = crate::kernel::Kernel::host().ok()?;
        let root = kernel.mounts().v2()?.mount_point.clone();
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = root.join(format!("placed-test-{tag}-{}-{n}", std::process::id()));
        std::fs::create_dir(&path).ok()?;
        Some(Self { path })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Starts a busy loop and moves it into this cgroup.
    pub(crate) fn spawn_busy_loop(&self) -> Busy {
        let busy = busy_loop();
        std::fs::write(self.path.join("cgroup.procs"), busy.pid().to_string())
            .expect("move the busy loop into the test cgroup");
        busy
    }

    /// The host's online PUs.
    pub(crate) fn online_cpus(&self) -> CpuSet {
        crate::kernel::Files::host()
            .sys("devices/system/cpu/online")
            .expect("online cpus")
            .trim()
            .parse()
            .expect("cpulist")
    }
}

/// Waits until `pid` no longer runs: SIGKILL is delivered asynchronously, and a killed
/// process may linger as a zombie (which counts as gone) until whoever adopted it reaps it.
/// The guard only stops a process that was never killed, however loaded the machine.
pub(crate) fn assert_gone(pid: u32) {
    let files = crate::kernel::Files::host();
    let state = || {
        files.task(pid, "stat").unwrap().and_then(|s| {
            s.rsplit_once(") ")
                .and_then(|(_, rest)| rest.chars().next())
        })
    };
    let guard = std::time::Instant::now() + Duration::from_secs(120);
    while !matches!(state(), None | Some('Z' | 'X')) {
        assert!(
            std::time::Instant::now() < guard,
            "{pid} still runs: {:?}",
            state()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        // Everything in here was started by the test; kill what is left, then wait for the
        // cgroup to empty (rmdir fails with EBUSY while a task remains).
        for _ in 0..200 {
            let procs = std::fs::read_to_string(self.path.join("cgroup.procs")).unwrap_or_default();
            let pids: Vec<i32> = procs
                .lines()
                .filter_map(|l| l.trim().parse().ok())
                .collect();
            if pids.is_empty() && std::fs::remove_dir(&self.path).is_ok() {
                return;
            }
            for pid in pids {
                // SAFETY: kill(2) on a pid read from our own test cgroup; it takes integers
                // only and touches no memory.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        eprintln!("warning: could not remove test cgroup {:?}", self.path);
    }
}

pub(crate) mod sim {
    //! A noise injector: a simulated workload whose true rate is known, read through a
    //! counter source, with a matching noise probe. Runs under tokio's paused clock, so
    //! thousands of measurements take no real time.
    //!
    //! Each window's rate is `base * exp(N(0, cv))`: multiplicative noise, the shape of a
    //! steady workload preempted now and then. On top, with probability
    //! `flagged_probability` a window is slowed to 30-90% and its steal is raised to 10%,
    //! as when the hypervisor or a neighbour takes the CPU (the probe sees it); and with
    //! probability `silent_probability` a window is slowed to 70-95% with no sign in the
    //! probe (a cause the probe cannot see, which the rank statistics must absorb).

    use std::collections::{HashMap, HashSet};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use tokio::time::Instant;

    use crate::observe::noise::{CpuTicks, Incarnation, NoiseError, NoiseProbe, Snapshot};
    use crate::observe::source::{Kind, MetricSource, Reading, SourceError};

    /// What to inject.
    #[derive(Debug, Clone)]
    pub(crate) struct Params {
        pub base_rate: f64,
        pub cv: f64,
        pub flagged_probability: f64,
        pub silent_probability: f64,
        /// The workload runs at half speed for this long after the start (cold caches).
        pub cold_for: Duration,
        /// Segments (0 = the warm-up, 1 = the first window) forced to be flagged.
        pub forced_flagged: HashSet<usize>,
        /// After this many segments the workload restarts (new incarnation).
        pub restart_after: Option<usize>,
    }

    impl Params {
        pub(crate) fn steady(base_rate: f64, cv: f64) -> Self {
            Self {
                base_rate,
                cv,
                flagged_probability: 0.0,
                silent_probability: 0.0,
                cold_for: Duration::ZERO,
                forced_flagged: HashSet::new(),
                restart_after: None,
            }
        }
    }

    #[derive(Debug)]
    struct State {
        params: Params,
        rng: StdRng,
        start: Instant,
        last: Instant,
        total: f64,
        /// Rate factor and whether the probe sees it, for the segment in progress.
        factor: f64,
        flagged: bool,
        segment: usize,
        ticks: CpuTicks,
    }

    impl State {
        fn draw(&mut self) {
            let p = &self.params;
            let (u1, u2): (f64, f64) = (self.rng.r#gen::<f64>().max(1e-300), self.rng.r#gen());
            let normal = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
            self.factor = (p.cv * normal).exp();
            let forced = p.forced_flagged.contains(&self.segment);
            self.flagged = forced || self.rng.r#gen::<f64>() < p.flagged_probability;
            if self.flagged {
                self.factor *= self.rng.gen_range(0.3..0.9);
            } else if self.rng.r#gen::<f64>() < p.silent_probability {
                self.factor *= self.rng.gen_range(0.7..0.95);
            }
        }

        /// Integrates the rate up to `now` and closes the segment.
        fn close_segment(&mut self, now: Instant) {
            let cold_end = self.start + self.params.cold_for;
            let rate = self.params.base_rate * self.factor;
            let secs = now.saturating_duration_since(self.last).as_secs_f64();
            let cold = cold_end
                .saturating_duration_since(self.last)
                .min(now - self.last)
                .as_secs_f64();
            self.total += rate * (secs - cold) + rate * 0.5 * cold;
            self.last = now;
            // One PU, fully used by the workload; a flagged window loses 10% to steal.
            self.ticks.total += 100;
            self.ticks.pus = 1;
            if self.flagged {
                self.ticks.steal += 10;
            }
            self.segment += 1;
            self.draw();
        }
    }

    /// A simulated container: its source and its probe share one state.
    pub(crate) fn workload(params: Params, seed: u64) -> (SimSource, SimProbe) {
        let now = Instant::now();
        let mut state = State {
            params,
            rng: StdRng::seed_from_u64(seed),
            start: now,
            last: now,
            total: 0.0,
            factor: 1.0,
            flagged: false,
            segment: 0,
            ticks: CpuTicks::default(),
        };
        state.draw();
        let shared = Arc::new(Mutex::new(state));
        (
            SimSource {
                state: Arc::clone(&shared),
            },
            SimProbe { state: shared },
        )
    }

    #[derive(Debug)]
    pub(crate) struct SimSource {
        state: Arc<Mutex<State>>,
    }

    #[derive(Debug)]
    pub(crate) struct SimProbe {
        state: Arc<Mutex<State>>,
    }

    impl MetricSource for SimSource {
        fn describe(&self) -> String {
            "simulated ops_total".to_owned()
        }

        fn kind(&self) -> Kind {
            Kind::Counter
        }

        fn is_pulled(&self) -> bool {
            true
        }

        async fn poll(&mut self) -> Result<Vec<Reading>, SourceError> {
            let now = Instant::now();
            let mut s = self.state.lock().unwrap();
            s.close_segment(now);
            Ok(vec![Reading::new(now, s.total)])
        }
    }

    impl NoiseProbe for SimProbe {
        async fn incarnation(&self) -> Result<Incarnation, NoiseError> {
            let s = self.state.lock().unwrap();
            let restarted = s.params.restart_after.is_some_and(|n| s.segment >= n);
            Ok(Incarnation {
                pid: 100,
                start_ticks: if restarted { 2 } else { 1 },
            })
        }

        async fn snapshot(&self) -> Result<Snapshot, NoiseError> {
            let s = self.state.lock().unwrap();
            Ok(Snapshot {
                at: Instant::now(),
                ticks: s.ticks,
                interrupts: 0,
                frequencies_khz: None,
                threads: HashMap::new(),
            })
        }
    }
}
