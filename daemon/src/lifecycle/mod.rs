//! The daemon's core: one task per container lifecycle (discovered -> baseline -> probe ->
//! predicted -> placed -> watched), the commands the API drives it with, discovery, the
//! reconciliation of cpusets changed from outside, and the state that survives restarts.
//!
//! No gRPC type crosses into this module: the service converts requests into calls here
//! and [`DaemonError`]s into status codes.
//!
//! # Layout
//!
//! Modules import only from those listed above them (a test checks there is no circle).
//!
//! Vocabulary, used by every room:
//! - [`error`]: [`DaemonError`], each with its fault and its cause.
//! - [`events`]: what `Watch` streams and the logs show.
//! - `requests`: what the API asks and answers ([`ManageRequest`], [`PlaceOutcome`], ...).
//! - `environment`: what the daemon runs on ([`Environment`]) and why it may not start.
//! - `drift`: the rule that sends a watched container back to evaluation.
//! - `inotify`: the inotify instance discovery and reconciliation share the code of.
//! - [`labels`]: label selectors, as List and Watch filter with them.
//!
//! The rooms of the shared state, each guarding itself:
//! - `settings`: the configuration in force, the measurement protocol, the metric rules.
//! - `node`: the machine, the host, the placements per size, the migration speed learnt.
//! - `entry` and `containers`: the managed containers in memory, one operation at a time
//!   each; the ones handed back.
//! - `persistence`: the state file, written from snapshots, coalescing queued saves.
//! - `inflight`: an operation in flight that a second caller may join; `joint` (with the
//!   steps, below) starts or joins one.
//! - `telemetry`: events and metrics.
//! - `models`: the model files, by machine class and vCPU count.
//! - `live`: every model's decisions checked against what happened, and its live gate.
//! - `production`: every measurement of a managed container kept as training data, one
//!   bounded file per machine class and size.
//! - `reservations`: units held for containers not started yet, until claimed or expired.
//! - `core`: the rooms put together, and what spans them (a save, forgetting a container).
//!
//! One container's steps, on a `handle` (its id with the core):
//! - `handle`: its record, state changes, events and operation lock.
//! - `moving`: a move, journalled in the state file so a crash is settled.
//! - `cost`: whether a move pays (the move-or-stay rule's inputs).
//! - `measure`: measuring it where it is, with its metric source.
//! - `evaluate`: baseline, probe and prediction; the third measurement.
//! - `decide`: applying a policy: what it chooses, and the move when it pays or is ordered.
//! - `overrides`: its cpuset checked against what placed enacted, and a difference handled.
//! - `outcome`: a decision checked against the watch measurement after it.
//! - `keep`: a measurement of the container kept as production data.
//! - `settle`: what an interrupted move or prediction left, settled.
//! - `task`: its lifecycle's state machine.
//! - `register`: taking it under management and starting its task (on its reservation's
//!   units when it claims one).
//! - `admission`: where a container not started yet should start, held for it on request;
//!   `capacity`: what the node has free and what fits.
//!
//! What the daemon starts, and the handle the service holds:
//! - `adopt`: the state file's containers adopted at start.
//! - `discovery`: containers appearing and disappearing (inotify and resync).
//! - `reconcile`: the watches on the managed containers' cpuset files.
//! - `expiry`: reservations released when their hold ends unclaimed.
//! - `daemon`: [`Daemon`], started on an [`Environment`], stopped in order.
//! - `commands`, `unmanage` and `new_containers`: what the API asks of the daemon.

mod admission;
mod adopt;
mod capacity;
mod commands;
mod containers;
mod core;
mod cost;
mod daemon;
mod decide;
mod discovery;
mod drift;
mod entry;
mod environment;
pub mod error;
mod evaluate;
pub mod events;
mod expiry;
mod handle;
mod inflight;
mod inotify;
mod joint;
mod keep;
pub mod labels;
mod live;
mod measure;
mod models;
mod moving;
mod new_containers;
mod node;
mod outcome;
mod overrides;
mod persistence;
pub mod production;
mod reconcile;
mod register;
mod requests;
mod reservations;
mod settings;
mod settle;
mod task;
mod telemetry;
mod unmanage;

pub use admission::{Admission, AdmitRequest, BatchMode, Hint, MAX_HOLD, Prior};
pub use capacity::{Capacity, Fits, Tally, UnitUse};
pub use daemon::Daemon;
pub use environment::{Environment, StartError};
pub use error::DaemonError;
pub use events::{Event, EventKind};
pub use live::ModelLive;
pub use models::{LoadedClassesModel, LoadedModel, LoadedSizesModel};
pub use production::{FAMILY_LABEL, WORKLOAD_LABEL};
pub use requests::{
    ContainerView, ManageRequest, PlaceOutcome, PlaceTarget, Recommendation, StatusView,
};
pub use unmanage::Unmanaged;
