//! The machine model (docs/design.md, "Machine model"): a host as scheduling concerns.
//!
//! [`Machine::load`] takes a topology source (host, hwloc XML, synthetic string) and an
//! optional machine file, and produces the sharing tree, the allocation units, the concerns
//! with their flags, the interconnect model and the machine-class fingerprint. Everything
//! downstream (placements, models, the daemon) keys on what this module produces.

mod build;
mod concerns;
mod fingerprint;
mod hierarchy;
mod interconnect;
mod machine_file;
mod memory;
mod summary;
mod topology;

use std::path::{Path, PathBuf};

pub use concerns::{Concern, Scope, milli};
pub use hierarchy::{Hierarchy, HierarchyError, Instance, Level};
pub use interconnect::{
    Interconnect, InterconnectError, InterconnectSource, MEASURED_DIGITS, MEASURED_RANGE,
};
pub use machine_file::{MACHINE_FILE_VERSION, MachineFile, MachineFileError};
pub use memory::{MemoryTarget, NodeRoleError};
pub use summary::MachineSummary;
pub use topology::{CpuKind, LevelKind, TopologyError, TopologySource, quiet_hwloc};

use crate::cpuset::{CpuSet, NodeSet};

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
