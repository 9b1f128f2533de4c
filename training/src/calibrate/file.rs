//! The machine file calibration writes (docs/machine-file.md): only the `interconnect`
//! section, which is what calibration knows.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SetBandwidth {
    pub nodes: Vec<u32>,
    pub bandwidth: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct Matrix {
    nodes: Vec<u32>,
    values: Vec<Vec<f64>>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct Interconnect {
    unit: String,
    matrix: Matrix,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    sets: Vec<SetBandwidth>,
    /// What the figures are not (a virtual machine's, forced past a check).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notes: Vec<String>,
}

/// A machine file holding a measured interconnect.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationFile {
    version: u32,
    name: String,
    interconnect: Interconnect,
}

impl CalibrationFile {
    pub fn new(
        unit: &str,
        nodes: Vec<u32>,
        values: Vec<Vec<f64>>,
        sets: Vec<SetBandwidth>,
        notes: Vec<String>,
    ) -> Self {
        Self {
            version: 1,
            name: format!("calibrated by placed-train on {} node(s)", nodes.len()),
            interconnect: Interconnect {
                unit: unit.to_owned(),
                matrix: Matrix { nodes, values },
                sets,
                notes,
            },
        }
    }

    pub fn to_json(&self) -> String {
        // Serializing plain numbers and strings cannot fail; an empty object would still
        // be refused by Machine::load when the file is read back.
        let mut s = serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".into());
        s.push('\n');
        s
    }

    /// The bandwidth of threads on `row` with memory on `col`.
    pub fn pair(&self, row: usize, col: usize) -> Option<f64> {
        self.interconnect.matrix.values.get(row)?.get(col).copied()
    }

    pub fn sets(&self) -> &[SetBandwidth] {
        &self.interconnect.sets
    }

    pub fn unit(&self) -> &str {
        &self.interconnect.unit
    }

    pub fn notes(&self) -> &[String] {
        &self.interconnect.notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_one_node_file_loads_as_a_machine_file() {
        let f = CalibrationFile::new("GB/s", vec![0], vec![vec![10.0]], Vec::new(), Vec::new());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.json");
        std::fs::write(&path, f.to_json()).unwrap();
        let m = placed_core::machine::Machine::load(
            &placed_core::machine::TopologySource::Synthetic("numa:1 core:2 pu:1".into()),
            Some(&path),
        )
        .unwrap();
        assert!(!m.fingerprint().is_empty());
    }

    #[test]
    fn a_two_node_file_with_a_set_loads() {
        let f = CalibrationFile::new(
            "GB/s",
            vec![0, 1],
            vec![vec![10.0, 4.0], vec![4.1, 10.2]],
            vec![SetBandwidth {
                nodes: vec![0, 1],
                bandwidth: 15.0,
            }],
            vec!["written with --force past 1 failed check(s): ...".into()],
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.json");
        std::fs::write(&path, f.to_json()).unwrap();
        let m = placed_core::machine::Machine::load(
            &placed_core::machine::TopologySource::Synthetic("pack:2 numa:1 core:2 pu:1".into()),
            Some(&path),
        )
        .unwrap();
        // The forced mark travels with the figures into the machine model's notes.
        assert!(
            m.notes.iter().any(|n| n.contains("--force")),
            "{:?}",
            m.notes
        );
    }
}
