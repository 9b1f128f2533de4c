//! Putting a machine model together from a loaded topology and a machine file: the
//! sharing tree, the allocation units, the interconnect, the concerns and their flags.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::concerns::{self, Concern, Scope};
use super::hierarchy::{self, Hierarchy, HierarchyError, PartitionInput};
use super::interconnect::{Interconnect, InterconnectSource};
use super::machine_file::{AddedConcern, InterconnectTable, MachineFile};
use super::memory::{self, NodeRoleError, NodeRoles};
use super::topology::{self, LevelKind};
use super::{Machine, MachineError, PuAccount, Unit, fingerprint};
use crate::cpuset::{CpuSet, NodeSet};

/// Where a machine file's complaints point: the file, and the topology it was applied to.
struct Context {
    file_path: Option<PathBuf>,
    source_name: String,
}

impl Context {
    fn mismatch(&self, detail: String) -> MachineError {
        MachineError::Mismatch {
            path: self.file_path.clone().unwrap_or_default(),
            detail,
        }
    }

    fn hierarchy(&self, error: HierarchyError) -> MachineError {
        MachineError::Hierarchy {
            source_name: self.source_name.clone(),
            error,
        }
    }

    fn nodes(&self, error: NodeRoleError) -> MachineError {
        MachineError::Nodes {
            source_name: self.source_name.clone(),
            error,
        }
    }
}

/// The CPU nodes at each position of the NUMA level: os indices and attached memory nodes.
struct NumaPositions {
    os: Vec<u32>,
    attached: Vec<NodeSet>,
}

impl NumaPositions {
    fn position(&self, os: u32) -> Option<usize> {
        self.os.iter().position(|&o| o == os)
    }
}

impl Machine {
    pub(super) fn build(
        t: topology::Topology,
        file: Option<(PathBuf, MachineFile)>,
    ) -> Result<Self, MachineError> {
        let (file_path, file) = match file {
            Some((p, f)) => (Some(p), f),
            None => (None, MachineFile::default()),
        };
        let cx = Context {
            file_path,
            source_name: t.source.clone(),
        };
        let roles = memory::classify(&t).map_err(|e| cx.nodes(e))?;
        let hierarchy = sharing_tree(&cx, &t, &roles, &file)?;
        let numa = numa_positions(&cx, &hierarchy, &roles)?;
        let units = units_of(&hierarchy, &numa);
        let interconnect = match &file.interconnect {
            Some(table) => measured_interconnect(&cx, table, &numa)?,
            None => {
                let d = t.distances.as_ref();
                Interconnect::from_distances(numa.os.len(), d.map(|d| d.name.clone()), |i, j| {
                    d.and_then(|d| d.get(numa.os[i], numa.os[j]))
                })
            }
        };
        let with_ic = !file.concerns.remove.iter().any(|r| r == "ic");
        let mut concerns = concerns::derive(
            &hierarchy,
            numa.os.len(),
            with_ic.then(|| interconnect_label(&interconnect.source)),
        );
        for added in &file.concerns.add {
            if let Some(concern) = weighted_concern(&cx, added, &numa)? {
                concerns.push(concern);
            }
        }
        set_flags(&cx, &mut concerns, &file)?;
        let mut notes = notes_of(&hierarchy, &roles, &t);
        // A calibration's own caveats travel with its figures (clipped: the file is input).
        notes.extend(file.interconnect.iter().flat_map(|ic| {
            ic.notes
                .iter()
                .map(|n| format!("interconnect: {}", crate::text::clip(n, 400)))
        }));
        let usable = roles
            .cpu_nodes
            .iter()
            .fold(CpuSet::new(), |acc, n| acc.union(&n.cpus));
        let mut machine = Machine {
            source: cx.source_name,
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
            numa_os: numa.os,
            numa_attached: numa.attached,
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
}

/// The sharing tree, with the machine file's custom partitions added and its removed
/// levels taken out (the interconnect is not a level: it is dropped with the concerns).
fn sharing_tree(
    cx: &Context,
    t: &topology::Topology,
    roles: &NodeRoles,
    file: &MachineFile,
) -> Result<Hierarchy, MachineError> {
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
    .map_err(|e| cx.hierarchy(e))?;
    for name in file.concerns.remove.iter().filter(|n| *n != "ic") {
        hierarchy.remove_level(name).map_err(|e| cx.hierarchy(e))?;
    }
    Ok(hierarchy)
}

fn numa_positions(
    cx: &Context,
    hierarchy: &Hierarchy,
    roles: &NodeRoles,
) -> Result<NumaPositions, MachineError> {
    let numa_level = &hierarchy.levels[hierarchy.numa_level];
    let mut positions = NumaPositions {
        os: Vec::with_capacity(numa_level.instances.len()),
        attached: Vec::with_capacity(numa_level.instances.len()),
    };
    for inst in &numa_level.instances {
        let node = roles
            .cpu_nodes
            .iter()
            .find(|n| n.cpus == inst.cpus)
            .ok_or_else(|| cx.nodes(NodeRoleError::NoCpuNode))?;
        positions.os.push(node.os_index);
        positions.attached.push(node.attached.clone());
    }
    Ok(positions)
}

fn units_of(hierarchy: &Hierarchy, numa: &NumaPositions) -> Vec<Unit> {
    let numa_level = &hierarchy.levels[hierarchy.numa_level];
    hierarchy.levels[hierarchy.unit_level]
        .instances
        .iter()
        .map(|u| {
            let positions: Vec<usize> = numa_level
                .instances
                .iter()
                .enumerate()
                .filter(|(_, n)| n.cpus.intersects(&u.cpus))
                .map(|(i, _)| i)
                .collect();
            Unit {
                mems: positions.iter().map(|&i| numa.os[i]).collect(),
                numa: positions,
                cpus: u.cpus.clone(),
            }
        })
        .collect()
}

/// The interconnect from a calibration's bandwidth table, rows and sets keyed by NUMA
/// position instead of os index.
fn measured_interconnect(
    cx: &Context,
    table: &InterconnectTable,
    numa: &NumaPositions,
) -> Result<Interconnect, MachineError> {
    let n = numa.os.len();
    let matrix = match &table.matrix {
        None => None,
        Some(m) => {
            let positions: Vec<usize> = m
                .nodes
                .iter()
                .map(|&os| {
                    numa.position(os).ok_or_else(|| {
                        cx.mismatch(format!(
                            "interconnect matrix names node {os}, which is not a CPU node of {} (CPU nodes: {:?})",
                            cx.source_name, numa.os
                        ))
                    })
                })
                .collect::<Result<_, _>>()?;
            if let Some(missing) = numa.os.iter().find(|os| !m.nodes.contains(os)) {
                return Err(cx.mismatch(format!(
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
                numa.position(os).ok_or_else(|| {
                    cx.mismatch(format!(
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
    Ok(Interconnect::measured(n, table.unit.clone(), matrix, sets))
}

fn interconnect_label(source: &InterconnectSource) -> String {
    match source {
        InterconnectSource::Distances { matrix } => format!("from distance matrix {matrix}"),
        InterconnectSource::Uniform => {
            "no distance matrix: remote nodes assumed at distance 20".into()
        }
        InterconnectSource::Measured { unit } => format!("measured, {unit}"),
    }
}

/// A machine file's concern that weighs NUMA nodes (None for one given as PU sets, which
/// became a level of the sharing tree).
fn weighted_concern(
    cx: &Context,
    added: &AddedConcern,
    numa: &NumaPositions,
) -> Result<Option<Concern>, MachineError> {
    let Some(w) = &added.node_weights else {
        return Ok(None);
    };
    let mut weights = BTreeMap::new();
    for (k, v) in w {
        let os: u32 = k
            .parse()
            .map_err(|_| cx.mismatch(format!("node_weights key {k:?} is not a node id")))?;
        let p = numa.position(os).ok_or_else(|| {
            cx.mismatch(format!(
                "concern {:?} weighs node {os}, which is not a CPU node",
                added.name
            ))
        })?;
        weights.insert(p, *v);
    }
    Ok(Some(Concern {
        name: added.name.clone(),
        title: added.name.clone(),
        scope: Scope::NodeWeights { weights },
        count: numa.os.len(),
        capacity: None,
        lower_cost: added.lower_cost,
        lower_can_raise_perf: added.lower_can_raise_perf,
        score: "sum of the weights of the NUMA nodes in use".into(),
    }))
}

/// The machine file's flag overrides, after checking that concern names are unique.
fn set_flags(
    cx: &Context,
    concerns: &mut [Concern],
    file: &MachineFile,
) -> Result<(), MachineError> {
    let names: Vec<String> = concerns.iter().map(|c| c.name.clone()).collect();
    if let Some(dup) = names
        .iter()
        .enumerate()
        .find(|(i, n)| names[..*i].contains(n))
    {
        return Err(cx.mismatch(format!("two concerns are named {:?}", dup.1)));
    }
    for (name, flags) in &file.concerns.set {
        let c = concerns
            .iter_mut()
            .find(|c| &c.name == name)
            .ok_or_else(|| {
                cx.mismatch(format!(
                    "cannot set flags of unknown concern {name:?} (concerns: {})",
                    names.join(", ")
                ))
            })?;
        if matches!(c.scope, Scope::Unit { .. }) && !flags.lower_cost {
            return Err(cx.mismatch(format!(
                "concern {name:?} is the allocation unit: fewer units always lower the cost"
            )));
        }
        c.lower_cost = flags.lower_cost;
        c.lower_can_raise_perf = flags.lower_can_raise_perf;
    }
    Ok(())
}

fn notes_of(hierarchy: &Hierarchy, roles: &NodeRoles, t: &topology::Topology) -> Vec<String> {
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
    notes
}
