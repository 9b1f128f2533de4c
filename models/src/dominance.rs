//! Which important placements are no better than which, from what they use of the machine
//! alone: bounds a forest's prediction may not cross (docs/models.md, "Across classes").
//!
//! A placement is no better than another when it has the same NUMA nodes in use (so the
//! same memory controllers and the same share of remote accesses), no more L3 caches, cores
//! or interconnect bandwidth, and spans at least as many packages. Nothing a workload can
//! do makes it faster there, whatever its kind: only measurement noise can. Node counts
//! must be equal because more nodes are both more memory bandwidth and more remote
//! accesses, which favour different workloads.
//!
//! A forest trained on other machines does not know this: on a held-out EPYC Naples it
//! predicted 1.65 x the baseline for the baseline's two nodes spread over two packages, where
//! the workload ran at 0.94 x (SIMULATED). Its prediction is therefore held between the two
//! measured placements wherever the order says where it lies.

use crate::resources::{ClassResources, PlacementResources};

/// `no_better[i][j]`: placement `i` is no better than placement `j`, for one class's
/// placements in the data's order. Empty where nothing is known (the model across sizes).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Order {
    no_better: Vec<Vec<bool>>,
}

fn no_better(a: &PlacementResources, b: &PlacementResources) -> bool {
    a.nodes == b.nodes
        && a.l3 <= b.l3
        && a.cores <= b.cores
        && a.interconnect <= b.interconnect
        && a.packages >= b.packages
}

impl Order {
    /// The order of a class's placements.
    pub(crate) fn of(resources: &ClassResources) -> Self {
        let p = &resources.placements;
        Self {
            no_better: p
                .iter()
                .map(|a| p.iter().map(|b| no_better(a, b)).collect())
                .collect(),
        }
    }

    fn le(&self, a: usize, b: usize) -> bool {
        self.no_better
            .get(a)
            .and_then(|row| row.get(b))
            .copied()
            .unwrap_or(false)
    }

    /// `predicted` for `target`, held at or below what was measured in a placement it is
    /// no better than, and at or above what was measured in one no better than it: the
    /// baseline (1 by definition) and the probe (`ratio`). Measurements that contradict the
    /// order (noise) bound nothing.
    pub(crate) fn bound(
        &self,
        target: usize,
        baseline: usize,
        probe: usize,
        ratio: f64,
        predicted: f64,
    ) -> f64 {
        let measured = [(baseline, 1.0), (probe, ratio)];
        let low = measured
            .iter()
            .filter(|&&(m, _)| self.le(m, target))
            .map(|&(_, v)| v)
            .fold(f64::NEG_INFINITY, f64::max);
        let high = measured
            .iter()
            .filter(|&&(m, _)| self.le(target, m))
            .map(|&(_, v)| v)
            .fold(f64::INFINITY, f64::min);
        if low > high {
            return predicted;
        }
        predicted.clamp(low, high)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::MachineResources;

    fn placement(
        id: &str,
        nodes: f64,
        packages: f64,
        l3: f64,
        cores: f64,
        ic: f64,
    ) -> PlacementResources {
        PlacementResources {
            id: id.into(),
            nodes,
            packages,
            l3,
            cores,
            interconnect: ic,
        }
    }

    fn naples_like() -> Order {
        Order::of(&ClassResources {
            placements: vec![
                // The baseline: two nodes of one package.
                placement("numa2-package1", 2.0, 1.0, 4.0, 12.0, 1.5),
                // The same two nodes' worth over two packages: no better.
                placement("numa2-package2", 2.0, 2.0, 4.0, 12.0, 0.95),
                // More of everything: unordered against the baseline (more remote accesses).
                placement("numa6-package2", 6.0, 2.0, 12.0, 24.0, 2.6),
                // Six nodes with fewer cores than the probe: no better than it.
                placement("numa6-package2-core12", 6.0, 2.0, 12.0, 12.0, 2.6),
            ],
            ..naples_resources()
        })
    }

    #[test]
    fn a_placement_with_less_of_everything_is_held_at_or_below_the_measured_one() {
        let o = naples_like();
        // Predicted 1.65 x where the baseline, which it is no better than, is 1.
        assert_eq!(o.bound(1, 0, 2, 3.1, 1.65), 1.0);
        // Below it stays.
        assert_eq!(o.bound(1, 0, 2, 3.1, 0.9), 0.9);
        // No better than the probe (ratio 1.7): held at or below 1.7.
        assert_eq!(o.bound(3, 0, 2, 1.7, 2.2), 1.7);
        // The probe is no worse: nothing said below.
        assert_eq!(o.bound(3, 0, 2, 1.7, 0.5), 0.5);
    }

    #[test]
    fn unordered_placements_and_contradicting_measurements_bound_nothing() {
        let o = naples_like();
        // More nodes than the baseline: some workloads lose there, some gain.
        assert_eq!(o.bound(2, 0, 1, 0.9, 2.5), 2.5);
        assert_eq!(o.bound(2, 0, 1, 0.9, 0.4), 0.4);
        // The baseline no better than the target and the target no better than the probe,
        // but the probe measured below the baseline: noise, so the forest stands.
        let line = Order::of(&ClassResources {
            placements: vec![
                placement("a", 1.0, 1.0, 1.0, 4.0, 1.0),
                placement("b", 1.0, 1.0, 1.0, 8.0, 1.0),
                placement("c", 1.0, 1.0, 1.0, 6.0, 1.0),
            ],
            ..naples_resources()
        });
        assert_eq!(line.bound(2, 0, 1, 0.95, 1.2), 1.2);
        assert_eq!(line.bound(2, 0, 1, 1.3, 1.5), 1.3);
        assert_eq!(line.bound(2, 0, 1, 1.3, 0.8), 1.0);
        // Nothing known (the model across sizes): nothing bounded.
        assert_eq!(Order::default().bound(2, 0, 1, 1.3, 7.0), 7.0);
    }

    fn naples_resources() -> ClassResources {
        ClassResources {
            machine: MachineResources {
                nodes: 8.0,
                packages: 2.0,
                l3: 16.0,
                cores: 48.0,
                threads_per_core: 2.0,
                interconnect: 5.0,
                measured_bandwidth: false,
                topology: "package:2 numa:8".into(),
            },
            placements: Vec::new(),
        }
    }
}
