//! 11. The third measurement: before the model policy moves a container, a placement its
//!     choice hinges on (a cell whose interval holds the goal) or a novel container's
//!     choice is measured too, and the decision is made on that measurement.
//!
//! The test model (four placements for v = 4) predicts, for a probe at 1.3 x baseline,
//! `numa1-core4` at about 1.10 with a calibrated interval of about 1.09-1.11. At goal 1.1
//! the point rule takes the two-node probe placement; the one-node cell might keep the
//! goal for half the units, so it is measured first. A probe at 1.1 is unlike every
//! training family (novel).

use placed::lifecycle::EventKind;
use placed::state::{ContainerRecord, Lifecycle};
use placed_core::policy::Policy;

use crate::scenario::{Running, Scenario};

const BASELINE: f64 = 1000.0;
const ONE_NODE: &str = "numa1-core4-ic1.000";
const PROBE: &str = "numa2-core4-ic1.333";

/// Manages `c` at `goal`, the probe measuring `probe` x baseline and a third measurement,
/// if any, `third` x baseline; returns the record once placed.
async fn evaluated(enabled: bool, goal: f64, probe: f64, third: f64) -> (Running, ContainerRecord) {
    let mut s = Scenario::new().with_model(4);
    s.config.policy.third_measurement = enabled;
    s.container("c", "", "");
    let mut d = s.start().await;
    d.manage("c", 4, Policy::Model { goal }).await;
    let level = d.feed("c", BASELINE);
    // The level changes as each measurement's move starts: its warm-up discards the
    // samples from before.
    d.next("c", |e| e.state == Lifecycle::Probe).await;
    level.set(BASELINE * probe);
    d.next("c", |e| e.kind == EventKind::Predicted).await;
    let e = d
        .next("c", |e| {
            e.state == Lifecycle::Watched || e.message.contains("measured as well")
        })
        .await;
    if e.state == Lifecycle::Probe {
        level.set(BASELINE * third);
        d.next("c", |e| e.state == Lifecycle::Watched).await;
    }
    d.until_free("c").await;
    let rec = d.record("c");
    (d, rec)
}

fn placement(rec: &ContainerRecord) -> String {
    rec.assigned
        .as_ref()
        .and_then(|a| a.placement.clone())
        .expect("placed in an important placement")
}

#[tokio::test(start_paused = true)]
async fn a_cell_whose_interval_holds_the_goal_is_measured_before_the_move() {
    // (third measurement's result, where the container ends up)
    for (third, expected) in [(1.2, ONE_NODE), (1.0, PROBE)] {
        let (d, rec) = evaluated(true, 1.1, 1.3, third).await;
        let prediction = rec.prediction.clone().expect("predicted");
        assert!(!prediction.novel);
        // Measured where the choice hinged, and said so while it measured.
        let measuring = d.seen("c", EventKind::State);
        let step = measuring
            .iter()
            .find(|e| e.message.starts_with(&format!("measuring in {ONE_NODE}:")))
            .unwrap_or_else(|| panic!("no third measurement in {measuring:?}"));
        assert_eq!(step.state, Lifecycle::Probe);
        assert!(step.message.contains("holds the goal 1.1"), "{step:?}");
        // The measurement replaced the cell, and the record holds all three.
        let cell = prediction.predicted(ONE_NODE).expect("the cell");
        assert!(cell.measured && cell.interval.is_none(), "{cell:?}");
        assert!((cell.relative - third).abs() < 1e-9, "{cell:?}");
        let measured: Vec<&str> = prediction
            .observations
            .iter()
            .map(|o| o.placement.as_str())
            .collect();
        assert_eq!(measured.len(), 3, "{measured:?}");
        assert_eq!(measured[2], ONE_NODE);
        let why = prediction.third.as_deref().expect("the reason kept");
        assert!(
            why.contains(&format!("measured at {third:.2} x baseline")),
            "{why}"
        );
        // The decision rests on the measurement, and its detail says so.
        assert_eq!(placement(&rec), expected, "third at {third}");
        assert_eq!(rec.state, Lifecycle::Watched);
        assert!(rec.detail.contains(why), "{}", rec.detail);
        let on_disk = d.on_disk("c").expect("persisted");
        assert_eq!(
            on_disk.prediction.and_then(|p| p.third).as_deref(),
            Some(why)
        );
        assert_eq!(d.seen("c", EventKind::Error), []);
        d.daemon.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_novel_container_is_measured_where_it_would_go() {
    let (d, rec) = evaluated(true, 0.9, 1.1, 1.1).await;
    let prediction = rec.prediction.clone().expect("predicted");
    assert!(prediction.novel, "{:?}", prediction.warnings);
    let why = prediction.third.expect("a third measurement");
    assert!(
        why.starts_with(&format!(
            "{ONE_NODE} measured as well: the container is unlike every training workload"
        )),
        "{why}"
    );
    assert_eq!(placement(&rec), ONE_NODE);
    assert!(rec.detail.starts_with("already in place"), "{}", rec.detail);
    d.daemon.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn switched_off_the_policy_decides_on_two_measurements() {
    let (d, rec) = evaluated(false, 1.1, 1.3, 1.2).await;
    let prediction = rec.prediction.clone().expect("predicted");
    assert_eq!(prediction.third, None);
    assert_eq!(prediction.observations.len(), 2);
    assert_eq!(placement(&rec), PROBE);
    let states = d.seen("c", EventKind::State);
    assert!(
        !states
            .iter()
            .any(|e| e.message.contains("measured as well")),
        "{states:?}"
    );
    d.daemon.shutdown().await;
}
