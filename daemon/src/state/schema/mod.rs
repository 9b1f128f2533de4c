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
    /// Absent in files from before the model across classes, and for every other model.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    across_classes: bool,
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

mod read;
mod write;
