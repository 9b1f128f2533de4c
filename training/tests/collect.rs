//! The collector on this host, for real: root, a cpuset hierarchy, the collector's own
//! cgroups. Skips with the reason where it cannot run (not root, no cpusets, or inside the
//! guest, where `guest.rs` covers it). Tests run one at a time: each checks that the
//! collector left no cgroup behind.

// Test helpers fail the test on anything unexpected, as the tests themselves do.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use placed_models::data::{MachineHeader, RunRecord};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A tiny protocol; the foreign-load rule is off because this machine is shared with other
/// builds (the default protocol would refuse most measurements here, as it should), and so
/// is the interval bound: these tests check the collector's mechanics, not the precision of
/// six short windows on a loaded machine (`an_interval_wider_than_the_bound...` does).
const TINY: &[&str] = &[
    "--warmup",
    "0.2",
    "--window",
    "0.2",
    "--windows",
    "6",
    "--max-foreign",
    "1",
    "--retries",
    "3",
    "--max-interval",
    "100000",
];

fn unavailable() -> Option<String> {
    if std::env::var_os("PLACED_IN_GUEST").is_some() {
        return Some("inside the guest (tests/guest.rs runs the collector there)".into());
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not running as root".into());
    }
    if placed_host::cgroup::Cgroups::detect().is_err() {
        return Some("no cpuset hierarchy".into());
    }
    None
}

macro_rules! require_host {
    () => {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(why) = unavailable() {
            eprintln!("skipped, because {why}");
            return;
        }
    };
}

fn command(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_placed-train"));
    c.args(args).args(TINY).current_dir(dir);
    c
}

fn collect_args<'a>(out: &'a str, v: &'a str, workloads: &'a str, runs: &'a str) -> Vec<&'a str> {
    vec![
        "collect",
        "--vcpus",
        v,
        "--workloads",
        workloads,
        "--runs",
        runs,
        "--out",
        out,
    ]
}

fn run(mut c: Command) -> Output {
    let out = c.output().expect("placed-train runs");
    eprintln!(
        "{c:?}: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The header and records of a data file, checked for duplicates.
fn read(path: &Path) -> (MachineHeader, Vec<RunRecord>) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.ends_with('\n'), "every line is whole");
    let mut lines = text.lines();
    let mut header: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(header["kind"], "machine");
    header.as_object_mut().unwrap().remove("kind");
    let header: MachineHeader = serde_json::from_value(header).unwrap();
    // The machine's resources follow the header, so the data can join a corpus for the
    // model across machine classes.
    let resources: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(resources["kind"], "resources", "{resources}");
    let mut seen = HashSet::new();
    let records: Vec<RunRecord> = lines
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            assert_eq!(v["kind"], "run");
            v.as_object_mut().unwrap().remove("kind");
            let r: RunRecord = serde_json::from_value(v).unwrap();
            assert!(
                seen.insert((r.workload.clone(), r.run, r.placement.clone())),
                "duplicate {r:?}"
            );
            r
        })
        .collect();
    (header, records)
}

/// The data file as the models crate reads it (one placement is valid data; only fitting
/// refuses it).
fn check_with_models(path: &Path, header: &MachineHeader) {
    let d = placed_models::Dataset::load(path).expect("the models crate reads the file");
    assert_eq!(d.header().placements.len(), header.placements.len());
    let resources = d.resources().expect("the host's resources");
    assert_eq!(resources.placements.len(), header.placements.len());
    assert_eq!(
        d.provenance(),
        placed_training::provenance::detect().provenance
    );
}

fn cgroups_of(pid: u32) -> Vec<PathBuf> {
    let name = format!("placed-train-{pid}");
    std::fs::read_dir("/sys/fs/cgroup")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join(&name))
        .chain([PathBuf::from("/sys/fs/cgroup").join(&name)])
        .filter(|p| p.exists())
        .collect()
}

fn wait_for(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) {
    let end = Instant::now() + timeout;
    while !ok() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

fn spawn(c: &mut Command) -> Child {
    c.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn collect_writes_a_whole_data_file_and_leaves_no_cgroup() {
    require_host!();
    let dir = tempfile::tempdir().unwrap();
    let workloads = support::workloads(2);
    let out = run(command(
        dir.path(),
        &collect_args("data.jsonl", "1", &workloads, "1"),
    ));
    assert!(out.status.success());
    let path = dir.path().join("data.jsonl");
    let (header, records) = read(&path);
    assert_eq!(header.v, 1);
    assert_eq!(records.len(), 2 * header.placements.len());
    // Whatever this host is, the records say what detection found, the same in every one.
    let detected = placed_training::provenance::detect();
    for r in &records {
        assert_eq!(r.provenance, detected.provenance, "{}", detected.evidence);
        assert!(r.performance.value > 0.0 && r.performance.repetitions >= 6);
    }
    check_with_models(&path, &header);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("[2/2]") && stderr.contains("left"),
        "progress is shown"
    );
    // Counters where the PMU allows; without one, said once for the whole collection and
    // every record's map left empty.
    if placed_host::observe::probe_pmu().is_err() {
        assert_eq!(
            stderr
                .matches("no hardware performance counters on this host")
                .count(),
            1,
            "{stderr}"
        );
        assert!(records.iter().all(|r| r.counters.is_empty()), "{records:?}");
    } else {
        assert!(
            records.iter().all(|r| r.counters.contains_key("ipc")),
            "{records:?}"
        );
    }

    // Run again: nothing left to do, nothing measured twice.
    let again = run(command(
        dir.path(),
        &collect_args("data.jsonl", "1", &workloads, "1"),
    ));
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stdout).contains("collected 0 measurement(s)"));
    assert_eq!(read(&path).1.len(), records.len());

    // Another v does not fit this file's header.
    let other = run(command(
        dir.path(),
        &collect_args("data.jsonl", "2", &workloads, "1"),
    ));
    assert_eq!(other.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&other.stderr).contains("collected for another setting"),
        "header mismatch is explained"
    );
}

#[test]
fn a_killed_collection_resumes_without_duplicates() {
    require_host!();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data.jsonl");
    let workloads = support::workloads(2);
    let args = collect_args("data.jsonl", "1", &workloads, "3");
    let mut child = spawn(&mut command(dir.path(), &args));
    let pid = child.id();
    // Header, resources and two measurements, then kill without warning.
    wait_for("two measurements", Duration::from_secs(120), || {
        lines(&path) >= 4
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let (_, before) = read(&path);
    assert!(!before.is_empty());
    assert!(
        !cgroups_of(pid).is_empty(),
        "SIGKILL leaves the cgroups (the next run cleans them)"
    );

    let out = run(command(dir.path(), &args));
    assert!(out.status.success());
    let (header, records) = read(&path);
    assert_eq!(records.len(), 2 * 3 * header.placements.len());
    assert!(records.len() > before.len());
    assert_eq!(&records[..before.len()], &before[..], "measured once, kept");
    assert!(
        cgroups_of(pid).is_empty(),
        "the dead collector's cgroups are removed"
    );
    check_with_models(&path, &header);
}

#[test]
fn sigint_stops_cleanly_and_removes_the_cgroups() {
    require_host!();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data.jsonl");
    let workloads = support::workloads(2);
    let child = spawn(&mut command(
        dir.path(),
        &collect_args("data.jsonl", "1", &workloads, "5"),
    ));
    let pid = child.id();
    wait_for("a measurement", Duration::from_secs(120), || {
        lines(&path) >= 3
    });
    // Mid-measurement: the run cgroup exists.
    wait_for("a run cgroup", Duration::from_secs(120), || {
        cgroups_of(pid).iter().any(|p| {
            std::fs::read_dir(p)
                .into_iter()
                .flatten()
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("run-"))
        })
    });
    // SAFETY: kill has no memory preconditions; the pid is our child.
    unsafe {
        libc::kill(i32::try_from(pid).unwrap(), libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted by signal 2"), "{stderr}");
    assert!(cgroups_of(pid).is_empty(), "cgroups removed on SIGINT");
    let (_, records) = read(&path);
    assert!(!records.is_empty());
}

#[test]
fn train_on_a_one_placement_host_explains_why_no_model() {
    require_host!();
    let (_, set) = placed_training::collect::host_placements(None, 1).unwrap();
    if set.placements.len() > 1 {
        eprintln!("skipped, because this host has several placements for v = 1");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = run(command(
        dir.path(),
        &[
            "train",
            "--vcpus",
            "1",
            "--workloads",
            "selftest-spin",
            "--model-dir",
            "models",
        ],
    ));
    // Refused: the host cannot give a model (exit-code table of placed_core::exit).
    assert_eq!(out.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to predict"));
    assert!(
        dir.path().join("models/data-v1.jsonl").exists(),
        "the data is kept"
    );
}

#[test]
fn an_interval_wider_than_the_bound_is_measured_again_then_recorded_unusable() {
    require_host!();
    let dir = tempfile::tempdir().unwrap();
    // TINY with three retries and a bound no real measurement meets (+/-0.000001%).
    let strict: Vec<&str> = TINY
        .chunks(2)
        .filter(|kv| kv[0] != "--retries" && kv[0] != "--max-interval")
        .flatten()
        .copied()
        .chain(["--retries", "3", "--max-interval", "0.000001"])
        .collect();
    let mut c = Command::new(env!("CARGO_BIN_EXE_placed-train"));
    c.args(collect_args("data.jsonl", "1", "selftest-spin", "1"))
        .args(strict)
        .current_dir(dir.path());
    let out = run(c);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let measured = stderr.matches(": interval +/-").count();
    if measured == 0 {
        // Every attempt refused for disturbances (interrupts on this shared machine): a
        // skip, which the other tests cover; nothing about the bound to check.
        assert_eq!(out.status.code(), Some(5), "{stderr}");
        eprintln!("skipped, because every attempt was disturbed on this host");
        return;
    }
    assert!(out.status.success(), "recorded, not skipped: {stderr}");
    // Every attempt that measured was judged too wide; all but the last are measured again.
    if measured > 1 {
        assert!(
            stderr.contains("measuring again with longer windows"),
            "{stderr}"
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("unusable: selftest-spin run 0 in"),
        "{stdout}"
    );
    assert!(stdout.contains("recorded as unusable"), "{stdout}");
    let path = dir.path().join("data.jsonl");
    let (header, records) = read(&path);
    assert_eq!(records.len(), header.placements.len());
    for r in &records {
        assert!(r.performance.value.is_nan(), "not a number: {r:?}");
        let why = r.unusable.as_deref().unwrap();
        assert!(
            why.contains("wider than the bound") && why.contains(" of 4 attempt(s)"),
            "{why}"
        );
    }
    let data = placed_models::Dataset::load(&path).expect("valid data");
    assert_eq!(data.unusable().count(), header.placements.len());
    assert!(
        !data.run_is_usable("selftest-spin", 0),
        "left out of fitting"
    );
    // Recorded: running again with --keep-unusable measures nothing.
    let mut keep = collect_args("data.jsonl", "1", "selftest-spin", "1");
    keep.push("--keep-unusable");
    let kept = run(command(dir.path(), &keep));
    let kept_out = String::from_utf8_lossy(&kept.stdout);
    assert!(
        kept_out.contains("collected 0 measurement(s)"),
        "{kept_out}"
    );
    assert!(kept_out.contains("kept: "), "{kept_out}");
    // Without it, each is measured again once, here with TINY's bound that any measurement
    // meets, and the new usable records supersede the unusable ones.
    let again = run(command(
        dir.path(),
        &collect_args("data.jsonl", "1", "selftest-spin", "1"),
    ));
    if again.status.code() == Some(5) {
        eprintln!("skipped the check of measuring again: attempts were disturbed on this host");
        return;
    }
    assert!(again.status.success());
    let again_out = String::from_utf8_lossy(&again.stdout);
    assert!(again_out.contains("measured again: "), "{again_out}");
    let data = placed_models::Dataset::load(&path).expect("valid data");
    assert_eq!(data.unusable().count(), 0);
    assert_eq!(data.superseded(), header.placements.len());
    assert!(data.run_is_usable("selftest-spin", 0));
}
