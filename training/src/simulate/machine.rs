//! What the simulator needs to know about each important placement: how many of each kind
//! of resource it uses. Kept apart from `placed`'s types so that behaviours can be tested on
//! hand-made placements; [`SimMachine::from_placed`] is the only bridge.

use placed_core::machine::{Machine, Scope};
use placed_core::placement::PlacementSet;
use placed_models::resources::{ClassResources, of_machine};

use super::SimulateError;

/// Resources one placement gives a container.
#[derive(Debug, Clone, PartialEq)]
pub struct SimPlacement {
    /// Placement id from the machine model.
    pub id: String,
    /// Score vector as the machine model gives it (thousandths converted back to units).
    pub scores: Vec<f64>,
    /// NUMA nodes in use: memory controllers and bandwidth.
    pub nodes: f64,
    /// Packages in use: crossing them costs latency.
    pub packages: f64,
    /// L3 caches in use: a working set fits in their sum or not.
    pub l3: f64,
    /// vCPUs per instance of the finest shared level (an SMT core, a module sharing L2):
    /// 1 means no sharing.
    pub share: f64,
    /// Interconnect score relative to the best placement on as many nodes (1 = best).
    pub interconnect: f64,
}

/// A machine class and container size, as placements with their resources.
#[derive(Debug, Clone, PartialEq)]
pub struct SimMachine {
    /// Machine-class fingerprint.
    pub fingerprint: String,
    /// vCPUs per container.
    pub v: u32,
    /// Concern names, in score order.
    pub concerns: Vec<String>,
    /// The important placements.
    pub placements: Vec<SimPlacement>,
    /// What the machine has and each placement uses of it, written into the data so that
    /// the model across classes can learn from it; `None` for hand-made machines.
    pub resources: Option<ClassResources>,
}

impl SimMachine {
    /// The resources of every placement of `set`, counted on `machine`'s hierarchy.
    pub fn from_placed(machine: &Machine, set: &PlacementSet) -> Result<Self, SimulateError> {
        let levels = &machine.hierarchy.levels;
        let find = |name: &str| {
            levels
                .iter()
                .position(|l| l.merged.iter().any(|m| m.eq_ignore_ascii_case(name)))
        };
        let package = find("Package");
        let l3 = find("L3");
        let numa = machine.hierarchy.numa_level;
        let finest = levels.len().saturating_sub(1);
        let ic = machine
            .concerns
            .iter()
            .position(|c| matches!(c.scope, Scope::Interconnect));
        let v =
            u32::try_from(set.vcpus).map_err(|_| SimulateError::TooManyVcpus { v: set.vcpus })?;
        let mut placements: Vec<SimPlacement> = set
            .placements
            .iter()
            .map(|p| {
                let in_use = |level: usize| {
                    levels[level]
                        .instances
                        .iter()
                        .filter(|i| i.cpus.intersects(&p.cpus))
                        .count() as f64
                };
                let nodes = in_use(numa);
                SimPlacement {
                    id: p.id.clone(),
                    scores: p.scores_in_units(),
                    nodes,
                    packages: package.map_or(1.0, in_use),
                    l3: l3.map_or(nodes, in_use),
                    share: if finest > machine.hierarchy.unit_level {
                        set.vcpus as f64 / in_use(finest)
                    } else {
                        1.0
                    },
                    interconnect: ic.map_or(1.0, |c| p.scores[c] as f64),
                }
            })
            .collect();
        normalise_interconnect(&mut placements);
        Ok(Self {
            fingerprint: set.fingerprint.clone(),
            v,
            concerns: set.concerns.clone(),
            placements,
            resources: Some(of_machine(machine, set)?),
        })
    }
}

/// Raw interconnect scores grow with the node count; what a workload feels is how good the
/// links are for that many nodes, so each is divided by the best among equals.
pub(crate) fn normalise_interconnect(placements: &mut [SimPlacement]) {
    let best: Vec<f64> = placements
        .iter()
        .map(|p| {
            placements
                .iter()
                .filter(|q| q.nodes == p.nodes)
                .map(|q| q.interconnect)
                .fold(f64::MIN, f64::max)
        })
        .collect();
    for (p, b) in placements.iter_mut().zip(best) {
        p.interconnect = if b > 0.0 { p.interconnect / b } else { 1.0 };
    }
}
