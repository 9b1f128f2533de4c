//! The daemon's whole run in-process, through the same `run` the binary calls, on a fake
//! host (no root), with real gRPC over a real Unix socket in a temporary directory: the
//! start and stop order as clients see it (health NOT_SERVING while restoring, SERVING once
//! the state file's containers are adopted, every stream ended at stop, the state file
//! written, the socket file removed), asserted as an order, never as durations.

#![allow(clippy::unwrap_used, reason = "test fixture")]

mod support;

use std::path::Path;
use std::sync::Arc;

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use placed_proto::v1 as pb;
use support::{HANG, Running};
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::{HealthCheckRequest, health_check_response::ServingStatus};

type HealthStream = tonic::Streaming<tonic_health::pb::HealthCheckResponse>;

/// Opens a health `Watch` on the whole server ("").
async fn health_watch(channel: tonic::transport::Channel) -> HealthStream {
    HealthClient::new(channel)
        .watch(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
}

/// The next message of a health watch, or how it ended.
async fn next(stream: &mut HealthStream) -> Result<Option<ServingStatus>, tonic::Status> {
    let next = tokio::time::timeout(HANG, stream.message())
        .await
        .expect("the health watch neither sent nor ended");
    next.map(|m| m.map(|m| m.status()))
}

/// The next status a health watch sends.
async fn next_status(stream: &mut HealthStream) -> ServingStatus {
    match next(stream).await {
        Ok(Some(status)) => status,
        other => panic!("the health watch ended: {other:?}"),
    }
}

/// How a health watch ends, once it does.
async fn ending(stream: &mut HealthStream) -> tonic::Status {
    match next(stream).await {
        Err(status) => status,
        other => panic!("the health watch did not end: {other:?}"),
    }
}

/// Runs once to leave a state file that names `job` under a policy set through the API.
async fn first_run(dir: &Path, fake: &Arc<placed_host::fake::FakeKernel>) {
    let d = Running::on(support::config(dir), fake).await;
    let mut c = d.client().await;
    support::until_async("job managed", || {
        let mut c = c.clone();
        async move {
            c.get_container(pb::GetContainerRequest {
                container: "job".into(),
            })
            .await
            .is_ok()
        }
    })
    .await;
    c.manage(pb::ManageRequest {
        container: "job".into(),
        vcpus: 2,
        policy: Some(pb::Policy {
            kind: pb::PolicyKind::Aggressive as i32,
            ..Default::default()
        }),
        ..Default::default()
    })
    .await
    .unwrap();
    drop(c);
    d.stop().await.unwrap();
}

/// Inotify on `dir`, for the order in which the daemon renames its state file into place
/// and removes its socket file: the kernel queues events in the order they happened.
fn files_watched(dir: &Path) -> Inotify {
    let inotify = Inotify::init(InitFlags::IN_NONBLOCK).unwrap();
    inotify
        .add_watch(dir, AddWatchFlags::IN_MOVED_TO | AddWatchFlags::IN_DELETE)
        .unwrap();
    inotify
}

/// The whole order. Before the fix the stop hung here: the health `Watch` sent
/// NOT_SERVING at stop and stayed open, and the servers' graceful stop waited for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_and_stop_happen_in_order_and_every_stream_ends() {
    let dir = tempfile::tempdir().unwrap();
    let fake = support::host();
    first_run(dir.path(), &fake).await;

    // The second run restores that state; its environment waits for the test's word.
    let ready = Arc::new(tokio::sync::Notify::new());
    let env = {
        let (ready, env) = (ready.clone(), support::environment(&fake));
        async move {
            ready.notified().await;
            Ok(env)
        }
    };
    let d = Running::start(support::config(dir.path()), env).await;
    let mut health = health_watch(d.channel().await).await;
    // Restoring: health says NOT_SERVING, and the API answers UNAVAILABLE.
    assert_eq!(next_status(&mut health).await, ServingStatus::NotServing);
    let mut c = d.client().await;
    let err = c.get_status(pb::GetStatusRequest {}).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unavailable, "{err:?}");
    assert!(err.message().contains("restoring"), "{err:?}");

    // Ready: SERVING comes only once the state file's container is adopted.
    ready.notify_one();
    assert_eq!(next_status(&mut health).await, ServingStatus::Serving);
    let job = c
        .get_container(pb::GetContainerRequest {
            container: "job".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .container
        .unwrap();
    assert_eq!(
        job.policy.as_ref().map(|p| p.kind),
        Some(pb::PolicyKind::Aggressive as i32),
        "SERVING before the state file's container was adopted: {job:?}"
    );
    let mut events = c
        .watch(pb::WatchRequest::default())
        .await
        .unwrap()
        .into_inner();

    // Stop.
    let files = files_watched(dir.path());
    d.stop.request();
    assert_eq!(next_status(&mut health).await, ServingStatus::NotServing);
    let ended = ending(&mut health).await;
    assert_eq!(ended.code(), tonic::Code::Unavailable, "{ended:?}");
    assert!(
        ended.message().starts_with("placed is stopping"),
        "{ended:?}"
    );
    // A new client is turned away at once, not left in the listener's backlog for as long
    // as the stop takes.
    if let Ok(mut late) = tokio::net::UnixStream::connect(&d.socket).await {
        use tokio::io::AsyncReadExt as _;
        let read = tokio::time::timeout(HANG, late.read(&mut [0u8; 1]))
            .await
            .expect("a new client waited on a stopping daemon");
        assert!(!matches!(read, Ok(n) if n > 0), "{read:?}");
    }
    let ended = tokio::time::timeout(HANG, async {
        loop {
            match events.message().await {
                Ok(Some(_)) => {}
                Ok(None) => panic!("the Watch ended without saying why"),
                Err(status) => return status,
            }
        }
    })
    .await
    .expect("placed's Watch did not end at stop");
    assert_eq!(ended.code(), tonic::Code::Unavailable, "{ended:?}");
    assert!(
        ended.message().contains("resume_after_sequence"),
        "{ended:?}"
    );
    tokio::time::timeout(HANG, d.run)
        .await
        .expect("the daemon did not stop with streams open")
        .unwrap()
        .unwrap();

    // The state file was renamed into place, then the socket file removed.
    let mut order = Vec::new();
    while let Ok(events) = files.read_events() {
        for e in events {
            let name = e.name.map(|n| n.to_string_lossy().into_owned());
            match name.as_deref() {
                Some("state.json") if e.mask.contains(AddWatchFlags::IN_MOVED_TO) => {
                    order.push("state written")
                }
                Some("placed.sock") if e.mask.contains(AddWatchFlags::IN_DELETE) => {
                    order.push("socket removed")
                }
                _ => {}
            }
        }
    }
    assert_eq!(order.last(), Some(&"socket removed"), "{order:?}");
    assert!(order.contains(&"state written"), "{order:?}");
    assert!(!d.socket.exists());
    let state = placed::state::StateStore::new(&d.state_file)
        .load(support::machine().fingerprint())
        .unwrap()
        .unwrap();
    assert_eq!(state.containers.len(), 1, "{state:?}");
}

/// A stop that arrives while the daemon restores ends the open health watch and the run,
/// without waiting for the environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_while_restoring_ends_open_streams_and_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = Running::start(support::config(dir.path()), std::future::pending()).await;
    let mut health = health_watch(d.channel().await).await;
    assert_eq!(next_status(&mut health).await, ServingStatus::NotServing);
    let socket = d.socket.clone();
    d.stop().await.unwrap();
    let ended = ending(&mut health).await;
    assert_eq!(ended.code(), tonic::Code::Unavailable, "{ended:?}");
    assert!(!socket.exists());
}

/// A start that fails ends the open health watch too, and removes the socket file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_start_ends_open_streams_and_removes_the_socket() {
    let dir = tempfile::tempdir().unwrap();
    let fail = Arc::new(tokio::sync::Notify::new());
    let env = {
        let fail = fail.clone();
        async move {
            fail.notified().await;
            Err(placed::lifecycle::StartError::CommandUser {
                user: "root".into(),
            })
        }
    };
    let d = Running::start(support::config(dir.path()), env).await;
    let mut health = health_watch(d.channel().await).await;
    assert_eq!(next_status(&mut health).await, ServingStatus::NotServing);
    fail.notify_one();
    let err = tokio::time::timeout(HANG, d.run)
        .await
        .expect("a failed start hung on an open stream")
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, placed::run::RunError::Start(_)), "{err}");
    let ended = ending(&mut health).await;
    assert_eq!(ended.code(), tonic::Code::Unavailable, "{ended:?}");
    assert!(!d.socket.exists());
}
