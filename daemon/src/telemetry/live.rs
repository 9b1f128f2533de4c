//! Live accuracy per model (docs/models.md, "Live accuracy"): over each model's last
//! decisions on this host, the mean and worst error, the intervals' coverage, the goals
//! kept, and whether the live gate stopped it. Labelled with the model's id and the
//! provenance of its training data, as every figure is: a model trained on simulated data
//! says so here too. Set at each outcome; a model that has had none has no series.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::lifecycle::ModelLive;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ModelLabel {
    pub model: String,
    /// `real`, `virtual_machine` or `simulated`.
    pub provenance: String,
}

type Value = Family<ModelLabel, Gauge<f64, AtomicU64>>;

/// The live families.
#[derive(Debug, Default)]
pub struct LiveMetrics {
    decisions: Value,
    mean_error: Value,
    worst_error: Value,
    coverage: Value,
    goal_attainment: Value,
    stopped: Value,
}

impl LiveMetrics {
    pub fn register(&self, registry: &mut Registry) {
        for (name, help, family) in [
            (
                "model_live_decisions",
                "Decisions in the model's live window (checked against the watch measurement after them)",
                &self.decisions,
            ),
            (
                "model_live_mean_error_percent",
                "Mean absolute % error of the model's predicted cells chosen in its live window",
                &self.mean_error,
            ),
            (
                "model_live_worst_error_percent",
                "Worst absolute % error of the model's predicted cells chosen in its live window",
                &self.worst_error,
            ),
            (
                "model_live_interval_coverage",
                "Fraction of the live window's calibrated intervals that held what was measured",
                &self.coverage,
            ),
            (
                "model_live_goal_attainment",
                "Fraction of the live window's decisions whose goal held",
                &self.goal_attainment,
            ),
            (
                "model_live_stopped",
                "1 while the live gate stops the model from moving containers",
                &self.stopped,
            ),
        ] {
            registry.register(name, help, family.clone());
        }
    }

    /// Sets the model's series from its live figures.
    pub fn set(&self, m: &ModelLive) {
        let label = ModelLabel {
            model: m.model_id.clone(),
            provenance: provenance_name(m.provenance).into(),
        };
        let s = &m.summary;
        self.decisions.get_or_create(&label).set(s.decisions as f64);
        for (family, value) in [
            (&self.mean_error, s.mean_error),
            (&self.worst_error, s.worst_error),
            (&self.coverage, s.coverage()),
            (&self.goal_attainment, s.goal_attainment()),
        ] {
            match value {
                Some(v) => {
                    family.get_or_create(&label).set(v);
                }
                None => {
                    family.remove(&label);
                }
            }
        }
        self.stopped
            .get_or_create(&label)
            .set(if m.stopped.is_some() { 1.0 } else { 0.0 });
    }
}

/// A provenance as a label value.
pub fn provenance_name(p: placed_models::Provenance) -> &'static str {
    match p {
        placed_models::Provenance::Real => "real",
        placed_models::Provenance::VirtualMachine => "virtual_machine",
        placed_models::Provenance::Simulated => "simulated",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::{Metrics, serve::Format};
    use placed_models::live::{LiveGate, LiveSummary, LiveWindow};

    #[test]
    fn a_model_s_live_figures_are_series_labelled_with_its_provenance() {
        let metrics = Metrics::default();
        // No model has decided anything yet: no series (a model's label is not known).
        let text = metrics.render(Format::Text);
        assert!(!text.contains("placed_model_live_decisions{"), "{text}");
        let mut summary = LiveSummary::of([]);
        summary.decisions = 12;
        summary.scored = 12;
        summary.mean_error = Some(4.5);
        summary.worst_error = Some(9.0);
        summary.with_interval = 10;
        summary.covered = 9;
        metrics.live.set(&ModelLive {
            model_id: "m1".into(),
            provenance: placed_models::Provenance::Simulated,
            summary,
            judgement: LiveGate::default().judge(&LiveWindow::new(1)),
            stopped: None,
        });
        let text = metrics.render(Format::Text);
        let labels = r#"{model="m1",provenance="simulated"}"#;
        let sample = |family: &str| {
            let start = format!("{family}{labels} ");
            text.lines()
                .find_map(|l| l.strip_prefix(start.as_str()))
                .and_then(|v| v.trim().parse::<f64>().ok())
        };
        assert_eq!(sample("placed_model_live_decisions"), Some(12.0), "{text}");
        assert_eq!(sample("placed_model_live_mean_error_percent"), Some(4.5));
        assert_eq!(sample("placed_model_live_interval_coverage"), Some(0.9));
        assert_eq!(sample("placed_model_live_stopped"), Some(0.0));
        // No goal was judged: no figure rather than a zero.
        assert!(
            !text.contains("placed_model_live_goal_attainment{"),
            "{text}"
        );
    }
}
