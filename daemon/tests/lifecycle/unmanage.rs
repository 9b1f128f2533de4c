//! 8. Handing a container back (`Unmanage`): an evaluation in any phase is stopped, the
//!    container is left on one whole cpuset (or the one it had before, on request) and
//!    forgotten, in memory and on disk, and nothing acts on it afterwards; a call by another
//!    client that holds the container is never cut short.

use std::time::Duration;

use placed::lifecycle::{DaemonError, EventKind};
use placed::service::status_of;
use placed::state::Lifecycle;
use placed_core::policy::Policy;
use tonic::Code;

use crate::scenario::{Scenario, cg};

/// Phases of an evaluation in which the lifecycle task holds the container.
const DURING: &[Lifecycle] = &[Lifecycle::Baseline, Lifecycle::Migrating, Lifecycle::Probe];

#[tokio::test(start_paused = true)]
async fn unmanage_stops_an_evaluation_and_leaves_a_whole_cpuset() {
    for &during in DURING {
        for restore in [false, true] {
            let what = format!("during {during:?}, restore {restore}");
            let s = Scenario::new().with_model(4);
            s.container("c", "", "");
            let mut d = s.start().await;
            let before = d.cpuset("c");
            d.manage("c", 4, Policy::Model { goal: 0.9 }).await;
            d.feed("c", 1000.0);
            d.next("c", |e| e.kind == EventKind::State && e.state == during)
                .await;

            let out = d.daemon.unmanage(&cg("c"), restore).await.expect(&what);
            assert!(out.detail.contains("stopped evaluating"), "{what}: {out:?}");
            assert!(
                d.daemon.container(&cg("c")).is_err(),
                "{what}: still managed"
            );
            assert_eq!(d.on_disk("c"), None, "{what}: still in the state file");
            let (cpus, mems) = d.cpuset("c");
            assert!(
                !cpus.is_empty() && !mems.is_empty(),
                "{what}: {cpus} {mems}"
            );
            assert_eq!((&out.cpus, &out.mems), (&cpus, &mems), "{what}");
            if restore {
                // Whether or not the first move had started, it is back where it was.
                assert_eq!((cpus, mems), before, "{what}: {out:?}");
            }
            d.next("c", |e| e.kind == EventKind::Unmanaged).await;
            // Nothing acts on it any more: no event about it in hours, its cpuset unchanged.
            let seen = d.seen.len();
            d.idle(Duration::from_secs(3 * 3600)).await;
            let later: Vec<_> = d.seen[seen..]
                .iter()
                .filter(|e| e.container == cg("c"))
                .collect();
            assert!(later.is_empty(), "{what}: {later:?}");
            assert_eq!(
                d.cpuset("c"),
                (out.cpus.clone(), out.mems.clone()),
                "{what}"
            );
            assert_eq!(d.errors("lifecycle"), 0, "{what}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn unmanage_refuses_while_another_call_holds_the_container_and_unknown_ones() {
    let s = Scenario::new().with_model(4);
    s.container("c", "", "");
    let mut d = s.start().await;
    d.manage("c", 4, Policy::Observe).await;
    d.until_free("c").await;
    // An on-demand prediction (another client's call) measures it: Unmanage waits for no
    // one and cuts nothing short.
    let predicting = {
        let daemon = d.daemon.clone();
        tokio::spawn(async move { daemon.predict(&cg("c")).await })
    };
    d.next("c", |e| e.kind == EventKind::MigrationStarted).await;
    let err = d.daemon.unmanage(&cg("c"), false).await.unwrap_err();
    assert!(matches!(err, DaemonError::Busy { .. }), "{err:?}");
    assert_eq!(status_of(err).code(), Code::Aborted);
    assert!(d.daemon.container(&cg("c")).is_ok(), "still managed");
    // The prediction goes on to its end once samples arrive.
    d.feed("c", 1000.0);
    predicting.await.unwrap().expect("the prediction finished");
    d.until_free("c").await;
    d.daemon.unmanage(&cg("c"), false).await.expect("free now");

    let err = d.daemon.unmanage(&cg("c"), false).await.unwrap_err();
    assert_eq!(status_of(err).code(), Code::NotFound);
    let err = d.daemon.unmanage("/ctr/none", true).await.unwrap_err();
    assert_eq!(status_of(err).code(), Code::NotFound);
}
