//! The enactment library against real kernels: cgroup v1 here, Docker where it runs, and
//! cgroup v2 with several NUMA nodes in a QEMU guest. One module each.
//!
//! These tests need root; without it, or without what a test needs, they print
//! "skipped, because ..." and pass. Every cgroup and container they create is removed on
//! drop, also when they fail.

// Test code: a panic is the failure report. clippy.toml's allow-unwrap-in-tests covers
// #[test] functions only, not the helpers they share.
#![allow(clippy::unwrap_used)]

mod docker;
mod guest;
mod real;
mod support;

/// Not a test: the body of the load processes the tests place (see `support::Load`, which
/// runs it as `enact::load_helper`). It does nothing unless `PLACED_TEST_LOAD` is set.
#[test]
fn load_helper() {
    if let Ok(spec) = std::env::var("PLACED_TEST_LOAD") {
        support::load_main(&spec);
    }
}
