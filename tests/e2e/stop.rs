//! How the real `placed` ends: a stop asked for with SIGTERM or SIGINT is its normal end
//! (exit 0, as systemd expects of a service it stops), and `--help` says so; every stream
//! open at stop ends, a `grpc.health.v1` watch included, so that nothing keeps the
//! daemon up. (The whole start and stop order is tested in-process: daemon/tests/run.rs.)

use std::time::Duration;

use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

use crate::daemon_util::{Setup, TestDaemon};

/// `placed --help` said SIGTERM exits 130 (the table shared with placectl and placed-train,
/// where an interrupted command is one); placed exits 0 after a clean stop, and says so.
#[test]
fn placed_help_says_a_requested_stop_ends_in_0() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_placed"))
        .arg("--help")
        .output()
        .expect("run placed --help");
    assert!(out.status.success(), "{out:?}");
    let help = String::from_utf8_lossy(&out.stdout);
    let zero = help
        .lines()
        .find(|l| l.trim_start().starts_with("0  "))
        .unwrap_or_else(|| panic!("no line for exit 0:\n{help}"));
    assert!(zero.contains("SIGTERM or SIGINT"), "{zero}");
    assert!(!help.contains("130"), "{help}");
}

/// A health watch open at SIGTERM gets NOT_SERVING and then its end; before, the stream
/// stayed open and the daemon with it, until its client left (the test's stop would have
/// had to SIGKILL it).
#[test]
fn sigterm_ends_an_open_health_watch_and_placed_exits_0() {
    if let Err(why) = crate::cgroup_support::host() {
        eprintln!("skipped, because {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut d = TestDaemon::start(dir.path(), &Setup::default());
    let socket = d.socket.clone();
    let (opened, watching) = std::sync::mpsc::channel();
    let watcher = std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        rt.block_on(async move {
            let channel = placed_proto::unix::connect(&socket).await.expect("connect");
            let mut stream = HealthClient::new(channel)
                .watch(HealthCheckRequest {
                    service: String::new(),
                })
                .await
                .expect("watch")
                .into_inner();
            let mut seen = Vec::new();
            loop {
                match stream.message().await {
                    Ok(Some(m)) => {
                        seen.push(m.status());
                        if seen.len() == 1 {
                            let _ = opened.send(());
                        }
                    }
                    Ok(None) => return (seen, None),
                    Err(status) => return (seen, Some(status)),
                }
            }
        })
    });
    watching
        .recv_timeout(Duration::from_secs(120))
        .expect("the health watch never opened");
    let status = d.stop().expect("placed was running");
    assert!(
        status.success(),
        "placed did not exit 0 on SIGTERM with a health watch open: {status:?}\n{}",
        d.log()
    );
    let (seen, ended) = watcher.join().expect("the watcher panicked");
    assert_eq!(
        seen,
        [ServingStatus::Serving, ServingStatus::NotServing],
        "{ended:?}"
    );
    let ended = ended.expect("the stream ended without a status");
    assert_eq!(ended.code(), tonic::Code::Unavailable, "{ended:?}");
    assert!(
        ended.message().starts_with("placed is stopping"),
        "{ended:?}"
    );
    assert!(!d.socket.exists(), "socket left behind");
}
