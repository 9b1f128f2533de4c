//! What the node has free: each allocation unit held by a container, reserved for one not
//! started yet, or free; the same as PU counts per NUMA node and per package; and, per
//! container size asked about, the important placements that fit on the free units now.

use std::sync::Arc;

use placed_core::cpuset::{CpuSet, NodeSet};
use placed_core::machine::{LevelKind, Machine};
use placed_core::placement::instantiate;

use super::core::Core;
use super::reservations::units_of;

/// One allocation unit and who has it.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitUse {
    pub unit: usize,
    pub cpus: CpuSet,
    pub mems: NodeSet,
    /// The package (index among the machine's packages) the unit is in.
    pub package: usize,
    /// Managed containers holding it (one, or several aggressive ones sharing it: none, as
    /// aggressive containers hold nothing).
    pub held_by: Vec<String>,
    /// The reservation holding it for a container not started yet.
    pub reserved_by: Option<String>,
}

/// PUs free, held and reserved in one NUMA node or one package.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// The NUMA node's OS index, or the package's index.
    pub index: usize,
    pub free: usize,
    pub held: usize,
    pub reserved: usize,
}

/// The important placements of one size that fit on the free units now.
#[derive(Debug, Clone, PartialEq)]
pub struct Fits {
    pub vcpus: usize,
    /// Their ids (the important placement's canonical id, as `ListPlacements` shows it).
    pub placements: Vec<String>,
    /// Why the size has none, when it has no important placement on this machine at all.
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Capacity {
    pub units: Vec<UnitUse>,
    pub nodes: Vec<Tally>,
    pub packages: Vec<Tally>,
    pub fits: Vec<Fits>,
}

/// The node's capacity now, with the placements that fit for each of `sizes`.
pub(crate) fn capacity(core: &Arc<Core>, sizes: &[usize]) -> Capacity {
    let machine = &core.node.machine;
    let (reserved, holders) = {
        let held = core.reservations.lock();
        let reg = core.containers.registry();
        let holders: Vec<(usize, String)> = reg
            .entries
            .iter()
            .flat_map(|(id, e)| {
                e.record
                    .assigned
                    .iter()
                    .flat_map(|a| a.units.iter().map(|&u| (u, id.clone())))
                    .collect::<Vec<_>>()
            })
            .collect();
        (units_of(&held), holders)
    };
    let packages = packages(machine);
    let units: Vec<UnitUse> = machine
        .units
        .iter()
        .enumerate()
        .map(|(i, u)| UnitUse {
            unit: i,
            cpus: u.cpus.clone(),
            mems: u.mems.clone(),
            package: packages
                .iter()
                .position(|p| p.intersects(&u.cpus))
                .unwrap_or(0),
            held_by: holders
                .iter()
                .filter(|(unit, _)| *unit == i)
                .map(|(_, id)| id.clone())
                .collect(),
            reserved_by: reserved.get(&i).cloned(),
        })
        .collect();
    let free: Vec<usize> = units
        .iter()
        .filter(|u| u.held_by.is_empty() && u.reserved_by.is_none())
        .map(|u| u.unit)
        .collect();
    let nodes = machine
        .numa_os
        .iter()
        .enumerate()
        .map(|(pos, &os)| {
            tally(usize::try_from(os).unwrap_or(pos), &units, |u| {
                machine.units[u.unit].numa.contains(&pos)
            })
        })
        .collect();
    let package_tallies = (0..packages.len())
        .map(|p| tally(p, &units, |u| u.package == p))
        .collect();
    let fits = sizes.iter().map(|&v| fits(core, v, &free)).collect();
    Capacity {
        units,
        nodes,
        packages: package_tallies,
        fits,
    }
}

/// PUs of the units `within` takes, by who has them.
fn tally(index: usize, units: &[UnitUse], within: impl Fn(&UnitUse) -> bool) -> Tally {
    let mut t = Tally {
        index,
        ..Tally::default()
    };
    for u in units.iter().filter(|u| within(u)) {
        let pus = u.cpus.len();
        if u.reserved_by.is_some() {
            t.reserved += pus;
        } else if !u.held_by.is_empty() {
            t.held += pus;
        } else {
            t.free += pus;
        }
    }
    t
}

/// The machine's packages, as PU sets: the hierarchy's package level, or one package when
/// the machine has one (its level is then dropped as never varying).
fn packages(machine: &Machine) -> Vec<CpuSet> {
    machine
        .hierarchy
        .levels
        .iter()
        .find(|l| l.kind == LevelKind::Package || l.merged.iter().any(|m| m == "Package"))
        .map(|l| l.instances.iter().map(|i| i.cpus.clone()).collect())
        .unwrap_or_else(|| vec![machine.pus.usable.clone()])
}

/// The important placements of `v` that can be instantiated on the free units.
fn fits(core: &Core, v: usize, free: &[usize]) -> Fits {
    let set = match core.node.placements(v) {
        Ok(s) => s,
        Err(e) => {
            return Fits {
                vcpus: v,
                placements: Vec::new(),
                note: Some(e.line()),
            };
        }
    };
    let placements = set
        .placements
        .iter()
        .filter(|p| {
            instantiate(&core.node.machine, v, p, free)
                .ok()
                .flatten()
                .is_some()
        })
        .map(|p| p.id.clone())
        .collect();
    Fits {
        vcpus: v,
        placements,
        note: None,
    }
}
