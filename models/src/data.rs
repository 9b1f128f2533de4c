//! Training data: JSON lines, one machine header then one record per (workload run,
//! placement). The format is documented in `docs/models.md`; this module reads, validates and
//! writes it, and every problem it finds names the file and line.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use crate::resources::ClassResources;
use serde::{Deserialize, Deserializer, Serialize};
pub use validate::MAX_NAME;
use validate::{check_resources, validate};

#[cfg(feature = "machine")]
mod header;
pub mod merge;
mod validate;

/// Version of the training-data format written in every header line.
pub const DATA_FORMAT_VERSION: u32 = 1;

/// Where a measurement came from. Models inherit it, and anything simulated says so wherever
/// it is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provenance {
    /// Measured on the real machine class the model is for.
    Real,
    /// Measured in a virtual machine: placements are real for the guest, timings say nothing
    /// about real hardware (docs/design.md, "What runs where").
    VirtualMachine,
    /// Produced by `placed-train simulate`: no hardware was measured at all.
    Simulated,
}

impl Provenance {
    /// The least real of several, which a model or report trained on all of them carries:
    /// one simulated file makes the whole simulated. `Simulated` when there are none.
    pub fn least_real(all: impl IntoIterator<Item = Self>) -> Self {
        all.into_iter()
            .max_by_key(|p| match p {
                Self::Real => 0,
                Self::VirtualMachine => 1,
                Self::Simulated => 2,
            })
            .unwrap_or(Self::Simulated)
    }
}

impl fmt::Display for Provenance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Real => "real hardware",
            Self::VirtualMachine => "virtual machine (timings not representative)",
            Self::Simulated => "SIMULATED (no hardware measured)",
        })
    }
}

/// One important placement as the machine model names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacementInfo {
    /// Stable id from the machine model, e.g. `numa2-core12-ic1333`.
    pub id: String,
    /// One score per concern, in the order of [`MachineHeader::concerns`].
    pub scores: Vec<f64>,
}

/// The first line of a data file: what machine class and container size the runs are for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineHeader {
    /// Data format version, [`DATA_FORMAT_VERSION`].
    pub version: u32,
    /// Machine-class fingerprint from the machine model.
    pub fingerprint: String,
    /// vCPUs per container.
    pub v: u32,
    /// Concern names, in score-vector order.
    pub concerns: Vec<String>,
    /// Every important placement for `v` on this machine class.
    pub placements: Vec<PlacementInfo>,
}

/// A measured performance value. Higher is better: collectors convert times to rates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Median over the repetitions.
    #[serde(deserialize_with = "null_as_nan")]
    pub value: f64,
    /// What `value` counts, e.g. `ops/s`; informative only, ratios are unit-free.
    pub unit: String,
    /// How many repetitions the median is over.
    pub repetitions: u32,
    /// Spread of the repetitions (half-width of the confidence interval), in `unit`.
    #[serde(deserialize_with = "null_as_nan")]
    pub spread: f64,
}

/// One workload run measured in one placement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Must equal the header's fingerprint.
    pub fingerprint: String,
    /// Must equal the header's `v`.
    pub v: u32,
    /// Workload name, e.g. `spark-pr-lj`.
    pub workload: String,
    /// Family: cross-validation holds out all workloads of a family together.
    pub family: String,
    /// Distinguishes repeated runs of one workload; each run is one training row.
    #[serde(default)]
    pub run: u32,
    /// Placement id, one of the header's.
    pub placement: String,
    /// Performance in that placement.
    pub performance: Measurement,
    /// Generic counters observed in that placement (e.g. `ipc`), all finite and non-negative.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<String, f64>,
    /// Where the measurement came from; one provenance per file.
    pub provenance: Provenance,
    /// Why the measurement is not good enough to learn from (its interval stayed wider than
    /// the collector's bound after every attempt); `performance.value` is then not a number
    /// (`null`). Fitting leaves out every run with such a record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unusable: Option<String>,
    /// A production run: the daemon measures a container only where its decisions take it
    /// (baseline, probe, a third measurement, where it settled), so the run lacks the other
    /// placements. Validation accepts a run missing placements only when its records say
    /// so; fitting a model of whole vectors leaves such runs out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// What the value measures (the container's metric source as configured, e.g.
    /// `prometheus http://…#requests_total`): two runs of a workload compare only on one metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    /// The container's labels as the daemon saw them (production data only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// The host that measured (its host name), kept when files of several hosts of a class
    /// are merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The value is another model's prediction, not a measurement: a cell of a production
    /// run completed by [`crate::impute`], learned from to keep the row whole but never
    /// scored (a model's cross-validated error and intervals are judged on measurements
    /// only). In memory only: no file holds a completed cell.
    #[serde(skip)]
    pub completed: bool,
}

impl RunRecord {
    /// A usable record of run 0 with no counters: the one place every producer of records
    /// (the collector, the simulator, the daemon, tests) builds them, so a field added to
    /// the format is filled in once.
    pub fn new(
        fingerprint: &str,
        v: u32,
        family: &str,
        workload: &str,
        placement: &str,
        performance: Measurement,
        provenance: Provenance,
    ) -> Self {
        Self {
            fingerprint: fingerprint.to_owned(),
            v,
            workload: workload.to_owned(),
            family: family.to_owned(),
            run: 0,
            placement: placement.to_owned(),
            performance,
            counters: BTreeMap::new(),
            provenance,
            unusable: None,
            partial: false,
            metric: None,
            labels: BTreeMap::new(),
            host: None,
            completed: false,
        }
    }

    /// A SIMULATED cell: `value` ops/s over 3 repetitions with a spread of 1 (tests and
    /// simulators set another with [`RunRecord::with_spread`]).
    pub fn simulated(
        fingerprint: &str,
        v: u32,
        family: &str,
        workload: &str,
        placement: &str,
        value: f64,
    ) -> Self {
        let performance = Measurement {
            value,
            unit: "ops/s".into(),
            repetitions: 3,
            spread: 1.0,
        };
        Self::new(
            fingerprint,
            v,
            family,
            workload,
            placement,
            performance,
            Provenance::Simulated,
        )
    }

    /// The record with these counters.
    pub fn with_counters(mut self, counters: BTreeMap<String, f64>) -> Self {
        self.counters = counters;
        self
    }

    /// The record with this spread (half-width of the interval, in its unit).
    pub fn with_spread(mut self, spread: f64) -> Self {
        self.performance.spread = spread;
        self
    }

    /// The record of another run of its workload.
    pub fn with_run(mut self, run: u32) -> Self {
        self.run = run;
        self
    }

    /// The record marked unusable, with no number, for `reason`.
    pub fn unusable_because(mut self, reason: &str) -> Self {
        self.performance.value = f64::NAN;
        self.performance.spread = f64::NAN;
        self.unusable = Some(reason.to_owned());
        self
    }
}

/// serde_json writes NaN and infinities as `null`; read them back as NaN so validation can say
/// which field was not a number instead of failing with a type error.
fn null_as_nan<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// A line of a data file as read: the machine header or a run record (each JSON object
/// says which in its `kind`).
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Line {
    /// The first line.
    Machine(MachineHeader),
    /// Every other line.
    Run(RunRecord),
    /// Optional, at most once after the header: what the machine has and what each
    /// placement uses of it, which the model across machine classes reads
    /// ([`crate::resources`]).
    Resources(ClassResources),
}

/// Why a data file was refused.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The file could not be read or written.
    #[error("cannot access training data {path}")]
    Io {
        /// The data file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A line is invalid; `line` counts from 1.
    #[error("{path}:{line}: {problem}")]
    Invalid {
        /// The data file (or the origin given to [`Dataset::from_jsonl`]).
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        problem: Problem,
    },
}

/// What is wrong with one line of a data file.
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    /// Not JSON, or not a header or run record.
    #[error("not a valid record")]
    Parse(#[source] crate::json_error::JsonError),
    /// A name or text longer than [`MAX_NAME`].
    #[error("{field} {start:?} is {length} characters long, more than {MAX_NAME}")]
    TooLong {
        /// Which field.
        field: &'static str,
        /// Its first characters.
        start: String,
        /// Its length in characters.
        length: usize,
    },
    /// The file has no lines at all.
    #[error("empty file: expected a machine header line first")]
    Empty,
    /// A byte sequence that is not UTF-8, the encoding of JSON lines.
    #[error("not UTF-8 text (invalid byte at offset {offset} of the file)")]
    NotUtf8 {
        /// Offset of the first invalid byte, from the start of the file.
        offset: usize,
    },
    /// A run record came before the machine header.
    #[error("the first line must be the machine header (\"kind\": \"machine\")")]
    MissingHeader,
    /// A second header.
    #[error("a second machine header (the first is on line {first_line})")]
    DuplicateHeader {
        /// Line of the first header.
        first_line: usize,
    },
    /// The header's format version is not one this build reads.
    #[error("data format version {found} is not supported (this build reads {supported})")]
    UnsupportedVersion {
        /// Version in the file.
        found: u32,
        /// Version this build reads.
        supported: u32,
    },
    /// The header itself is inconsistent.
    #[error("bad machine header: {reason}")]
    BadHeader {
        /// What is inconsistent.
        reason: String,
    },
    /// A record is for another machine class than the header.
    #[error(
        "machine class {found:?} differs from the header's {expected:?}: one machine class per file"
    )]
    MixedMachineClass {
        /// The header's fingerprint.
        expected: String,
        /// The record's fingerprint.
        found: String,
    },
    /// A record is for another container size than the header.
    #[error("v = {found} differs from the header's v = {expected}: one v per file")]
    MixedV {
        /// The header's v.
        expected: u32,
        /// The record's v.
        found: u32,
    },
    /// A record's provenance differs from the first record's.
    #[error(
        "provenance {found:?} differs from {expected:?} on earlier lines: one provenance per file"
    )]
    MixedProvenance {
        /// Provenance of the first record.
        expected: Provenance,
        /// This record's provenance.
        found: Provenance,
    },
    /// A placement id the header does not list.
    #[error("unknown placement id {id:?}")]
    UnknownPlacement {
        /// The unknown id.
        id: String,
    },
    /// A number that is NaN, infinite, negative or (for performance) zero.
    #[error("{field} = {value} is not a valid value ({expected})")]
    InvalidValue {
        /// Which field, e.g. `performance.value` or `counters.ipc`.
        field: String,
        /// The offending value (NaN when the file had `null`).
        value: f64,
        /// What it should be.
        expected: &'static str,
    },
    /// The same workload run measured twice in one placement, both times usable (a
    /// measurement again after an unusable one is not a duplicate: see [`Dataset`]).
    #[error(
        "workload {workload:?} run {run} in placement {placement:?} already measured on line {first_line}"
    )]
    DuplicateMeasurement {
        /// Workload name.
        workload: String,
        /// Run number.
        run: u32,
        /// Placement id.
        placement: String,
        /// Line of the first measurement.
        first_line: usize,
    },
    /// A workload listed under two families.
    #[error("workload {workload:?} is in family {found:?} here but {first:?} earlier")]
    FamilyConflict {
        /// Workload name.
        workload: String,
        /// Family first given.
        first: String,
        /// Family given here.
        found: String,
    },
    /// A workload run lacks some placements; `line` is that run's first record.
    #[error("workload {workload:?} run {run} has no measurement in {missing:?}")]
    MissingPlacements {
        /// Workload name.
        workload: String,
        /// Run number.
        run: u32,
        /// Placement ids never measured for it.
        missing: Vec<String>,
    },
    /// The header is not followed by any run.
    #[error("no run records after the machine header")]
    NoRuns,
    /// A second `resources` line.
    #[error("a second resources line (the first is on line {first_line})")]
    DuplicateResources {
        /// Line of the first.
        first_line: usize,
    },
    /// The `resources` line is not this machine's.
    #[error("bad resources line: {0}")]
    BadResources(#[from] crate::resources::ResourcesError),
}

/// A validated data file: one machine class, one `v`, one provenance, and every workload run
/// measured in every placement of the header.
///
/// One record per (workload, run, placement) is kept. A key may appear more than once only
/// when a resumed collection measured an unusable record again: the usable record wins
/// wherever it is in the file, and among unusable ones the last wins (it says why the latest
/// attempt failed). The kept record takes the place of the key's first line, so the row order
/// stays the collection's. Two usable records of one key are still refused
/// ([`Problem::DuplicateMeasurement`]): there is no telling which is right.
#[derive(Debug, Clone)]
pub struct Dataset {
    header: MachineHeader,
    resources: Option<ClassResources>,
    records: Vec<RunRecord>,
    provenance: Provenance,
    superseded: usize,
    /// The (workload, run) of every partial run.
    partial: BTreeSet<(String, u32)>,
}

impl Dataset {
    /// Reads and validates a JSON-lines data file.
    pub fn load(path: &Path) -> Result<Self, DataError> {
        let bytes = std::fs::read(path).map_err(|source| DataError::Io {
            path: path.to_owned(),
            source,
        })?;
        // Not UTF-8 is a malformed file like any other, said with where: not an I/O error.
        let text = String::from_utf8(bytes).map_err(|e| {
            let offset = e.utf8_error().valid_up_to();
            let valid = &e.as_bytes()[..offset];
            DataError::Invalid {
                path: path.to_owned(),
                line: valid.iter().filter(|&&b| b == b'\n').count() + 1,
                problem: Problem::NotUtf8 { offset },
            }
        })?;
        Self::from_jsonl(&text, path)
    }

    /// Validates JSON-lines text; `origin` names it in errors. Blank lines are skipped but
    /// counted, so line numbers match an editor's.
    pub fn from_jsonl(text: &str, origin: &Path) -> Result<Self, DataError> {
        let mut lines = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            if raw.trim().is_empty() {
                continue;
            }
            let parsed = serde_json::from_str::<Line>(raw).map_err(|e| DataError::Invalid {
                path: origin.to_owned(),
                line,
                problem: Problem::Parse(e.into()),
            })?;
            lines.push((line, parsed));
        }
        validate(lines).map_err(|(line, problem)| DataError::Invalid {
            path: origin.to_owned(),
            line,
            problem,
        })
    }

    /// Validates a dataset built in memory (by the simulator or the collector) exactly as if
    /// it had been read back: record `i` counts as line `i + 2`.
    pub fn from_parts(header: MachineHeader, records: Vec<RunRecord>) -> Result<Self, DataError> {
        let lines = std::iter::once(Line::Machine(header))
            .chain(records.into_iter().map(Line::Run))
            .enumerate()
            .map(|(i, l)| (i + 1, l))
            .collect();
        validate(lines).map_err(|(line, problem)| DataError::Invalid {
            path: PathBuf::from("<memory>"),
            line,
            problem,
        })
    }

    /// The dataset as JSON lines, header first: what [`Dataset::load`] reads (placed-train
    /// writes it to a file atomically).
    pub fn to_jsonl(&self) -> Result<Vec<u8>, serde_json::Error> {
        let mut out = line(&LineRef::Machine(&self.header))?;
        if let Some(r) = &self.resources {
            out.extend(line(&LineRef::Resources(r))?);
        }
        for record in &self.records {
            out.extend(line(&LineRef::Run(record))?);
        }
        Ok(out)
    }

    /// The machine header.
    pub fn header(&self) -> &MachineHeader {
        &self.header
    }

    /// What the machine has and each placement uses of it, when the file says.
    pub fn resources(&self) -> Option<&ClassResources> {
        self.resources.as_ref()
    }

    /// The dataset with its machine's resources, checked against its placements.
    pub fn with_resources(mut self, resources: ClassResources) -> Result<Self, DataError> {
        check_resources(&self.header, &resources).map_err(|problem| DataError::Invalid {
            path: PathBuf::from("<memory>"),
            line: 2,
            problem,
        })?;
        self.resources = Some(resources);
        Ok(self)
    }

    /// Every run record, in file order.
    pub fn records(&self) -> &[RunRecord] {
        &self.records
    }

    /// The provenance shared by every record.
    pub fn provenance(&self) -> Provenance {
        self.provenance
    }

    /// The records marked unusable, in file order.
    pub fn unusable(&self) -> impl Iterator<Item = &RunRecord> {
        self.records.iter().filter(|r| r.unusable.is_some())
    }

    /// How many records of the file were replaced by another record of the same key (an
    /// unusable measurement measured again): not in [`Dataset::records`].
    pub fn superseded(&self) -> usize {
        self.superseded
    }

    /// Whether every record of this workload run is usable: a run with one unusable
    /// placement, or a partial run, has no complete performance vector, so fitting of whole
    /// vectors leaves it out.
    pub fn run_is_usable(&self, workload: &str, run: u32) -> bool {
        !self.run_is_partial(workload, run)
            && !self
                .unusable()
                .any(|r| r.workload == workload && r.run == run)
    }

    /// Whether any record of this workload run marks it partial (production data).
    pub fn run_is_partial(&self, workload: &str, run: u32) -> bool {
        self.partial.contains(&(workload.to_owned(), run))
    }

    /// How many partial runs the data has.
    pub fn partial_runs(&self) -> usize {
        self.partial.len()
    }
}

/// A line of a data file to write: the machine header or a run record.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LineRef<'a> {
    /// The first line.
    Machine(&'a MachineHeader),
    /// Every other line.
    Run(&'a RunRecord),
    /// The machine's resources, after the header.
    Resources(&'a ClassResources),
}

/// `line` as a data file holds it: JSON, then a newline.
pub fn line(line: &LineRef<'_>) -> Result<Vec<u8>, serde_json::Error> {
    let mut bytes = serde_json::to_vec(line)?;
    bytes.push(b'\n');
    Ok(bytes)
}

#[cfg(test)]
pub(crate) mod tests;
