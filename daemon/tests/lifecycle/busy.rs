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
            assert!(matches!(err, DaemonError::Busy { .. }), "{what}: {err:?}");
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
