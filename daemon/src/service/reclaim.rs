//! Memory freed by closed connections and streams, given back to the system.
//!
//! 2,000 `Watch` streams opened and closed ten times took the daemon's resident memory
//! from 15.5 to 43.5 MB, and it stayed there. Nothing leaked: counting every allocation
//! (daemon/tests/watch_memory.rs) the live heap came back to the same size after each
//! cycle. The memory was freed into glibc's malloc, which keeps it for later (in each
//! thread's arena, and below the top of each heap: each connection's HTTP/2 and TLS buffers
//! are far below the size that would be mapped apart and unmapped on free), so resident
//! memory stayed at the peak of the largest burst and grew as more threads' arenas took
//! part. `malloc_trim(0)` gives back the free pages of every arena.
//!
//! It is called after a burst: once the connections and streams open at once fall to half
//! of their peak since the last trim, that peak having been at least [`BURST`]. A daemon
//! with a few long-lived clients never trims; one that served thousands trims once they
//! have gone, off the async threads.
//!
//! The trim waits for the burst to settle (no close for [`SETTLE`]): trimming at the
//! halving itself gave back only what had been freed by then. The rest of the burst closed
//! after it, below [`BURST`] or while the trim ran, and its pages stayed; how many depended
//! on how the closes and the trim's thread interleaved, so under load the daemon kept a
//! different share of each burst (CI's e2e memory test saw 2.2 MiB of one stay).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// Connections and streams open at once below which closing them is not worth a trim.
pub const BURST: usize = 64;

/// How long no connection or stream may close before a due trim runs: a burst's closes
/// come within milliseconds of each other, and each one's buffers are freed as it closes.
pub const SETTLE: Duration = Duration::from_millis(250);

/// The longest a due trim waits for the closes to settle.
pub const SETTLE_AT_MOST: Duration = Duration::from_secs(5);

/// Open connections and streams, their peak since the last trim, every close so far, and
/// whether a trim is due or under way.
#[derive(Debug, Default)]
pub struct Reclaim {
    open: AtomicUsize,
    peak: AtomicUsize,
    closes: AtomicU64,
    trimming: AtomicBool,
}

/// The process's count: every connection slot and every `Watch` stream counts in it.
pub static RECLAIM: Reclaim = Reclaim::new();

impl Reclaim {
    pub const fn new() -> Self {
        Self {
            open: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            closes: AtomicU64::new(0),
            trimming: AtomicBool::new(false),
        }
    }

    /// A connection or stream opened.
    pub fn opened(&self) {
        let now = self.open.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    /// One closed; trims if that ends a burst.
    pub fn closed(&'static self) {
        if self.close() {
            self.trim();
        }
    }

    /// Counts one closed; whether it ends a burst (the peak is then reset to what is open).
    fn close(&self) -> bool {
        self.closes.fetch_add(1, Ordering::Relaxed);
        let now = self.open.fetch_sub(1, Ordering::Relaxed).saturating_sub(1);
        let peak = self.peak.load(Ordering::Relaxed);
        peak >= BURST
            && now <= peak / 2
            && self
                .peak
                .compare_exchange(peak, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }

    /// Gives free memory back once the closes have settled, in a blocking task when there
    /// is a runtime; one at a time, and a burst ending while one is due joins it.
    fn trim(&'static self) {
        if self.trimming.swap(true, Ordering::Acquire) {
            return;
        }
        let work = move || {
            trim_now();
            self.trimming.store(false, Ordering::Release);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn(async move {
                self.settled().await;
                // Err only when the runtime is shutting down: nothing to give back for.
                let _ = tokio::task::spawn_blocking(work).await;
            })),
            Err(_) => work(),
        }
    }

    /// Returns once nothing has closed for [`SETTLE`], or after [`SETTLE_AT_MOST`] of
    /// steady closes: a daemon whose clients never stop coming and going still trims.
    async fn settled(&self) {
        let give_up = tokio::time::Instant::now() + SETTLE_AT_MOST;
        loop {
            let before = self.closes.load(Ordering::Relaxed);
            tokio::time::sleep(SETTLE).await;
            if self.closes.load(Ordering::Relaxed) == before
                || tokio::time::Instant::now() >= give_up
            {
                return;
            }
        }
    }
}

/// `malloc_trim(0)`: the free pages of every malloc arena back to the system.
pub fn trim_now() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks malloc's own free lists; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_ends_when_half_of_its_peak_has_closed_and_small_churn_never_trims() {
        let r = Reclaim::new();
        // A few clients coming and going: never a burst.
        for _ in 0..1000 {
            r.opened();
            r.opened();
            assert!(!r.close());
            assert!(!r.close());
        }
        for _ in 0..100 {
            r.opened();
        }
        let trims: usize = (0..100).map(|_| usize::from(r.close())).sum();
        // 100 -> 50 ends the burst; what follows is below BURST.
        assert_eq!(trims, 1);
        // A burst closing gradually trims at each halving while the rest is still a burst.
        for _ in 0..(4 * BURST) {
            r.opened();
        }
        let closes: Vec<bool> = (0..(4 * BURST)).map(|_| r.close()).collect();
        let at: Vec<usize> = (0..closes.len()).filter(|&i| closes[i]).collect();
        // Open after each trim: 2 x BURST, BURST, BURST / 2.
        assert_eq!(
            at,
            [2 * BURST - 1, 3 * BURST - 1, 3 * BURST + BURST / 2 - 1]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_trim_waits_for_the_closes_to_settle_but_not_for_ever() {
        static R: Reclaim = Reclaim::new();
        let start = tokio::time::Instant::now();
        // Closes every 100 ms for a second: the trim waits a quiet SETTLE after the last.
        let closing = tokio::spawn(async {
            for _ in 0..10 {
                R.opened();
                tokio::time::sleep(Duration::from_millis(100)).await;
                R.close();
            }
        });
        R.settled().await;
        let waited = start.elapsed();
        assert!(closing.is_finished(), "settled while closes went on");
        assert!(waited >= Duration::from_secs(1) + SETTLE - Duration::from_millis(100));
        assert!(waited < Duration::from_secs(1) + 2 * SETTLE + Duration::from_millis(100));
        // Closes that never stop: it gives up after SETTLE_AT_MOST.
        let start = tokio::time::Instant::now();
        let churn = tokio::spawn(async {
            loop {
                R.opened();
                tokio::time::sleep(Duration::from_millis(100)).await;
                R.close();
            }
        });
        R.settled().await;
        churn.abort();
        let waited = start.elapsed();
        assert!(waited >= SETTLE_AT_MOST && waited < SETTLE_AT_MOST + 2 * SETTLE);
    }
}
