//! What the model across sizes and the model across machine classes share: one forest over
//! placements described by their resources, trained on several groups of data (the sizes of
//! one class, or many classes), measured by holding each group out in turn.
//!
//! A group is one data file cross-validated as its own model would be (its probe, its
//! measured matrix) with every placement described. The forest maps (the baseline's and
//! the probe's descriptions, the probe's measured ratio, a target placement's description
//! and how it differs from the baseline's) to the target's relative performance. A group
//! held out is probed in its placement described nearest the others' own probes, and each
//! of its families is predicted by a forest that saw neither the group nor the family.

use linfa::DatasetBase;
use linfa::prelude::*;
use ndarray::{Array1, Array2};

use crate::dominance::Order;
use crate::evaluation::Evaluation;
use crate::forest::{Forest, ForestError, ForestParams};
use crate::spread_scale::relative_spread;

/// One group's data as the forest reads it.
pub(crate) struct Group {
    pub(crate) evaluation: Evaluation,
    /// Per placement (the data's order), its description.
    pub(crate) described: Vec<Vec<f64>>,
    /// Which placements are no better than which (empty where unknown).
    pub(crate) order: Order,
}

impl Group {
    fn probe_ratio(&self, row: usize, probe: usize) -> f64 {
        // Relative performance is over the baseline's, so the probe's is the ratio.
        self.evaluation.actual[[row, probe]]
    }

    /// The feature vector of `row` measured in the baseline and `probe`, for `target`.
    fn features(&self, row: usize, probe: usize, target: usize) -> Vec<f64> {
        row_features(
            &self.described[self.evaluation.baseline],
            &self.described[probe],
            self.probe_ratio(row, probe),
            &self.described[target],
        )
    }

    /// Targets predicted for a container measured in the baseline and `probe`.
    fn targets(&self, probe: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.described.len()).filter(move |&p| p != self.evaluation.baseline && p != probe)
    }
}

/// The forest's input for one target placement of a container measured in the baseline and
/// the probe (`ratio` = probe over baseline). The differences are there because a tree
/// splits on one input at a time: "two more nodes than the baseline" is one split on them
/// and many on the two descriptions.
pub(crate) fn row_features(base: &[f64], probe: &[f64], ratio: f64, target: &[f64]) -> Vec<f64> {
    base.iter()
        .chain(probe)
        .copied()
        .chain(std::iter::once(ratio))
        .chain(target.iter().copied())
        .chain(target.iter().zip(base).map(|(t, b)| t - b))
        .collect()
}

/// How many inputs [`row_features`] gives for descriptions of `width` values.
pub(crate) fn input_width(width: usize) -> usize {
    4 * width + 1
}

fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>()
}

/// The placement (not the baseline) whose description is nearest `to`; `None` when the
/// baseline is the only one.
pub(crate) fn nearest(described: &[Vec<f64>], baseline: usize, to: &[f64]) -> Option<usize> {
    (0..described.len())
        .filter(|&p| p != baseline)
        .min_by(|&a, &b| distance(&described[a], to).total_cmp(&distance(&described[b], to)))
}

/// The mean description of the probes `groups` chose.
pub(crate) fn mean_probe(groups: &[&Group]) -> Vec<f64> {
    let width = groups.first().map_or(0, |g| g.described[0].len());
    let mut mean = vec![0.0; width];
    for g in groups {
        for (m, x) in mean.iter_mut().zip(&g.described[g.evaluation.probe]) {
            *m += x / groups.len() as f64;
        }
    }
    mean
}

/// Every row of `groups` but those of the families `left_out`, each target placement of
/// each run one row, with the probe each group's cross-validation chose.
fn training_rows(
    groups: &[&Group],
    left_out: &[&str],
) -> Result<(Array2<f64>, Array2<f64>), ForestError> {
    let mut x: Vec<f64> = Vec::new();
    let mut y: Vec<f64> = Vec::new();
    let mut width = 0;
    for g in groups {
        let e = &g.evaluation;
        for (r, row) in e.rows.iter().enumerate() {
            if left_out.contains(&row.family.as_str()) {
                continue;
            }
            for target in g.targets(e.probe) {
                let f = g.features(r, e.probe, target);
                width = f.len();
                x.extend(f);
                y.push(e.actual[[r, target]]);
            }
        }
    }
    let n = y.len();
    let shape = |e: ndarray::ShapeError| ForestError::Inconsistent {
        reason: e.to_string(),
    };
    Ok((
        Array2::from_shape_vec((n, width), x).map_err(shape)?,
        Array2::from_shape_vec((n, 1), y).map_err(shape)?,
    ))
}

/// The forest over every row of `groups`.
pub(crate) fn fit(groups: &[&Group], params: &ForestParams) -> Result<Forest, ForestError> {
    let (x, y) = training_rows(groups, &[])?;
    params.fit(&DatasetBase::new(x, y))
}

/// The groups of `groups` but the `k`th.
pub(crate) fn all_but<'a>(groups: &[&'a Group], k: usize) -> Vec<&'a Group> {
    groups
        .iter()
        .enumerate()
        .filter(|&(j, _)| j != k)
        .map(|(_, g)| *g)
        .collect()
}

/// One group predicted by the others.
pub(crate) struct HeldOut {
    /// The placement it was probed in.
    pub(crate) probe: usize,
    /// Each predicted cell's relative error (a fraction), row by row.
    pub(crate) errors: Vec<f64>,
    /// Each predicted cell's relative spread across the forest's trees, in the same order.
    pub(crate) spreads: Vec<f64>,
}

/// `held` predicted by forests trained on `others`, its families dealt into `folds` folds
/// (`None`: one family per fold), each fold predicted with its families left out of
/// training too.
pub(crate) fn hold_out(
    held: &Group,
    others: &[&Group],
    params: &ForestParams,
    folds: Option<usize>,
) -> Result<HeldOut, ForestError> {
    let e = &held.evaluation;
    let probe = nearest(&held.described, e.baseline, &mean_probe(others)).unwrap_or(e.probe);
    let mut families: Vec<&str> = e.rows.iter().map(|r| r.family.as_str()).collect();
    families.sort_unstable();
    families.dedup();
    let folds = folds.map_or(families.len(), |f| f.clamp(1, families.len().max(1)));
    let (mut errors, mut spreads) = (Vec::new(), Vec::new());
    for fold in 0..folds {
        // Sorted names put a family's siblings (`bandwidth-0`, `bandwidth-1`) side by
        // side: dealt round, they land in different folds.
        let out: Vec<&str> = families
            .iter()
            .enumerate()
            .filter(|(i, _)| i % folds == fold)
            .map(|(_, f)| *f)
            .collect();
        let (x, y) = training_rows(others, &out)?;
        let forest = params.fit(&DatasetBase::new(x, y))?;
        for r in (0..e.rows.len()).filter(|&r| out.contains(&e.rows[r].family.as_str())) {
            for target in held.targets(probe) {
                let x = Array1::from(held.features(r, probe, target));
                let forest_says = forest.predict_with_spread(x.view())?;
                let predicted = held.order.bound(
                    target,
                    e.baseline,
                    probe,
                    held.probe_ratio(r, probe),
                    forest_says.mean[0],
                );
                let actual = e.actual[[r, target]];
                errors.push((predicted - actual).abs() / actual);
                spreads.push(relative_spread(forest_says.mean[0], forest_says.spread[0]));
            }
        }
    }
    Ok(HeldOut {
        probe,
        errors,
        spreads,
    })
}
