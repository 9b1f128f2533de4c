//! Small hand-made data sets for unit tests: four placements (`p0` the baseline) and
//! families of three behaviours, each behaviour shared by two families so that leaving one
//! family out still leaves its sibling to learn from.

use crate::data::{
    DATA_FORMAT_VERSION, Dataset, MachineHeader, Measurement, PlacementInfo, Provenance, RunRecord,
};

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
                records.push(RunRecord {
                    fingerprint: FINGERPRINT.into(),
                    v: V,
                    workload: format!("{family}-{w}"),
                    family: (*family).to_owned(),
                    run: 0,
                    placement: p.id.clone(),
                    performance: Measurement {
                        value: base * rel,
                        unit: "ops/s".into(),
                        repetitions: 3,
                        spread: base * rel * 0.005,
                    },
                    counters,
                    provenance: Provenance::Simulated,
                    unusable: None,
                });
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
