//! `placectl status`: the daemon's state: machine class, containers per state, models.

use std::fmt::Write;

use placed_proto::v1 as pb;
use serde_json::{Value, json};

use super::{Action, Call, Client, Failure, Format, Reply, Typed};
use crate::cli::StatusError;
use crate::cli::daemon::{provenance_name, rfc3339, state_name, unix_ms};
use crate::cli::table::Table;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {}

impl Typed for Args {
    fn validate(self) -> Result<Action, Failure> {
        Action::daemon(Status)
    }
}

#[derive(Debug)]
struct Status;

impl Call for Status {
    fn call<'a>(&'a self, c: &'a mut Client, format: Format) -> Reply<'a> {
        Box::pin(async move {
            let s = c
                .get_status(pb::GetStatusRequest {})
                .await
                .map_err(StatusError)?
                .into_inner();
            format.print(|| status_json(&s), || render_status(&s))
        })
    }
}

pub fn render_status(s: &pb::GetStatusResponse) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "placed {}  up {} s",
        s.version,
        seconds(s.uptime.as_ref())
    );
    let _ = writeln!(o, "Class       {}", s.fingerprint);
    let _ = writeln!(o, "cgroups     {}", s.cgroup);
    let _ = writeln!(o, "State file  {}", s.state_file);
    let counts: Vec<String> = s
        .containers
        .iter()
        .filter(|c| c.count > 0)
        .map(|c| format!("{} {}", c.count, state_name(c.state)))
        .collect();
    let _ = writeln!(
        o,
        "Containers  {}",
        if counts.is_empty() {
            "none".into()
        } else {
            counts.join(", ")
        }
    );
    models_section(&mut o, &s.models);
    live_section(&mut o, &s.live);
    for w in &s.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
    o
}

/// The models the daemon would use now, or how to train one.
fn models_section(o: &mut String, models: &[pb::ModelInfo]) {
    if models.is_empty() {
        let _ = writeln!(
            o,
            "Models      none: train one with `{}` (DIR: the daemon's daemon.model_dir)",
            placed_models::train_command("N", "DIR")
        );
    } else {
        let _ = writeln!(o, "\nModels");
        let mut t = Table::new(["ID", "VCPUS", "DATA", "PATH"]).right(1);
        for m in models {
            let vcpus = if m.across_classes {
                "any (across classes)".to_owned()
            } else if m.trained_vcpus.is_empty() {
                m.vcpus.to_string()
            } else {
                let sizes: Vec<String> = m.trained_vcpus.iter().map(u32::to_string).collect();
                format!("any (across {})", sizes.join(","))
            };
            t.row([
                m.id.clone(),
                vcpus,
                provenance_name(m.provenance).into(),
                m.path.clone(),
            ]);
        }
        o.push_str(&t.render("  "));
    }
}

/// Each model's live accuracy on this host, and its gate.
fn live_section(o: &mut String, live: &[pb::LiveAccuracy]) {
    if !live.is_empty() {
        let _ = writeln!(
            o,
            "\nLive accuracy (each model's last decisions on this host)"
        );
        let mut t = Table::new([
            "MODEL",
            "DATA",
            "DECISIONS",
            "MEAN %",
            "WORST %",
            "COVERAGE",
            "GOALS",
            "GATE",
        ])
        .right(2)
        .right(3)
        .right(4);
        for m in live {
            let percent = |v: f64| {
                if m.scored > 0 {
                    format!("{v:.1}")
                } else {
                    "-".into()
                }
            };
            let share = |k: u32, n: u32| {
                if n > 0 {
                    format!("{k}/{n}")
                } else {
                    "-".into()
                }
            };
            let gate = match &m.stopped_since {
                Some(t) => format!("STOPPED since {}", rfc3339(Some(t))),
                None => m.gate.clone(),
            };
            t.row([
                m.model_id.clone(),
                provenance_name(m.provenance).into(),
                m.decisions.to_string(),
                percent(m.mean_error_percent),
                percent(m.worst_error_percent),
                share(m.covered, m.with_interval),
                share(m.goal_kept, m.with_goal),
                gate,
            ]);
        }
        o.push_str(&t.render("  "));
    }
}

pub fn status_json(s: &pb::GetStatusResponse) -> Value {
    json!({
        "schema": "placed.status/v1",
        "version": s.version,
        "fingerprint": s.fingerprint,
        "uptime_s": seconds(s.uptime.as_ref()),
        "cgroup": s.cgroup,
        "state_file": s.state_file,
        "containers": s.containers.iter()
            .map(|c| (state_name(c.state).to_owned(), json!(c.count)))
            .collect::<serde_json::Map<_, _>>(),
        "models": s.models.iter().map(|m| json!({
            "id": m.id, "vcpus": m.vcpus, "trained_vcpus": m.trained_vcpus,
            "across_classes": m.across_classes,
            "provenance": provenance_name(m.provenance), "path": m.path,
        })).collect::<Vec<_>>(),
        "live": s.live.iter().map(live_json).collect::<Vec<_>>(),
        "warnings": s.warnings,
    })
}

pub fn live_json(m: &pb::LiveAccuracy) -> Value {
    let scored = m.scored > 0;
    json!({
        "model_id": m.model_id, "provenance": provenance_name(m.provenance),
        "decisions": m.decisions, "scored": m.scored,
        "mean_error_percent": if scored { json!(m.mean_error_percent) } else { Value::Null },
        "worst_error_percent": if scored { json!(m.worst_error_percent) } else { Value::Null },
        "with_interval": m.with_interval, "covered": m.covered,
        "with_goal": m.with_goal, "goal_kept": m.goal_kept,
        "gate": m.gate,
        "stopped": m.stopped_since.is_some(),
        "stopped_unix_ms": m.stopped_since.as_ref().map(|t| unix_ms(Some(t))),
        "stopped_reason": if m.stopped_reason.is_empty() { Value::Null } else { json!(m.stopped_reason) },
    })
}

/// Whole seconds of a Duration (0 when absent).
fn seconds(d: Option<&prost_types::Duration>) -> i64 {
    d.map_or(0, |d| d.seconds)
}
