//! `placectl placements`: the important placements of a machine for `v` vCPUs.

use std::fmt::Write;

use serde_json::{Value, json};

use placed_core::machine::Machine;
use placed_core::placement::{PlacementSet, Search, format_score};

use super::table::Table;

pub const PLACEMENTS_SCHEMA: &str = "placed.placements/v1";

fn search_line(search: &Search) -> String {
    match search {
        Search::Exact { steps } => format!("exact (every packing examined, {steps} search steps)"),
        Search::Bounded { bound } => bound.clone(),
    }
}

pub fn render_placements(m: &Machine, set: &PlacementSet) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "Machine     {} (class {})", m.source, m.fingerprint());
    let _ = writeln!(
        o,
        "Container   {} vCPUs: {} important placements",
        set.vcpus,
        set.placements.len()
    );
    let _ = writeln!(o, "Search      {}", search_line(&set.search));
    if !set.covers {
        let _ = writeln!(
            o,
            "Packings    no exact cover of the machine exists for {} vCPUs: packings leave units no block fits",
            set.vcpus
        );
    }
    o.push('\n');
    let mut header = vec!["ID".to_owned(), "NODES".to_owned()];
    header.extend(m.concerns.iter().map(|c| c.name.to_uppercase()));
    header.push("PUS".into());
    let mut t = Table::new(header);
    for i in 0..m.concerns.len() {
        t = t.right(i + 2);
    }
    for p in &set.placements {
        let mut cells = vec![p.id.clone(), p.mems.to_string()];
        cells.extend(
            m.concerns
                .iter()
                .zip(&p.scores)
                .map(|(c, &s)| format_score(c, s)),
        );
        cells.push(p.cpus.to_string());
        t.row(cells);
    }
    o.push_str(&t.render(""));
    o
}

/// The `--json` form; see docs/cli-json.md.
pub fn placements_json(m: &Machine, set: &PlacementSet) -> Value {
    let (exact, bound) = match &set.search {
        Search::Exact { .. } => (true, Value::Null),
        Search::Bounded { bound } => (false, Value::String(bound.clone())),
    };
    json!({
        "schema": PLACEMENTS_SCHEMA,
        "source": m.source,
        "fingerprint": m.fingerprint(),
        "vcpus": set.vcpus,
        "exact": exact,
        "bound": bound,
        "covers": set.covers,
        "concerns": m.concerns.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
        "placements": set.placements.iter().map(|p| json!({
            "id": p.id,
            "units": p.units,
            "nodes": p.mems.to_string(),
            "cpus": p.cpus.to_string(),
            "scores": m.concerns.iter().zip(&p.scores)
                .map(|(c, &s)| (c.name.clone(), json!(s as f64 / 1000.0)))
                .collect::<serde_json::Map<_, _>>(),
        })).collect::<Vec<_>>(),
    })
}
