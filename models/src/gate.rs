//! The accuracy gate: whether a model's cross-validated error makes it fit to move
//! containers. A model that fails it is not installed unless the operator overrides the gate,
//! and one installed over the gate carries that in its file, so the daemon only observes with
//! it (docs/training.md, "The accuracy gate").

use serde::{Deserialize, Serialize};

use crate::model::CvAccuracy;

/// The default bound on the forest's mean cross-validated error, in percent. The daemon's
/// default goal keeps a container at 90% of its baseline: a model whose typical error is
/// larger than that 10% slack cannot tell a placement that meets the goal from one that
/// misses it.
pub const DEFAULT_MAX_MEAN_ERROR: f64 = 10.0;

/// The bounds a model must meet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gate {
    /// Largest acceptable mean absolute percentage error of the forest, held out by family.
    pub max_mean_error: f64,
}

impl Default for Gate {
    fn default() -> Self {
        Self {
            max_mean_error: DEFAULT_MAX_MEAN_ERROR,
        }
    }
}

/// Why a model fails the gate; the message says what to do about it.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum GateFailure {
    /// Every placement is measured (baseline and probe): there is no predicted cell, so
    /// the error is not zero but undefined.
    #[error(
        "the model predicts nothing: its {placements} important placements are all measured (baseline and probe), so there is no cross-validated error to judge it by and it adds nothing to measuring them; a model is useful on a machine class with 3 or more important placements for this v (install it anyway with --accept-inaccurate, knowing the daemon will only observe)"
    )]
    NothingToPredict {
        /// Important placements of the model.
        placements: usize,
    },
    /// The forest's held-out error is above the bound.
    #[error(
        "cross-validated error {mean:.1}% mean / {worst:.1}% worst is above the gate of {max:.1}% mean: the model cannot tell placements apart reliably; check the measurements' intervals (noisy or unusable records), collect more runs (--runs) or workloads on an idle host, or raise the bound (--max-error) or install anyway (--accept-inaccurate) knowing the daemon will only observe"
    )]
    TooInaccurate {
        /// The forest's mean error, percent.
        mean: f64,
        /// Its worst error, percent.
        worst: f64,
        /// The gate, percent.
        max: f64,
    },
    /// The forest does no better than predicting its category's mean.
    #[error(
        "the forest ({forest:.1}% mean error) does not beat the category-mean comparator ({category:.1}%): it learned nothing beyond the performance categories; add workloads (more families, or --runs for repeated rows) or install anyway (--accept-inaccurate) knowing the daemon will only observe"
    )]
    NoBetterThanCategoryMean {
        /// The forest's mean error, percent.
        forest: f64,
        /// The category mean's, percent.
        category: f64,
    },
}

impl Gate {
    /// Judges a model's cross-validated accuracy: the first failure, if any.
    pub fn check(&self, accuracy: &CvAccuracy) -> Result<(), GateFailure> {
        let forest = accuracy.forest;
        if forest.cells == 0 || !forest.mean.is_finite() {
            return Err(GateFailure::NothingToPredict {
                // Two placements, both measured, is the only way a trained model has no
                // predicted cell: the probe candidates are the placements but the baseline.
                placements: accuracy.probe_candidates.len() + 1,
            });
        }
        if forest.mean > self.max_mean_error {
            return Err(GateFailure::TooInaccurate {
                mean: forest.mean,
                worst: forest.worst,
                max: self.max_mean_error,
            });
        }
        let category = accuracy.category_mean;
        if category.cells > 0 && forest.mean >= category.mean {
            return Err(GateFailure::NoBetterThanCategoryMean {
                forest: forest.mean,
                category: category.mean,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accuracy::ErrorSummary;
    use crate::model::ProbeCandidate;

    fn accuracy(forest: (f64, usize), category: f64, placements: usize) -> CvAccuracy {
        let summary = |mean: f64, cells| ErrorSummary {
            mean,
            worst: mean * 3.0,
            cells,
        };
        CvAccuracy {
            probe_candidates: (1..placements)
                .map(|i| ProbeCandidate {
                    placement: format!("p{i}"),
                    error: summary(forest.0, forest.1),
                })
                .collect(),
            forest: summary(forest.0, forest.1),
            category_mean: summary(category, forest.1),
            iterative: summary(category, forest.1),
            counter_baseline: None,
        }
    }

    #[test]
    fn a_model_within_the_bound_that_beats_the_comparator_passes() {
        assert_eq!(Gate::default().check(&accuracy((4.0, 20), 7.0, 4)), Ok(()));
    }

    #[test]
    fn the_issue_s_model_at_217_percent_is_refused_with_its_figures() {
        let failure = Gate::default()
            .check(&accuracy((217.0, 20), 300.0, 4))
            .unwrap_err();
        assert!(matches!(failure, GateFailure::TooInaccurate { max, .. } if max == 10.0));
        let text = failure.to_string();
        assert!(text.contains("217.0% mean / 651.0% worst"), "{text}");
        assert!(text.contains("--accept-inaccurate"), "{text}");
    }

    #[test]
    fn no_predicted_cell_is_nothing_to_predict_not_zero_error() {
        let failure = Gate::default()
            .check(&accuracy((0.0, 0), 0.0, 2))
            .unwrap_err();
        assert_eq!(failure, GateFailure::NothingToPredict { placements: 2 });
        assert!(!failure.to_string().contains("0.0%"));
    }

    #[test]
    fn a_forest_no_better_than_the_category_mean_is_refused() {
        let gate = Gate::default();
        assert!(matches!(
            gate.check(&accuracy((5.0, 20), 5.0, 4)),
            Err(GateFailure::NoBetterThanCategoryMean { .. })
        ));
        // A looser bound does not let a useless forest through either.
        let loose = Gate {
            max_mean_error: 50.0,
        };
        assert!(matches!(
            loose.check(&accuracy((30.0, 20), 20.0, 4)),
            Err(GateFailure::NoBetterThanCategoryMean { .. })
        ));
        assert!(matches!(
            loose.check(&accuracy((30.0, 20), 40.0, 4)),
            Ok(())
        ));
    }
}
