//! Placements described by what they use of the machine, in terms that mean the same on any
//! machine (issue 29; docs/models.md, "Across classes").
//!
//! A per-size model knows placements by id, and the model across sizes by each concern's
//! score over the largest of its machine: neither carries over to another machine, whose
//! concerns and counts differ. What does carry over is the share of the machine a placement
//! takes (of its L3 caches, of its memory controllers, of its interconnect's aggregate
//! bandwidth), how far its vCPUs share cores, and how remote its memory is on average. A
//! workload bound by bandwidth, latency or a working set meets the same shares on any
//! machine, which is what lets one forest learn from many machine classes.
//!
//! The counts come from the machine model (placed-train counts them when it writes a data
//! file; the daemon counts its own host's the same way): this module is pure arithmetic
//! on them.

use serde::{Deserialize, Serialize};

/// What a machine has, counted the way its placements' use is counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineResources {
    /// NUMA nodes with CPUs: memory controllers.
    pub nodes: f64,
    /// Packages.
    pub packages: f64,
    /// L3 caches (NUMA nodes when the machine shows none).
    pub l3: f64,
    /// Cores.
    pub cores: f64,
    /// Hardware threads per core (1 without SMT).
    pub threads_per_core: f64,
    /// The interconnect score of all nodes together: their aggregate memory bandwidth in
    /// units of one node's.
    pub interconnect: f64,
    /// Whether the interconnect figures are the machine file's measured bandwidth rather
    /// than derived from the firmware's distances.
    pub measured_bandwidth: bool,
    /// A short description of the topology, for reports (e.g. `pack:2 numa:8 l3:16 core:64
    /// pu:2`).
    pub topology: String,
}

/// What one important placement uses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacementResources {
    /// The placement's id (one of the data header's).
    pub id: String,
    /// NUMA nodes in use.
    pub nodes: f64,
    /// Packages in use.
    pub packages: f64,
    /// L3 caches in use.
    pub l3: f64,
    /// Cores in use.
    pub cores: f64,
    /// Its interconnect score: the aggregate memory bandwidth of its nodes, in units of one
    /// node's.
    pub interconnect: f64,
}

/// A machine class's resources and every important placement's use of them: the
/// `resources` line of a data file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassResources {
    /// The machine.
    pub machine: MachineResources,
    /// One per important placement, in the header's order.
    pub placements: Vec<PlacementResources>,
}

/// Why resource counts cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResourcesError {
    /// A count that is not a positive number.
    #[error("{what} is {value}, not a positive number")]
    NotPositive {
        /// Which count.
        what: String,
        /// Its value.
        value: f64,
    },
    /// A placement using more than the machine has.
    #[error("placement {id} uses {used} {what}, the machine has {total}")]
    MoreThanTheMachine {
        /// The placement.
        id: String,
        /// Which resource.
        what: &'static str,
        /// Used.
        used: f64,
        /// The machine's.
        total: f64,
    },
    /// The placements are not the data's.
    #[error("the resources list placements {found}, the data's are {expected}")]
    OtherPlacements {
        /// The resources' ids.
        found: String,
        /// The header's.
        expected: String,
    },
}

impl ClassResources {
    /// Refuses counts no machine has, and placements other than `ids` (in that order).
    pub fn check(&self, ids: &[&str]) -> Result<(), ResourcesError> {
        let found: Vec<&str> = self.placements.iter().map(|p| p.id.as_str()).collect();
        if found != ids {
            return Err(ResourcesError::OtherPlacements {
                found: crate::json_error::clip(&found.join(","), 200),
                expected: crate::json_error::clip(&ids.join(","), 200),
            });
        }
        let m = &self.machine;
        let positive = |what: String, value: f64| {
            if value.is_finite() && value > 0.0 {
                Ok(())
            } else {
                Err(ResourcesError::NotPositive { what, value })
            }
        };
        for (what, value) in [
            ("the machine's nodes", m.nodes),
            ("the machine's packages", m.packages),
            ("the machine's l3", m.l3),
            ("the machine's cores", m.cores),
            ("the machine's threads_per_core", m.threads_per_core),
            ("the machine's interconnect", m.interconnect),
        ] {
            positive(what.to_owned(), value)?;
        }
        for p in &self.placements {
            for (what, used, total) in [
                ("nodes", p.nodes, m.nodes),
                ("packages", p.packages, m.packages),
                ("l3", p.l3, m.l3),
                ("cores", p.cores, m.cores),
                ("interconnect", p.interconnect, f64::INFINITY),
            ] {
                positive(format!("placement {}'s {what}", p.id), used)?;
                if used > total {
                    return Err(ResourcesError::MoreThanTheMachine {
                        id: p.id.clone(),
                        what,
                        used,
                        total,
                    });
                }
            }
        }
        Ok(())
    }
}

/// The kinds of resource a description is made of; leaving one out measures what it
/// carries (`placed-train classes evaluate`'s ablation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FeatureGroup {
    /// The share of the machine's L3 caches in use.
    Caches,
    /// The share of its memory controllers (NUMA nodes) in use.
    Memory,
    /// The share of its interconnect's aggregate bandwidth, and how much of each node's
    /// bandwidth the placement's nodes keep together.
    Interconnect,
    /// How far the vCPUs share cores.
    Smt,
    /// How much memory is remote, across nodes and across packages.
    Distances,
    /// The placement against the other placements of its size on its machine: its nodes,
    /// L3 caches and SMT sharing over the most any of them uses, its interconnect over the
    /// best on as many nodes. A container of one size meets a machine through the
    /// placements it can have, whatever the machine's total.
    Span,
}

/// What the placements of one size span on their machine, for [`FeatureGroup::Span`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Span {
    max_nodes: f64,
    max_l3: f64,
    /// The most vCPUs per core any placement has.
    max_per_core: f64,
    /// Per distinct node count, the best interconnect score on that many nodes.
    best_interconnect: Vec<(f64, f64)>,
}

impl Span {
    /// The span of `placements` for containers of `v` vCPUs.
    pub(crate) fn of(placements: &[PlacementResources], v: u32) -> Self {
        let most = |f: fn(&PlacementResources) -> f64| {
            placements.iter().map(f).fold(f64::MIN_POSITIVE, f64::max)
        };
        let mut best_interconnect: Vec<(f64, f64)> = Vec::new();
        for p in placements {
            match best_interconnect.iter_mut().find(|(n, _)| *n == p.nodes) {
                Some((_, best)) => *best = best.max(p.interconnect),
                None => best_interconnect.push((p.nodes, p.interconnect)),
            }
        }
        Self {
            max_nodes: most(|p| p.nodes),
            max_l3: most(|p| p.l3),
            max_per_core: placements
                .iter()
                .map(|p| f64::from(v) / p.cores)
                .fold(1.0, f64::max),
            best_interconnect,
        }
    }

    fn values(&self, p: &PlacementResources, v: u32) -> Vec<f64> {
        let per_core = f64::from(v) / p.cores;
        let shared = if self.max_per_core > 1.0 {
            ((per_core - 1.0) / (self.max_per_core - 1.0)).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let best = self
            .best_interconnect
            .iter()
            .find(|(n, _)| *n == p.nodes)
            .map_or(p.interconnect, |(_, b)| *b);
        vec![
            p.nodes / self.max_nodes,
            p.l3 / self.max_l3,
            shared,
            if best > 0.0 {
                p.interconnect / best
            } else {
                1.0
            },
        ]
    }
}

impl FeatureGroup {
    /// Every group, in description order.
    pub const ALL: [Self; 6] = [
        Self::Caches,
        Self::Memory,
        Self::Interconnect,
        Self::Smt,
        Self::Distances,
        Self::Span,
    ];

    /// Its name, as commands and reports spell it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Caches => "caches",
            Self::Memory => "memory",
            Self::Interconnect => "interconnect",
            Self::Smt => "smt",
            Self::Distances => "distances",
            Self::Span => "span",
        }
    }

    /// The values it contributes to a description.
    fn values(self, m: &MachineResources, p: &PlacementResources, v: u32, span: &Span) -> Vec<f64> {
        match self {
            Self::Caches => vec![p.l3 / m.l3],
            Self::Memory => vec![p.nodes / m.nodes],
            Self::Interconnect => vec![p.interconnect / m.interconnect, p.interconnect / p.nodes],
            Self::Smt => {
                let per_core = f64::from(v) / p.cores;
                let fill = if m.threads_per_core > 1.0 {
                    ((per_core - 1.0) / (m.threads_per_core - 1.0)).clamp(0.0, 1.0)
                } else {
                    0.0
                };
                vec![fill]
            }
            Self::Distances => vec![1.0 - 1.0 / p.nodes, 1.0 - 1.0 / p.packages],
            Self::Span => span.values(p, v),
        }
    }

    /// How many values it contributes.
    fn width(self) -> usize {
        match self {
            Self::Interconnect | Self::Distances => 2,
            Self::Span => 4,
            _ => 1,
        }
    }
}

/// Describes placements of any machine by the groups it keeps. A model across classes
/// stores it, so a machine it never saw is described as its training machines were.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceDescriber {
    /// The groups described, in [`FeatureGroup::ALL`] order.
    pub groups: Vec<FeatureGroup>,
}

impl Default for ResourceDescriber {
    fn default() -> Self {
        Self {
            groups: FeatureGroup::ALL.to_vec(),
        }
    }
}

impl ResourceDescriber {
    /// Every group but `left_out`.
    pub fn without(left_out: FeatureGroup) -> Self {
        Self {
            groups: FeatureGroup::ALL
                .into_iter()
                .filter(|&g| g != left_out)
                .collect(),
        }
    }

    /// `p`, a placement of `m` for containers of `v` vCPUs, described as if it were the
    /// only placement of its size ([`FeatureGroup::Span`] needs the others:
    /// [`Self::describe_all`]).
    pub fn describe(&self, m: &MachineResources, p: &PlacementResources, v: u32) -> Vec<f64> {
        self.describe_in(m, p, v, &Span::of(std::slice::from_ref(p), v))
    }

    fn describe_in(
        &self,
        m: &MachineResources,
        p: &PlacementResources,
        v: u32,
        span: &Span,
    ) -> Vec<f64> {
        self.groups
            .iter()
            .flat_map(|g| g.values(m, p, v, span))
            .collect()
    }

    /// Every placement of `r` described, in its order.
    pub fn describe_all(&self, r: &ClassResources, v: u32) -> Vec<Vec<f64>> {
        let span = Span::of(&r.placements, v);
        r.placements
            .iter()
            .map(|p| self.describe_in(&r.machine, p, v, &span))
            .collect()
    }

    /// How many values [`Self::describe`] gives.
    pub fn width(&self) -> usize {
        self.groups.iter().map(|g| g.width()).sum()
    }
}

/// What `machine` has and each placement of `set` uses of it, counted by the machine
/// model (`placed_core::placement::usage`): what placed-train writes into training data and
/// what the daemon describes its own host with.
#[cfg(feature = "machine")]
pub fn of_machine(
    machine: &placed_core::machine::Machine,
    set: &placed_core::placement::PlacementSet,
) -> Result<ClassResources, placed_core::machine::InterconnectError> {
    let (m, placements) = placed_core::placement::usage::usage(machine, set)?;
    Ok(ClassResources {
        machine: MachineResources {
            nodes: m.nodes,
            packages: m.packages,
            l3: m.l3,
            cores: m.cores,
            threads_per_core: m.threads_per_core,
            interconnect: m.interconnect,
            measured_bandwidth: m.measured_bandwidth,
            topology: m.topology,
        },
        placements: placements
            .into_iter()
            .map(|p| PlacementResources {
                id: p.id,
                nodes: p.nodes,
                packages: p.packages,
                l3: p.l3,
                cores: p.cores,
                interconnect: p.interconnect,
            })
            .collect(),
    })
}

/// How alike two machines are, for choosing which held-out class's verdict a new machine
/// inherits: node, package and L3 counts on a log scale, and SMT.
pub fn machine_shape(m: &MachineResources) -> Vec<f64> {
    vec![
        m.nodes.log2(),
        m.packages.log2(),
        (m.l3 / m.nodes).log2(),
        m.threads_per_core.log2(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn machine(nodes: f64, packages: f64, smt: f64) -> MachineResources {
        MachineResources {
            nodes,
            packages,
            l3: nodes * 2.0,
            cores: nodes * 8.0,
            threads_per_core: smt,
            interconnect: nodes * 0.8,
            measured_bandwidth: false,
            topology: "test".into(),
        }
    }

    fn placement(nodes: f64, packages: f64, cores: f64) -> PlacementResources {
        PlacementResources {
            id: format!("n{nodes}-c{cores}"),
            nodes,
            packages,
            l3: nodes * 2.0,
            cores,
            interconnect: if nodes > 1.0 { nodes * 0.8 } else { 1.0 },
        }
    }

    #[test]
    fn half_of_any_machine_is_described_alike() {
        let d = ResourceDescriber::default();
        // Half the nodes of a 2-node machine and of an 8-node one, no SMT sharing on either.
        let small = d.describe(&machine(2.0, 2.0, 2.0), &placement(1.0, 1.0, 8.0), 8);
        let large = d.describe(&machine(8.0, 4.0, 2.0), &placement(4.0, 2.0, 32.0), 32);
        assert_eq!(small.len(), d.width());
        assert_eq!(small[0], large[0], "L3 share");
        assert_eq!(small[1], large[1], "node share");
        assert_eq!(small[4], 0.0, "no vCPU shares a core");
        // But memory is remote on the larger one and not on the smaller.
        assert_eq!(small[5], 0.0);
        assert!(large[5] > 0.7, "{large:?}");
    }

    #[test]
    fn smt_fill_is_the_share_of_the_core_s_threads_in_use() {
        let d = ResourceDescriber {
            groups: vec![FeatureGroup::Smt],
        };
        let m4 = machine(1.0, 1.0, 4.0);
        assert_eq!(d.describe(&m4, &placement(1.0, 1.0, 2.0), 8), [1.0]);
        assert_eq!(d.describe(&m4, &placement(1.0, 1.0, 4.0), 8), [1.0 / 3.0]);
        assert_eq!(
            d.describe(&machine(1.0, 1.0, 1.0), &placement(1.0, 1.0, 8.0), 8),
            [0.0],
            "no SMT: nothing shared"
        );
    }

    #[test]
    fn leaving_a_group_out_removes_its_values() {
        let all = ResourceDescriber::default();
        let without = ResourceDescriber::without(FeatureGroup::Interconnect);
        assert_eq!(without.width(), all.width() - 2);
        let m = machine(4.0, 2.0, 2.0);
        let p = placement(2.0, 1.0, 8.0);
        let full = all.describe(&m, &p, 16);
        let less = without.describe(&m, &p, 16);
        assert_eq!(&less[..2], &full[..2]);
        assert_eq!(&less[2..], &full[4..]);
    }

    #[test]
    fn span_places_each_placement_among_those_of_its_size() {
        let d = ResourceDescriber {
            groups: vec![FeatureGroup::Span],
        };
        let r = ClassResources {
            machine: machine(4.0, 2.0, 2.0),
            // One node with every thread of 4 cores, two nodes, four nodes; 8 vCPUs.
            placements: vec![
                placement(1.0, 1.0, 4.0),
                placement(2.0, 1.0, 8.0),
                placement(4.0, 2.0, 8.0),
            ],
        };
        let described = d.describe_all(&r, 8);
        assert_eq!(described[0], [0.25, 0.25, 1.0, 1.0]);
        assert_eq!(described[1], [0.5, 0.5, 0.0, 1.0]);
        assert_eq!(described[2], [1.0, 1.0, 0.0, 1.0]);
    }

    #[test]
    fn counts_no_machine_has_are_refused() {
        let m = machine(2.0, 1.0, 2.0);
        let good = ClassResources {
            machine: m.clone(),
            placements: vec![placement(1.0, 1.0, 8.0), placement(2.0, 1.0, 16.0)],
        };
        good.check(&["n1-c8", "n2-c16"]).unwrap();
        assert!(matches!(
            good.check(&["n2-c16", "n1-c8"]),
            Err(ResourcesError::OtherPlacements { .. })
        ));
        let mut more = good.clone();
        more.placements[1].nodes = 3.0;
        assert_eq!(
            more.check(&["n1-c8", "n2-c16"]).unwrap_err().to_string(),
            "placement n2-c16 uses 3 nodes, the machine has 2"
        );
        let mut nan = good;
        nan.machine.l3 = f64::NAN;
        assert!(matches!(
            nan.check(&["n1-c8", "n2-c16"]),
            Err(ResourcesError::NotPositive { .. })
        ));
    }
}
