//! Performance categories (thesis §2.4.1): k-means over performance vectors with k chosen by
//! the silhouette score. They say how well the training set covers behaviour (a category of
//! one or two workloads needs company), drive the iterative method (algorithm 4) used as a
//! second predictor, and flag a container whose observations fit no category. A
//! classification tree (`categories::tree`) assigns a measured container to a category and orders the
//! placements by how well they separate categories; the thesis's interval rules stay beside
//! it for novelty and for comparison.

mod tree;

pub use tree::{Assignment, CategoryTree, TreeError};

use linfa::metrics::SilhouetteScore;
use linfa::prelude::*;
use linfa_clustering::{KMeans, KMeansError};
use ndarray::{Array1, ArrayView1, ArrayView2, Axis};
use rand::SeedableRng;
use rand::seq::index;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// How categories are found and used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategoryParams {
    /// Largest k tried (from 2 up).
    pub max_k: usize,
    /// A category with fewer distinct workloads is reported as under-populated.
    pub min_workloads: usize,
    /// Relative widening of every interval before an observation counts as outside it:
    /// measurements are noisy and training intervals are finite samples.
    pub margin: f64,
    /// Largest number of vectors the silhouette is computed on: it costs n² distances
    /// per k, and cross-validation computes it for every fold. Larger sets are scored on a
    /// seeded random subset, as scikit-learn's `sample_size` does.
    pub silhouette_sample: usize,
    /// Seed for k-means and the silhouette subset.
    pub seed: u64,
}

impl Default for CategoryParams {
    fn default() -> Self {
        Self {
            max_k: 10,
            min_workloads: 3,
            margin: 0.03,
            silhouette_sample: 300,
            seed: 0,
        }
    }
}

/// One category: its members and, per placement, the mean and the range of their relative
/// performance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Category {
    /// Distinct member workloads, sorted.
    pub workloads: Vec<String>,
    /// Workload runs in it.
    pub runs: usize,
    /// Mean relative performance per placement: the category-mean prediction.
    pub mean: Vec<f64>,
    /// Lowest relative performance per placement among members.
    pub low: Vec<f64>,
    /// Highest relative performance per placement among members.
    pub high: Vec<f64>,
}

/// The categories of a training set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Categories {
    categories: Vec<Category>,
    /// Mean silhouette coefficient of the chosen k; `None` with a single category.
    silhouette: Option<f64>,
    params: CategoryParams,
    /// The tree that assigns a container measured in the model's measured placements to a
    /// category; absent from model files written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tree: Option<CategoryTree>,
    /// Per placement, its share of a tree's impurity decrease over all placements: how
    /// well a measurement there tells categories apart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    separation: Vec<f64>,
}

/// Why categories could not be found.
#[derive(Debug, thiserror::Error)]
pub enum CategoryError {
    /// No vectors.
    #[error("no performance vectors to categorise")]
    Empty,
    /// k-means failed.
    #[error("k-means with k = {k} failed")]
    KMeans {
        /// The k tried.
        k: usize,
        /// linfa's error.
        source: KMeansError,
    },
    /// The classification tree failed.
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// The silhouette score failed.
    #[error("silhouette score for k = {k} failed")]
    Silhouette {
        /// The k tried.
        k: usize,
        /// linfa's error.
        source: linfa::Error,
    },
}

/// Where one observation falls among the categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Classification {
    /// The best-fitting category, or when novel the one with the nearest interval.
    pub category: usize,
    /// Whether the observation lies outside every category's interval.
    pub novel: bool,
}

/// The result of the iterative method on one workload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IterativeOutcome {
    /// The category it settled on.
    pub category: usize,
    /// Placements measured, the baseline included.
    pub measured: usize,
    /// Whether some observation was outside every remaining category's interval.
    pub novel: bool,
}

impl Categories {
    /// Clusters `vectors` (rows x placements of relative performance) whose rows belong to
    /// `workloads`, trying k = 2..=`max_k` and keeping the best silhouette, then fits the
    /// tree that assigns a container measured in `measured` placements to a category.
    pub fn discover(
        vectors: ArrayView2<'_, f64>,
        workloads: &[&str],
        measured: &[usize],
        params: &CategoryParams,
    ) -> Result<Self, CategoryError> {
        let n = vectors.nrows();
        if n == 0 {
            return Err(CategoryError::Empty);
        }
        let records = vectors.to_owned();
        let sample = params.silhouette_sample.max(2);
        let scored: Vec<usize> = if n > sample {
            let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
            let mut rows = index::sample(&mut rng, n, sample).into_vec();
            rows.sort_unstable();
            rows
        } else {
            (0..n).collect()
        };
        let scored_records = records.select(Axis(0), &scored);
        let mut best: Option<(f64, Array1<usize>)> = None;
        // Silhouette needs a second point in some cluster, so k stays below n.
        for k in 2..=params.max_k.min(n.saturating_sub(1)) {
            let rng = ChaCha8Rng::seed_from_u64(params.seed);
            let data = DatasetBase::from(records.clone());
            let model = KMeans::params_with_rng(k, rng)
                .n_runs(10)
                .fit(&data)
                .map_err(|source| CategoryError::KMeans { k, source })?;
            let labels: Array1<usize> = model.predict(&records);
            let scored_labels = labels.select(Axis(0), &scored);
            let linfa_score = DatasetBase::new(scored_records.view(), scored_labels.view())
                .silhouette_score()
                .map_err(|source| CategoryError::Silhouette { k, source })?;
            let score = rousseeuw(linfa_score, &scored_labels, k);
            tracing::debug!(k, silhouette = score, "k-means");
            if score.is_finite() && best.as_ref().is_none_or(|(b, _)| score > *b) {
                best = Some((score, labels));
            }
        }
        let (silhouette, labels) = match best {
            Some((score, labels)) => (Some(score), labels),
            None => (None, Array1::zeros(n)),
        };
        let k = labels.iter().max().map_or(1, |m| m + 1);
        let categories = (0..k)
            .filter_map(|c| {
                let rows: Vec<usize> = (0..n).filter(|&r| labels[r] == c).collect();
                (!rows.is_empty()).then(|| category(vectors, workloads, &rows))
            })
            .collect();
        let mut found = Self {
            categories,
            silhouette,
            params: params.clone(),
            tree: None,
            separation: Vec::new(),
        };
        let labels = found.nearest(vectors);
        let all: Vec<usize> = (0..vectors.ncols()).collect();
        found.separation = CategoryTree::fit(vectors, &labels, &all)?.1;
        found.tree = Some(CategoryTree::fit(vectors, &labels, measured)?.0);
        Ok(found)
    }

    /// The category of each row of `vectors` (complete vectors): the one with the nearest
    /// mean, which is how k-means labelled the training rows.
    pub fn nearest(&self, vectors: ArrayView2<'_, f64>) -> Vec<usize> {
        vectors
            .axis_iter(Axis(0))
            .map(|row| {
                let distance = |c: &Category| -> f64 {
                    row.iter().zip(&c.mean).map(|(a, b)| (a - b).powi(2)).sum()
                };
                (0..self.categories.len())
                    .min_by(|&a, &b| {
                        distance(&self.categories[a]).total_cmp(&distance(&self.categories[b]))
                    })
                    .unwrap_or(0)
            })
            .collect()
    }

    /// The placements of `candidates` in the order the iterative method measures them: the
    /// one that separates categories best first; ties (and old model files, which lack the
    /// ranking) in the given order.
    pub fn separating_order(&self, candidates: &[usize]) -> Vec<usize> {
        let share = |p: usize| self.separation.get(p).copied().unwrap_or(0.0);
        let mut order = candidates.to_vec();
        order.sort_by(|&a, &b| share(b).total_cmp(&share(a)));
        order
    }

    /// The tree over the measured placements; `None` for model files written before it.
    pub fn tree(&self) -> Option<&CategoryTree> {
        self.tree.as_ref()
    }

    /// The categories; their indices are the ids predictions and reports use.
    pub fn all(&self) -> &[Category] {
        &self.categories
    }

    /// Mean silhouette coefficient of the clustering (`None` with one category).
    pub fn silhouette(&self) -> Option<f64> {
        self.silhouette
    }

    /// Categories with fewer distinct workloads than `min_workloads`: behaviour the training
    /// set covers too thinly for predictions to be trusted.
    pub fn under_populated(&self) -> impl Iterator<Item = (usize, &Category)> {
        self.categories
            .iter()
            .enumerate()
            .filter(|(_, c)| c.workloads.len() < self.params.min_workloads)
    }

    /// Whether `ratio` observed in `placement` lies in category `c`'s interval widened by
    /// the margin and by the observation's own relative uncertainty.
    fn contains(&self, c: usize, placement: usize, ratio: f64, uncertainty: f64) -> bool {
        let cat = &self.categories[c];
        let slack = self.params.margin + uncertainty;
        ratio >= cat.low[placement] * (1.0 - slack) && ratio <= cat.high[placement] * (1.0 + slack)
    }

    /// Whether `placement` is the baseline: 1 in every category.
    fn is_baseline(&self, placement: usize) -> bool {
        self.categories
            .iter()
            .all(|c| c.low.get(placement) == Some(&1.0) && c.high.get(placement) == Some(&1.0))
    }

    /// How far `ratio` lies outside category `c`'s interval at `placement` (0 inside).
    fn distance(&self, c: usize, placement: usize, ratio: f64) -> f64 {
        let cat = &self.categories[c];
        (cat.low[placement] - ratio)
            .max(ratio - cat.high[placement])
            .max(0.0)
    }

    /// The category one observation (`ratio` in `placement`, relative uncertainty
    /// `uncertainty`) fits best: [`Self::classify_by_intervals`], with the tree choosing among
    /// the categories whose interval holds the observation where it can read it (a tree over
    /// `placement` and the baseline, which is 1 by definition). Novelty stays the interval
    /// rule: a tree divides the whole axis among the categories, so it cannot say that no
    /// training workload behaved like this one.
    pub fn classify(&self, placement: usize, ratio: f64, uncertainty: f64) -> Classification {
        let mut class = self.classify_by_intervals(placement, ratio, uncertainty);
        let by_tree = self.tree.as_ref().and_then(|t| {
            t.placements
                .iter()
                .all(|&p| p == placement || self.is_baseline(p))
                .then(|| {
                    t.assign(|p| if p == placement { ratio } else { 1.0 })
                        .category
                })
        });
        if let Some(c) =
            by_tree.filter(|&c| !class.novel && self.contains(c, placement, ratio, uncertainty))
        {
            class.category = c;
        }
        class
    }

    /// The thesis's rule: among the categories whose widened interval holds the
    /// observation, the one whose mean is closest. When no interval holds it the observation
    /// is novel (no training workload behaved like it) and the category with the closest
    /// interval is given instead.
    pub fn classify_by_intervals(
        &self,
        placement: usize,
        ratio: f64,
        uncertainty: f64,
    ) -> Classification {
        let mean_distance = |c: usize| (self.categories[c].mean[placement] - ratio).abs();
        let inside = (0..self.categories.len())
            .filter(|&c| self.contains(c, placement, ratio, uncertainty))
            .min_by(|&a, &b| mean_distance(a).total_cmp(&mean_distance(b)));
        match inside {
            Some(category) => Classification {
                category,
                novel: false,
            },
            None => Classification {
                category: (0..self.categories.len())
                    .min_by(|&a, &b| {
                        self.distance(a, placement, ratio)
                            .total_cmp(&self.distance(b, placement, ratio))
                            .then(mean_distance(a).total_cmp(&mean_distance(b)))
                    })
                    .unwrap_or(0),
                novel: true,
            },
        }
    }

    /// Algorithm 4, the iterative method: measure the placements of `order` one after the
    /// other (the baseline is measured first and tells nothing), excluding the categories
    /// whose interval misses the observation, until one is left. An observation outside
    /// every remaining interval keeps only the closest. If the placements run out first, the
    /// remaining category whose mean is closest on the measured placements wins.
    pub fn iterative(
        &self,
        order: &[usize],
        mut observe: impl FnMut(usize) -> f64,
    ) -> IterativeOutcome {
        let mut remaining: Vec<usize> = (0..self.categories.len()).collect();
        let mut seen: Vec<(usize, f64)> = Vec::new();
        let mut novel = false;
        for &placement in order {
            if remaining.len() <= 1 {
                break;
            }
            let ratio = observe(placement);
            seen.push((placement, ratio));
            let inside: Vec<usize> = remaining
                .iter()
                .copied()
                .filter(|&c| self.contains(c, placement, ratio, 0.0))
                .collect();
            if inside.is_empty() {
                novel = true;
                let closest = remaining.iter().copied().min_by(|&a, &b| {
                    self.distance(a, placement, ratio)
                        .total_cmp(&self.distance(b, placement, ratio))
                });
                remaining = closest.into_iter().collect();
            } else {
                remaining = inside;
            }
        }
        let mean_distance = |c: usize| -> f64 {
            seen.iter()
                .map(|&(p, r)| (self.categories[c].mean[p] - r).powi(2))
                .sum()
        };
        let category = remaining
            .iter()
            .copied()
            .min_by(|&a, &b| mean_distance(a).total_cmp(&mean_distance(b)))
            .unwrap_or(0);
        IterativeOutcome {
            category,
            measured: seen.len() + 1,
            novel,
        }
    }

    /// Trees for the iterative method driven by a tree (see [`TreeIterative`]), fitted on
    /// the training `vectors` this clustering came from: one per prefix of `order`.
    pub fn iterative_trees(
        &self,
        vectors: ArrayView2<'_, f64>,
        order: &[usize],
    ) -> Result<TreeIterative, TreeError> {
        let labels = self.nearest(vectors);
        let trees = (1..=order.len())
            .map(|k| CategoryTree::fit(vectors, &labels, &order[..k]).map(|(t, _)| t))
            .collect::<Result<_, _>>()?;
        Ok(TreeIterative {
            order: order.to_vec(),
            trees,
        })
    }

    /// The category-mean prediction for category `c`.
    pub fn mean(&self, c: usize) -> ArrayView1<'_, f64> {
        ArrayView1::from(&self.categories[c].mean[..])
    }

    /// Checks categories read from a file against the model's placement count.
    pub(crate) fn check(&self, n_placements: usize) -> Result<(), String> {
        if self.categories.is_empty() {
            return Err("no categories".into());
        }
        for (i, c) in self.categories.iter().enumerate() {
            if [&c.mean, &c.low, &c.high]
                .iter()
                .any(|v| v.len() != n_placements)
            {
                return Err(format!(
                    "category {i} does not have {n_placements} placements"
                ));
            }
        }
        if !self.separation.is_empty() && self.separation.len() != n_placements {
            return Err(format!(
                "the category separation does not have {n_placements} placements"
            ));
        }
        if let Some(t) = &self.tree {
            t.check(n_placements, self.categories.len())?;
        }
        Ok(())
    }
}

/// Algorithm 4 with the tree in place of the interval rules: measure the placements of
/// `order` one after the other and ask the tree over what was measured so far; stop when its
/// leaf holds one category only (the measurements tell the categories apart there), or when
/// an observation lies outside every category's interval (novel: more measurements cannot
/// find a category it does not have).
#[derive(Debug, Clone)]
pub struct TreeIterative {
    order: Vec<usize>,
    trees: Vec<CategoryTree>,
}

impl TreeIterative {
    /// Runs the method on one container whose relative performance in placement `p` is
    /// `observe(p)`.
    pub fn run(
        &self,
        categories: &Categories,
        mut observe: impl FnMut(usize) -> f64,
    ) -> IterativeOutcome {
        let mut seen: Vec<(usize, f64)> = Vec::new();
        let mut outcome = IterativeOutcome {
            category: 0,
            measured: 1,
            novel: false,
        };
        for (&placement, tree) in self.order.iter().zip(&self.trees) {
            let ratio = observe(placement);
            seen.push((placement, ratio));
            let assignment =
                tree.assign(|p| seen.iter().find(|(q, _)| *q == p).map_or(1.0, |&(_, r)| r));
            let novel = categories
                .classify_by_intervals(placement, ratio, 0.0)
                .novel;
            outcome = IterativeOutcome {
                category: assignment.category,
                measured: seen.len() + 1,
                novel: outcome.novel || novel,
            };
            if assignment.pure || novel {
                break;
            }
        }
        outcome
    }
}

/// linfa scores a sample alone in its cluster 1 (its mean distance to its own cluster is 0);
/// Rousseeuw's definition, which scikit-learn follows, scores it 0. With linfa's, the
/// silhouette rewards splitting off single workloads and k drifts towards n. Every
/// singleton added exactly 1 to linfa's sum, so taking that back out gives the standard mean.
fn rousseeuw(linfa_mean: f64, labels: &Array1<usize>, k: usize) -> f64 {
    let mut sizes = vec![0usize; k];
    labels.iter().for_each(|&l| sizes[l] += 1);
    let singletons = sizes.iter().filter(|&&s| s == 1).count();
    let n = labels.len() as f64;
    (linfa_mean * n - singletons as f64) / n
}

fn category(vectors: ArrayView2<'_, f64>, workloads: &[&str], rows: &[usize]) -> Category {
    let members = vectors.select(Axis(0), rows);
    let column = |f: fn(f64, f64) -> f64, init: f64| -> Vec<f64> {
        members
            .axis_iter(Axis(1))
            .map(|c| c.iter().copied().fold(init, f))
            .collect()
    };
    let mut names: Vec<String> = rows.iter().map(|&r| workloads[r].to_owned()).collect();
    names.sort();
    names.dedup();
    Category {
        workloads: names,
        runs: rows.len(),
        mean: members
            .mean_axis(Axis(0))
            .map(|m| m.to_vec())
            .unwrap_or_default(),
        low: column(f64::min, f64::INFINITY),
        high: column(f64::max, f64::NEG_INFINITY),
    }
}

#[cfg(test)]
mod tests {
    use ndarray::{Array2, array};

    use super::*;

    /// Three tight groups of relative-performance vectors over three placements, the third
    /// group a single workload.
    fn groups() -> (Array2<f64>, Vec<&'static str>) {
        let vectors = array![
            [1.0, 1.00, 1.00],
            [1.0, 1.02, 0.99],
            [1.0, 0.98, 1.01],
            [1.0, 1.50, 2.00],
            [1.0, 1.52, 2.05],
            [1.0, 1.48, 1.95],
            [1.0, 0.50, 0.40],
        ];
        let names = vec!["f1", "f2", "f3", "s1", "s2", "s3", "lonely"];
        (vectors, names)
    }

    #[test]
    fn separated_groups_become_categories_and_thin_ones_are_reported() {
        let (vectors, names) = groups();
        let cats = Categories::discover(vectors.view(), &names, &[1], &CategoryParams::default())
            .expect("clusters");
        assert_eq!(cats.all().len(), 3);
        let mut members: Vec<Vec<String>> =
            cats.all().iter().map(|c| c.workloads.clone()).collect();
        members.sort();
        assert_eq!(
            members,
            vec![
                vec!["f1", "f2", "f3"],
                vec!["lonely"],
                vec!["s1", "s2", "s3"]
            ]
        );
        let thin: Vec<&Vec<String>> = cats.under_populated().map(|(_, c)| &c.workloads).collect();
        assert_eq!(thin, vec![&vec!["lonely".to_owned()]]);
        assert!(cats.silhouette().is_some_and(|s| s > 0.8));
    }

    fn category_of(cats: &Categories, workload: &str) -> usize {
        cats.all()
            .iter()
            .position(|c| c.workloads.iter().any(|w| w == workload))
            .expect("member")
    }

    #[test]
    fn the_iterative_method_finds_the_category_and_its_mean() {
        let (vectors, names) = groups();
        let cats = Categories::discover(vectors.view(), &names, &[1], &CategoryParams::default())
            .expect("clusters");
        let scaling = [1.0, 1.49, 2.01];
        let outcome = cats.iterative(&[1, 2], |p| scaling[p]);
        assert_eq!(outcome.category, category_of(&cats, "s1"));
        assert_eq!(outcome.measured, 2, "the first placement already decides");
        assert!(!outcome.novel);
        assert!((cats.mean(outcome.category)[2] - 2.0).abs() < 1e-9);

        // Outside every interval: the closest category is kept and the outcome is novel.
        let odd = [1.0, 3.0, 3.0];
        let outcome = cats.iterative(&[1, 2], |p| odd[p]);
        assert!(outcome.novel);
        assert_eq!(outcome.category, category_of(&cats, "s1"));
    }

    #[test]
    fn the_tree_ranks_the_separating_placement_and_ends_the_iterative_method_early() {
        let (vectors, names) = groups();
        let cats = Categories::discover(vectors.view(), &names, &[1], &CategoryParams::default())
            .expect("clusters");
        // The baseline (column 0) tells nothing, so it never comes first.
        let order = cats.separating_order(&[0, 1, 2]);
        assert_ne!(order[0], 0, "{order:?}");
        assert!(cats.separation[order[0]] > 0.0, "{:?}", cats.separation);
        assert_eq!(cats.separation[0], 0.0);
        assert_eq!(cats.nearest(vectors.view())[3], category_of(&cats, "s1"));
        let trees = cats
            .iterative_trees(vectors.view(), &cats.separating_order(&[1, 2]))
            .expect("trees");
        let scaling = [1.0, 1.49, 2.01];
        let outcome = trees.run(&cats, |p| scaling[p]);
        assert_eq!(outcome.category, category_of(&cats, "s1"));
        assert_eq!(
            outcome.measured, 2,
            "one placement already tells the groups apart"
        );
        assert!(!outcome.novel);
        // Far outside every group: novel at once, no further measurement.
        let odd = [1.0, 9.0, 9.0];
        let outcome = trees.run(&cats, |p| odd[p]);
        assert!(outcome.novel);
        assert_eq!(outcome.measured, 2);
    }

    #[test]
    fn the_tree_assigns_overlapping_categories_and_novelty_stays_the_interval_rule() {
        // Two categories overlap at placement 1 (0.9-1.1 and 1.0-1.3).
        let vectors = array![
            [1.0, 0.90, 0.5],
            [1.0, 0.92, 0.5],
            [1.0, 0.95, 0.5],
            [1.0, 1.10, 0.5],
            [1.0, 1.00, 2.0],
            [1.0, 1.20, 2.0],
            [1.0, 1.25, 2.0],
            [1.0, 1.30, 2.0],
        ];
        let names = ["a", "b", "c", "d", "e", "f", "g", "h"];
        let cats =
            Categories::discover(vectors.view(), &names, &[0, 1], &CategoryParams::default())
                .expect("clusters");
        assert_eq!(cats.all().len(), 2);
        let tree = cats.tree().expect("a tree");
        assert_eq!(tree.placements, vec![0, 1]);
        let fast = category_of(&cats, "h");
        let slow = category_of(&cats, "a");
        assert_eq!(cats.classify(1, 1.28, 0.0).category, fast);
        assert_eq!(cats.classify(1, 0.91, 0.0).category, slow);
        assert!(!cats.classify(1, 1.06, 0.0).novel);
        assert!(cats.classify(1, 2.5, 0.0).novel);
    }

    #[test]
    fn novelty_is_an_observation_outside_every_widened_interval() {
        let (vectors, names) = groups();
        let cats = Categories::discover(vectors.view(), &names, &[1], &CategoryParams::default())
            .expect("clusters");
        let flat = category_of(&cats, "f1");
        assert_eq!(
            cats.classify(1, 1.01, 0.0),
            Classification {
                category: flat,
                novel: false
            }
        );
        // Between the groups: novel, and the nearest interval is the flat group's.
        assert_eq!(
            cats.classify(1, 0.8, 0.0),
            Classification {
                category: flat,
                novel: true
            }
        );
        // The observation's own uncertainty widens the intervals.
        assert!(!cats.classify(1, 0.8, 0.3).novel);
    }

    #[test]
    fn large_sets_are_scored_on_a_subset_and_still_find_the_groups() {
        let (groups, _) = groups();
        // 100 noisy copies of each of the first six vectors: two groups of 300.
        let vectors = Array2::from_shape_fn((600, 3), |(r, p)| {
            groups[[r % 6, p]] + 0.001 * ((r * 7 + p) % 5) as f64
        });
        let names: Vec<String> = (0..600).map(|r| format!("w{r}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let params = CategoryParams {
            silhouette_sample: 50,
            ..CategoryParams::default()
        };
        let cats = Categories::discover(vectors.view(), &names, &[1], &params).expect("clusters");
        let mut sizes: Vec<usize> = cats.all().iter().map(|c| c.runs).collect();
        sizes.sort_unstable();
        assert_eq!(sizes, vec![300, 300]);
    }

    #[test]
    fn too_few_vectors_make_one_category() {
        let vectors = array![[1.0, 2.0], [1.0, 2.2]];
        let cats = Categories::discover(
            vectors.view(),
            &["a", "b"],
            &[1],
            &CategoryParams::default(),
        )
        .expect("one category");
        assert_eq!(cats.all().len(), 1);
        assert_eq!(cats.silhouette(), None);
        assert!(matches!(
            Categories::discover(
                Array2::zeros((0, 2)).view(),
                &[],
                &[1],
                &CategoryParams::default()
            ),
            Err(CategoryError::Empty)
        ));
    }
}
