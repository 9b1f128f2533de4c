//! inotify on the cgroup tree, awaited from async code: discovery watches the directories
//! containers appear in, reconciliation the cpuset files of the managed containers.
//!
//! Both fall back to their periodic pass where inotify is missing or out of watches, so
//! every failure here is an absence, never an error.

use std::os::fd::AsFd;
use std::path::Path;

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};
use tokio::io::unix::AsyncFd;

/// One inotify instance registered with the async runtime.
pub(super) struct Notifier {
    fd: AsyncFd<InotifyFd>,
}

impl Notifier {
    /// A new instance; `None` where the kernel or the runtime refuses one.
    pub fn new() -> Option<Self> {
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
        // SAFETY: InotifyFd owns the inotify descriptor (an OwnedFd inside nix's Inotify),
        // so it stays open and the same for as long as the AsyncFd holds it, and
        // as_raw_fd always returns that one descriptor.
        let fd = unsafe { AsyncFd::register(InotifyFd(inotify)) }.ok()?;
        Some(Self { fd })
    }

    /// Watches `path` for `flags`; `None` when it cannot (gone, or no watches left).
    pub fn watch(&self, path: &Path, flags: AddWatchFlags) -> Option<WatchDescriptor> {
        self.fd.get_ref().0.add_watch(path, flags).ok()
    }

    /// Stops a watch; one whose file is gone was removed by the kernel already.
    pub fn unwatch(&self, wd: WatchDescriptor) {
        let _ = self.fd.get_ref().0.rm_watch(wd);
    }

    /// Waits until something happened, and says to which watches (at least one event).
    pub async fn next(&self) -> Vec<WatchDescriptor> {
        loop {
            let Ok(mut guard) = self.fd.readable().await else {
                return std::future::pending().await;
            };
            match guard.try_io(|fd| fd.get_ref().0.read_events().map_err(std::io::Error::from)) {
                Ok(Ok(events)) if !events.is_empty() => {
                    return events.into_iter().map(|e| e.wd).collect();
                }
                Ok(_) | Err(_) => continue,
            }
        }
    }
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifier").finish_non_exhaustive()
    }
}

/// AsyncFd wants `AsRawFd`; nix's Inotify offers `AsFd`.
struct InotifyFd(Inotify);

impl std::os::fd::AsRawFd for InotifyFd {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.0.as_fd().as_raw_fd()
    }
}
