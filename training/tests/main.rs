//! placed-training's integration tests, in one binary: every test binary links the whole
//! dependency tree again (at opt-level 2 for this crate), so each file here is a module of
//! this one, not a binary of its own (Cargo.toml: `autotests = false`;
//! `every_test_file_is_a_module_of_this_binary` fails for a file that is not declared
//! below).
//!
//! - `cli`: `placed-train`'s command line; `classes`: its model across machine classes.
//! - `collect`: the collector on this host, for real (root, cpusets); `guest`: the whole
//!   loop and calibration in a numa-vm guest; `support`: what both share.
//! - `workloads`: the built-in workloads and the external tools, run for real.
//! - `fuzz`: the fuzz targets over workload files and the collector's data file.
//! - `policies`, `simulated_accuracy`, `simulated_coverage`, `production_retrain`: the
//!   models and policies on simulated data.
//! - `harness` and `imports`: what the crates' test binaries share (tests/support): the
//!   fuzz runner, and the reader of a crate's modules.

#[path = "../../tests/support/fuzz.rs"]
mod harness;
#[path = "../../tests/support/imports.rs"]
mod imports;

mod classes;
mod cli;
mod collect;
mod fuzz;
mod guest;
mod policies;
mod production_retrain;
mod simulated_accuracy;
mod simulated_coverage;
mod support;
mod workloads;

#[test]
fn every_test_file_is_a_module_of_this_binary() {
    imports::assert_one_binary(env!("CARGO_MANIFEST_DIR"));
}
