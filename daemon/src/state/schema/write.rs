//! Writing: the in-memory state as the current version has it.

use super::*;
use crate::state as mem;

impl From<&mem::State> for File {
    fn from(s: &mem::State) -> Self {
        let mem::State {
            written_unix_ms,
            fingerprint,
            containers,
            unmanaged,
            reservations,
            stopped_models,
        } = s;
        Self {
            written_unix_ms: *written_unix_ms,
            fingerprint: fingerprint.clone(),
            containers: containers.iter().map(Container::from).collect(),
            unmanaged: unmanaged.clone(),
            reservations: reservations.iter().map(Reservation::from).collect(),
            stopped_models: stopped_models.iter().map(StoppedModel::from).collect(),
        }
    }
}

impl From<&mem::StoppedModel> for StoppedModel {
    fn from(m: &mem::StoppedModel) -> Self {
        let mem::StoppedModel {
            model_id,
            provenance,
            since_unix_ms,
            reason,
        } = m;
        Self {
            model_id: model_id.clone(),
            provenance: (*provenance).into(),
            since_unix_ms: *since_unix_ms,
            reason: reason.clone(),
        }
    }
}

impl From<&placed_models::live::Outcome> for Outcome {
    fn from(o: &placed_models::live::Outcome) -> Self {
        let placed_models::live::Outcome {
            model_id,
            provenance,
            placement,
            predicted,
            interval,
            measured,
            realized,
            goal,
            unix_ms,
        } = o;
        Self {
            model_id: model_id.clone(),
            provenance: (*provenance).into(),
            placement: placement.clone(),
            predicted: *predicted,
            interval: interval.map(|i| {
                let placed_models::interval::Interval { low, high, level } = i;
                Interval { low, high, level }
            }),
            measured: *measured,
            realized: *realized,
            goal: *goal,
            unix_ms: *unix_ms,
        }
    }
}

impl From<&mem::ReservationRecord> for Reservation {
    fn from(r: &mem::ReservationRecord) -> Self {
        let mem::ReservationRecord {
            id,
            assigned,
            vcpus,
            policy,
            labels,
            for_container,
            created_unix_ms,
            expires_unix_ms,
        } = r;
        Self {
            id: id.clone(),
            assigned: assigned.into(),
            vcpus: *vcpus,
            policy: policy.into(),
            labels: labels.clone(),
            for_container: for_container.clone(),
            created_unix_ms: *created_unix_ms,
            expires_unix_ms: *expires_unix_ms,
        }
    }
}

impl From<&mem::Cpuset> for Sets {
    fn from(s: &mem::Cpuset) -> Self {
        let mem::Cpuset { cpus, mems } = s;
        Self {
            cpus: cpus.clone(),
            mems: mems.clone(),
        }
    }
}

impl From<&mem::Assigned> for Assigned {
    fn from(a: &mem::Assigned) -> Self {
        let mem::Assigned {
            placement,
            units,
            cpus,
            mems,
        } = a;
        Self {
            placement: placement.clone(),
            units: units.clone(),
            cpus: cpus.clone(),
            mems: mems.clone(),
        }
    }
}

impl From<&mem::Migration> for Migration {
    fn from(m: &mem::Migration) -> Self {
        let mem::Migration {
            from,
            to,
            started_unix_ms,
            frozen,
        } = m;
        Self {
            from: from.into(),
            to: to.into(),
            started_unix_ms: *started_unix_ms,
            frozen: *frozen,
        }
    }
}

impl From<placed_core::reconcile::Action> for Action {
    fn from(a: placed_core::reconcile::Action) -> Self {
        use placed_core::reconcile::Action as A;
        match a {
            A::Reasserted => Self::Reasserted,
            A::Adopted => Self::Adopted,
            A::Left => Self::Left,
            A::GaveUp => Self::GaveUp,
        }
    }
}

impl From<placed_core::reconcile::OnOverride> for OnOverride {
    fn from(o: placed_core::reconcile::OnOverride) -> Self {
        use placed_core::reconcile::OnOverride as O;
        match o {
            O::Reassert => Self::Reassert,
            O::Adopt => Self::Adopt,
            O::Leave => Self::Leave,
        }
    }
}

impl From<&mem::OverrideRecord> for Override {
    fn from(o: &mem::OverrideRecord) -> Self {
        let mem::OverrideRecord {
            expected,
            found,
            action,
            unix_ms,
        } = o;
        Self {
            expected: expected.into(),
            found: found.into(),
            action: (*action).into(),
            unix_ms: *unix_ms,
        }
    }
}

impl From<&mem::ObservationRecord> for Observation {
    fn from(o: &mem::ObservationRecord) -> Self {
        let mem::ObservationRecord {
            placement,
            value,
            low,
            high,
            source,
            windows,
            dropped,
        } = o;
        Self {
            placement: placement.clone(),
            value: *value,
            low: *low,
            high: *high,
            source: source.clone(),
            windows: *windows,
            dropped: *dropped,
        }
    }
}

impl From<&mem::PredictedRecord> for Predicted {
    fn from(p: &mem::PredictedRecord) -> Self {
        let mem::PredictedRecord {
            placement,
            relative,
            spread,
            measured,
            interval,
        } = p;
        Self {
            placement: placement.clone(),
            relative: *relative,
            spread: *spread,
            measured: *measured,
            interval: interval.map(|i| {
                let placed_models::interval::Interval { low, high, level } = i;
                Interval { low, high, level }
            }),
        }
    }
}

impl From<placed_models::Provenance> for Provenance {
    fn from(p: placed_models::Provenance) -> Self {
        use placed_models::Provenance as P;
        match p {
            P::Real => Self::Real,
            P::VirtualMachine => Self::VirtualMachine,
            P::Simulated => Self::Simulated,
        }
    }
}

impl From<&mem::PredictionRecord> for Prediction {
    fn from(p: &mem::PredictionRecord) -> Self {
        let mem::PredictionRecord {
            model_id,
            model_path,
            provenance,
            vcpus,
            baseline,
            probe,
            observations,
            placements,
            warnings,
            unix_ms,
            below_gate,
            novel,
            third,
            across_classes,
        } = p;
        Self {
            model_id: model_id.clone(),
            model_path: model_path.clone(),
            provenance: (*provenance).into(),
            vcpus: *vcpus,
            baseline: baseline.clone(),
            probe: probe.clone(),
            observations: observations.iter().map(Observation::from).collect(),
            placements: placements.iter().map(Predicted::from).collect(),
            warnings: warnings.clone(),
            unix_ms: *unix_ms,
            below_gate: below_gate.clone(),
            novel: *novel,
            third: third.clone(),
            across_classes: *across_classes,
        }
    }
}

impl From<mem::VcpuSource> for VcpuSource {
    fn from(v: mem::VcpuSource) -> Self {
        match v {
            mem::VcpuSource::Request => Self::Request,
            mem::VcpuSource::Quota => Self::Quota,
            mem::VcpuSource::Cpuset => Self::Cpuset,
        }
    }
}

impl From<&placed_core::policy::Policy> for Policy {
    fn from(p: &placed_core::policy::Policy) -> Self {
        use placed_core::policy::Policy as P;
        match p {
            P::Observe => Self::Observe,
            P::Model { goal } => Self::Model { goal: *goal },
            P::Conservative => Self::Conservative,
            P::Aggressive => Self::Aggressive,
            P::SmartAggressive => Self::SmartAggressive,
            P::Pinned { placement } => Self::Pinned {
                placement: placement.clone(),
            },
        }
    }
}

impl From<mem::Lifecycle> for Lifecycle {
    fn from(l: mem::Lifecycle) -> Self {
        use mem::Lifecycle as L;
        match l {
            L::Discovered => Self::Discovered,
            L::Baseline => Self::Baseline,
            L::Probe => Self::Probe,
            L::Predicted => Self::Predicted,
            L::Placed => Self::Placed,
            L::Watched => Self::Watched,
            L::Waiting => Self::Waiting,
            L::Migrating => Self::Migrating,
            L::Failed => Self::Failed,
        }
    }
}

impl From<&placed_host::observe::SourceSpec> for Metric {
    fn from(m: &placed_host::observe::SourceSpec) -> Self {
        use placed_host::observe::SourceSpec as S;
        use placed_host::observe::pattern::{Mode, PatternInput as I, Stream};
        match m {
            S::Pushed { counter } => Self::Pushed { counter: *counter },
            S::Prometheus { url, selector } => Self::Prometheus {
                url: url.clone(),
                selector: selector.clone(),
            },
            S::Command { argv, counter } => Self::Command {
                argv: argv.clone(),
                counter: *counter,
            },
            S::Perf { ipc } => Self::Perf { ipc: *ipc },
            S::Pattern { regex, mode, input } => Self::Pattern {
                regex: regex.clone(),
                mode: match mode {
                    Mode::Rate => PatternMode::Rate,
                    Mode::Total => PatternMode::Total,
                    Mode::Increment => PatternMode::Increment,
                },
                input: match input {
                    I::Program { argv, stream } => PatternInput::Program {
                        argv: argv.clone(),
                        stream: match stream {
                            Stream::Stdout => PatternStream::Stdout,
                            Stream::Stderr => PatternStream::Stderr,
                            Stream::Both => PatternStream::Both,
                        },
                    },
                    I::File { path } => PatternInput::File { path: path.clone() },
                },
            },
        }
    }
}

impl From<&mem::ContainerRecord> for Container {
    fn from(c: &mem::ContainerRecord) -> Self {
        let mem::ContainerRecord {
            id,
            name,
            runtime,
            runtime_id,
            vcpus,
            vcpus_source,
            policy,
            state,
            detail,
            original,
            assigned,
            migration,
            resume,
            metric,
            prediction,
            updated_unix_ms,
            on_override,
            overridden,
            labels,
            outcome,
        } = c;
        Self {
            id: id.clone(),
            name: name.clone(),
            runtime: runtime.clone(),
            runtime_id: runtime_id.clone(),
            vcpus: *vcpus,
            vcpus_source: (*vcpus_source).into(),
            policy: policy.into(),
            state: (*state).into(),
            detail: detail.clone(),
            original: original.as_ref().map(Sets::from),
            assigned: assigned.as_ref().map(Assigned::from),
            migration: migration.as_ref().map(Migration::from),
            resume: resume.as_ref().map(Assigned::from),
            metric: metric.as_ref().map(Metric::from),
            prediction: prediction.as_ref().map(Prediction::from),
            updated_unix_ms: *updated_unix_ms,
            on_override: on_override.map(OnOverride::from),
            overridden: overridden.as_ref().map(Override::from),
            labels: labels.clone(),
            outcome: outcome.as_ref().map(Outcome::from),
        }
    }
}
