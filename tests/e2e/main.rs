//! End-to-end tests: the real binaries, driven as an operator would drive them.
//!
//! One test binary (built as the `placed` package's `e2e` test so that cargo hands it the
//! real executables); one module per area.

mod admission;
#[path = "../support/bins.rs"]
mod bins;
#[path = "../support/cgroup.rs"]
mod cgroup_support;
mod daemon;
mod daemon_util;
mod docker;
#[path = "../support/docker.rs"]
mod docker_support;
mod enact;
mod guest;
#[path = "../support/guest.rs"]
mod guest_support;
mod kubernetes;
mod memory;
#[path = "../../nri/tests/support/mod.rs"]
mod nri_support;
mod offline;
mod ops;
mod package;
#[path = "../support/pki.rs"]
mod pki;
mod python;
mod reliability;
mod stop;
mod tls;
mod util;
