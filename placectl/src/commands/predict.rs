//! `placectl predict`: a container's predicted performance in every important placement,
//! as a table with a bar chart, with the observations and the model behind it.

use std::fmt::Write;

use placed_proto::v1 as pb;
use serde_json::{Value, json};

use super::{Action, Call, Client, Failure, Format, Reply, Typed};
use crate::cli::StatusError;
use crate::cli::daemon::{outcome_json, outcome_line, provenance_name};
use crate::cli::table::Table;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    container: String,
}

impl Typed for Args {
    fn validate(self) -> Result<Action, Failure> {
        Action::daemon(Predict {
            container: self.container,
        })
    }
}

#[derive(Debug)]
struct Predict {
    container: String,
}

impl Call for Predict {
    fn call<'a>(&'a self, c: &'a mut Client, format: Format) -> Reply<'a> {
        Box::pin(async move {
            let p = c
                .predict(pb::PredictRequest {
                    container: self.container.clone(),
                })
                .await
                .map_err(StatusError)?
                .into_inner();
            // Only to mark where the container is now and how its last decision turned
            // out: the prediction stands without it.
            let container = c
                .get_container(pb::GetContainerRequest {
                    container: self.container.clone(),
                })
                .await
                .ok()
                .and_then(|r| r.into_inner().container);
            let now = container.as_ref().map(|c| c.placement_id.clone());
            let outcome = container.and_then(|c| c.outcome);
            format.print(
                || {
                    let mut v = prediction_json(&p);
                    v["outcome"] = outcome.as_ref().map_or(Value::Null, outcome_json);
                    v
                },
                || {
                    let mut text = render_prediction(&p, now.as_deref());
                    if let Some(o) = &outcome {
                        let _ = writeln!(text, "Last decision {}", outcome_line(o));
                    }
                    text
                },
            )
        })
    }

    fn waits_when_busy(&self) -> bool {
        true
    }
}

/// How a model's provenance must be shown: loudly unless measured on real hardware.
fn provenance_banner(p: i32) -> Option<&'static str> {
    match pb::Provenance::try_from(p) {
        Ok(pb::Provenance::Simulated) => Some(
            "SIMULATED: this model was trained on simulated data; its predictions are not real placement results",
        ),
        Ok(pb::Provenance::VirtualMachine) => Some(
            "VIRTUAL MACHINE: this model was trained in a virtual machine; its timings say nothing about real hardware",
        ),
        _ => None,
    }
}

/// The predicted performance per placement as a table with a bar chart: one bar per
/// placement, scaled to the best, marked where it was measured and where it is now.
pub fn render_prediction(p: &pb::PredictResponse, current: Option<&str>) -> String {
    let mut o = String::new();
    if let Some(b) = provenance_banner(p.provenance) {
        let _ = writeln!(o, "{b}\n");
    }
    let _ = writeln!(
        o,
        "Container   {} ({} vCPUs)\nModel       {} (trained on {} data)",
        p.container,
        p.vcpus,
        p.model_id,
        provenance_name(p.provenance)
    );
    let _ = writeln!(o, "\nObserved");
    o.push_str(&observed(p).render("  "));
    let _ = writeln!(o, "\nPredicted, relative to the baseline (x1.00)");
    o.push_str(&predicted(p, current).render("  "));
    if !p.third_measurement.is_empty() {
        let _ = writeln!(o, "third measurement: {}", p.third_measurement);
    }
    for w in &p.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
    o
}

/// The measurements behind the prediction, each with its role.
fn observed(p: &pb::PredictResponse) -> Table {
    let mut t = Table::new([
        "PLACEMENT",
        "ROLE",
        "MEDIAN",
        "95% INTERVAL",
        "WINDOWS",
        "SOURCE",
    ])
    .right(2)
    .right(4);
    for obs in &p.observations {
        let role = if obs.placement_id == p.baseline_id {
            "baseline"
        } else if obs.placement_id == p.probe_id {
            "probe"
        } else {
            "third"
        };
        t.row([
            obs.placement_id.clone(),
            role.into(),
            format!("{:.4}", obs.value),
            format!("{:.4} - {:.4}", obs.low, obs.high),
            format!("{} ({} dropped)", obs.windows, obs.dropped_windows),
            obs.unit.clone(),
        ]);
    }
    t
}

/// The prediction per placement with its bar, scaled to the best, marked where it was
/// measured and where the container is now.
fn predicted(p: &pb::PredictResponse, current: Option<&str>) -> Table {
    const WIDTH: usize = 30;
    let best = p
        .placements
        .iter()
        .map(|x| x.relative)
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    let level = p
        .placements
        .iter()
        .map(|x| x.interval_level)
        .find(|l| *l > 0.0);
    let range_header = level.map_or_else(
        || "RANGE".to_owned(),
        |l| format!("{:.0}% INTERVAL", l * 100.0),
    );
    let mut t = Table::new(["PLACEMENT", "PERF", "+-", range_header.as_str(), "", ""])
        .right(1)
        .right(2);
    for x in &p.placements {
        let filled = ((x.relative / best) * WIDTH as f64)
            .round()
            .clamp(0.0, WIDTH as f64);
        // Truncation is intended: a bar length in characters.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let filled = filled as usize;
        let mut marks = Vec::new();
        if x.placement_id == p.baseline_id {
            marks.push("measured (baseline)");
        } else if x.placement_id == p.probe_id {
            marks.push("measured (probe)");
        } else if x.measured {
            marks.push("measured (third)");
        }
        if current == Some(x.placement_id.as_str()) {
            marks.push("<- now");
        }
        t.row([
            x.placement_id.clone(),
            format!("x{:.2}", x.relative),
            format!("{:.2}", x.spread),
            if x.interval_level > 0.0 {
                format!("x{:.2}-x{:.2}", x.interval_low, x.interval_high)
            } else {
                String::new()
            },
            format!("{}{}", "#".repeat(filled), ".".repeat(WIDTH - filled)),
            marks.join(", "),
        ]);
    }
    t
}

pub fn prediction_json(p: &pb::PredictResponse) -> Value {
    json!({
        "schema": "placed.prediction/v1",
        "container": p.container,
        "vcpus": p.vcpus,
        "model_id": p.model_id,
        "provenance": provenance_name(p.provenance),
        "baseline": p.baseline_id,
        "probe": p.probe_id,
        "observations": p.observations.iter().map(|o| json!({
            "placement": o.placement_id, "value": o.value, "low": o.low, "high": o.high,
            "source": o.unit, "windows": o.windows, "dropped_windows": o.dropped_windows,
        })).collect::<Vec<_>>(),
        "placements": p.placements.iter().map(|x| json!({
            "placement": x.placement_id, "relative": x.relative, "spread": x.spread,
            "measured": x.measured,
            "interval": (x.interval_level > 0.0).then(|| json!({
                "low": x.interval_low, "high": x.interval_high, "level": x.interval_level,
            })),
        })).collect::<Vec<_>>(),
        "warnings": p.warnings,
        "third_measurement": (!p.third_measurement.is_empty()).then_some(&p.third_measurement),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prediction_shows_its_calibrated_intervals_and_none_for_measured_cells() {
        let p = pb::PredictResponse {
            container: "web".into(),
            baseline_id: "a".into(),
            probe_id: "b".into(),
            placements: vec![
                pb::PredictedPlacement {
                    placement_id: "a".into(),
                    relative: 1.0,
                    ..Default::default()
                },
                pb::PredictedPlacement {
                    placement_id: "c".into(),
                    relative: 1.2,
                    spread: 0.02,
                    interval_low: 1.05,
                    interval_high: 1.31,
                    interval_level: 0.9,
                    measured: false,
                },
            ],
            ..Default::default()
        };
        let text = render_prediction(&p, None);
        assert!(text.contains("90% INTERVAL"), "{text}");
        assert!(text.contains("x1.05-x1.31"), "{text}");
        assert!(!text.contains("third"), "{text}");
        let j = prediction_json(&p);
        assert!(j["placements"][0]["interval"].is_null(), "{j}");
        assert_eq!(j["placements"][1]["interval"]["high"], 1.31);
        assert_eq!(j["placements"][1]["interval"]["level"], 0.9);
        assert!(j["third_measurement"].is_null(), "{j}");
    }

    #[test]
    fn a_third_measurement_is_shown_as_measured_with_its_reason() {
        let why = "c measured as well: its predicted interval 0.85-1.05 holds the goal 0.9, and measured at 0.93 x baseline";
        let p = pb::PredictResponse {
            container: "web".into(),
            baseline_id: "a".into(),
            probe_id: "b".into(),
            observations: ["a", "b", "c"]
                .map(|id| pb::Observation {
                    placement_id: id.into(),
                    value: 100.0,
                    ..Default::default()
                })
                .to_vec(),
            placements: vec![pb::PredictedPlacement {
                placement_id: "c".into(),
                relative: 0.93,
                measured: true,
                ..Default::default()
            }],
            third_measurement: why.into(),
            ..Default::default()
        };
        let text = render_prediction(&p, None);
        assert!(text.contains("measured (third)"), "{text}");
        assert!(
            text.contains(&format!("third measurement: {why}")),
            "{text}"
        );
        let observed: Vec<&str> = text
            .lines()
            .filter(|l| l.trim_start().starts_with("c "))
            .collect();
        assert!(observed[0].contains("third"), "{text}");
        let j = prediction_json(&p);
        assert_eq!(j["third_measurement"], why);
        assert_eq!(j["placements"][0]["measured"], true);
    }
}
