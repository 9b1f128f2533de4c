//! Blocks: the unit sets one container can occupy, with their node-level scores.
//!
//! A block is valid when its size divides `v`, it is balanced on every level above the
//! unit, and at least one signature fits in every one of its units. Blocks are evaluated
//! once and memoised: the packing search asks for the same sets many times.

use std::collections::HashMap;
use std::rc::Rc;

use crate::machine::{InterconnectError, Scope, milli};

use super::shape::{Shape, Signature};

/// A set of units as a bitmask (unit `i` is bit `i`).
pub type Mask = u128;

/// The most allocation units the search handles (the width of [`Mask`]).
pub const MAX_UNITS: usize = 128;

pub fn units_of(mask: Mask) -> Vec<usize> {
    (0..MAX_UNITS).filter(|&i| mask & (1 << i) != 0).collect()
}

/// A valid block and what the search needs to know about it.
#[derive(Debug, Clone)]
pub struct Block {
    pub mask: Mask,
    pub n: usize,
    /// Scores of every concern, in thousandths, where they depend on the units alone;
    /// `None` for concerns below the unit (they depend on the signature).
    pub node_scores: Vec<Option<i64>>,
    /// Indices into [`Evaluator::signatures`]`(n)` that fit in every unit of the block.
    pub sigs: Vec<usize>,
    /// Blocks with equal keys are interchangeable for Pareto filtering.
    pub key: BlockKey,
    /// Scores of node-level concerns where more is always better (interconnect).
    pub filt: Vec<i64>,
}

/// What must be equal for two blocks to be compared on their filterable scores: the size,
/// the node-level scores that can cost or help when lower, and the signatures that fit.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockKey {
    pub n: usize,
    pub fixed: Vec<i64>,
    pub sigs: Vec<usize>,
}

pub struct Evaluator<'m> {
    pub shape: Shape<'m>,
    pub v: usize,
    sigs: HashMap<usize, Vec<Signature>>,
    fits: HashMap<(usize, usize), Vec<bool>>,
    memo: HashMap<Mask, Option<Rc<Block>>>,
    /// Whether each concern is a node-level one where more is always better.
    filterable: Vec<bool>,
}

impl std::fmt::Debug for Evaluator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Evaluator")
            .field("v", &self.v)
            .field("memo", &self.memo.len())
            .finish()
    }
}

impl<'m> Evaluator<'m> {
    pub fn new(shape: Shape<'m>, v: usize) -> Self {
        let filterable = shape
            .m
            .concerns
            .iter()
            .map(|c| c.node_level() && c.filterable())
            .collect();
        Self {
            shape,
            v,
            sigs: HashMap::new(),
            fits: HashMap::new(),
            memo: HashMap::new(),
            filterable,
        }
    }

    /// Block sizes that divide `v` (fitting is checked per block).
    pub fn sizes(&self) -> Vec<usize> {
        (1..=self.shape.units().min(self.v))
            .filter(|n| self.v % n == 0)
            .collect()
    }

    pub fn signatures(&mut self, n: usize) -> &[Signature] {
        let load = self.v / n;
        let shape = &self.shape;
        self.sigs.entry(n).or_insert_with(|| shape.signatures(load))
    }

    /// Which of the signatures for size `n` fit in `unit`.
    fn unit_fits(&mut self, unit: usize, n: usize) -> &[bool] {
        if !self.fits.contains_key(&(unit, n)) {
            let load = self.v / n;
            let sigs = self.signatures(n).to_vec();
            let f = sigs
                .iter()
                .map(|s| self.shape.choose(unit, load, s).is_some())
                .collect();
            self.fits.insert((unit, n), f);
        }
        self.fits.get(&(unit, n)).map_or(&[], |v| v.as_slice())
    }

    /// Whether a unit can hold its share of a block of `n` under some signature.
    pub fn unit_can_host(&mut self, unit: usize, n: usize) -> bool {
        self.unit_fits(unit, n).iter().any(|&f| f)
    }

    /// Every valid block evaluated so far.
    pub fn evaluated(&self) -> impl Iterator<Item = &Rc<Block>> {
        self.memo.values().flatten()
    }

    /// The block for a unit set, or `None` if the set is not a valid block.
    pub fn block(&mut self, mask: Mask) -> Result<Option<Rc<Block>>, InterconnectError> {
        if let Some(b) = self.memo.get(&mask) {
            return Ok(b.clone());
        }
        let b = self.evaluate(mask)?.map(Rc::new);
        self.memo.insert(mask, b.clone());
        Ok(b)
    }

    fn evaluate(&mut self, mask: Mask) -> Result<Option<Block>, InterconnectError> {
        let units = units_of(mask);
        let n = units.len();
        if n == 0 || self.v % n != 0 {
            return Ok(None);
        }
        let Some(outer) = self.shape.outer_scores(&units) else {
            return Ok(None);
        };
        let count = self.signatures(n).len();
        let mut sigs: Vec<usize> = (0..count).collect();
        for &u in &units {
            let fits = self.unit_fits(u, n).to_vec();
            sigs.retain(|&s| fits[s]);
            if sigs.is_empty() {
                return Ok(None);
            }
        }
        let mut numa: Vec<usize> = units
            .iter()
            .flat_map(|&u| self.shape.numa_of[u].iter().copied())
            .collect();
        numa.sort_unstable();
        numa.dedup();
        let m = self.shape.m;
        let mut node_scores = Vec::with_capacity(m.concerns.len());
        for c in &m.concerns {
            node_scores.push(match &c.scope {
                Scope::Unit { .. } => Some(milli(n as f64)),
                Scope::Above { level } => Some(milli(outer[*level] as f64)),
                Scope::Below { .. } => None,
                Scope::Interconnect => Some(milli(m.interconnect.score(&numa, &m.numa_os)?)),
                Scope::NodeWeights { weights } => Some(milli(
                    numa.iter()
                        .map(|p| weights.get(p).copied().unwrap_or(0.0))
                        .sum(),
                )),
            });
        }
        let mut fixed = Vec::new();
        let mut filt = Vec::new();
        for (score, &f) in node_scores.iter().zip(&self.filterable) {
            if let Some(s) = score {
                if f { filt.push(*s) } else { fixed.push(*s) }
            }
        }
        Ok(Some(Block {
            mask,
            n,
            node_scores,
            key: BlockKey {
                n,
                fixed,
                sigs: sigs.clone(),
            },
            sigs,
            filt,
        }))
    }
}
