//! The procfs and sysfs noise probe. Every file is read through [`Files`], so tests run it
//! on a fake tree; parsers take `&str`.
//!
//! Where a fake tree differs from the kernel: real `/proc/<tid>` entries vanish while being
//! read (a thread exits between listing and reading); the probe skips such threads, and the
//! fake tree simply omits them.

use std::collections::HashMap;

use tokio::time::Instant;

use super::{CpuTicks, Incarnation, NoiseError, NoiseProbe, Snapshot, Target, ThreadCounters};
use crate::kernel::{Files, is_gone};
use placed_core::cpuset::CpuSet;

/// Noise probe reading `/proc` and `/sys`.
#[derive(Debug, Clone)]
pub struct ProcProbe {
    files: Files,
    target: Target,
    cpus: Option<CpuSet>,
}

impl ProcProbe {
    /// A probe of `target` on the container's PUs `cpus` (all online PUs when `None`), on
    /// `files` (the host's, or a fake tree's): what `enact::Host::noise_probe` builds.
    pub fn on(files: &Files, target: Target, cpus: Option<CpuSet>) -> Self {
        Self {
            files: files.clone(),
            target,
            cpus,
        }
    }

    /// The same on this host's `/proc` and `/sys`, for callers that hold no
    /// [`crate::kernel::Kernel`] (the training collector and its benches).
    pub fn new(target: Target, cpus: Option<CpuSet>) -> Self {
        Self::on(&Files::host(), target, cpus)
    }

    fn gone(&self) -> NoiseError {
        NoiseError::Gone {
            target: self.target.to_string(),
        }
    }

    /// Pids (for the incarnation) or tids (for counters) of the target.
    fn ids(&self, threads: bool) -> Result<Vec<u32>, NoiseError> {
        match &self.target {
            Target::Cgroup(dir) => {
                // v2 lists threads in cgroup.threads; v1 in tasks. Processes: cgroup.procs.
                let names: &[&str] = if threads {
                    &["cgroup.threads", "tasks"]
                } else {
                    &["cgroup.procs"]
                };
                for name in names {
                    match self.files.read(&dir.join(name)) {
                        Ok(text) => return Ok(parse_id_list(&text)),
                        // The other version's file, or the cgroup is gone: try the next.
                        Err(e) if is_gone(&e) => {}
                        Err(e) => return Err(NoiseError::Read(e)),
                    }
                }
                Err(self.gone())
            }
            Target::Process(pid) if threads => {
                self.files.threads_of(*pid)?.ok_or_else(|| self.gone())
            }
            Target::Process(pid) => Ok(vec![*pid]),
        }
    }

    /// Reads a per-task file, `None` when the task has exited meanwhile.
    fn read_task(&self, id: u32, file: &str) -> Result<Option<String>, NoiseError> {
        Ok(self.files.task(id, file)?)
    }

    fn thread(&self, tid: u32) -> Result<Option<ThreadCounters>, NoiseError> {
        let Some(schedstat) = self.read_task(tid, "schedstat")? else {
            return Ok(None);
        };
        let (run_ns, wait_ns) = parse_schedstat(&schedstat).ok_or_else(|| NoiseError::Parse {
            path: self.files.task_path(tid, "schedstat"),
            reason: "expected three numbers",
        })?;
        // /proc/<tid>/sched exists with CONFIG_SCHED_DEBUG and has both counts; status has
        // the switches only.
        let (involuntary_switches, migrations) = match self.read_task(tid, "sched")? {
            Some(sched) => (
                sched_field(&sched, "nr_involuntary_switches"),
                sched_field(&sched, "se.nr_migrations"),
            ),
            None => (None, None),
        };
        let involuntary_switches = match involuntary_switches {
            Some(n) => n,
            None => match self.read_task(tid, "status")? {
                Some(status) => status_field(&status, "nonvoluntary_ctxt_switches").unwrap_or(0),
                None => return Ok(None),
            },
        };
        Ok(Some(ThreadCounters {
            run_ns,
            wait_ns,
            involuntary_switches,
            migrations,
        }))
    }

    /// Current frequency of each PU, `None` without cpufreq (any file missing).
    fn frequencies(&self) -> Option<Vec<u64>> {
        let cpus: Vec<u32> = match &self.cpus {
            Some(set) => set.iter().collect(),
            None => {
                let online = self.files.sys("devices/system/cpu/online").ok()?;
                online.trim().parse::<CpuSet>().ok()?.iter().collect()
            }
        };
        cpus.iter()
            .map(|cpu| {
                let rel = format!("devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq");
                self.files.sys(&rel).ok()?.trim().parse().ok()
            })
            .collect()
    }

    fn snapshot_now(&self) -> Result<Snapshot, NoiseError> {
        let parse_err = |file: &str, reason| NoiseError::Parse {
            path: self.files.proc_root().join(file),
            reason,
        };
        let ticks = parse_stat(&self.files.proc("stat")?, self.cpus.as_ref())
            .ok_or_else(|| parse_err("stat", "no cpu lines"))?;
        let interrupts = parse_interrupts(&self.files.proc("interrupts")?, self.cpus.as_ref())
            .ok_or_else(|| parse_err("interrupts", "no CPU header line"))?;
        let mut threads = HashMap::new();
        for tid in self.ids(true)? {
            if let Some(t) = self.thread(tid)? {
                threads.insert(tid, t);
            }
        }
        Ok(Snapshot {
            at: Instant::now(),
            ticks,
            interrupts,
            frequencies_khz: self.frequencies(),
            threads,
        })
    }

    fn incarnation_now(&self) -> Result<Incarnation, NoiseError> {
        let mut oldest: Option<Incarnation> = None;
        for pid in self.ids(false)? {
            let Some(stat) = self.read_task(pid, "stat")? else {
                continue;
            };
            let start_ticks = parse_start_ticks(&stat).ok_or_else(|| NoiseError::Parse {
                path: self.files.task_path(pid, "stat"),
                reason: "no start time in field 22",
            })?;
            let here = Incarnation { pid, start_ticks };
            if oldest.is_none_or(|o| (start_ticks, pid) < (o.start_ticks, o.pid)) {
                oldest = Some(here);
            }
        }
        oldest.ok_or_else(|| self.gone())
    }
}

impl NoiseProbe for ProcProbe {
    async fn incarnation(&self) -> Result<Incarnation, NoiseError> {
        let probe = self.clone();
        tokio::task::spawn_blocking(move || probe.incarnation_now())
            .await
            .unwrap_or_else(|join| std::panic::resume_unwind(join.into_panic()))
    }

    async fn snapshot(&self) -> Result<Snapshot, NoiseError> {
        // Reading a file per thread can take milliseconds for a large container: keep it
        // off the async worker threads (STYLE.md §4).
        let probe = self.clone();
        tokio::task::spawn_blocking(move || probe.snapshot_now())
            .await
            .unwrap_or_else(|join| std::panic::resume_unwind(join.into_panic()))
    }
}

fn parse_id_list(text: &str) -> Vec<u32> {
    text.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// Jiffies of `cpus` (every PU when `None`), from the per-PU `cpuN` lines. Fields: user
/// nice system idle iowait irq softirq steal guest guest_nice; guest time is already inside
/// user and nice, so only the first eight count.
fn parse_stat(text: &str, cpus: Option<&CpuSet>) -> Option<CpuTicks> {
    let mut out = CpuTicks::default();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let Some(id) = fields.next().and_then(|l| l.strip_prefix("cpu")) else {
            continue;
        };
        let Ok(id) = id.parse::<u32>() else { continue }; // the aggregate "cpu" line
        if cpus.is_some_and(|set| !set.contains(id)) {
            continue;
        }
        let v: Vec<u64> = fields.take(8).filter_map(|f| f.parse().ok()).collect();
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        out.total += v.iter().sum::<u64>();
        out.busy += at(0) + at(1) + at(2) + at(5) + at(6);
        out.steal += at(7);
        out.pus += 1;
    }
    (out.pus > 0).then_some(out)
}

/// Interrupts delivered to `cpus` (all when `None`) since boot, summed over every source.
/// The header names the columns (`CPU0 CPU1 …`; offline PUs have none); rows with fewer
/// numbers than columns (`ERR`, `MIS`) are system-wide totals and are skipped.
fn parse_interrupts(text: &str, cpus: Option<&CpuSet>) -> Option<u64> {
    let mut lines = text.lines();
    let header: Vec<u32> = lines
        .next()?
        .split_whitespace()
        .map(|c| c.strip_prefix("CPU")?.parse().ok())
        .collect::<Option<_>>()?;
    if header.is_empty() {
        return None;
    }
    let mut total = 0;
    for line in lines {
        let Some((_, rest)) = line.split_once(':') else {
            continue;
        };
        let counts: Vec<u64> = rest
            .split_whitespace()
            .take(header.len())
            .map_while(|f| f.parse().ok())
            .collect();
        if counts.len() != header.len() {
            continue;
        }
        total += header
            .iter()
            .zip(&counts)
            .filter(|(cpu, _)| cpus.is_none_or(|s| s.contains(**cpu)))
            .map(|(_, n)| n)
            .sum::<u64>();
    }
    Some(total)
}

/// `run_ns wait_ns timeslices`.
fn parse_schedstat(text: &str) -> Option<(u64, u64)> {
    let mut f = text.split_whitespace().map(str::parse::<u64>);
    Some((f.next()?.ok()?, f.next()?.ok()?))
}

/// `name   :   value` lines of `/proc/<tid>/sched` (the counts are printed as integers).
fn sched_field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == name).then(|| v.trim().parse().ok())?
    })
}

/// `Name:\tvalue` lines of `/proc/<pid>/status`.
fn status_field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k == name).then(|| v.trim().parse().ok())?
    })
}

/// Field 22 of `/proc/<pid>/stat`, counted after the parenthesised command name, which may
/// itself hold spaces and parentheses.
fn parse_start_ticks(text: &str) -> Option<u64> {
    let (_, after) = text.rsplit_once(')')?;
    // After ")" come fields 3, 4, …; field 22 is the 20th of them.
    after.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::observe::testing::TestCgroup;

    const STAT: &str = "cpu  100 0 50 800 0 0 0 50 0 0\n\
cpu0 60 0 20 400 0 0 0 20 0 0\n\
cpu1 40 0 30 400 0 0 0 30 7 0\n\
intr 12345 0 0\n";

    const INTERRUPTS: &str = "           CPU0       CPU1       \n\
  0:         48          0   IO-APIC   2-edge      timer\n\
LOC:       1000       2000   Local timer interrupts\n\
ERR:          0\n\
MIS:          0\n";

    #[test]
    fn stat_sums_the_chosen_cpus() {
        let all = CpuTicks {
            total: 1000,
            busy: 150,
            steal: 50,
            pus: 2,
        };
        assert_eq!(parse_stat(STAT, None), Some(all));
        let one: CpuSet = "1".parse().unwrap();
        let cpu1 = CpuTicks {
            total: 500,
            busy: 70,
            steal: 30,
            pus: 1,
        };
        assert_eq!(parse_stat(STAT, Some(&one)), Some(cpu1));
        assert_eq!(parse_stat("intr 1\n", None), None);
    }

    #[test]
    fn interrupts_sum_the_chosen_columns_and_skip_totals() {
        assert_eq!(parse_interrupts(INTERRUPTS, None), Some(3048));
        let zero: CpuSet = "0".parse().unwrap();
        assert_eq!(parse_interrupts(INTERRUPTS, Some(&zero)), Some(1048));
        assert_eq!(parse_interrupts("garbage", None), None);
    }

    #[test]
    fn per_task_files_parse() {
        assert_eq!(parse_schedstat("123 456 7\n"), Some((123, 456)));
        let sched =
            "x (1, #threads: 1)\n---\nse.nr_migrations   :   12\nnr_involuntary_switches :  3\n";
        assert_eq!(sched_field(sched, "se.nr_migrations"), Some(12));
        assert_eq!(sched_field(sched, "nr_involuntary_switches"), Some(3));
        assert_eq!(
            status_field(
                "Name:\tx\nnonvoluntary_ctxt_switches:\t9\n",
                "nonvoluntary_ctxt_switches"
            ),
            Some(9)
        );
        let stat = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 777 1000 10";
        assert_eq!(parse_start_ticks(stat), Some(777));
    }

    fn files(dir: &Path) -> Files {
        Files::new(
            std::sync::Arc::new(crate::kernel::fs::RealFs),
            dir.to_owned(),
            dir.to_owned(),
        )
    }

    fn fake_tree(dir: &Path, with_sched: bool) {
        std::fs::write(dir.join("stat"), STAT).unwrap();
        std::fs::write(dir.join("interrupts"), INTERRUPTS).unwrap();
        for (id, start) in [(7_u32, 500_u64), (8, 900)] {
            let d = dir.join(id.to_string());
            std::fs::create_dir_all(d.join("task")).unwrap();
            std::fs::create_dir_all(d.join("task").join(id.to_string())).unwrap();
            std::fs::write(d.join("schedstat"), "2000000 1000000 5\n").unwrap();
            std::fs::write(d.join("status"), "nonvoluntary_ctxt_switches:\t4\n").unwrap();
            if with_sched {
                std::fs::write(
                    d.join("sched"),
                    "se.nr_migrations : 2\nnr_involuntary_switches : 6\n",
                )
                .unwrap();
            }
            std::fs::write(
                d.join("stat"),
                format!("{id} (w) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 {start} 0 0"),
            )
            .unwrap();
        }
    }

    #[tokio::test]
    async fn a_fake_cgroup_gives_counters_and_its_oldest_process() {
        let dir = tempfile::tempdir().unwrap();
        fake_tree(dir.path(), true);
        let cg = dir.path().join("cg");
        std::fs::create_dir(&cg).unwrap();
        std::fs::write(cg.join("cgroup.procs"), "8\n7\n").unwrap();
        std::fs::write(cg.join("cgroup.threads"), "8\n7\n99\n").unwrap(); // 99 has exited
        let probe = ProcProbe::on(&files(dir.path()), Target::Cgroup(cg), None);
        let s = probe.snapshot().await.unwrap();
        assert_eq!(
            (s.ticks.total, s.ticks.steal, s.interrupts),
            (1000, 50, 3048)
        );
        assert_eq!(s.threads.len(), 2);
        assert_eq!(
            s.threads[&7],
            ThreadCounters {
                run_ns: 2_000_000,
                wait_ns: 1_000_000,
                involuntary_switches: 6,
                migrations: Some(2)
            }
        );
        assert_eq!(s.frequencies_khz, None);
        assert_eq!(
            probe.incarnation().await.unwrap(),
            Incarnation {
                pid: 7,
                start_ticks: 500
            }
        );
    }

    #[tokio::test]
    async fn without_sched_debug_switches_come_from_status() {
        let dir = tempfile::tempdir().unwrap();
        fake_tree(dir.path(), false);
        let probe = ProcProbe::on(&files(dir.path()), Target::Process(8), None);
        let s = probe.snapshot().await.unwrap();
        assert_eq!(s.threads[&8].involuntary_switches, 4);
        assert_eq!(s.threads[&8].migrations, None);
        let gone = ProcProbe::on(&files(dir.path()), Target::Process(1234), None);
        assert!(matches!(
            gone.snapshot().await,
            Err(NoiseError::Gone { .. })
        ));
        assert!(matches!(
            gone.incarnation().await,
            Err(NoiseError::Gone { .. })
        ));
    }

    #[tokio::test]
    async fn a_real_cgroup_shows_its_busy_thread_running() {
        let Some(cg) = TestCgroup::create("noise") else {
            eprintln!("skipped, because no writable cgroup v2 mount was found");
            return;
        };
        let busy = cg.spawn_busy_loop();
        let probe = ProcProbe::new(Target::Cgroup(cg.path().to_owned()), None);
        let inc = probe.incarnation().await.unwrap();
        assert_eq!(inc.pid, busy.pid());
        // How much CPU the loop gets depends on what else the machine runs (the suite
        // under load got it 14% of 300 ms once); that it runs at all does not. The window
        // grows until it shows; the guard only stops a loop that never runs.
        let guard = std::time::Instant::now() + std::time::Duration::from_secs(120);
        let a = probe.snapshot().await.unwrap();
        let n = loop {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            let b = probe.snapshot().await.unwrap();
            let n = super::super::Noise::between(&a, &b);
            if n.cpu_use > 0.0 || std::time::Instant::now() > guard {
                break n;
            }
        };
        assert_eq!(n.threads, 1);
        assert!(n.cpu_use > 0.0, "{n:?}");
        drop(busy);
        // Once the workload is gone the probe says so instead of reporting an empty window.
        while std::time::Instant::now() < guard {
            if matches!(probe.incarnation().await, Err(NoiseError::Gone { .. })) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!("the emptied cgroup still reports a workload");
    }
}
