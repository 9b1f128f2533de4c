//! The machine file: what an operator (or `placed-train calibrate`) knows about a machine
//! that hwloc does not. JSON, versioned, unknown fields refused so that a typo fails loudly.
//! The format is documented in `docs/machine-file.md`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::cpuset::CpuSet;
use crate::text::clip;

/// A value from the file as an error message shows it: debug-quoted, and cut, since the
/// file may hold a string or a list of any length.
fn quoted(value: &impl std::fmt::Debug) -> String {
    clip(&format!("{value:?}"), 80)
}

/// The only format version this build reads.
pub const MACHINE_FILE_VERSION: u32 = 1;

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MachineFile {
    pub version: u32,
    /// A label for people; not part of the fingerprint.
    #[serde(default)]
    pub name: Option<String>,
    /// The level containers get exclusively (a level name such as `numa`, `l3`, `package`).
    #[serde(default)]
    pub allocation_unit: Option<String>,
    #[serde(default)]
    pub interconnect: Option<InterconnectTable>,
    #[serde(default)]
    pub concerns: ConcernChanges,
}

/// Measured bandwidth, in `unit`. Rows are where threads run, columns where memory is.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct InterconnectTable {
    pub unit: String,
    #[serde(default)]
    pub matrix: Option<BandwidthMatrix>,
    #[serde(default)]
    pub sets: Vec<SetBandwidth>,
    /// What the calibration said about its own figures (a virtual machine, checks written
    /// past with `--force`): shown with the machine's notes, not part of the fingerprint.
    #[serde(default)]
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BandwidthMatrix {
    /// NUMA node os indices, the order of rows and columns.
    pub nodes: Vec<u32>,
    pub values: Vec<Vec<f64>>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SetBandwidth {
    pub nodes: Vec<u32>,
    pub bandwidth: f64,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ConcernChanges {
    /// Concerns to drop (a level stops constraining balance too).
    #[serde(default)]
    pub remove: Vec<String>,
    /// New flags for existing concerns.
    #[serde(default)]
    pub set: BTreeMap<String, Flags>,
    #[serde(default)]
    pub add: Vec<AddedConcern>,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Flags {
    pub lower_cost: bool,
    pub lower_can_raise_perf: bool,
}

/// A concern hwloc cannot see: a sharing level given by its PU sets (which must nest with
/// the rest of the tree), or a weight per NUMA node (nearness to a NIC, say).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AddedConcern {
    pub name: String,
    #[serde(default)]
    pub cpus: Option<Vec<CpuSet>>,
    #[serde(default)]
    pub node_weights: Option<BTreeMap<String, f64>>,
    pub lower_cost: bool,
    pub lower_can_raise_perf: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum MachineFileError {
    #[error("cannot read machine file {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("machine file {path}, line {line} column {column}: {detail}")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        detail: String,
    },
    #[error(
        "machine file {path} is version {found}; this placed reads version {MACHINE_FILE_VERSION}"
    )]
    Version { path: PathBuf, found: u32 },
    #[error("machine file {path}: {detail}")]
    Invalid { path: PathBuf, detail: String },
}

/// The longest name (of a level, a concern, a unit) a machine file may give: the machine
/// model quotes these names in its own errors, which must stay one line.
pub const MAX_NAME: usize = 64;

impl MachineFile {
    /// Every name is short enough to quote.
    fn check_names(&self) -> Result<(), String> {
        let ic_unit = self.interconnect.as_ref().map(|ic| ic.unit.as_str());
        let names = [
            ("name", self.name.as_deref()),
            ("allocation_unit", self.allocation_unit.as_deref()),
            ("interconnect.unit", ic_unit),
        ]
        .into_iter()
        .filter_map(|(field, v)| Some((field, v?)))
        .chain(
            self.concerns
                .remove
                .iter()
                .map(|n| ("concerns.remove", n.as_str())),
        )
        .chain(
            self.concerns
                .set
                .keys()
                .map(|n| ("concerns.set", n.as_str())),
        )
        .chain(
            self.concerns
                .add
                .iter()
                .map(|a| ("concerns.add name", a.name.as_str())),
        );
        for (field, name) in names {
            if name.chars().count() > MAX_NAME {
                return Err(format!(
                    "{field} {} is longer than {MAX_NAME} characters",
                    quoted(&name)
                ));
            }
        }
        Ok(())
    }

    pub fn load(path: &Path) -> Result<Self, MachineFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| MachineFileError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// Parses and checks what can be checked without the topology.
    pub fn parse(path: &Path, text: &str) -> Result<Self, MachineFileError> {
        let file: MachineFile =
            serde_json::from_str(text).map_err(|e| MachineFileError::Parse {
                path: path.to_owned(),
                line: e.line(),
                column: e.column(),
                // serde quotes an unknown field or a mistyped string whole, at any length.
                detail: clip(&e.to_string(), 600),
            })?;
        let invalid = |detail: String| MachineFileError::Invalid {
            path: path.to_owned(),
            detail,
        };
        if file.version != MACHINE_FILE_VERSION {
            return Err(MachineFileError::Version {
                path: path.to_owned(),
                found: file.version,
            });
        }
        file.check_names().map_err(invalid)?;
        if let Some(ic) = &file.interconnect {
            if ic.matrix.is_none() && ic.sets.is_empty() {
                return Err(invalid("interconnect has neither a matrix nor sets".into()));
            }
            if let Some(m) = &ic.matrix {
                let n = m.nodes.len();
                if m.values.len() != n || m.values.iter().any(|r| r.len() != n) {
                    return Err(invalid(format!(
                        "interconnect matrix must be {n} x {n} for nodes {}",
                        quoted(&m.nodes)
                    )));
                }
                if m.values
                    .iter()
                    .flatten()
                    .any(|v| !v.is_finite() || *v <= 0.0)
                {
                    return Err(invalid(
                        "interconnect matrix values must be positive numbers".into(),
                    ));
                }
            }
            for s in &ic.sets {
                if s.nodes.is_empty() || !s.bandwidth.is_finite() || s.bandwidth <= 0.0 {
                    return Err(invalid(format!(
                        "interconnect set {} needs nodes and a positive bandwidth",
                        quoted(&s.nodes)
                    )));
                }
            }
        }
        for a in &file.concerns.add {
            if a.name.is_empty()
                || !a
                    .name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            {
                return Err(invalid(format!(
                    "concern name {} must be lowercase letters, digits and _",
                    quoted(&a.name)
                )));
            }
            match (&a.cpus, &a.node_weights) {
                (Some(_), None) | (None, Some(_)) => {}
                _ => {
                    return Err(invalid(format!(
                        "added concern {} needs exactly one of cpus or node_weights",
                        quoted(&a.name)
                    )));
                }
            }
            if let Some(w) = &a.node_weights {
                for (k, v) in w {
                    if k.parse::<u32>().is_err() || !v.is_finite() {
                        return Err(invalid(format!(
                            "node_weights of {}: {} -> {v} is not node id -> number",
                            quoted(&a.name),
                            quoted(k)
                        )));
                    }
                }
            }
        }
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<MachineFile, MachineFileError> {
        MachineFile::parse(Path::new("m.json"), text)
    }

    #[test]
    fn full_file_parses() {
        let f = parse(
            r#"{"version": 1, "name": "opteron", "allocation_unit": "numa",
                "interconnect": {"unit": "GB/s",
                    "matrix": {"nodes": [0, 1], "values": [[10.0, 4.0], [4.0, 10.0]]},
                    "sets": [{"nodes": [0, 1], "bandwidth": 15.5}]},
                "concerns": {"remove": ["package"],
                    "set": {"l2": {"lower_cost": true, "lower_can_raise_perf": false}},
                    "add": [{"name": "nic", "node_weights": {"0": 1}, "lower_cost": false, "lower_can_raise_perf": false}]}}"#,
        )
        .unwrap();
        assert_eq!(f.concerns.remove, ["package"]);
        assert_eq!(f.interconnect.unwrap().sets[0].bandwidth, 15.5);
    }

    #[test]
    fn typos_and_bad_values_are_named() {
        let err = parse(r#"{"version": 1, "alocation_unit": "l3"}"#).unwrap_err();
        match err {
            MachineFileError::Parse { line, detail, .. } => {
                assert_eq!(line, 1);
                assert!(detail.contains("alocation_unit"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse(r#"{"version": 7}"#),
            Err(MachineFileError::Version { found: 7, .. })
        ));
        assert!(matches!(
            parse(
                r#"{"version": 1, "interconnect": {"unit": "GB/s", "matrix": {"nodes": [0, 1], "values": [[1.0]]}}}"#
            ),
            Err(MachineFileError::Invalid { .. })
        ));
        assert!(matches!(
            parse(
                r#"{"version": 1, "concerns": {"add": [{"name": "x", "lower_cost": true, "lower_can_raise_perf": true}]}}"#
            ),
            Err(MachineFileError::Invalid { .. })
        ));
    }
}
