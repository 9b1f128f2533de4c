//! Important placements (docs/design.md, "Important placements"; thesis §2.3, algorithms 1-3 generalised to any
//! depth of hierarchy).
//!
//! For a container of `v` vCPUs: blocks of allocation units that split `v` evenly
//! ([`blocks`]), packings of the machine by blocks ([`search`]), Pareto filtering of the
//! packings on their interconnect scores ([`pareto`]), then expansion of each block downward
//! through the levels below the unit ([`shape`]). The result lists each distinct score
//! vector once, with a stable id and one concrete PU set and memory-node set.

mod blocks;
mod id;
mod instantiate;
mod pareto;
mod search;
mod shape;
pub mod usage;

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::cpuset::{CpuSet, NodeSet};
use crate::machine::{InterconnectError, Machine, Scope};

pub use blocks::MAX_UNITS;
pub use id::format_score;
pub use instantiate::instantiate;
pub use search::Limits;

use blocks::{Block, Evaluator, units_of};
use search::Packings;
use shape::{Shape, Signature};

/// One important placement.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Placement {
    /// Stable across runs and hosts of one machine class: derived from the scores.
    pub id: String,
    /// Allocation units used, by index into [`Machine::units`].
    pub units: Vec<usize>,
    /// One score per concern of the machine, in thousandths.
    pub scores: Vec<i64>,
    pub cpus: CpuSet,
    pub mems: NodeSet,
}

/// How the list was obtained.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Search {
    /// Every packing was examined.
    Exact { steps: usize },
    /// The packings examined were bounded; `bound` says how.
    Bounded { bound: String },
}

impl Search {
    pub fn is_exact(&self) -> bool {
        matches!(self, Self::Exact { .. })
    }
}

/// The important placements of one machine for one `v`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PlacementSet {
    pub vcpus: usize,
    pub fingerprint: String,
    /// Concern names, the order of every placement's `scores`.
    pub concerns: Vec<String>,
    pub placements: Vec<Placement>,
    pub search: Search,
    /// Pareto-efficient packings the placements come from (unit indices), for inspection.
    pub packings: Vec<Vec<Vec<usize>>>,
    /// Whether the packings cover every allocation unit (the thesis's packings). False when
    /// no exact cover exists for this `v`: the packings then leave units that no block fits.
    pub covers: bool,
}

impl Placement {
    /// The scores as data files and models hold them: whole units, not thousandths.
    pub fn scores_in_units(&self) -> Vec<f64> {
        self.scores.iter().map(|&s| s as f64 / 1000.0).collect()
    }
}

impl PlacementSet {
    pub fn get(&self, id: &str) -> Option<&Placement> {
        self.placements.iter().find(|p| p.id == id)
    }
}

/// Input for which no placement exists. All are the caller's input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlacementError {
    #[error("a container needs at least one vCPU (got 0)")]
    ZeroVcpus,
    #[error("{v} vCPUs do not fit: the machine has {usable} usable PUs")]
    TooManyVcpus { v: usize, usable: usize },
    #[error("no balanced placement for {v} vCPUs: {why}")]
    Unbalanced { v: usize, why: String },
    #[error(
        "the machine has {units} allocation units; the placement search handles at most {MAX_UNITS} (choose a coarser allocation_unit in the machine file)"
    )]
    TooManyUnits { units: usize },
    #[error(transparent)]
    Interconnect(#[from] InterconnectError),
}

/// The important placements of `m` for `v` vCPUs, with the default search limits.
pub fn important_placements(m: &Machine, v: usize) -> Result<PlacementSet, PlacementError> {
    important_placements_with(m, v, &Limits::default())
}

pub fn important_placements_with(
    m: &Machine,
    v: usize,
    limits: &Limits,
) -> Result<PlacementSet, PlacementError> {
    check_size(m, v)?;
    let mut ev = Evaluator::new(Shape::new(m), v);
    let (search, frontier) = search_packings(m, &mut ev, limits)?;
    let (packings, covers) = frontier.finish();
    if packings.is_empty() {
        return Err(PlacementError::Unbalanced {
            v,
            why: unbalanced_reason(m, v),
        });
    }
    let important = important_signatures(m, &mut ev, &packings);
    let canonical = canonical_units(m, &mut ev, &important);
    let mut placements = realise(m, &ev, v, important, canonical);
    placements.sort_by_key(|p| sort_key(m, p));
    Ok(PlacementSet {
        vcpus: v,
        fingerprint: m.fingerprint().to_owned(),
        concerns: m.concerns.iter().map(|c| c.name.clone()).collect(),
        placements,
        search,
        packings: packings
            .iter()
            .map(|p| p.iter().map(|b| units_of(b.mask)).collect())
            .collect(),
        covers,
    })
}

fn check_size(m: &Machine, v: usize) -> Result<(), PlacementError> {
    if v == 0 {
        return Err(PlacementError::ZeroVcpus);
    }
    let usable = m.pus.usable.len();
    if v > usable {
        return Err(PlacementError::TooManyVcpus { v, usable });
    }
    if m.units.len() > MAX_UNITS {
        return Err(PlacementError::TooManyUnits {
            units: m.units.len(),
        });
    }
    Ok(())
}

/// The Pareto-efficient packings: exact where the machine is small enough and the search
/// stays within its budget, else the bounded search, which says why.
fn search_packings(
    m: &Machine,
    ev: &mut Evaluator,
    limits: &Limits,
) -> Result<(Search, Packings), PlacementError> {
    let mut frontier = Packings::default();
    let exact = if m.units.len() <= limits.max_exact_units {
        search::exact(ev, limits, &mut frontier)?
    } else {
        None
    };
    if let Some(steps) = exact {
        return Ok((Search::Exact { steps }, frontier));
    }
    let why = if m.units.len() > limits.max_exact_units {
        format!(
            "{} units exceed the exact search's limit of {}",
            m.units.len(),
            limits.max_exact_units
        )
    } else {
        format!(
            "the exact search ran past its budget of {} steps",
            limits.exact_budget
        )
    };
    let mut frontier = Packings::default();
    let beam = search::bounded(ev, limits, &mut frontier)?;
    let search = Search::Bounded {
        bound: format!("bounded: {why}; {beam}"),
    };
    Ok((search, frontier))
}

/// The score vector of a block filled with one signature: node-level scores from the
/// block, the concerns below the unit from the signature.
fn scores_of(m: &Machine, block: &Block, sig: &[usize]) -> Vec<i64> {
    let u = m.hierarchy.unit_level;
    let inner = Shape::inner_scores(block.n, sig);
    m.concerns
        .iter()
        .zip(&block.node_scores)
        .map(|(c, node)| match (&c.scope, node) {
            (Scope::Below { level }, _) => crate::machine::milli(inner[level - u - 1] as f64),
            (_, Some(score)) => *score,
            (_, None) => 0,
        })
        .collect()
}

/// Every block of every efficient packing expanded by the signatures that fit it, keyed by
/// score vector, without those dominated below the unit.
fn important_signatures(
    m: &Machine,
    ev: &mut Evaluator,
    packings: &[Vec<Rc<Block>>],
) -> BTreeMap<Vec<i64>, Signature> {
    let mut important = BTreeMap::new();
    for block in packings.iter().flatten() {
        let sigs = ev.signatures(block.n).to_vec();
        for &s in &block.sigs {
            important.insert(scores_of(m, block, &sigs[s]), sigs[s].clone());
        }
    }
    drop_dominated_inner(m, important)
}

/// Placements with equal scores are interchangeable (thesis §2.2.2): each is shown on the
/// lowest-numbered units that realise it, among every block the search evaluated.
fn canonical_units(
    m: &Machine,
    ev: &mut Evaluator,
    important: &BTreeMap<Vec<i64>, Signature>,
) -> BTreeMap<Vec<i64>, Vec<usize>> {
    let mut canonical: BTreeMap<Vec<i64>, Vec<usize>> = BTreeMap::new();
    let evaluated: Vec<_> = ev.evaluated().cloned().collect();
    for block in evaluated {
        let sigs = ev.signatures(block.n).to_vec();
        let units = units_of(block.mask);
        for &s in &block.sigs {
            let scores = scores_of(m, &block, &sigs[s]);
            if important.contains_key(&scores)
                && canonical.get(&scores).is_none_or(|old| units < *old)
            {
                canonical.insert(scores, units.clone());
            }
        }
    }
    canonical
}

/// Concrete PU and memory-node sets for each important score vector.
fn realise(
    m: &Machine,
    ev: &Evaluator,
    v: usize,
    important: BTreeMap<Vec<i64>, Signature>,
    mut canonical: BTreeMap<Vec<i64>, Vec<usize>>,
) -> Vec<Placement> {
    let mut placements = Vec::new();
    for (scores, sig) in important {
        let Some(units) = canonical.remove(&scores) else {
            continue;
        };
        let load = v / units.len();
        let mut cpus = CpuSet::new();
        for &unit in &units {
            // Every unit of the block was checked to fit this signature.
            if let Some(pus) = ev.shape.choose(unit, load, &sig) {
                cpus = cpus.union(&pus);
            }
        }
        let mems = units
            .iter()
            .fold(NodeSet::new(), |acc, &unit| acc.union(&m.units[unit].mems));
        placements.push(Placement {
            id: id::placement_id(m, &scores),
            units,
            scores,
            cpus,
            mems,
        });
    }
    placements
}

/// Fewer units first, then each concern in order, larger first where larger is always better.
fn sort_key(m: &Machine, p: &Placement) -> Vec<i64> {
    std::iter::once(p.units.len() as i64)
        .chain(
            m.concerns
                .iter()
                .zip(&p.scores)
                .map(|(c, &s)| if c.filterable() { -s } else { s }),
        )
        .collect()
}

/// Below the unit, a concern a machine file marked "never helps when lower, never saves
/// cost" filters like the interconnect does above it: among placements equal on every other
/// concern, only the highest score on it survives.
fn drop_dominated_inner(
    m: &Machine,
    vectors: BTreeMap<Vec<i64>, Vec<usize>>,
) -> BTreeMap<Vec<i64>, Vec<usize>> {
    let inner_filt: Vec<bool> = m
        .concerns
        .iter()
        .map(|c| !c.node_level() && c.filterable())
        .collect();
    if !inner_filt.iter().any(|&f| f) {
        return vectors;
    }
    let dominated = |a: &Vec<i64>, b: &Vec<i64>| {
        a != b
            && a.iter()
                .zip(b)
                .zip(&inner_filt)
                .all(|((x, y), &f)| if f { x <= y } else { x == y })
    };
    vectors
        .iter()
        .filter(|(a, _)| !vectors.keys().any(|b| dominated(a, b)))
        .map(|(a, s)| (a.clone(), s.clone()))
        .collect()
}

/// Why no block exists, in the terms an operator can act on.
fn unbalanced_reason(m: &Machine, v: usize) -> String {
    let h = &m.hierarchy;
    let unit = m.unit_level();
    let counts: Vec<String> = (1..=m.units.len())
        .filter(|n| v % n == 0)
        .map(|n| n.to_string())
        .collect();
    let loads: Vec<String> = (1..=m.units.len())
        .filter(|n| v % n == 0)
        .map(|n| (v / n).to_string())
        .collect();
    let (lo, hi) = unit.capacity();
    let unit_pus = if lo == hi {
        format!("{hi} PUs")
    } else {
        format!("{lo}-{hi} PUs")
    };
    let inside: Vec<String> = (h.unit_level + 1..h.levels.len())
        .map(|l| {
            let per_parent = h.levels[l - 1]
                .instances
                .iter()
                .map(|i| i.children.len())
                .max()
                .unwrap_or(0);
            let (_, cap) = h.levels[l].capacity();
            format!("{per_parent} x {} of up to {cap} PUs", h.levels[l].name)
        })
        .collect();
    let inside = if inside.is_empty() {
        String::new()
    } else {
        format!(" ({})", inside.join(", each with "))
    };
    format!(
        "it divides evenly over {} of the {} {} units, which would each carry {} vCPUs, and no unit ({unit_pus}{inside}) can spread that evenly with at most one vCPU per PU",
        counts.join(" or "),
        m.units.len(),
        unit.name,
        loads.join(" or "),
    )
}

#[cfg(test)]
mod tests;
