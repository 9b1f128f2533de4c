//! Pareto filtering of packings (thesis algorithm 3).
//!
//! Packings are compared only with packings made of the same kinds of blocks (same sizes,
//! same scores on the concerns that can cost or help when lower, same signatures), on the
//! sorted vector of their filterable scores (the interconnect). A packing is dropped when
//! another is at least as good at every position and better at one. Two packings with the
//! same vector are one: the first offered is kept, the other dropped, so that ties are kept
//! once and never removed twice (algorithm 3 as printed removes both members of a tie).

use std::collections::BTreeMap;
use std::rc::Rc;

use super::blocks::{Block, BlockKey};

/// A packing kept on the frontier: its sorted filterable scores and its blocks.
type Member = (Vec<i64>, Vec<Rc<Block>>);

#[derive(Debug, Default)]
pub struct Frontier {
    groups: BTreeMap<Vec<BlockKey>, Vec<Member>>,
}

/// `a` is no better than `b` anywhere and worse somewhere.
fn dominated(a: &[i64], b: &[i64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x <= y) && a != b
}

impl Frontier {
    /// Offers a packing; keeps it only while nothing offered dominates or equals it.
    pub fn offer(&mut self, mut packing: Vec<Rc<Block>>) {
        packing.sort_by(|a, b| a.key.cmp(&b.key).then_with(|| b.filt.cmp(&a.filt)));
        let group: Vec<BlockKey> = packing.iter().map(|b| b.key.clone()).collect();
        let vector: Vec<i64> = packing
            .iter()
            .flat_map(|b| b.filt.iter().copied())
            .collect();
        let members = self.groups.entry(group).or_default();
        if members
            .iter()
            .any(|(v, _)| *v == vector || dominated(&vector, v))
        {
            return;
        }
        members.retain(|(v, _)| !dominated(v, &vector));
        members.push((vector, packing));
    }

    /// The Pareto-efficient packings, group by group, in the order they were first offered
    /// within each group.
    pub fn into_packings(self) -> Vec<Vec<Rc<Block>>> {
        self.groups
            .into_values()
            .flat_map(|members| members.into_iter().map(|(_, p)| p))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(mask: u128, ic: i64) -> Rc<Block> {
        Rc::new(Block {
            mask,
            n: 2,
            node_scores: vec![],
            sigs: vec![0],
            key: BlockKey {
                n: 2,
                fixed: vec![],
                sigs: vec![0],
            },
            filt: vec![ic],
        })
    }

    #[test]
    fn dominated_packings_go_and_ties_stay_once() {
        let mut f = Frontier::default();
        f.offer(vec![block(0b0011, 5), block(0b1100, 5)]);
        // Same sorted vector: a tie, kept once (the first).
        f.offer(vec![block(0b0101, 5), block(0b1010, 5)]);
        // Incomparable: (9, 1) vs (5, 5).
        f.offer(vec![block(0b1001, 1), block(0b0110, 9)]);
        // Dominated by (9, 1): (8, 1).
        f.offer(vec![block(0b1001, 8), block(0b0110, 1)]);
        let kept = f.into_packings();
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[0][0].mask, 0b0011);
        assert_eq!(kept[1][0].filt, vec![9]);
    }

    #[test]
    fn a_later_better_packing_evicts_earlier_ones() {
        let mut f = Frontier::default();
        f.offer(vec![block(0b0011, 4), block(0b1100, 4)]);
        f.offer(vec![block(0b0101, 6), block(0b1010, 5)]);
        let kept = f.into_packings();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0][0].filt, vec![6]);
    }
}
