//! placed-host's integration tests, in one binary: every test binary links the whole
//! dependency tree again, so each file here is a module of this one, not a binary of its
//! own (Cargo.toml: `autotests = false`; `every_test_file_is_a_module_of_this_binary`
//! fails for a file that is not declared below).
//!
//! - `enact`: the enactment library against real kernels (cgroup v1 here, Docker, cgroup v2
//!   with several NUMA nodes in numa-vm guests).
//! - `observe`: the observation engine against real processes with known behaviour.
//! - `fuzz`: the fuzz targets over placed-host's parsers of outside input
//!   (docs/testing.md).
//! - `layers`: placed-host's modules stack as floors: no circle of imports.
//! - `bins`, `harness` and `imports`: what the crates' test binaries share
//!   (tests/support): the workspace's binaries, the fuzz runner, and the reader of a
//!   crate's modules.

#[path = "../../tests/support/bins.rs"]
mod bins;
#[path = "../../tests/support/fuzz.rs"]
mod harness;
#[path = "../../tests/support/imports.rs"]
mod imports;

mod enact;
mod fuzz;
mod layers;
mod observe;

#[test]
fn every_test_file_is_a_module_of_this_binary() {
    imports::assert_one_binary(env!("CARGO_MANIFEST_DIR"));
}
