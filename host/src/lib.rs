//! `placed-host`: everything `placed` does to and reads from the running host, on top of
//! [`placed_core`]: the kernel's files, cgroup cpusets, container discovery, memory
//! migration, enactment, observation, and stopping on a signal. No gRPC, no daemon state.
//!
//! # Layout
//!
//! The modules stack as floors, ground floor first: each uses only modules listed before
//! it, and no two modules of one level import each other in a circle (the `layers` test in
//! `host/tests` checks both).
//!
//! - [`kernel`]: the ground floor, importing nothing else of the crate. Where `/proc`,
//!   `/sys` and the cgroup mounts are, found once at start, and the one place their files
//!   are read through ([`kernel::Kernel`], [`kernel::Files`], [`kernel::fs`]).
//! - [`atomic_file`]: replacing a file so that readers see the old content or the new,
//!   never a part (the daemon's state file, model files, training data, machine files).
//! - [`stop`]: SIGINT, SIGTERM and SIGHUP as one stop request ([`stop::Stop`]): a flag for
//!   blocking work, a cancellation token for async code, the signal's name for messages;
//!   SIGHUP may be routed to a reload hook instead.
//! - [`virt`]: whether this is a virtual machine (cpuinfo's hypervisor flag, the DMI vendor,
//!   systemd-detect-virt), which the data the collector and the daemon write says.
//! - [`cgroup`]: cgroup cpusets v1 and v2 behind one interface rooted at a path: read and
//!   write a cgroup's sets in an order the kernel accepts, freeze it with a guard that thaws
//!   (the registry of live guards belongs to the hierarchy object); CPU quotas.
//! - [`containers`]: find a container's cgroup by name or id (Docker, containerd and
//!   Kubernetes, podman, LXC, systemd units, plain cgroup paths) and list them.
//! - [`migrate`]: move a container's memory to its new nodes (the kernel's cpuset path, or
//!   parallel `move_pages` workers, frozen or throttled) and report what moved.
//! - [`observe`]: how fast a container runs where it is: metric sources (pushed, Prometheus,
//!   perf counters, an operator's command), the measurement protocol (warm-up, sub-windows,
//!   median and interval, noise per window) and the ratio comparison of two placements.
//! - [`enact`]: [`enact::Host`], built from one [`kernel::Kernel`]: put a container on a
//!   placement (resolve, write, migrate, verify through `/proc`, roll back on failure), read
//!   its state, its CPU quota and what a move would migrate, thaw what it froze; the API the
//!   daemon, `placectl move` and the training collector call.
//! - `fake` (with the `fake` feature, and in this crate's tests): a whole fake host (cgroup
//!   tree, `/proc`, `/sys` and mountinfo in a temporary directory) behind the same types,
//!   for tests without root; the top floor, since it builds hierarchies and hosts.

pub mod atomic_file;
pub mod kernel;
pub mod stop;
pub mod virt;

pub mod cgroup;
pub mod containers;
pub mod migrate;
pub mod observe;

pub mod enact;

#[cfg(any(test, feature = "fake"))]
pub mod fake;
