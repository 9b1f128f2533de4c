//! placed-core's integration tests, in one binary: every test binary links the whole
//! dependency tree again, so each file here is a module of this one, not a binary of its
//! own (Cargo.toml: `autotests = false`; `every_test_file_is_a_module_of_this_binary`
//! fails for a file that is not declared below).
//!
//! - `fuzz`: the fuzz targets over cpu lists, machine files and hwloc XML (docs/testing.md).
//! - `house`: no product file over 600 lines, no product function over 100, in any crate.
//! - `harness` and `imports`: what the crates' test binaries share (tests/support): the
//!   fuzz runner, and the reader of a crate's modules.

#[path = "../../tests/support/fuzz.rs"]
mod harness;
#[path = "../../tests/support/imports.rs"]
mod imports;

mod fuzz;
mod house;

#[test]
fn every_test_file_is_a_module_of_this_binary() {
    imports::assert_one_binary(env!("CARGO_MANIFEST_DIR"));
}
