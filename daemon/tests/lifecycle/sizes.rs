//! 12. A container size with no model of its own is predicted by the machine class's model
//!     across sizes, which says so in the prediction's warnings and gives every predicted
//!     cell an interval; a per-size model installed later takes over at the next
//!     evaluation.
//!
//! The model across sizes is trained on v = 2 and v = 8 of the test machine; containers
//! are managed at v = 4.

use placed::lifecycle::EventKind;
use placed::state::{Lifecycle, PredictionRecord};
use placed_core::policy::Policy;

use crate::scenario::{Running, Scenario, model};

const BASELINE: f64 = 1000.0;

/// Manages (or re-manages) `c` at v = 4 under the model policy at `goal`, the container
/// running the same everywhere, and returns the prediction the evaluation stored.
async fn evaluated(d: &mut Running, goal: f64) -> PredictionRecord {
    d.manage("c", 4, Policy::Model { goal }).await;
    d.next("c", |e| e.kind == EventKind::Predicted).await;
    d.next("c", |e| e.state == Lifecycle::Watched).await;
    d.until_free("c").await;
    d.record("c").prediction.expect("predicted")
}

#[tokio::test(start_paused = true)]
async fn a_size_without_its_own_model_is_predicted_across_sizes_until_it_has_one() {
    let mut s = Scenario::new().with_sizes_model(&[2, 8]);
    // The decision itself is the third measurement's business (third.rs); here only which
    // model predicted matters.
    s.config.policy.third_measurement = false;
    s.container("c", "", "");
    let mut d = s.start().await;
    let _level = d.feed("c", BASELINE);

    let across = evaluated(&mut d, 0.9).await;
    assert!(across.model_id.ends_with("-v4"), "{across:?}");
    assert!(
        across
            .warnings
            .iter()
            .any(|w| w.contains("model across sizes trained on v = 2, 8")),
        "{:?}",
        across.warnings
    );
    let placements = d.placements_for(4);
    assert_eq!(across.placements.len(), placements.placements.len());
    assert_eq!(across.baseline, placements.placements[0].id);
    for cell in across.placements.iter().filter(|c| !c.measured) {
        let i = cell
            .interval
            .as_ref()
            .expect("every predicted cell has an interval");
        assert!(
            i.low <= cell.relative && cell.relative <= i.high,
            "{cell:?}"
        );
    }
    // Status lists the model across sizes with the sizes it was trained on.
    let status = d.daemon.status();
    assert_eq!(status.across.len(), 1);
    assert_eq!(status.across[0].model.sizes(), [2, 8]);
    assert!(status.models.is_empty(), "no per-size model installed");

    // A model of its own for v = 4, installed while the daemon runs.
    let own = model(&d.machine, 4);
    let path = d.model_dir().join("own-v4.json");
    std::fs::write(&path, own.file_text().unwrap()).unwrap();
    let per_size = evaluated(&mut d, 0.8).await;
    assert_eq!(per_size.model_id, own.id());
    assert!(
        !per_size.warnings.iter().any(|w| w.contains("across sizes")),
        "{:?}",
        per_size.warnings
    );
}
