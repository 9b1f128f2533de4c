//! Baseline, probe, prediction (the thesis's section 2.4.2): a container measured in the
//! model's two placements and the forest's predicted vector stored on its record, as a
//! step of its lifecycle or on demand (`Predict`, which puts the container back after).

use placed_models::Observation;

use crate::state::{
    ContainerRecord, Lifecycle, ObservationRecord, PredictedRecord, PredictionRecord,
};
use placed_core::placement::{PlacementSet, instantiate};
use placed_core::policy::{self, Target};
use placed_host::migrate::Mode;
use placed_host::observe::{Comparison, Measurement, Verdict, compare};

use super::error::DaemonError;
use super::events::{EventKind, now_ms};
use super::handle::Handle;
use super::measure::MetricSlot;
use super::models::LoadedModel;
use super::moving::Journal;

/// The warning for a probe the comparison could not tell from the baseline. It names the
/// ratio the model was given and the prediction table shows (of the two medians, as in
/// `observation`), so one figure stands for the pair everywhere; the interval is the
/// comparison's.
fn noisy_probe(baseline: &Measurement, probe: &Measurement, c: &Comparison) -> Option<String> {
    (c.verdict == Verdict::Inconclusive).then(|| {
        let ratio = observation(probe).value / observation(baseline).value;
        format!(
            "baseline and probe could not be told apart (probe at {ratio:.3} x baseline; the {:.0}% interval of the ratio, {:.3}-{:.3}, does not settle it): the prediction rests on a noisy probe",
            c.ratio.confidence * 100.0,
            c.ratio.lo,
            c.ratio.hi
        )
    })
}

fn observation(m: &Measurement) -> Observation {
    Observation {
        value: m.estimate.value,
        spread: (m.estimate.hi - m.estimate.lo) / 2.0,
        ..Default::default()
    }
}

impl Handle {
    /// Measures the container in the model's baseline and probe placements and stores the
    /// prediction, unless the settings changed meanwhile (`None`: start over). The container
    /// is left in the probe placement. `journal` says whether each move is recorded in the
    /// state file (the lifecycle) or the caller has recorded where to put it back (Predict).
    pub async fn evaluate(
        &self,
        set: &PlacementSet,
        source: &mut MetricSlot,
        generation: u64,
        journal: Journal,
    ) -> Result<Option<PredictionRecord>, DaemonError> {
        let core = self.core.clone();
        let rec = self.record()?;
        let loaded = core
            .models
            .find(core.node.machine.fingerprint(), set)
            .ok_or_else(|| self.no_model(rec.vcpus))?;
        let model = loaded.model.clone();
        let below_gate = model.below_gate().map(ToString::to_string);
        // The lifecycle acts on what it predicts, so it stops here; an on-demand prediction
        // (Predict) only shows it, marked.
        if let (Some(reason), Journal::EachMove) = (&below_gate, journal) {
            return Err(self.below_gate(&loaded, reason, rec.vcpus));
        }
        // So does a model the live gate stopped: evaluating would move the container
        // through the baseline and the probe for a decision that will not be made.
        if journal == Journal::EachMove {
            core.live.check(model.id())?;
        }
        source.ensure(self, &rec).await?;
        let mut measured: Vec<(String, Measurement)> = Vec::with_capacity(2);
        for (state, placement_id) in [
            (Lifecycle::Baseline, model.baseline().to_owned()),
            (Lifecycle::Probe, model.probe().to_owned()),
        ] {
            let target = self.measurement_target(set, &rec, state, &placement_id, model.id())?;
            self.set_state(state, &format!("measuring in {placement_id}"));
            self.move_to(&target, &Mode::Kernel, journal).await?;
            let rec_now = self.record()?;
            let m = source.measure_here(self, &rec_now).await?;
            measured.push((placement_id, m));
        }
        let (baseline, probe) = (&measured[0].1, &measured[1].1);
        let mut warnings = Vec::new();
        let protocol = core.settings.protocol();
        let c =
            compare(baseline, probe, protocol.confidence, protocol.margin).map_err(|source| {
                DaemonError::Compare {
                    container: rec.name.clone(),
                    source: Box::new(source),
                }
            })?;
        let predicted = model
            .predict(&observation(baseline), &observation(probe))
            .map_err(|source| DaemonError::Predict {
                container: rec.name.clone(),
                source: Box::new(source),
            })?;
        core.telemetry.metrics.predictions.inc();
        warnings.extend(noisy_probe(baseline, probe, &c));
        warnings.extend(prediction_warnings(
            &loaded,
            rec.vcpus,
            &predicted,
            below_gate.as_deref(),
        ));
        let prediction = prediction_record(
            &loaded, rec.vcpus, &measured, &predicted, warnings, below_gate,
        );
        for (placement, m) in &measured {
            self.keep_measurement(set, &rec, prediction.unix_ms, placement, m);
        }
        let stored = self.with(|e| e.store_prediction(prediction.clone(), generation))?;
        if !stored {
            tracing::info!(container = %rec.name, vcpus = rec.vcpus, "settings changed during the evaluation: its prediction is discarded");
            return Ok(None);
        }
        self.set_state(Lifecycle::Predicted, "");
        self.event(
            EventKind::Predicted,
            Lifecycle::Predicted,
            None,
            format!(
                "predicted with model {} ({}); baseline {:.3} {}",
                prediction.model_id,
                prediction.provenance,
                baseline.estimate.value,
                baseline.source
            ),
        );
        if journal == Journal::EachMove {
            core.persist().await?;
        }
        Ok(Some(prediction))
    }

    fn below_gate(&self, loaded: &LoadedModel, reason: &str, vcpus: usize) -> DaemonError {
        DaemonError::BelowGate {
            model_id: loaded.model.id().to_owned(),
            path: loaded.path.display().to_string(),
            reason: reason.to_owned(),
            vcpus,
            dir: self.core.models.dir().display().to_string(),
        }
    }

    fn no_model(&self, vcpus: usize) -> DaemonError {
        DaemonError::NoModel {
            fingerprint: self.core.node.machine.fingerprint().to_owned(),
            vcpus,
            dir: self.core.models.dir().display().to_string(),
        }
    }

    /// Where to measure the container in `placement_id`: a concrete instance on the units
    /// it may use.
    fn measurement_target(
        &self,
        set: &PlacementSet,
        rec: &ContainerRecord,
        state: Lifecycle,
        placement_id: &str,
        model_id: &str,
    ) -> Result<Target, DaemonError> {
        let core = &self.core;
        let unknown = || DaemonError::UnknownPlacement {
            placement: placement_id.to_owned(),
            vcpus: rec.vcpus,
        };
        // The model was found for this very placement set, so its placements are in it.
        let placement = set.get(placement_id).ok_or_else(unknown)?;
        let inst = instantiate(
            &core.node.machine,
            rec.vcpus,
            placement,
            &self.available_units(),
        )
        .map_err(|source| DaemonError::Placements {
            vcpus: rec.vcpus,
            source: Box::new(source),
        })?
        .ok_or_else(|| DaemonError::NoRoom {
            container: rec.name.clone(),
            placement: placement_id.to_owned(),
        })?;
        Ok(Target {
            placement: Some(inst.id.clone()),
            units: inst.units,
            cpus: inst.cpus,
            mems: inst.mems,
            predicted: None,
            reason: format!("{} placement of model {model_id}", state.name()),
        })
    }

    /// An on-demand prediction: measured in baseline and probe, then put back where it
    /// was. The state file is written twice: before (where to put the container back, which
    /// a restart after a crash honours) and after.
    pub async fn predict_now(&self) -> Result<PredictionRecord, DaemonError> {
        let _guard = self.try_begin("predicting (baseline and probe)")?;
        let (rec, generation) = self.settings()?;
        let set = self.core.node.placements(rec.vcpus)?;
        // Fail before moving anything when there is no model.
        if self
            .core
            .models
            .find(self.core.node.machine.fingerprint(), &set)
            .is_none()
        {
            return Err(self.no_model(rec.vcpus));
        }
        let resume = rec.assigned.clone();
        let back_to = match &resume {
            Some(a) => Target {
                placement: a.placement.clone(),
                units: a.units.clone(),
                cpus: a.cpus.clone(),
                mems: a.mems.clone(),
                predicted: None,
                reason: "back where it was before the prediction".into(),
            },
            None => {
                let now = self.current_cpuset().await?;
                Target {
                    placement: None,
                    units: Vec::new(),
                    cpus: now.effective_cpus,
                    mems: now.effective_mems,
                    predicted: None,
                    reason: "back where it was before the prediction".into(),
                }
            }
        };
        self.with(|e| {
            e.record.resume = Some(crate::state::Assigned {
                placement: back_to.placement.clone(),
                units: back_to.units.clone(),
                cpus: back_to.cpus.clone(),
                mems: back_to.mems.clone(),
            });
        })?;
        self.core.persist().await?;
        let mut source = MetricSlot::default();
        let result = self
            .evaluate(&set, &mut source, generation, Journal::Covered)
            .await;
        // Whatever happened, put it back.
        let back = self
            .move_to(&back_to, &Mode::Kernel, Journal::Covered)
            .await;
        let _ = self.with(|e| {
            e.record.resume = None;
            if resume.is_none() {
                e.record.assigned = None;
            }
        });
        self.set_state(Lifecycle::Watched, "");
        self.core.persist().await?;
        let prediction = result?.ok_or_else(|| DaemonError::SettingsChanged {
            container: rec.name.clone(),
        })?;
        back?;
        Ok(prediction)
    }

    /// The model policy's check before it moves a container on `prediction`: where the
    /// choice hinges on a cell whose interval holds the goal, or the container is novel,
    /// that placement is measured too and the measurement replaces the cell
    /// ([`policy::third_measurement`]). Returns the prediction to decide on, or `None` when
    /// the settings changed meanwhile. The caller holds the operation lock.
    pub async fn third_measurement(
        &self,
        set: &PlacementSet,
        goal: f64,
        mut prediction: PredictionRecord,
        source: &mut MetricSlot,
        generation: u64,
    ) -> Result<Option<PredictionRecord>, DaemonError> {
        let core = self.core.clone();
        if !core.settings.config().policy.third_measurement || prediction.third.is_some() {
            return Ok(Some(prediction));
        }
        let which = self
            .in_situation(set, Some(&prediction), |s| {
                policy::third_measurement(goal, s, prediction.novel)
            })
            .map_err(DaemonError::policy)?;
        let Some(which) = which else {
            return Ok(Some(prediction));
        };
        let Some(baseline) = prediction.baseline_value().filter(|b| *b > 0.0) else {
            return Ok(Some(prediction));
        };
        let rec = self.record()?;
        let mut target = self.measurement_target(
            set,
            &rec,
            Lifecycle::Probe,
            &which.placement,
            &prediction.model_id,
        )?;
        target.reason = which.to_string();
        self.set_state(
            Lifecycle::Probe,
            &format!("measuring in {}: {which}", which.placement),
        );
        self.move_to(&target, &Mode::Kernel, Journal::EachMove)
            .await?;
        let m = source.measure_here(self, &self.record()?).await?;
        self.keep_measurement(set, &rec, prediction.unix_ms, &which.placement, &m);
        let relative = m.estimate.value / baseline;
        prediction
            .observations
            .push(observation_record(&which.placement, &m));
        if let Some(cell) = prediction
            .placements
            .iter_mut()
            .find(|c| c.placement == which.placement)
        {
            cell.relative = relative;
            cell.spread = 0.0;
            cell.measured = true;
            cell.interval = None;
        }
        let third = format!("{which}, and measured at {relative:.2} x baseline");
        tracing::info!(container = %rec.name, "{third}");
        prediction.third = Some(third);
        if !self.with(|e| e.store_prediction(prediction.clone(), generation))? {
            return Ok(None);
        }
        core.persist().await?;
        Ok(Some(prediction))
    }
}

/// What the state file keeps of one measurement.
fn observation_record(placement: &str, m: &Measurement) -> ObservationRecord {
    ObservationRecord {
        placement: placement.to_owned(),
        value: m.estimate.value,
        low: m.estimate.lo,
        high: m.estimate.hi,
        source: m.source.clone(),
        windows: m.windows.len(),
        dropped: m.dropped(),
    }
}

/// What the state file keeps of one prediction: the model, the two measurements, the
/// predicted vector and what to warn about.
fn prediction_record(
    loaded: &LoadedModel,
    vcpus: usize,
    measured: &[(String, Measurement)],
    predicted: &placed_models::Prediction,
    warnings: Vec<String>,
    below_gate: Option<String>,
) -> PredictionRecord {
    let model = &loaded.model;
    PredictionRecord {
        model_id: predicted.model_id.clone(),
        model_path: loaded.path.display().to_string(),
        provenance: predicted.provenance,
        vcpus,
        baseline: model.baseline().to_owned(),
        probe: model.probe().to_owned(),
        observations: measured
            .iter()
            .map(|(p, m)| observation_record(p, m))
            .collect(),
        placements: predicted
            .placements
            .iter()
            .map(|p| PredictedRecord {
                placement: p.id.clone(),
                relative: p.relative,
                spread: p.spread,
                measured: p.measured,
                interval: p.interval,
            })
            .collect(),
        warnings,
        unix_ms: now_ms(),
        below_gate,
        novel: predicted.novelty.is_some(),
        third: None,
        across_classes: model.across_classes().is_some(),
    }
}

/// What a prediction's reader must know: it extrapolates, it comes from a model for other
/// sizes or other machines, it is below the accuracy gate, or its data is not real.
fn prediction_warnings(
    loaded: &LoadedModel,
    vcpus: usize,
    predicted: &placed_models::Prediction,
    below_gate: Option<&str>,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(n) = &predicted.novelty {
        warnings.push(format!(
            "no training workload behaved like this one (probe at {:.2} x baseline, nearest category expects {:.2}-{:.2}): the prediction extrapolates",
            n.probe_ratio, n.nearest_interval.0, n.nearest_interval.1
        ));
    }
    if let Some(sizes) = loaded.model.trained_sizes() {
        let sizes: Vec<String> = sizes.iter().map(u32::to_string).collect();
        warnings.push(format!(
            "no model for {} vCPUs: predicted by the model across sizes trained on v = {}, its intervals as wide as its errors on sizes it did not see",
            vcpus,
            sizes.join(", ")
        ));
    }
    if let Some(note) = loaded.model.across_classes() {
        warnings.push(note.to_owned());
    }
    if let Some(reason) = below_gate {
        warnings.push(format!(
            "model {} is below the accuracy gate ({reason}): this prediction is shown, never acted on",
            predicted.model_id
        ));
    }
    if predicted.provenance != placed_models::Provenance::Real {
        warnings.push(format!(
            "model trained on {} data: not real placement results",
            predicted.provenance
        ));
    }
    warnings
}

#[cfg(test)]
mod tests {
    use placed_host::observe::{Estimate, Kind};

    use super::*;

    fn measured(median: f64) -> Measurement {
        Measurement::steady(Kind::Counter, median, 0.1)
    }

    #[test]
    fn a_noisy_probe_is_named_by_the_ratio_the_table_shows() {
        let (baseline, probe) = (measured(100.0), measured(93.0));
        // The comparison's own point (pairwise ratios) differs from the medians' ratio.
        let mut c = Comparison {
            ratio: Estimate {
                value: 0.998,
                lo: 0.90,
                hi: 1.08,
                confidence: 0.95,
            },
            verdict: Verdict::Inconclusive,
            margin: 0.05,
        };
        let warning = noisy_probe(&baseline, &probe, &c).unwrap();
        let table = observation(&probe).value / observation(&baseline).value;
        assert!(
            warning.contains(&format!("probe at {table:.3} x baseline")),
            "{warning}"
        );
        assert!(warning.contains("0.930"), "{warning}");
        assert!(!warning.contains("0.998"), "{warning}");
        assert!(
            warning.contains("95% interval of the ratio, 0.900-1.080"),
            "{warning}"
        );
        c.verdict = Verdict::Lower;
        assert_eq!(noisy_probe(&baseline, &probe, &c), None);
    }
}
