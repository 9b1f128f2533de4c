//! Packings: ways to fill the machine with disjoint blocks of one container size each
//! (thesis algorithm 2), found exactly or, on large machines, by a bounded search.
//!
//! A packing is an exact cover of the allocation units by disjoint blocks, as the thesis
//! requires. Some machines have none (5 nodes and blocks of 2, or 4 nodes of 8 PUs and 24
//! vCPUs split 3 + 1 with no 1-node block): then, and only then, the *maximal* packings
//! (blocks whose leftover units cannot hold another block) are used instead, and the
//! result says so.
//!
//! Exact search enumerates set partitions with "unused" allowed, canonically (the block
//! taken next always contains the lowest free unit, so each packing appears once). Their
//! number grows like the Bell numbers (4,140 partitions of 8 nodes, about 4e17 of 24), so the
//! search counts its steps and gives up past a budget, and large machines go to the bounded
//! search: a beam search over homogeneous packings (every block of one shape), whose blocks
//! are built greedily around the lowest free unit under three orders (nearest first, hwloc
//! order, farthest first) and whose beam is ranked by three objectives (sum, minimum and
//! maximum of the blocks' interconnect scores), to reach the several ends of the frontier.
//! What a homogeneous packing leaves over is then filled greedily with other blocks, so
//! that mixed covers are found too.

use std::rc::Rc;

use crate::machine::InterconnectError;

use super::blocks::{Block, Evaluator, MAX_UNITS, Mask, units_of};
use super::pareto::Frontier;

/// The Pareto-efficient packings found so far: exact covers, and apart from them maximal
/// packings that leave units over, which count only when no cover exists at all.
#[derive(Debug, Default)]
pub struct Packings {
    covers: Frontier,
    partial: Frontier,
    any_cover: bool,
}

impl Packings {
    fn offer(&mut self, blocks: Vec<Rc<Block>>, leftover: Mask) {
        if leftover == 0 {
            self.any_cover = true;
            self.covers.offer(blocks);
        } else if !self.any_cover {
            self.partial.offer(blocks);
        }
    }

    /// The kept packings, and whether they are exact covers.
    pub fn finish(self) -> (Vec<Vec<Rc<Block>>>, bool) {
        if self.any_cover {
            (self.covers.into_packings(), true)
        } else {
            (self.partial.into_packings(), false)
        }
    }
}

/// How hard the exact search may try before the bounded one takes over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Machines with more allocation units than this skip the exact search.
    pub max_exact_units: usize,
    /// Search steps (block evaluations plus recursion steps) the exact search may take.
    pub exact_budget: usize,
    /// States kept per step of the bounded search, per objective.
    pub beam_width: usize,
}

impl Default for Limits {
    /// Exact up to 8 units always fits: the worst case, every block size legal, is about
    /// 1.3e5 steps (partitions of 9 elements, one standing for "unused", plus the 255 block
    /// evaluations). A budget spent is wasted before the bounded search runs, so it must
    /// stay well under the 100 ms target: the packing walk managed about 9 million steps a
    /// second in release on this project's 2-core VM with the other core busy, so 5e5 steps
    /// cost about 55 ms at worst. 2e6 took 150-225 ms on 12- and 16-node synthetic
    /// machines before falling back.
    fn default() -> Self {
        Self {
            max_exact_units: 16,
            exact_budget: 500_000,
            beam_width: 8,
        }
    }
}

/// A block evaluation (balance, signatures, interconnect score, memo) costs about as much as
/// 80 steps of the packing walk (release, this project's VM: 12,870 blocks of 8 of 16 nodes
/// take about 55 ms); the budget charges it so, and steps count in walk steps.
const EVAL_COST: usize = 64;

/// `n` choose `k`, saturating at `usize::MAX`.
pub(super) fn binomial(n: usize, k: usize) -> usize {
    if k > n {
        return 0;
    }
    let k = k.min(n - k);
    let mut acc: u128 = 1;
    for i in 0..k {
        // Exact at every step: acc is C(n, i) before, C(n, i + 1) after.
        let Some(next) = acc.checked_mul((n - i) as u128) else {
            return usize::MAX;
        };
        acc = next / (i as u128 + 1);
    }
    usize::try_from(acc).unwrap_or(usize::MAX)
}

/// Enumerates every exact cover (or, failing any, every maximal packing) into `frontier`.
/// Returns the number of search steps, or `None` when the budget ran out (the frontier is
/// then incomplete and must be discarded).
pub fn exact(
    ev: &mut Evaluator<'_>,
    limits: &Limits,
    frontier: &mut Packings,
) -> Result<Option<usize>, InterconnectError> {
    let n_units = ev.shape.units();
    // Sizes with too few units able to carry their load cannot form any block.
    let sizes: Vec<usize> = ev
        .sizes()
        .into_iter()
        .filter(|&n| (0..n_units).filter(|&u| ev.unit_can_host(u, n)).count() >= n)
        .collect();
    // Every combination of each size is evaluated: known up front, so a machine whose
    // blocks alone would spend the budget goes to the bounded search at no cost.
    let steps = sizes.iter().fold(0usize, |acc, &k| {
        acc.saturating_add(binomial(n_units, k).saturating_mul(EVAL_COST))
    });
    if steps > limits.exact_budget {
        return Ok(None);
    }
    let mut by_min: Vec<Vec<Rc<Block>>> = vec![Vec::new(); n_units];
    for size in sizes {
        let mut combo: Vec<usize> = (0..size).collect();
        loop {
            let mask = combo.iter().fold(0 as Mask, |m, &u| m | (1 << u));
            if let Some(b) = ev.block(mask)? {
                by_min[combo[0]].push(b);
            }
            if !next_combination(&mut combo, n_units) {
                break;
            }
        }
    }
    let all: Mask = if n_units == MAX_UNITS {
        Mask::MAX
    } else {
        (1 << n_units) - 1
    };
    let mut state = Dfs {
        by_min: &by_min,
        steps,
        budget: limits.exact_budget,
        chosen: Vec::new(),
    };
    if state.walk(all, 0, frontier) {
        Ok(Some(state.steps))
    } else {
        Ok(None)
    }
}

struct Dfs<'a> {
    by_min: &'a [Vec<Rc<Block>>],
    steps: usize,
    budget: usize,
    chosen: Vec<Rc<Block>>,
}

impl Dfs<'_> {
    /// Returns false when the budget ran out.
    fn walk(&mut self, free: Mask, leftover: Mask, frontier: &mut Packings) -> bool {
        self.steps += 1;
        if self.steps > self.budget {
            return false;
        }
        if free == 0 {
            if !self.chosen.is_empty() && self.is_maximal(leftover) {
                frontier.offer(self.chosen.clone(), leftover);
            }
            return true;
        }
        let x = free.trailing_zeros() as usize;
        for b in &self.by_min[x] {
            if b.mask & !free == 0 {
                self.chosen.push(b.clone());
                let ok = self.walk(free & !b.mask, leftover, frontier);
                self.chosen.pop();
                if !ok {
                    return false;
                }
            }
        }
        self.walk(free & !(1 << x), leftover | (1 << x), frontier)
    }

    fn is_maximal(&self, leftover: Mask) -> bool {
        units_of(leftover)
            .into_iter()
            .all(|x| self.by_min[x].iter().all(|b| b.mask & !leftover != 0))
    }
}

/// Advances `combo` to the next `k`-combination of `0..n` in lexicographic order.
pub(super) fn next_combination(combo: &mut [usize], n: usize) -> bool {
    let k = combo.len();
    for i in (0..k).rev() {
        if combo[i] < n - k + i {
            combo[i] += 1;
            for j in i + 1..k {
                combo[j] = combo[j - 1] + 1;
            }
            return true;
        }
    }
    false
}

/// How the bounded search ranks partial packings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Objective {
    Sum,
    Min,
    Max,
}

/// In which order a greedy block construction prefers candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    Nearest,
    Hwloc,
    Farthest,
}

#[derive(Clone)]
struct BeamState {
    free: Mask,
    /// Units skipped because no block of the shape fitted there.
    leftover: Mask,
    blocks: Vec<Rc<Block>>,
}

/// The bounded search; returns a description of its bound for the output.
pub fn bounded(
    ev: &mut Evaluator<'_>,
    limits: &Limits,
    frontier: &mut Packings,
) -> Result<String, InterconnectError> {
    let shapes = outer_shapes(ev);
    let mut by_size = shapes.clone();
    by_size.sort_by_key(|shape| std::cmp::Reverse(shape.iter().product::<usize>()));
    let n_units = ev.shape.units();
    let all: Mask = if n_units == MAX_UNITS {
        Mask::MAX
    } else {
        (1 << n_units) - 1
    };
    for shape in &shapes {
        for objective in [Objective::Sum, Objective::Min, Objective::Max] {
            let mut beam = vec![BeamState {
                free: all,
                leftover: 0,
                blocks: Vec::new(),
            }];
            while beam.iter().any(|s| s.free != 0) {
                let mut next: Vec<(i64, BeamState)> = Vec::new();
                for state in beam {
                    if state.free == 0 {
                        let s = rank(&state.blocks, objective);
                        next.push((s, state));
                        continue;
                    }
                    let x = state.free.trailing_zeros() as usize;
                    let mut grown = false;
                    let mut tried: Vec<Mask> = Vec::new();
                    for order in [Order::Nearest, Order::Hwloc, Order::Farthest] {
                        let Some(mask) = construct(ev, shape, x, state.free, order) else {
                            continue;
                        };
                        if tried.contains(&mask) {
                            continue;
                        }
                        tried.push(mask);
                        if let Some(b) = ev.block(mask)? {
                            let mut s = state.clone();
                            s.free &= !mask;
                            s.blocks.push(b);
                            next.push((rank(&s.blocks, objective), s));
                            grown = true;
                        }
                    }
                    if !grown {
                        let mut s = state;
                        s.free &= !(1 << x);
                        s.leftover |= 1 << x;
                        next.push((rank(&s.blocks, objective), s));
                    }
                }
                // Stable: equal ranks keep generation order, so the search is deterministic.
                next.sort_by_key(|(r, _)| std::cmp::Reverse(*r));
                next.truncate(limits.beam_width);
                beam = next.into_iter().map(|(_, s)| s).collect();
            }
            for s in beam {
                if !s.blocks.is_empty() {
                    let (blocks, leftover) = complete(ev, &by_size, s.blocks, s.leftover)?;
                    frontier.offer(blocks, leftover);
                }
            }
        }
    }
    Ok(format!(
        "beam search of width {} over homogeneous packings of {} block shapes",
        limits.beam_width,
        shapes.len()
    ))
}

/// Fills the units a homogeneous packing left over with blocks of other shapes, largest
/// first, each grown around the lowest unit still free, so that the bounded search finds
/// mixed covers (16 + 8 nodes of 24) as the exact search does. Returns the packing and the
/// units still left over.
fn complete(
    ev: &mut Evaluator<'_>,
    by_size: &[OuterShape],
    mut blocks: Vec<Rc<Block>>,
    leftover: Mask,
) -> Result<(Vec<Rc<Block>>, Mask), InterconnectError> {
    let mut free = leftover;
    let mut left: Mask = 0;
    while free != 0 {
        let x = free.trailing_zeros() as usize;
        let mut found = None;
        'shapes: for shape in by_size {
            for order in [Order::Nearest, Order::Hwloc, Order::Farthest] {
                if let Some(mask) = construct(ev, shape, x, free, order) {
                    if let Some(b) = ev.block(mask)? {
                        found = Some(b);
                        break 'shapes;
                    }
                }
            }
        }
        match found {
            Some(b) => {
                free &= !b.mask;
                blocks.push(b);
            }
            None => {
                free &= !(1 << x);
                left |= 1 << x;
            }
        }
    }
    Ok((blocks, left))
}

/// Every greedy construction of a block of `n` units around `x` from `free` units, over all
/// block shapes and orders, without duplicates.
pub(super) fn constructions(ev: &mut Evaluator<'_>, x: usize, free: Mask, n: usize) -> Vec<Mask> {
    let mut out = Vec::new();
    for shape in outer_shapes(ev) {
        if shape.iter().product::<usize>() != n {
            continue;
        }
        for order in [Order::Nearest, Order::Hwloc, Order::Farthest] {
            if let Some(mask) = construct(ev, &shape, x, free, order) {
                if !out.contains(&mask) {
                    out.push(mask);
                }
            }
        }
    }
    out
}

fn rank(blocks: &[Rc<Block>], objective: Objective) -> i64 {
    let firsts = blocks.iter().map(|b| b.filt.first().copied().unwrap_or(0));
    match objective {
        Objective::Sum => firsts.sum(),
        Objective::Min => firsts.min().unwrap_or(0),
        Objective::Max => firsts.max().unwrap_or(0),
    }
}

/// A block shape above the unit: instances used at each level from the top down (level 0:
/// instances of the coarsest level, then children per used parent, the last entry units
/// per used parent). Its product is the block size.
type OuterShape = Vec<usize>;

fn outer_shapes(ev: &Evaluator<'_>) -> Vec<OuterShape> {
    let h = &ev.shape.m.hierarchy;
    let u = h.unit_level;
    let max_children: Vec<usize> = (0..=u)
        .map(|l| {
            if l == 0 {
                h.levels[0].instances.len()
            } else {
                h.levels[l - 1]
                    .instances
                    .iter()
                    .map(|i| i.children.len())
                    .max()
                    .unwrap_or(0)
            }
        })
        .collect();
    let mut out = Vec::new();
    for n in ev.sizes() {
        let mut current = Vec::new();
        walk_shapes(0, n, &max_children, &mut current, &mut out);
    }
    out
}

fn walk_shapes(
    depth: usize,
    remaining: usize,
    max_children: &[usize],
    current: &mut Vec<usize>,
    out: &mut Vec<OuterShape>,
) {
    if depth == max_children.len() {
        if remaining == 1 {
            out.push(current.clone());
        }
        return;
    }
    for k in 1..=max_children[depth].min(remaining) {
        if remaining % k == 0 {
            current.push(k);
            walk_shapes(depth + 1, remaining / k, max_children, current, out);
            current.pop();
        }
    }
}

/// Builds a block of the given shape containing unit `x`, from free units only, choosing
/// instances level by level in the given order. `None` when the shape does not fit.
fn construct(
    ev: &mut Evaluator<'_>,
    shape: &OuterShape,
    x: usize,
    free: Mask,
    order: Order,
) -> Option<Mask> {
    let n: usize = shape.iter().product();
    let u = ev.shape.m.hierarchy.unit_level;
    // Level by level, the instances chosen so far (starting from the root's "children").
    let top: Vec<usize> = (0..ev.shape.m.hierarchy.levels[0].instances.len()).collect();
    let mut chosen_parents: Vec<Option<usize>> = vec![None];
    for (level, &k) in shape.iter().enumerate() {
        let mut chosen_here = Vec::new();
        for parent in &chosen_parents {
            let candidates: Vec<usize> = match parent {
                None => top.clone(),
                Some(p) => ev.shape.m.hierarchy.levels[level - 1].instances[*p]
                    .children
                    .clone(),
            };
            let x_here = if level == u {
                x
            } else {
                ev.shape.ancestor(level, x)
            };
            let mut fitting: Vec<usize> = Vec::new();
            for c in candidates {
                if can_host(ev, level, c, shape, free, n) {
                    fitting.push(c);
                }
            }
            let must = fitting.contains(&x_here).then_some(x_here);
            let mut others: Vec<usize> = fitting.into_iter().filter(|&c| Some(c) != must).collect();
            let affinity = |c: usize| -> i64 {
                let units = if level == u {
                    vec![c]
                } else {
                    units_of(free)
                        .into_iter()
                        .filter(|&unit| ev.shape.ancestor(level, unit) == c)
                        .collect()
                };
                let sum: f64 = units.iter().map(|&unit| closeness(ev, x, unit)).sum();
                crate::machine::milli(sum / units.len().max(1) as f64)
            };
            match order {
                Order::Hwloc => {}
                Order::Nearest => others.sort_by_key(|&c| std::cmp::Reverse(affinity(c))),
                Order::Farthest => others.sort_by_key(|&c| affinity(c)),
            }
            let picked: Vec<usize> = must.into_iter().chain(others).take(k).collect();
            if picked.len() < k {
                return None;
            }
            chosen_here.extend(picked.into_iter().map(Some));
        }
        chosen_parents = chosen_here;
    }
    let mask = chosen_parents
        .into_iter()
        .flatten()
        .fold(0 as Mask, |m, unit| m | (1 << unit));
    (mask & (1 << x) != 0).then_some(mask)
}

/// Whether instance `c` of `level` can hold its part of a block of this shape from free units.
fn can_host(
    ev: &mut Evaluator<'_>,
    level: usize,
    c: usize,
    shape: &OuterShape,
    free: Mask,
    n: usize,
) -> bool {
    let u = ev.shape.m.hierarchy.unit_level;
    if level == u {
        return free & (1 << c) != 0 && ev.unit_can_host(c, n);
    }
    let children = ev.shape.m.hierarchy.levels[level].instances[c]
        .children
        .clone();
    let need = shape[level + 1];
    let mut ok = 0;
    for child in children {
        if can_host(ev, level + 1, child, shape, free, n) {
            ok += 1;
            if ok >= need {
                return true;
            }
        }
    }
    false
}

/// Bandwidth from `x`'s memory to `unit`'s, relative (1 when they share a node).
fn closeness(ev: &Evaluator<'_>, x: usize, unit: usize) -> f64 {
    let (Some(&a), Some(&b)) = (ev.shape.numa_of[x].first(), ev.shape.numa_of[unit].first()) else {
        return 0.0;
    };
    ev.shape
        .m
        .interconnect
        .pair(a, b)
        .unwrap_or(if a == b { 1.0 } else { 0.5 })
}
