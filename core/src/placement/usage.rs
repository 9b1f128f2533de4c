//! What each important placement uses of the machine, counted in the resources that mean
//! the same on any machine: NUMA nodes (memory controllers), packages, L3 caches, cores,
//! and the aggregate bandwidth of its nodes (the interconnect concern's score). The model
//! across machine classes describes placements by their share of these (placed-models'
//! `resources`); placed-train writes them into training data, and the daemon counts its
//! own host's the same way, here.

use crate::machine::{InterconnectError, InterconnectSource, Machine};

use super::PlacementSet;

/// What the machine has.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MachineUsage {
    pub nodes: f64,
    pub packages: f64,
    /// L3 caches; NUMA nodes when the machine shows none.
    pub l3: f64,
    pub cores: f64,
    pub threads_per_core: f64,
    /// The interconnect score of every node together.
    pub interconnect: f64,
    /// Whether the interconnect figures are a machine file's measured bandwidth.
    pub measured_bandwidth: bool,
    /// Each level's name and instance count, then PUs per core: `package:2 numa:8 ... pu:2`.
    pub topology: String,
}

/// What one placement uses.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PlacementUsage {
    pub id: String,
    pub nodes: f64,
    pub packages: f64,
    pub l3: f64,
    pub cores: f64,
    pub interconnect: f64,
}

/// The machine's resources and each placement's use of them, in the set's order.
pub fn usage(
    m: &Machine,
    set: &PlacementSet,
) -> Result<(MachineUsage, Vec<PlacementUsage>), InterconnectError> {
    let levels = &m.hierarchy.levels;
    let find = |name: &str| {
        levels
            .iter()
            .position(|l| l.merged.iter().any(|x| x.eq_ignore_ascii_case(name)))
    };
    let numa = m.hierarchy.numa_level;
    let (package, l3, core) = (find("Package"), find("L3"), find("Core"));
    let pus = m.pus.usable.len() as f64;
    let count = |level: Option<usize>, otherwise: f64| {
        level.map_or(otherwise, |l| levels[l].instances.len() as f64)
    };
    let nodes = levels[numa].instances.len() as f64;
    // Without a core level every PU is its own core (no SMT, or SMT off).
    let cores = count(core, pus);
    let all: Vec<usize> = (0..levels[numa].instances.len()).collect();
    let mut topology: Vec<String> = levels
        .iter()
        .map(|l| format!("{}:{}", l.name, l.instances.len()))
        .collect();
    topology.push(format!("pu:{}", fmt_count(pus / cores)));
    let machine = MachineUsage {
        nodes,
        packages: count(package, 1.0),
        l3: count(l3, nodes),
        cores,
        threads_per_core: pus / cores,
        interconnect: m.interconnect.score(&all, &m.numa_os)?,
        measured_bandwidth: matches!(m.interconnect.source, InterconnectSource::Measured { .. }),
        topology: topology.join(" "),
    };
    let placements = set
        .placements
        .iter()
        .map(|p| {
            let in_use = |level: usize| -> Vec<usize> {
                levels[level]
                    .instances
                    .iter()
                    .enumerate()
                    .filter(|(_, i)| i.cpus.intersects(&p.cpus))
                    .map(|(k, _)| k)
                    .collect()
            };
            let used_nodes = in_use(numa);
            let used = |level: Option<usize>, otherwise: f64| {
                level.map_or(otherwise, |l| in_use(l).len() as f64)
            };
            Ok(PlacementUsage {
                id: p.id.clone(),
                nodes: used_nodes.len() as f64,
                packages: used(package, 1.0),
                l3: used(l3, used_nodes.len() as f64),
                cores: used(core, p.cpus.len() as f64),
                interconnect: m.interconnect.score(&used_nodes, &m.numa_os)?,
            })
        })
        .collect::<Result<Vec<_>, InterconnectError>>()?;
    Ok((machine, placements))
}

/// A count as a short number: `2`, or `1.5` on a machine whose cores differ.
fn fmt_count(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::TopologySource;
    use crate::placement::important_placements;

    #[test]
    fn a_placement_s_use_is_counted_on_the_machine_s_levels() {
        let m = Machine::load(
            &TopologySource::Synthetic("pack:2 numa:2 l3:1 core:4 pu:2".into()),
            None,
        )
        .unwrap();
        let set = important_placements(&m, 8).unwrap();
        let (machine, placements) = usage(&m, &set).unwrap();
        assert_eq!(
            (
                machine.nodes,
                machine.packages,
                machine.cores,
                machine.threads_per_core
            ),
            (4.0, 2.0, 16.0, 2.0)
        );
        assert_eq!(machine.l3, 4.0, "one L3 per node");
        assert!(!machine.measured_bandwidth);
        assert!(machine.topology.ends_with("pu:2"), "{}", machine.topology);
        assert_eq!(placements.len(), set.placements.len());
        for p in &placements {
            // 8 vCPUs on 4 (SMT-packed) to 8 cores, on 1 to 4 nodes.
            assert!((4.0..=8.0).contains(&p.cores), "{p:?}");
            assert!((1.0..=4.0).contains(&p.nodes), "{p:?}");
            assert!(p.packages <= p.nodes && p.interconnect > 0.0, "{p:?}");
            assert!(p.interconnect <= machine.interconnect, "{p:?}");
        }
        assert!(placements.iter().any(|p| p.nodes == 1.0 && p.cores == 4.0));
        assert!(placements.iter().any(|p| p.nodes == 4.0));
    }
}
