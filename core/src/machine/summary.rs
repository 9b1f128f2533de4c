//! The machine as shown to people (`placectl topology`) and programs (`--json`, gRPC).
//! The JSON form is a stable schema, documented in `docs/cli-json.md`; fields are only added.

use serde::Serialize;

use crate::cpuset::{CpuSet, NodeSet};

use super::{Concern, CpuKind, InterconnectSource, Machine, MemoryTarget, PuAccount};

pub const MACHINE_SCHEMA: &str = "placed.machine/v1";

#[derive(Debug, Clone, Serialize)]
pub struct MachineSummary {
    pub schema: &'static str,
    pub source: String,
    pub label: Option<String>,
    pub cpu_model: Option<String>,
    pub fingerprint: String,
    pub pus: PuAccount,
    pub allocation_unit: String,
    pub units: Vec<UnitSummary>,
    pub levels: Vec<LevelSummary>,
    pub concerns: Vec<Concern>,
    pub interconnect: InterconnectSummary,
    pub memory_targets: Vec<MemoryTarget>,
    pub cpu_kinds: Vec<CpuKind>,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct UnitSummary {
    pub cpus: CpuSet,
    pub mems: NodeSet,
    /// Memory nodes with the same PUs (HBM beside DRAM), not part of `mems`.
    pub attached_mems: NodeSet,
}

#[derive(Debug, Clone, Serialize)]
pub struct LevelSummary {
    pub name: String,
    pub merged: Vec<String>,
    pub instances: usize,
    pub pus_min: usize,
    pub pus_max: usize,
    pub cache_bytes: Option<u64>,
    pub allocation_unit: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct InterconnectSummary {
    pub source: InterconnectSource,
    /// Os indices of the CPU nodes, the order of `bandwidth`'s rows and columns.
    pub nodes: Vec<u32>,
    /// Pairwise bandwidth (relative to a local access when derived from distances).
    pub bandwidth: Vec<Vec<Option<f64>>>,
}

pub fn summarize(m: &Machine) -> MachineSummary {
    let h = &m.hierarchy;
    let n = m.interconnect.nodes();
    MachineSummary {
        schema: MACHINE_SCHEMA,
        source: m.source.clone(),
        label: m.label.clone(),
        cpu_model: m.cpu_model.clone(),
        fingerprint: m.fingerprint().to_owned(),
        pus: m.pus.clone(),
        allocation_unit: m.unit_level().name.clone(),
        units: m
            .units
            .iter()
            .map(|u| UnitSummary {
                cpus: u.cpus.clone(),
                mems: u.mems.clone(),
                attached_mems: u
                    .numa
                    .iter()
                    .fold(NodeSet::new(), |acc, &p| acc.union(&m.numa_attached[p])),
            })
            .collect(),
        levels: h
            .levels
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let (pus_min, pus_max) = l.capacity();
                LevelSummary {
                    name: l.name.clone(),
                    merged: l.merged.clone(),
                    instances: l.instances.len(),
                    pus_min,
                    pus_max,
                    cache_bytes: l.cache_bytes,
                    allocation_unit: i == h.unit_level,
                }
            })
            .collect(),
        concerns: m.concerns.clone(),
        interconnect: InterconnectSummary {
            source: m.interconnect.source.clone(),
            nodes: m.numa_os.clone(),
            bandwidth: (0..n)
                .map(|i| {
                    (0..n)
                        .map(|j| {
                            m.interconnect
                                .pair(i, j)
                                .map(|v| (v * 1000.0).round() / 1000.0)
                        })
                        .collect()
                })
                .collect(),
        },
        memory_targets: m.memory_targets.clone(),
        cpu_kinds: m.cpu_kinds.clone(),
        notes: m.notes.clone(),
    }
}
