//! `placed-train`'s command line validated: every flag checked and turned into the options
//! the library takes, before anything is measured, read or written. A mistake in a flag is
//! the caller's, said as such ([`CliError::Usage`]), never after an hour of collecting.

use std::path::PathBuf;
use std::time::Duration;

use placed_core::machine::TopologySource;
use placed_host::observe::Protocol;
use placed_models::TrainOptions;
use placed_models::categories::CategoryParams;
use placed_models::forest::{DEFAULT_TREES, ForestParams};
use placed_models::interval::IntervalParams;

use super::CliError;
use super::args::{Cli, CollectFlags, TopologyFlags, TrainFlags, WorkloadCmd};
use super::production::Basis;
use crate::collect::{self, Job};
use crate::pipeline::{Acceptance, PipelineError};
use crate::simulate::SimulationOptions;
use crate::workloads::kernels;

/// A command of `placed-train`, validated.
#[derive(Debug)]
pub enum Request {
    Collect {
        vcpus: usize,
        collection: Collection,
        out: PathBuf,
    },
    Calibrate(crate::calibrate::Options),
    /// `train` for one size or several (`sizes` is never empty).
    Train {
        sizes: Vec<usize>,
        collection: Collection,
        model_dir: PathBuf,
        // Boxed: with the collection it makes this the largest request by far.
        fitting: Box<Fitting>,
    },
    Fit {
        basis: Basis,
        out: PathBuf,
        production: Vec<PathBuf>,
        fitting: Fitting,
    },
    Evaluate {
        data: PathBuf,
        plots: Option<PathBuf>,
        hold_out: Vec<String>,
        options: TrainOptions,
    },
    Check {
        model: PathBuf,
        data: PathBuf,
    },
    Merge {
        data: Vec<PathBuf>,
        out: PathBuf,
    },
    Challenge {
        challenger: PathBuf,
        champion: PathBuf,
        data: PathBuf,
        install: bool,
    },
    Sizes {
        data: Vec<PathBuf>,
        output: SizesOutput,
        options: TrainOptions,
    },
    Policies {
        data: PathBuf,
        machine: MachineSpec,
        /// Fractions of the baseline's performance.
        goals: Vec<f64>,
        plots: Option<PathBuf>,
        json: bool,
        options: TrainOptions,
    },
    Simulate {
        machine: MachineSpec,
        vcpus: usize,
        out: PathBuf,
        options: SimulationOptions,
    },
    Classes(ClassesRequest),
    WorkloadRun {
        kernel: &'static kernels::Spec,
        threads: usize,
        seconds: Option<f64>,
    },
    WorkloadList {
        files: Vec<PathBuf>,
        json: bool,
    },
    /// The man pages: placed-train(1) on stdout, or every page into a directory.
    Man {
        dir: Option<PathBuf>,
    },
}

/// What `sizes` produces.
#[derive(Debug)]
pub enum SizesOutput {
    /// Each size held out in turn, as a table.
    Table,
    /// That table, and the model across sizes written to this file.
    Model(PathBuf),
    /// The search `train` would make, replayed; the gate's mean error is its target.
    Fewest { target: f64 },
}

/// A machine given by topology and an optional machine file.
#[derive(Debug)]
pub struct MachineSpec {
    pub source: TopologySource,
    pub machine_file: Option<PathBuf>,
}

/// How to fit, and what the accuracy gate lets through.
#[derive(Debug)]
pub struct Fitting {
    pub options: TrainOptions,
    pub acceptance: Acceptance,
}

/// What to collect and how, for any container size.
#[derive(Debug)]
pub struct Collection {
    pub jobs: Vec<Box<dyn Job>>,
    /// The data file named by `--out`, when one was.
    pub out: Option<PathBuf>,
    pub machine_file: Option<PathBuf>,
    /// Runs of each workload.
    pub runs: u32,
    protocol: Protocol,
    retries: u32,
    max_interval: f64,
    exe: PathBuf,
    keep_unusable: bool,
}

impl Collection {
    /// The collector's options for `vcpus` threads, writing `out`.
    pub fn options(&self, vcpus: usize, out: PathBuf) -> collect::Options {
        collect::Options {
            vcpus,
            runs: self.runs,
            protocol: self.protocol.clone(),
            retries: self.retries,
            max_interval: self.max_interval,
            out,
            machine_file: self.machine_file.clone(),
            exe: self.exe.clone(),
            keep_unusable: self.keep_unusable,
        }
    }
}

impl Cli {
    /// Checks every flag and builds the request.
    pub fn validate(self) -> Result<Request, CliError> {
        Ok(match self {
            Cli::Collect { vcpus, collect } => {
                let out = collect
                    .out
                    .clone()
                    .ok_or_else(|| CliError::Usage("--out is required".into()))?;
                Request::Collect {
                    vcpus,
                    collection: collect.validate()?,
                    out,
                }
            }
            Cli::Calibrate {
                out,
                seconds,
                force,
            } => calibration(out, seconds, force)?,
            Cli::Train {
                vcpus,
                collect,
                model_dir,
                train,
            } => training(vcpus, collect, model_dir, &train)?,
            Cli::Classes(command) => Request::Classes(command.validate()?),
            Cli::Workload(command) => command.validate()?,
            Cli::Man { dir } => Request::Man { dir },
            over_data @ (Cli::Fit { .. }
            | Cli::Evaluate { .. }
            | Cli::Check { .. }
            | Cli::Merge { .. }
            | Cli::Challenge { .. }
            | Cli::Sizes { .. }
            | Cli::Policies { .. }
            | Cli::Simulate { .. }) => over_data.validate_over_data()?,
        })
    }

    /// The commands over data files already collected: fit, evaluate, check, merge,
    /// challenge, sizes, policies, and the simulator that writes such files.
    fn validate_over_data(self) -> Result<Request, CliError> {
        Ok(match self {
            Cli::Fit {
                data,
                prior,
                out,
                production,
                train,
            } => Request::Fit {
                // clap requires one of the two and refuses both.
                basis: match (data, prior) {
                    (_, Some(prior)) => Basis::Prior(prior),
                    (Some(data), None) => Basis::Data(data),
                    (None, None) => {
                        return Err(CliError::Usage("--data or --prior is required".into()));
                    }
                },
                out,
                production,
                fitting: train.fitting()?,
            },
            Cli::Evaluate {
                data,
                plots,
                hold_out,
                train,
            } => Request::Evaluate {
                data,
                plots,
                hold_out,
                options: train.options()?,
            },
            Cli::Check { model, data } => Request::Check { model, data },
            Cli::Merge { data, out } => Request::Merge { data, out },
            Cli::Challenge {
                challenger,
                champion,
                data,
                install,
            } => Request::Challenge {
                challenger,
                champion,
                data,
                install,
            },
            Cli::Sizes {
                data,
                out,
                fewest,
                train,
            } => Request::Sizes {
                data,
                output: train.sizes_output(fewest, out)?,
                options: train.options()?,
            },
            Cli::Policies {
                data,
                topology,
                machine_file,
                goals,
                plots,
                json,
                train,
            } => Request::Policies {
                data,
                machine: topology.machine(machine_file),
                goals: goals.iter().map(|g| g / 100.0).collect(),
                plots,
                json,
                options: train.options()?,
            },
            Cli::Simulate {
                topology,
                machine_file,
                vcpus,
                out,
                families,
                workloads_per_family,
                noise,
                seed,
            } => Request::Simulate {
                machine: topology.machine(machine_file),
                vcpus,
                out,
                options: SimulationOptions {
                    families,
                    workloads_per_family,
                    noise,
                    seed,
                    ..SimulationOptions::default()
                },
            },
            // `validate` hands over exactly the commands above.
            measuring => unreachable!("validate takes {measuring:?} itself"),
        })
    }
}

fn training(
    sizes: Vec<usize>,
    collect: CollectFlags,
    model_dir: PathBuf,
    train: &TrainFlags,
) -> Result<Request, CliError> {
    if sizes.len() > 1 && collect.out.is_some() {
        return Err(PipelineError::OneOutForSeveralSizes.into());
    }
    Ok(Request::Train {
        sizes,
        collection: collect.validate()?,
        model_dir,
        fitting: Box::new(train.fitting()?),
    })
}

fn calibration(out: PathBuf, seconds: f64, force: bool) -> Result<Request, CliError> {
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(CliError::Usage("--seconds must be positive".into()));
    }
    Ok(Request::Calibrate(crate::calibrate::Options {
        seconds,
        out,
        exe: exe()?,
        force,
    }))
}

impl WorkloadCmd {
    fn validate(self) -> Result<Request, CliError> {
        Ok(match self {
            WorkloadCmd::Run {
                name,
                threads,
                seconds,
            } => {
                let Some(kernel) = kernels::find(&name) else {
                    let known: Vec<&str> = kernels::KERNELS.iter().map(|k| k.name).collect();
                    return Err(CliError::Usage(format!(
                        "no built-in workload {name:?}; known: {}",
                        known.join(", ")
                    )));
                };
                Request::WorkloadRun {
                    kernel,
                    threads,
                    seconds,
                }
            }
            WorkloadCmd::List {
                workload_file,
                json,
            } => Request::WorkloadList {
                files: workload_file,
                json,
            },
        })
    }
}

/// This program, which the collector and the calibration start to run the built-in
/// kernels.
fn exe() -> Result<PathBuf, CliError> {
    std::env::current_exe().map_err(|e| CliError::step("finding the placed-train binary", e))
}

impl TopologyFlags {
    fn machine(&self, machine_file: Option<PathBuf>) -> MachineSpec {
        let source = match (&self.topology, &self.synthetic) {
            (Some(path), _) => TopologySource::XmlFile(path.clone()),
            (None, Some(s)) => TopologySource::Synthetic(s.clone()),
            (None, None) => TopologySource::Host,
        };
        MachineSpec {
            source,
            machine_file,
        }
    }
}

impl CollectFlags {
    fn validate(self) -> Result<Collection, CliError> {
        if !(self.max_interval.is_finite() && self.max_interval > 0.0) {
            return Err(CliError::Usage(
                "--max-interval must be a positive percentage".into(),
            ));
        }
        Ok(Collection {
            protocol: self.protocol()?,
            jobs: collect::resolve(&self.workloads, self.workload_file.as_deref())?,
            out: self.out,
            machine_file: self.machine_file,
            runs: self.runs,
            retries: self.retries,
            max_interval: self.max_interval / 100.0,
            exe: exe()?,
            keep_unusable: self.keep_unusable,
        })
    }

    fn protocol(&self) -> Result<Protocol, CliError> {
        let mut p = Protocol::default();
        let secs = |s: f64, what: &str| {
            if s.is_finite() && s >= 0.0 {
                Ok(Duration::from_secs_f64(s))
            } else {
                Err(CliError::Usage(format!(
                    "--{what} must be a number of seconds >= 0"
                )))
            }
        };
        if let Some(w) = self.warmup {
            p.warmup = secs(w, "warmup")?;
        }
        if let Some(w) = self.window {
            p.window = secs(w, "window")?;
        }
        if let Some(n) = self.windows {
            p.windows = n;
            p.extra_windows = n / 2;
            p.min_windows = (n / 2).max(6).min(n);
        }
        if let Some(n) = self.min_windows {
            p.min_windows = n;
        }
        if let Some(f) = self.max_foreign {
            p.rules.max_foreign = f;
        }
        p.validate().map_err(|e| {
            CliError::Usage(format!(
                "the protocol options: {}",
                placed_core::text::error_line(&e)
            ))
        })?;
        Ok(p)
    }
}

impl TrainFlags {
    /// What `sizes` writes: `--fewest` replays the search `train` makes, whose target is the
    /// gate's error.
    fn sizes_output(&self, fewest: bool, out: Option<PathBuf>) -> Result<SizesOutput, CliError> {
        Ok(match (fewest, out) {
            (true, _) => SizesOutput::Fewest {
                target: self.acceptance()?.gate.max_mean_error,
            },
            (false, Some(path)) => SizesOutput::Model(path),
            (false, None) => SizesOutput::Table,
        })
    }

    fn fitting(&self) -> Result<Fitting, CliError> {
        Ok(Fitting {
            options: self.options()?,
            acceptance: self.acceptance()?,
        })
    }

    fn options(&self) -> Result<TrainOptions, CliError> {
        self.options_defaulting(DEFAULT_TREES)
    }

    /// The options, with `trees` in the final forest unless `--trees` says otherwise.
    fn options_defaulting(&self, trees: usize) -> Result<TrainOptions, CliError> {
        if !(self.interval_level > 0.0 && self.interval_level < 1.0) {
            return Err(CliError::Usage(
                "--interval-level must be a fraction between 0 and 1 (0.9 for 90% intervals)"
                    .into(),
            ));
        }
        Ok(TrainOptions {
            baseline: self.baseline.clone(),
            probe: None,
            forest: ForestParams::new()
                .n_trees(self.trees.unwrap_or(trees))
                .seed(self.seed),
            cv_trees: self.cv_trees,
            categories: CategoryParams {
                seed: self.seed,
                ..CategoryParams::default()
            },
            counters_as_inputs: !self.no_counters,
            intervals: IntervalParams {
                level: self.interval_level,
                ..IntervalParams::default()
            },
        })
    }

    fn acceptance(&self) -> Result<Acceptance, CliError> {
        if !(self.max_error.is_finite() && self.max_error > 0.0) {
            return Err(CliError::Usage(
                "--max-error must be a positive percentage".into(),
            ));
        }
        Ok(Acceptance {
            gate: placed_models::Gate {
                max_mean_error: self.max_error,
            },
            accept_inaccurate: self.accept_inaccurate,
        })
    }
}

mod classes;
pub use classes::{ClassesRequest, ModelDestination};

#[cfg(test)]
mod tests;
