//! What the forest sees: the two observations turned into a feature vector. Training and
//! prediction both go through `feature_vector`, so a model is fed exactly what it was
//! trained on.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// A container's measured performance in one placement.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Observation {
    /// Performance, higher is better, in any unit (only ratios are used).
    pub value: f64,
    /// Half-width of its confidence interval, same unit; 0 when unknown.
    pub spread: f64,
    /// Generic counters observed in that placement, by name (e.g. `ipc`).
    pub counters: BTreeMap<String, f64>,
}

impl Observation {
    /// This observation over `baseline`, with the first-order propagation of both
    /// relative spreads into the ratio: what the novelty rule classifies.
    pub(crate) fn ratio_over(&self, baseline: &Observation) -> (f64, f64) {
        (
            self.value / baseline.value,
            baseline.spread / baseline.value + self.spread / self.value,
        )
    }
}

/// Which of the two observations a counter comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObservedIn {
    /// The baseline placement.
    Baseline,
    /// The probe placement.
    Probe,
}

/// One input of a model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Feature {
    /// Performance in the probe placement over performance in the baseline placement (the
    /// baseline normalised to itself is always 1 and carries nothing).
    ProbeRatio,
    /// A generic counter as observed in one of the two placements.
    Counter {
        /// Which observation.
        observed_in: ObservedIn,
        /// Counter name.
        name: String,
    },
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ProbeRatio => f.write_str("probe/baseline"),
            Self::Counter { observed_in, name } => {
                let role = match observed_in {
                    ObservedIn::Baseline => "baseline",
                    ObservedIn::Probe => "probe",
                };
                write!(f, "{role}:{name}")
            }
        }
    }
}

/// Why observations cannot be turned into features.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ObservationError {
    /// A performance value that is not a positive number.
    #[error("the {observed_in:?} performance {value} is not a positive number")]
    NotPositive {
        /// Which observation.
        observed_in: ObservedIn,
        /// The value.
        value: f64,
    },
    /// The model was trained with a counter the observation lacks.
    #[error("the model needs counter {name:?} observed in the {observed_in:?} placement")]
    MissingCounter {
        /// Which observation.
        observed_in: ObservedIn,
        /// Counter name.
        name: String,
    },
    /// A counter that is NaN or infinite.
    #[error("counter {name:?} observed in the {observed_in:?} placement is {value}")]
    NotFinite {
        /// Which observation.
        observed_in: ObservedIn,
        /// Counter name.
        name: String,
        /// The value.
        value: f64,
    },
}

/// The perf-measurement inputs (thesis §2.4.2): the probe ratio, then each counter as
/// observed in the baseline and in the probe placement.
pub(crate) fn performance_features(counters: &[String]) -> Vec<Feature> {
    std::iter::once(Feature::ProbeRatio)
        .chain(
            [ObservedIn::Baseline, ObservedIn::Probe]
                .into_iter()
                .flat_map(|observed_in| {
                    counters.iter().map(move |name| Feature::Counter {
                        observed_in,
                        name: name.clone(),
                    })
                }),
        )
        .collect()
}

/// The counter baseline's inputs: counters observed in the baseline placement only (the
/// thesis's HPE model, §2.4.2).
pub(crate) fn counter_features(counters: &[String]) -> Vec<Feature> {
    counters
        .iter()
        .map(|name| Feature::Counter {
            observed_in: ObservedIn::Baseline,
            name: name.clone(),
        })
        .collect()
}

/// The feature vector for `features` from the two observations.
pub(crate) fn feature_vector(
    features: &[Feature],
    baseline: &Observation,
    probe: &Observation,
) -> Result<Vec<f64>, ObservationError> {
    for (observed_in, o) in [(ObservedIn::Baseline, baseline), (ObservedIn::Probe, probe)] {
        if !(o.value.is_finite() && o.value > 0.0) {
            return Err(ObservationError::NotPositive {
                observed_in,
                value: o.value,
            });
        }
    }
    features
        .iter()
        .map(|feature| match feature {
            Feature::ProbeRatio => Ok(probe.value / baseline.value),
            Feature::Counter { observed_in, name } => {
                let source = match observed_in {
                    ObservedIn::Baseline => baseline,
                    ObservedIn::Probe => probe,
                };
                match source.counters.get(name) {
                    None => Err(ObservationError::MissingCounter {
                        observed_in: *observed_in,
                        name: name.clone(),
                    }),
                    Some(v) if !v.is_finite() => Err(ObservationError::NotFinite {
                        observed_in: *observed_in,
                        name: name.clone(),
                        value: *v,
                    }),
                    Some(v) => Ok(*v),
                }
            }
        })
        .collect()
}
