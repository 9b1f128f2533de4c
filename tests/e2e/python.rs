//! Python grpcio (gRPC C-core, the client Python, C++, Ruby and PHP share) against the real
//! daemon on its Unix socket, unmodified: `python/session.py` is the orchestrator's side.
//!
//! Needs the project's virtualenv (`scripts/setup-debian` makes `.venv` with the packages
//! in clients/python/requirements.txt), or `PLACED_PYTHON`. Without one the test is skipped
//! with the reason, except under CI (`CI` set), where that is a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use placed::state::{State, StateStore};

use crate::cgroup_support::TestCgroup;
use crate::daemon_util::{Setup, TestDaemon, watched_under_model};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The Python with grpcio, grpcio-health-checking and grpcio-reflection, if there is one.
fn python() -> Option<PathBuf> {
    python_with("grpc, grpc_health, grpc_reflection")
}

/// The project's Python, if it can import `modules` (a Python import list).
pub fn python_with(modules: &str) -> Option<PathBuf> {
    let python = std::env::var_os("PLACED_PYTHON")
        .map_or_else(|| repo().join(".venv/bin/python"), PathBuf::from);
    let usable = Command::new(&python)
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if usable {
        return Some(python);
    }
    let why = format!(
        "{} cannot import {modules} (scripts/setup-debian installs clients/python/requirements.txt)",
        python.display()
    );
    assert!(std::env::var_os("CI").is_none(), "{why}");
    eprintln!("skipped, because {why}");
    None
}

fn session(python: &Path, phase: &str, d: &TestDaemon, work: &Path) -> String {
    let out = Command::new(python)
        .arg(repo().join("tests/e2e/python/session.py"))
        .arg(phase)
        .arg(&d.socket)
        .arg(work)
        // The stubs of this checkout, whatever is installed.
        .env("PYTHONPATH", repo().join("clients/python/src"))
        .output()
        .expect("python runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "python {phase} failed:\n{text}\n--- daemon log ---\n{}",
        d.log()
    );
    println!("--- python {phase} ---\n{text}");
    text
}

#[test]
fn python_grpcio_drives_the_daemon_on_its_unix_socket_unmodified() {
    let Some(host) = crate::cgroup_support::host_or_say() else {
        return;
    };
    let Some(python) = python() else { return };
    let cpus = host.online_cpus().expect("online CPUs");
    let mems = host.memory_nodes().expect("memory nodes");
    let mut cg: TestCgroup = TestCgroup::new(&host, &cpus, &mems);
    let children: Vec<_> = (1..=5)
        .map(|i| cg.child(&format!("c{i}"), &cpus, &mems))
        .collect();
    let ids: Vec<String> = children.iter().map(ToString::to_string).collect();
    // c1 gets measured in phase 2: a process to measure (an idle one; the metric is the
    // command's output, not the process's work).
    let sleeper = Command::new("sleep")
        .arg("600")
        .spawn()
        .expect("sleep runs");
    cg.adopt(&children[0], sleeper.id(), sleeper);
    let dir = tempfile::tempdir().unwrap();
    let value = dir.path().join("value");
    let runs = dir.path().join("runs");
    // Quotes, a pipe-free pipeline and arithmetic: what a shell needs its words intact for.
    let script = format!(
        "echo run >> '{}'; v=$(cat '{}') && echo $((v * 2))",
        runs.display(),
        value.display()
    );
    let work = serde_json::json!({
        "c1": ids[0], "c2": ids[1], "c3": ids[2],
        "script": script, "value": value, "runs": runs,
    });
    std::fs::write(dir.path().join("work.json"), work.to_string()).unwrap();
    // The command metric runs as nobody: it must read `value` and create `runs` (whose
    // appearance tells the session that the command ran) in this test's own directory.
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let setup = Setup {
        command_metrics: true,
        // One measurement off the prediction re-evaluates at once, so that the command's
        // value shows in the event that says so.
        policy_lines: "drift_windows = 1\ncooldown = \"0s\"".into(),
        watch_history: Some(16),
        watch_interval: Some("1h".into()),
        ..Setup::watching(&cg.path)
    };
    let mut d = TestDaemon::start(dir.path(), &setup);
    d.wait_for("the five containers", |j| {
        j["containers"].as_array().is_some_and(|c| c.len() == 5)
    });
    session(&python, "phase1", &d, dir.path());

    // c1 as a previous run would have left it under the model policy, predicted at 42 in
    // its placement, with the metric the Python client set, as the state file holds it.
    assert!(d.stop().is_some_and(|s| s.success()), "{}", d.log());
    let store = StateStore::new(dir.path().join("state.json"));
    let m = placed_core::machine::Machine::load(&placed_core::machine::TopologySource::Host, None)
        .unwrap();
    let mut state: State = store.load(m.fingerprint()).unwrap().expect("a state file");
    let record = state
        .containers
        .iter_mut()
        .find(|c| c.id == ids[0])
        .expect("c1 in the state file");
    let metric = record.metric.clone().expect("the metric Python set");
    assert_eq!(
        metric,
        placed_host::observe::SourceSpec::Command {
            argv: vec!["sh".into(), "-c".into(), script.clone()],
            counter: false,
        }
    );
    let set = placed_core::placement::important_placements(&m, cpus.len()).unwrap();
    let p = set
        .placements
        .iter()
        .find(|p| p.cpus == cpus)
        .expect("a placement on every PU");
    *record = watched_under_model(&ids[0], p, &mems, metric, 42.0);
    store.save(&state).unwrap();
    d.spawn();
    let out = session(&python, "phase2", &d, dir.path());
    assert!(
        out.contains("observed 100.000 [100.000, 100.000] against 35.700-48.300"),
        "{out}"
    );
}

/// A scheduler's session in Python: admission with and without a hold, two holds racing
/// for this VM's only allocation unit, a claim by Manage, expiry, batches, capacity
/// against ListContainers, a hold that outlives a restart, and error details decoded
/// from `grpc-status-details-bin`.
#[test]
fn python_grpcio_admits_reserves_claims_and_reads_error_details() {
    let Some(host) = crate::cgroup_support::host_or_say() else {
        return;
    };
    let Some(python) = python() else { return };
    let cpus = host.online_cpus().expect("online CPUs");
    let mems = host.memory_nodes().expect("memory nodes");
    let cg: TestCgroup = TestCgroup::new(&host, &cpus, &mems);
    let c1 = cg.child("c1", &cpus, &mems);
    let dir = tempfile::tempdir().unwrap();
    let work = serde_json::json!({ "c1": c1.to_string() });
    std::fs::write(dir.path().join("work.json"), work.to_string()).unwrap();
    let mut d = TestDaemon::start(dir.path(), &Setup::watching(&cg.path));
    d.wait_for("c1", |j| {
        j["containers"].as_array().is_some_and(|c| c.len() == 1)
    });
    session(&python, "admission1", &d, dir.path());
    assert!(d.stop().is_some_and(|s| s.success()), "{}", d.log());
    d.spawn();
    session(&python, "admission2", &d, dir.path());
}
