//! `placed-host`: everything `placed` does to and reads from the running host, on top of
//! [`placed_core`]: the kernel's files, cgroup cpusets, container discovery, memory
//! migration, enactment, observation, and stopping on a signal. No gRPC, no daemon state.
//!
//! # Layout
//!
//! - [`kernel`]: where `/proc`, `/sys` and the cgroup mounts are, found once at start, and
//!   the one place their files are read through ([`kernel::Kernel`], [`kernel::Files`]);
//!   with the `fake` feature, `kernel::fake`: a whole fake host (cgroup tree, `/proc`,
//!   `/sys`) for tests without root.
//! - [`cgroup`]: cgroup cpusets v1 and v2 behind one interface rooted at a path: read and
//!   write a cgroup's sets in an order the kernel accepts, freeze it with a guard that thaws
//!   (the registry of live guards belongs to the hierarchy object); CPU quotas.
//! - [`containers`]: find a container's cgroup by name or id (Docker, containerd and
//!   Kubernetes, podman, LXC, systemd units, plain cgroup paths) and list them.
//! - [`migrate`]: move a container's memory to its new nodes (the kernel's cpuset path, or
//!   parallel `move_pages` workers, frozen or throttled) and report what moved.
//! - [`enact`]: [`enact::Host`], built from one [`kernel::Kernel`]: put a container on a
//!   placement (resolve, write, migrate, verify through `/proc`, roll back on failure), read
//!   its state, its CPU quota and what a move would migrate, thaw what it froze; the API the
//!   daemon, `placectl move` and the training collector call.
//! - [`observe`]: how fast a container runs where it is: metric sources (pushed, Prometheus,
//!   perf counters, an operator's command), the measurement protocol (warm-up, sub-windows,
//!   median and interval, noise per window) and the ratio comparison of two placements.
//! - [`stop`]: SIGINT, SIGTERM and SIGHUP as one stop request ([`stop::Stop`]): a flag for
//!   blocking work, a cancellation token for async code, the signal's name for messages;
//!   SIGHUP may be routed to a reload hook instead.

pub mod cgroup;
pub mod containers;
pub mod enact;
pub mod kernel;
pub mod migrate;
pub mod observe;
pub mod stop;
