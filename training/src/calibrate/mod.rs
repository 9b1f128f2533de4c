//! Interconnect calibration: the aggregate memory bandwidth of node sets, measured with the
//! built-in stream-triad workload (threads on the set's PUs, memory on the set's nodes),
//! written as the machine file's `interconnect` section (docs/machine-file.md), which the
//! machine model then uses instead of the NUMA distances.
//!
//! Every figure is measured in rounds until two measurements agree (`judge`), the figures
//! are checked for what no interconnect does, and a calibration that fails either is refused
//! with the figures unless `--force`, which the file then records. On a virtual machine the
//! figures describe the hypervisor, and the command and the file say so.

mod file;
pub mod judge;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use placed_core::cpuset::{CpuSet, NodeSet};
use placed_core::machine::{Machine, MachineError, TopologySource};
use placed_core::placement::important_placements;
use placed_host::observe::Protocol;
use placed_models::Provenance;

pub use self::file::{CalibrationFile, SetBandwidth};
use self::judge::{Measured, Problem};
use crate::collect::{self, CgroupError, CollectError, Measure, Outcome, Parent, Scratch};
use crate::workloads;
use crate::{interrupt, provenance};

/// The workload calibration measures with.
pub const WORKLOAD: &str = "stream-triad";

#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    #[error("cannot load this host's machine model")]
    Machine(#[from] Box<MachineError>),
    #[error(
        "the built-in {WORKLOAD} workload is not in this build of placed-train; calibration needs it"
    )]
    NoStream,
    #[error(transparent)]
    Cgroup(#[from] CgroupError),
    #[error("measuring {what} failed in {attempts} attempts; the last: {reason}")]
    Measure {
        what: String,
        attempts: u32,
        reason: String,
    },
    /// The scratch directory of a run could not be made.
    #[error(transparent)]
    Scratch(Box<CollectError>),
    #[error("cannot write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the machine file written to {path} does not load back")]
    Reload {
        path: PathBuf,
        #[source]
        source: Box<MachineError>,
    },
    #[error("interrupted by signal {signal}; nothing was written")]
    Interrupted { signal: i32 },
    #[error("{}", refusal(problems))]
    Refused { problems: Vec<Problem> },
}

/// The refusal in one line: the figures, and what to do.
fn refusal(problems: &[Problem]) -> String {
    let list: Vec<String> = problems.iter().map(ToString::to_string).collect();
    let what_to_do = if problems.iter().all(Problem::forceable) {
        "measure again on a quiet host (no other load; real hardware, not a virtual machine), or pass --force to write these figures anyway (the file records that they were forced)"
    } else {
        "measure again on a quiet host; --force cannot write a figure that is not a bandwidth or that placement scoring refuses"
    };
    format!(
        "calibration refused, nothing written: {} problem(s): {}; {what_to_do}",
        problems.len(),
        list.join("; ")
    )
}

#[derive(Debug, Clone)]
pub struct Options {
    /// Seconds of measurement (after the warm-up) per node set.
    pub seconds: f64,
    pub out: PathBuf,
    pub exe: PathBuf,
    /// Write figures that fail the checks (`judge`), recording that in the file.
    pub force: bool,
}

/// What calibration wrote.
#[derive(Debug, Clone)]
pub struct Calibration {
    pub file: CalibrationFile,
    /// The fingerprint of the machine model with the file applied.
    pub fingerprint: String,
    pub nodes: usize,
    /// The checks `--force` wrote the figures past.
    pub forced: Vec<Problem>,
    /// Why this host is a virtual machine, when it is.
    pub virtual_machine: Option<String>,
}

/// The PUs of each CPU node (by os index), from the machine model's units.
pub fn node_cpus(machine: &Machine) -> Vec<(u32, CpuSet)> {
    machine
        .numa_os
        .iter()
        .enumerate()
        .map(|(pos, &os)| {
            let cpus = machine
                .units
                .iter()
                .filter(|u| u.numa.contains(&pos))
                .fold(CpuSet::new(), |acc, u| acc.union(&u.cpus));
            (os, cpus)
        })
        .collect()
}

/// The multi-node sets the important placements of any `v` use: the sets the placement
/// search compares, so the ones whose bandwidth matters.
pub fn packing_sets(machine: &Machine) -> Vec<NodeSet> {
    let usable = machine.pus.usable.len();
    let mut sets = BTreeSet::new();
    for v in 1..=usable.min(512) {
        let Ok(set) = important_placements(machine, v) else {
            continue;
        };
        for p in set.placements {
            if p.mems.len() > 1 {
                sets.insert(p.mems);
            }
        }
    }
    sets.into_iter().collect()
}

/// Measures and writes the machine file.
pub fn calibrate(options: &Options) -> Result<Calibration, CalibrateError> {
    let stream = workloads::builtin()
        .into_iter()
        .find(|w| w.name == WORKLOAD)
        .ok_or(CalibrateError::NoStream)?;
    interrupt::install().map_err(|source| CalibrateError::Write {
        path: options.out.clone(),
        source,
    })?;
    let machine = Machine::load(&TopologySource::Host, None).map_err(Box::new)?;
    let detection = provenance::detect();
    let virtual_machine =
        (detection.provenance == Provenance::VirtualMachine).then_some(detection.evidence);
    if let Some(evidence) = &virtual_machine {
        eprintln!("placed-train: warning: {}", vm_note(evidence));
    }
    let nodes = node_cpus(&machine);
    let all_cpus = nodes.iter().fold(CpuSet::new(), |a, (_, c)| a.union(c));
    let all_mems: NodeSet = nodes.iter().map(|(n, _)| *n).collect();
    let sets = packing_sets(&machine);
    let total = nodes.len() * nodes.len() + sets.len();
    eprintln!(
        "placed-train: calibrating {} node(s): {} pair(s) and {} node set(s), each {} times {:.0} s (more rounds where they disagree by over {:.0}%)",
        nodes.len(),
        nodes.len() * nodes.len(),
        sets.len(),
        judge::REPEATS,
        options.seconds + 1.0,
        100.0 * judge::MAX_SPREAD
    );
    let protocol = protocol(options.seconds);
    let mut parent = Parent::create(&all_cpus, &all_mems)?;
    let scratch_root = std::env::temp_dir().join(format!("{}-calibrate", parent.path().name()));
    let _scratch_guard = Scratch::create(&scratch_root).map_err(CalibrateError::from)?;
    let mut done = 0;
    let mut measure = |cpus: &CpuSet, mems: &NodeSet, what: String, set: Option<Vec<u32>>| {
        done += 1;
        eprintln!("placed-train: [{done}/{total}] {what}");
        let rounds = judge::measure_rounds(
            || {
                let bw = bandwidth(
                    &stream,
                    (cpus, mems),
                    &protocol,
                    &mut parent,
                    &scratch_root,
                    &options.exe,
                    &what,
                )?;
                eprintln!("placed-train:   {bw:.4e} {}", stream.unit);
                Ok::<f64, CalibrateError>(bw)
            },
            say_disagreement,
        )?;
        Ok::<Measured, CalibrateError>(Measured { what, set, rounds })
    };
    let (matrix, measured_sets) = measure_all(&nodes, &sets, &mut measure)?;
    drop(parent);
    let all: Vec<Measured> = matrix
        .iter()
        .flatten()
        .chain(&measured_sets)
        .cloned()
        .collect();
    let problems = judge::judge(&all);
    let notes = notes(&problems, options.force, virtual_machine.as_deref())?;
    let file = CalibrationFile::new(
        &stream.unit,
        nodes.iter().map(|(n, _)| *n).collect(),
        matrix
            .iter()
            .map(|line| line.iter().map(Measured::value).collect())
            .collect(),
        measured_sets
            .iter()
            .zip(&sets)
            .map(|(m, set)| SetBandwidth {
                nodes: set.iter().collect(),
                bandwidth: m.value(),
            })
            .collect(),
        notes,
    );
    let fingerprint = write_and_reload(&file, &options.out)?;
    Ok(Calibration {
        file,
        fingerprint,
        nodes: nodes.len(),
        forced: problems,
        virtual_machine,
    })
}

/// Measures one (threads, memory) pair: what it is, and the node set it stands for.
type MeasureOne<'a> =
    dyn FnMut(&CpuSet, &NodeSet, String, Option<Vec<u32>>) -> Result<Measured, CalibrateError> + 'a;

/// Every pair of nodes (threads on one, memory on the other), then every node set.
fn measure_all(
    nodes: &[(u32, CpuSet)],
    sets: &[NodeSet],
    measure: &mut MeasureOne<'_>,
) -> Result<(Vec<Vec<Measured>>, Vec<Measured>), CalibrateError> {
    let mut matrix = Vec::new();
    for (row, cpus) in nodes {
        let mut line = Vec::new();
        for (col, _) in nodes {
            let mems: NodeSet = std::iter::once(*col).collect();
            let (what, set) = if row == col {
                (format!("node {row}"), Some(vec![*row]))
            } else {
                (format!("threads on node {row}, memory on node {col}"), None)
            };
            line.push(measure(cpus, &mems, what, set)?);
        }
        matrix.push(line);
    }
    let mut measured_sets = Vec::new();
    for set in sets {
        let cpus = nodes
            .iter()
            .filter(|(n, _)| set.contains(*n))
            .fold(CpuSet::new(), |a, (_, c)| a.union(c));
        measured_sets.push(measure(
            &cpus,
            set,
            format!("node set {set}"),
            Some(set.iter().collect()),
        )?);
    }
    Ok((matrix, measured_sets))
}

/// Says why another round is measured, or that none agreed, after a round whose repeats
/// differ by more than the bound.
fn say_disagreement(rounds: &[Vec<f64>]) {
    let Some(last) = rounds.last() else { return };
    let spread = judge::spread(last);
    if spread <= judge::MAX_SPREAD {
        return;
    }
    let next = if judge::another_round(rounds) {
        format!(
            "measuring again (round {} of {})",
            rounds.len() + 1,
            judge::ROUNDS
        )
    } else {
        format!("no agreement in {} rounds", rounds.len())
    };
    eprintln!(
        "placed-train:   the measurements differ by {:.0}% (bound {:.0}%): {next}",
        100.0 * spread,
        100.0 * judge::MAX_SPREAD
    );
}

/// The file's notes: the checks `--force` wrote past, and the virtual machine it was
/// measured in; refused when a check failed that `--force` cannot pass (or was not given).
fn notes(
    problems: &[Problem],
    force: bool,
    virtual_machine: Option<&str>,
) -> Result<Vec<String>, CalibrateError> {
    let writable = problems.is_empty() || force && problems.iter().all(Problem::forceable);
    if !writable {
        return Err(CalibrateError::Refused {
            problems: problems.to_vec(),
        });
    }
    let mut notes = Vec::new();
    if !problems.is_empty() {
        let list: Vec<String> = problems.iter().map(ToString::to_string).collect();
        notes.push(format!(
            "written with --force past {} failed check(s): {}",
            problems.len(),
            list.join("; ")
        ));
    }
    notes.extend(virtual_machine.map(vm_note));
    Ok(notes)
}

/// Writes the machine file atomically and loads the host with it, as the daemon will:
/// the machine class's fingerprint with it.
fn write_and_reload(file: &CalibrationFile, out: &Path) -> Result<String, CalibrateError> {
    placed_host::atomic_file::write(out, &[file.to_json().as_bytes()]).map_err(|source| {
        CalibrateError::Write {
            path: out.to_owned(),
            source,
        }
    })?;
    let reloaded = Machine::load(&TopologySource::Host, Some(out)).map_err(|source| {
        CalibrateError::Reload {
            path: out.to_owned(),
            source: Box::new(source),
        }
    })?;
    Ok(reloaded.fingerprint().to_owned())
}

/// What a calibration in a virtual machine measured, for the warning and the file.
fn vm_note(evidence: &str) -> String {
    format!(
        "measured in a virtual machine ({evidence}): the figures describe the hypervisor's memory path and the host's load, not the hardware's interconnect"
    )
}

/// One second of warm-up (page faults of the arrays), then half-second windows; no
/// disturbance rule that needs idle neighbours, since calibration owns the whole set.
fn protocol(seconds: f64) -> Protocol {
    let window = Duration::from_millis(500);
    // Clamped to a small positive range first, so the cast cannot truncate.
    #[allow(clippy::cast_possible_truncation)]
    let windows = (seconds / window.as_secs_f64())
        .round()
        .clamp(6.0, 10_000.0) as usize;
    let mut p = Protocol {
        warmup: Duration::from_secs(1),
        window,
        windows,
        extra_windows: windows / 2,
        min_windows: 6,
        ..Protocol::default()
    };
    p.rules.max_foreign = 1.0;
    p
}

/// Attempts of one measurement before calibration gives up: each a fresh start of the
/// workload with longer windows.
const ATTEMPTS: u32 = 3;

/// The bandwidth of `stream` on the PUs and nodes of `set`: measured as the collector
/// measures (`collect::measure`), with no bound on the interval (the rounds of `judge`
/// take care of agreement).
fn bandwidth(
    stream: &workloads::Workload,
    (cpus, mems): (&CpuSet, &NodeSet),
    protocol: &Protocol,
    parent: &mut Parent,
    scratch_root: &Path,
    exe: &Path,
    what: &str,
) -> Result<f64, CalibrateError> {
    let tag = what.replace([' ', ','], "-");
    let measure = Measure {
        job: stream,
        cpus,
        mems,
        threads: cpus.len(),
        protocol,
        exe,
        retries: ATTEMPTS - 1,
        max_interval: f64::INFINITY,
        tag: &tag,
    };
    match collect::measure(&measure, parent, scratch_root, None)? {
        Outcome::Measured(m, _) => Ok(m.estimate.value),
        Outcome::Failed(reason) | Outcome::Unusable { reason } => Err(CalibrateError::Measure {
            what: what.to_owned(),
            attempts: ATTEMPTS,
            reason,
        }),
    }
}

impl From<CollectError> for CalibrateError {
    /// What stops a measurement for good: a signal, the cgroups, the scratch directory.
    fn from(e: CollectError) -> Self {
        match e {
            CollectError::Interrupted { signal } => Self::Interrupted { signal },
            CollectError::Cgroup(e) => Self::Cgroup(e),
            other => Self::Scratch(Box::new(other)),
        }
    }
}
