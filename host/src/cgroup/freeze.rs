//! Freezing a cgroup for the length of a migration, with a guard that always thaws.
//!
//! The guard thaws when dropped, so every error path (and a panic that unwinds) thaws.
//! A process that is killed outright cannot run destructors; for an orderly shutdown the
//! owner of the hierarchy calls [`super::Cgroups::thaw_all`], which thaws every cgroup a live
//! guard of that hierarchy holds frozen. The [`Registry`] of those guards belongs to the
//! [`super::Cgroups`] (and so to the host object) that froze them, not to the process: two
//! hosts in one process (two fake kernels in one test binary) never thaw each other's.
//! A cgroup that was already frozen (for example by `docker pause`) is left frozen.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::{Backend, CgroupPath, Error};

/// A cgroup held frozen; thawed on [`Frozen::thaw`] or on drop.
#[derive(Debug)]
#[must_use = "the cgroup is thawed as soon as the guard is dropped"]
pub struct Frozen {
    backend: Arc<dyn Backend>,
    registry: Arc<Registry>,
    cgroup: CgroupPath,
    /// Whether we froze it (and so must thaw it); false if it was frozen before.
    owned: bool,
    id: u64,
    since: Instant,
}

/// The cgroups that live guards of one hierarchy hold frozen, for a thaw at shutdown.
#[derive(Debug, Default)]
pub struct Registry {
    /// Each guard's id and cgroup.
    held: Mutex<Vec<(u64, CgroupPath)>>,
    next_id: AtomicU64,
}

impl Registry {
    fn held(&self) -> MutexGuard<'_, Vec<(u64, CgroupPath)>> {
        // A panic while holding this lock leaves the list intact; keep using it.
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn forget(&self, id: u64) {
        self.held().retain(|(i, _)| *i != id);
    }

    /// Thaws every cgroup a live guard holds and forgets those guards (their drop then
    /// does nothing); returns how many it thawed. One that cannot be thawed stays
    /// registered, so that its guard's drop tries again.
    pub(super) fn thaw_all(&self, backend: &dyn Backend) -> usize {
        let held = std::mem::take(&mut *self.held());
        let mut thawed = 0;
        for (id, cgroup) in held {
            match backend.set_frozen(&cgroup, false) {
                Ok(()) => thawed += 1,
                Err(e) => {
                    tracing::error!(cgroup = %cgroup, error = %e, "cannot thaw cgroup");
                    self.held().push((id, cgroup));
                }
            }
        }
        thawed
    }
}

/// Freezes `cgroup` and waits until every task is frozen, at most `timeout`; the guard is
/// registered in `registry` until it thaws.
///
/// On a timeout the cgroup is thawed again before the error returns.
pub(super) fn freeze(
    backend: &Arc<dyn Backend>,
    registry: &Arc<Registry>,
    cgroup: &CgroupPath,
    timeout: Duration,
) -> Result<Frozen, Error> {
    let since = Instant::now();
    let owned = !backend.is_frozen(cgroup)?;
    let guard = Frozen {
        backend: backend.clone(),
        registry: registry.clone(),
        cgroup: cgroup.clone(),
        owned,
        id: registry.next_id.fetch_add(1, Ordering::Relaxed),
        since,
    };
    if !owned {
        tracing::info!(cgroup = %cgroup, "already frozen; it stays frozen afterwards");
        return Ok(guard);
    }
    registry.held().push((guard.id, cgroup.clone()));
    // From here on, dropping `guard` thaws, including when the write itself fails halfway
    // (v1 FREEZING state).
    backend.set_frozen(cgroup, true)?;
    let mut pause = Duration::from_micros(200);
    loop {
        if backend.is_frozen(cgroup)? {
            tracing::debug!(cgroup = %cgroup, took = ?since.elapsed(), "frozen");
            return Ok(guard);
        }
        if since.elapsed() >= timeout {
            drop(guard);
            return Err(Error::FreezeTimeout {
                cgroup: cgroup.to_string(),
                waited: timeout,
            });
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

impl Frozen {
    /// Thaws now, reporting a failure instead of logging it; returns how long the cgroup
    /// was frozen.
    pub fn thaw(mut self) -> Result<Duration, Error> {
        let held = self.since.elapsed();
        // After release() the guard owns nothing, so its drop does nothing.
        self.release().map(|()| held)
    }

    /// Whether this guard froze the cgroup (false: it was frozen before and stays so).
    pub fn owned(&self) -> bool {
        self.owned
    }

    pub fn cgroup(&self) -> &CgroupPath {
        &self.cgroup
    }

    /// Thaws if we froze it and no `thaw_all` did meanwhile. On failure the guard stays
    /// responsible: its drop tries once more, and `thaw_all` still knows the cgroup.
    fn release(&mut self) -> Result<(), Error> {
        let registered = self.registry.held().iter().any(|(id, _)| *id == self.id);
        if !self.owned || !registered {
            self.owned = false;
            return Ok(());
        }
        self.backend.set_frozen(&self.cgroup, false)?;
        self.owned = false;
        self.registry.forget(self.id);
        Ok(())
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        let cgroup = self.cgroup.clone();
        if let Err(e) = self.release() {
            // Nothing to return to; the owner's next `thaw_all` or an operator must act.
            tracing::error!(cgroup = %cgroup, error = %e, "cannot thaw cgroup");
        }
    }
}
