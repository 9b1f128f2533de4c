//! `placed`: decides on which CPUs and NUMA memory nodes each container of a host runs,
//! predicts how fast it would run in every placement that matters, and moves it there.
//!
//! # Layout
//!
//! The library follows the pipeline of `DESIGN.md` §3, one module per stage; the binaries
//! (`placed`, `placectl`) only parse flags, set up logging and call into it.
//!
//! - [`cpuset`]: PU and NUMA node sets in the kernel's cpulist syntax, shared by every stage.
//! - [`machine`]: the host's topology (from hwloc: the host, an XML file or a synthetic
//!   description), its scheduling concerns, interconnect and machine-class fingerprint.
//! - [`placement`]: the important placements of a container of `v` vCPUs (thesis
//!   algorithms 1-3, generalised to any depth and bounded on large machines).
//! - [`policy`]: placement policies (model, conservative, aggressive, smart-aggressive,
//!   pinned) and whether a move pays for its migration.
//! - [`state`]: the versioned, checksummed state file a restarted daemon adopts from.
//! - [`config`]: the daemon's TOML configuration and its defaults.
//! - [`cgroup`]: cgroup cpusets v1 and v2 behind one interface rooted at a path: read and
//!   write a cgroup's sets in an order the kernel accepts, freeze it with a guard that thaws.
//! - [`containers`]: find a container's cgroup by name or id (Docker, containerd and
//!   Kubernetes, podman, LXC, systemd units, plain cgroup paths) and list them.
//! - [`migrate`]: move a container's memory to its new nodes (the kernel's cpuset path, or
//!   parallel `move_pages` workers, frozen or throttled) and report what moved.
//! - [`enact`]: put a container on a placement: resolve, write, migrate, verify through
//!   `/proc`, roll back on failure; the API the daemon and the collector call.
//! - [`fault`]: who has to act on an error (caller, operator, nobody), for gRPC codes.
//! - [`observe`]: how fast a container runs where it is: metric sources (pushed, Prometheus,
//!   perf counters, an operator's command), the measurement protocol (warm-up, sub-windows,
//!   median and interval, noise per window) and the ratio comparison of two placements.
//! - [`cli`]: what `placectl` prints, as tables for people and JSON for programs.

pub mod cgroup;
pub mod cli;
pub mod client;
pub mod config;
pub mod containers;
pub mod cpuset;
pub mod enact;
pub mod fault;
pub mod lifecycle;
pub mod machine;
pub mod migrate;
pub mod observe;
pub mod placement;
pub mod policy;
pub mod service;
pub mod state;
pub mod systemd;
pub mod telemetry;
