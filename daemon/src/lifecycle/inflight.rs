//! An operation in flight on one container that a second caller may join (see `joint`):
//! what identifies it, and where its one result arrives.

use std::sync::Arc;

use tokio::sync::watch;

use super::error::DaemonError;

/// The result every caller of one operation gets.
pub(crate) type Outcome<T> = Option<Result<T, Arc<DaemonError>>>;

/// An operation in flight on a container, and what identifies a request for the same.
#[derive(Debug)]
pub(crate) struct InFlight<T> {
    pub key: String,
    pub done: watch::Receiver<Outcome<T>>,
}
