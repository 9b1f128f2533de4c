//! Training workloads against the real kernel: each runs in a cgroup of its own, reports a
//! rising total, and leaves nothing behind. Root and a cgroup v1/v2 cpuset hierarchy are
//! needed; without them each test prints why and passes.

// Test code: a panic is the failure report, helpers included.
#![allow(clippy::unwrap_used)]

#[path = "../../tests/support/cgroup.rs"]
mod cgroup_support;

use std::path::PathBuf;
use std::process::Child;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use cgroup_support::TestCgroup;
use placed_host::cgroup::CgroupPath;
use placed_host::observe::{MetricSource, block_on};
use placed_training::workloads::{self, Launch, Running, Workload};

/// The kernels spin on every PU: one workload at a time keeps the others' rates sane
/// and the test cgroup's name unique.
static SERIAL: Mutex<()> = Mutex::new(());

struct Env {
    parent: TestCgroup<Child>,
    scratch: tempfile::TempDir,
    exe: PathBuf,
    next: usize,
    // Last: fields drop in order, and the lock must outlive the parent cgroup's removal.
    _serial: MutexGuard<'static, ()>,
}

fn env() -> Option<Env> {
    let serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let host = match cgroup_support::host() {
        Ok(h) => h,
        Err(why) => {
            eprintln!("skipped: {why}");
            return None;
        }
    };
    let cpus = host.online_cpus().unwrap();
    let mems = host.memory_nodes().unwrap();
    let name = format!("placed-wltest-{}", std::process::id());
    let parent = TestCgroup::named(&host, &name, &cpus, &mems);
    // A private copy: a shared target directory may see the binary rebuilt from another
    // branch while the test runs.
    let scratch = tempfile::tempdir().unwrap();
    let exe = scratch.path().join("placed-train");
    std::fs::copy(env!("CARGO_BIN_EXE_placed-train"), &exe).unwrap();
    Some(Env {
        _serial: serial,
        parent,
        scratch,
        exe,
        next: 0,
    })
}

impl Env {
    /// A fresh child cgroup (removed with the parent) and its directory.
    fn cgroup(&mut self) -> (CgroupPath, PathBuf) {
        self.next += 1;
        let cpus = self.parent.cgroups.cpuset(&self.parent.path).unwrap().cpus;
        let mems = self.parent.cgroups.cpuset(&self.parent.path).unwrap().mems;
        let cg = self.parent.child(&format!("w{}", self.next), &cpus, &mems);
        let dir = cg.under(self.parent.cgroups.root());
        (cg, dir)
    }

    fn launch(&mut self, workload: &Workload, threads: usize) -> (Running, CgroupPath, PathBuf) {
        let (cg, dir) = self.cgroup();
        let scratch = self.scratch.path().join(&workload.name);
        std::fs::create_dir_all(&scratch).unwrap();
        let launch = Launch {
            threads,
            cgroup_dir: &dir,
            extra_cgroup_dirs: &[],
            scratch: &scratch,
            exe: &self.exe,
        };
        let running = workload
            .launch(&launch)
            .unwrap_or_else(|e| panic!("{}: {e}", workload.name));
        (running, cg, dir)
    }
}

/// Longest wait for a workload to report what a test needs: only a workload that never
/// reports reaches it. The tests wait for progress, not for a time, so a busy machine (the
/// suite runs beside `stress-ng --cpu 2`) slows them down but does not fail them.
const HANG_GUARD: Duration = Duration::from_secs(180);

/// Readings of the source, polled every 100 ms until `enough` holds for them (or the hang
/// guard passes: the caller's assertions then say what was missing).
fn readings_until(running: &mut Running, enough: impl Fn(&[f64]) -> bool) -> Vec<f64> {
    let end = Instant::now() + HANG_GUARD;
    let mut values = Vec::new();
    while !enough(&values) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(100));
        let got = block_on(running.source().poll()).unwrap().unwrap();
        values.extend(got.iter().map(|r| r.value));
    }
    values
}

/// At least `n` readings, the last above the first and above 0.
fn rising(n: usize) -> impl Fn(&[f64]) -> bool {
    move |v: &[f64]| v.len() >= n && v[v.len() - 1] > v[0] && v[v.len() - 1] > 0.0
}

/// Some reading above 0 among at least `n`.
fn positive(n: usize) -> impl Fn(&[f64]) -> bool {
    move |v: &[f64]| v.len() >= n && v.iter().any(|&x| x > 0.0)
}

fn in_cgroup(pid: u32, cg: &CgroupPath) -> bool {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    let want = format!("/{}", cg.to_string().trim_start_matches('/'));
    let entries: Vec<(&str, &str)> = text
        .lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ':');
            let _id = parts.next()?;
            Some((parts.next()?, parts.next()?))
        })
        .collect();
    // v1 names the cpuset hierarchy; v2 has only the unified one ("0::").
    let cpuset = entries
        .iter()
        .find(|(controllers, _)| controllers.split(',').any(|c| c == "cpuset"))
        .or_else(|| {
            entries
                .iter()
                .find(|(controllers, _)| controllers.is_empty())
        });
    cpuset.is_some_and(|(_, path)| *path == want)
}

fn threads_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.count())
        .unwrap_or(0)
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

#[test]
fn every_builtin_runs_in_its_cgroup_counts_and_stops() {
    let Some(mut env) = env() else { return };
    let all = workloads::builtin();
    assert!(!all.is_empty());
    for workload in &all {
        let (mut running, cg, _dir) = env.launch(workload, 2);
        let pid = running.pids()[0];
        let values = readings_until(&mut running, rising(5));
        assert!(
            values.len() >= 5,
            "{}: only {} readings",
            workload.name,
            values.len()
        );
        let (first, last) = (values[0], values[values.len() - 1]);
        assert!(
            last > first && last > 0.0,
            "{}: total did not rise: {values:?}",
            workload.name
        );
        assert!(
            in_cgroup(pid, &cg),
            "{}: pid {pid} is not in {cg}",
            workload.name
        );
        // Two workers and the thread that prints.
        assert_eq!(threads_of(pid), 3, "{}: thread count", workload.name);
        running.stop().unwrap();
        assert!(!alive(pid), "{}: pid {pid} survived stop", workload.name);
        let left = env.parent.cgroups.procs(&cg).unwrap();
        assert!(left.is_empty(), "{}: left {left:?} in {cg}", workload.name);
        eprintln!(
            "{}: {} readings, total {first} -> {last}",
            workload.name,
            values.len()
        );
    }
}

fn debian() -> Vec<Workload> {
    workloads::load(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("workloads/debian.toml"))
        .unwrap()
}

/// Runs `workload` with two threads until its readings are `enough`, checks that every
/// process is in its cgroup, stops it, and checks that nothing is left.
fn run_external(env: &mut Env, workload: &Workload, enough: impl Fn(&[f64]) -> bool) -> Vec<f64> {
    let (mut running, cg, _dir) = env.launch(workload, 2);
    let values = readings_until(&mut running, enough);
    for pid in running.pids() {
        assert!(alive(pid), "{}: pid {pid} died", workload.name);
        assert!(
            in_cgroup(pid, &cg),
            "{}: pid {pid} not in {cg}",
            workload.name
        );
    }
    let pids = running.pids();
    running.stop().unwrap();
    for pid in pids {
        assert!(!alive(pid), "{}: pid {pid} survived stop", workload.name);
    }
    let left = env.parent.cgroups.procs(&cg).unwrap();
    assert!(left.is_empty(), "{}: left {left:?} in {cg}", workload.name);
    eprintln!("{}: readings {values:?}", workload.name);
    values
}

#[test]
fn an_external_tool_runs_in_its_cgroup_and_yields_readings() {
    let all = debian();
    let Some(workload) = ["sysbench-cpu", "stress-ng-cpu"]
        .iter()
        .filter_map(|n| all.iter().find(|w| w.name == *n))
        .find(|w| w.available())
    else {
        eprintln!("skipped: neither sysbench nor stress-ng is installed");
        return;
    };
    let Some(mut env) = env() else { return };
    let values = run_external(&mut env, workload, positive(2));
    assert!(values.len() >= 2, "{}: {values:?}", workload.name);
    assert!(values.iter().any(|&v| v > 0.0), "{values:?}");
}

#[test]
fn a_stress_ng_loop_counts_completed_runs() {
    let all = debian();
    let workload = all.iter().find(|w| w.name == "stress-ng-cpu").unwrap();
    if let Some(why) = workload.unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let Some(mut env) = env() else { return };
    let values = run_external(&mut env, workload, |v: &[f64]| v.len() >= 3);
    assert!(values.len() >= 3, "{values:?}");
    assert!(values.windows(2).all(|w| w[1] > w[0]), "{values:?}");
}

#[test]
fn redis_server_and_benchmark_share_the_cgroup() {
    let all = debian();
    let workload = all.iter().find(|w| w.name == "redis-get").unwrap();
    if let Some(why) = workload.unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let Some(mut env) = env() else { return };
    let values = run_external(&mut env, workload, positive(1));
    assert!(values.iter().any(|&v| v > 0.0), "{values:?}");
}

#[test]
fn postgres_with_pgbench_runs_where_installed() {
    let all = debian();
    let workload = all.iter().find(|w| w.name == "pgbench-tpcb").unwrap();
    if let Some(why) = workload.unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let Some(mut env) = env() else { return };
    let values = run_external(&mut env, workload, positive(1));
    assert!(values.iter().any(|&v| v > 0.0), "{values:?}");
}

fn definition(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.toml");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

#[test]
fn a_bad_definition_names_the_file_the_line_and_the_field() {
    let (_dir, path) = definition(
        "[[workload]]\nname = \"x\"\nfamily = \"f\"\nunit = \"u\"\ncommand = [\"true\"]\nmetric = { source = \"output\", regex = \"x\" }\nretries = 3\n",
    );
    let err = workloads::load(&path).unwrap_err().to_string();
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(err.contains("retries") && err.contains("line 7"), "{err}");
    let (_dir, path) = definition(
        "[[workload]]\nname = \"x\"\nfamily = \"f\"\nunit = \"u\"\ncommand = [\"run\", \"-n{nproc}\"]\nmetric = { source = \"output\", regex = \"x\" }\n",
    );
    let err = workloads::load(&path).unwrap_err().to_string();
    assert!(
        err.contains("{nproc}") && err.contains("{threads}"),
        "{err}"
    );
}

#[test]
fn a_failed_start_leaves_no_process_behind() {
    let Some(mut env) = env() else { return };
    let (_dir, path) = definition(
        r#"
[[workload]]
name = "never-ready"
family = "f"
unit = "u"
server = { command = ["sleep", "1000"], ready = ["false"], ready_timeout_s = 0.5 }
command = ["sleep", "1000"]
metric = { source = "output", regex = "x" }

[[workload]]
name = "bad-setup"
family = "f"
unit = "u"
setup = [["sh", "-c", "echo broken >&2; exit 3"]]
command = ["sleep", "1000"]
metric = { source = "output", regex = "x" }
"#,
    );
    for workload in workloads::load(&path).unwrap() {
        let (cg, dir) = env.cgroup();
        let launch = Launch {
            threads: 2,
            cgroup_dir: &dir,
            extra_cgroup_dirs: &[],
            scratch: env.scratch.path(),
            exe: &env.exe,
        };
        let err = workload.launch(&launch).unwrap_err().to_string();
        eprintln!("{err}");
        match workload.name.as_str() {
            "never-ready" => assert!(err.contains("not ready"), "{err}"),
            _ => assert!(err.contains("broken") && err.contains("setup"), "{err}"),
        }
        let left = env.parent.cgroups.procs(&cg).unwrap();
        assert!(left.is_empty(), "{}: left {left:?}", workload.name);
    }
}

#[test]
fn workload_list_shows_builtins_and_external_availability() {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("workloads/debian.toml");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_placed-train"))
        .args(["workload", "list", "--json", "--workload-file"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let rows: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let builtins = rows.iter().filter(|r| r["builtin"] == true).count();
    assert_eq!(builtins, workloads::builtin().len());
    assert!(
        rows.iter()
            .any(|r| r["name"] == "redis-get" && r["builtin"] == false)
    );
    for r in &rows {
        assert_eq!(
            r["available"] == true,
            r["unavailable_because"].is_null(),
            "{r}"
        );
    }
}
