//! The shape of a placement on the machine's tree: which unit sets are balanced above the
//! allocation unit, and how a unit's share of vCPUs can spread over the levels below it.
//!
//! Below the unit, a placement is described by a *signature*: how many children each used
//! instance uses, level by level (thesis algorithm 1 generalised: "balanced" is `v mod s = 0`
//! at every level, "feasible" is at most one vCPU per PU). Above it, a unit set is balanced
//! when every used instance of every level holds the same number of units.

use crate::cpuset::CpuSet;
use crate::machine::Machine;

/// Children used per used parent, for each level below the allocation unit, coarsest first.
pub type Signature = Vec<usize>;

/// Precomputed views of the tree that the search needs many times.
#[derive(Debug)]
pub struct Shape<'m> {
    pub m: &'m Machine,
    /// `ancestors[level][unit]`: the instance of an above-unit level containing the unit.
    ancestors: Vec<Vec<usize>>,
    /// `numa_of[unit]`: NUMA positions of the unit's memory, sorted.
    pub numa_of: Vec<Vec<usize>>,
}

impl<'m> Shape<'m> {
    pub fn new(m: &'m Machine) -> Self {
        let h = &m.hierarchy;
        let u = h.unit_level;
        let mut ancestors = vec![Vec::new(); u];
        for (unit, _) in h.levels[u].instances.iter().enumerate() {
            let mut inst = unit;
            for level in (0..u).rev() {
                inst = h.levels[level + 1].instances[inst].parent;
                ancestors[level].push(inst);
            }
        }
        Self {
            m,
            ancestors,
            numa_of: m.units.iter().map(|u| u.numa.clone()).collect(),
        }
    }

    pub fn units(&self) -> usize {
        self.m.units.len()
    }

    /// For each above-unit level, the number of instances the unit set touches, or `None`
    /// when some touched instance holds more of the set's units than another.
    pub fn outer_scores(&self, units: &[usize]) -> Option<Vec<usize>> {
        let mut scores = Vec::with_capacity(self.ancestors.len());
        for anc in &self.ancestors {
            let mut counts: Vec<(usize, usize)> = Vec::new();
            for &u in units {
                let a = anc[u];
                match counts.iter_mut().find(|(i, _)| *i == a) {
                    Some((_, c)) => *c += 1,
                    None => counts.push((a, 1)),
                }
            }
            let first = counts.first().map_or(0, |&(_, c)| c);
            if counts.iter().any(|&(_, c)| c != first) {
                return None;
            }
            scores.push(counts.len());
        }
        Some(scores)
    }

    /// The above-unit instance at `level` containing `unit`.
    pub fn ancestor(&self, level: usize, unit: usize) -> usize {
        self.ancestors[level][unit]
    }

    /// Every signature that divides `load` vCPUs evenly down the levels below the unit,
    /// whether or not a particular unit can hold it.
    pub fn signatures(&self, load: usize) -> Vec<Signature> {
        let h = &self.m.hierarchy;
        let inner: Vec<usize> = (h.unit_level + 1..h.levels.len()).collect();
        let max_children: Vec<usize> = inner
            .iter()
            .map(|&l| {
                h.levels[l - 1]
                    .instances
                    .iter()
                    .map(|i| i.children.len())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = Vec::new();
        let mut current = Vec::new();
        fn walk(
            depth: usize,
            load: usize,
            max_children: &[usize],
            current: &mut Vec<usize>,
            out: &mut Vec<Signature>,
        ) {
            if depth == max_children.len() {
                out.push(current.clone());
                return;
            }
            for k in 1..=max_children[depth].min(load) {
                if load % k == 0 {
                    current.push(k);
                    walk(depth + 1, load / k, max_children, current, out);
                    current.pop();
                }
            }
        }
        walk(0, load, &max_children, &mut current, &mut out);
        out
    }

    /// The PUs a unit would run `load` vCPUs on under `sig`, or `None` if it cannot.
    /// Children are taken in order of preference: the most efficient core kind, then the
    /// most PUs, then hwloc's order; PUs likewise, so a hybrid machine fills P-cores first.
    pub fn choose(&self, unit: usize, load: usize, sig: &[usize]) -> Option<CpuSet> {
        let u = self.m.hierarchy.unit_level;
        self.choose_in(u, unit, load, sig)
    }

    fn choose_in(&self, level: usize, inst: usize, load: usize, sig: &[usize]) -> Option<CpuSet> {
        let levels = &self.m.hierarchy.levels;
        let node = &levels[level].instances[inst];
        let Some((&k, rest)) = sig.split_first() else {
            if load == 0 || load > node.cpus.len() {
                return None;
            }
            let mut pus: Vec<u32> = node.cpus.iter().collect();
            pus.sort_by_key(|&p| (std::cmp::Reverse(self.m.pu_efficiency(p)), p));
            return Some(pus.into_iter().take(load).collect());
        };
        if load % k != 0 {
            return None;
        }
        let child_load = load / k;
        let mut children: Vec<usize> = node.children.clone();
        let child_level = &levels[level + 1];
        children.sort_by_key(|&c| {
            let cpus = &child_level.instances[c].cpus;
            let eff = cpus.first().map_or(0, |p| self.m.pu_efficiency(p));
            (std::cmp::Reverse(eff), std::cmp::Reverse(cpus.len()), c)
        });
        let mut chosen = CpuSet::new();
        let mut taken = 0;
        for c in children {
            if taken == k {
                break;
            }
            if let Some(pus) = self.choose_in(level + 1, c, child_load, rest) {
                chosen = chosen.union(&pus);
                taken += 1;
            }
        }
        (taken == k).then_some(chosen)
    }

    /// The score of each below-unit level for `n` units under `sig`.
    pub fn inner_scores(n: usize, sig: &[usize]) -> Vec<usize> {
        sig.iter()
            .scan(n, |acc, &k| {
                *acc *= k;
                Some(*acc)
            })
            .collect()
    }
}
