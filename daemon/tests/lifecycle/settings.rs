//! 3. Settings changing around an evaluation: the newest settings win and a result computed
//!    for older ones is never applied.
//!
//! `Manage` cannot change settings *under* an evaluation: the evaluation holds the
//! container's operation lock and `Manage` is refused (see `busy`), so the settings an
//! evaluation started with are the ones it ends with. What remains to check is a change
//! between steps: a new vCPU count drops the old prediction and evaluates again, and a
//! `Place` with a new policy while the task sleeps is not undone by the task's old policy.

use std::time::Duration;

use placed::lifecycle::{EventKind, ManageRequest, PlaceTarget};
use placed::state::Lifecycle;
use placed_core::policy::Policy;

use crate::scenario::{Scenario, cg, pushed};

#[tokio::test(start_paused = true)]
async fn a_new_vcpu_count_discards_the_prediction_and_evaluates_again() {
    for (from, to) in [(4, 2), (2, 4)] {
        let s = Scenario::new().with_model(2).with_model(4);
        s.container("c", "", "");
        let mut d = s.start().await;
        d.manage("c", from, Policy::Model { goal: 0.9 }).await;
        d.feed("c", 1000.0);
        d.next("c", |e| e.kind == EventKind::Predicted).await;
        d.next("c", |e| e.state == Lifecycle::Watched).await;
        assert_eq!(d.record("c").prediction.map(|p| p.vcpus), Some(from));
        d.until_free("c").await;

        let view = d
            .daemon
            .manage(ManageRequest {
                container: cg("c"),
                vcpus: Some(to),
                policy: None,
                metric: pushed(),
                on_override: None,
                ..ManageRequest::default()
            })
            .await
            .expect("served between steps");
        // At once: the prediction was for the old v and is gone.
        assert_eq!(view.record.vcpus, to);
        assert_eq!(view.record.prediction, None);

        let predicted = d.next("c", |e| e.kind == EventKind::Predicted).await;
        assert!(
            predicted.message.starts_with("predicted with model"),
            "{predicted:?}"
        );
        d.next("c", |e| e.state == Lifecycle::Watched).await;
        let rec = d.record("c");
        assert_eq!(rec.vcpus, to);
        assert_eq!(rec.prediction.as_ref().map(|p| p.vcpus), Some(to));
        // Placed in one of the new v's placements, and the kernel agrees.
        let a = rec.assigned.expect("placed");
        let id = a.placement.clone().expect("a model placement");
        assert!(
            d.placements_for(to).get(&id).is_some(),
            "{id} is not a v={to} placement"
        );
        assert_eq!(a.cpus.len(), to, "{a:?}");
        assert_eq!(d.cpuset("c"), (a.cpus.clone(), a.mems.clone()));
        assert_eq!(
            d.on_disk("c").and_then(|r| r.prediction).map(|p| p.vcpus),
            Some(to)
        );
        d.daemon.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_policy_placed_between_steps_is_not_undone_by_the_old_one() {
    let mut s = Scenario::new().with_model(4);
    // Under the model policy, the level below would be drift and an evaluation again.
    s.config.policy.drift = 0.15;
    s.container("c", "", "");
    let mut d = s.start().await;
    d.manage("c", 4, Policy::Model { goal: 0.9 }).await;
    let level = d.feed("c", 1000.0);
    d.next("c", |e| e.kind == EventKind::Predicted).await;
    d.next("c", |e| e.state == Lifecycle::Watched).await;
    d.until_free("c").await;

    // The task sleeps until its next watch; an operator pins the container meanwhile.
    let pinned = d.placements_for(4).placements.last().unwrap().id.clone();
    let outcome = d
        .daemon
        .place(
            &cg("c"),
            PlaceTarget::Policy(Policy::Pinned {
                placement: pinned.clone(),
            }),
            None,
        )
        .await
        .expect("placed");
    assert_eq!(outcome.placement.as_deref(), Some(pinned.as_str()));
    let at = d.cpuset("c");
    d.drain();
    let (moves, predictions) = (
        d.seen("c", EventKind::MigrationStarted).len(),
        d.seen("c", EventKind::Predicted).len(),
    );
    level.set(10_000.0);
    d.idle(Duration::from_secs(600)).await;

    let rec = d.record("c");
    assert_eq!(
        rec.policy,
        Policy::Pinned {
            placement: pinned.clone()
        }
    );
    assert_eq!(rec.assigned.and_then(|a| a.placement), Some(pinned));
    assert_eq!(d.cpuset("c"), at, "moved after the pin");
    assert_eq!(
        d.seen("c", EventKind::MigrationStarted).len(),
        moves,
        "the old policy moved it again: {:?}",
        d.seen
    );
    assert_eq!(
        d.seen("c", EventKind::Predicted).len(),
        predictions,
        "evaluated again"
    );
    d.daemon.shutdown().await;
}
