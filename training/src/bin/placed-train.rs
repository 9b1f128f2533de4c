//! `placed-train`: collect training data on this host, calibrate its interconnect, fit and
//! evaluate models, the whole loop in one command, and simulated data for experiments.
//!
//! Exit codes: 0 success, 2 error (the error chain is printed once, on one line), 3 `train`
//! on a host with a single important placement (nothing to predict), 130 interrupted.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use placed_core::exit::Exit;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Parser};
use placed_core::machine::{Machine, TopologySource};
use placed_core::placement::important_placements;
use placed_host::observe::Protocol;
use placed_models::categories::CategoryParams;
use placed_models::forest::ForestParams;
use placed_models::interval::IntervalParams;
use placed_models::{Dataset, TrainOptions, evaluate, fit};
use placed_training::collect::{self, Summary, human};
use placed_training::pipeline;
use placed_training::save::Save as _;
use placed_training::simulate::{SimMachine, SimulationOptions, simulate};
use placed_training::workloads::{self, kernels};
use placed_training::{calibrate, plot, policies, report};

#[derive(Parser, Debug)]
#[command(name = "placed-train", version, about, after_help = Exit::help_table())]
enum Cli {
    /// Run workloads in every important placement of this host and append the measurements
    /// to a data file (resumes an interrupted collection). Needs root and cpusets.
    Collect {
        /// vCPUs per container: the workloads' thread count.
        #[arg(long)]
        vcpus: usize,
        #[command(flatten)]
        collect: CollectFlags,
    },
    /// Measure the memory bandwidth of node sets and write a machine file with this host's
    /// interconnect (needs the built-in stream-triad workload).
    Calibrate {
        /// Where to write the machine file.
        #[arg(long, default_value = "machine.json")]
        out: PathBuf,
        /// Seconds of measurement per node set (after a 1 s warm-up).
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        /// Write the figures even when repeated measurements disagree or a node set measures
        /// far below a part of it; the file records which checks failed.
        #[arg(long)]
        force: bool,
    },
    /// The whole loop: collect (resuming), fit, evaluate, and install the model where the
    /// daemon finds it.
    Train {
        /// vCPUs per container: the workloads' thread count. Several sizes, comma-separated,
        /// collect the fewest of them for which one model across sizes predicts the rest
        /// within --max-error, each size's data in data-v<N>.jsonl in --model-dir; each size
        /// collected gets a model of its own, the rest the model across sizes
        /// (docs/training.md, "Several sizes").
        #[arg(long, value_delimiter = ',', required = true,
              value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        vcpus: Vec<usize>,
        #[command(flatten)]
        collect: CollectFlags,
        /// The daemon's model directory (its `model_dir`).
        #[arg(long)]
        model_dir: PathBuf,
        #[command(flatten)]
        train: TrainFlags,
    },
    /// Fit a model on a data file and write it.
    Fit {
        /// Training data (JSON lines, see docs/models.md).
        #[arg(long)]
        data: PathBuf,
        /// Where to write the model file.
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        train: TrainFlags,
    },
    /// Cross-validate the forest, the category mean and the counter baseline on a data file
    /// and print their accuracy per workload and placement.
    Evaluate {
        /// Training data (JSON lines, see docs/models.md).
        #[arg(long)]
        data: PathBuf,
        /// Also write one SVG of predicted against actual per workload into this directory.
        #[arg(long)]
        plots: Option<PathBuf>,
        /// Leave a behaviour out: train without the families of this group (a family name
        /// less its trailing `-<number>`, or a whole family name; repeat or comma-separate
        /// for several), then check the model on them and report how the novelty warning
        /// picks out the runs it gets wrong (docs/models.md, "Novelty").
        #[arg(long, value_name = "GROUP", value_delimiter = ',')]
        hold_out: Vec<String>,
        #[command(flatten)]
        train: TrainFlags,
    },
    /// Apply a fitted model to a data file it was not trained on (another host of the
    /// class, a later collection): errors, interval coverage and novelty flags per workload.
    /// A model across sizes (`sizes --out`) is applied to the data's size, seen or not.
    Check {
        /// The model file.
        #[arg(long)]
        model: PathBuf,
        /// Data to check it on (JSON lines, see docs/models.md).
        #[arg(long)]
        data: PathBuf,
    },
    /// One model across container sizes, measured: each size in turn predicted by a forest
    /// trained on the other sizes' data (placements described by their resources), against
    /// the size's own model (docs/models.md, "Across sizes").
    Sizes {
        /// Training data of one machine class, one file per size (repeat the flag).
        #[arg(long, required = true)]
        data: Vec<PathBuf>,
        /// Also fit the model across sizes on every size given and write it here; in the
        /// daemon's model directory it predicts for every size without a model of its own.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Replay, over these files, the search `train --vcpus a,b,...` makes: which sizes it
        /// would collect for the model across sizes to predict the rest within --max-error,
        /// and the collection that saves (docs/training.md, "Several sizes").
        #[arg(long, conflicts_with = "out")]
        fewest: bool,
        #[command(flatten)]
        train: TrainFlags,
    },
    /// Replay the placement policies on a data file (thesis §2.5): per goal, the containers
    /// per machine each policy packs and how far each workload falls short of the goal.
    Policies {
        /// Training data (JSON lines, see docs/models.md).
        #[arg(long)]
        data: PathBuf,
        /// The machine the data was collected on.
        #[command(flatten)]
        topology: TopologyFlags,
        /// Machine file the collection used (e.g. from `calibrate`).
        #[arg(long)]
        machine_file: Option<PathBuf>,
        /// Goals, in percent of the baseline's performance.
        #[arg(long, value_delimiter = ',', default_values_t = placed_training::policies::DEFAULT_GOALS.map(|g| 100.0 * g))]
        goals: Vec<f64>,
        /// Also write one SVG per goal into this directory.
        #[arg(long)]
        plots: Option<PathBuf>,
        /// One JSON object per line instead of tables.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        train: TrainFlags,
    },
    /// Write SIMULATED training data for a topology and v (no hardware is measured).
    Simulate {
        #[command(flatten)]
        topology: TopologyFlags,
        /// Machine file adding or overriding concerns.
        #[arg(long)]
        machine_file: Option<PathBuf>,
        /// vCPUs per container.
        #[arg(long)]
        vcpus: usize,
        /// Where to write the data.
        #[arg(long)]
        out: PathBuf,
        /// Workload families (archetypes are dealt round-robin over 8).
        #[arg(long, default_value_t = 24)]
        families: usize,
        /// Workloads per family.
        #[arg(long, default_value_t = 8)]
        workloads_per_family: usize,
        /// Relative measurement noise.
        #[arg(long, default_value_t = 0.01)]
        noise: f64,
        /// Seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Training workloads: list them, or run one kernel (what the collector starts).
    #[command(subcommand)]
    Workload(WorkloadCmd),
    /// Print the man page, placed-train(1), as roff (for packaging).
    #[command(hide = true)]
    Man,
}

#[derive(clap::Subcommand, Debug)]
enum WorkloadCmd {
    /// Run a built-in kernel in this process, printing its running operation total every
    /// 50 ms (the collector starts this inside the placement's cgroup).
    #[command(hide = true)]
    Run {
        /// The built-in workload.
        name: String,
        /// Worker threads.
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// Stop after this many seconds (default: run until killed).
        #[arg(long)]
        seconds: Option<f64>,
    },
    /// List the built-in workloads and those of a definition file, and whether each can
    /// run on this host.
    List {
        /// External workload definitions (TOML, see docs/training.md).
        #[arg(long)]
        workload_file: Vec<PathBuf>,
        /// One JSON object per line instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args, Debug)]
#[group(required = true, multiple = false)]
struct TopologyFlags {
    /// An hwloc XML topology file.
    #[arg(long)]
    topology: Option<PathBuf>,
    /// An hwloc synthetic description, e.g. "pack:4 numa:2 l3:1 core:8 pu:2".
    #[arg(long)]
    synthetic: Option<String>,
    /// This host's topology.
    #[arg(long)]
    host: bool,
}

impl TopologyFlags {
    fn source(&self) -> TopologySource {
        match (&self.topology, &self.synthetic) {
            (Some(path), _) => TopologySource::XmlFile(path.clone()),
            (None, Some(s)) => TopologySource::Synthetic(s.clone()),
            (None, None) => TopologySource::Host,
        }
    }
}

#[derive(Args, Debug)]
struct CollectFlags {
    /// Workload names, comma-separated (built-in ones, or those of --workload-file);
    /// `builtin` for every built-in one, `all` for those and every installed external one.
    #[arg(long, value_delimiter = ',', required = true)]
    workloads: Vec<String>,
    /// External workload definitions (TOML, see docs/training.md).
    #[arg(long)]
    workload_file: Option<PathBuf>,
    /// Runs of each workload (each run is one training row).
    #[arg(long, default_value_t = 1)]
    runs: u32,
    /// The data file (`collect`; `train` defaults to data-v<N>.jsonl in --model-dir).
    #[arg(long, alias = "data")]
    out: Option<PathBuf>,
    /// Machine file applied to the host's machine model (e.g. from `calibrate`).
    #[arg(long)]
    machine_file: Option<PathBuf>,
    /// Seconds discarded after the workload starts [default: the protocol's, 2].
    #[arg(long)]
    warmup: Option<f64>,
    /// Undisturbed windows per measurement [default: 16].
    #[arg(long)]
    windows: Option<usize>,
    /// Seconds per window [default: 0.5].
    #[arg(long)]
    window: Option<f64>,
    /// Fewest undisturbed windows that still make a measurement [default: half of --windows, at least 6].
    #[arg(long)]
    min_windows: Option<usize>,
    /// Share of the workload's PUs other tasks may take before a window counts as
    /// disturbed [default: 0.05]; 1 turns the rule off (a shared test machine).
    #[arg(long)]
    max_foreign: Option<f64>,
    /// Further attempts, each with longer windows, for a measurement the protocol refuses
    /// (then skipped) or whose interval is wider than --max-interval (then recorded as
    /// unusable).
    #[arg(long, default_value_t = 2)]
    retries: u32,
    /// Widest acceptable 95% interval of a measurement, in percent of its median (+/-).
    #[arg(long, default_value_t = 100.0 * collect::DEFAULT_MAX_INTERVAL)]
    max_interval: f64,
    /// Leave the measurements the data file holds as unusable as they are; by default a
    /// resumed collection measures each of them again, once.
    #[arg(long)]
    keep_unusable: bool,
}

impl CollectFlags {
    fn protocol(&self) -> anyhow::Result<Protocol> {
        let mut p = Protocol::default();
        let secs = |s: f64, what: &str| {
            anyhow::ensure!(
                s.is_finite() && s >= 0.0,
                "--{what} must be a number of seconds >= 0"
            );
            Ok(Duration::from_secs_f64(s))
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
        p.validate().context("the protocol options")?;
        Ok(p)
    }

    fn options(
        &self,
        vcpus: usize,
        default_out: Option<PathBuf>,
    ) -> anyhow::Result<collect::Options> {
        let out = self
            .out
            .clone()
            .or(default_out)
            .context("--out is required")?;
        Ok(collect::Options {
            vcpus,
            runs: self.runs,
            protocol: self.protocol()?,
            retries: self.retries,
            max_interval: {
                anyhow::ensure!(
                    self.max_interval.is_finite() && self.max_interval > 0.0,
                    "--max-interval must be a positive percentage"
                );
                self.max_interval / 100.0
            },
            out,
            machine_file: self.machine_file.clone(),
            exe: std::env::current_exe().context("finding the placed-train binary")?,
            keep_unusable: self.keep_unusable,
        })
    }

    fn jobs(&self) -> anyhow::Result<Vec<Box<dyn collect::Job>>> {
        Ok(collect::resolve(
            &self.workloads,
            self.workload_file.as_deref(),
        )?)
    }
}

#[derive(Args, Debug)]
struct TrainFlags {
    /// Baseline placement id (default: the data's first placement).
    #[arg(long)]
    baseline: Option<String>,
    /// Trees in the final forest.
    #[arg(long, default_value_t = 100)]
    trees: usize,
    /// Trees per cross-validation forest (default: as many as --trees).
    #[arg(long)]
    cv_trees: Option<usize>,
    /// Seed for the forest and k-means.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Do not feed counters to the forest even when the data has them.
    #[arg(long)]
    no_counters: bool,
    /// Nominal coverage of the prediction intervals, calibrated on the held-out families.
    #[arg(long, default_value_t = placed_models::interval::DEFAULT_LEVEL)]
    interval_level: f64,
    /// The accuracy gate: largest mean cross-validated error (percent) of a model that
    /// `fit`/`train` install (see docs/training.md, "The accuracy gate").
    #[arg(long, default_value_t = placed_models::gate::DEFAULT_MAX_MEAN_ERROR)]
    max_error: f64,
    /// Install a model that fails the accuracy gate anyway; the file records that it is
    /// below the gate and the daemon only observes with it.
    #[arg(long)]
    accept_inaccurate: bool,
}

impl TrainFlags {
    fn options(&self) -> anyhow::Result<TrainOptions> {
        anyhow::ensure!(
            self.interval_level > 0.0 && self.interval_level < 1.0,
            "--interval-level must be a fraction between 0 and 1 (0.9 for 90% intervals)"
        );
        Ok(TrainOptions {
            baseline: self.baseline.clone(),
            forest: ForestParams::new().n_trees(self.trees).seed(self.seed),
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

    fn acceptance(&self) -> anyhow::Result<pipeline::Acceptance> {
        anyhow::ensure!(
            self.max_error.is_finite() && self.max_error > 0.0,
            "--max-error must be a positive percentage"
        );
        Ok(pipeline::Acceptance {
            gate: placed_models::Gate {
                max_mean_error: self.max_error,
            },
            accept_inaccurate: self.accept_inaccurate,
        })
    }
}

fn main() -> ExitCode {
    let cli = match placed_core::exit::parse_args::<Cli>() {
        Ok(cli) => cli,
        Err(code) => return code.into(),
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, not in a log file or a pipe.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                // Warnings, the probe search's progress (most of what evaluate, fit
                // and train spend their time on) and the size search's checks.
                .unwrap_or_else(|_| {
                    tracing_subscriber::EnvFilter::new(
                        "warn,placed_models::probe=info,placed_models::size_search=info",
                    )
                }),
        )
        .init();
    match run(cli) {
        Ok(()) => Exit::Success.into(),
        Err(e) => {
            eprintln!("placed-train: error: {e:#}");
            placed_training::exit::exit_of(e.as_ref()).into()
        }
    }
}

fn print_collection(s: &Summary, out: &Path) {
    println!(
        "collected {} measurement(s) in {} ({} already in the file, {} of {} done) for v = {} on {}, {} placement(s); data labelled {} ({})",
        s.measured,
        human(s.elapsed),
        s.already_done,
        s.already_done + s.measured,
        s.total,
        s.header.v,
        s.header.fingerprint,
        s.header.placements.len(),
        s.provenance,
        s.provenance_evidence
    );
    if s.again > 0 {
        println!(
            "measured again: {} measurement(s) an earlier collection recorded as unusable, {} of them usable now (the usable record supersedes the unusable one; --keep-unusable leaves them as they are)",
            s.again, s.again_usable
        );
    }
    if s.kept_unusable > 0 {
        println!(
            "kept: {} measurement(s) the file holds as unusable, not measured again (--keep-unusable)",
            s.kept_unusable
        );
    }
    for skipped in &s.skipped {
        println!("skipped: {skipped}");
    }
    for unusable in &s.unusable {
        println!("unusable: {unusable}");
    }
    if !s.unusable.is_empty() {
        println!(
            "{} measurement(s) recorded as unusable (not a number): fitting leaves their workload runs out; an idle host, more --retries or longer --windows may measure them; running the same command again measures each of them again once",
            s.unusable.len()
        );
    }
    println!("data: {}", out.display());
}

/// The figures behind a refusal by the accuracy gate, printed before the error says why.
fn print_refused(e: &pipeline::PipelineError) {
    if let pipeline::PipelineError::BelowGate { refused, .. } = e {
        let (model, evaluation) = refused.as_ref();
        if let Some(evaluation) = evaluation {
            print!("{}", report::evaluation_tables(evaluation));
        }
        print!("{}", report::model_summary(model));
    }
}

/// `placed-train collect`: measure, print the summary, fail while measurements are missing.
fn run_collect(vcpus: usize, collect: &CollectFlags) -> anyhow::Result<()> {
    let options = collect.options(vcpus, None)?;
    let jobs = collect.jobs()?;
    let summary = collect::collect(&jobs, &options)?;
    print_collection(&summary, &options.out);
    if let [only] = summary.header.placements.as_slice() {
        println!(
            "note: this host has a single important placement for v = {} ({}): the data records the workloads' rates, but no model can be fit from it",
            summary.header.v, only.id
        );
    }
    anyhow::ensure!(
        summary.complete(),
        "{} measurement(s) skipped; run the same command again to retry them",
        summary.skipped.len()
    );
    Ok(())
}

/// `placed-train train` for one size.
fn run_train(
    vcpus: usize,
    collect: &CollectFlags,
    model_dir: &Path,
    train: &TrainFlags,
) -> anyhow::Result<()> {
    let default = model_dir.join(pipeline::data_file_name(vcpus));
    let options = collect.options(vcpus, Some(default))?;
    let jobs = collect.jobs()?;
    let acceptance = train.acceptance()?;
    let trained = pipeline::train(&jobs, &options, &train.options()?, &acceptance, model_dir)
        .inspect_err(print_refused)?;
    print_collection(&trained.collection, &options.out);
    print!("{}", trained.left_out);
    print!("{}", report::evaluation_tables(&trained.evaluation));
    print!("{}", report::model_summary(&trained.model));
    println!(
        "installed model {} in {}",
        trained.model.id(),
        trained.installed.display()
    );
    Ok(())
}

/// `placed-train train` for several sizes: the fewest collected, a model for each of those,
/// the model across sizes for the rest (docs/training.md, "Several sizes").
fn run_train_sizes(
    vcpus: &[usize],
    collect: &CollectFlags,
    model_dir: &Path,
    train: &TrainFlags,
) -> anyhow::Result<()> {
    if collect.out.is_some() {
        return Err(pipeline::PipelineError::OneOutForSeveralSizes.into());
    }
    let jobs = collect.jobs()?;
    let acceptance = train.acceptance()?;
    let options = train.options()?;
    // Sizes the host gives fewer than three important placements leave nothing to predict
    // once the baseline and the probe are measured: neither model has a use there.
    let machine = Machine::load(&TopologySource::Host, collect.machine_file.as_deref())?;
    let mut wanted = Vec::new();
    let mut placements = std::collections::BTreeMap::new();
    for &v in vcpus {
        let v32 = u32::try_from(v).context("--vcpus is too large")?;
        // A size the host cannot place is said and passed over, not the end of the others.
        let set = match important_placements(&machine, v) {
            Ok(set) => set,
            Err(e) => {
                println!(
                    "v = {v}: {}: not collected",
                    placed_core::text::error_line(&e)
                );
                continue;
            }
        };
        if set.placements.len() < 3 {
            println!(
                "v = {v}: this host has {} important placement(s) for it, all measured whenever a container is: nothing to predict, not collected",
                set.placements.len()
            );
            continue;
        }
        placements.insert(v32, set.placements.len());
        wanted.push(v32);
    }
    if wanted.is_empty() {
        return Err(pipeline::PipelineError::NoSizeToTrain {
            sizes: report::size_list(vcpus),
        }
        .into());
    }
    let per_size_measurements = jobs.len() * collect.runs as usize;
    // Every size's options checked before the first hour of collecting.
    let mut options_of = std::collections::BTreeMap::new();
    for &v in &wanted {
        let out = model_dir.join(pipeline::data_file_name(v));
        options_of.insert(v, collect.options(v as usize, Some(out))?);
    }
    let trained = pipeline::sizes::train_sizes(&wanted, &options, &acceptance, model_dir, |v| {
        println!("collecting v = {v}");
        let opts = &options_of[&v];
        let (summary, data) = pipeline::collect_size(&jobs, opts, model_dir)?;
        print_collection(&summary, &opts.out);
        Ok(data)
    })?;
    print!(
        "{}",
        report::size_choice(&trained.choice, &|v| placements
            .get(&v)
            .map(|p| p * per_size_measurements))
    );
    let mut refused = Vec::new();
    for size in trained.per_size {
        print!("{}", size.left_out);
        match size.result {
            Ok((model, _, installed)) => {
                print!("{}", report::model_summary(&model));
                println!(
                    "installed model {} for v = {} in {}",
                    model.id(),
                    size.v,
                    installed.display()
                );
            }
            Err(e) => {
                print_refused(&e);
                refused.push((size.v, e));
            }
        }
    }
    if let Some(across) = &trained.across {
        print!("{}", report::sizes_table(&across.report));
        println!(
            "installed model across sizes {} in {}: it predicts v = {} (and any other size of this machine class without a model of its own)",
            across.model.id(),
            across.installed.display(),
            report::size_list(&trained.choice.left)
        );
    }
    // Each refusal said once: all but the first here, the first as the command's error.
    let mut refused = refused.into_iter();
    let Some((v, first)) = refused.next() else {
        return Ok(());
    };
    for (v, e) in refused {
        eprintln!(
            "placed-train: v = {v}: {}",
            placed_core::text::error_line(&e)
        );
    }
    Err(anyhow::Error::new(first).context(format!("v = {v}")))
}

/// `placed-train sizes --fewest`: the size search over data already collected, each file
/// read when the search would have collected it.
fn replay_fewest(
    datasets: Vec<Dataset>,
    target: f64,
    options: &TrainOptions,
) -> anyhow::Result<()> {
    placed_models::sizes::belong_together(&datasets)?;
    let measurements: std::collections::BTreeMap<u32, usize> = datasets
        .iter()
        .map(|d| {
            let mut runs: Vec<(&str, u32)> = d
                .records()
                .iter()
                .map(|r| (r.workload.as_str(), r.run))
                .collect();
            runs.sort_unstable();
            runs.dedup();
            (d.header().v, runs.len() * d.header().placements.len())
        })
        .collect();
    let wanted: Vec<u32> = measurements.keys().copied().collect();
    let mut by_v: std::collections::BTreeMap<u32, Dataset> =
        datasets.into_iter().map(|d| (d.header().v, d)).collect();
    let choice = placed_models::size_search::fewest_sizes(&wanted, target, options, |v| {
        by_v.remove(&v)
            .ok_or_else(|| std::io::Error::other(format!("no data file for v = {v}")))
    })?;
    print!(
        "{}",
        report::size_choice(&choice, &|v| measurements.get(&v).copied())
    );
    Ok(())
}

/// `placed-train calibrate`: the bandwidth of node sets, as a machine file.
fn run_calibrate(out: PathBuf, seconds: f64, force: bool) -> anyhow::Result<()> {
    anyhow::ensure!(
        seconds.is_finite() && seconds > 0.0,
        "--seconds must be positive"
    );
    let c = calibrate::calibrate(&calibrate::Options {
        seconds,
        out: out.clone(),
        exe: std::env::current_exe().context("finding the placed-train binary")?,
        force,
    })?;
    if c.nodes == 1 {
        println!(
            "one NUMA node: the interconnect has nothing to order; the file records its bandwidth ({:.4e} {}) and loads",
            c.file.pair(0, 0).unwrap_or(f64::NAN),
            c.file.unit()
        );
    }
    println!(
        "wrote {} ({} node(s), {} node set(s)); with it this host is machine class {}",
        out.display(),
        c.nodes,
        c.file.sets().len(),
        c.fingerprint
    );
    for problem in &c.forced {
        println!("forced past: {problem}");
    }
    for note in c.file.notes() {
        println!("warning: {note}");
    }
    Ok(())
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli {
        Cli::Collect { vcpus, collect } => run_collect(vcpus, &collect)?,
        Cli::Calibrate {
            out,
            seconds,
            force,
        } => run_calibrate(out, seconds, force)?,
        Cli::Train {
            vcpus,
            collect,
            model_dir,
            train,
        } => match vcpus.as_slice() {
            [v] => run_train(*v, &collect, &model_dir, &train)?,
            _ => run_train_sizes(&vcpus, &collect, &model_dir, &train)?,
        },
        Cli::Fit { data, out, train } => {
            let dataset = Dataset::load(&data)?;
            print!("{}", report::left_out(&dataset));
            pipeline::usable_enough(&dataset, &data)?;
            let acceptance = train.acceptance()?;
            let (model, _) = fit(&dataset, &train.options()?).context("fitting the model")?;
            let model = acceptance.judge(model).inspect_err(print_refused)?;
            model.save(&out)?;
            print!("{}", report::model_summary(&model));
            println!("wrote {}", out.display());
        }
        Cli::Evaluate {
            data,
            plots,
            hold_out,
            train,
        } => {
            let dataset = Dataset::load(&data)?;
            print!("{}", report::left_out(&dataset));
            let options = train.options()?;
            let split = (!hold_out.is_empty())
                .then(|| placed_models::hold_out::hold_out(&dataset, &hold_out))
                .transpose()?;
            let kept = split.as_ref().map_or(&dataset, |s| &s.kept);
            let evaluation = evaluate(kept, &options).context("evaluating")?;
            print!("{}", report::evaluation_tables(&evaluation));
            if let Some(split) = &split {
                let (model, _) = fit(kept, &options).context("fitting the model")?;
                let checked = placed_models::check::check(&model, &split.held)?;
                println!("\nthe model on the held-out families:");
                print!("{}", report::check_tables(&checked, &model));
                print!(
                    "{}",
                    report::hold_out_summary(split, &hold_out, &evaluation, &checked)
                );
            }
            if let Some(dir) = plots {
                let written = plot::write_plots(&evaluation, &dir)?;
                println!("\nwrote {} plots into {}", written.len(), dir.display());
            }
        }
        Cli::Sizes {
            data,
            out,
            fewest,
            train,
        } => {
            let datasets = data
                .iter()
                .map(|path| Dataset::load(path))
                .collect::<Result<Vec<_>, _>>()?;
            for d in &datasets {
                print!("{}", report::left_out(d));
            }
            let options = train.options()?;
            if fewest {
                let target = train.acceptance()?.gate.max_mean_error;
                return replay_fewest(datasets, target, &options);
            }
            match out {
                None => {
                    let across = placed_models::sizes::leave_one_size_out(&datasets, &options)
                        .context("leaving one size out")?;
                    print!("{}", report::sizes_table(&across));
                }
                Some(path) => {
                    let (model, across) = placed_models::SizesModel::fit(&datasets, &options)
                        .context("fitting the model across sizes")?;
                    print!("{}", report::sizes_table(&across));
                    model.save(&path)?;
                    println!(
                        "\nwrote model across sizes {} ({}) to {}: trained on v = {:?}, its intervals {:.1}% wide on either side (the held-out sizes' 90% error quantile)",
                        model.id(),
                        model.provenance(),
                        path.display(),
                        model.sizes(),
                        model.error_quantile() * 100.0
                    );
                }
            }
        }
        Cli::Check { model, data } => {
            let dataset = Dataset::load(&data)?;
            let model: Box<dyn placed_models::Predictor> =
                match placed_models::ModelFile::load(&model)? {
                    placed_models::ModelFile::PerSize(m) => m,
                    // Made ready for the data's size, as the daemon makes it ready for a
                    // container's.
                    placed_models::ModelFile::AcrossSizes(m) => Box::new(
                        std::sync::Arc::<placed_models::SizesModel>::from(m)
                            .for_size(dataset.header().v, dataset.header().placements.clone())?,
                    ),
                };
            print!("{}", report::left_out(&dataset));
            let checked = placed_models::check::check(model.as_ref(), &dataset)?;
            print!("{}", report::check_tables(&checked, model.as_ref()));
        }
        Cli::Policies {
            data,
            topology,
            machine_file,
            goals,
            plots,
            json,
            train,
        } => {
            let dataset = Dataset::load(&data)?;
            let machine = Machine::load(&topology.source(), machine_file.as_deref())?;
            let set = important_placements(&machine, dataset.header().v as usize)?;
            let goals: Vec<f64> = goals.iter().map(|g| g / 100.0).collect();
            let replay = policies::replay(&dataset, &machine, &set, &goals, &train.options()?)
                .context("replaying the policies")?;
            if json {
                print!("{}", policies::json_lines(&replay));
            } else {
                print!("{}", report::left_out(&dataset));
                print!("{}", policies::text(&replay));
            }
            if let Some(dir) = plots {
                let written = plot::policies::write_plots(&replay, &dir)?;
                if !json {
                    println!("\nwrote {} plots into {}", written.len(), dir.display());
                }
            }
        }
        Cli::Simulate {
            topology,
            machine_file,
            vcpus,
            out,
            families,
            workloads_per_family,
            noise,
            seed,
        } => {
            let machine = Machine::load(&topology.source(), machine_file.as_deref())?;
            let set = important_placements(&machine, vcpus)?;
            let sim = SimMachine::from_placed(&machine, &set)?;
            let options = SimulationOptions {
                families,
                workloads_per_family,
                noise,
                seed,
                ..SimulationOptions::default()
            };
            let dataset = simulate(&sim, &options)?;
            dataset.save(&out)?;
            println!(
                "wrote SIMULATED training data (no hardware measured): {} workloads in {} families x {} placements of {} for v = {vcpus} to {}",
                families * workloads_per_family,
                families,
                set.placements.len(),
                set.fingerprint,
                out.display()
            );
        }
        Cli::Workload(cmd) => run_workload(cmd)?,
        Cli::Man => {
            use clap::CommandFactory as _;
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command())
                .section("1")
                .render(&mut page)
                .context("writing the man page")?;
            print!("{}", String::from_utf8_lossy(&page));
        }
    }
    Ok(())
}

fn workload_table(all: &[workloads::Workload]) -> String {
    let rows: Vec<[String; 5]> = all
        .iter()
        .map(|w| {
            [
                w.name.clone(),
                w.family.clone(),
                w.unit.clone(),
                if w.builtin { "builtin" } else { "external" }.into(),
                w.unavailable()
                    .map_or_else(|| "yes".into(), |why| format!("no ({why})")),
            ]
        })
        .collect();
    report::aligned(["NAME", "FAMILY", "UNIT", "KIND", "AVAILABLE"], &rows)
}

fn run_workload(cmd: WorkloadCmd) -> anyhow::Result<()> {
    match cmd {
        WorkloadCmd::Run {
            name,
            threads,
            seconds,
        } => {
            let Some(spec) = kernels::find(&name) else {
                let known: Vec<&str> = kernels::KERNELS.iter().map(|k| k.name).collect();
                anyhow::bail!("no built-in workload {name:?}; known: {}", known.join(", "));
            };
            let kernel = (spec.build)(threads);
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            match kernels::runner::run(kernel.as_ref(), threads, seconds, &mut out) {
                Ok(()) => {}
                // The reader is gone (the collector stopped listening): a normal end.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                Err(e) => return Err(e).context("running the kernel"),
            }
        }
        WorkloadCmd::List {
            workload_file,
            json,
        } => {
            let mut all = workloads::builtin();
            for file in &workload_file {
                all.extend(workloads::load(file)?);
            }
            if json {
                for w in &all {
                    let line = serde_json::json!({
                        "name": w.name,
                        "family": w.family,
                        "unit": w.unit,
                        "builtin": w.builtin,
                        "available": w.available(),
                        "unavailable_because": w.unavailable(),
                    });
                    println!("{line}");
                }
            } else {
                print!("{}", workload_table(&all));
            }
        }
    }
    Ok(())
}
