//! 14. Placement before a container exists (issue 24): where a new container should start,
//!     held for it until it claims the units or the hold ends; several at once; the node's
//!     capacity. The machine has two NUMA nodes of 16 PUs: each is one allocation unit.

use std::time::Duration;

use placed::lifecycle::{
    AdmitRequest, BatchMode, DaemonError, EventKind, Hint, ManageRequest, Prior,
};
use placed_core::policy::Policy;

use crate::scenario::{Running, Scenario, cg};

/// A new container of `v` vCPUs placed smart-aggressively (the fewest units), held for
/// `hold` when given.
fn ask(name: &str, v: usize, hold: Option<Duration>) -> AdmitRequest {
    AdmitRequest {
        name: name.into(),
        vcpus: v,
        policy: Some(Policy::SmartAggressive),
        reserve: hold,
        ..AdmitRequest::default()
    }
}

const MINUTE: Duration = Duration::from_secs(60);

async fn daemon() -> Running {
    Scenario::new().start().await
}

#[tokio::test(start_paused = true)]
async fn an_answer_without_a_hold_holds_nothing() {
    let d = daemon().await;
    let a = d.daemon.admit(ask("a", 16, None)).await.expect("admitted");
    assert_eq!(a.target.units.len(), 1, "{a:?}");
    assert!(a.reservation.is_none());
    assert_eq!(a.prior, Prior::Nothing);
    // Nothing held: the same question gets the same answer.
    let again = d.daemon.admit(ask("b", 16, None)).await.expect("admitted");
    assert_eq!(again.target.units, a.target.units);
    let cap = d.daemon.capacity(&[16]);
    assert!(cap.units.iter().all(|u| u.reserved_by.is_none()));
    assert_eq!(
        cap.fits[0].placements.len(),
        d.placements_for(16).placements.len()
    );
    d.daemon.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn two_holds_never_get_the_same_units_and_the_last_units_go_to_one() {
    let mut d = daemon().await;
    let first = d
        .daemon
        .admit(ask("a", 16, Some(MINUTE)))
        .await
        .expect("held");
    let r = first.reservation.clone().expect("a reservation");
    d.next_about(&r.id, |e| e.kind == EventKind::Reserved).await;
    // Two admissions race for the one unit left: exactly one wins.
    let racers: Vec<_> = ["b", "c"]
        .into_iter()
        .map(|n| {
            let daemon = d.daemon.clone();
            tokio::spawn(async move { daemon.admit(ask(n, 16, Some(MINUTE))).await })
        })
        .collect();
    let mut won = Vec::new();
    let mut lost = Vec::new();
    for r in racers {
        match r.await.unwrap() {
            Ok(a) => won.push(a),
            Err(e) => lost.push(e),
        }
    }
    assert_eq!((won.len(), lost.len()), (1, 1), "{won:?} {lost:?}");
    assert!(
        matches!(
            lost[0].inner(),
            DaemonError::Policy(_) | DaemonError::NoRoom { .. }
        ),
        "{:?}",
        lost[0]
    );
    assert_ne!(won[0].target.units, first.target.units);
    // Held units are taken for everyone: the capacity says so, node by node.
    let cap = d.daemon.capacity(&[16]);
    assert_eq!(
        cap.units.iter().filter(|u| u.reserved_by.is_some()).count(),
        2
    );
    assert!(
        cap.nodes.iter().all(|n| n.free == 0 && n.reserved == 16),
        "{cap:?}"
    );
    assert!(cap.fits[0].placements.is_empty());
    d.daemon.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_hold_ends_when_its_time_is_up_and_says_so() {
    let mut d = daemon().await;
    let a = d
        .daemon
        .admit(ask("a", 16, Some(MINUTE)))
        .await
        .expect("held");
    let id = a.reservation.expect("a reservation").id;
    assert_eq!(d.daemon.reservations().len(), 1);
    let e = d.next_about(&id, |e| e.kind == EventKind::Released).await;
    assert!(e.message.contains("expired"), "{e:?}");
    assert!(d.daemon.reservations().is_empty());
    assert!(
        d.daemon
            .capacity(&[])
            .units
            .iter()
            .all(|u| u.reserved_by.is_none())
    );
    // The state file no longer holds it.
    let on_disk = placed::state::StateStore::new(d.state_file())
        .load(d.machine.fingerprint())
        .unwrap()
        .unwrap();
    assert!(on_disk.reservations.is_empty());
    d.daemon.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_container_claims_its_hold_and_starts_on_the_reserved_units() {
    let s = Scenario::new();
    s.container("new", "", "");
    let mut d = s.start().await;
    // The other unit is taken, so the hold cannot be where the container is by chance.
    let mut req = ask("new", 16, Some(MINUTE));
    req.labels.insert("team".into(), "db".into());
    let a = d.daemon.admit(req).await.expect("held");
    let r = a.reservation.expect("a reservation");
    let view = d
        .daemon
        .manage(ManageRequest {
            container: cg("new"),
            reservation: Some(r.id.clone()),
            ..ManageRequest::default()
        })
        .await
        .expect("claimed");
    assert_eq!(view.record.vcpus, 16);
    assert_eq!(view.record.policy, Policy::SmartAggressive);
    assert_eq!(
        view.record.labels.get("team").map(String::as_str),
        Some("db")
    );
    d.next("new", |e| e.kind == EventKind::Claimed).await;
    assert_eq!(
        d.cpuset("new"),
        (r.assigned.cpus.clone(), r.assigned.mems.clone())
    );
    assert!(d.daemon.reservations().is_empty());
    d.until_free("new").await;
    // The container holds the units now.
    let cap = d.daemon.capacity(&[]);
    let held: Vec<_> = cap.units.iter().filter(|u| !u.held_by.is_empty()).collect();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].held_by, [cg("new")]);
    assert_eq!(held[0].unit, r.assigned.units[0]);
    // A claim of a hold gone is NOT_FOUND; of one for another size, a bad request.
    let again = d
        .daemon
        .manage(ManageRequest {
            container: cg("new"),
            reservation: Some(r.id),
            ..ManageRequest::default()
        })
        .await
        .expect_err("claimed already");
    assert!(
        matches!(again, DaemonError::UnknownReservation { .. }),
        "{again:?}"
    );
    d.daemon.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_claim_for_another_size_is_refused_and_changes_nothing() {
    let s = Scenario::new();
    s.container("new", "", "");
    let d = s.start().await;
    let r = d
        .daemon
        .admit(ask("new", 16, Some(MINUTE)))
        .await
        .unwrap()
        .reservation
        .unwrap();
    let refused = d
        .daemon
        .manage(ManageRequest {
            container: cg("new"),
            vcpus: Some(4),
            reservation: Some(r.id),
            ..ManageRequest::default()
        })
        .await
        .expect_err("another size");
    assert!(
        matches!(refused, DaemonError::ReservationMismatch { .. }),
        "{refused:?}"
    );
    assert!(d.daemon.container(&cg("new")).is_err(), "not managed");
    assert_eq!(d.daemon.reservations().len(), 1, "still held");
    d.daemon.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_hold_survives_a_restart_for_what_remains_of_its_time() {
    let d = daemon().await;
    let r = d
        .daemon
        .admit(ask("a", 16, Some(10 * MINUTE)))
        .await
        .unwrap()
        .reservation
        .unwrap();
    let mut d = d.restart().await;
    let kept = d.daemon.reservations();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].id, r.id);
    assert_eq!(kept[0].assigned, r.assigned);
    // Still taken after the restart.
    let other = d.daemon.admit(ask("b", 16, Some(MINUTE))).await.unwrap();
    assert_ne!(other.target.units, r.assigned.units);
    d.next_about(&r.id, |e| e.kind == EventKind::Released).await;
    d.daemon.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_batch_is_all_or_nothing_or_best_effort() {
    let d = daemon().await;
    // Three containers that each need a whole node, on a machine of two.
    let batch: Vec<AdmitRequest> = ["a", "b", "c"]
        .into_iter()
        .map(|n| ask(n, 16, Some(MINUTE)))
        .collect();
    let all = d
        .daemon
        .admit_batch(batch.clone(), BatchMode::AllOrNothing)
        .await
        .unwrap();
    assert!(all.iter().all(Result::is_err), "{all:?}");
    assert!(
        all.iter()
            .filter(|a| matches!(a, Err(DaemonError::BatchRefused { .. })))
            .count()
            == 2,
        "{all:?}"
    );
    assert!(d.daemon.reservations().is_empty(), "nothing held");
    let some = d
        .daemon
        .admit_batch(batch, BatchMode::BestEffort)
        .await
        .unwrap();
    let placed: Vec<_> = some.iter().filter_map(|a| a.as_ref().ok()).collect();
    assert_eq!(placed.len(), 2, "{some:?}");
    assert_ne!(placed[0].target.units, placed[1].target.units);
    assert_eq!(d.daemon.reservations().len(), 2);
    // Answers come in the order asked.
    assert_eq!(placed[0].name, "a");
    d.daemon.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_container_like_an_earlier_one_gets_its_prediction_as_a_prior() {
    let s = Scenario::new().with_model(4);
    s.container("old", "", "");
    let mut d = s.start().await;
    d.manage("old", 4, Policy::Model { goal: 0.9 }).await;
    d.feed("old", 1000.0);
    d.next("old", |e| e.kind == EventKind::Predicted).await;
    d.until_free("old").await;
    let model = AdmitRequest {
        name: "new".into(),
        vcpus: 4,
        policy: Some(Policy::Model { goal: 0.9 }),
        ..AdmitRequest::default()
    };
    // Without a hint: the model's baseline placement, where it is measured first.
    let cold = d.daemon.admit(model.clone()).await.unwrap();
    assert_eq!(cold.prior, Prior::Nothing);
    assert!(cold.target.reason.contains("baseline"), "{cold:?}");
    // Like the earlier container: its prediction decides, and is shown.
    let warm = d
        .daemon
        .admit(AdmitRequest {
            hint: Hint::Container("old".into()),
            ..model
        })
        .await
        .unwrap();
    match &warm.prior {
        Prior::Container { id, .. } => assert_eq!(id, &cg("old")),
        other => panic!("{other:?}"),
    }
    assert!(warm.target.predicted.is_some(), "{warm:?}");
    d.daemon.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_dry_run_manage_changes_nothing() {
    let s = Scenario::new();
    s.container("c", "", "");
    let d = s.start().await;
    let view = d
        .daemon
        .manage(ManageRequest {
            container: cg("c"),
            vcpus: Some(4),
            policy: Some(Policy::Conservative),
            dry_run: true,
            ..ManageRequest::default()
        })
        .await
        .expect("answered");
    assert_eq!(view.record.vcpus, 4);
    assert!(d.daemon.container(&cg("c")).is_err(), "not managed");
    assert!(d.daemon.containers().is_empty());
    d.daemon.shutdown().await;
}
