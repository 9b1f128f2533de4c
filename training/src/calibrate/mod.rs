//! Interconnect calibration: the aggregate memory bandwidth of node sets, measured with the
//! built-in stream-triad workload (threads on the set's PUs, memory on the set's nodes),
//! written as the machine file's `interconnect` section (docs/machine-file.md), which the
//! machine model then uses instead of the NUMA distances.

mod file;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use placed_core::cpuset::{CpuSet, NodeSet};
use placed_core::machine::{Machine, MachineError, TopologySource};
use placed_core::placement::important_placements;
use placed_host::observe::{ObserveError, ProcProbe, Protocol, Target};

pub use self::file::{CalibrationFile, SetBandwidth};
use crate::collect::{CgroupError, Job, Parent, Scratch};
use crate::interrupt;
use crate::workloads::{self, Launch};

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
    #[error(transparent)]
    Workload(#[from] workloads::Error),
    #[error("measuring {what} failed")]
    Measure {
        what: String,
        #[source]
        source: Box<ObserveError>,
    },
    #[error("measuring {what} gave no bandwidth ({value})")]
    NoBandwidth { what: String, value: f64 },
    #[error("cannot create the scratch directory")]
    Scratch(#[from] Box<crate::collect::CollectError>),
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
}

#[derive(Debug, Clone)]
pub struct Options {
    /// Seconds of measurement (after the warm-up) per node set.
    pub seconds: f64,
    pub out: PathBuf,
    pub exe: PathBuf,
}

/// What calibration wrote.
#[derive(Debug, Clone)]
pub struct Calibration {
    pub file: CalibrationFile,
    /// The fingerprint of the machine model with the file applied.
    pub fingerprint: String,
    pub nodes: usize,
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
    let nodes = node_cpus(&machine);
    let all_cpus = nodes.iter().fold(CpuSet::new(), |a, (_, c)| a.union(c));
    let all_mems: NodeSet = nodes.iter().map(|(n, _)| *n).collect();
    let sets = packing_sets(&machine);
    let total = nodes.len() * nodes.len() + sets.len();
    eprintln!(
        "placed-train: calibrating {} node(s): {} pair(s) and {} node set(s), {:.0} s each",
        nodes.len(),
        nodes.len() * nodes.len(),
        sets.len(),
        options.seconds + 1.0
    );
    let protocol = protocol(options.seconds);
    let mut parent = Parent::create(&all_cpus, &all_mems)?;
    let scratch_root = std::env::temp_dir().join(format!("{}-calibrate", parent.path().name()));
    let mut done = 0;
    let mut measure = |cpus: &CpuSet, mems: &NodeSet, what: String| {
        done += 1;
        eprintln!("placed-train: [{done}/{total}] {what}");
        let bw = bandwidth(
            &stream,
            cpus,
            mems,
            &protocol,
            &mut parent,
            &scratch_root,
            options,
            &what,
        )?;
        eprintln!("placed-train:   {bw:.4e} {}", stream.unit);
        Ok::<f64, CalibrateError>(bw)
    };
    let mut values = Vec::new();
    for (i, (row, cpus)) in nodes.iter().enumerate() {
        let mut line = Vec::new();
        for (j, (col, _)) in nodes.iter().enumerate() {
            let _ = (i, j);
            let mems: NodeSet = std::iter::once(*col).collect();
            line.push(measure(
                cpus,
                &mems,
                format!("threads on node {row}, memory on node {col}"),
            )?);
        }
        values.push(line);
    }
    let mut measured_sets = Vec::new();
    for set in &sets {
        let cpus = nodes
            .iter()
            .filter(|(n, _)| set.contains(*n))
            .fold(CpuSet::new(), |a, (_, c)| a.union(c));
        let bw = measure(&cpus, set, format!("node set {set}"))?;
        measured_sets.push(SetBandwidth {
            nodes: set.iter().collect(),
            bandwidth: bw,
        });
    }
    drop(parent);
    let file = CalibrationFile::new(
        &stream.unit,
        nodes.iter().map(|(n, _)| *n).collect(),
        values,
        measured_sets,
    );
    placed_models::atomic_file::write(&options.out, &[file.to_json().as_bytes()]).map_err(
        |source| CalibrateError::Write {
            path: options.out.clone(),
            source,
        },
    )?;
    let reloaded = Machine::load(&TopologySource::Host, Some(&options.out)).map_err(|source| {
        CalibrateError::Reload {
            path: options.out.clone(),
            source: Box::new(source),
        }
    })?;
    Ok(Calibration {
        file,
        fingerprint: reloaded.fingerprint().to_owned(),
        nodes: nodes.len(),
    })
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

#[allow(clippy::too_many_arguments)]
fn bandwidth(
    stream: &workloads::Workload,
    cpus: &CpuSet,
    mems: &NodeSet,
    protocol: &Protocol,
    parent: &mut Parent,
    scratch_root: &Path,
    options: &Options,
    what: &str,
) -> Result<f64, CalibrateError> {
    if interrupt::raised() {
        return Err(CalibrateError::Interrupted {
            signal: interrupt::signal(),
        });
    }
    let mut last = None;
    for attempt in 0..3 {
        let mut protocol = protocol.clone();
        if let Some(min) = stream.min_window {
            protocol.window = protocol.window.max(min);
        }
        protocol.window = crate::collect::longer_window(protocol.window, attempt);
        match bandwidth_once(
            stream,
            cpus,
            mems,
            &protocol,
            parent,
            scratch_root,
            options,
            what,
        ) {
            Err(e @ (CalibrateError::NoBandwidth { .. } | CalibrateError::Measure { .. })) => {
                eprintln!("placed-train:   attempt {} of 3 failed: {e}", attempt + 1);
                last = Some(e);
            }
            other => return other,
        }
    }
    Err(last.unwrap_or(CalibrateError::NoStream))
}

#[allow(clippy::too_many_arguments)]
fn bandwidth_once(
    stream: &workloads::Workload,
    cpus: &CpuSet,
    mems: &NodeSet,
    protocol: &Protocol,
    parent: &mut Parent,
    scratch_root: &Path,
    options: &Options,
    what: &str,
) -> Result<f64, CalibrateError> {
    let cgroup = parent.run(cpus, mems)?;
    let scratch =
        Scratch::create(&scratch_root.join(what.replace([' ', ','], "-"))).map_err(Box::new)?;
    let launch = Launch {
        threads: cpus.len(),
        cgroup_dir: cgroup.dir(),
        extra_cgroup_dirs: &[],
        scratch: &scratch.0,
        exe: &options.exe,
    };
    let mut running = stream.start(&launch)?;
    let probe = ProcProbe::new(Target::Cgroup(cgroup.dir().to_owned()), Some(cpus.clone()));
    let outcome = placed_host::observe::block_on(async {
        tokio::select! {
            m = placed_host::observe::measure(running.source(), &probe, protocol) => Some(m),
            () = interrupt::wait() => None,
        }
    });
    let _ = running.stop();
    drop(cgroup);
    let measure_err = |source| CalibrateError::Measure {
        what: what.to_owned(),
        source: Box::new(source),
    };
    let m = match outcome {
        Err(e) => return Err(measure_err(e)),
        Ok(None) => {
            return Err(CalibrateError::Interrupted {
                signal: interrupt::signal(),
            });
        }
        Ok(Some(r)) => r.map_err(measure_err)?,
    };
    let value = m.estimate.value;
    if !(value.is_finite() && value > 0.0) {
        return Err(CalibrateError::NoBandwidth {
            what: what.to_owned(),
            value,
        });
    }
    Ok(value)
}
