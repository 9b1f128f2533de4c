//! Placements undone from outside: systemd (`AllowedCPUs=` at a `daemon-reload`), the
//! kubelet's CPU manager or `docker update --cpuset-cpus` rewrite a managed container's
//! cpuset, and the daemon notices within seconds, says so (an `Overridden` event, a metric,
//! a warning) and applies the container's override policy: reassert, adopt or leave
//! ([`placed_core::reconcile`]).
//!
//! Two ways in, one check: inotify on every managed container's `cpuset.cpus` and
//! `cpuset.mems` (cgroupfs reports each write to them as a modify, on v1 and v2), and a
//! comparison at every resync for what inotify cannot see (a parent narrowed on v2, a
//! watch that could not be added, a change while the daemon was down). An event only says
//! a file was written, and the daemon's own moves write the same files: the check compares
//! what the kernel holds with what the daemon enacted, under the container's operation
//! lock, so a move in progress is never taken for an override.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use nix::sys::inotify::{AddWatchFlags, WatchDescriptor};

use placed_host::cgroup::CgroupPath;

use super::core::Core;
use super::handle::Handle;
use super::inotify::Notifier;
use super::overrides;

/// The cpuset files whose writes are watched (the same names on v1 and v2).
const FILES: [&str; 2] = ["cpuset.cpus", "cpuset.mems"];

/// Writes arriving within this window are checked together.
const DEBOUNCE: Duration = Duration::from_millis(100);

/// The reconciliation, as the daemon starts it: one task that keeps a watch on every
/// managed container's cpuset files and checks a container when they are written.
#[derive(Debug)]
pub(crate) struct Reconciler {
    core: Arc<Core>,
}

impl Reconciler {
    pub fn new(core: &Arc<Core>) -> Self {
        Self { core: core.clone() }
    }

    /// Starts its task, which ends when the daemon stops. Without inotify, the resync's
    /// comparison and the checks asked for after failed moves are the only ways in.
    pub fn start(self) {
        let notifier = Notifier::new();
        if notifier.is_none() {
            tracing::warn!(
                "no inotify: cpusets changed outside placed are noticed at the next resync only"
            );
        }
        let core = self.core;
        let tracker = core.tasks.clone();
        tracker.spawn(async move {
            let mut watches = Watches::default();
            loop {
                if let Some(n) = &notifier {
                    watches.sync(&core, n);
                }
                tokio::select! {
                    _ = core.cancel.cancelled() => return,
                    _ = core.containers.watch_list.notified() => {}
                    _ = core.containers.recheck_wanted.notified() => {
                        for id in core.containers.take_rechecks() {
                            spawn_check(&core, &id);
                        }
                    }
                    wds = async {
                        match &notifier {
                            Some(n) => n.next().await,
                            None => std::future::pending().await,
                        }
                    } => {
                        // systemd and docker write cpus and mems one after the other: one
                        // check for both, not an override for each half.
                        tokio::time::sleep(DEBOUNCE).await;
                        for id in watches.owners(&wds) {
                            spawn_check(&core, &id);
                        }
                    }
                }
            }
        });
    }
}

/// The watches held, by container and by descriptor.
#[derive(Debug, Default)]
struct Watches {
    by_id: HashMap<String, Vec<WatchDescriptor>>,
    owner: HashMap<WatchDescriptor, String>,
}

impl Watches {
    /// Watches the managed containers not yet watched, and drops those no longer managed.
    /// A container whose files cannot be watched yet (on v2 they appear once placed first
    /// moves it) is tried again at the next pass.
    fn sync(&mut self, core: &Core, notifier: &Notifier) {
        let ids: Vec<String> = core.containers.registry().entries.keys().cloned().collect();
        let gone: Vec<String> = self
            .by_id
            .keys()
            .filter(|id| !ids.contains(id))
            .cloned()
            .collect();
        for id in gone {
            for wd in self.by_id.remove(&id).unwrap_or_default() {
                notifier.unwatch(wd);
                self.owner.remove(&wd);
            }
        }
        let root = core.node.host.cgroup_root().to_path_buf();
        for id in ids {
            if self.by_id.contains_key(&id) {
                continue;
            }
            let Ok(cg) = CgroupPath::parse(&id) else {
                continue;
            };
            let dir = cg.under(&root);
            let wds: Vec<WatchDescriptor> = FILES
                .iter()
                .filter_map(|f| notifier.watch(&dir.join(f), AddWatchFlags::IN_MODIFY))
                .collect();
            if wds.len() < FILES.len() {
                for wd in wds {
                    notifier.unwatch(wd);
                }
                continue;
            }
            for wd in &wds {
                self.owner.insert(*wd, id.clone());
            }
            self.by_id.insert(id, wds);
        }
    }

    /// The containers the events are about, each once.
    fn owners(&self, wds: &[WatchDescriptor]) -> Vec<String> {
        let mut ids: Vec<String> = wds
            .iter()
            .filter_map(|wd| self.owner.get(wd).cloned())
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }
}

/// Checks every managed container: the resync's fallback for what inotify missed.
pub(crate) fn check_all(core: &Arc<Core>) {
    core.containers.watch_list.notify_one();
    let ids: Vec<String> = core.containers.registry().entries.keys().cloned().collect();
    for id in ids {
        spawn_check(core, &id);
    }
}

/// Checks one container in a task of its own (it may wait for an operation to end). A
/// container with a check pending gets no second one beside it, but one more after it when
/// asked meanwhile: the pending check may have read the cpuset before the write that asked.
fn spawn_check(core: &Arc<Core>, id: &str) {
    let handle = Handle::new(core.clone(), id.to_owned());
    let first = handle
        .with(|e| {
            let first = !std::mem::replace(&mut e.check_pending, true);
            if !first {
                e.check_again = true;
            }
            first
        })
        .unwrap_or(false);
    if !first {
        return;
    }
    let tracker = core.tasks.clone();
    let cancel = core.cancel.clone();
    tracker.spawn(async move {
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                r = overrides::check(&handle) => {
                    if let Err(e) = r {
                        if !handle.vanished() {
                            tracing::warn!(container = %handle.id, error = %e.line(), "checking its cpuset failed");
                        }
                    }
                }
            }
            let again = handle
                .with(|e| {
                    let again = std::mem::take(&mut e.check_again);
                    e.check_pending = again;
                    again
                })
                .unwrap_or(false);
            if !again {
                return;
            }
        }
    });
}
