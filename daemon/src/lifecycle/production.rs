//! Production data: every measurement the daemon makes of a managed container, kept as
//! training data (docs/models.md, "Production data"). One JSON-lines file per machine class
//! and container size, `<state dir>/production/<fingerprint>-v<N>.jsonl`, in the format
//! `placed-train` reads: the machine header, then one partial run record per measured cell.
//! A run is one evaluation of a container (its baseline, probe, third measurement and where
//! the decision left it); its number is the evaluation's time in milliseconds modulo 2^32,
//! so it is unique per workload without any counter to keep across restarts.
//!
//! Keeping data never fails a decision: an error is counted in
//! `placed_production_data_errors_total` and said in the log once; a file at its bound
//! (`production_data.max_bytes`) stops growing, said once.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use placed_core::machine::Machine;
use placed_core::placement::PlacementSet;
use placed_host::observe::Measurement;
use placed_models::Provenance;
use placed_models::data::{
    Line, LineRef, MAX_NAME, MachineHeader, Measurement as Cell, RunRecord, line,
};
use placed_models::resources::{ClassResources, of_machine};

use crate::config::ProductionDataConfig;
use crate::telemetry::Metrics;

/// The label naming a container's workload family (cross-validation holds a family out
/// together); without it the family is the workload.
pub const FAMILY_LABEL: &str = "placed.io/family";
/// The label naming a container's workload; without it the workload is the container's name.
pub const WORKLOAD_LABEL: &str = "placed.io/workload";

/// One measurement of a managed container to keep.
#[derive(Debug)]
pub struct Measured<'a> {
    /// The placements of the container's size: the file's header.
    pub set: &'a PlacementSet,
    /// The container's name.
    pub name: &'a str,
    pub labels: &'a BTreeMap<String, String>,
    /// The evaluation the measurement belongs to ([`run_of`]).
    pub run: u32,
    pub placement: &'a str,
    pub measurement: &'a Measurement,
}

/// The run number of the evaluation made at `unix_ms`.
pub fn run_of(unix_ms: i64) -> u32 {
    // The remainder is below 2^32 by construction.
    u32::try_from(unix_ms.rem_euclid(1 << 32)).unwrap_or(0)
}

/// The production data files of this daemon.
#[derive(Debug)]
pub struct Production {
    dir: PathBuf,
    provenance: Provenance,
    host: Option<String>,
    /// This host's machine model: each file says, after its header, what each placement
    /// uses of it (the resources line), so that `placed-train fit --prior` can make the
    /// model across classes ready for this host from the file alone.
    machine: Option<Machine>,
    metrics: Arc<Metrics>,
    files: Mutex<Files>,
}

#[derive(Debug, Default)]
struct Files {
    open: HashMap<(String, u32), Open>,
    /// Whether a failure was said in the log already: said once, every one counted.
    failure_said: bool,
}

/// A file written to since start.
#[derive(Debug)]
struct Open {
    path: PathBuf,
    bytes: u64,
    /// The cells of the file's latest runs: a cell measured again in one run (each watch
    /// measurement where a decision left the container) is kept once, so the file always
    /// validates.
    cells: RecentRuns,
    /// Runs in the file: evaluations of a container, each (workload, run) once.
    runs: u64,
    full_said: bool,
}

/// Runs whose cells are remembered per file. A run's cells all arrive during its
/// evaluation and the watch measurement after it, so only runs in progress can repeat a
/// cell, one per container at most: remembering every run of a full file (64 MiB, about
/// 130,000 records) would cost the daemon more memory than all else it keeps.
const RUNS_REMEMBERED: usize = 1024;

/// The cells of the last [`RUNS_REMEMBERED`] runs, by (workload, run), oldest forgotten
/// first.
#[derive(Debug, Default)]
struct RecentRuns {
    cells: HashMap<(String, u32), HashSet<String>>,
    order: std::collections::VecDeque<(String, u32)>,
}

impl RecentRuns {
    fn contains(&self, workload: &str, run: u32, placement: &str) -> bool {
        self.cells
            .get(&(workload.to_owned(), run))
            .is_some_and(|c| c.contains(placement))
    }

    /// Remembers the cell; whether it began a run not seen before.
    fn insert(&mut self, workload: &str, run: u32, placement: &str) -> bool {
        let key = (workload.to_owned(), run);
        if let Some(cells) = self.cells.get_mut(&key) {
            cells.insert(placement.to_owned());
            return false;
        }
        if self.order.len() >= RUNS_REMEMBERED {
            if let Some(oldest) = self.order.pop_front() {
                self.cells.remove(&oldest);
            }
        }
        self.order.push_back(key.clone());
        self.cells
            .insert(key, HashSet::from([placement.to_owned()]));
        true
    }
}

/// Why a measurement could not be kept.
#[derive(Debug, thiserror::Error)]
enum KeepError {
    #[error("cannot write production data {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot encode a production data record")]
    Encode(#[source] serde_json::Error),
}

impl Production {
    /// Files under `production/` beside the state file; `host` names this host in records.
    pub fn new(
        state_file: &Path,
        provenance: Provenance,
        host: Option<String>,
        metrics: Arc<Metrics>,
    ) -> Self {
        let dir = state_file
            .parent()
            .unwrap_or_else(|| Path::new("."))
            .join("production");
        Self {
            dir,
            provenance,
            host: host.map(|h| clip(h.trim())).filter(|h| !h.is_empty()),
            machine: None,
            metrics,
            files: Mutex::default(),
        }
    }

    /// Files that describe `machine`'s placements by their resources.
    #[must_use]
    pub fn describing(mut self, machine: Machine) -> Self {
        self.machine = Some(machine);
        self
    }

    /// What `set`'s placements use of this host, when it can be counted.
    fn resources(&self, set: &PlacementSet) -> Option<ClassResources> {
        let machine = self.machine.as_ref()?;
        of_machine(machine, set)
            .inspect_err(|e| {
                tracing::warn!(
                    error = %placed_core::text::error_line(e),
                    vcpus = set.vcpus,
                    "production data: this host's resources cannot be counted, so its file has no resources line and placed-train fit --prior cannot use it"
                );
            })
            .ok()
    }

    /// Where the files are.
    #[cfg(test)]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of `set`'s machine class and size.
    pub fn file_of(&self, set: &PlacementSet) -> PathBuf {
        let fingerprint: String = set
            .fingerprint
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.dir.join(format!("{fingerprint}-v{}.jsonl", set.vcpus))
    }

    /// Appends `measured` when production data is on. Never fails: see the module's doc.
    /// The runs its file holds when it began a new one.
    pub fn keep(&self, config: &ProductionDataConfig, measured: &Measured<'_>) -> Option<u64> {
        if !config.enabled {
            return None;
        }
        let record = self.record(measured)?;
        // A poisoned lock leaves at worst a key set missing the record being written.
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        match self.append(&mut files, config.max_bytes, measured.set, &record) {
            Ok(Some(kept)) => {
                self.metrics.production_records.inc();
                kept.new_run.then_some(kept.runs)
            }
            Ok(None) => None,
            Err(e) => {
                self.metrics.production_errors.inc();
                if !files.failure_said {
                    files.failure_said = true;
                    tracing::warn!(
                        error = %placed_core::text::error_line(&e),
                        "production data: a measurement was not kept (said once; placed_production_data_errors_total counts them)"
                    );
                }
                None
            }
        }
    }

    /// The record of `measured`, or `None` for a value no data file may hold.
    fn record(&self, measured: &Measured<'_>) -> Option<RunRecord> {
        let m = measured.measurement;
        let value = m.estimate.value;
        if !(value.is_finite() && value > 0.0) {
            return None;
        }
        let spread = (m.estimate.hi - m.estimate.lo) / 2.0;
        let cell = Cell {
            value,
            unit: match m.kind {
                placed_host::observe::Kind::Counter => "per second".into(),
                placed_host::observe::Kind::Gauge => "level".into(),
                placed_host::observe::Kind::Ratio => "ratio".into(),
            },
            repetitions: u32::try_from(m.kept_values().len().max(1)).unwrap_or(u32::MAX),
            spread: if spread.is_finite() {
                spread.max(0.0)
            } else {
                0.0
            },
        };
        let workload = clip(
            measured
                .labels
                .get(WORKLOAD_LABEL)
                .map_or(measured.name, String::as_str),
        );
        let family = clip(
            measured
                .labels
                .get(FAMILY_LABEL)
                .map_or(workload.as_str(), String::as_str),
        );
        let mut record = RunRecord::new(
            &measured.set.fingerprint,
            u32::try_from(measured.set.vcpus).ok()?,
            &family,
            &workload,
            measured.placement,
            cell,
            self.provenance,
        )
        .with_run(measured.run);
        record.partial = true;
        record.metric = Some(clip(&m.source));
        record.labels = measured
            .labels
            .iter()
            .map(|(k, v)| (clip(k), clip(v)))
            .collect();
        record.host = self.host.clone();
        Some(record)
    }

    /// Appends `record` to its file (opened, and checked, the first time); `None` when it
    /// was there already or the file is full.
    fn append(
        &self,
        files: &mut Files,
        max_bytes: u64,
        set: &PlacementSet,
        record: &RunRecord,
    ) -> Result<Option<Appended>, KeepError> {
        let class = (record.fingerprint.clone(), record.v);
        let open = match files.open.entry(class) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let open = self.open(set, record.provenance)?;
                self.metrics
                    .production_runs_of(record.v)
                    .set(gauge_value(open.runs));
                v.insert(open)
            }
        };
        if open
            .cells
            .contains(&record.workload, record.run, &record.placement)
        {
            return Ok(None);
        }
        let bytes = line(&LineRef::Run(record)).map_err(KeepError::Encode)?;
        if open.bytes + bytes.len() as u64 > max_bytes {
            if !open.full_said {
                open.full_said = true;
                tracing::warn!(
                    file = %open.path.display(),
                    max_bytes,
                    "production data file full: measurements of this class are no longer kept (merge it away with placed-train merge, or raise production_data.max_bytes)"
                );
            }
            return Ok(None);
        }
        let io = |source| KeepError::Io {
            path: open.path.clone(),
            source,
        };
        std::fs::OpenOptions::new()
            .append(true)
            .open(&open.path)
            .and_then(|mut f| f.write_all(&bytes))
            .map_err(io)?;
        open.bytes += bytes.len() as u64;
        let new_run = open
            .cells
            .insert(&record.workload, record.run, &record.placement);
        if new_run {
            open.runs += 1;
            self.metrics
                .production_runs_of(record.v)
                .set(gauge_value(open.runs));
        }
        Ok(Some(Appended {
            runs: open.runs,
            new_run,
        }))
    }

    /// The file of `set`, resumed when it holds data of this very class, size and
    /// provenance; anything else there is moved aside (never lost) and a new file begun.
    fn open(&self, set: &PlacementSet, provenance: Provenance) -> Result<Open, KeepError> {
        let path = self.file_of(set);
        let io = |source| KeepError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        let header = MachineHeader::of(set);
        let resources = self.resources(set);
        if path.exists() {
            if let Some(open) =
                resume(&path, &header, resources.as_ref(), provenance).map_err(io)?
            {
                return Ok(open);
            }
            let aside = path.with_extension(format!("jsonl.old-{}", super::events::now_ms()));
            tracing::warn!(
                file = %path.display(),
                moved_to = %aside.display(),
                "production data file of another machine description, provenance or format: moved aside, a new one begun"
            );
            std::fs::rename(&path, &aside).map_err(io)?;
        }
        let mut first = line(&LineRef::Machine(&header)).map_err(KeepError::Encode)?;
        if let Some(r) = &resources {
            first.extend(line(&LineRef::Resources(r)).map_err(KeepError::Encode)?);
        }
        std::fs::write(&path, &first).map_err(io)?;
        Ok(Open {
            path,
            bytes: first.len() as u64,
            cells: RecentRuns::default(),
            runs: 0,
            full_said: false,
        })
    }
}

/// The file's latest runs when its header is `header`, its resources line `resources` (a
/// file written before the line existed is another's) and its runs are of `provenance`,
/// read a line at a time (a full file is 64 MiB); a torn last line (a crash mid-write) is
/// cut off. `None` when the file is another's.
fn resume(
    path: &Path,
    header: &MachineHeader,
    resources: Option<&ClassResources>,
    provenance: Provenance,
) -> Result<Option<Open>, std::io::Error> {
    use std::io::BufRead as _;
    let mut reader = std::io::BufReader::new(std::fs::File::open(path)?);
    let mut line = String::new();
    let mut whole: u64 = 0;
    let mut cells = RecentRuns::default();
    let mut runs = 0;
    let mut first = true;
    let mut described = None;
    loop {
        line.clear();
        let n = reader.read_line(&mut line)?;
        if n == 0 || !line.ends_with('\n') {
            break;
        }
        let parsed = serde_json::from_str::<Line>(line.trim_end()).ok();
        match parsed {
            Some(Line::Machine(h)) if first && h == *header => {}
            Some(Line::Run(r)) if !first && r.provenance == provenance => {
                runs += u64::from(cells.insert(&r.workload, r.run, &r.placement));
            }
            Some(Line::Resources(r)) if !first && described.is_none() => described = Some(r),
            _ => return Ok(None),
        }
        first = false;
        whole += n as u64;
    }
    if first || described.as_ref() != resources {
        return Ok(None);
    }
    if whole < std::fs::metadata(path)?.len() {
        let f = std::fs::OpenOptions::new().write(true).open(path)?;
        f.set_len(whole)?;
    }
    Ok(Some(Open {
        path: path.to_owned(),
        bytes: whole,
        cells,
        runs,
        full_said: false,
    }))
}

/// A record appended to its file.
#[derive(Debug, Clone, Copy)]
struct Appended {
    /// Runs the file holds now.
    runs: u64,
    /// Whether the record began one of them.
    new_run: bool,
}

/// A count as a gauge's value (a file holds far fewer than 2^63 runs).
fn gauge_value(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `text` cut to what a data file holds of a name.
fn clip(text: &str) -> String {
    text.chars().take(MAX_NAME).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use placed_core::machine::{Machine, TopologySource};
    use placed_host::observe::Kind;
    use placed_models::Dataset;

    fn machine() -> Machine {
        Machine::load(
            &TopologySource::Synthetic("pack:2 numa:2 core:4 pu:2".into()),
            None,
        )
        .unwrap()
    }

    fn set() -> PlacementSet {
        placed_core::placement::important_placements(&machine(), 4).unwrap()
    }

    fn measurement(value: f64) -> Measurement {
        Measurement::steady(Kind::Gauge, value, 0.01)
    }

    /// Keeps two cells of `run`; the file's runs when the first began a new one.
    fn keep(
        p: &Production,
        config: &ProductionDataConfig,
        set: &PlacementSet,
        run: u32,
    ) -> Option<u64> {
        let labels = BTreeMap::from([(FAMILY_LABEL.to_owned(), "db".to_owned())]);
        let mut began = None;
        for (i, placement) in set.placements.iter().take(2).enumerate() {
            let runs = p.keep(
                config,
                &Measured {
                    set,
                    name: "pg",
                    labels: &labels,
                    run,
                    placement: &placement.id,
                    measurement: &measurement(100.0 + i as f64),
                },
            );
            // Only the first cell of a run can begin it.
            assert!(i == 0 || runs.is_none(), "{runs:?}");
            began = began.or(runs);
        }
        began
    }

    fn runs_exported(metrics: &Metrics, v: usize) -> i64 {
        metrics.production_runs_of(u32::try_from(v).unwrap()).get()
    }

    #[test]
    fn a_file_resumes_after_a_restart_drops_a_torn_line_and_stops_at_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state.json");
        let metrics = Arc::new(Metrics::default());
        let set = set();
        let config = ProductionDataConfig::default();
        let p = Production::new(
            &state,
            Provenance::Simulated,
            Some("h1\n".into()),
            metrics.clone(),
        );
        assert_eq!(keep(&p, &config, &set, 1), Some(1));
        // The same cells again are kept once.
        assert_eq!(keep(&p, &config, &set, 1), None);
        assert_eq!(runs_exported(&metrics, set.vcpus), 1);
        let path = p.file_of(&set);
        let data = Dataset::load(&path).unwrap();
        assert_eq!(data.records().len(), 2);
        assert_eq!(data.records()[0].family, "db");
        assert_eq!(data.records()[0].host.as_deref(), Some("h1"));
        assert_eq!(metrics.production_records.get(), 2);

        // A crash mid-write, then a restart: the torn line goes, the keys are known.
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"kind\":\"run\",\"fing");
        std::fs::write(&path, &text).unwrap();
        // The runs are counted again from the file: run 1's cells are there, run 2 is new.
        let metrics = Arc::new(Metrics::default());
        let p = Production::new(&state, Provenance::Simulated, None, metrics.clone());
        assert_eq!(keep(&p, &config, &set, 1), None);
        assert_eq!(runs_exported(&metrics, set.vcpus), 1);
        assert_eq!(keep(&p, &config, &set, 2), Some(2));
        assert_eq!(runs_exported(&metrics, set.vcpus), 2);
        let data = Dataset::load(&path).unwrap();
        assert_eq!(data.records().len(), 4);

        // Bounded: nothing more once the next line would pass max_bytes.
        let size = std::fs::metadata(&path).unwrap().len();
        let full = ProductionDataConfig {
            max_bytes: size + 10,
            ..ProductionDataConfig::default()
        };
        keep(&p, &full, &set, 3);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), size);
        assert_eq!(metrics.production_errors.get(), 0);
    }

    /// Memory stays bounded however long the daemon runs: the cells of the last 1,024 runs
    /// are remembered, the oldest forgotten first, and a run in progress is always among
    /// them.
    #[test]
    fn only_the_latest_runs_are_remembered() {
        let mut runs = RecentRuns::default();
        for run in 0..2000u32 {
            runs.insert("pg", run, "a");
            runs.insert("pg", run, "b");
        }
        assert_eq!(runs.order.len(), RUNS_REMEMBERED);
        assert_eq!(runs.cells.len(), RUNS_REMEMBERED);
        assert!(!runs.contains("pg", 0, "a"), "the oldest is forgotten");
        assert!(runs.contains("pg", 1999, "a") && runs.contains("pg", 1999, "b"));
        assert!(!runs.contains("pg", 1999, "c"));
        assert!(!runs.contains("redis", 1999, "a"));
    }

    #[test]
    fn a_file_of_another_provenance_is_moved_aside_not_appended_to() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state.json");
        let metrics = Arc::new(Metrics::default());
        let set = set();
        let config = ProductionDataConfig::default();
        let real = Production::new(&state, Provenance::Real, None, metrics.clone());
        keep(&real, &config, &set, 1);
        let simulated = Production::new(&state, Provenance::Simulated, None, metrics);
        keep(&simulated, &config, &set, 1);
        let data = Dataset::load(&simulated.file_of(&set)).unwrap();
        assert_eq!(data.provenance(), Provenance::Simulated);
        let aside: Vec<_> = std::fs::read_dir(simulated.dir())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().contains(".old-"))
            .collect();
        assert_eq!(aside.len(), 1);
    }

    /// A file says what its placements use of the host, as placed-train counts it, so the
    /// model across classes can be made ready for the host from the file alone; a file
    /// begun without that line (an older build) is moved aside, not appended to.
    #[test]
    fn a_file_describes_its_host_and_one_without_the_description_is_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state.json");
        let metrics = Arc::new(Metrics::default());
        let set = set();
        let config = ProductionDataConfig::default();
        let old = Production::new(&state, Provenance::Simulated, None, metrics.clone());
        keep(&old, &config, &set, 1);
        assert!(
            Dataset::load(&old.file_of(&set))
                .unwrap()
                .resources()
                .is_none()
        );

        let p = Production::new(&state, Provenance::Simulated, None, metrics.clone())
            .describing(machine());
        keep(&p, &config, &set, 2);
        let data = Dataset::load(&p.file_of(&set)).unwrap();
        assert_eq!(
            data.resources(),
            Some(&of_machine(&machine(), &set).unwrap())
        );
        assert_eq!(
            data.records().len(),
            2,
            "the old file's runs are not in the new one"
        );
        let aside = std::fs::read_dir(p.dir())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().contains(".old-"))
            .count();
        assert_eq!(aside, 1);

        // After a restart the described file is resumed, its description written once.
        let again = Production::new(&state, Provenance::Simulated, None, metrics.clone())
            .describing(machine());
        keep(&again, &config, &set, 3);
        let data = Dataset::load(&p.file_of(&set)).unwrap();
        assert_eq!(data.records().len(), 4);
        assert!(data.resources().is_some());
        assert_eq!(metrics.production_errors.get(), 0);
    }

    #[test]
    fn a_run_number_is_the_evaluation_time_modulo_two_to_the_32() {
        assert_eq!(run_of(5), 5);
        assert_eq!(run_of((1 << 32) + 7), 7);
        assert_eq!(run_of(-1), u32::MAX);
    }
}
