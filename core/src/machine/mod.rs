//! The machine model (docs/design.md, "Machine model"): a host as scheduling concerns.
//!
//! [`Machine::load`] takes a topology source (host, hwloc XML, synthetic string) and an
//! optional machine file, and produces the sharing tree, the allocation units, the concerns
//! with their flags, the interconnect model and the machine-class fingerprint. Everything
//! downstream (placements, models, the daemon) keys on what this module produces.

mod concerns;
mod fingerprint;
mod hierarchy;
mod interconnect;
mod machine_file;
mod memory;
mod summary;
mod topology;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use concerns::{Concern, Scope, milli};
pub use hierarchy::{Hierarchy, HierarchyError, Instance, Level};
pub use interconnect::{Interconnect, InterconnectError, InterconnectSource};
pub use machine_file::{MACHINE_FILE_VERSION, MachineFile, MachineFileError};
pub use memory::{MemoryTarget, NodeRoleError};
pub use summary::MachineSummary;
pub use topology::{CpuKind, LevelKind, TopologyError, TopologySource, quiet_hwloc};

use crate::cpuset::{CpuSet, NodeSet};
use hierarchy::PartitionInput;

/// A unit of exclusive allocation (a NUMA node by default) and the memory that goes with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    pub cpus: CpuSet,
    /// Positions in the NUMA level of the nodes this unit's PUs belong to.
    pub numa: Vec<usize>,
    /// Os indices of those nodes: the unit's memory.
    pub mems: NodeSet,
}

/// PU accounting, for the summary: which PUs exist and why some are never placed on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PuAccount {
    pub complete: CpuSet,
    pub usable: CpuSet,
    pub offline: CpuSet,
    pub disallowed: CpuSet,
    /// Online and allowed, but their NUMA node is disallowed or missing.
    pub without_node: CpuSet,
}

/// The machine model of one host (or one topology file).
#[derive(Debug, Clone)]
pub struct Machine {
    pub source: String,
    pub label: Option<String>,
    pub cpu_model: Option<String>,
    pub pus: PuAccount,
    pub hierarchy: Hierarchy,
    pub units: Vec<Unit>,
    /// Os index of the CPU node at each position of the NUMA level.
    pub numa_os: Vec<u32>,
    /// Memory nodes that share a CPU node's PUs (MCDRAM beside DDR), by NUMA position.
    pub numa_attached: Vec<NodeSet>,
    pub memory_targets: Vec<MemoryTarget>,
    pub interconnect: Interconnect,
    pub concerns: Vec<Concern>,
    pub cpu_kinds: Vec<CpuKind>,
    pub notes: Vec<String>,
    fingerprint: String,
}

/// A machine model that could not be built. [`MachineError::is_bad_input`] separates what the
/// operator passed from what the host is.
#[derive(Debug, thiserror::Error)]
pub enum MachineError {
    #[error(transparent)]
    Topology(#[from] TopologyError),
    #[error(transparent)]
    MachineFile(#[from] MachineFileError),
    #[error("{source_name}: {error}")]
    Nodes {
        source_name: String,
        error: NodeRoleError,
    },
    #[error("{source_name}: {error}")]
    Hierarchy {
        source_name: String,
        error: HierarchyError,
    },
    #[error("machine file {path}: {detail}")]
    Mismatch { path: PathBuf, detail: String },
}

impl MachineError {
    /// True when the caller's input (a file, a string, a machine file) is at fault rather
    /// than the host.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, Self::Topology(TopologyError::Host { .. }))
    }
}

impl Machine {
    /// Loads the topology and applies the machine file, if any.
    pub fn load(
        source: &TopologySource,
        machine_file: Option<&Path>,
    ) -> Result<Self, MachineError> {
        let file = match machine_file {
            Some(p) => Some((p.to_owned(), MachineFile::load(p)?)),
            None => None,
        };
        let topology = topology::load(source)?;
        Self::build(topology, file)
    }

    fn build(
        t: topology::Topology,
        file: Option<(PathBuf, MachineFile)>,
    ) -> Result<Self, MachineError> {
        let source_name = t.source.clone();
        let roles = memory::classify(&t).map_err(|error| MachineError::Nodes {
            source_name: source_name.clone(),
            error,
        })?;
        let (file_path, file) = match file {
            Some((p, f)) => (Some(p), f),
            None => (None, MachineFile::default()),
        };
        let mismatch = |detail: String| MachineError::Mismatch {
            path: file_path.clone().unwrap_or_default(),
            detail,
        };
        let hier_err = |error: HierarchyError| MachineError::Hierarchy {
            source_name: source_name.clone(),
            error,
        };

        let custom: Vec<PartitionInput> = file
            .concerns
            .add
            .iter()
            .filter_map(|a| {
                a.cpus.as_ref().map(|cpus| PartitionInput {
                    name: a.name.clone(),
                    kind: LevelKind::Custom,
                    cache_bytes: None,
                    sets: cpus.clone(),
                })
            })
            .collect();
        let numa_sets: Vec<CpuSet> = roles.cpu_nodes.iter().map(|n| n.cpus.clone()).collect();
        let mut hierarchy = hierarchy::build(
            &t.levels,
            &numa_sets,
            custom,
            file.allocation_unit.as_deref(),
        )
        .map_err(hier_err)?;
        for name in &file.concerns.remove {
            if name != "ic" {
                hierarchy.remove_level(name).map_err(hier_err)?;
            }
        }

        // NUMA positions -> CPU nodes.
        let numa_level = &hierarchy.levels[hierarchy.numa_level];
        let mut numa_os = Vec::with_capacity(numa_level.instances.len());
        let mut numa_attached = Vec::with_capacity(numa_level.instances.len());
        for inst in &numa_level.instances {
            let node = roles
                .cpu_nodes
                .iter()
                .find(|n| n.cpus == inst.cpus)
                .ok_or_else(|| MachineError::Nodes {
                    source_name: source_name.clone(),
                    error: NodeRoleError::NoCpuNode,
                })?;
            numa_os.push(node.os_index);
            numa_attached.push(node.attached.clone());
        }
        let units = hierarchy.levels[hierarchy.unit_level]
            .instances
            .iter()
            .map(|u| {
                let numa: Vec<usize> = numa_level
                    .instances
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| n.cpus.intersects(&u.cpus))
                    .map(|(i, _)| i)
                    .collect();
                Unit {
                    mems: numa.iter().map(|&i| numa_os[i]).collect(),
                    numa,
                    cpus: u.cpus.clone(),
                }
            })
            .collect();

        let pos_of = |os: u32| numa_os.iter().position(|&o| o == os);
        let interconnect = match &file.interconnect {
            Some(table) => {
                let n = numa_os.len();
                let matrix = match &table.matrix {
                    None => None,
                    Some(m) => {
                        let positions: Vec<usize> = m
                            .nodes
                            .iter()
                            .map(|&os| {
                                pos_of(os).ok_or_else(|| {
                                    mismatch(format!(
                                        "interconnect matrix names node {os}, which is not a CPU node of {source_name} (CPU nodes: {numa_os:?})"
                                    ))
                                })
                            })
                            .collect::<Result<_, _>>()?;
                        if let Some(missing) = numa_os.iter().find(|os| !m.nodes.contains(os)) {
                            return Err(mismatch(format!(
                                "interconnect matrix has no row for CPU node {missing}"
                            )));
                        }
                        let mut bw = vec![0.0; n * n];
                        for (r, &pi) in positions.iter().enumerate() {
                            for (c, &pj) in positions.iter().enumerate() {
                                bw[pi * n + pj] = m.values[r][c];
                            }
                        }
                        Some(bw)
                    }
                };
                let mut sets = BTreeMap::new();
                for s in &table.sets {
                    let mut key = s
                        .nodes
                        .iter()
                        .map(|&os| {
                            pos_of(os).ok_or_else(|| {
                                mismatch(format!(
                                    "interconnect set {:?} names node {os}, which is not a CPU node",
                                    s.nodes
                                ))
                            })
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    key.sort_unstable();
                    key.dedup();
                    sets.insert(key, s.bandwidth);
                }
                Interconnect::measured(n, table.unit.clone(), matrix, sets)
            }
            None => {
                let d = t.distances.as_ref();
                Interconnect::from_distances(numa_os.len(), d.map(|d| d.name.clone()), |i, j| {
                    d.and_then(|d| d.get(numa_os[i], numa_os[j]))
                })
            }
        };
        let ic_label = match &interconnect.source {
            InterconnectSource::Distances { matrix } => format!("from distance matrix {matrix}"),
            InterconnectSource::Uniform => {
                "no distance matrix: remote nodes assumed at distance 20".into()
            }
            InterconnectSource::Measured { unit } => format!("measured, {unit}"),
        };
        let with_ic = !file.concerns.remove.iter().any(|r| r == "ic");
        let mut concerns = concerns::derive(&hierarchy, numa_os.len(), with_ic.then_some(ic_label));
        for a in &file.concerns.add {
            let Some(w) = &a.node_weights else { continue };
            let mut weights = BTreeMap::new();
            for (k, v) in w {
                let os: u32 = k
                    .parse()
                    .map_err(|_| mismatch(format!("node_weights key {k:?} is not a node id")))?;
                let p = pos_of(os).ok_or_else(|| {
                    mismatch(format!(
                        "concern {:?} weighs node {os}, which is not a CPU node",
                        a.name
                    ))
                })?;
                weights.insert(p, *v);
            }
            concerns.push(Concern {
                name: a.name.clone(),
                title: a.name.clone(),
                scope: Scope::NodeWeights { weights },
                count: numa_os.len(),
                capacity: None,
                lower_cost: a.lower_cost,
                lower_can_raise_perf: a.lower_can_raise_perf,
                score: "sum of the weights of the NUMA nodes in use".into(),
            });
        }
        let names: Vec<String> = concerns.iter().map(|c| c.name.clone()).collect();
        if let Some(dup) = names
            .iter()
            .enumerate()
            .find(|(i, n)| names[..*i].contains(n))
        {
            return Err(mismatch(format!("two concerns are named {:?}", dup.1)));
        }
        for (name, flags) in &file.concerns.set {
            let c = concerns
                .iter_mut()
                .find(|c| &c.name == name)
                .ok_or_else(|| {
                    mismatch(format!(
                        "cannot set flags of unknown concern {name:?} (concerns: {})",
                        names.join(", ")
                    ))
                })?;
            if matches!(c.scope, Scope::Unit { .. }) && !flags.lower_cost {
                return Err(mismatch(format!(
                    "concern {name:?} is the allocation unit: fewer units always lower the cost"
                )));
            }
            c.lower_cost = flags.lower_cost;
            c.lower_can_raise_perf = flags.lower_can_raise_perf;
        }

        let mut notes = hierarchy.notes.clone();
        if !roles.orphan_pus.is_empty() {
            notes.push(format!(
                "PUs {} have no allowed NUMA node and are never placed on",
                roles.orphan_pus
            ));
        }
        if t.cpu_kinds.len() > 1 {
            notes.push(format!(
                "{} kinds of cores: placements prefer the most efficient kind, which is not a concern of its own",
                t.cpu_kinds.len()
            ));
        }
        let usable = roles
            .cpu_nodes
            .iter()
            .fold(CpuSet::new(), |acc, n| acc.union(&n.cpus));
        let mut machine = Machine {
            source: source_name,
            label: file.name.clone(),
            cpu_model: t.cpu_model.clone(),
            pus: PuAccount {
                complete: t.complete_pus.clone(),
                usable,
                offline: t.offline_pus.clone(),
                disallowed: t.disallowed_pus.clone(),
                without_node: roles.orphan_pus.clone(),
            },
            hierarchy,
            units,
            numa_os,
            numa_attached,
            memory_targets: roles.memory_targets,
            interconnect,
            concerns,
            cpu_kinds: t.cpu_kinds,
            notes,
            fingerprint: String::new(),
        };
        machine.fingerprint = fingerprint::compute(&machine);
        Ok(machine)
    }

    /// The machine class: hosts with equal fingerprints share models.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    pub fn unit_level(&self) -> &Level {
        &self.hierarchy.levels[self.hierarchy.unit_level]
    }

    /// Efficiency rank of a PU's core kind (higher is faster), 0 when unknown.
    pub fn pu_efficiency(&self, pu: u32) -> u32 {
        self.cpu_kinds
            .iter()
            .find(|k| k.cpus.contains(pu))
            .and_then(|k| k.efficiency)
            .unwrap_or(0)
    }

    /// What people and programs are shown about the machine.
    pub fn summary(&self) -> MachineSummary {
        summary::summarize(self)
    }
}

#[cfg(test)]
pub(crate) mod tests;
