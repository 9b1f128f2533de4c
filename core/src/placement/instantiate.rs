//! Finding a concrete instance of an important placement on the units that are free.
//!
//! An important placement is a score vector; the list shows it on the lowest-numbered
//! units, but when other containers hold those, any unit set with the same scores performs
//! the same (thesis §2.2.2). Small machines are searched exhaustively (lowest-numbered match
//! first); large ones by the bounded search's greedy constructions seeded at every free unit.

use crate::cpuset::{CpuSet, NodeSet};
use crate::machine::{Machine, Scope};

use super::blocks::{Evaluator, Mask, units_of};
use super::search::{self, next_combination};
use super::shape::Shape;
use super::{Placement, PlacementError};

/// Combinations examined before switching to greedy constructions.
const EXHAUSTIVE_LIMIT: usize = 200_000;

/// A unit set realising `placement` using only `available` units (indices into
/// [`Machine::units`]), or `None` when none does.
pub fn instantiate(
    m: &Machine,
    v: usize,
    placement: &Placement,
    available: &[usize],
) -> Result<Option<Placement>, PlacementError> {
    let n = placement.units.len();
    if n == 0 || available.len() < n || v % n != 0 {
        return Ok(None);
    }
    let mut ev = Evaluator::new(Shape::new(m), v);
    let sigs = ev.signatures(n).to_vec();
    let u = m.hierarchy.unit_level;
    // The signature is recovered from the below-unit scores.
    let Some(sig_index) = sigs.iter().position(|sig| {
        let inner = Shape::inner_scores(n, sig);
        m.concerns
            .iter()
            .zip(&placement.scores)
            .all(|(c, &s)| match c.scope {
                Scope::Below { level } => crate::machine::milli(inner[level - u - 1] as f64) == s,
                _ => true,
            })
    }) else {
        return Ok(None);
    };
    let matches = |ev: &mut Evaluator<'_>, mask: Mask| -> Result<bool, PlacementError> {
        let Some(b) = ev.block(mask)? else {
            return Ok(false);
        };
        Ok(b.sigs.contains(&sig_index)
            && m.concerns
                .iter()
                .zip(&b.node_scores)
                .zip(&placement.scores)
                .all(|((_, node), &s)| node.is_none_or(|x| x == s)))
    };

    let mut found: Option<Mask> = None;
    if binomial(available.len(), n) <= EXHAUSTIVE_LIMIT {
        let mut combo: Vec<usize> = (0..n).collect();
        loop {
            let mask = combo
                .iter()
                .fold(0 as Mask, |acc, &i| acc | (1 << available[i]));
            if matches(&mut ev, mask)? {
                found = Some(mask);
                break;
            }
            if !next_combination(&mut combo, available.len()) {
                break;
            }
        }
    } else {
        let free = available.iter().fold(0 as Mask, |acc, &u| acc | (1 << u));
        'seeds: for &x in available {
            for mask in search::constructions(&mut ev, x, free, n) {
                if matches(&mut ev, mask)? {
                    found = Some(mask);
                    break 'seeds;
                }
            }
        }
    }
    let Some(mask) = found else {
        return Ok(None);
    };
    let units = units_of(mask);
    let load = v / n;
    let sig = &sigs[sig_index];
    let mut cpus = CpuSet::new();
    for &unit in &units {
        if let Some(p) = ev.shape.choose(unit, load, sig) {
            cpus = cpus.union(&p);
        }
    }
    let mems = units
        .iter()
        .fold(NodeSet::new(), |acc, &unit| acc.union(&m.units[unit].mems));
    Ok(Some(Placement {
        id: placement.id.clone(),
        units,
        scores: placement.scores.clone(),
        cpus,
        mems,
    }))
}

fn binomial(n: usize, k: usize) -> usize {
    let k = k.min(n.saturating_sub(k));
    let mut r: usize = 1;
    for i in 0..k {
        r = r.saturating_mul(n - i) / (i + 1);
    }
    r
}
