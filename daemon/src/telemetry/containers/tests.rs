use std::sync::{Arc, Mutex};

use super::*;
use crate::telemetry::Metrics;
use crate::telemetry::serve::Format;

fn view(id: &str, name: &str) -> View {
    View {
        id: id.into(),
        name: name.into(),
        runtime: "docker".into(),
        policy: "model",
        state: Lifecycle::Watched,
        placement: Some("p3".into()),
        units: 2,
        predicted: Some(0.8),
        measured: Some(0.9),
    }
}

fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn each_managed_container_has_its_series_until_it_is_unmanaged() {
    let m = Metrics::default();
    let managed = Arc::new(Mutex::new(vec![
        view("/docker/a", "web"),
        view("/docker/b", "db"),
    ]));
    let source = managed.clone();
    m.per_container
        .set_source(move || source.lock().unwrap().clone());
    m.per_container.moved("/docker/a", 1 << 20);
    m.per_container.moved("/docker/a", 1 << 20);
    m.per_container.overridden("/docker/a");
    let text = m.render(Format::Text);
    let web = r#"{id="/docker/a",container="web",runtime="docker",policy="model"}"#;
    assert_eq!(
        sample(&text, &format!("placed_container_units{web}")),
        Some(2.0)
    );
    assert_eq!(
        sample(&text, &format!("placed_container_migrations_total{web}")),
        Some(2.0)
    );
    assert_eq!(
        sample(
            &text,
            &format!("placed_container_migration_bytes_total{web}")
        ),
        Some(2097152.0)
    );
    assert_eq!(
        sample(&text, &format!("placed_container_overrides_total{web}")),
        Some(1.0)
    );
    // At 0 for a container never overridden, from its first scrape on.
    assert_eq!(
        sample(
            &text,
            r#"placed_container_overrides_total{id="/docker/b",container="db",runtime="docker",policy="model"}"#
        ),
        Some(0.0)
    );
    assert_eq!(
        sample(
            &text,
            r#"placed_container_placement{id="/docker/a",container="web",runtime="docker",policy="model",placement="p3"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            r#"placed_container_state{id="/docker/a",container="web",runtime="docker",policy="model",state="watched"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            r#"placed_container_state{id="/docker/a",container="web",runtime="docker",policy="model",state="failed"}"#
        ),
        Some(0.0)
    );
    // The evaluation's own measurement until a watch measures it again.
    let err = sample(&text, &format!("placed_container_prediction_error{web}")).unwrap();
    assert!((err - 0.125).abs() < 1e-9, "{err}");
    m.per_container.observed("/docker/a", 0.4);
    let text = m.render(Format::Text);
    assert_eq!(
        sample(
            &text,
            &format!("placed_container_observed_relative_performance{web}")
        ),
        Some(0.4)
    );
    let err = sample(&text, &format!("placed_container_prediction_error{web}")).unwrap();
    assert!((err + 0.5).abs() < 1e-9, "{err}");

    // Unmanaged: its series go, and what was kept for it is forgotten.
    managed.lock().unwrap().remove(0);
    let text = m.render(Format::Text);
    assert!(!text.contains("container=\"web\""), "{text}");
    assert!(text.contains("container=\"db\""), "{text}");
    managed.lock().unwrap().push(view("/docker/a", "web"));
    let text = m.render(Format::Text);
    assert_eq!(
        sample(&text, &format!("placed_container_migrations_total{web}")),
        Some(0.0)
    );
}

#[test]
fn every_family_is_there_before_any_event() {
    let text = Metrics::default().render(Format::Text);
    for family in [
        "placed_build_info",
        "placed_containers",
        "placed_predictions_total",
        "placed_migrations_total",
        "placed_migration_bytes_total",
        "placed_migration_seconds",
        "placed_errors_total",
        "placed_metric_samples_total",
        "placed_container_placement",
        "placed_container_units",
        "placed_container_state",
        "placed_container_predicted_relative_performance",
        "placed_container_observed_relative_performance",
        "placed_container_prediction_error",
        "placed_container_migrations_total",
        "placed_container_migration_bytes_total",
        "placed_container_overrides_total",
        "placed_placement_overrides_total",
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_max_fds",
        "process_start_time_seconds",
    ] {
        assert!(
            text.contains(&format!("# TYPE {family} ")),
            "{family} missing:\n{text}"
        );
    }
    for kind in crate::telemetry::ERROR_KINDS {
        assert_eq!(
            sample(&text, &format!("placed_errors_total{{kind=\"{kind}\"}}")),
            Some(0.0),
            "{kind}"
        );
    }
    for action in placed_core::reconcile::Action::ALL {
        assert_eq!(
            sample(
                &text,
                &format!(
                    "placed_placement_overrides_total{{action=\"{}\"}}",
                    action.name()
                )
            ),
            Some(0.0),
            "{action:?}"
        );
    }
    for outcome in ["ok", "failed", "rolled_back"] {
        assert_eq!(
            sample(
                &text,
                &format!("placed_migrations_total{{outcome=\"{outcome}\"}}")
            ),
            Some(0.0)
        );
    }
    assert_eq!(
        sample(&text, r#"placed_containers{state="failed"}"#),
        Some(0.0)
    );
    assert!(
        text.contains(&format!(
            "placed_build_info{{version=\"{}\"",
            env!("CARGO_PKG_VERSION")
        )),
        "{text}"
    );
}

#[test]
fn two_containers_of_one_name_have_series_of_their_own() {
    let m = Metrics::default();
    m.per_container
        .set_source(|| vec![view("/t1/w1", "w1"), view("/t2/w1", "w1")]);
    let text = m.render(Format::OpenMetrics);
    let units: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("placed_container_units{"))
        .collect();
    assert_eq!(units.len(), 2, "{units:?}");
    assert_ne!(units[0], units[1]);
    assert!(
        units.iter().any(|l| l.contains(r#"id="/t1/w1""#)),
        "{units:?}"
    );
}
