//! Moving a running container through the runtime (UpdateContainers), so that the
//! runtime's record of the container agrees with what placed enacted and a restart of the
//! container does not undo it.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use placed_core::fault::Fault;

use crate::answers::{self, EmptySet};
use crate::api::nri as pb;
use crate::api::nri_ttrpc::RuntimeClient;
use crate::placer::Update;

/// A handle to send updates over the plugin's current connection; cheap to clone, valid
/// across reconnections.
#[derive(Clone)]
pub struct Updater {
    shared: Arc<Shared>,
}

struct Shared {
    client: Mutex<Option<RuntimeClient>>,
    timeout: Duration,
}

impl std::fmt::Debug for Updater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Updater")
            .field("connected", &self.connected())
            .field("timeout", &self.shared.timeout)
            .finish()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum UpdateError {
    #[error("not connected to the runtime's NRI socket")]
    NotConnected,
    #[error(transparent)]
    Empty(#[from] EmptySet),
    #[error("UpdateContainers failed")]
    Call(#[source] ttrpc::Error),
    #[error("the runtime could not update container(s) {}", .containers.join(", "))]
    Failed { containers: Vec<String> },
}

impl UpdateError {
    pub fn fault(&self) -> Fault {
        match self {
            Self::Empty(e) => e.fault(),
            // The runtime may be restarting, the container may be going away: the
            // daemon's enactment stands, and the next update or synchronization retries.
            Self::NotConnected | Self::Call(_) | Self::Failed { .. } => Fault::Transient,
        }
    }
}

impl Updater {
    pub(crate) fn new(timeout: Duration) -> Self {
        Self {
            shared: Arc::new(Shared {
                client: Mutex::new(None),
                timeout,
            }),
        }
    }

    /// Whether a connection to the runtime is up.
    pub fn connected(&self) -> bool {
        self.client().is_some()
    }

    pub(crate) fn set(&self, client: Option<RuntimeClient>) {
        // A poisoned lock only means a panic elsewhere while holding an Option: the
        // value is still whole.
        *self
            .shared
            .client
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = client;
    }

    fn client(&self) -> Option<RuntimeClient> {
        self.shared
            .client
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Sets the cpusets of running containers. Nothing is sent when one of them has an
    /// empty half.
    pub async fn update(&self, updates: &[Update]) -> Result<(), UpdateError> {
        let update = updates
            .iter()
            .map(|u| answers::update(&u.container_id, &u.sets))
            .collect::<Result<Vec<_>, _>>()?;
        if update.is_empty() {
            return Ok(());
        }
        let client = self.client().ok_or(UpdateError::NotConnected)?;
        let request = pb::UpdateContainersRequest {
            update,
            ..Default::default()
        };
        let nanos = i64::try_from(self.shared.timeout.as_nanos()).unwrap_or(i64::MAX);
        let reply = client
            .update_containers(ttrpc::context::with_timeout(nanos), &request)
            .await
            .map_err(UpdateError::Call)?;
        if reply.failed.is_empty() {
            Ok(())
        } else {
            Err(UpdateError::Failed {
                containers: reply
                    .failed
                    .iter()
                    .map(|f| f.container_id.clone())
                    .collect(),
            })
        }
    }
}
