//! `placed-train`'s command line as typed: clap's derive, nothing checked beyond the types.
//! [`super::request`] turns it into a validated request.

// The doc comments are the help text people read in a terminal (`data-v<N>.jsonl`), not
// HTML.
#![allow(rustdoc::invalid_html_tags)]

use std::path::PathBuf;

use clap::{Args, Parser};
use placed_core::exit::Exit;

use crate::collect;

#[derive(Parser, Debug)]
#[command(name = "placed-train", version, about, after_help = Exit::help_table())]
pub enum Cli {
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
    /// Fit a model on a data file, or on the daemon's production data completed by the
    /// model across classes, and write it.
    Fit {
        /// Training data (JSON lines, see docs/models.md).
        #[arg(long, required_unless_present = "prior")]
        data: Option<PathBuf>,
        /// Instead of --data: the model across classes that decided on this host
        /// (`across-classes.json`); it completes the --production runs, and the model is
        /// fitted on them alone: the host's own model, from what the daemon measured.
        #[arg(
            long,
            value_name = "FILE",
            conflicts_with = "data",
            requires = "production"
        )]
        prior: Option<PathBuf>,
        /// Where to write the model file.
        #[arg(long)]
        out: PathBuf,
        /// The daemon's production data of this class and size (repeat the flag): its
        /// partial runs measured in the model's baseline and probe are completed by a model
        /// fitted on --data, or by --prior, and learned from (docs/training.md, "Production
        /// data").
        #[arg(long, value_name = "FILE")]
        production: Vec<PathBuf>,
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
    /// Merge data files of one machine class and size (the production data of a fleet's
    /// hosts): headers and provenance checked, records seen twice dropped, each record's host
    /// kept (docs/models.md, "Production data").
    Merge {
        /// A data file (repeat the flag for each).
        #[arg(long, required = true)]
        data: Vec<PathBuf>,
        /// Where to write the merged file.
        #[arg(long)]
        out: PathBuf,
    },
    /// Champion and challenger: check a retrained model and the installed one on held-out
    /// production data; with --install the challenger replaces the installed file only when
    /// its mean error is lower. Otherwise refused with the figures (exit status 1).
    Challenge {
        /// The retrained model file.
        #[arg(long)]
        challenger: PathBuf,
        /// The installed model file.
        #[arg(long)]
        champion: PathBuf,
        /// Production data neither model was trained on.
        #[arg(long)]
        data: PathBuf,
        /// Replace the champion's file with the challenger's when it wins; a model of one
        /// class and size beating a model across sizes or classes is installed beside it,
        /// as the class's own model for its size (`<fingerprint>-v<N>.json`).
        #[arg(long)]
        install: bool,
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
        #[arg(long, value_delimiter = ',', default_values_t = crate::policies::DEFAULT_GOALS.map(|g| 100.0 * g))]
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
    /// One model across machine classes, for hosts of a class nobody trained: a corpus of
    /// data of many classes, left one class out, fitted and installed (docs/models.md,
    /// "Across classes").
    #[command(subcommand)]
    Classes(ClassesCmd),
    /// Training workloads: list them, or run one kernel (what the collector starts).
    #[command(subcommand)]
    Workload(WorkloadCmd),
    /// Print the man page, placed-train(1), as roff; with --dir, write it and one page per
    /// subcommand (those it lists) into DIR (for packaging).
    #[command(hide = true)]
    Man {
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

#[derive(clap::Subcommand, Debug)]
pub enum ClassesCmd {
    /// Write SIMULATED data for each topology into a corpus directory, one file per
    /// machine class (no hardware is measured; every record says so).
    Simulate {
        /// An hwloc XML topology (repeat the flag for each machine class).
        #[arg(long = "topology", required = true)]
        topologies: Vec<PathBuf>,
        /// The corpus directory to write into.
        #[arg(long)]
        out_dir: PathBuf,
        /// Workload families per class (archetypes are dealt round-robin over 8).
        #[arg(long, default_value_t = 16)]
        families: usize,
        /// Workloads per family.
        #[arg(long, default_value_t = 4)]
        workloads_per_family: usize,
        /// Relative measurement noise.
        #[arg(long, default_value_t = 0.01)]
        noise: f64,
        /// Seed (the same for every class: the same workloads on every machine).
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Leave one class out: each class predicted by the model across the others, beside
    /// its own model and the category mean; with --ablation, again without each group of
    /// resource descriptions.
    Evaluate {
        /// The corpus directory (data files, *.jsonl, with their resources lines).
        #[arg(long)]
        corpus: PathBuf,
        /// Also leave each group of resource descriptions out in turn.
        #[arg(long)]
        ablation: bool,
        #[command(flatten)]
        train: TrainFlags,
    },
    /// Fit the model across classes on the corpus and write it to a file or install it in
    /// the daemon's model directory.
    Build {
        /// The corpus directory.
        #[arg(long)]
        corpus: PathBuf,
        /// Where to write the model file.
        #[arg(
            long,
            conflicts_with = "model_dir",
            required_unless_present = "model_dir"
        )]
        out: Option<PathBuf>,
        /// The daemon's model directory: installed there as across-classes.json.
        #[arg(long)]
        model_dir: Option<PathBuf>,
        #[command(flatten)]
        train: TrainFlags,
    },
    /// Does a host's own model, fitted on what the daemon measures while the model across
    /// classes decides (`fit --prior`), beat it, and after how many runs? The class of
    /// --data is held out of the corpus and the prior built on the rest; the runs of its
    /// first families, cut to what the daemon would keep of them, make the host's model;
    /// its last families, whole, are the test.
    Trial {
        /// The corpus directory (the held-out class's own files in it are left out).
        #[arg(long)]
        corpus: PathBuf,
        /// The held-out class: whole runs with the resources line (`classes simulate` with
        /// more --families than the corpus's and another --seed).
        #[arg(long)]
        data: PathBuf,
        /// Families run in production: one host model per count (comma-separated).
        #[arg(long, value_delimiter = ',', default_value = "8,16,32",
              value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        families: Vec<usize>,
        /// Families tested on: the data's last.
        #[arg(long, default_value_t = 32,
              value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        test_families: usize,
        #[command(flatten)]
        train: TrainFlags,
    },
}

#[derive(clap::Subcommand, Debug)]
pub enum WorkloadCmd {
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
pub struct TopologyFlags {
    /// An hwloc XML topology file.
    #[arg(long)]
    pub topology: Option<PathBuf>,
    /// An hwloc synthetic description, e.g. "pack:4 numa:2 l3:1 core:8 pu:2".
    #[arg(long)]
    pub synthetic: Option<String>,
    /// This host's topology.
    #[arg(long)]
    pub host: bool,
}

#[derive(Args, Debug)]
pub struct CollectFlags {
    /// Workload names, comma-separated (built-in ones, or those of --workload-file);
    /// `builtin` for every built-in one, `all` for those and every installed external one.
    #[arg(long, value_delimiter = ',', required = true)]
    pub workloads: Vec<String>,
    /// External workload definitions (TOML, see docs/training.md).
    #[arg(long)]
    pub workload_file: Option<PathBuf>,
    /// Runs of each workload (each run is one training row).
    #[arg(long, default_value_t = 1)]
    pub runs: u32,
    /// The data file (`collect`; `train` defaults to data-v<N>.jsonl in --model-dir).
    #[arg(long, alias = "data")]
    pub out: Option<PathBuf>,
    /// Machine file applied to the host's machine model (e.g. from `calibrate`).
    #[arg(long)]
    pub machine_file: Option<PathBuf>,
    /// Seconds discarded after the workload starts [default: the protocol's, 2].
    #[arg(long)]
    pub warmup: Option<f64>,
    /// Undisturbed windows per measurement [default: 16].
    #[arg(long)]
    pub windows: Option<usize>,
    /// Seconds per window [default: 0.5].
    #[arg(long)]
    pub window: Option<f64>,
    /// Fewest undisturbed windows that still make a measurement [default: half of --windows, at least 6].
    #[arg(long)]
    pub min_windows: Option<usize>,
    /// Share of the workload's PUs other tasks may take before a window counts as
    /// disturbed [default: 0.05]; 1 turns the rule off (a shared test machine).
    #[arg(long)]
    pub max_foreign: Option<f64>,
    /// Further attempts, each with longer windows, for a measurement the protocol refuses
    /// (then skipped) or whose interval is wider than --max-interval (then recorded as
    /// unusable).
    #[arg(long, default_value_t = 2)]
    pub retries: u32,
    /// Widest acceptable 95% interval of a measurement, in percent of its median (+/-).
    #[arg(long, default_value_t = 100.0 * collect::DEFAULT_MAX_INTERVAL)]
    pub max_interval: f64,
    /// Leave the measurements the data file holds as unusable as they are; by default a
    /// resumed collection measures each of them again, once.
    #[arg(long)]
    pub keep_unusable: bool,
}

#[derive(Args, Debug)]
pub struct TrainFlags {
    /// Baseline placement id (default: the data's first placement).
    #[arg(long)]
    pub baseline: Option<String>,
    /// Trees in the final forest [default: 100; `classes build`: 50, which predicts within
    /// 50 us].
    #[arg(long)]
    pub trees: Option<usize>,
    /// Trees per cross-validation forest (default: as many as --trees).
    #[arg(long)]
    pub cv_trees: Option<usize>,
    /// Seed for the forest and k-means.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Do not feed counters to the forest even when the data has them.
    #[arg(long)]
    pub no_counters: bool,
    /// Nominal coverage of the prediction intervals, calibrated on the held-out families.
    #[arg(long, default_value_t = placed_models::interval::DEFAULT_LEVEL)]
    pub interval_level: f64,
    /// The accuracy gate: largest mean cross-validated error (percent) of a model that
    /// `fit`/`train` install (see docs/training.md, "The accuracy gate").
    #[arg(long, default_value_t = placed_models::gate::DEFAULT_MAX_MEAN_ERROR)]
    pub max_error: f64,
    /// Install a model that fails the accuracy gate anyway; the file records that it is
    /// below the gate and the daemon only observes with it.
    #[arg(long)]
    pub accept_inaccurate: bool,
}
