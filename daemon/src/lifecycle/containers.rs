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

/// What a reference names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Lookup {
    Found(String),
    Missing,
    /// Several containers: their ids.
    Ambiguous(Vec<String>),
}

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
    /// The container a reference names: a cgroup path names exactly that cgroup (never
    /// a container below it); otherwise its runtime id or name, or a unique prefix of its
    /// runtime id (12 hex digits as `docker ps` shows). A name or prefix two containers
    /// share is ambiguous, never a guess.
    pub fn lookup(&self, reference: &str) -> Lookup {
        if reference.contains('/') {
            let path = format!("/{}", reference.trim_start_matches('/'));
            return if self.entries.contains_key(&path) {
                Lookup::Found(path)
            } else {
                Lookup::Missing
            };
        }
        let exact: Vec<String> = self
            .entries
            .iter()
            .filter(|(_, e)| e.record.runtime_id == reference || e.record.name == reference)
            .map(|(k, _)| k.clone())
            .collect();
        match exact.len() {
            1 => return Lookup::Found(exact.into_iter().next().unwrap_or_default()),
            0 => {}
            _ => return Lookup::Ambiguous(exact),
        }
        if reference.len() < 6 {
            return Lookup::Missing;
        }
        // Prefixes of runtime ids (Docker's hex ids), never of cgroup paths.
        let prefixed: Vec<String> = self
            .entries
            .iter()
            .filter(|(_, e)| {
                !e.record.runtime_id.starts_with('/') && e.record.runtime_id.starts_with(reference)
            })
            .map(|(k, _)| k.clone())
            .collect();
        match prefixed.len() {
            0 => Lookup::Missing,
            1 => Lookup::Found(prefixed.into_iter().next().unwrap_or_default()),
            _ => Lookup::Ambiguous(prefixed),
        }
    }

    /// The managed containers nested in `cgroup` or containing it: placed cannot manage a
    /// cgroup and one below it (a parent's cpuset bounds its children's).
    pub fn nested_with(&self, cgroup: &str) -> Vec<String> {
        let below = |a: &str, b: &str| {
            a.len() > b.len() && a.starts_with(b) && a.as_bytes()[b.len()] == b'/'
        };
        self.entries
            .keys()
            .filter(|k| below(k, cgroup) || below(cgroup, k))
            .cloned()
            .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::ContainerRecord;
    use placed_host::cgroup::CgroupPath;
    use placed_host::containers::{Container, Runtime};
    use tokio_util::sync::CancellationToken;

    fn registry(containers: &[(&str, &str, &str)]) -> Registry {
        let mut r = Registry::default();
        for (id, name, runtime_id) in containers {
            let cgroup = CgroupPath::parse(id).unwrap();
            let record = ContainerRecord {
                runtime_id: (*runtime_id).to_owned(),
                ..ContainerRecord::new(id, name, 1, Policy::Observe)
            };
            let container = Container {
                runtime: Runtime::Cgroup,
                id: (*runtime_id).to_owned(),
                name: Some((*name).to_owned()),
                pod: None,
                cgroup,
            };
            r.entries.insert(
                (*id).to_owned(),
                Entry::new(record, container, CancellationToken::new()),
            );
        }
        r
    }

    #[test]
    fn a_path_names_exactly_that_cgroup_never_one_below_it() {
        let r = registry(&[("/placed-e2e/w1", "w1", "/placed-e2e/w1")]);
        // Issue 24: `Manage("/placed-e2e")` changed w1 through a prefix of its id.
        assert_eq!(r.lookup("/placed-e2e"), Lookup::Missing);
        assert_eq!(r.lookup("placed-e2e"), Lookup::Missing);
        assert_eq!(
            r.lookup("placed-e2e/w1"),
            Lookup::Found("/placed-e2e/w1".into())
        );
        assert_eq!(r.lookup("w1"), Lookup::Found("/placed-e2e/w1".into()));
    }

    #[test]
    fn a_shared_name_or_prefix_is_ambiguous_with_the_candidates() {
        let r = registry(&[
            ("/a/w1", "w1", "/a/w1"),
            ("/b/w1", "w1", "/b/w1"),
            ("/docker/3f2a11", "web", "3f2a11aaaa"),
            ("/docker/3f2a22", "db", "3f2a11bbbb"),
        ]);
        assert_eq!(
            r.lookup("w1"),
            Lookup::Ambiguous(vec!["/a/w1".into(), "/b/w1".into()])
        );
        assert!(matches!(r.lookup("3f2a11"), Lookup::Ambiguous(c) if c.len() == 2));
        assert_eq!(r.lookup("3f2a11a"), Lookup::Found("/docker/3f2a11".into()));
    }

    #[test]
    fn nesting_is_found_both_ways_and_only_along_path_components() {
        let r = registry(&[("/t/w1", "w1", "/t/w1"), ("/tt", "tt", "/tt")]);
        assert_eq!(r.nested_with("/t"), ["/t/w1"]);
        assert_eq!(r.nested_with("/t/w1/inner"), ["/t/w1"]);
        assert!(r.nested_with("/t/w2").is_empty());
    }
}
