//! Scheduling concerns (thesis §2.3, table 2.1): one per shared resource whose degree of
//! sharing can change a container's performance, each with a score function and two flags.
//!
//! Defaults, generalising table 2.1 to any hierarchy:
//!
//! | concern | score | lower score can lower cost | can raise performance |
//! |---|---|---|---|
//! | allocation unit (NUMA node) | units in use | yes: fewer units, more containers | yes |
//! | levels below it (L3 per CCX, L2, SMT core) | instances in use | yes | yes (cache sharing) |
//! | levels above it (package, group, shared L3 across SNC nodes) | instances in use | no: units are what is allocated | yes (locality) |
//! | interconnect | aggregate bandwidth of the nodes in use | no | no |
//!
//! A concern with both flags false is one where more is always better at equal cost, so
//! placements worse on it are dominated and filtered (the interconnect, by default).

use std::collections::BTreeMap;

use super::hierarchy::Hierarchy;

/// Scores are compared and hashed in thousandths: bandwidths are real numbers, and two
/// placements whose interconnect scores differ below that are the same placement.
pub fn milli(x: f64) -> i64 {
    // Scores are small (counts, GB/s): far inside i64 after scaling.
    #[allow(clippy::cast_possible_truncation)]
    let v = (x * 1000.0).round() as i64;
    v
}

/// Where a concern's score comes from.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Scope {
    /// Instances in use of a level above the allocation unit.
    Above { level: usize },
    /// Allocation units in use.
    Unit { level: usize },
    /// Instances in use of a level below the allocation unit.
    Below { level: usize },
    /// Aggregate bandwidth between the NUMA nodes in use.
    Interconnect,
    /// Sum of per-NUMA-node weights (keyed by position in the NUMA level).
    NodeWeights { weights: BTreeMap<usize, f64> },
}

/// One scheduling concern.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Concern {
    /// Short unique name, used in placement ids: `numa`, `package`, `l3`, `core`, `ic`.
    pub name: String,
    /// What people read: the hwloc levels it stands for.
    pub title: String,
    pub scope: Scope,
    /// Instances of the resource on the machine (NUMA nodes for the interconnect).
    pub count: usize,
    /// PUs per instance (smallest, largest); absent for the interconnect and weights.
    pub capacity: Option<(usize, usize)>,
    pub lower_cost: bool,
    pub lower_can_raise_perf: bool,
    /// What the score measures, in words.
    pub score: String,
}

impl Concern {
    /// Higher is always better at equal cost: placements worse on it are dominated.
    pub fn filterable(&self) -> bool {
        !self.lower_cost && !self.lower_can_raise_perf
    }

    /// Whether the score is a function of the NUMA nodes alone (packing-level concerns).
    pub fn node_level(&self) -> bool {
        matches!(
            self.scope,
            Scope::Above { .. }
                | Scope::Unit { .. }
                | Scope::Interconnect
                | Scope::NodeWeights { .. }
        )
    }
}

/// Derives the default concerns, in score-vector order: allocation unit, the levels above it
/// from nearest to farthest, the levels below it from coarsest to finest, interconnect.
pub fn derive(h: &Hierarchy, numa_nodes: usize, interconnect: Option<String>) -> Vec<Concern> {
    let mut out = Vec::new();
    let level_concern = |idx: usize, scope: Scope, lower_cost: bool| {
        let l = &h.levels[idx];
        Concern {
            name: l.name.clone(),
            title: l.merged.join(" + "),
            scope,
            count: l.instances.len(),
            capacity: Some(l.capacity()),
            lower_cost,
            lower_can_raise_perf: true,
            score: format!("{} instances in use", l.merged.join("+")),
        }
    };
    let u = h.unit_level;
    out.push(level_concern(u, Scope::Unit { level: u }, true));
    for idx in (0..u).rev() {
        if h.levels[idx].instances.len() > 1 {
            out.push(level_concern(idx, Scope::Above { level: idx }, false));
        }
    }
    for idx in u + 1..h.levels.len() {
        out.push(level_concern(idx, Scope::Below { level: idx }, true));
    }
    if let (Some(source), true) = (interconnect, numa_nodes > 1) {
        out.push(Concern {
            name: "ic".into(),
            title: "Interconnect".into(),
            scope: Scope::Interconnect,
            count: numa_nodes,
            capacity: None,
            lower_cost: false,
            lower_can_raise_perf: false,
            score: format!("aggregate bandwidth of the NUMA nodes in use ({source})"),
        });
    }
    out
}
