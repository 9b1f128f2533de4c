//! Telling performance categories apart with a classification tree (linfa-trees' CART, Gini
//! impurity). Trained on the training workloads' relative performance in some placements and
//! their k-means category, it assigns a container measured in those placements to a
//! category; its impurity decrease per placement ranks which placement separates the
//! categories best, the order the iterative method measures in. The thesis (§2.4.1) draws
//! the same boundaries by hand from each category's range; the tree learns them where ranges
//! overlap, and `evaluate` reports both.
//!
//! The fitted tree is copied into a small structure of our own: the model file then holds
//! thresholds, not linfa's internals, and each leaf records whether all the training runs
//! that reach it share its category (the iterative method stops there).

use linfa::prelude::*;
use linfa_trees::{DecisionTree, SplitQuality, TreeNode};
use ndarray::{Array1, ArrayView2, Axis};
use serde::{Deserialize, Serialize};

/// Deepest split: categories are few (at most `max_k`), and a deeper tree only memorises
/// measurement noise.
const MAX_DEPTH: usize = 6;
/// Fewest training runs a leaf stands on, for the same reason.
const MIN_LEAF_RUNS: f32 = 2.0;

/// A classification tree over relative performance in some placements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategoryTree {
    /// The placement columns the tree reads, in the order they were given.
    pub placements: Vec<usize>,
    /// `nodes[0]` is the root.
    nodes: Vec<Node>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "node", rename_all = "snake_case")]
enum Node {
    /// Relative performance in `placement` below `below` goes to `left`, otherwise `right`.
    Split {
        placement: usize,
        below: f64,
        left: usize,
        right: usize,
    },
    /// The category of the training runs that end here; `pure` when they all share it.
    Leaf { category: usize, pure: bool },
}

/// Where a container lands in the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Assignment {
    /// The category.
    pub category: usize,
    /// Whether every training run in the same leaf has that category: the placements read so
    /// far tell the categories apart here.
    pub pure: bool,
}

/// Why a tree could not be fitted.
#[derive(Debug, thiserror::Error)]
#[error("fitting the category tree failed")]
pub struct TreeError(#[source] linfa::Error);

impl CategoryTree {
    /// Fits a tree on `vectors` (rows x all placements) reading only `placements`, with
    /// `labels[row]` the row's category. Also returns each placement's share of the impurity
    /// decrease (all placements, 0 where unread or where the tree never split).
    pub fn fit(
        vectors: ArrayView2<'_, f64>,
        labels: &[usize],
        placements: &[usize],
    ) -> Result<(Self, Vec<f64>), TreeError> {
        let records = vectors.select(Axis(1), placements);
        let targets = Array1::from(labels.to_vec());
        // linfa breaks a tie between classes in hash-map order, at leaves and when pruning,
        // so equal counts would give a different tree on each fit: a higher category weighs
        // a thousandth more, which breaks every tie below a thousand runs the same way and
        // moves no split that was not a tie.
        let weights: Array1<f32> = labels.iter().map(|&l| 1.0 + 1e-3 * l as f32).collect();
        let fitted: DecisionTree<f64, usize> = DecisionTree::params()
            .split_quality(SplitQuality::Gini)
            .max_depth(Some(MAX_DEPTH))
            .min_weight_leaf(MIN_LEAF_RUNS)
            .fit(&DatasetBase::new(records, targets).with_weights(weights))
            .map_err(TreeError)?;
        let mut importance = vec![0.0; vectors.ncols()];
        for (column, share) in fitted.feature_importance().into_iter().enumerate() {
            // No split at all makes every share 0/0.
            if share.is_finite() {
                importance[placements[column]] = share;
            }
        }
        let mut tree = Self {
            placements: placements.to_vec(),
            nodes: Vec::new(),
        };
        let rows: Vec<usize> = (0..vectors.nrows()).collect();
        tree.copy(fitted.root_node(), vectors, labels, &rows);
        Ok((tree, importance))
    }

    /// Copies `node` and below, recounting each leaf from the `rows` that reach it.
    fn copy(
        &mut self,
        node: &TreeNode<f64, usize>,
        vectors: ArrayView2<'_, f64>,
        labels: &[usize],
        rows: &[usize],
    ) -> usize {
        let at = self.nodes.len();
        let children = node.children();
        match (node.is_leaf(), children[0], children[1]) {
            (false, Some(left), Some(right)) => {
                let (column, below, _) = node.split();
                let placement = self.placements[column];
                self.nodes.push(Node::Leaf {
                    category: 0,
                    pure: true,
                });
                let (l, r): (Vec<usize>, Vec<usize>) = rows
                    .iter()
                    .partition(|&&row| vectors[[row, placement]] < below);
                let left = self.copy(left, vectors, labels, &l);
                let right = self.copy(right, vectors, labels, &r);
                self.nodes[at] = Node::Split {
                    placement,
                    below,
                    left,
                    right,
                };
            }
            _ => {
                let mut counts = vec![0usize; labels.iter().max().map_or(1, |m| m + 1)];
                rows.iter().for_each(|&row| counts[labels[row]] += 1);
                // The most runs; ties to the higher category, as the weights decide in linfa.
                let category = counts
                    .iter()
                    .enumerate()
                    .fold(
                        (0, 0),
                        |(bc, bn), (c, &n)| if n >= bn { (c, n) } else { (bc, bn) },
                    )
                    .0;
                let pure = counts.iter().filter(|&&n| n > 0).count() <= 1;
                self.nodes.push(Node::Leaf { category, pure });
            }
        }
        at
    }

    /// The category of a container whose relative performance in placement `p` is
    /// `ratio(p)`; only the tree's placements are asked.
    pub fn assign(&self, ratio: impl Fn(usize) -> f64) -> Assignment {
        let mut at = 0;
        loop {
            match self.nodes.get(at) {
                Some(Node::Split {
                    placement,
                    below,
                    left,
                    right,
                }) => {
                    at = if ratio(*placement) < *below {
                        *left
                    } else {
                        *right
                    }
                }
                Some(Node::Leaf { category, pure }) => {
                    return Assignment {
                        category: *category,
                        pure: *pure,
                    };
                }
                // Unreachable for a checked tree.
                None => {
                    return Assignment {
                        category: 0,
                        pure: false,
                    };
                }
            }
        }
    }

    /// Checks a tree read from a file: every child and placement in range, every category
    /// known, and no cycles (children come after their parent).
    pub(crate) fn check(&self, n_placements: usize, n_categories: usize) -> Result<(), String> {
        if self.nodes.is_empty() {
            return Err("the category tree has no nodes".into());
        }
        for (i, node) in self.nodes.iter().enumerate() {
            match *node {
                Node::Split {
                    placement,
                    below,
                    left,
                    right,
                } => {
                    if placement >= n_placements || !self.placements.contains(&placement) {
                        return Err(format!(
                            "category tree node {i} reads placement {placement}, which it was not trained on"
                        ));
                    }
                    if !below.is_finite() {
                        return Err(format!("category tree node {i} has no finite threshold"));
                    }
                    if left <= i
                        || right <= i
                        || left >= self.nodes.len()
                        || right >= self.nodes.len()
                    {
                        return Err(format!("category tree node {i} has a child out of order"));
                    }
                }
                Node::Leaf { category, .. } => {
                    if category >= n_categories {
                        return Err(format!(
                            "category tree node {i} names category {category} of {n_categories}"
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use ndarray::array;

    use super::*;

    /// Two categories told apart by placement 2 only; placement 1 is noise.
    fn data() -> (ndarray::Array2<f64>, Vec<usize>) {
        let vectors = array![
            [1.0, 0.9, 0.50],
            [1.0, 1.1, 0.55],
            [1.0, 1.0, 0.52],
            [1.0, 0.9, 1.50],
            [1.0, 1.1, 1.45],
            [1.0, 1.0, 1.55],
        ];
        (vectors, vec![0, 0, 0, 1, 1, 1])
    }

    #[test]
    fn the_separating_placement_ranks_first_and_assigns_the_category() {
        let (vectors, labels) = data();
        let (tree, importance) = CategoryTree::fit(vectors.view(), &labels, &[1, 2]).unwrap();
        assert!(importance[2] > importance[1], "{importance:?}");
        assert_eq!(importance[0], 0.0);
        let low = [1.0, 1.0, 0.6];
        let high = [1.0, 1.0, 1.4];
        assert_eq!(
            tree.assign(|p| low[p]),
            Assignment {
                category: 0,
                pure: true
            }
        );
        assert_eq!(tree.assign(|p| high[p]).category, 1);
        tree.check(3, 2).unwrap();
    }

    #[test]
    fn one_category_is_one_leaf_and_a_bad_file_tree_is_refused() {
        let (vectors, _) = data();
        let (tree, importance) = CategoryTree::fit(vectors.view(), &[0; 6], &[2]).unwrap();
        assert_eq!(tree.nodes.len(), 1);
        assert!(importance.iter().all(|&s| s == 0.0), "{importance:?}");
        assert!(tree.check(3, 0).unwrap_err().contains("category 0 of 0"));

        let (vectors, labels) = data();
        let (mut tree, _) = CategoryTree::fit(vectors.view(), &labels, &[2]).unwrap();
        if let Some(Node::Split { left, .. }) = tree.nodes.first_mut() {
            *left = 0;
        }
        assert!(tree.check(3, 2).unwrap_err().contains("out of order"));
    }

    #[test]
    fn refitting_gives_the_same_tree() {
        let (vectors, labels) = data();
        let a = CategoryTree::fit(vectors.view(), &labels, &[1, 2]).unwrap();
        for _ in 0..20 {
            assert_eq!(
                CategoryTree::fit(vectors.view(), &labels, &[1, 2]).unwrap(),
                a
            );
        }
    }
}
