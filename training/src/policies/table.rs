//! What `placed-train policies` prints: a summary per goal and policy, then every workload;
//! or the same as JSON lines.

use std::fmt::Write as _;

use super::{Cell, Replay, Replayed};
use crate::report::{aligned, banner};

fn percent(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.1}%"))
}

fn goal_label(goal: f64) -> String {
    format!("{:.0}%", 100.0 * goal)
}

/// The tables for people.
pub fn text(r: &Replay) -> String {
    let mut out = banner(r.provenance, &r.fingerprint, r.v);
    let _ = writeln!(
        out,
        "{} allocation units; goals are fractions of performance in the baseline placement {}; model predictions cross-validated leaving one family out\n",
        r.units, r.baseline
    );
    out.push_str("policies, per goal (containers per machine: mean over workloads; shortfall below the goal: mean and worst)\n");
    let mut rows = Vec::new();
    for &goal in &r.goals {
        for policy in Replayed::ALL {
            let s = r.summary(goal, policy);
            let met = if s.measured == 0 {
                "not measured".to_owned()
            } else {
                format!("{}/{}", s.met, s.workloads)
            };
            rows.push([
                goal_label(goal),
                policy.name().to_owned(),
                format!("{:.2}", s.containers),
                met,
                percent(s.shortfall_mean),
                percent(s.shortfall_worst),
                match s.thirds {
                    (0, _) => "-".to_owned(),
                    (t, n) => format!("{t}/{n}"),
                },
            ]);
        }
    }
    out.push_str(&aligned(
        [
            "GOAL",
            "POLICY",
            "CONTAINERS",
            "GOAL MET",
            "SHORTFALL MEAN",
            "WORST",
            "THIRD MEASURED",
        ],
        &rows,
    ));
    out.push_str(
        "\nper workload (containers per machine, shortfall mean/worst; '-' not measured)\n",
    );
    let mut rows = Vec::new();
    for &goal in &r.goals {
        let columns: Vec<Vec<&Cell>> = Replayed::ALL
            .iter()
            .map(|&p| r.cells_of(goal, p).collect())
            .collect();
        for (i, first) in columns[0].iter().enumerate() {
            let cell = |p: usize| {
                columns[p].get(i).map_or_else(String::new, |c| {
                    let short = match (c.shortfall_mean(), c.shortfall_worst()) {
                        (Some(m), Some(w)) => format!("{m:.1}/{w:.1}%"),
                        _ => "-".into(),
                    };
                    format!("{:.1} {short}", c.containers())
                })
            };
            rows.push([
                goal_label(goal),
                first.workload.clone(),
                first.family.clone(),
                cell(0),
                cell(1),
                cell(2),
                cell(3),
                cell(4),
                cell(5),
            ]);
        }
    }
    let [a, b, c, d, e, f] = Replayed::ALL.map(|p| p.name());
    out.push_str(&aligned(
        ["GOAL", "WORKLOAD", "FAMILY", a, b, c, d, e, f],
        &rows,
    ));
    out
}

/// One JSON object per line: a `summary` per goal and policy, then a `workload` per goal,
/// policy and workload.
pub fn json_lines(r: &Replay) -> String {
    let mut out = String::new();
    let common = serde_json::json!({
        "provenance": r.provenance,
        "fingerprint": r.fingerprint,
        "v": r.v,
        "units": r.units,
        "baseline": r.baseline,
    });
    let mut line = |mut value: serde_json::Value| {
        if let (Some(obj), Some(common)) = (value.as_object_mut(), common.as_object()) {
            for (k, v) in common {
                obj.insert(k.clone(), v.clone());
            }
        }
        let _ = writeln!(out, "{value}");
    };
    for &goal in &r.goals {
        for policy in Replayed::ALL {
            let s = r.summary(goal, policy);
            line(serde_json::json!({
                "kind": "summary",
                "goal": goal,
                "policy": policy.name(),
                "containers": s.containers,
                "met": s.met,
                "measured": s.measured,
                "workloads": s.workloads,
                "shortfall_mean_percent": s.shortfall_mean,
                "shortfall_worst_percent": s.shortfall_worst,
                "third_measurements": s.thirds.0,
            }));
        }
    }
    for c in &r.cells {
        let placements: Vec<Option<&str>> = c.runs.iter().map(|r| r.placement.as_deref()).collect();
        let performance: Vec<Option<f64>> = c.runs.iter().map(|r| r.performance).collect();
        line(serde_json::json!({
            "kind": "workload",
            "goal": c.goal,
            "policy": c.policy.name(),
            "workload": c.workload,
            "family": c.family,
            "containers": c.containers(),
            "placements": placements,
            "performance": performance,
            "shortfall_mean_percent": c.shortfall_mean(),
            "shortfall_worst_percent": c.shortfall_worst(),
        }));
    }
    out
}
