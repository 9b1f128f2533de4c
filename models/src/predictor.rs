//! What the daemon predicts with: a per-size [`Model`], or a model across sizes made ready
//! for one size ([`crate::sizes_model::SizedModel`]). Both measure a container in a
//! baseline and a probe placement and predict the rest from those two observations.

use crate::data::{PlacementInfo, Provenance};
use crate::features::Observation;
use crate::gate::GateFailure;
use crate::model::{MachineClass, Model, PredictError, Prediction};

/// A model for one machine class and one container size, whatever kind it is.
pub trait Predictor: std::fmt::Debug + Send + Sync {
    /// Its id, as predictions and the state file name it.
    fn id(&self) -> &str;
    /// The machine class and `v` it predicts for.
    fn machine(&self) -> &MachineClass;
    /// The placements it predicts, in output order.
    fn placements(&self) -> &[PlacementInfo];
    /// Placement id to measure first.
    fn baseline(&self) -> &str;
    /// Placement id to measure second.
    fn probe(&self) -> &str;
    /// Where its training data came from.
    fn provenance(&self) -> Provenance;
    /// Why it must not move containers, if it failed the accuracy gate.
    fn below_gate(&self) -> Option<&GateFailure>;
    /// The sizes it was trained on when they are not `machine().v` alone: a model across
    /// sizes predicting a size it never saw says so in every decision it drives.
    fn trained_sizes(&self) -> Option<&[u32]>;
    /// For a model across machine classes, what every prediction it makes must say: that
    /// it was not trained on this host, and what it was trained on.
    fn across_classes(&self) -> Option<&str> {
        None
    }
    /// Performance in every placement from the baseline's and the probe's.
    fn predict(
        &self,
        baseline: &Observation,
        probe: &Observation,
    ) -> Result<Prediction, PredictError>;
}

impl Predictor for Model {
    fn id(&self) -> &str {
        Model::id(self)
    }
    fn machine(&self) -> &MachineClass {
        Model::machine(self)
    }
    fn placements(&self) -> &[PlacementInfo] {
        Model::placements(self)
    }
    fn baseline(&self) -> &str {
        Model::baseline(self)
    }
    fn probe(&self) -> &str {
        Model::probe(self)
    }
    fn provenance(&self) -> Provenance {
        Model::provenance(self)
    }
    fn below_gate(&self) -> Option<&GateFailure> {
        Model::below_gate(self)
    }
    fn trained_sizes(&self) -> Option<&[u32]> {
        None
    }
    fn predict(
        &self,
        baseline: &Observation,
        probe: &Observation,
    ) -> Result<Prediction, PredictError> {
        Model::predict(self, baseline, probe)
    }
}
