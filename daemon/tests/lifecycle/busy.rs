//! 2. One operation per container: a command that arrives while the lifecycle evaluates or
//!    moves the container is refused at once with `ABORTED`, and changes nothing.

use placed::lifecycle::{DaemonError, EventKind, ManageRequest, PlaceTarget};
use placed::service::status_of;
use placed::state::Lifecycle;
use placed_core::fault::Fault;
use placed_core::policy::Policy;
use tonic::Code;

use crate::scenario::{Scenario, cg, pushed};

/// The commands that take a container's operation lock, each tried against a busy one.
#[derive(Debug, Clone, Copy)]
enum Command {
    Manage,
    Predict,
    Place,
}

async fn run(d: &placed::lifecycle::Daemon, c: Command, name: &str) -> Result<(), DaemonError> {
    match c {
        Command::Manage => d
            .manage(ManageRequest {
                container: cg(name),
                vcpus: Some(2),
                policy: None,
                metric: pushed(),
                on_override: None,
                ..ManageRequest::default()
            })
            .await
            .map(drop),
        Command::Predict => d.predict(&cg(name)).await.map(drop),
        Command::Place => d
            .place(
                &cg(name),
                PlaceTarget::Policy(Policy::SmartAggressive),
                None,
            )
            .await
            .map(drop),
    }
}

/// Lifecycle states in which the task holds the lock, for the table below.
const DURING: &[Lifecycle] = &[Lifecycle::Baseline, Lifecycle::Migrating, Lifecycle::Probe];

#[tokio::test(start_paused = true)]
async fn a_command_during_an_evaluation_is_aborted() {
    for &during in DURING {
        for command in [Command::Manage, Command::Predict, Command::Place] {
            let s = Scenario::new().with_model(4);
            s.container("c", "", "");
            let mut d = s.start().await;
            d.manage("c", 4, Policy::Model { goal: 0.9 }).await;
            d.feed("c", 1000.0);
            d.next("c", |e| e.kind == EventKind::State && e.state == during)
                .await;
            let before = d.record("c");

            let err = run(&d.daemon, command, "c")
                .await
                .expect_err("the container is busy");
            let what = format!("{command:?} during {during:?}");
            assert!(
                matches!(err.inner(), DaemonError::Busy { .. }),
                "{what}: {err:?}"
            );
            assert_eq!(err.fault(), Fault::Conflict, "{what}");
            let status = status_of(err);
            assert_eq!(status.code(), Code::Aborted, "{what}: {status:?}");
            assert!(
                status.message().contains("is busy: evaluating"),
                "{what}: {status:?}"
            );

            // Nothing changed: the evaluation goes on with the settings it started with and
            // ends placed by the model, its prediction for 4 vCPUs.
            let after = d.record("c");
            assert_eq!(
                (after.vcpus, &after.policy),
                (before.vcpus, &before.policy),
                "{what}"
            );
            d.next("c", |e| e.kind == EventKind::Predicted).await;
            d.next("c", |e| e.state == Lifecycle::Watched).await;
            let done = d.record("c");
            assert_eq!(done.vcpus, 4, "{what}");
            assert_eq!(done.prediction.map(|p| p.vcpus), Some(4), "{what}");
            assert!(d.seen("c", EventKind::Error).is_empty(), "{what}");

            // Once it is done, the same command is served.
            d.until_free("c").await;
            if matches!(command, Command::Manage) {
                run(&d.daemon, command, "c")
                    .await
                    .expect("served when idle");
            }
            d.daemon.shutdown().await;
        }
    }
}

/// Issue 24: concurrent `Predict`s of one container were answered ABORTED ("busy:
/// predicting"); now they share one evaluation and all get its prediction.
#[tokio::test(start_paused = true)]
async fn concurrent_predictions_share_one_evaluation() {
    let s = Scenario::new().with_model(4);
    s.container("c", "", "");
    let mut d = s.start().await;
    d.manage("c", 4, Policy::Observe).await;
    d.feed("c", 1000.0);
    d.until_free("c").await;
    let asks: Vec<_> = (0..4)
        .map(|_| {
            let daemon = d.daemon.clone();
            tokio::spawn(async move { daemon.predict(&cg("c")).await })
        })
        .collect();
    let mut ids = Vec::new();
    for a in asks {
        let p = a.await.unwrap().expect("every caller gets the prediction");
        ids.push((p.model_id, p.unix_ms));
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "one evaluation: {ids:?}");
    d.drain();
    assert_eq!(d.seen("c", EventKind::Predicted).len(), 1);
    d.daemon.shutdown().await;
}

/// Issue 28: a `Place` whose caller gives up goes on to the end (a container is not left
/// half-moved), and a repeated request for the same target joins it instead of ordering
/// a second move.
#[tokio::test(start_paused = true)]
async fn a_place_outlives_its_caller_and_a_repeat_joins_it() {
    let s = Scenario::new();
    s.container("c", "", "");
    let mut d = s.start().await;
    d.manage("c", 4, Policy::Observe).await;
    d.until_free("c").await;
    let target = || PlaceTarget::Once(Policy::Conservative);
    // The first caller gives up at once: its request is dropped mid-flight.
    let first = {
        let daemon = d.daemon.clone();
        tokio::spawn(async move { daemon.place(&cg("c"), target(), None).await })
    };
    tokio::task::yield_now().await;
    first.abort();
    // The same request again joins the move if it is still in flight, or finds it done.
    let again = d
        .daemon
        .place(&cg("c"), target(), None)
        .await
        .expect("placed");
    d.next("c", |e| e.kind == EventKind::MigrationFinished)
        .await;
    d.until_free("c").await;
    d.drain();
    assert_eq!(
        d.seen("c", EventKind::MigrationStarted).len(),
        1,
        "one move, not two: {again:?}"
    );
    let rec = d.record("c");
    assert_eq!(rec.assigned.map(|a| a.cpus), Some(again.cpus));
    d.daemon.shutdown().await;
}
