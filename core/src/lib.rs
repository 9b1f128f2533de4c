//! `placed-core`: what `placed` knows about a machine and its placements, with no I/O on
//! the running host beyond loading a topology through hwloc.
//!
//! # Layout
//!
//! - [`cpuset`]: PU and NUMA node sets in the kernel's cpulist syntax, shared by every layer.
//! - [`machine`]: the host's topology (from hwloc: the host, an XML file or a synthetic
//!   description), its scheduling concerns, interconnect and machine-class fingerprint.
//! - [`placement`]: the important placements of a container of `v` vCPUs (the thesis's
//!   algorithms 1-3, generalised to any depth and bounded on large machines).
//! - [`policy`]: placement policies (model, conservative, aggressive, smart-aggressive,
//!   pinned, observe) and whether a move pays for its migration.
//! - [`lifecycle`]: the states of a managed container's lifecycle, named once.
//! - [`reconcile`]: a placement undone from outside: the comparison, the per-container
//!   policy (reassert, adopt, leave) and the write-back limit.
//! - [`fault`]: who has to act on an error (caller, operator, nobody), from which the
//!   daemon derives gRPC codes and the binaries their exit codes.
//! - [`exit`]: the exit-code table shared by `placed`, `placectl` and `placed-train`.
//! - `man` (feature `cli`): the binaries' man pages, one per command and subcommand,
//!   from their clap definitions.
//! - [`text`]: how errors and sizes are written for people (one line per error chain).
//!
//! The crates above it: `placed-host` (cgroups, containers, migration, enactment,
//! observation), `placed` (the daemon), `placectl` (the CLI).

pub mod cpuset;
pub mod exit;
pub mod fault;
pub mod lifecycle;
pub mod machine;
#[cfg(feature = "cli")]
pub mod man;
pub mod placement;
pub mod policy;
pub mod reconcile;
pub mod text;
