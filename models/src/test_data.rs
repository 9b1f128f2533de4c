//! Small hand-made data sets for unit tests: four placements (`p0` the baseline) and
//! families of three behaviours, each behaviour shared by two families so that leaving one
//! family out still leaves its sibling to learn from.

use crate::data::{DATA_FORMAT_VERSION, Dataset, MachineHeader, PlacementInfo, RunRecord};

pub(crate) const FINGERPRINT: &str = "test-machine";
pub(crate) const V: u32 = 4;

/// Relative performance in p0..p3 for behaviour `kind` and jitter `j`.
fn vector(kind: &str, j: f64) -> [f64; 4] {
    match kind {
        "flat" => [1.0, 1.0 + j, 1.0 - j, 1.0],
        "scales" => [1.0, 1.5 + j, 2.0 + 2.0 * j, 1.2 + j],
        "hates" => [1.0, 0.6 + j, 0.5 + j / 2.0, 0.9 - j],
        other => panic!("no behaviour {other}"),
    }
}

/// `per_family` workloads in each of the families named `<kind>-<letter>`.
pub(crate) fn dataset(families: &[&str], per_family: usize) -> Dataset {
    let placements: Vec<PlacementInfo> = (0..4)
        .map(|i| PlacementInfo {
            id: format!("p{i}"),
            scores: vec![f64::from(i), 1.0],
        })
        .collect();
    let header = MachineHeader {
        version: DATA_FORMAT_VERSION,
        fingerprint: FINGERPRINT.into(),
        v: V,
        concerns: vec!["a".into(), "b".into()],
        placements: placements.clone(),
    };
    let mut records = Vec::new();
    for family in families {
        let kind = family.split('-').next().unwrap_or(family);
        for w in 0..per_family {
            let j = 0.01 * w as f64;
            let base = 1000.0 + 37.0 * w as f64;
            for (p, rel) in placements.iter().zip(vector(kind, j)) {
                let mut counters = std::collections::BTreeMap::new();
                counters.insert("ipc".to_owned(), 1.0 + rel / 10.0);
                records.push(
                    RunRecord::simulated(
                        FINGERPRINT,
                        V,
                        family,
                        &format!("{family}-{w}"),
                        &p.id,
                        base * rel,
                    )
                    .with_spread(base * rel * 0.005)
                    .with_counters(counters),
                );
            }
        }
    }
    Dataset::from_parts(header, records).expect("test data is valid")
}

/// Two families of each behaviour, six workloads each.
pub(crate) fn standard() -> Dataset {
    dataset(
        &[
            "flat-a", "flat-b", "scales-a", "scales-b", "hates-a", "hates-b",
        ],
        6,
    )
}

/// Training options for unit tests: a small forest, counters off (the standard data's
/// counters are hand-made).
pub(crate) fn quick_options() -> crate::train::TrainOptions {
    crate::train::TrainOptions {
        forest: crate::forest::ForestParams::new().n_trees(10),
        counters_as_inputs: false,
        ..crate::train::TrainOptions::default()
    }
}

/// The standard test data as if collected for containers of `v` vCPUs.
pub(crate) fn sized(v: u32) -> Dataset {
    let d = standard();
    let mut header = d.header().clone();
    header.v = v;
    let records: Vec<RunRecord> = d
        .records()
        .iter()
        .map(|r| RunRecord { v, ..r.clone() })
        .collect();
    Dataset::from_parts(header, records).expect("test data is valid")
}

/// A machine class of `nodes` NUMA nodes (two per package, eight two-thread cores per
/// node), as data of containers of 8 vCPUs with its resources: placements on 1, 2, half
/// and all the nodes, each with the vCPUs packed two to a core and spread one to a core.
/// Behaviours depend on the share of the machine used, so they carry across classes.
pub(crate) fn class(nodes: u32) -> Dataset {
    use crate::resources::{ClassResources, MachineResources, PlacementResources};
    let fingerprint = format!("test-class-{nodes}n");
    let total = f64::from(nodes);
    let machine = MachineResources {
        nodes: total,
        packages: (total / 2.0).ceil(),
        l3: total,
        cores: 8.0 * total,
        threads_per_core: 2.0,
        interconnect: total * 0.8_f64.max(1.0 / total),
        measured_bandwidth: false,
        topology: format!("pack:{} numa:2 core:8 pu:2", (nodes / 2).max(1)),
    };
    let mut counts: Vec<u32> = vec![1, 2, nodes / 2, nodes];
    counts.retain(|&n| n >= 1 && n <= nodes);
    counts.sort_unstable();
    counts.dedup();
    let mut used = Vec::new();
    for &n in &counts {
        for cores in [4.0, 8.0] {
            let n = f64::from(n);
            used.push(PlacementResources {
                id: format!("n{n}-c{cores}"),
                nodes: n,
                packages: (n / 2.0).ceil(),
                l3: n,
                cores,
                interconnect: if n > 1.0 { 0.8 * n } else { 1.0 },
            });
        }
    }
    let placements: Vec<PlacementInfo> = used
        .iter()
        .map(|p| PlacementInfo {
            id: p.id.clone(),
            scores: vec![p.nodes, p.cores],
        })
        .collect();
    let header = MachineHeader {
        version: DATA_FORMAT_VERSION,
        fingerprint: fingerprint.clone(),
        v: 8,
        concerns: vec!["numa".into(), "core".into()],
        placements,
    };
    let mut records = Vec::new();
    for family in ["bw-a", "bw-b", "hates-a", "hates-b", "flat-a", "flat-b"] {
        // Workloads of a family differ by as much as the behaviours do, so a category's
        // mean is a rough guess and the probe tells them apart.
        for w in 0..6 {
            let j = 0.1 * f64::from(w);
            for p in &used {
                let share = p.nodes / total;
                let smt = 8.0 / p.cores - 1.0;
                let rel = match &family[..family.len() - 2] {
                    "bw" => (1.0 + (0.5 + 2.0 * j) * share) * (1.0 - 0.1 * smt),
                    "hates" => 1.0 - (0.1 + j) * smt,
                    _ => 1.0 + 0.5 * j * share,
                };
                records.push(RunRecord::simulated(
                    &fingerprint,
                    8,
                    family,
                    &format!("{family}-{w}"),
                    &p.id,
                    1000.0 * rel,
                ));
            }
        }
    }
    Dataset::from_parts(header, records)
        .and_then(|d| {
            d.with_resources(ClassResources {
                machine,
                placements: used,
            })
        })
        .expect("test data is valid")
}
