//! Containers appearing and disappearing: the cgroup directories where runtimes create
//! containers are watched with inotify (a `mkdir` or `rmdir` there starts a resync within
//! a fraction of a second), and the whole tree is listed again every `resync_interval` in
//! case an event was missed or a runtime nests deeper than the watched directories.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use nix::sys::inotify::AddWatchFlags;

use placed_core::fault::Fault;
use placed_host::cgroup::CgroupPath;
use placed_host::containers::Container;

use super::core::Core;
use super::inotify::Notifier;
use super::reconcile;
use super::register::register;
use super::requests::ManageRequest;

/// Changes arriving within this window are handled by one resync.
const DEBOUNCE: Duration = Duration::from_millis(50);

/// Discovery, as the daemon starts it: one task that resyncs at start, on every change in
/// a watched directory, and every `containers.resync_interval`.
#[derive(Debug)]
pub(crate) struct Discovery {
    core: Arc<Core>,
}

impl Discovery {
    pub fn new(core: &Arc<Core>) -> Self {
        Self { core: core.clone() }
    }

    /// Starts its task, which ends when the daemon stops.
    pub fn start(self) {
        let core = self.core;
        warn_missing(&core);
        let tracker = core.tasks.clone();
        tracker.spawn(async move {
            let mut watcher = Watcher::new(&core);
            loop {
                resync(&core).await;
                let interval = core.settings.config().containers.resync_interval;
                tokio::select! {
                    _ = core.cancel.cancelled() => return,
                    _ = tokio::time::sleep(interval) => {}
                    _ = watcher.changed() => tokio::time::sleep(DEBOUNCE).await,
                }
            }
        });
    }
}

/// A configured plain cgroup that does not exist is accepted (it may be created later) but
/// said, with the warnings `placectl status` shows: a typo would otherwise manage nothing
/// in silence.
fn warn_missing(core: &Core) {
    for c in &core.settings.config().containers.cgroups {
        let missing =
            CgroupPath::parse(c).is_ok_and(|cg| !core.node.host.cgroup_exists(&cg).unwrap_or(true));
        if missing {
            core.warn(format!(
                "containers.cgroups entry {c} does not exist (yet): its children are managed once it does"
            ));
        }
    }
}

/// Lists the host's containers: new ones are registered, vanished ones forgotten.
async fn resync(core: &Arc<Core>) {
    let task_core = core.clone();
    let listed = tokio::task::spawn_blocking(move || wanted(&task_core)).await;
    let found = match listed {
        Ok(Ok(found)) => found,
        Ok(Err(e)) => {
            core.telemetry.metrics.error("discovery");
            tracing::warn!(error = %placed_core::text::Chain(&e), "cannot list containers");
            return;
        }
        Err(e) => {
            tracing::error!(error = %e, "discovery task failed");
            return;
        }
    };
    let known: Vec<String> = core.containers.registry().entries.keys().cloned().collect();
    let mut renamed = false;
    // A container handed back (Unmanage) stays unmanaged while it exists: adopting it again
    // with the default policy would undo the orchestrator's decision at the next resync.
    let (handed_back, gone) = drop_vanished_unmanaged(core);
    for c in found {
        let id = c.cgroup.to_string();
        if handed_back.contains(&id) {
            continue;
        }
        if !known.contains(&id) {
            // A container a reservation was made for (NRI's CreateContainer) claims it.
            let claim = core
                .reservations
                .for_container(&c.id)
                .and_then(|id| core.reservations.get(&id));
            let settings = claim.as_ref().map(|r| ManageRequest {
                container: id.clone(),
                vcpus: Some(r.vcpus),
                policy: Some(r.policy.clone()),
                labels: r.labels.clone(),
                ..ManageRequest::default()
            });
            if let Err(e) = register(core, c, settings.as_ref(), claim.as_ref())
                .await
                .map(|_| ())
            {
                tracing::warn!(error = %e.line(), "cannot register a discovered container");
            }
        } else if let Some(name) = c.name {
            // An engine may name a container only after its cgroup appeared, and
            // `docker rename` changes it later: references by name must follow.
            let mut reg = core.containers.registry();
            if let Some(entry) = reg.entries.get_mut(&c.cgroup.to_string()) {
                if entry.record.name != name {
                    tracing::info!(container = %c.cgroup, from = %entry.record.name, to = %name, "renamed");
                    entry.record.name = name;
                    renamed = true;
                }
            }
        }
    }
    if renamed || gone {
        if let Err(e) = core.persist().await {
            tracing::warn!(error = %e.line(), "cannot save the state after a rename");
        }
    }
    // Every managed container, found by discovery or handed over by Manage, must still exist.
    for id in known {
        let Ok(cg) = CgroupPath::parse(&id) else {
            continue;
        };
        let exists = core.node.host.cgroup_exists(&cg).unwrap_or(true);
        if !exists {
            core.forget(&id).await;
        }
    }
    // And be where placed put it: the fallback for what the cpuset watches missed.
    reconcile::check_all(core);
}

/// The containers handed back that still exist; those gone are forgotten (`true` when
/// any was), so that a new container in the same cgroup is managed as usual.
fn drop_vanished_unmanaged(core: &Core) -> (Vec<String>, bool) {
    let mut unmanaged = core.containers.unmanaged();
    let before = unmanaged.len();
    unmanaged.retain(|id| {
        CgroupPath::parse(id).is_ok_and(|cg| core.node.host.cgroup_exists(&cg).unwrap_or(true))
    });
    (
        unmanaged.iter().cloned().collect(),
        unmanaged.len() < before,
    )
}

/// The containers discovery manages on its own: those of the configured runtimes, and the
/// children of the configured plain cgroups.
fn wanted(core: &Core) -> Result<Vec<Container>, placed_host::enact::Error> {
    let config = core.settings.config();
    let runtimes = &config.containers.runtimes;
    let mut out: Vec<Container> = if runtimes.is_empty() {
        Vec::new()
    } else {
        core.node
            .host
            .list()?
            .into_iter()
            .filter(|c| runtimes.iter().any(|r| *r == c.runtime.to_string()))
            .collect()
    };
    for prefix in &config.containers.cgroups {
        let Ok(parent) = CgroupPath::parse(prefix) else {
            continue;
        };
        let children = match core.node.host.cgroup_children(&parent) {
            Ok(c) => c,
            Err(e) if e.fault() == Fault::NotFound => continue,
            Err(e) => return Err(e),
        };
        for child in children {
            match core.node.host.resolve(&child.to_string()) {
                Ok(c) => out.push(c),
                Err(e) => {
                    tracing::debug!(cgroup = %child, error = %placed_core::text::Chain(&e), "skipped")
                }
            }
        }
    }
    Ok(out)
}

/// inotify on the directories containers appear in. Without inotify (or with too many
/// watches), discovery falls back to the periodic resync alone.
struct Watcher {
    notifier: Option<Notifier>,
}

impl Watcher {
    fn new(core: &Core) -> Self {
        let notifier = Notifier::new().filter(|n| {
            let root = core.node.host.cgroup_root().to_path_buf();
            let mut dirs: Vec<PathBuf> = vec![root.clone()];
            // Where the runtimes put containers, on v1 (per-controller) and v2 alike.
            for sub in [
                "docker",
                "system.slice",
                "kubepods",
                "kubepods.slice",
                "machine.slice",
                "lxc.payload",
                "libpod_parent",
            ] {
                dirs.push(root.join(sub));
            }
            for c in &core.settings.config().containers.cgroups {
                if let Ok(p) = CgroupPath::parse(c) {
                    dirs.push(p.under(&root));
                }
            }
            let flags =
                AddWatchFlags::IN_CREATE | AddWatchFlags::IN_DELETE | AddWatchFlags::IN_ONLYDIR;
            let mut any = false;
            for d in dirs.iter().filter(|d| d.is_dir()) {
                any |= n.watch(d, flags).is_some();
            }
            any
        });
        if notifier.is_none() {
            tracing::warn!(
                "no inotify on the cgroup tree: containers are found by periodic resync only"
            );
        }
        Self { notifier }
    }

    /// Resolves when something changed in a watched directory.
    async fn changed(&mut self) {
        match &self.notifier {
            Some(n) => {
                n.next().await;
            }
            None => std::future::pending().await,
        }
    }
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher")
            .field("inotify", &self.notifier.is_some())
            .finish()
    }
}
