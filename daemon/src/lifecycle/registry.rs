//! The containers the daemon manages, in memory, with their persistent records.
//!
//! Held behind a std mutex taken briefly by every command and task (never across an
//! await or a file write): the state file is written from snapshots (see `persist`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{Notify, OwnedMutexGuard};
use tokio_util::sync::CancellationToken;

use crate::containers::Container;
use crate::observe::Reporter;
use crate::state::{ContainerRecord, Lifecycle};

use super::error::DaemonError;

/// One managed container.
#[derive(Debug)]
pub struct Entry {
    pub record: ContainerRecord,
    pub container: Container,
    /// One operation at a time per container: held by the lifecycle task while it measures
    /// or moves, and tried (never waited for) by API commands.
    pub op: Arc<tokio::sync::Mutex<()>>,
    /// What holds `op`, for the "busy" answer; every holder sets it on taking `op`, so
    /// it is current whenever `op` is held.
    pub doing: Option<(String, Instant)>,
    /// The pushing half of a pushed metric source, while its task observes.
    pub reporter: Option<Reporter>,
    /// Cancelled when the container vanishes or the daemon stops.
    pub cancel: CancellationToken,
    /// Wakes the lifecycle task: settings changed, or re-evaluate now.
    pub wake: Arc<Notify>,
}

/// Held while an operation runs.
#[derive(Debug)]
pub struct OpGuard {
    _guard: OwnedMutexGuard<()>,
}

impl From<OwnedMutexGuard<()>> for OpGuard {
    fn from(guard: OwnedMutexGuard<()>) -> Self {
        Self { _guard: guard }
    }
}

#[derive(Debug, Default)]
pub struct Registry {
    pub entries: BTreeMap<String, Entry>,
}

impl Registry {
    /// Finds a container by its id (cgroup path), runtime id, name, or a unique prefix of
    /// the runtime id (12 hex digits as `docker ps` shows).
    pub fn find(&self, reference: &str) -> Option<&Entry> {
        let key = self.key_of(reference)?;
        self.entries.get(&key)
    }

    pub fn key_of(&self, reference: &str) -> Option<String> {
        if self.entries.contains_key(reference) {
            return Some(reference.to_owned());
        }
        let slashed = format!("/{}", reference.trim_start_matches('/'));
        if self.entries.contains_key(&slashed) {
            return Some(slashed);
        }
        let exact: Vec<&String> = self
            .entries
            .iter()
            .filter(|(_, e)| e.record.runtime_id == reference || e.record.name == reference)
            .map(|(k, _)| k)
            .collect();
        if let [one] = exact.as_slice() {
            return Some((*one).clone());
        }
        if reference.len() >= 6 {
            let prefixed: Vec<&String> = self
                .entries
                .iter()
                .filter(|(_, e)| e.record.runtime_id.starts_with(reference))
                .map(|(k, _)| k)
                .collect();
            if let [one] = prefixed.as_slice() {
                return Some((*one).clone());
            }
        }
        None
    }

    /// Counts per lifecycle state, every state present.
    pub fn counts(&self) -> Vec<(Lifecycle, usize)> {
        Lifecycle::ALL
            .iter()
            .map(|&s| {
                (
                    s,
                    self.entries
                        .values()
                        .filter(|e| e.record.state == s)
                        .count(),
                )
            })
            .collect()
    }

    /// Units held by every container but `except`.
    pub fn taken_units(&self, except: &str) -> Vec<usize> {
        let mut taken: Vec<usize> = self
            .entries
            .iter()
            .filter(|(k, _)| k.as_str() != except)
            .flat_map(|(_, e)| {
                let mut u: Vec<usize> = e
                    .record
                    .assigned
                    .iter()
                    .flat_map(|a| a.units.iter().copied())
                    .collect();
                // A migration in flight holds both ends.
                if let Some(m) = &e.record.migration {
                    u.extend(m.to.units.iter().copied());
                }
                u
            })
            .collect();
        taken.sort_unstable();
        taken.dedup();
        taken
    }
}

impl Entry {
    /// Claims the container for an operation without waiting: the API's way in.
    pub fn try_begin(&mut self, operation: &str) -> Result<OpGuard, DaemonError> {
        match self.op.clone().try_lock_owned() {
            Ok(guard) => {
                self.doing = Some((operation.to_owned(), Instant::now()));
                Ok(OpGuard { _guard: guard })
            }
            Err(_) => {
                let (what, since) = self
                    .doing
                    .clone()
                    .unwrap_or_else(|| ("an operation".into(), Instant::now()));
                Err(DaemonError::Busy {
                    container: self.record.name.clone(),
                    operation: what,
                    seconds: since.elapsed().as_secs(),
                })
            }
        }
    }
}
