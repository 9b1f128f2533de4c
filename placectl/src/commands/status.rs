//! `placectl status`: the daemon's state: machine class, containers per state, models.

use std::fmt::Write;

use placed_proto::v1 as pb;
use serde_json::{Value, json};

use super::{Action, Call, Client, Failure, Format, Reply, Typed};
use crate::cli::StatusError;
use crate::cli::daemon::{provenance_name, state_name};
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
    if s.models.is_empty() {
        let _ = writeln!(
            o,
            "Models      none: train one with `{}` (DIR: the daemon's daemon.model_dir)",
            placed_models::train_command("N", "DIR")
        );
    } else {
        let _ = writeln!(o, "\nModels");
        let mut t = Table::new(["ID", "VCPUS", "DATA", "PATH"]).right(1);
        for m in &s.models {
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
    for w in &s.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
    o
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
        "warnings": s.warnings,
    })
}

/// Whole seconds of a Duration (0 when absent).
fn seconds(d: Option<&prost_types::Duration>) -> i64 {
    d.map_or(0, |d| d.seconds)
}
