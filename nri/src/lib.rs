//! `placed-nri`: placed as an NRI plugin, the Node Resource Interface of containerd (1.7
//! and later) and CRI-O. Through it placed places a pod's containers when they are
//! created, keeps their cpusets against updates from others, and moves them while they run
//! with the runtime's agreement. It knows nothing of the daemon: the daemon implements
//! [`Placer`] and starts a [`Plugin`].
//!
//! # Layout
//!
//! - [`mux`]: the NRI socket's multiplexer (frames, connections 1 and 2, limits).
//! - `api` (private): the protocol subset placed speaks, generated at build time from
//!   `proto/nri.proto` (placed's own file, following NRI v0.6's wire format).
//! - `convert` (private): messages to the plain values of [`objects`] and back.
//! - [`objects`]: pods, containers, their CPU resources and size in vCPUs.
//! - [`events`]: lifecycle events and the subscription mask.
//! - [`annotations`]: what a pod's `placed.io/` annotations ask for each container.
//! - [`answers`]: adjustments, updates and the hold, built from cpusets.
//! - [`placer`]: the [`Placer`] trait the daemon implements.
//! - [`config`]: the plugin's settings, checked.
//! - `service` (private): the runtime's calls, answered within the budget, failing open.
//! - [`plugin`]: the connection: register, serve, reconnect with backoff; its status.
//! - [`updater`]: UpdateContainers for running containers.
//! - `fake` (feature `fake`): an in-process NRI runtime for tests.

pub mod annotations;
pub mod answers;
mod api;
pub mod config;
mod convert;
pub mod events;
#[cfg(feature = "fake")]
pub mod fake;
pub mod mux;
pub mod objects;
pub mod placer;
pub mod plugin;
mod service;
pub mod updater;

pub use config::Config;
pub use events::{Event, EventMask, StateChange};
pub use objects::{Container, ContainerState, Pod, Resources, Vcpus};
pub use placer::{Placer, Update};
pub use plugin::{Plugin, Status};
pub use updater::{UpdateError, Updater};
