//! One multi-output regression tree: every split minimises the squared error summed over all
//! outputs, and every leaf holds the mean output vector of its samples, so one tree predicts
//! the whole performance vector and the correlations between placements are kept.

use ndarray::{ArrayView1, ArrayView2};
use rand::Rng;
use rand::seq::index;
use serde::{Deserialize, Serialize};

use super::ForestValidParams;

/// A tree node; children are indices into [`Tree::nodes`], leaves index [`Tree::leaf_values`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Node {
    /// `x[feature] <= threshold` goes left, everything else (NaN included) right.
    Split {
        feature: usize,
        threshold: f64,
        left: usize,
        right: usize,
    },
    /// The mean output vector starts at `leaf_values[offset]`.
    Leaf { offset: usize },
}

/// A trained tree. Node 0 is the root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Tree {
    pub(crate) nodes: Vec<Node>,
    pub(crate) leaf_values: Vec<f64>,
}

impl Tree {
    /// The leaf vector `x` falls into. `x` must have the training feature count.
    pub(crate) fn leaf(&self, x: ArrayView1<'_, f64>, n_outputs: usize) -> &[f64] {
        let mut at = 0;
        loop {
            match self.nodes[at] {
                Node::Split {
                    feature,
                    threshold,
                    left,
                    right,
                } => at = if x[feature] <= threshold { left } else { right },
                Node::Leaf { offset } => return &self.leaf_values[offset..offset + n_outputs],
            }
        }
    }

    /// Checks that every index points inside the tree and that children come after their
    /// parent, so a tree read from a file can neither panic nor loop when walked.
    pub(crate) fn check(&self, n_features: usize, n_outputs: usize) -> Result<(), String> {
        if self.nodes.is_empty() {
            return Err("a tree has no nodes".into());
        }
        for (at, node) in self.nodes.iter().enumerate() {
            match *node {
                Node::Split {
                    feature,
                    left,
                    right,
                    ..
                } => {
                    if feature >= n_features {
                        return Err(format!(
                            "node {at} splits on feature {feature} of {n_features}"
                        ));
                    }
                    for child in [left, right] {
                        if child <= at || child >= self.nodes.len() {
                            return Err(format!("node {at} has child {child} out of order"));
                        }
                    }
                }
                Node::Leaf { offset } => {
                    // checked: a hand-edited file may carry an offset near usize::MAX.
                    if offset
                        .checked_add(n_outputs)
                        .is_none_or(|end| end > self.leaf_values.len())
                    {
                        return Err(format!("leaf {at} points past the leaf values"));
                    }
                }
            }
        }
        Ok(())
    }
}

/// A pending node: its slot in `nodes`, its samples `samples[start..end]` and its depth.
struct Pending {
    slot: usize,
    start: usize,
    end: usize,
    depth: usize,
}

struct Split {
    feature: usize,
    threshold: f64,
    gain: f64,
}

/// Grows one tree on `samples` (row indices into `x`/`y`, repeated when bootstrapped).
pub(crate) fn grow<R: Rng>(
    x: ArrayView2<'_, f64>,
    y: ArrayView2<'_, f64>,
    mut samples: Vec<usize>,
    params: &ForestValidParams,
    rng: &mut R,
) -> Tree {
    let n_outputs = y.ncols();
    let n_features = x.ncols();
    let n_try = params.features_per_split(n_features);
    let mut tree = Tree {
        nodes: vec![Node::Leaf { offset: 0 }],
        leaf_values: Vec::new(),
    };
    let mut sums = vec![0.0; n_outputs];
    let mut scratch = Scratch::new(n_outputs);
    let mut stack = vec![Pending {
        slot: 0,
        start: 0,
        end: samples.len(),
        depth: 0,
    }];
    while let Some(node) = stack.pop() {
        let here = &mut samples[node.start..node.end];
        sums.fill(0.0);
        let mut sum_squares = 0.0;
        for &s in here.iter() {
            for (o, total) in sums.iter_mut().enumerate() {
                let v = y[[s, o]];
                *total += v;
                sum_squares += v * v;
            }
        }
        let n = here.len() as f64;
        let parent_score: f64 = sums.iter().map(|s| s * s).sum::<f64>() / n;
        let splittable = here.len() >= 2 * params.min_samples_leaf()
            && params.max_depth().is_none_or(|d| node.depth < d)
            // Pure (all vectors equal up to rounding): nothing left to explain.
            && sum_squares - parent_score > 1e-12 * n;
        let best = if splittable {
            let features = index::sample(rng, n_features, n_try);
            features
                .iter()
                .filter_map(|f| scratch.best_split(x, y, here, f, &sums, params.min_samples_leaf()))
                .map(|(threshold, score, feature)| Split {
                    feature,
                    threshold,
                    gain: score - parent_score,
                })
                .fold(None, |best: Option<Split>, s| match best {
                    Some(b) if b.gain >= s.gain => Some(b),
                    _ => Some(s),
                })
                .filter(|s| s.gain > 1e-12 * n)
        } else {
            None
        };
        match best {
            None => {
                tree.nodes[node.slot] = Node::Leaf {
                    offset: tree.leaf_values.len(),
                };
                tree.leaf_values.extend(sums.iter().map(|s| s / n));
            }
            Some(split) => {
                let left_len = partition(here, |s| x[[s, split.feature]] <= split.threshold);
                let left = tree.nodes.len();
                tree.nodes.push(Node::Leaf { offset: 0 });
                tree.nodes.push(Node::Leaf { offset: 0 });
                tree.nodes[node.slot] = Node::Split {
                    feature: split.feature,
                    threshold: split.threshold,
                    left,
                    right: left + 1,
                };
                let mid = node.start + left_len;
                stack.push(Pending {
                    slot: left + 1,
                    start: mid,
                    end: node.end,
                    depth: node.depth + 1,
                });
                stack.push(Pending {
                    slot: left,
                    start: node.start,
                    end: mid,
                    depth: node.depth + 1,
                });
            }
        }
    }
    tree
}

/// Moves the samples for which `left` holds to the front; returns how many there are.
fn partition(samples: &mut [usize], left: impl Fn(usize) -> bool) -> usize {
    let mut boundary = 0;
    for i in 0..samples.len() {
        if left(samples[i]) {
            samples.swap(i, boundary);
            boundary += 1;
        }
    }
    boundary
}

/// Buffers reused across nodes so split search allocates nothing per node.
struct Scratch {
    sorted: Vec<(f64, usize)>,
    left: Vec<f64>,
}

impl Scratch {
    fn new(n_outputs: usize) -> Self {
        Self {
            sorted: Vec::new(),
            left: vec![0.0; n_outputs],
        }
    }

    /// The best threshold on `feature` and its score `Σ_o (L_o²/n_L + R_o²/n_R)`, which is
    /// the summed squared error removed by the split plus a constant: maximising it minimises
    /// the children's squared error summed over all outputs. `None` when no threshold leaves
    /// `min_leaf` samples on both sides.
    fn best_split(
        &mut self,
        x: ArrayView2<'_, f64>,
        y: ArrayView2<'_, f64>,
        samples: &[usize],
        feature: usize,
        sums: &[f64],
        min_leaf: usize,
    ) -> Option<(f64, f64, usize)> {
        self.sorted.clear();
        self.sorted
            .extend(samples.iter().map(|&s| (x[[s, feature]], s)));
        self.sorted.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        self.left.fill(0.0);
        let n = samples.len();
        let mut best: Option<(f64, f64)> = None;
        for i in 0..n - 1 {
            let (value, s) = self.sorted[i];
            for (o, l) in self.left.iter_mut().enumerate() {
                *l += y[[s, o]];
            }
            let n_left = i + 1;
            let next = self.sorted[i + 1].0;
            if n_left < min_leaf || n - n_left < min_leaf || value >= next {
                continue;
            }
            let (nl, nr) = (n_left as f64, (n - n_left) as f64);
            let score: f64 = self
                .left
                .iter()
                .zip(sums)
                .map(|(l, total)| l * l / nl + (total - l) * (total - l) / nr)
                .sum();
            if best.is_none_or(|(_, b)| score > b) {
                // The midpoint can round up to `next` for adjacent floats; `value` then
                // separates the same samples.
                let mid = value + (next - value) / 2.0;
                let threshold = if mid < next { mid } else { value };
                best = Some((threshold, score));
            }
        }
        best.map(|(threshold, score)| (threshold, score, feature))
    }
}
