//! The daemon's defences against lost state and bad requests, on a fake host (no root):
//! cancelled requests never leave a short state file, a second daemon cannot take the same
//! state file, `Manage` refuses what `Place` refuses, a state file the API would refuse is
//! not adopted, and an unchanged one is not rewritten at start.

use std::path::Path;
use std::sync::Arc;

use placed::config::Config;
use placed::lifecycle::{Daemon, DaemonError, Environment, ManageRequest};
use placed::state::{StateError, StateStore};
use placed::telemetry::Metrics;
use placed_core::machine::{Machine, TopologySource};
use placed_core::policy::Policy;
use placed_host::fake::FakeKernel;

/// 16 PUs (0-15) on two nodes.
fn machine() -> Machine {
    Machine::load(
        &TopologySource::Synthetic("pack:2 numa:1 core:4 pu:2".into()),
        None,
    )
    .expect("a synthetic machine")
}

fn config(dir: &Path) -> Config {
    let mut c = Config::default();
    c.daemon.state_file = dir.join("state.json");
    c.daemon.model_dir = dir.join("models");
    c.containers.runtimes = Vec::new();
    c.metrics.enabled = false;
    c
}

async fn start(
    dir: &Path,
    fake: &Arc<FakeKernel>,
) -> Result<Daemon, placed::lifecycle::StartError> {
    let env = Environment {
        machine: machine(),
        host: fake.host(),
        pmu: false,
        migration_hold: None,
        // A fake host: what it measures is SIMULATED.
        provenance: placed_models::Provenance::Simulated,
    };
    Daemon::start(config(dir), env, Arc::new(Metrics::default())).await
}

fn manage(container: &str, policy: Option<Policy>) -> ManageRequest {
    ManageRequest {
        container: container.into(),
        vcpus: Some(2),
        policy,
        metric: None,
        on_override: None,
        ..ManageRequest::default()
    }
}

/// Cancelled `Manage` calls (a client's deadline, a disconnect) used to let two saves run
/// at once on one temporary file, and `state.json` was renamed into place empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancelled_manage_calls_never_leave_a_short_state_file() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeKernel::v1("0-15", "0-1");
    for i in 0..8 {
        fake.cgroup(&format!("/batch/c{i}"), "", "");
    }
    let daemon = start(dir.path(), &fake).await.unwrap();
    for i in 0..8 {
        daemon
            .manage(manage(&format!("/batch/c{i}"), Some(Policy::Observe)))
            .await
            .unwrap();
    }
    let fingerprint = daemon.machine().fingerprint().to_owned();
    let path = dir.path().join("state.json");
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (path, done, fp) = (path.clone(), done.clone(), fingerprint.clone());
        tokio::task::spawn_blocking(move || {
            let store = StateStore::new(&path);
            let mut good = 0u32;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                match store.load(&fp) {
                    Ok(Some(_)) => good += 1,
                    Ok(None) => {}
                    Err(e) => panic!("after {good} good reads: {e}"),
                }
            }
            good
        })
    };
    for round in 0..300u32 {
        let d = daemon.clone();
        let req = manage(
            &format!("/batch/c{}", round % 8),
            Some(if round % 2 == 0 {
                Policy::Observe
            } else {
                Policy::Aggressive
            }),
        );
        if round % 2 == 0 {
            // Cancelled after a varying number of scheduler turns: at each await point of
            // Manage in turn, the save among them.
            let call = tokio::spawn(async move { d.manage(req).await });
            for _ in 0..round % 7 {
                tokio::task::yield_now().await;
            }
            call.abort();
            let _ = call.await;
        } else {
            // A client's deadline, mostly expiring during the blocking write.
            let deadline = std::time::Duration::from_micros(u64::from(round % 40) * 25);
            let _ = tokio::time::timeout(deadline, d.manage(req)).await;
        }
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(
        reader.await.unwrap() > 0,
        "the reader never saw a state file"
    );
    daemon.shutdown().await;
    StateStore::new(&path).load(&fingerprint).unwrap().unwrap();
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

/// `Manage` used to accept any pinned id and the root cgroup; the container then stayed
/// FAILED for good.
#[tokio::test]
async fn manage_refuses_unknown_placements_and_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeKernel::v1("0-15", "0-1");
    fake.cgroup("/batch/job", "", "");
    let daemon = start(dir.path(), &fake).await.unwrap();
    let long = "x".repeat(100_000);
    for id in ["numa9", "../../x", "a\0b", long.as_str()] {
        let pinned = Policy::Pinned {
            placement: id.into(),
        };
        let err = daemon
            .manage(manage("/batch/job", Some(pinned)))
            .await
            .unwrap_err();
        assert!(
            matches!(err, DaemonError::UnknownPlacement { .. }),
            "{id:.20}: {err}"
        );
        assert!(
            err.to_string().len() < 1000,
            "{} bytes",
            err.to_string().len()
        );
    }
    // Refused before it was registered: nothing to un-manage.
    assert!(daemon.containers().is_empty());
    let set = daemon.placements(2).unwrap();
    let good = Policy::Pinned {
        placement: set.placements[0].id.clone(),
    };
    daemon
        .manage(manage("/batch/job", Some(good.clone())))
        .await
        .unwrap();
    // A known container is checked the same way.
    let err = daemon
        .manage(manage(
            "/batch/job",
            Some(Policy::Pinned {
                placement: "numa9".into(),
            }),
        ))
        .await
        .unwrap_err();
    assert!(matches!(err, DaemonError::UnknownPlacement { .. }), "{err}");
    // Refused where the container is resolved (the root is never a container), with the
    // reason in the cause, and as the caller's mistake.
    let err = daemon.manage(manage("/", None)).await.unwrap_err();
    let line = placed_core::text::error_line(&err);
    assert!(line.contains("root cgroup"), "{line}");
    assert_eq!(
        err.fault(),
        placed_core::fault::Fault::InvalidInput,
        "{line}"
    );
    daemon.shutdown().await;
}

/// A state file's records are checked like API input before any is adopted.
#[tokio::test]
async fn a_state_file_the_api_would_refuse_is_not_adopted() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeKernel::v1("0-15", "0-1");
    fake.cgroup("/batch/job", "", "");
    let daemon = start(dir.path(), &fake).await.unwrap();
    daemon.manage(manage("/batch/job", None)).await.unwrap();
    daemon.shutdown().await;
    drop(daemon);
    let store = StateStore::new(dir.path().join("state.json"));
    let fp = machine().fingerprint().to_owned();
    let mut state = store.load(&fp).unwrap().unwrap();
    state.containers[0].vcpus = 1_000_000_000;
    store.save(&state).unwrap();
    let err = start(dir.path(), &fake).await.unwrap_err();
    let text = placed_core::text::error_line(&err);
    assert!(
        text.contains("/batch/job") && text.contains("vcpus"),
        "{text}"
    );
}

/// A restart that finds everything where the file says does not write the file, so that a
/// full disk cannot keep a daemon with an intact state file from serving.
#[tokio::test]
async fn an_unchanged_state_file_is_not_rewritten_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeKernel::v1("0-15", "0-1");
    let daemon = start(dir.path(), &fake).await.unwrap();
    daemon.shutdown().await;
    drop(daemon);
    let path = dir.path().join("state.json");
    let before = std::fs::read(&path).unwrap();
    let inode = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&path).unwrap());
    let daemon = start(dir.path(), &fake).await.unwrap();
    // The same inode: no new file was renamed over it.
    assert_eq!(
        std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&path).unwrap()),
        inode
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    drop(daemon);
}

/// A second daemon on the same state file is refused, naming the first.
#[test]
fn the_state_file_lock_refuses_a_second_holder() {
    let dir = tempfile::tempdir().unwrap();
    let store = StateStore::new(dir.path().join("state.json"));
    let _first = store.lock().unwrap();
    let err = store.lock().unwrap_err();
    assert!(matches!(err, StateError::Locked { .. }), "{err}");
    assert_eq!(
        placed_core::exit::Exit::of(err.fault()),
        placed_core::exit::Exit::Unavailable
    );
}
