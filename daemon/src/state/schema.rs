//! The state file's payload, format versions 1 and 2: every type the file holds, with its
//! serde attributes, defined here and converted explicitly to and from the in-memory
//! records ([`super::State`] and the types it holds).
//!
//! Version 2 added two fields, both absent when empty: the containers' `labels` and the
//! file's `reservations`. A version 1 payload is a version 2 payload without them, so one
//! set of types reads both; the version number tells a placed older than version 2 that
//! it cannot read a newer file, instead of letting it trip on a field it does not know.
//!
//! The file used to be the in-memory types' own serde, which followed attributes of types
//! in other crates (`Policy`, `SourceSpec`, `Lifecycle`, the reconciliation's `Sets` and
//! `Action`, `Provenance`, ...): renaming a variant there passed every test and made an
//! upgraded daemon refuse its old state. Now those types can change freely; what this
//! module writes changes only when it does, and then a golden file test fails
//! (`golden.rs`) until the format gets a new version.
//!
//! The conversions destructure every in-memory record whole, so that a field added there
//! does not compile until this module says how the file keeps it. Version 1 grew while it
//! was the only version: fields marked "absent in files from before ..." were added with
//! defaults, and files written without them still read (golden `v1-first.state`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use placed_core::cpuset::{CpuSet, NodeSet};

/// Sets as cpulists (`0-3,8`), the kernel's syntax, whatever the set types' own serde.
mod cpulist {
    use std::fmt::Display;
    use std::str::FromStr;

    pub fn serialize<T: Display, S: serde::Serializer>(set: &T, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(set)
    }

    pub fn deserialize<'de, T, D>(d: D) -> Result<T, D::Error>
    where
        T: FromStr,
        T::Err: Display,
        D: serde::Deserializer<'de>,
    {
        let text = <String as serde::Deserialize>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct File {
    written_unix_ms: i64,
    fingerprint: String,
    containers: Vec<Container>,
    /// Absent when empty, and in files from before `Unmanage`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    unmanaged: Vec<String>,
    /// Version 2; absent when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    reservations: Vec<Reservation>,
    /// Absent when empty, and in files from before the live gate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    stopped_models: Vec<StoppedModel>,
}

/// A model the live gate stopped.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoppedModel {
    model_id: String,
    provenance: Provenance,
    since_unix_ms: i64,
    reason: String,
}

/// A decision set against what was measured afterwards.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Outcome {
    model_id: String,
    provenance: Provenance,
    placement: String,
    predicted: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    interval: Option<Interval>,
    measured: bool,
    realized: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    goal: Option<f64>,
    unix_ms: i64,
}

/// Units held for a container not started yet (version 2).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Reservation {
    id: String,
    assigned: Assigned,
    vcpus: usize,
    policy: Policy,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    for_container: Option<String>,
    created_unix_ms: i64,
    expires_unix_ms: i64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Sets {
    #[serde(with = "cpulist")]
    cpus: CpuSet,
    #[serde(with = "cpulist")]
    mems: NodeSet,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Assigned {
    placement: Option<String>,
    units: Vec<usize>,
    #[serde(with = "cpulist")]
    cpus: CpuSet,
    #[serde(with = "cpulist")]
    mems: NodeSet,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Migration {
    from: Sets,
    to: Assigned,
    started_unix_ms: i64,
    frozen: bool,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Action {
    Reasserted,
    Adopted,
    Left,
    GaveUp,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum OnOverride {
    Reassert,
    Adopt,
    Leave,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Override {
    expected: Sets,
    found: Sets,
    action: Action,
    unix_ms: i64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Observation {
    placement: String,
    value: f64,
    low: f64,
    high: f64,
    source: String,
    windows: usize,
    dropped: usize,
}

#[derive(Debug, Serialize, Deserialize)]
struct Interval {
    low: f64,
    high: f64,
    level: f64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Predicted {
    placement: String,
    relative: f64,
    spread: f64,
    measured: bool,
    /// Absent in files from before intervals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    interval: Option<Interval>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Provenance {
    Real,
    VirtualMachine,
    Simulated,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Prediction {
    model_id: String,
    model_path: String,
    provenance: Provenance,
    vcpus: usize,
    baseline: String,
    probe: String,
    observations: Vec<Observation>,
    placements: Vec<Predicted>,
    warnings: Vec<String>,
    unix_ms: i64,
    /// Absent in files from before the accuracy gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    below_gate: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    novel: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    third: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum VcpuSource {
    Request,
    Quota,
    Cpuset,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
enum Policy {
    Observe,
    Model { goal: f64 },
    Conservative,
    Aggressive,
    SmartAggressive,
    Pinned { placement: String },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Lifecycle {
    Discovered,
    Baseline,
    Probe,
    Predicted,
    Placed,
    Watched,
    Waiting,
    Migrating,
    Failed,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum PatternMode {
    #[default]
    Rate,
    Total,
    Increment,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum PatternStream {
    Stdout,
    Stderr,
    #[default]
    Both,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum PatternInput {
    Program {
        argv: Vec<String>,
        #[serde(default)]
        stream: PatternStream,
    },
    File {
        path: std::path::PathBuf,
    },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum Metric {
    Pushed {
        #[serde(default)]
        counter: bool,
    },
    Prometheus {
        url: String,
        selector: String,
    },
    Command {
        argv: Vec<String>,
        #[serde(default)]
        counter: bool,
    },
    Perf {
        ipc: bool,
    },
    Pattern {
        regex: String,
        #[serde(default)]
        mode: PatternMode,
        input: PatternInput,
    },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Container {
    id: String,
    name: String,
    runtime: String,
    runtime_id: String,
    vcpus: usize,
    vcpus_source: VcpuSource,
    policy: Policy,
    state: Lifecycle,
    #[serde(default)]
    detail: String,
    original: Option<Sets>,
    assigned: Option<Assigned>,
    migration: Option<Migration>,
    #[serde(default)]
    resume: Option<Assigned>,
    metric: Option<Metric>,
    prediction: Option<Prediction>,
    updated_unix_ms: i64,
    /// Absent in files from before reconciliation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    on_override: Option<OnOverride>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    overridden: Option<Override>,
    /// Version 2; absent when empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    labels: BTreeMap<String, String>,
    /// Absent until an outcome was measured, and in files from before live accuracy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    outcome: Option<Outcome>,
}

/// Writing: the in-memory state as the current version has it.
mod write {
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
}

/// Reading: version 1 or 2 as the in-memory state.
mod read {
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
}
