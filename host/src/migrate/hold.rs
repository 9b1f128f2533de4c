//! A hold point for tests: where a move waits, at a known point, until a test lets it go.
//!
//! Tests of what happens when a daemon is stopped or killed, or `placectl move` is
//! interrupted, in the middle of a migration need the signal to land mid-move. Racing a
//! throttled move's pace against the test's own polling is a timing assumption that a busy
//! machine breaks (a 256 MiB move at 8 MiB/s finished before the stop arrived). With a hold
//! point the workers move their first chunk of work, announce it, and wait there until the
//! test removes the release file or the move is cancelled; what the test then checks no
//! longer depends on how fast anything ran.
//!
//! Only tests set [`HOLD_ENV`]; `placed` logs a warning at start when it is set.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The environment variable naming the release file (`placed` and `placectl move`).
pub const HOLD_ENV: &str = "PLACED_TEST_HOLD_MIGRATION";

/// While [`HoldPoint::release`] exists, a move waits after its first chunk of work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoldPoint {
    /// The file whose existence holds the move; removing it lets the move go on.
    pub release: PathBuf,
}

impl HoldPoint {
    /// The hold point [`HOLD_ENV`] names, if it is set.
    pub fn from_env() -> Option<Self> {
        std::env::var_os(HOLD_ENV)
            .filter(|v| !v.is_empty())
            .map(|v| Self {
                release: PathBuf::from(v),
            })
    }

    /// The file a held move creates when it arrives: `<release>.reached`.
    pub fn reached_marker(&self) -> PathBuf {
        let mut name = self.release.as_os_str().to_owned();
        name.push(".reached");
        PathBuf::from(name)
    }

    /// Called by a worker after each chunk: the first arrival announces itself, and every
    /// worker waits while the release file exists, unless the move is cancelled.
    pub(super) fn wait(&self, announced: &AtomicBool, cancel: &AtomicBool) {
        if !exists(&self.release) {
            return;
        }
        if !announced.swap(true, Ordering::Relaxed) {
            let marker = self.reached_marker();
            if let Err(e) = std::fs::write(&marker, b"held\n") {
                tracing::warn!(marker = %marker.display(), error = %e, "cannot announce the migration hold point");
            }
            tracing::warn!(release = %self.release.display(), "migration held for a test");
        }
        while exists(&self.release) && !cancel.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_held_move_announces_itself_waits_and_goes_on_when_released_or_cancelled() {
        let dir = tempfile::tempdir().unwrap();
        let hold = HoldPoint {
            release: dir.path().join("hold"),
        };
        let (announced, cancel) = (AtomicBool::new(false), AtomicBool::new(false));
        // No release file: nothing waits, nothing is announced.
        hold.wait(&announced, &cancel);
        assert!(!hold.reached_marker().exists());

        std::fs::write(&hold.release, b"").unwrap();
        let held = Arc::new((hold.clone(), AtomicBool::new(false), AtomicBool::new(false)));
        let worker = {
            let held = held.clone();
            std::thread::spawn(move || held.0.wait(&held.1, &held.2))
        };
        // The worker announces its arrival, then stays until the file goes: the test
        // waits for the event, not for a time.
        while !hold.reached_marker().exists() {
            std::thread::yield_now();
        }
        assert!(!worker.is_finished());
        std::fs::remove_file(&hold.release).unwrap();
        worker.join().unwrap();

        // Cancelled while held: the wait ends without a release.
        std::fs::write(&hold.release, b"").unwrap();
        let cancelled = AtomicBool::new(true);
        hold.wait(&AtomicBool::new(false), &cancelled);
    }
}
