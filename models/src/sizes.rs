//! One model across container sizes, measured (issue 16; docs/models.md, "Across sizes").
//!
//! A per-size model knows its placements by id, so every container size in use needs its
//! own collection. Described by the resources they use instead, placements of different
//! sizes become comparable: each concern's score over the largest any placement of the data
//! has for it (nodes, packages, caches, cores over the most any placement spans), and the
//! PUs per core the placement fills. One forest then maps (the baseline's and the probe's
//! descriptions, the probe's measured ratio, a target placement's description and how it
//! differs from the baseline's) to the target's relative performance, for any size. The
//! differences are there because a tree splits on one input at a time: "two more nodes than
//! the baseline" is one split on them and many on the two descriptions.
//!
//! [`leave_one_size_out`] measures how well that works on sizes the model never saw: each
//! size in turn is held out, the forest is trained on the other sizes' rows, and the
//! held-out size's rows are predicted one family at a time with that family left out of
//! training too, so no workload is predicted by a forest that saw it at another size. Its
//! error stands next to the per-size model's own leave-one-family-out error.

use crate::accuracy::ErrorSummary;
use serde::{Deserialize, Serialize};

use crate::across::{self, Group, mean_probe};
use crate::data::{Dataset, PlacementInfo, Provenance};
use crate::dominance::Order;
use crate::evaluation::{Evaluation, evaluate};
use crate::forest::{Forest, ForestError};
use crate::train::{TrainError, TrainOptions};

/// One size held out.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldOutSize {
    /// vCPUs.
    pub v: u32,
    /// Its important placements.
    pub placements: usize,
    /// Its workload runs.
    pub runs: usize,
    /// Placement measurements its collection took (runs x placements).
    pub measurements: usize,
    /// The probe the model across sizes measures it in: the placement whose description is
    /// nearest the other sizes' probes.
    pub probe: String,
    /// The per-size model, cross-validated leaving one family out (its own probe).
    pub per_size: ErrorSummary,
    /// The model across sizes, trained without this size.
    pub across: ErrorSummary,
}

/// Leave-one-size-out over every size given.
#[derive(Debug, Clone, PartialEq)]
pub struct AcrossSizes {
    /// Where the data came from (the least real of the files).
    pub provenance: Provenance,
    /// The machine class.
    pub fingerprint: String,
    /// One entry per size, smallest first.
    pub sizes: Vec<HeldOutSize>,
}

/// Why the sizes cannot be compared.
#[derive(Debug, thiserror::Error)]
pub enum SizesError {
    /// Leaving one size out needs another size to train on.
    #[error("{found} data file(s) given: leaving one size out needs at least 2 sizes")]
    TooFewSizes {
        /// Files given.
        found: usize,
    },
    /// Two files of different machine classes or concerns.
    #[error(
        "the data for v = {v} is for machine class {found}, the first file's is {expected}: one machine class at a time"
    )]
    OtherMachine {
        /// The file's v.
        v: u32,
        /// The first file's class.
        expected: String,
        /// This file's.
        found: String,
    },
    /// The same size twice.
    #[error("two data files are for v = {v}")]
    DuplicateSize {
        /// The size.
        v: u32,
    },
    /// A per-size evaluation failed.
    #[error("cross-validating the per-size model for v = {v}")]
    Evaluate {
        /// The size.
        v: u32,
        /// Why.
        source: TrainError,
    },
    /// Fitting the model across sizes failed.
    #[error("fitting the model across sizes")]
    Forest(#[from] ForestError),
    /// The fitted model could not be encoded (a bug, not a data problem).
    #[error("cannot encode the model across sizes: {reason}")]
    Encode {
        /// The encoder's complaint.
        reason: String,
    },
}

/// One size's data as the model across sizes reads it.
struct Size {
    v: u32,
    group: Group,
}

/// How placements of any size are described: each concern's score over the largest any
/// placement of the training data has for it, and the PUs per core the placement fills
/// where the machine has a `core` concern. A model across sizes stores it, so a size it
/// never saw is described on the same scale.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Describer {
    /// Per concern, the largest score of the training data's placements.
    pub(crate) largest: Vec<f64>,
    /// The `core` concern's position, if the machine has one.
    pub(crate) core: Option<usize>,
}

impl Describer {
    fn of(data: &[&Dataset]) -> Self {
        let concerns = &data[0].header().concerns;
        let mut largest = vec![0.0_f64; concerns.len()];
        for d in data {
            for p in &d.header().placements {
                for (l, &s) in largest.iter_mut().zip(&p.scores) {
                    *l = l.max(s);
                }
            }
        }
        Self {
            largest,
            core: concerns.iter().position(|c| c == "core"),
        }
    }

    /// `p`, a placement for containers of `v` vCPUs, described.
    pub(crate) fn describe(&self, p: &PlacementInfo, v: u32) -> Vec<f64> {
        let mut x: Vec<f64> = p
            .scores
            .iter()
            .zip(&self.largest)
            .map(|(&s, &l)| if l > 0.0 { s / l } else { 0.0 })
            .collect();
        if let Some(c) = self.core {
            let cores = p.scores.get(c).copied().unwrap_or(0.0);
            x.push(if cores > 0.0 {
                f64::from(v) / cores
            } else {
                0.0
            });
        }
        x
    }

    /// Every placement of `d` described.
    fn describe_all(&self, d: &Dataset) -> Vec<Vec<f64>> {
        let v = d.header().v;
        d.header()
            .placements
            .iter()
            .map(|p| self.describe(p, v))
            .collect()
    }

    /// How many values [`Self::describe`] gives.
    pub(crate) fn width(&self) -> usize {
        self.largest.len() + usize::from(self.core.is_some())
    }
}

/// The 90% quantile of the held-out relative errors: a model across sizes widens each
/// prediction by it (docs/models.md, "Across sizes").
pub const ACROSS_LEVEL: f64 = 0.9;

/// Holds each size out in turn; see the module documentation.
pub fn leave_one_size_out(
    data: &[Dataset],
    options: &TrainOptions,
) -> Result<AcrossSizes, SizesError> {
    Ok(Prepared::new(data, options)?.held_out(options)?.0)
}

/// One size's data cross-validated as its own model would be: what the model across sizes
/// reads of it (its probe, its measured matrix) and sets itself against.
pub fn evaluate_size(d: &Dataset, options: &TrainOptions) -> Result<Evaluation, SizesError> {
    evaluate(d, options).map_err(|source| SizesError::Evaluate {
        v: d.header().v,
        source,
    })
}

/// Refuses files that are not one machine class's data of different sizes.
pub fn belong_together(data: &[Dataset]) -> Result<(), SizesError> {
    let mut vs: Vec<u32> = data.iter().map(|d| d.header().v).collect();
    vs.sort_unstable();
    if let Some(pair) = vs.windows(2).find(|p| p[0] == p[1]) {
        return Err(SizesError::DuplicateSize { v: pair[0] });
    }
    let Some(first) = data.first().map(Dataset::header) else {
        return Ok(());
    };
    for d in data {
        let h = d.header();
        if h.fingerprint != first.fingerprint || h.concerns != first.concerns {
            return Err(SizesError::OtherMachine {
                v: h.v,
                expected: first.fingerprint.clone(),
                found: h.fingerprint.clone(),
            });
        }
    }
    Ok(())
}

/// The sizes read, checked and cross-validated one by one: what both measuring the model
/// across sizes and fitting it start from.
pub(crate) struct Prepared {
    pub(crate) provenance: Provenance,
    pub(crate) fingerprint: String,
    pub(crate) concerns: Vec<String>,
    pub(crate) describer: Describer,
    sizes: Vec<Size>,
}

impl Prepared {
    pub(crate) fn new(data: &[Dataset], options: &TrainOptions) -> Result<Self, SizesError> {
        // Files that do not belong together are refused before the sizes are cross-validated.
        Self::check(data)?;
        let evaluations = data
            .iter()
            .map(|d| evaluate_size(d, options))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self::assemble(data, evaluations))
    }

    /// From sizes already cross-validated: `evaluations[i]` is [`evaluate_size`]'s of
    /// `data[i]`, with the options the model across sizes is then measured and fitted with.
    pub(crate) fn evaluated(
        data: &[Dataset],
        evaluations: Vec<Evaluation>,
    ) -> Result<Self, SizesError> {
        Self::check(data)?;
        Ok(Self::assemble(data, evaluations))
    }

    fn check(data: &[Dataset]) -> Result<(), SizesError> {
        if data.len() < 2 {
            return Err(SizesError::TooFewSizes { found: data.len() });
        }
        belong_together(data)
    }

    fn assemble(data: &[Dataset], evaluations: Vec<Evaluation>) -> Self {
        debug_assert_eq!(data.len(), evaluations.len());
        let mut pairs: Vec<(&Dataset, Evaluation)> = data.iter().zip(evaluations).collect();
        pairs.sort_by_key(|(d, _)| d.header().v);
        let data: Vec<&Dataset> = pairs.iter().map(|(d, _)| *d).collect();
        let describer = Describer::of(&data);
        let provenance = Provenance::least_real(data.iter().map(|d| d.provenance()));
        let (fingerprint, concerns) = (
            data[0].header().fingerprint.clone(),
            data[0].header().concerns.clone(),
        );
        let sizes = pairs
            .into_iter()
            .map(|(d, evaluation)| Size {
                v: d.header().v,
                group: Group {
                    evaluation,
                    described: describer.describe_all(d),
                    // Concern scores do not say which placement is no better than which.
                    order: Order::default(),
                },
            })
            .collect();
        Self {
            provenance,
            fingerprint,
            concerns,
            describer,
            sizes,
        }
    }

    /// The sizes, smallest first.
    pub(crate) fn vs(&self) -> Vec<u32> {
        self.sizes.iter().map(|s| s.v).collect()
    }

    /// Workload runs over all sizes.
    pub(crate) fn runs(&self) -> usize {
        self.sizes
            .iter()
            .map(|s| s.group.evaluation.rows.len())
            .sum()
    }

    /// The mean description of the probes the sizes' own cross-validation chose: a size
    /// the model never saw is probed in its placement nearest it.
    pub(crate) fn probe_description(&self) -> Vec<f64> {
        let all: Vec<&Group> = self.sizes.iter().map(|s| &s.group).collect();
        mean_probe(&all)
    }

    /// Each size held out in turn, and every held-out cell's relative error (a fraction).
    pub(crate) fn held_out(
        &self,
        options: &TrainOptions,
    ) -> Result<(AcrossSizes, Vec<f64>), SizesError> {
        let mut out = Vec::with_capacity(self.sizes.len());
        let mut all_errors = Vec::new();
        for k in 0..self.sizes.len() {
            let (held, errors) = self.hold_out(k, options)?;
            out.push(held);
            all_errors.extend(errors);
        }
        let report = AcrossSizes {
            provenance: self.provenance,
            fingerprint: self.fingerprint.clone(),
            sizes: out,
        };
        Ok((report, all_errors))
    }

    /// The `k`th size (smallest first) predicted by a forest trained on the others, and
    /// each of its predicted cells' relative error (a fraction).
    pub(crate) fn hold_out(
        &self,
        k: usize,
        options: &TrainOptions,
    ) -> Result<(HeldOutSize, Vec<f64>), SizesError> {
        let groups: Vec<&Group> = self.sizes.iter().map(|s| &s.group).collect();
        let held = across::hold_out(
            &self.sizes[k].group,
            &across::all_but(&groups, k),
            &options.cv_forest(),
            None,
        )?;
        let (probe, errors) = (held.probe, held.errors);
        let e = &self.sizes[k].group.evaluation;
        let placements = e.placements.len();
        let report = HeldOutSize {
            v: self.sizes[k].v,
            placements,
            runs: e.rows.len(),
            measurements: e.rows.len() * placements,
            probe: e.placements[probe].clone(),
            per_size: e.forest.accuracy.overall(),
            across: ErrorSummary::of(errors.iter().map(|e| e * 100.0)).unwrap_or(ErrorSummary {
                mean: 0.0,
                worst: 0.0,
                cells: 0,
            }),
        };
        Ok((report, errors))
    }

    /// The forest over every size's rows.
    pub(crate) fn fit(&self, options: &TrainOptions) -> Result<Forest, SizesError> {
        let all: Vec<&Group> = self.sizes.iter().map(|s| &s.group).collect();
        Ok(across::fit(&all, &options.forest)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::RunRecord;
    use crate::test_data::{quick_options as options, sized};

    #[test]
    fn every_size_is_predicted_by_the_others_and_set_against_its_own_model() {
        let data = [sized(8), sized(4)];
        let a = leave_one_size_out(&data, &options()).unwrap();
        let vs: Vec<u32> = a.sizes.iter().map(|s| s.v).collect();
        assert_eq!(vs, [4, 8], "smallest first");
        for s in &a.sizes {
            assert_eq!(s.placements, 4);
            assert_eq!(s.measurements, s.runs * 4);
            // Two predicted placements per run, every run predicted.
            assert_eq!(s.across.cells, s.runs * 2, "{s:?}");
            assert!(s.across.mean.is_finite() && s.per_size.cells > 0, "{s:?}");
            assert_ne!(s.probe, "p0", "never the baseline");
        }
        // The same behaviours at another size: the model across sizes learns them.
        assert!(a.sizes[0].across.mean < 10.0, "{:?}", a.sizes[0]);
    }

    #[test]
    fn sizes_that_do_not_belong_together_are_refused() {
        let o = options();
        assert!(matches!(
            leave_one_size_out(&[sized(4)], &o),
            Err(SizesError::TooFewSizes { found: 1 })
        ));
        assert!(matches!(
            leave_one_size_out(&[sized(4), sized(4)], &o),
            Err(SizesError::DuplicateSize { v: 4 })
        ));
        let mut other = sized(8);
        let mut header = other.header().clone();
        header.fingerprint = "another".into();
        let records: Vec<RunRecord> = other
            .records()
            .iter()
            .map(|r| RunRecord {
                fingerprint: "another".into(),
                ..r.clone()
            })
            .collect();
        other = Dataset::from_parts(header, records).unwrap();
        let e = leave_one_size_out(&[sized(4), other], &o).unwrap_err();
        assert!(matches!(e, SizesError::OtherMachine { v: 8, .. }), "{e}");
    }
}
