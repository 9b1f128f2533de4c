//! A joint multi-output random-forest regressor (thesis §2.4.2). linfa's trees and ensembles
//! only classify, so this one is ours; it plugs into linfa through [`Fit`] and
//! [`PredictInplace`] so it composes with linfa's datasets and metrics.
//!
//! Each tree is grown on a bootstrap sample with a random subset of features tried at every
//! split; tree `t` draws from ChaCha8 stream `t` of the seed, so a seed gives the same forest
//! whatever the number of threads rayon spreads the trees over.

mod tree;

use linfa::dataset::AsMultiTargets;
use linfa::prelude::*;
use ndarray::{Array1, Array2, ArrayBase, ArrayView1, ArrayView2, Axis, Data, Ix2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use tree::Tree;

/// Why a forest could not be trained or used.
#[derive(Debug, thiserror::Error)]
pub enum ForestError {
    /// A hyperparameter is out of range.
    #[error("forest parameter {name} {reason}")]
    InvalidParam {
        /// Parameter name.
        name: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// No samples to train on.
    #[error("no training samples")]
    Empty,
    /// Records and targets disagree on the number of samples.
    #[error("{records} records but {targets} target rows")]
    ShapeMismatch {
        /// Rows of the feature matrix.
        records: usize,
        /// Rows of the target matrix.
        targets: usize,
    },
    /// A NaN or infinity in the training data.
    #[error("{what} row {row} is not finite")]
    NonFinite {
        /// `records` or `targets`.
        what: &'static str,
        /// The row.
        row: usize,
    },
    /// A feature vector of the wrong length was given to a trained forest.
    #[error("the forest takes {expected} features, got {found}")]
    FeatureCount {
        /// Features at training time.
        expected: usize,
        /// Features given.
        found: usize,
    },
    /// A stored forest is inconsistent (a damaged model file that still parsed).
    #[error("inconsistent forest: {reason}")]
    Inconsistent {
        /// What is inconsistent.
        reason: String,
    },
    /// From linfa's side of the traits.
    #[error(transparent)]
    Linfa(#[from] linfa::Error),
}

/// Unchecked forest hyperparameters, built with chained setters; linfa checks them on `fit`.
#[derive(Debug, Clone, PartialEq)]
pub struct ForestParams(ForestValidParams);

/// Checked forest hyperparameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForestValidParams {
    n_trees: usize,
    max_depth: Option<usize>,
    min_samples_leaf: usize,
    max_features: f64,
    bootstrap: bool,
    seed: u64,
}

/// Trees in a forest unless told otherwise.
pub const DEFAULT_TREES: usize = 100;

impl Default for ForestParams {
    /// 100 trees, unlimited depth, leaves of at least 2 samples, every feature tried at every
    /// split (scikit-learn's regression default: with two to a dozen features, subsampling
    /// mostly hides the one informative ratio), bootstrap on, seed 0.
    fn default() -> Self {
        Self(ForestValidParams {
            n_trees: DEFAULT_TREES,
            max_depth: None,
            min_samples_leaf: 2,
            max_features: 1.0,
            bootstrap: true,
            seed: 0,
        })
    }
}

impl ForestParams {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of trees (at least 1).
    #[must_use]
    pub fn n_trees(mut self, n: usize) -> Self {
        self.0.n_trees = n;
        self
    }

    /// Deepest level a node may split at; `None` for no limit.
    #[must_use]
    pub fn max_depth(mut self, depth: Option<usize>) -> Self {
        self.0.max_depth = depth;
        self
    }

    /// Fewest samples a leaf may hold (at least 1).
    #[must_use]
    pub fn min_samples_leaf(mut self, n: usize) -> Self {
        self.0.min_samples_leaf = n;
        self
    }

    /// Fraction of the features tried at each split, in (0, 1]; at least one is always tried.
    #[must_use]
    pub fn max_features(mut self, fraction: f64) -> Self {
        self.0.max_features = fraction;
        self
    }

    /// Whether each tree sees a bootstrap sample (and out-of-bag error is measured) or all
    /// samples.
    #[must_use]
    pub fn bootstrap(mut self, on: bool) -> Self {
        self.0.bootstrap = on;
        self
    }

    /// Seed: the same seed and data give the same forest.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.0.seed = seed;
        self
    }
}

impl ParamGuard for ForestParams {
    type Checked = ForestValidParams;
    type Error = ForestError;

    fn check_ref(&self) -> Result<&ForestValidParams, ForestError> {
        let p = &self.0;
        let invalid = |name, reason| Err(ForestError::InvalidParam { name, reason });
        if p.n_trees == 0 {
            return invalid("n_trees", "must be at least 1");
        }
        if p.min_samples_leaf == 0 {
            return invalid("min_samples_leaf", "must be at least 1");
        }
        if p.max_depth == Some(0) {
            return invalid("max_depth", "must be at least 1 (or unlimited)");
        }
        if !(p.max_features > 0.0 && p.max_features <= 1.0) {
            return invalid("max_features", "must be a fraction in (0, 1]");
        }
        Ok(p)
    }

    fn check(self) -> Result<ForestValidParams, ForestError> {
        self.check_ref()?;
        Ok(self.0)
    }
}

impl ForestValidParams {
    /// Number of trees.
    pub fn n_trees(&self) -> usize {
        self.n_trees
    }

    /// Depth limit, if any.
    pub fn max_depth(&self) -> Option<usize> {
        self.max_depth
    }

    /// Smallest leaf.
    pub fn min_samples_leaf(&self) -> usize {
        self.min_samples_leaf
    }

    /// Fraction of features tried per split.
    pub fn max_features(&self) -> f64 {
        self.max_features
    }

    /// Whether trees are bootstrapped.
    pub fn bootstrap(&self) -> bool {
        self.bootstrap
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    fn features_per_split(&self, n_features: usize) -> usize {
        // The smallest count covering the fraction; never 0 because the fraction is > 0.
        let wanted = self.max_features * n_features as f64;
        (1..=n_features)
            .find(|&k| k as f64 >= wanted)
            .unwrap_or(n_features)
    }
}

/// Out-of-bag error: each sample predicted only by the trees that did not see it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OutOfBag {
    /// Mean over samples and outputs of the squared error.
    pub mean_squared_error: f64,
    /// Mean over samples and outputs of the absolute error.
    pub mean_absolute_error: f64,
    /// Samples that were out of bag for at least one tree.
    pub samples: usize,
}

/// A trained forest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Forest {
    n_features: usize,
    n_outputs: usize,
    trees: Vec<Tree>,
    out_of_bag: Option<OutOfBag>,
}

/// One prediction with its uncertainty.
#[derive(Debug, Clone, PartialEq)]
pub struct SpreadPrediction {
    /// Mean over trees, one value per output.
    pub mean: Array1<f64>,
    /// Standard deviation over trees, one value per output: how much the trees disagree.
    pub spread: Array1<f64>,
}

impl Forest {
    /// Features it was trained on.
    pub fn n_features(&self) -> usize {
        self.n_features
    }

    /// Outputs it predicts.
    pub fn n_outputs(&self) -> usize {
        self.n_outputs
    }

    /// Number of trees.
    pub fn n_trees(&self) -> usize {
        self.trees.len()
    }

    /// Out-of-bag error; `None` without bootstrap.
    pub fn out_of_bag(&self) -> Option<OutOfBag> {
        self.out_of_bag
    }

    /// Predicts one sample with the spread across trees as its uncertainty.
    pub fn predict_with_spread(
        &self,
        x: ArrayView1<'_, f64>,
    ) -> Result<SpreadPrediction, ForestError> {
        if x.len() != self.n_features {
            return Err(ForestError::FeatureCount {
                expected: self.n_features,
                found: x.len(),
            });
        }
        let mut sum = Array1::<f64>::zeros(self.n_outputs);
        let mut sum_sq = Array1::<f64>::zeros(self.n_outputs);
        for tree in &self.trees {
            let leaf = tree.leaf(x, self.n_outputs);
            for ((s, q), &v) in sum.iter_mut().zip(sum_sq.iter_mut()).zip(leaf) {
                *s += v;
                *q += v * v;
            }
        }
        let n = self.trees.len() as f64;
        let mean = sum / n;
        // max(0): rounding can make E[x²] - E[x]² slightly negative when all trees agree.
        let spread = (sum_sq / n - &mean * &mean).mapv(|v| v.max(0.0).sqrt());
        Ok(SpreadPrediction { mean, spread })
    }

    /// Mean and spread across trees for every row of `x`, as two rows x outputs matrices.
    pub fn predict_rows_with_spread(
        &self,
        x: ArrayView2<'_, f64>,
    ) -> Result<(Array2<f64>, Array2<f64>), ForestError> {
        let mut mean = Array2::zeros((x.nrows(), self.n_outputs));
        let mut spread = Array2::zeros((x.nrows(), self.n_outputs));
        for (r, row) in x.axis_iter(Axis(0)).enumerate() {
            let p = self.predict_with_spread(row)?;
            mean.row_mut(r).assign(&p.mean);
            spread.row_mut(r).assign(&p.spread);
        }
        Ok((mean, spread))
    }

    /// Checks a forest read from a file: shapes agree and every tree is walkable.
    pub(crate) fn check(&self, n_features: usize, n_outputs: usize) -> Result<(), ForestError> {
        let inconsistent = |reason: String| Err(ForestError::Inconsistent { reason });
        if self.n_features != n_features || self.n_outputs != n_outputs {
            return inconsistent(format!(
                "forest maps {} features to {} outputs, model says {n_features} to {n_outputs}",
                self.n_features, self.n_outputs
            ));
        }
        if self.trees.is_empty() {
            return inconsistent("no trees".into());
        }
        for tree in &self.trees {
            tree.check(n_features, n_outputs)
                .map_err(|reason| ForestError::Inconsistent { reason })?;
        }
        Ok(())
    }

    fn mean_into(&self, x: ArrayView1<'_, f64>, out: &mut [f64]) {
        out.fill(0.0);
        for tree in &self.trees {
            for (o, v) in out.iter_mut().zip(tree.leaf(x, self.n_outputs)) {
                *o += v;
            }
        }
        let n = self.trees.len() as f64;
        out.iter_mut().for_each(|o| *o /= n);
    }
}

impl<D, T> Fit<ArrayBase<D, Ix2>, T, ForestError> for ForestValidParams
where
    D: Data<Elem = f64> + Sync,
    T: AsMultiTargets<Elem = f64>,
{
    type Object = Forest;

    fn fit(&self, dataset: &DatasetBase<ArrayBase<D, Ix2>, T>) -> Result<Forest, ForestError> {
        let x = dataset.records().view();
        let y = dataset.as_multi_targets();
        check_finite(x, y)?;
        let n = x.nrows();
        let trees: Vec<(Tree, Vec<bool>)> = (0..self.n_trees)
            .into_par_iter()
            .map(|t| {
                let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
                rng.set_stream(t as u64);
                let (samples, in_bag) = if self.bootstrap {
                    let samples: Vec<usize> = (0..n).map(|_| rng.gen_range(0..n)).collect();
                    let mut in_bag = vec![false; n];
                    samples.iter().for_each(|&s| in_bag[s] = true);
                    (samples, in_bag)
                } else {
                    ((0..n).collect(), vec![true; n])
                };
                (tree::grow(x, y, samples, self, &mut rng), in_bag)
            })
            .collect();
        let out_of_bag = self.bootstrap.then(|| out_of_bag(&trees, x, y)).flatten();
        Ok(Forest {
            n_features: x.ncols(),
            n_outputs: y.ncols(),
            trees: trees.into_iter().map(|(t, _)| t).collect(),
            out_of_bag,
        })
    }
}

fn check_finite<'a>(x: ArrayView2<'a, f64>, y: ArrayView2<'a, f64>) -> Result<(), ForestError> {
    if x.nrows() == 0 {
        return Err(ForestError::Empty);
    }
    if x.nrows() != y.nrows() {
        return Err(ForestError::ShapeMismatch {
            records: x.nrows(),
            targets: y.nrows(),
        });
    }
    for (what, m) in [("records", x), ("targets", y)] {
        if let Some(row) = m
            .axis_iter(Axis(0))
            .position(|r| r.iter().any(|v| !v.is_finite()))
        {
            return Err(ForestError::NonFinite { what, row });
        }
    }
    Ok(())
}

fn out_of_bag(
    trees: &[(Tree, Vec<bool>)],
    x: ArrayView2<'_, f64>,
    y: ArrayView2<'_, f64>,
) -> Option<OutOfBag> {
    let n_outputs = y.ncols();
    let mut sums = Array2::<f64>::zeros(y.raw_dim());
    let mut counts = vec![0usize; x.nrows()];
    for (tree, in_bag) in trees {
        for (s, _) in in_bag.iter().enumerate().filter(|(_, b)| !**b) {
            let leaf = tree.leaf(x.row(s), n_outputs);
            sums.row_mut(s)
                .iter_mut()
                .zip(leaf)
                .for_each(|(a, v)| *a += v);
            counts[s] += 1;
        }
    }
    let (mut squared, mut absolute, mut samples) = (0.0, 0.0, 0);
    for (s, &count) in counts.iter().enumerate().filter(|(_, c)| **c > 0) {
        samples += 1;
        for o in 0..n_outputs {
            let err = sums[[s, o]] / count as f64 - y[[s, o]];
            squared += err * err;
            absolute += err.abs();
        }
    }
    (samples > 0).then(|| {
        let cells = (samples * n_outputs) as f64;
        OutOfBag {
            mean_squared_error: squared / cells,
            mean_absolute_error: absolute / cells,
            samples,
        }
    })
}

impl<D: Data<Elem = f64>> PredictInplace<ArrayBase<D, Ix2>, Array2<f64>> for Forest {
    /// Mean over trees for every row. linfa's trait cannot return an error, so a feature
    /// count other than the training one is a caller bug and panics, as in linfa's models;
    /// [`Forest::predict_with_spread`] returns it as an error instead.
    fn predict_inplace(&self, x: &ArrayBase<D, Ix2>, y: &mut Array2<f64>) {
        assert_eq!(
            x.ncols(),
            self.n_features,
            "feature count differs from training"
        );
        assert_eq!(y.dim(), (x.nrows(), self.n_outputs), "target shape");
        let mut row = vec![0.0; self.n_outputs];
        for (xr, mut yr) in x.axis_iter(Axis(0)).zip(y.axis_iter_mut(Axis(0))) {
            self.mean_into(xr, &mut row);
            yr.iter_mut().zip(&row).for_each(|(a, v)| *a = *v);
        }
    }

    fn default_target(&self, x: &ArrayBase<D, Ix2>) -> Array2<f64> {
        Array2::zeros((x.nrows(), self.n_outputs))
    }
}

#[cfg(test)]
mod tests;
