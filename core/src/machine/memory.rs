//! Which NUMA nodes can host CPUs and which are only memory.
//!
//! hwloc gives a CPU-less node (HBM, CXL expander, GPU memory) either an empty cpuset or the
//! cpuset of the object it hangs off: a KNL MCDRAM node carries the same PUs as the DDR node
//! beside it, a CXL node attached at the package level carries the whole package. Neither may
//! become a CPU allocation unit (docs/design.md, "Machine model"), so the rule is: among nodes with identical
//! PUs, ordinary DRAM is the primary and the rest are attached memory; a node whose PUs
//! strictly contain another primary's is memory-side too.

use crate::cpuset::{CpuSet, NodeSet};

use super::topology::{NumaNode, Topology};

/// A NUMA node that holds the memory of a group of PUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuNode {
    pub os_index: u32,
    pub cpus: CpuSet,
    pub memory_bytes: u64,
    /// Other nodes with the same PUs (MCDRAM beside DDR, for example).
    pub attached: NodeSet,
}

/// A NUMA node without CPUs of its own: a memory target, never a CPU allocation unit.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MemoryTarget {
    pub os_index: u32,
    /// `HBM`, `MCDRAM`, `GPUMemory`, `CXL`, `NVM`, or `CPU-less` when hwloc gives no subtype.
    pub kind: String,
    pub memory_bytes: u64,
    /// The CPU nodes closest to it, by distance or by the PUs hwloc attaches it to.
    pub near: NodeSet,
    pub allowed: bool,
}

/// The split of a topology's NUMA nodes.
#[derive(Debug, Clone)]
pub struct NodeRoles {
    /// In hwloc's order (by first PU), each with disjoint PUs.
    pub cpu_nodes: Vec<CpuNode>,
    pub memory_targets: Vec<MemoryTarget>,
    /// Usable PUs that no allowed CPU node covers (their node is disallowed): never placed.
    pub orphan_pus: CpuSet,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeRoleError {
    #[error("NUMA nodes {a} and {b} share PUs {shared} without one containing the other")]
    Overlap { a: u32, b: u32, shared: CpuSet },
    #[error("no allowed NUMA node has a usable PU")]
    NoCpuNode,
}

fn is_plain_dram(n: &NumaNode) -> bool {
    matches!(n.subtype.as_deref(), None | Some("DRAM"))
}

pub fn classify(t: &Topology) -> Result<NodeRoles, NodeRoleError> {
    let mut candidates: Vec<&NumaNode> = t
        .numa_nodes
        .iter()
        .filter(|n| n.allowed && !n.cpus.is_empty())
        .collect();
    // Primary first within each group of identical PUs: plain DRAM, then lowest index.
    candidates.sort_by(|a, b| {
        (a.cpus.first(), !is_plain_dram(a), a.os_index).cmp(&(
            b.cpus.first(),
            !is_plain_dram(b),
            b.os_index,
        ))
    });
    let mut primaries: Vec<CpuNode> = Vec::new();
    let mut demoted: Vec<u32> = Vec::new();
    for n in candidates {
        if let Some(p) = primaries.iter_mut().find(|p| p.cpus == n.cpus) {
            p.attached.insert(n.os_index);
        } else {
            primaries.push(CpuNode {
                os_index: n.os_index,
                cpus: n.cpus.clone(),
                memory_bytes: n.memory_bytes,
                attached: NodeSet::new(),
            });
        }
    }
    // A node spanning other primaries' PUs is memory-side (e.g. attached at package level).
    let spans_others = |i: usize| {
        primaries.iter().enumerate().any(|(j, q)| {
            j != i && q.cpus.is_subset(&primaries[i].cpus) && q.cpus != primaries[i].cpus
        })
    };
    let keep: Vec<bool> = (0..primaries.len()).map(|i| !spans_others(i)).collect();
    let mut cpu_nodes = Vec::new();
    for (p, k) in primaries.into_iter().zip(keep) {
        if k {
            cpu_nodes.push(p);
        } else {
            demoted.push(p.os_index);
            demoted.extend(p.attached.iter());
        }
    }
    for (i, a) in cpu_nodes.iter().enumerate() {
        for b in &cpu_nodes[i + 1..] {
            if a.cpus.intersects(&b.cpus) {
                return Err(NodeRoleError::Overlap {
                    a: a.os_index,
                    b: b.os_index,
                    shared: a.cpus.intersection(&b.cpus),
                });
            }
        }
    }
    if cpu_nodes.is_empty() {
        return Err(NodeRoleError::NoCpuNode);
    }
    let covered = cpu_nodes
        .iter()
        .fold(CpuSet::new(), |acc, n| acc.union(&n.cpus));

    let is_cpu_node = |os: u32| cpu_nodes.iter().any(|c| c.os_index == os);
    let memory_targets = t
        .numa_nodes
        .iter()
        .filter(|n| !is_cpu_node(n.os_index))
        .map(|n| MemoryTarget {
            os_index: n.os_index,
            kind: n.subtype.clone().unwrap_or_else(|| {
                if demoted.contains(&n.os_index) || !n.cpus.is_empty() {
                    "memory-side".into()
                } else {
                    "CPU-less".into()
                }
            }),
            memory_bytes: n.memory_bytes,
            near: nearest_cpu_nodes(t, n, &cpu_nodes),
            allowed: n.allowed,
        })
        .collect();
    Ok(NodeRoles {
        orphan_pus: t.usable_pus.difference(&covered),
        cpu_nodes,
        memory_targets,
    })
}

/// By distance when the firmware gives one (GPU memory nodes have no PUs at all), else the
/// CPU nodes whose PUs hwloc attached the node to.
fn nearest_cpu_nodes(t: &Topology, n: &NumaNode, cpu_nodes: &[CpuNode]) -> NodeSet {
    if let Some(d) = &t.distances {
        let ds: Vec<(u32, u64)> = cpu_nodes
            .iter()
            .filter_map(|c| Some((c.os_index, d.get(c.os_index, n.os_index)?)))
            .collect();
        if let Some(min) = ds.iter().map(|&(_, v)| v).min() {
            return ds
                .iter()
                .filter(|&&(_, v)| v == min)
                .map(|&(o, _)| o)
                .collect();
        }
    }
    cpu_nodes
        .iter()
        .filter(|c| c.cpus.intersects(&n.cpus))
        .map(|c| c.os_index)
        .collect()
}
