//! Reading: version 1 or 2 as the in-memory state.

use super::*;
use crate::state as mem;

impl From<File> for mem::State {
    fn from(f: File) -> Self {
        let File {
            written_unix_ms,
            fingerprint,
            containers,
            unmanaged,
            reservations,
            stopped_models,
        } = f;
        Self {
            written_unix_ms,
            fingerprint,
            containers: containers.into_iter().map(Into::into).collect(),
            unmanaged,
            reservations: reservations.into_iter().map(Into::into).collect(),
            stopped_models: stopped_models.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<StoppedModel> for mem::StoppedModel {
    fn from(m: StoppedModel) -> Self {
        let StoppedModel {
            model_id,
            provenance,
            since_unix_ms,
            reason,
        } = m;
        Self {
            model_id,
            provenance: provenance.into(),
            since_unix_ms,
            reason,
        }
    }
}

impl From<Outcome> for placed_models::live::Outcome {
    fn from(o: Outcome) -> Self {
        let Outcome {
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
            model_id,
            provenance: provenance.into(),
            placement,
            predicted,
            interval: interval.map(|i| {
                let Interval { low, high, level } = i;
                placed_models::interval::Interval { low, high, level }
            }),
            measured,
            realized,
            goal,
            unix_ms,
        }
    }
}

impl From<Reservation> for mem::ReservationRecord {
    fn from(r: Reservation) -> Self {
        let Reservation {
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
            id,
            assigned: assigned.into(),
            vcpus,
            policy: policy.into(),
            labels,
            for_container,
            created_unix_ms,
            expires_unix_ms,
        }
    }
}

impl From<Sets> for mem::Cpuset {
    fn from(s: Sets) -> Self {
        let Sets { cpus, mems } = s;
        Self { cpus, mems }
    }
}

impl From<Assigned> for mem::Assigned {
    fn from(a: Assigned) -> Self {
        let Assigned {
            placement,
            units,
            cpus,
            mems,
        } = a;
        Self {
            placement,
            units,
            cpus,
            mems,
        }
    }
}

impl From<Migration> for mem::Migration {
    fn from(m: Migration) -> Self {
        let Migration {
            from,
            to,
            started_unix_ms,
            frozen,
        } = m;
        Self {
            from: from.into(),
            to: to.into(),
            started_unix_ms,
            frozen,
        }
    }
}

impl From<Action> for placed_core::reconcile::Action {
    fn from(a: Action) -> Self {
        match a {
            Action::Reasserted => Self::Reasserted,
            Action::Adopted => Self::Adopted,
            Action::Left => Self::Left,
            Action::GaveUp => Self::GaveUp,
        }
    }
}

impl From<OnOverride> for placed_core::reconcile::OnOverride {
    fn from(o: OnOverride) -> Self {
        match o {
            OnOverride::Reassert => Self::Reassert,
            OnOverride::Adopt => Self::Adopt,
            OnOverride::Leave => Self::Leave,
        }
    }
}

impl From<Override> for mem::OverrideRecord {
    fn from(o: Override) -> Self {
        let Override {
            expected,
            found,
            action,
            unix_ms,
        } = o;
        Self {
            expected: expected.into(),
            found: found.into(),
            action: action.into(),
            unix_ms,
        }
    }
}

impl From<Observation> for mem::ObservationRecord {
    fn from(o: Observation) -> Self {
        let Observation {
            placement,
            value,
            low,
            high,
            source,
            windows,
            dropped,
        } = o;
        Self {
            placement,
            value,
            low,
            high,
            source,
            windows,
            dropped,
        }
    }
}

impl From<Predicted> for mem::PredictedRecord {
    fn from(p: Predicted) -> Self {
        let Predicted {
            placement,
            relative,
            spread,
            measured,
            interval,
        } = p;
        Self {
            placement,
            relative,
            spread,
            measured,
            interval: interval.map(|Interval { low, high, level }| {
                placed_models::interval::Interval { low, high, level }
            }),
        }
    }
}

impl From<Provenance> for placed_models::Provenance {
    fn from(p: Provenance) -> Self {
        match p {
            Provenance::Real => Self::Real,
            Provenance::VirtualMachine => Self::VirtualMachine,
            Provenance::Simulated => Self::Simulated,
        }
    }
}

impl From<Prediction> for mem::PredictionRecord {
    fn from(p: Prediction) -> Self {
        let Prediction {
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
            model_id,
            model_path,
            provenance: provenance.into(),
            vcpus,
            baseline,
            probe,
            observations: observations.into_iter().map(Into::into).collect(),
            placements: placements.into_iter().map(Into::into).collect(),
            warnings,
            unix_ms,
            below_gate,
            novel,
            third,
            across_classes,
        }
    }
}

impl From<VcpuSource> for mem::VcpuSource {
    fn from(v: VcpuSource) -> Self {
        match v {
            VcpuSource::Request => Self::Request,
            VcpuSource::Quota => Self::Quota,
            VcpuSource::Cpuset => Self::Cpuset,
        }
    }
}

impl From<Policy> for placed_core::policy::Policy {
    fn from(p: Policy) -> Self {
        match p {
            Policy::Observe => Self::Observe,
            Policy::Model { goal } => Self::Model { goal },
            Policy::Conservative => Self::Conservative,
            Policy::Aggressive => Self::Aggressive,
            Policy::SmartAggressive => Self::SmartAggressive,
            Policy::Pinned { placement } => Self::Pinned { placement },
        }
    }
}

impl From<Lifecycle> for mem::Lifecycle {
    fn from(l: Lifecycle) -> Self {
        match l {
            Lifecycle::Discovered => Self::Discovered,
            Lifecycle::Baseline => Self::Baseline,
            Lifecycle::Probe => Self::Probe,
            Lifecycle::Predicted => Self::Predicted,
            Lifecycle::Placed => Self::Placed,
            Lifecycle::Watched => Self::Watched,
            Lifecycle::Waiting => Self::Waiting,
            Lifecycle::Migrating => Self::Migrating,
            Lifecycle::Failed => Self::Failed,
        }
    }
}

impl From<Metric> for placed_host::observe::SourceSpec {
    fn from(m: Metric) -> Self {
        use placed_host::observe::pattern::{Mode, PatternInput as I, Stream};
        match m {
            Metric::Pushed { counter } => Self::Pushed { counter },
            Metric::Prometheus { url, selector } => Self::Prometheus { url, selector },
            Metric::Command { argv, counter } => Self::Command { argv, counter },
            Metric::Perf { ipc } => Self::Perf { ipc },
            Metric::Pattern { regex, mode, input } => Self::Pattern {
                regex,
                mode: match mode {
                    PatternMode::Rate => Mode::Rate,
                    PatternMode::Total => Mode::Total,
                    PatternMode::Increment => Mode::Increment,
                },
                input: match input {
                    PatternInput::Program { argv, stream } => I::Program {
                        argv,
                        stream: match stream {
                            PatternStream::Stdout => Stream::Stdout,
                            PatternStream::Stderr => Stream::Stderr,
                            PatternStream::Both => Stream::Both,
                        },
                    },
                    PatternInput::File { path } => I::File { path },
                },
            },
        }
    }
}

impl From<Container> for mem::ContainerRecord {
    fn from(c: Container) -> Self {
        let Container {
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
            id,
            name,
            runtime,
            runtime_id,
            vcpus,
            vcpus_source: vcpus_source.into(),
            policy: policy.into(),
            state: state.into(),
            detail,
            original: original.map(Into::into),
            assigned: assigned.map(Into::into),
            migration: migration.map(Into::into),
            resume: resume.map(Into::into),
            metric: metric.map(Into::into),
            prediction: prediction.map(Into::into),
            updated_unix_ms,
            on_override: on_override.map(Into::into),
            overridden: overridden.map(Into::into),
            labels,
            outcome: outcome.map(Into::into),
        }
    }
}
