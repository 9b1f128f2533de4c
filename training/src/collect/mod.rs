//! The collector: every workload in every important placement of this host, each run in its
//! own cgroup with the placement's cpuset, measured with the observation protocol and
//! appended to the data file as it completes (docs/training.md, "Collecting").
//!
//! - `plan`: the interleaved order. `data_file`: resumable appends. `cgroups`: the cgroups
//!   and their guards. `progress`: done/total and time left. `job`: what can be run;
//!   `selftest`: two tiny workloads for testing the collector alone.

mod attempts;
pub mod cgroups;
mod counters;
pub mod data_file;
mod job;
mod plan;
mod progress;
mod selftest;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use placed_core::cpuset::{CpuSet, NodeSet};
use placed_core::machine::{Machine, MachineError, TopologySource};
use placed_core::placement::{Placement, PlacementError, PlacementSet, important_placements};
use placed_host::observe::{Measurement as Observed, ObserveError, Perf, Protocol};
use placed_models::Provenance;
use placed_models::data::{MachineHeader, Measurement, RunRecord};

pub use self::attempts::{
    DEFAULT_MAX_INTERVAL, Measure, Outcome, longer_window, measure, relative_interval,
};
pub use self::cgroups::{CgroupError, Parent, RunCgroup};
pub use self::data_file::{DataFile, DataFileError, KeyState};
pub use self::job::{Job, Started};
pub use self::progress::human;
pub use self::selftest::NAMES as SELFTEST_NAMES;
use crate::interrupt;
use crate::provenance;
use crate::workloads;

/// Why a collection stopped.
#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    #[error("cannot load this host's machine model")]
    Machine(#[from] Box<MachineError>),
    #[error("no important placements for v = {v}")]
    Placements {
        v: usize,
        #[source]
        source: Box<PlacementError>,
    },
    #[error("cannot count this host's resources for the data file's resources line")]
    Resources(#[source] Box<placed_core::machine::InterconnectError>),
    #[error(transparent)]
    Workload(#[from] workloads::Error),
    #[error("no workloads given")]
    NoWorkloads,
    #[error("workload {0:?} is listed twice")]
    DuplicateWorkload(String),
    #[error(transparent)]
    Data(#[from] DataFileError),
    #[error(transparent)]
    Cgroup(#[from] CgroupError),
    #[error("cannot set up the signal handlers")]
    Signals(#[source] std::io::Error),
    #[error("cannot create the scratch directory {path}")]
    Scratch {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid protocol")]
    Protocol(#[source] Box<ObserveError>),
    #[error(
        "interrupted by signal {signal}; the data file holds every measurement finished so far, run the same command again to resume"
    )]
    Interrupted { signal: i32 },
}

/// How to collect.
#[derive(Debug, Clone)]
pub struct Options {
    pub vcpus: usize,
    pub runs: u32,
    pub protocol: Protocol,
    /// Further attempts after a measurement the protocol refuses (or a workload that fails),
    /// or whose interval is wider than `max_interval`.
    pub retries: u32,
    /// Widest acceptable 95% interval, as a half-width relative to the median
    /// ([`attempts::DEFAULT_MAX_INTERVAL`]).
    pub max_interval: f64,
    pub out: PathBuf,
    pub machine_file: Option<PathBuf>,
    /// The `placed-train` binary, which runs the built-in kernels.
    pub exe: PathBuf,
    /// Leave measurements the file holds only as unusable as they are, instead of measuring
    /// each again once (`--keep-unusable`).
    pub keep_unusable: bool,
}

/// What a collection did.
#[derive(Debug, Clone)]
pub struct Summary {
    pub header: MachineHeader,
    pub provenance: Provenance,
    pub provenance_evidence: String,
    pub total: usize,
    /// Measurements the file already held and this collection left as they are.
    pub already_done: usize,
    pub measured: usize,
    /// Measurements an earlier collection recorded as unusable, measured again by this one.
    pub again: usize,
    /// Of those, how many gave a usable record this time.
    pub again_usable: usize,
    /// Measurements the file holds only as unusable, left so by `--keep-unusable`.
    pub kept_unusable: usize,
    /// Measurements given up after every retry, with the last reason.
    pub skipped: Vec<String>,
    /// Measurements recorded as unusable in this collection (interval too wide after every
    /// attempt), with the reason; fitting leaves their runs out.
    pub unusable: Vec<String>,
    pub elapsed: Duration,
}

impl Summary {
    pub fn complete(&self) -> bool {
        self.skipped.is_empty()
    }
}

/// Resolves workload names: the built-in workloads, those of `file`, and the collector's
/// self-test workloads. `builtin` stands for every built-in workload, `all` for those and
/// every workload of `file` whose programs are installed.
pub fn resolve(names: &[String], file: Option<&Path>) -> Result<Vec<Box<dyn Job>>, CollectError> {
    if names.is_empty() {
        return Err(CollectError::NoWorkloads);
    }
    let builtin = workloads::builtin();
    let mut known = builtin.clone();
    if let Some(f) = file {
        known.extend(workloads::load(f)?);
    }
    let mut expanded: Vec<String> = Vec::new();
    for name in names {
        match name.as_str() {
            "builtin" | "all" => {
                let group = if name == "all" { &known } else { &builtin };
                for w in group {
                    // A group may overlap names given on their own: each runs once.
                    if names.contains(&w.name) || expanded.contains(&w.name) {
                        continue;
                    }
                    match w.unavailable() {
                        None => expanded.push(w.name.clone()),
                        Some(why) => {
                            tracing::warn!(workload = %w.name, "left out of {name}: {why}")
                        }
                    }
                }
            }
            _ => expanded.push(name.clone()),
        }
    }
    let mut out: Vec<Box<dyn Job>> = Vec::new();
    for name in &expanded {
        if out.iter().any(|j| j.name() == name) {
            return Err(CollectError::DuplicateWorkload(name.clone()));
        }
        if let Some(w) = known.iter().find(|w| &w.name == name) {
            out.push(Box::new(w.clone()));
        } else if let Some(t) = selftest::SelfTest::named(name) {
            out.push(Box::new(t));
        } else {
            let mut all: Vec<&str> = known.iter().map(|w| w.name.as_str()).collect();
            all.extend(selftest::NAMES);
            return Err(workloads::Error::Unknown {
                name: name.clone(),
                known: all.join(", "),
            }
            .into());
        }
    }
    Ok(out)
}

/// This host's machine model and important placements for `v`.
pub fn host_placements(
    machine_file: Option<&Path>,
    v: usize,
) -> Result<(Machine, PlacementSet), CollectError> {
    let machine = Machine::load(&TopologySource::Host, machine_file).map_err(Box::new)?;
    let set = important_placements(&machine, v).map_err(|source| CollectError::Placements {
        v,
        source: Box::new(source),
    })?;
    Ok((machine, set))
}

/// The data file, created or continued, with this host's resources line.
fn open_data(
    options: &Options,
    machine: &Machine,
    set: &PlacementSet,
    header: &MachineHeader,
    provenance: Provenance,
) -> Result<DataFile, CollectError> {
    // Counted before the file is touched, so a host whose resources cannot be counted
    // leaves no file behind.
    let resources = placed_models::resources::of_machine(machine, set)
        .map_err(|e| CollectError::Resources(Box::new(e)))?;
    let mut data = DataFile::open(&options.out, header, provenance)?;
    if data.dropped_torn_line {
        eprintln!(
            "placed-train: dropped a torn last line of {} (a collection was killed while writing it)",
            options.out.display()
        );
    }
    // Real data joins a corpus for the model across machine classes only with it.
    data.note_resources(&resources)?;
    Ok(data)
}

/// Runs the collection described by `options` for `jobs`.
pub fn collect(jobs: &[Box<dyn Job>], options: &Options) -> Result<Summary, CollectError> {
    options
        .protocol
        .validate()
        .map_err(|e| CollectError::Protocol(Box::new(e)))?;
    interrupt::install().map_err(CollectError::Signals)?;
    let started = Instant::now();
    let (machine, set) = host_placements(options.machine_file.as_deref(), options.vcpus)?;
    let detection = provenance::detect();
    let header = MachineHeader::of(&set);
    let mut data = open_data(options, &machine, &set, &header, detection.provenance)?;
    let steps = plan::steps(options.runs, jobs.len(), set.placements.len());
    let key = |s: &plan::Step| {
        (
            jobs[s.workload].name().to_owned(),
            s.run,
            set.placements[s.placement].id.clone(),
        )
    };
    let pending = pending(&steps, |s| data.state(&key(s)), options.keep_unusable);
    let already_done = steps.len() - pending.todo.len();
    announce(options, jobs.len(), &set, &detection, &pending, steps.len());
    let mut summary = Summary {
        header: header.clone(),
        provenance: detection.provenance,
        provenance_evidence: detection.evidence,
        total: steps.len(),
        already_done,
        measured: 0,
        again: pending.again,
        again_usable: 0,
        kept_unusable: pending.kept_unusable,
        skipped: Vec::new(),
        unusable: Vec::new(),
        elapsed: Duration::ZERO,
    };
    if pending.todo.is_empty() {
        summary.elapsed = started.elapsed();
        return Ok(summary);
    }
    let (cpus, mems) = span(&set.placements);
    let mut parent = Parent::create(&cpus, &mems)?;
    let guess = options.protocol.max_duration() + Duration::from_millis(500);
    let mut progress = progress::Progress::new(steps.len(), already_done, guess);
    let scratch_root = std::env::temp_dir().join(parent.path().name());
    let _scratch_guard = Scratch::create(&scratch_root)?;
    let mut counters = counters::RunCounters::new(Perf::host());
    for (step, again) in pending.todo {
        let job = &jobs[step.workload];
        let placement = &set.placements[step.placement];
        let begun = Instant::now();
        eprintln!(
            "placed-train: {} {} run {} in {}{} (cpus {}, mems {}); {} left",
            progress.prefix(),
            job.name(),
            step.run,
            placement.id,
            if again {
                ", again (unusable before)"
            } else {
                ""
            },
            placement.cpus,
            placement.mems,
            human(progress.left())
        );
        let tag = format!("m{}", progress.done());
        let measure = Measure {
            job: job.as_ref(),
            cpus: &placement.cpus,
            mems: &placement.mems,
            threads: options.vcpus,
            protocol: &options.protocol,
            exe: &options.exe,
            retries: options.retries,
            max_interval: options.max_interval,
            tag: &tag,
        };
        let outcome = attempts::measure(&measure, &mut parent, &scratch_root, Some(&mut counters))?;
        let usable = matches!(outcome, Outcome::Measured(..));
        keep(
            &mut data,
            &mut summary,
            job.as_ref(),
            step.run,
            placement,
            outcome,
            begun,
        )?;
        if again && usable {
            summary.again_usable += 1;
        }
        progress.finished(begun.elapsed());
    }
    drop(parent);
    summary.elapsed = started.elapsed();
    Ok(summary)
}

/// The measurements a collection takes, in order, each with whether the file already holds
/// it as unusable (measured again).
#[derive(Debug, Default, PartialEq)]
struct Pending {
    todo: Vec<(plan::Step, bool)>,
    /// Unusable measurements among `todo`.
    again: usize,
    /// Unusable measurements left out of `todo` (`keep_unusable`).
    kept_unusable: usize,
}

/// What to measure: every step the file lacks and, unless `keep_unusable`, every step it
/// holds only as unusable, once per collection: an unusable record's interval was too wide
/// on a host that may be quieter now, and a usable record appended after it supersedes it.
fn pending(
    steps: &[plan::Step],
    state: impl Fn(&plan::Step) -> KeyState,
    keep_unusable: bool,
) -> Pending {
    let mut p = Pending::default();
    for s in steps {
        match state(s) {
            KeyState::Done => {}
            KeyState::Missing => p.todo.push((*s, false)),
            KeyState::Unusable if keep_unusable => p.kept_unusable += 1,
            KeyState::Unusable => {
                p.todo.push((*s, true));
                p.again += 1;
            }
        }
    }
    p
}

/// What the collection is about to do, and what an earlier one already did.
fn announce(
    options: &Options,
    jobs: usize,
    set: &PlacementSet,
    detection: &provenance::Detection,
    pending: &Pending,
    total: usize,
) {
    let already_done = total - pending.todo.len();
    let again = if pending.again > 0 {
        format!(
            "; measuring again {} recorded as unusable (--keep-unusable leaves them)",
            pending.again
        )
    } else {
        String::new()
    };
    eprintln!(
        "placed-train: collecting {} workload(s) x {} run(s) x {} placement(s) for v = {} on {} ({}: {}); {} of {} already in {}{again}",
        jobs,
        options.runs,
        set.placements.len(),
        options.vcpus,
        set.fingerprint,
        detection.provenance,
        detection.evidence,
        already_done,
        total,
        options.out.display()
    );
}

/// Files one measurement's outcome: a record, an unusable record, or a skip to retry.
fn keep(
    data: &mut DataFile,
    summary: &mut Summary,
    job: &dyn Job,
    run: u32,
    placement: &Placement,
    outcome: Outcome,
    begun: Instant,
) -> Result<(), CollectError> {
    let what = || format!("{} run {} in {}", job.name(), run, placement.id);
    match outcome {
        Outcome::Measured(m, counters) => {
            let mut record = record(&summary.header, job, run, placement, &m, summary.provenance);
            record.counters = counters;
            eprintln!(
                "placed-train:   {:.4e} {} +/- {:.1}% over {} windows ({:.1} s)",
                record.performance.value,
                record.performance.unit,
                100.0 * record.performance.spread / record.performance.value,
                record.performance.repetitions,
                begun.elapsed().as_secs_f64()
            );
            data.append(&record)?;
            summary.measured += 1;
        }
        Outcome::Unusable { reason } => {
            let record = unusable(
                &summary.header,
                job,
                run,
                placement,
                &reason,
                summary.provenance,
            );
            eprintln!("placed-train:   recorded as unusable: {reason}");
            tracing::warn!(measurement = %what(), %reason, "measurement unusable");
            data.append(&record)?;
            summary.unusable.push(format!("{}: {reason}", what()));
        }
        Outcome::Failed(last_error) => {
            let what = format!("{}: {last_error}", what());
            eprintln!("placed-train:   skipped {what}; run the command again to retry it");
            tracing::warn!(skipped = %what, "measurement skipped");
            summary.skipped.push(what);
        }
    }
    Ok(())
}

fn record(
    header: &MachineHeader,
    job: &dyn Job,
    run: u32,
    placement: &Placement,
    m: &Observed,
    provenance: Provenance,
) -> RunRecord {
    let kept = m.kept_values().len();
    let performance = Measurement {
        value: m.estimate.value,
        unit: job.unit().to_owned(),
        repetitions: u32::try_from(kept).unwrap_or(u32::MAX),
        spread: ((m.estimate.hi - m.estimate.lo) / 2.0).max(0.0),
    };
    let mut r = blank_record(header, job, run, placement, provenance);
    r.performance = performance;
    r
}

/// The record of a measurement that was never good enough: no number, and why.
fn unusable(
    header: &MachineHeader,
    job: &dyn Job,
    run: u32,
    placement: &Placement,
    reason: &str,
    provenance: Provenance,
) -> RunRecord {
    let mut r = blank_record(header, job, run, placement, provenance);
    r.unusable = Some(reason.to_owned());
    r
}

/// A record of one workload run in one placement with no number yet.
fn blank_record(
    header: &MachineHeader,
    job: &dyn Job,
    run: u32,
    placement: &Placement,
    provenance: Provenance,
) -> RunRecord {
    let performance = Measurement {
        value: f64::NAN,
        unit: job.unit().to_owned(),
        repetitions: 0,
        spread: f64::NAN,
    };
    RunRecord::new(
        &header.fingerprint,
        header.v,
        job.family(),
        job.name(),
        &placement.id,
        performance,
        provenance,
    )
    .with_run(run)
}

/// Every PU and node the placements use: the parent cgroup must hold them all (v1).
pub fn span(placements: &[Placement]) -> (CpuSet, NodeSet) {
    placements
        .iter()
        .fold((CpuSet::new(), NodeSet::new()), |(c, m), p| {
            (c.union(&p.cpus), m.union(&p.mems))
        })
}

/// A scratch directory removed when dropped.
#[derive(Debug)]
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn create(path: &Path) -> Result<Self, CollectError> {
        std::fs::create_dir_all(path).map_err(|source| CollectError::Scratch {
            path: path.to_owned(),
            source,
        })?;
        Ok(Self(path.to_owned()))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        let jobs = resolve(
            &list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(),
            None,
        )
        .expect("resolves");
        jobs.iter().map(|j| j.name().to_owned()).collect()
    }

    #[test]
    fn groups_expand_once_and_unknown_names_are_listed() {
        let builtin: Vec<String> = workloads::builtin().into_iter().map(|w| w.name).collect();
        assert_eq!(names(&["builtin"]), builtin);
        // Without a workload file, `all` is the built-in set.
        assert_eq!(names(&["all"]), builtin);
        let mixed = names(&["selftest-spin", "stream-triad", "builtin"]);
        assert_eq!(mixed.len(), builtin.len() + 1);
        assert_eq!(mixed[..2], ["selftest-spin", "stream-triad"]);
        let Err(err) = resolve(&["no-such".to_owned()], None) else {
            panic!("an unknown name is refused");
        };
        assert!(err.to_string().contains("stream-triad"), "{err}");
    }

    #[test]
    fn a_resumed_collection_measures_unusable_records_again_once_unless_told_to_keep_them() {
        use data_file::tests::{header, record, unusable_record};
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("data.jsonl");
        let mut f = DataFile::open(&path, &header(1), Provenance::VirtualMachine).expect("new");
        f.append(&record("w", "a")).expect("append");
        f.append(&unusable_record("w", "b")).expect("append");
        drop(f);
        let f = DataFile::open(&path, &header(1), Provenance::VirtualMachine).expect("resume");
        let ids = ["a", "b"];
        // Two runs of one workload in two placements: run 0 in b is unusable, run 1 missing.
        let steps = plan::steps(2, 1, 2);
        let state = |s: &plan::Step| f.state(&("w".into(), s.run, ids[s.placement].into()));
        let keys = |p: &Pending| -> Vec<(u32, &str, bool)> {
            p.todo
                .iter()
                .map(|(s, again)| (s.run, ids[s.placement], *again))
                .collect()
        };

        let p = pending(&steps, state, false);
        let mut got = keys(&p);
        got.sort_unstable();
        assert_eq!(got, [(0, "b", true), (1, "a", false), (1, "b", false)]);
        assert_eq!((p.again, p.kept_unusable), (1, 0));

        let p = pending(&steps, state, true);
        let mut got = keys(&p);
        got.sort_unstable();
        assert_eq!(got, [(1, "a", false), (1, "b", false)]);
        assert_eq!((p.again, p.kept_unusable), (0, 1));
    }
}
