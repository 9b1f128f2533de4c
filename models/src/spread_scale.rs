//! Intervals of the model across classes that widen where its trees disagree
//! (docs/models.md, "Across classes"): one quantile for every cell says as much of a cell
//! the forest is sure of as of one it is guessing at.
//!
//! A cell's score is its relative error over its relative spread (the trees' standard
//! deviation over their mean) plus a floor; the 90% quantile `q` of the scores of classes
//! left out gives each cell the half-width `q x (spread + floor)`. The floor keeps a cell on
//! which every tree agrees from getting no interval at all: agreement across trees trained
//! on other machines is not accuracy on this one.
//!
//! This is not the own model's [`crate::interval::Score::Spread`], which measures absolute
//! error against the absolute spread plus the median spread, per placement, for symmetric
//! intervals. Placements do not carry across machines, and the models across sizes and
//! classes state their error relative to the actual value, so their intervals run from
//! `p / (1 + h)` to `p / (1 - h)`. On the corpus of docs/models.md (SIMULATED) the own
//! model's form gave 89.4% coverage, 82.0% on the worst class and a mean half-width of
//! 31.1%; this one 90.0%, 84.9% and 26.8%.

use serde::{Deserialize, Serialize};

use crate::classes::quantile_of;

/// What a cell's relative spread is floored at. Chosen among 0, 0.02, 0.05 and 0.1 on the
/// SIMULATED corpus of docs/models.md (coverage 89.8-90.0% for all four): the largest kept
/// each class's coverage highest (84.9% for the worst class, 77.1% with none).
pub const SPREAD_FLOOR: f64 = 0.1;

/// The calibrated scale of a model's intervals.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SpreadScale {
    /// Added to every cell's relative spread.
    pub floor: f64,
    /// The held-out scores' quantile.
    pub quantile: f64,
}

/// The forest's relative spread at a cell: its trees' standard deviation over their mean.
/// A mean at or below zero is no prediction to be sure of: the spread is taken as 1.
pub fn relative_spread(mean: f64, spread: f64) -> f64 {
    if mean > 0.0 && spread.is_finite() {
        (spread / mean).max(0.0)
    } else {
        1.0
    }
}

impl SpreadScale {
    /// A held-out cell's score: its relative `error` against its `relative_spread`.
    pub fn score(error: f64, relative_spread: f64) -> f64 {
        error / (relative_spread + SPREAD_FLOOR)
    }

    /// Calibrated on held-out cells' scores ([`Self::score`]).
    pub fn calibrated(scores: &mut [f64]) -> Self {
        Self {
            floor: SPREAD_FLOOR,
            quantile: quantile_of(scores),
        }
    }

    /// The interval's half-width, as a relative error, at a cell of `relative_spread`.
    pub fn half_width(&self, relative_spread: f64) -> f64 {
        self.quantile * (relative_spread + self.floor)
    }

    /// Whether the numbers can scale an interval.
    pub fn is_valid(&self) -> bool {
        self.floor.is_finite()
            && self.floor > 0.0
            && self.quantile.is_finite()
            && self.quantile >= 0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_the_trees_disagree_on_gets_a_wider_interval() {
        // Errors twice the spread-plus-floor on the calibration cells.
        let mut scores: Vec<f64> = (0..99)
            .map(|i| {
                let spread = 0.01 * f64::from(i % 10);
                SpreadScale::score(2.0 * (spread + SPREAD_FLOOR), spread)
            })
            .collect();
        let scale = SpreadScale::calibrated(&mut scores);
        assert!((scale.quantile - 2.0).abs() < 1e-9, "{scale:?}");
        assert!((scale.half_width(0.0) - 0.2).abs() < 1e-9);
        assert!((scale.half_width(0.3) - 0.8).abs() < 1e-9);
        assert!(scale.is_valid());
        assert!(
            !SpreadScale {
                floor: 0.0,
                quantile: 1.0
            }
            .is_valid()
        );
    }

    #[test]
    fn the_spread_is_relative_to_the_prediction() {
        assert!((relative_spread(2.0, 0.2) - 0.1).abs() < 1e-12);
        assert_eq!(relative_spread(0.0, 0.2), 1.0);
        assert_eq!(relative_spread(1.0, f64::NAN), 1.0);
    }
}
