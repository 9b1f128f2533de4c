//! `placectl topology`: the machine summary and its concerns.

use std::fmt::Write;

use placed_core::machine::{InterconnectSource, MachineSummary};

use super::human_bytes;
use super::table::Table;

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

pub fn render_topology(s: &MachineSummary) -> String {
    let mut o = String::new();
    header(&mut o, s);
    levels(&mut o, s);
    concerns(&mut o, s);
    if s.interconnect.nodes.len() > 1 {
        interconnect(&mut o, s);
    }
    extras(&mut o, s);
    o
}

/// The machine, its class, its PUs and its allocation units.
fn header(o: &mut String, s: &MachineSummary) {
    let model = s.cpu_model.as_deref().unwrap_or("unknown processor");
    let _ = writeln!(o, "Machine   {} ({model})", s.source);
    if let Some(l) = &s.label {
        let _ = writeln!(o, "Label     {l}");
    }
    let _ = writeln!(o, "Class     {}", s.fingerprint);
    let p = &s.pus;
    let none = |c: &placed_core::cpuset::CpuSet| {
        if c.is_empty() {
            "none".to_owned()
        } else {
            c.to_string()
        }
    };
    let _ = writeln!(
        o,
        "PUs       {} usable of {} (offline: {}; disallowed: {}; without a NUMA node: {})",
        p.usable.len(),
        p.complete.len(),
        none(&p.offline),
        none(&p.disallowed),
        none(&p.without_node),
    );
    let unit_pus: Vec<usize> = s.units.iter().map(|u| u.cpus.len()).collect();
    let (lo, hi) = (
        unit_pus.iter().min().copied().unwrap_or(0),
        unit_pus.iter().max().copied().unwrap_or(0),
    );
    let sizes = if lo == hi {
        format!("{hi} PUs")
    } else {
        format!("{lo}-{hi} PUs")
    };
    let _ = writeln!(
        o,
        "Units     {} x {} of {sizes} (containers never share one)",
        s.units.len(),
        s.allocation_unit
    );
}

fn levels(o: &mut String, s: &MachineSummary) {
    let _ = writeln!(o, "\nLevels, coarsest first");
    let mut t = Table::new(["LEVEL", "HWLOC", "INSTANCES", "PUS EACH", "CACHE", ""]).right(2);
    for l in &s.levels {
        t.row([
            l.name.clone(),
            l.merged.join("+"),
            l.instances.to_string(),
            if l.pus_min == l.pus_max {
                l.pus_max.to_string()
            } else {
                format!("{}-{}", l.pus_min, l.pus_max)
            },
            l.cache_bytes.map(human_bytes).unwrap_or_default(),
            if l.allocation_unit {
                "allocation unit".into()
            } else {
                String::new()
            },
        ]);
    }
    o.push_str(&t.render("  "));
}

fn concerns(o: &mut String, s: &MachineSummary) {
    let _ = writeln!(o, "\nConcerns (score vector order)");
    let mut t = Table::new([
        "NAME",
        "COUNT",
        "PUS EACH",
        "LOWER=CHEAPER",
        "LOWER=CAN-HELP",
        "SCORE",
    ])
    .right(1);
    for c in &s.concerns {
        t.row([
            c.name.clone(),
            c.count.to_string(),
            match c.capacity {
                Some((a, b)) if a == b => b.to_string(),
                Some((a, b)) => format!("{a}-{b}"),
                None => "-".into(),
            },
            yes(c.lower_cost).into(),
            yes(c.lower_can_raise_perf).into(),
            c.score.clone(),
        ]);
    }
    o.push_str(&t.render("  "));
}

fn interconnect(o: &mut String, s: &MachineSummary) {
    let what = match &s.interconnect.source {
        InterconnectSource::Distances { matrix } => {
            format!("derived from distance matrix {matrix}, relative to a local access")
        }
        InterconnectSource::Uniform => {
            "no distance matrix: remote nodes assumed at distance 20, relative to a local access"
                .into()
        }
        InterconnectSource::Measured { unit } => format!("measured, {unit}"),
    };
    let _ = writeln!(
        o,
        "\nInterconnect bandwidth, threads (row) to memory (column): {what}"
    );
    let mut header = vec!["NODE".to_owned()];
    header.extend(s.interconnect.nodes.iter().map(|n| n.to_string()));
    let mut t = Table::new(header);
    for i in 1..=s.interconnect.nodes.len() {
        t = t.right(i);
    }
    for (row, node) in s.interconnect.bandwidth.iter().zip(&s.interconnect.nodes) {
        let mut cells = vec![node.to_string()];
        cells.extend(
            row.iter()
                .map(|v| v.map_or("-".into(), |v| format!("{v:.3}"))),
        );
        t.row(cells);
    }
    o.push_str(&t.render("  "));
}

/// Memory-only nodes, core kinds and notes, where the machine has any.
fn extras(o: &mut String, s: &MachineSummary) {
    if !s.memory_targets.is_empty() {
        let _ = writeln!(o, "\nMemory-only NUMA nodes (never CPU allocation units)");
        let mut t = Table::new(["NODE", "KIND", "SIZE", "NEAR", "ALLOWED"]).right(0);
        for m in &s.memory_targets {
            t.row([
                m.os_index.to_string(),
                m.kind.clone(),
                human_bytes(m.memory_bytes),
                m.near.to_string(),
                yes(m.allowed).into(),
            ]);
        }
        o.push_str(&t.render("  "));
    }
    if s.cpu_kinds.len() > 1 {
        let _ = writeln!(o, "\nCore kinds (higher efficiency rank = faster)");
        let mut t = Table::new(["PUS", "EFFICIENCY"]);
        for k in &s.cpu_kinds {
            t.row([
                k.cpus.to_string(),
                k.efficiency.map_or("unknown".into(), |e| e.to_string()),
            ]);
        }
        o.push_str(&t.render("  "));
    }
    if !s.notes.is_empty() {
        let _ = writeln!(o, "\nNotes");
        for n in &s.notes {
            let _ = writeln!(o, "  - {n}");
        }
    }
}
