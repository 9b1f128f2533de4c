//! Prediction accuracy as the thesis reports it: absolute percentage error of predicted
//! against actual relative performance, summarised as a mean and a worst case.

use ndarray::{Array2, ArrayView2};
use serde::{Deserialize, Serialize};

/// Mean and worst absolute percentage error over some cells.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ErrorSummary {
    /// Mean absolute percentage error.
    pub mean: f64,
    /// Largest absolute percentage error.
    pub worst: f64,
    /// Cells summarised.
    pub cells: usize,
}

impl ErrorSummary {
    pub(crate) fn of(values: impl Iterator<Item = f64>) -> Option<Self> {
        let (mut sum, mut worst, mut cells) = (0.0, 0.0_f64, 0);
        for v in values {
            sum += v;
            worst = worst.max(v);
            cells += 1;
        }
        (cells > 0).then(|| Self {
            mean: sum / cells as f64,
            worst,
            cells,
        })
    }
}

/// Absolute percentage errors per (row, placement). Placements that were measured rather
/// than predicted (the baseline and the probe) are not scored: every predictor is compared
/// on the same placements, those a prediction is actually needed for.
#[derive(Debug, Clone, PartialEq)]
pub struct Accuracy {
    /// rows x placements; NaN where not scored.
    errors: Array2<f64>,
    scored: Vec<bool>,
}

impl Accuracy {
    /// Compares `predicted` with `actual` (both rows x placements), skipping `measured`
    /// placement columns.
    pub(crate) fn new(
        predicted: ArrayView2<'_, f64>,
        actual: ArrayView2<'_, f64>,
        measured: &[usize],
    ) -> Self {
        let scored: Vec<bool> = (0..actual.ncols())
            .map(|p| !measured.contains(&p))
            .collect();
        let errors = Array2::from_shape_fn(actual.raw_dim(), |(r, p)| {
            if scored[p] {
                (predicted[[r, p]] - actual[[r, p]]).abs() / actual[[r, p]] * 100.0
            } else {
                f64::NAN
            }
        });
        Self { errors, scored }
    }

    /// Over every scored cell.
    pub fn overall(&self) -> ErrorSummary {
        ErrorSummary::of(self.cells(|_, _| true)).unwrap_or(ErrorSummary {
            mean: 0.0,
            worst: 0.0,
            cells: 0,
        })
    }

    /// Over the scored placements of one row (one workload run).
    pub fn row(&self, row: usize) -> Option<ErrorSummary> {
        ErrorSummary::of(self.cells(|r, _| r == row))
    }

    /// Over every row for one placement; `None` for a measured placement.
    pub fn placement(&self, placement: usize) -> Option<ErrorSummary> {
        ErrorSummary::of(self.cells(|_, p| p == placement))
    }

    /// Over the scored placements of the given rows (e.g. one family).
    pub fn rows(&self, rows: &[usize]) -> Option<ErrorSummary> {
        ErrorSummary::of(self.cells(|r, _| rows.contains(&r)))
    }

    fn cells<'a>(
        &'a self,
        keep: impl Fn(usize, usize) -> bool + 'a,
    ) -> impl Iterator<Item = f64> + 'a {
        self.errors
            .indexed_iter()
            .filter(move |((r, p), _)| self.scored[*p] && keep(*r, *p))
            .map(|(_, &e)| e)
            // A cell completed by another model has no measurement to be judged on.
            .filter(|e| !e.is_nan())
    }
}
