//! `placed-training`: training workloads, the collector that measures them in every
//! important placement of a host, and the `placed-train` command (collect, fit, evaluate,
//! simulate): its command layer is [`cli`], its binary only parses and calls it.
//!
//! # Layout
//!
//! - [`workloads`]: the built-in training workloads (what runs, for `v` threads, and how its
//!   performance is read) and the operator's own, from a workload file.
//! - [`collect`]: runs workloads in every important placement of this host and appends
//!   the measurements to a resumable data file.
//! - [`calibrate`]: measured memory bandwidth of node sets, written as a machine file.
//! - [`pipeline`]: the whole loop (collect, fit, evaluate, install).
//! - [`provenance`]: real hardware or a virtual machine. [`interrupt`]: SIGINT, SIGTERM and
//!   SIGHUP as a stop (`placed_host::stop`), so a stopped collection cleans up.
//! - [`simulate`]: simulated training data for a topology and `v`, marked simulated.
//! - [`report`]: the tables `fit` and `evaluate` print.
//! - [`save`]: model files and data sets written atomically (placed-host's
//!   `atomic_file`), with the model file's mode and group.
//! - [`policies`]: the placement policies replayed from collected data (thesis §2.5).
//! - [`plot`]: predicted against actual performance per workload, and the policy replay, as
//!   SVG.
//! - [`cli`]: `placed-train`'s commands: the command line as typed, validated into a
//!   request, and run.
//! - [`exit`]: `placed-train`'s exit code for an error, from the table shared by the three
//!   binaries (`placed_core::exit`).

pub mod calibrate;
pub mod cli;
pub mod collect;
pub mod exit;
pub mod interrupt;
pub mod pipeline;
pub mod plot;
pub mod policies;
pub mod provenance;
pub mod report;
pub mod save;
pub mod simulate;
pub mod workloads;
