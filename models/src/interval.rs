//! Calibrated prediction intervals: cross-conformal calibration on the leave-one-family-out
//! predictions (docs/models.md, "Prediction intervals").
//!
//! Every held-out cell gets a nonconformity score `|actual - predicted| / scale`, where the
//! scale is the prediction itself ([`Score::Relative`]) or the trees' spread plus a floor
//! ([`Score::Spread`]). A placement's interval half-width is `q x scale`, `q` being the
//! `ceil((n+1) level)`-th smallest of its `n` scores: for exchangeable cells that covers a
//! new one with probability at least `level` (split conformal's finite-sample bound).
//!
//! Coverage is measured the same way the error is: each family's cells are checked against
//! a calibration fitted on every other family's scores, so a figure is never judged on the
//! scores it was fitted on.

use ndarray::{Array2, ArrayView2};
use serde::{Deserialize, Serialize};

use crate::table::RowInfo;

/// The layout of [`Calibration`] this build writes and reads; a model file with another
/// loads without intervals.
pub const CALIBRATION_VERSION: u32 = 1;

/// The nominal coverage of the intervals placed-train fits unless told otherwise.
pub const DEFAULT_LEVEL: f64 = 0.9;

/// What a cell's error is measured against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Score {
    /// Relative to the prediction: every cell of a placement gets the same relative width.
    Relative,
    /// Relative to the trees' spread (plus a floor), so cells the trees disagree on get
    /// wider intervals.
    Spread,
}

/// How intervals are calibrated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalParams {
    /// Nominal coverage, in (0, 1).
    pub level: f64,
    /// The nonconformity score.
    pub score: Score,
}

impl Default for IntervalParams {
    fn default() -> Self {
        Self {
            level: DEFAULT_LEVEL,
            score: Score::Spread,
        }
    }
}

/// One placement's calibration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PlacementCalibration {
    /// Half-width of the interval in units of the scale.
    pub quantile: f64,
    /// Added to the trees' spread in [`Score::Spread`] (0 for [`Score::Relative`]), so a
    /// cell all trees agree on still gets an interval.
    pub floor: f64,
    /// Held-out cells it was fitted on.
    pub cells: usize,
}

impl PlacementCalibration {
    /// Fits one placement from its held-out cells `(predicted, spread, actual)`; `None`
    /// when there are too few cells for the level (fewer than `1/(1-level) - 1`): the
    /// interval would be unbounded.
    fn fit(cells: &[(f64, f64, f64)], params: IntervalParams) -> Option<Self> {
        if cells.is_empty() {
            return None;
        }
        let floor = match params.score {
            Score::Relative => 0.0,
            Score::Spread => {
                let mut spreads: Vec<f64> = cells.iter().map(|c| c.1).collect();
                let mut predictions: Vec<f64> = cells.iter().map(|c| c.0).collect();
                // The median spread keeps the scale from vanishing where the trees agree;
                // 0.1% of the typical prediction keeps it positive if they always do.
                median(&mut spreads).max(1e-3 * median(&mut predictions))
            }
        };
        let probe = Self {
            quantile: 0.0,
            floor,
            cells: cells.len(),
        };
        let mut scores: Vec<f64> = cells
            .iter()
            .map(|&(p, s, a)| (a - p).abs() / probe.scale(params.score, p, s))
            // A cell with no finite score (a prediction of 0 under the relative score)
            // says nothing about the width; a NaN would sort last and could become the
            // quantile, which JSON cannot hold.
            .filter(|s| s.is_finite())
            .collect();
        let quantile = conformal_quantile(&mut scores, params.level)?;
        Some(Self { quantile, ..probe })
    }

    fn scale(&self, score: Score, predicted: f64, spread: f64) -> f64 {
        match score {
            Score::Relative => predicted.abs(),
            Score::Spread => spread + self.floor,
        }
    }
}

/// The `ceil((n+1) level)`-th smallest score; `None` when that rank exceeds `n`.
pub(crate) fn conformal_quantile(scores: &mut [f64], level: f64) -> Option<f64> {
    let n = scores.len();
    // The small slack keeps (n+1) x 0.9 = 90.00000000001 from rounding up a rank.
    let rank = ((n as f64 + 1.0) * level - 1e-9).ceil().max(1.0);
    // Truncation is exact: rank is a small positive whole number.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let rank = rank as usize;
    if rank > n {
        return None;
    }
    scores.sort_by(f64::total_cmp);
    Some(scores[rank - 1])
}

fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 0 {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    }
}

/// A predicted cell's interval of relative performance.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Lower end (never below 0).
    pub low: f64,
    /// Upper end.
    pub high: f64,
    /// Nominal coverage.
    pub level: f64,
}

impl Interval {
    /// Whether `value` lies inside.
    pub fn contains(&self, value: f64) -> bool {
        self.low <= value && value <= self.high
    }
}

/// How often intervals covered the actual value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CellCoverage {
    /// Cells whose actual value was inside.
    pub covered: usize,
    /// Cells checked.
    pub cells: usize,
    /// Mean half-width, in percent of the prediction; `None` where some interval was
    /// unbounded (too few other cells for the level). JSON has no infinity: an infinite
    /// width was written as `null` and the model file then did not load.
    pub mean_half_width: Option<f64>,
}

impl CellCoverage {
    /// Fraction covered; `None` with no cells.
    pub fn fraction(&self) -> Option<f64> {
        (self.cells > 0).then(|| self.covered as f64 / self.cells as f64)
    }

    fn add(&mut self, other: &Self) {
        let cells = self.cells + other.cells;
        if other.cells > 0 {
            self.mean_half_width = match (self.mean_half_width, other.mean_half_width) {
                (Some(a), Some(b)) => {
                    Some((a * self.cells as f64 + b * other.cells as f64) / cells as f64)
                }
                (None, _) if self.cells > 0 => None,
                (_, b) => b.filter(|_| self.cells == 0),
            };
        }
        self.covered += other.covered;
        self.cells = cells;
    }
}

/// Cross-validated coverage of the intervals: per placement (`None` for a measured one)
/// and over every predicted cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    /// Nominal coverage.
    pub level: f64,
    /// One entry per placement, in the model's order.
    pub placements: Vec<Option<CellCoverage>>,
    /// Every predicted cell.
    pub overall: CellCoverage,
}

/// What a model stores to put an interval around each predicted cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// [`CALIBRATION_VERSION`] when written.
    pub version: u32,
    /// Nominal coverage.
    pub level: f64,
    /// The nonconformity score.
    pub score: Score,
    /// One entry per placement; `None` for a measured one, or one with too few cells.
    pub placements: Vec<Option<PlacementCalibration>>,
    /// Its cross-validated coverage.
    pub coverage: Coverage,
}

impl Calibration {
    /// The interval around a prediction of placement `p` with the trees' `spread`; `None`
    /// where the placement has no calibration.
    pub fn interval(&self, p: usize, predicted: f64, spread: f64) -> Option<Interval> {
        let c = self.placements.get(p).copied().flatten()?;
        let half = c.quantile * c.scale(self.score, predicted, spread);
        Some(Interval {
            low: (predicted - half).max(0.0),
            high: predicted + half,
            level: self.level,
        })
    }

    /// Checks a calibration read from a file against the model's placements.
    pub(crate) fn check(&self, n_placements: usize) -> Result<(), String> {
        if !(self.level > 0.0 && self.level < 1.0) {
            return Err(format!("interval level {} is not in (0, 1)", self.level));
        }
        if self.placements.len() != n_placements || self.coverage.placements.len() != n_placements {
            return Err(format!(
                "calibration for {} placements, the model has {n_placements}",
                self.placements.len()
            ));
        }
        let bad = self.placements.iter().flatten().any(|c| {
            !(c.quantile.is_finite() && c.quantile >= 0.0 && c.floor.is_finite() && c.floor >= 0.0)
        });
        if bad {
            return Err("a calibration quantile or floor is negative or not finite".into());
        }
        Ok(())
    }
}

/// Held-out predictions to calibrate on: rows x placements of the forest's mean, the trees'
/// spread and the actual values, with the placements that are measured rather than
/// predicted.
pub(crate) struct HeldOut<'a> {
    pub(crate) predicted: ArrayView2<'a, f64>,
    pub(crate) spread: ArrayView2<'a, f64>,
    pub(crate) actual: ArrayView2<'a, f64>,
    pub(crate) measured: &'a [usize],
    pub(crate) rows: &'a [RowInfo],
}

impl HeldOut<'_> {
    fn cells(&self, p: usize, keep: impl Fn(usize) -> bool) -> Vec<(f64, f64, f64)> {
        (0..self.actual.nrows())
            // A cell completed by another model (NaN) has no measurement to score.
            .filter(|&r| keep(r) && !self.actual[[r, p]].is_nan())
            .map(|r| {
                (
                    self.predicted[[r, p]],
                    self.spread[[r, p]],
                    self.actual[[r, p]],
                )
            })
            .collect()
    }

    /// Per row and placement, the lower and upper ends of the interval from a calibration
    /// fitted without the row's family: what the daemon's lower-bound rule and its third
    /// measurement read, out of fold. NaN for a measured placement, or where too few other
    /// cells bound it.
    pub(crate) fn bounds(&self, params: IntervalParams) -> (Array2<f64>, Array2<f64>) {
        let mut low = Array2::from_elem(self.actual.dim(), f64::NAN);
        let mut high = low.clone();
        let mut families: Vec<&str> = self.rows.iter().map(|r| r.family.as_str()).collect();
        families.sort_unstable();
        families.dedup();
        for p in (0..self.actual.ncols()).filter(|p| !self.measured.contains(p)) {
            for family in &families {
                let of_family = |r: usize| self.rows[r].family == *family;
                let Some(fitted) =
                    PlacementCalibration::fit(&self.cells(p, |r| !of_family(r)), params)
                else {
                    continue;
                };
                for r in (0..self.actual.nrows()).filter(|&r| of_family(r)) {
                    let (pred, spread) = (self.predicted[[r, p]], self.spread[[r, p]]);
                    let half = fitted.quantile * fitted.scale(params.score, pred, spread);
                    low[[r, p]] = (pred - half).max(0.0);
                    high[[r, p]] = pred + half;
                }
            }
        }
        (low, high)
    }

    /// Fits the calibration on every held-out cell and measures its coverage by leaving
    /// one family out of the calibration at a time.
    pub(crate) fn calibrate(&self, params: IntervalParams) -> Calibration {
        let n_placements = self.actual.ncols();
        let predicted = |p: usize| !self.measured.contains(&p);
        let placements = (0..n_placements)
            .map(|p| {
                predicted(p)
                    .then(|| PlacementCalibration::fit(&self.cells(p, |_| true), params))
                    .flatten()
            })
            .collect();
        let mut families: Vec<&str> = self.rows.iter().map(|r| r.family.as_str()).collect();
        families.sort_unstable();
        families.dedup();
        let mut per_placement = vec![None::<CellCoverage>; n_placements];
        let mut overall = CellCoverage {
            covered: 0,
            cells: 0,
            mean_half_width: Some(0.0),
        };
        for (p, slot) in per_placement.iter_mut().enumerate() {
            if !predicted(p) {
                continue;
            }
            let mut total = CellCoverage {
                covered: 0,
                cells: 0,
                mean_half_width: Some(0.0),
            };
            for family in &families {
                let of_family = |r: usize| self.rows[r].family == *family;
                let fitted = PlacementCalibration::fit(&self.cells(p, |r| !of_family(r)), params);
                let tested = self.cells(p, of_family);
                let mut widths = 0.0;
                let mut covered = 0;
                for &(pred, spread, actual) in &tested {
                    // Too few other cells for the level: the interval is unbounded and
                    // covers everything; its width counts as infinite.
                    let half = fitted.map_or(f64::INFINITY, |c| {
                        c.quantile * c.scale(params.score, pred, spread)
                    });
                    covered += usize::from((actual - pred).abs() <= half);
                    widths += half / pred.abs().max(f64::MIN_POSITIVE) * 100.0;
                }
                total.add(&CellCoverage {
                    covered,
                    cells: tested.len(),
                    mean_half_width: if tested.is_empty() {
                        Some(0.0)
                    } else {
                        Some(widths / tested.len() as f64).filter(|w| w.is_finite())
                    },
                });
            }
            overall.add(&total);
            *slot = Some(total);
        }
        Calibration {
            version: CALIBRATION_VERSION,
            level: params.level,
            score: params.score,
            placements,
            coverage: Coverage {
                level: params.level,
                placements: per_placement,
                overall,
            },
        }
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn the_quantile_takes_the_finite_sample_rank() {
        // n = 9 at 90%: rank ceil(10 x 0.9) = 9, the largest.
        let mut s: Vec<f64> = (1..=9).map(f64::from).collect();
        assert_eq!(conformal_quantile(&mut s, 0.9), Some(9.0));
        // n = 8: rank ceil(9 x 0.9) = 9 > 8, unbounded.
        let mut s: Vec<f64> = (1..=8).map(f64::from).collect();
        assert_eq!(conformal_quantile(&mut s, 0.9), None);
        // n = 19: rank 18.
        let mut s: Vec<f64> = (1..=19).rev().map(f64::from).collect();
        assert_eq!(conformal_quantile(&mut s, 0.9), Some(18.0));
    }

    fn rows(n: usize, families: usize) -> Vec<RowInfo> {
        (0..n)
            .map(|i| RowInfo {
                workload: format!("w{i}"),
                family: format!("f{}", i % families),
                run: 0,
            })
            .collect()
    }

    /// Errors of known size: row r is off by (r mod 10 + 1)% in placement 1.
    fn held_out(n: usize) -> (Array2<f64>, Array2<f64>, Array2<f64>) {
        let predicted = Array2::from_elem((n, 2), 1.0);
        let spread = Array2::from_elem((n, 2), 0.01);
        let actual = Array2::from_shape_fn((n, 2), |(r, p)| {
            if p == 0 {
                1.0
            } else {
                1.0 + ((r % 10) as f64 + 1.0) / 100.0
            }
        });
        (predicted, spread, actual)
    }

    #[test]
    fn intervals_cover_the_level_of_held_out_cells() {
        let (predicted, spread, actual) = held_out(200);
        let rows = rows(200, 20);
        let held_out = HeldOut {
            predicted: predicted.view(),
            spread: spread.view(),
            actual: actual.view(),
            measured: &[0],
            rows: &rows,
        };
        for score in [Score::Relative, Score::Spread] {
            let c = held_out.calibrate(IntervalParams { level: 0.9, score });
            assert!(c.placements[0].is_none(), "measured: no interval");
            let interval = c.interval(1, 1.0, 0.01).expect("calibrated");
            // Errors are 1..10%; 90% of them are at most 9%, and the finite-sample rank
            // (ceil(201 x 0.9) = 181 of 200) lands on 10%.
            assert!(
                (interval.high - 1.10).abs() < 1e-9,
                "{score:?}: {interval:?}"
            );
            let covered = c.coverage.overall.fraction().expect("cells");
            assert!((0.85..=1.0).contains(&covered), "{score:?}: {covered}");
            assert_eq!(c.coverage.overall.cells, 200);
            assert!(c.coverage.placements[0].is_none());
        }
    }

    #[test]
    fn spread_scores_widen_the_cells_the_trees_disagree_on() {
        let (predicted, spread, actual) = held_out(100);
        let rows = rows(100, 10);
        let held_out = HeldOut {
            predicted: predicted.view(),
            spread: spread.view(),
            actual: actual.view(),
            measured: &[0],
            rows: &rows,
        };
        let c = held_out.calibrate(IntervalParams {
            level: 0.9,
            score: Score::Spread,
        });
        let calm = c.interval(1, 1.0, 0.01).expect("calibrated");
        let torn = c.interval(1, 1.0, 0.05).expect("calibrated");
        assert!(torn.high - torn.low > 2.0 * (calm.high - calm.low));
    }

    #[test]
    fn a_calibration_for_other_placements_is_refused() {
        let (predicted, spread, actual) = held_out(50);
        let rows = rows(50, 5);
        let c = HeldOut {
            predicted: predicted.view(),
            spread: spread.view(),
            actual: actual.view(),
            measured: &[0],
            rows: &rows,
        }
        .calibrate(IntervalParams::default());
        c.check(2).expect("matches the placements");
        assert!(c.check(3).is_err());
    }
}
