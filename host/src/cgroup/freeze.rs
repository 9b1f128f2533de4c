//! Freezing a cgroup for the length of a migration, with a guard that always thaws.
//!
//! The guard thaws when dropped, so every error path (and a panic that unwinds) thaws.
//! A process that is killed outright cannot run destructors; for an orderly shutdown the
//! daemon calls [`thaw_all`], which thaws every cgroup a live guard holds frozen.
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
    cgroup: CgroupPath,
    /// Whether we froze it (and so must thaw it); false if it was frozen before.
    owned: bool,
    id: u64,
    since: Instant,
}

/// A cgroup a live guard holds frozen: the guard's id, the backend, the cgroup.
type Held = (u64, Arc<dyn Backend>, CgroupPath);

/// Cgroups that live guards hold frozen, for [`thaw_all`].
static FROZEN: Mutex<Vec<Held>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn registry() -> MutexGuard<'static, Vec<Held>> {
    // A panic while holding this lock leaves the list intact; keep using it.
    FROZEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Freezes `cgroup` and waits until every task is frozen, at most `timeout`.
///
/// On a timeout the cgroup is thawed again before the error returns.
pub fn freeze(
    backend: &Arc<dyn Backend>,
    cgroup: &CgroupPath,
    timeout: Duration,
) -> Result<Frozen, Error> {
    let since = Instant::now();
    let owned = !backend.is_frozen(cgroup)?;
    let guard = Frozen {
        backend: backend.clone(),
        cgroup: cgroup.clone(),
        owned,
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        since,
    };
    if !owned {
        tracing::info!(cgroup = %cgroup, "already frozen; it stays frozen afterwards");
        return Ok(guard);
    }
    registry().push((guard.id, backend.clone(), cgroup.clone()));
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

    /// Thaws if we froze it. On failure the guard stays responsible: its drop tries
    /// once more, and [`thaw_all`] still knows the cgroup.
    fn release(&mut self) -> Result<(), Error> {
        if !self.owned {
            return Ok(());
        }
        self.backend.set_frozen(&self.cgroup, false)?;
        self.owned = false;
        registry().retain(|(id, ..)| *id != self.id);
        Ok(())
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        let cgroup = self.cgroup.clone();
        if let Err(e) = self.release() {
            // Nothing to return to; the daemon's next `thaw_all` or an operator must act.
            tracing::error!(cgroup = %cgroup, error = %e, "cannot thaw cgroup");
        }
    }
}

/// Thaws every cgroup that a live [`Frozen`] guard holds; returns how many it thawed.
/// For the daemon's shutdown path, after it has stopped the migrations.
pub fn thaw_all() -> usize {
    thaw_where(|_, _| true)
}

/// [`thaw_all`] restricted to the guards `select` picks; the others stay registered.
/// Tests use it to touch only their own fake kernel: the registry is process-global, and
/// the other tests of the binary hold guards of their own meanwhile.
pub(crate) fn thaw_where(select: impl Fn(&Arc<dyn Backend>, &CgroupPath) -> bool) -> usize {
    let held: Vec<Held> = {
        let mut all = registry();
        let (picked, kept) = std::mem::take(&mut *all)
            .into_iter()
            .partition(|(_, b, c)| select(b, c));
        *all = kept;
        picked
    };
    let mut thawed = 0;
    for (_, backend, cgroup) in held {
        match backend.set_frozen(&cgroup, false) {
            Ok(()) => thawed += 1,
            Err(e) => tracing::error!(cgroup = %cgroup, error = %e, "cannot thaw cgroup"),
        }
    }
    thawed
}
