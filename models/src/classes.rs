//! One model across machine classes, measured by leaving one class out (issue 29;
//! docs/models.md, "Across classes").
//!
//! The model across sizes describes placements by the resources they use on one machine;
//! here they are described by the share of any machine they use
//! ([`crate::resources`]), so data of many machine classes trains one forest (the same
//! machinery, [`crate::across`]). Each class is held out in turn: the forest is trained on
//! the other classes' data, and the held-out class's families are predicted one at a time
//! with that family left out of training too. Its error stands beside the class's own model
//! (cross-validated leaving one family out) and the category mean on the same data, which
//! is what a host has without a model of its own (docs/models.md, "Comparators").
//!
//! Intervals are calibrated by leaving classes out as well: a held-out class's cells are
//! judged against intervals scaled by each cell's spread with the 90% quantile of the other
//! classes' held-out scores ([`SpreadScale`]), so the coverage reported is that of a machine
//! the calibration never saw.

use crate::accuracy::ErrorSummary;
use crate::across::{self, Group, mean_probe};
use crate::data::{Dataset, Provenance};
use crate::dominance::Order;
use crate::evaluation::{Evaluation, evaluate};
use crate::forest::{Forest, ForestError};
use crate::interval::conformal_quantile;
use crate::resources::{ClassResources, FeatureGroup, ResourceDescriber, machine_shape};
use crate::sizes::ACROSS_LEVEL;
use crate::spread_scale::SpreadScale;
use crate::train::{TrainError, TrainOptions};

/// Folds a held-out class's families are dealt into, each predicted by a forest trained
/// without them (and without the class). One forest per family made leaving classes out
/// most of the cost of fitting (a forest per class and family: 160 on the corpus of
/// docs/models.md); four folds of four families cut that fourfold, and on that corpus were
/// no less accurate (12.4% mean error against 12.8%, SIMULATED).
pub const FAMILY_FOLDS: usize = 4;

/// Trees in the final forest `placed-train classes build` fits unless told otherwise: a
/// container is predicted by a walk of every tree for each of its placements, and 100 trees
/// took 65 us on the host of the most predicted placements of docs/models.md's corpus, 50
/// trees 39 us, against a goal of 50 us. The held-out figures come from 20-tree forests
/// either way (`--cv-trees 20`).
pub const FINAL_TREES: usize = 50;

/// One class (one data file) held out.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldOutClass {
    /// Its machine-class fingerprint.
    pub fingerprint: String,
    /// Its topology, as the data's resources describe it.
    pub topology: String,
    /// vCPUs per container of its data.
    pub v: u32,
    /// Its important placements.
    pub placements: usize,
    /// Its workload runs.
    pub runs: usize,
    /// The probe the model across classes measures it in.
    pub probe: String,
    /// The class's own model, cross-validated leaving one family out.
    pub own: ErrorSummary,
    /// The category mean on its own data (no forest): what "no model" means here.
    pub category_mean: ErrorSummary,
    /// The model across classes, trained without this class.
    pub across: ErrorSummary,
    /// The median of its cells' interval half-widths (relative error), each calibrated on
    /// the other classes and scaled by the cell's spread ([`SpreadScale`]).
    pub half_width: f64,
    /// The share of its predicted cells inside their intervals.
    pub coverage: f64,
    /// How its machine is shaped ([`machine_shape`]): a new machine takes the verdict of
    /// the held-out class shaped most like it.
    pub shape: Vec<f64>,
}

impl HeldOutClass {
    /// Whether the model across classes did worse on it than the category mean: then it
    /// must not predict for a machine like it.
    pub fn worse_than_no_model(&self) -> bool {
        self.across.mean > self.category_mean.mean
    }
}

/// Leave-one-class-out over a corpus.
#[derive(Debug, Clone, PartialEq)]
pub struct AcrossClasses {
    /// Where the data came from (the least real of the files).
    pub provenance: Provenance,
    /// The resource groups the placements were described by.
    pub groups: Vec<FeatureGroup>,
    /// One entry per data file, in the corpus's order.
    pub classes: Vec<HeldOutClass>,
}

impl AcrossClasses {
    /// Over every held-out cell of every class.
    pub fn overall(&self) -> ErrorSummary {
        combine(self.classes.iter().map(|c| c.across))
    }

    /// The classes' own models over every cell.
    pub fn own(&self) -> ErrorSummary {
        combine(self.classes.iter().map(|c| c.own))
    }

    /// The category mean over every cell.
    pub fn category_mean(&self) -> ErrorSummary {
        combine(self.classes.iter().map(|c| c.category_mean))
    }

    /// The share of every held-out cell inside its class's interval.
    pub fn coverage(&self) -> f64 {
        let cells: usize = self.classes.iter().map(|c| c.across.cells).sum();
        if cells == 0 {
            return 0.0;
        }
        self.classes
            .iter()
            .map(|c| c.coverage * c.across.cells as f64)
            .sum::<f64>()
            / cells as f64
    }
}

/// Summaries of disjoint cells as one.
fn combine(parts: impl Iterator<Item = ErrorSummary>) -> ErrorSummary {
    let (mut sum, mut worst, mut cells) = (0.0, 0.0_f64, 0);
    for p in parts {
        sum += p.mean * p.cells as f64;
        worst = worst.max(p.worst);
        cells += p.cells;
    }
    ErrorSummary {
        mean: if cells > 0 { sum / cells as f64 } else { 0.0 },
        worst,
        cells,
    }
}

/// Every held-out cell of a corpus, for calibrating the model fitted on all of it.
pub(crate) struct HeldOutCells {
    /// Relative errors (fractions).
    pub(crate) errors: Vec<f64>,
    /// Errors against spreads ([`SpreadScale::score`]).
    pub(crate) scores: Vec<f64>,
}

/// Why a corpus cannot train a model across classes.
#[derive(Debug, thiserror::Error)]
pub enum ClassesError {
    /// Leaving one class out needs other classes to train on.
    #[error("the corpus has {found} machine class(es): leaving one class out needs at least 2")]
    TooFewClasses {
        /// Distinct fingerprints.
        found: usize,
    },
    /// A data file without the machine's resources.
    #[error(
        "the data for machine class {fingerprint}, v = {v}, has no resources line: placed-train writes one when it simulates or collects; collect or simulate it again"
    )]
    NoResources {
        /// The class.
        fingerprint: String,
        /// Its v.
        v: u32,
    },
    /// The same class and size twice.
    #[error("two data files are for machine class {fingerprint}, v = {v}")]
    Duplicate {
        /// The class.
        fingerprint: String,
        /// The size.
        v: u32,
    },
    /// A class's own evaluation failed.
    #[error("cross-validating the own model of machine class {fingerprint}, v = {v}")]
    Evaluate {
        /// The class.
        fingerprint: String,
        /// The size.
        v: u32,
        /// Why.
        source: TrainError,
    },
    /// Fitting a forest failed.
    #[error("fitting the model across classes")]
    Forest(#[from] ForestError),
    /// The fitted model could not be encoded (a bug, not a data problem).
    #[error("cannot encode the model across classes: {reason}")]
    Encode {
        /// The encoder's complaint.
        reason: String,
    },
}

/// One data file of the corpus, cross-validated as its own model would be.
#[derive(Debug)]
struct Class {
    fingerprint: String,
    v: u32,
    resources: ClassResources,
    evaluation: Evaluation,
}

/// A corpus of data files of several machine classes, each read, checked and
/// cross-validated once: measuring, ablating and fitting the model across classes all start
/// from it.
#[derive(Debug)]
pub struct Corpus {
    provenance: Provenance,
    classes: Vec<Class>,
}

impl Corpus {
    /// Checks the files and cross-validates each class's own model.
    pub fn new(data: &[Dataset], options: &TrainOptions) -> Result<Self, ClassesError> {
        let mut keys: Vec<(&str, u32)> = Vec::new();
        for d in data {
            let h = d.header();
            if d.resources().is_none() {
                return Err(ClassesError::NoResources {
                    fingerprint: h.fingerprint.clone(),
                    v: h.v,
                });
            }
            if keys.contains(&(h.fingerprint.as_str(), h.v)) {
                return Err(ClassesError::Duplicate {
                    fingerprint: h.fingerprint.clone(),
                    v: h.v,
                });
            }
            keys.push((h.fingerprint.as_str(), h.v));
        }
        let mut fingerprints: Vec<&str> = keys.iter().map(|k| k.0).collect();
        fingerprints.sort_unstable();
        fingerprints.dedup();
        if fingerprints.len() < 2 {
            return Err(ClassesError::TooFewClasses {
                found: fingerprints.len(),
            });
        }
        let classes = data
            .iter()
            .map(|d| {
                let h = d.header();
                let evaluation = evaluate(d, options).map_err(|source| ClassesError::Evaluate {
                    fingerprint: h.fingerprint.clone(),
                    v: h.v,
                    source,
                })?;
                Ok(Class {
                    fingerprint: h.fingerprint.clone(),
                    v: h.v,
                    // Checked above.
                    resources: d
                        .resources()
                        .cloned()
                        .ok_or_else(|| ClassesError::NoResources {
                            fingerprint: h.fingerprint.clone(),
                            v: h.v,
                        })?,
                    evaluation,
                })
            })
            .collect::<Result<Vec<_>, ClassesError>>()?;
        Ok(Self {
            provenance: Provenance::least_real(data.iter().map(Dataset::provenance)),
            classes,
        })
    }

    /// Where the data came from.
    pub fn provenance(&self) -> Provenance {
        self.provenance
    }

    /// Workload runs over every file.
    pub fn runs(&self) -> usize {
        self.classes.iter().map(|c| c.evaluation.rows.len()).sum()
    }

    /// Every file's data as the forest reads it, placements described by `describer`.
    fn groups(&self, describer: &ResourceDescriber) -> Vec<Group> {
        self.classes
            .iter()
            .map(|c| Group {
                evaluation: c.evaluation.clone(),
                described: describer.describe_all(&c.resources, c.v),
                order: Order::of(&c.resources),
            })
            .collect()
    }

    /// Each class held out in turn, placements described by `describer`.
    pub fn leave_one_class_out(
        &self,
        describer: &ResourceDescriber,
        options: &TrainOptions,
    ) -> Result<AcrossClasses, ClassesError> {
        Ok(self.held_out(describer, options)?.0)
    }

    /// [`Self::leave_one_class_out`] once with every resource group and once without each:
    /// which descriptions carry the prediction.
    pub fn ablation(
        &self,
        options: &TrainOptions,
    ) -> Result<Vec<(Option<FeatureGroup>, AcrossClasses)>, ClassesError> {
        std::iter::once(None)
            .chain(FeatureGroup::ALL.into_iter().map(Some))
            .map(|left_out| {
                let describer = left_out.map_or_else(ResourceDescriber::default, |g| {
                    ResourceDescriber::without(g)
                });
                Ok((left_out, self.leave_one_class_out(&describer, options)?))
            })
            .collect()
    }

    /// Each class held out, and every held-out cell's relative error (a fraction) and
    /// score against its spread ([`SpreadScale::score`]).
    pub(crate) fn held_out(
        &self,
        describer: &ResourceDescriber,
        options: &TrainOptions,
    ) -> Result<(AcrossClasses, HeldOutCells), ClassesError> {
        let groups = self.groups(describer);
        let refs: Vec<&Group> = groups.iter().collect();
        let params = options.cv_forest();
        let mut errors: Vec<Vec<f64>> = Vec::with_capacity(groups.len());
        let mut spreads: Vec<Vec<f64>> = Vec::with_capacity(groups.len());
        let mut probes = Vec::with_capacity(groups.len());
        for (k, class) in self.classes.iter().enumerate() {
            // Every file of the held-out machine class is kept out, not only this one.
            let others: Vec<&Group> = refs
                .iter()
                .zip(&self.classes)
                .filter(|(_, c)| c.fingerprint != class.fingerprint)
                .map(|(g, _)| *g)
                .collect();
            let held = across::hold_out(&groups[k], &others, &params, Some(FAMILY_FOLDS))?;
            probes.push(held.probe);
            errors.push(held.errors);
            spreads.push(held.spreads);
        }
        let scores: Vec<Vec<f64>> = errors
            .iter()
            .zip(&spreads)
            .map(|(e, s)| {
                e.iter()
                    .zip(s)
                    .map(|(&e, &s)| SpreadScale::score(e, s))
                    .collect()
            })
            .collect();
        let mut out = Vec::with_capacity(self.classes.len());
        for (k, class) in self.classes.iter().enumerate() {
            // Calibrated on the other machine classes' held-out cells only.
            let mut calibration: Vec<f64> = self
                .classes
                .iter()
                .zip(&scores)
                .filter(|(c, _)| c.fingerprint != class.fingerprint)
                .flat_map(|(_, s)| s.iter().copied())
                .collect();
            let scale = SpreadScale::calibrated(&mut calibration);
            let own = &errors[k];
            let mut widths: Vec<f64> = spreads[k].iter().map(|&s| scale.half_width(s)).collect();
            let covered = own.iter().zip(&widths).filter(|&(e, h)| e <= h).count();
            widths.sort_by(f64::total_cmp);
            let e = &class.evaluation;
            out.push(HeldOutClass {
                fingerprint: class.fingerprint.clone(),
                topology: class.resources.machine.topology.clone(),
                v: class.v,
                placements: e.placements.len(),
                runs: e.rows.len(),
                probe: e.placements[probes[k]].clone(),
                own: e.forest.accuracy.overall(),
                category_mean: e.category_mean.accuracy.overall(),
                across: ErrorSummary::of(own.iter().map(|e| e * 100.0)).unwrap_or(ErrorSummary {
                    mean: 0.0,
                    worst: 0.0,
                    cells: 0,
                }),
                half_width: widths.get(widths.len() / 2).copied().unwrap_or(0.0),
                coverage: if own.is_empty() {
                    0.0
                } else {
                    covered as f64 / own.len() as f64
                },
                shape: machine_shape(&class.resources.machine),
            });
        }
        let report = AcrossClasses {
            provenance: self.provenance,
            groups: describer.groups.clone(),
            classes: out,
        };
        Ok((
            report,
            HeldOutCells {
                errors: errors.into_iter().flatten().collect(),
                scores: scores.into_iter().flatten().collect(),
            },
        ))
    }

    /// The forest over every class's rows, and the mean description of their own probes.
    pub(crate) fn fit(
        &self,
        describer: &ResourceDescriber,
        options: &TrainOptions,
    ) -> Result<(Forest, Vec<f64>), ClassesError> {
        let groups = self.groups(describer);
        let refs: Vec<&Group> = groups.iter().collect();
        Ok((across::fit(&refs, &options.forest)?, mean_probe(&refs)))
    }
}

/// The [`ACROSS_LEVEL`] conformal quantile of relative errors; the worst of them when there
/// are too few for the rank.
pub(crate) fn quantile_of(errors: &mut [f64]) -> f64 {
    conformal_quantile(errors, ACROSS_LEVEL)
        .or_else(|| errors.iter().copied().max_by(f64::total_cmp))
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests;
