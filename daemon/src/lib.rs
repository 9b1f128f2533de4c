//! `placed`: the NUMA placement daemon. It decides on which CPUs and NUMA memory nodes each
//! container of a host runs, predicts how fast it would run in every placement that
//! matters, and moves it there. The machine model and placements come from
//! [`placed_core`], everything done to the host from [`placed_host`], the models from
//! `placed_models`.
//!
//! # Layout
//!
//! - [`lifecycle`]: the daemon's core: start-up, one task per container lifecycle, the
//!   commands the API drives it with, discovery, adoption after a restart, shutdown.
//! - [`kubernetes`]: the NRI plugin: pods placed when created, held, followed.
//! - [`service`]: the `placed.v1` gRPC service, health and reflection, and its listeners.
//! - [`state`]: the versioned, checksummed state file a restarted daemon adopts from.
//! - [`config`]: the daemon's TOML configuration and its defaults.
//! - [`reload`]: what a reloaded configuration may change while running.
//! - [`telemetry`]: logging and the Prometheus metrics endpoint.
//! - [`systemd`]: readiness, status and the watchdog under `Type=notify`.
//! - [`run`]: the whole life of the daemon, from its bound listeners to a clean stop.
//!
//! The binary (`src/bin/placed.rs`) parses flags, reads the config, handles signals, binds
//! ([`run::Listeners::bind`]) and calls [`run::run`] with this host's environment; tests
//! call the same `run` on a fake host.

pub mod config;
pub mod kubernetes;
pub mod lifecycle;
pub mod reload;
pub mod run;
pub mod service;
pub mod state;
pub mod systemd;
pub mod telemetry;
