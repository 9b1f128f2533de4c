//! The containers room: every managed container in memory, the ones handed back, and the
//! signal that the set of cpuset files to watch changed.
//!
//! Held behind std mutexes taken briefly by every command and task (never across an await
//! or a file write): the state file is written from snapshots (`persistence`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};

use tokio::sync::Notify;

use crate::state::Lifecycle;
use placed_core::policy::Policy;

use super::entry::Entry;

/// The managed containers and the ones handed back.
#[derive(Debug, Default)]
pub(crate) struct Containers {
    registry: Mutex<Registry>,
    /// Containers an orchestrator handed back (`Unmanage`), by id: discovery leaves them
    /// alone until they disappear or `Manage` takes them again. Kept in the state file.
    unmanaged: Mutex<BTreeSet<String>>,
    /// The managed containers, or where their cpuset files are, changed: the cpuset
    /// watches are brought up to date.
    pub watch_list: Notify,
    /// Containers whose cpuset must be checked against their record (a move failed on
    /// them), and the signal that there are some: the reconciliation checks them.
    rechecks: Mutex<BTreeSet<String>>,
    pub recheck_wanted: Notify,
}

impl Containers {
    /// Takes the registry lock. Holders never await or do I/O, so a panic inside cannot
    /// leave a half-done change that matters more than losing the daemon; poisoning is
    /// ignored rather than turning one panic into a dead daemon.
    pub fn registry(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The containers handed back, which discovery leaves alone.
    pub fn unmanaged(&self) -> MutexGuard<'_, BTreeSet<String>> {
        self.unmanaged.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Asks for the container's cpuset to be checked against its record, once whatever
    /// holds it now has ended.
    pub fn request_check(&self, id: &str) {
        self.rechecks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_owned());
        self.recheck_wanted.notify_one();
    }

    /// The containers asked to be checked since the last call.
    pub fn take_rechecks(&self) -> Vec<String> {
        std::mem::take(&mut *self.rechecks.lock().unwrap_or_else(|p| p.into_inner()))
            .into_iter()
            .collect()
    }

    /// Wakes every aggressive container but `except`, to be placed again: they share only
    /// units nobody holds, and what nobody holds just changed.
    pub fn wake_sharers(&self, except: &str) {
        let reg = self.registry();
        for (key, e) in &reg.entries {
            if key != except && matches!(e.record.policy, Policy::Aggressive) {
                e.wake.notify_one();
            }
        }
    }
}

#[derive(Debug, Default)]
pub struct Registry {
    pub entries: BTreeMap<String, Entry>,
}

impl Registry {
    /// The key of the container a reference names: its id (cgroup path), runtime id,
    /// name, or a unique prefix of the runtime id (12 hex digits as `docker ps` shows).
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
