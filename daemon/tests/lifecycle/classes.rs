//! 13. A host of a class nobody trained is predicted by the model across machine classes,
//!     which says so in the prediction's warnings and the state file, and the model policy
//!     holds that prior to the lower end of its intervals though `policy.goal_bound` is
//!     the point prediction; what the daemon measured meanwhile is production data the
//!     prior completes from the file alone (`placed-train fit --prior`), and the log says
//!     when that data has the runs to fit the host's own model.
//!
//! The model across classes is trained on three synthetic machines (four, six and eight
//! NUMA nodes); the test machine has two. Containers are managed at v = 4.

use placed::lifecycle::EventKind;
use placed::state::Lifecycle;
use placed_core::policy::{GoalBound, Policy};
use placed_models::{Dataset, ModelFile, Predictor as _};

use crate::scenario::Scenario;

const BASELINE: f64 = 1000.0;

#[tokio::test(start_paused = true)]
async fn a_host_of_a_class_nobody_trained_is_placed_by_the_prior_on_its_lower_bound() {
    let mut s = Scenario::new().with_classes_model(
        &[
            "pack:2 numa:2 core:4 pu:2",
            "pack:2 numa:3 core:4 pu:2",
            "pack:4 numa:2 core:4 pu:2",
        ],
        8,
    );
    // The decision itself, not the third measurement, is what this checks.
    s.config.policy.third_measurement = false;
    assert_eq!(s.config.policy.goal_bound, GoalBound::Point);
    // Due at the first run, so that the log line saying so is seen.
    s.config.production_data.fit_after_runs = 1;
    let log = Log::default();
    // The runtime is this thread's (start_paused), so the daemon's tasks log here.
    let _log = tracing::subscriber::set_default(log.subscriber());
    s.container("c", "", "");
    let mut d = s.start().await;
    let _level = d.feed("c", BASELINE);
    d.manage("c", 4, Policy::Model { goal: 0.9 }).await;
    d.next("c", |e| e.kind == EventKind::Predicted).await;
    d.next("c", |e| e.state == Lifecycle::Watched).await;
    d.until_free("c").await;

    let rec = d.record("c");
    let prediction = rec.prediction.clone().expect("predicted by the prior");
    assert!(prediction.across_classes, "{prediction:?}");
    assert!(
        prediction.model_id.ends_with("-classes-v4"),
        "{prediction:?}"
    );
    assert!(
        prediction
            .warnings
            .iter()
            .any(|w| w.starts_with("across classes, not trained on this host")),
        "{:?}",
        prediction.warnings
    );
    for cell in prediction.placements.iter().filter(|c| !c.measured) {
        assert!(cell.interval.is_some(), "{cell:?}");
    }
    // Decided on the lower bound, though the configuration says the point prediction.
    assert!(
        rec.detail
            .contains("predicted (lower bound of the interval)"),
        "{}",
        rec.detail
    );
    // Kept as the prior's across a restart, so later decisions hold it to the same bound.
    let on_disk = d.on_disk("c").expect("persisted");
    assert!(on_disk.prediction.is_some_and(|p| p.across_classes));
    assert_eq!(d.seen("c", EventKind::Error), []);

    // What the daemon measured while the prior decided is data the prior completes, from
    // the file alone as `placed-train fit --prior` reads it: the file describes this host,
    // and the prior made ready from that completes the run measured in its baseline and
    // probe, the other cells marked as completed, not measured.
    let production = Dataset::load(&d.production_file(4)).expect("valid training data");
    let h = production.header();
    let resources = production.resources().expect("the host's resources line");
    assert_eq!(
        resources,
        &placed_models::resources::of_machine(&d.machine, &d.placements_for(4)).unwrap()
    );
    let ModelFile::AcrossClasses(prior) =
        ModelFile::load(&d.model_dir().join("across-classes.json")).expect("the prior loads")
    else {
        panic!("not a model across classes");
    };
    let prior = std::sync::Arc::<placed_models::ClassesModel>::from(prior)
        .for_host(&h.fingerprint, h.v, resources, h.placements.clone())
        .expect("the prior predicts this host");
    let (records, skipped) =
        placed_models::impute::completed(&production, &prior).expect("completes");
    assert_eq!((production.partial_runs(), skipped), (1, 0));
    // The run is counted where an operator sees whether there is enough data for the host's
    // own model, and the log says so once production_data.fit_after_runs are kept, naming
    // the file and the prior to fit from.
    assert_eq!(d.metrics.production_runs_of(4).get(), 1);
    let text = log.text();
    let said: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("enough runs for this host's own model"))
        .collect();
    assert_eq!(said.len(), 1, "{said:?}");
    for name in [
        d.production_file(4),
        d.model_dir().join("across-classes.json"),
    ] {
        assert!(
            said[0].contains(&*name.to_string_lossy()),
            "{name:?}: {said:?}"
        );
    }
    assert_eq!(records.len(), h.placements.len());
    let measured: Vec<&str> = records
        .iter()
        .filter(|r| !r.completed)
        .map(|r| r.placement.as_str())
        .collect();
    assert!(measured.contains(&prior.baseline()) && measured.contains(&prior.probe()));
    assert!(records.iter().any(|r| r.completed));
    d.daemon.shutdown().await;
}

/// The daemon's log, as text, from a subscriber set for the test's thread.
#[derive(Clone, Default)]
struct Log(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Log {
    fn subscriber(&self) -> impl tracing::Subscriber + Send + Sync + 'static {
        let log = self.clone();
        tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .with_writer(move || log.clone())
            .finish()
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
    }
}

impl std::io::Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
