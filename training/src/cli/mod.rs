//! `placed-train`'s command layer: the command line as typed ([`args`], clap), validated
//! into a [`Request`] ([`request`]), and each command's run. The binary only parses, sets
//! up logging and calls [`run`]; [`crate::exit`] maps the error to the exit code.
//!
//! - [`collect`]: `collect` and `train` for one size, and the collection summary.
//! - [`sizes`]: `train` for several sizes, and `sizes`.
//! - [`models`]: `fit`, `evaluate`, `check`, `policies` and `simulate`, on data files.
//! - [`production`]: `merge` and `challenge`, on the daemon's production data.
//! - [`classes`]: `classes simulate`, `classes evaluate` and `classes build`: the model
//!   across machine classes.
//! - [`workload`]: `workload list` and `workload run`, `calibrate`, and the man pages.
//! - [`error`]: why a command failed.

pub mod args;
pub mod classes;
pub mod collect;
pub mod error;
pub mod models;
pub mod production;
pub mod request;
pub mod sizes;
pub mod workload;

pub use args::Cli;
pub use error::CliError;
pub use request::Request;

/// Validates the command line and runs the command.
pub fn run(cli: Cli) -> Result<(), CliError> {
    cli.validate()?.run()
}

impl Request {
    /// Runs the command; what it prints goes to stdout, progress to the log (stderr).
    pub fn run(self) -> Result<(), CliError> {
        match self {
            Request::Collect {
                vcpus,
                collection,
                out,
            } => collect::collect(vcpus, &collection, out),
            Request::Calibrate(options) => workload::calibrate(&options),
            Request::Train {
                sizes,
                collection,
                model_dir,
                fitting,
            } => match sizes.as_slice() {
                [v] => collect::train_one(*v, &collection, &model_dir, &fitting),
                _ => sizes::train_sizes(&sizes, &collection, &model_dir, &fitting),
            },
            Request::Fit {
                basis,
                out,
                production,
                fitting,
            } => models::fit_model(&basis, &out, &production, &fitting),
            Request::Evaluate {
                data,
                plots,
                hold_out,
                options,
            } => models::evaluate_data(&data, plots.as_deref(), &hold_out, &options),
            Request::Check { model, data } => models::check(&model, &data),
            Request::Merge { data, out } => production::merge_data(&data, &out),
            Request::Challenge {
                challenger,
                champion,
                data,
                install,
            } => production::challenge(&challenger, &champion, &data, install),
            Request::Sizes {
                data,
                output,
                options,
            } => sizes::sizes(&data, &output, &options),
            Request::Policies {
                data,
                machine,
                goals,
                plots,
                json,
                options,
            } => models::replay_policies(&data, &machine, &goals, plots.as_deref(), json, &options),
            Request::Simulate {
                machine,
                vcpus,
                out,
                options,
            } => models::simulate_data(&machine, vcpus, &out, &options),
            Request::Classes(request) => classes::run(request),
            Request::WorkloadRun {
                kernel,
                threads,
                seconds,
            } => workload::run(kernel, threads, seconds),
            Request::WorkloadList { files, json } => workload::list(&files, json),
            Request::Man { dir } => {
                workload::man(<Cli as clap::CommandFactory>::command(), dir.as_deref())
            }
        }
    }
}
