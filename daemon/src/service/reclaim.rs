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

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Connections and streams open at once below which closing them is not worth a trim.
pub const BURST: usize = 64;

/// Open connections and streams, their peak since the last trim, and whether a trim is
/// under way.
#[derive(Debug, Default)]
pub struct Reclaim {
    open: AtomicUsize,
    peak: AtomicUsize,
    trimming: AtomicBool,
}

/// The process's count: every connection slot and every `Watch` stream counts in it.
pub static RECLAIM: Reclaim = Reclaim::new();

impl Reclaim {
    pub const fn new() -> Self {
        Self {
            open: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
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
        let now = self.open.fetch_sub(1, Ordering::Relaxed).saturating_sub(1);
        let peak = self.peak.load(Ordering::Relaxed);
        peak >= BURST
            && now <= peak / 2
            && self
                .peak
                .compare_exchange(peak, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }

    /// Gives free memory back, in a blocking task when there is a runtime; one at a time.
    fn trim(&'static self) {
        if self.trimming.swap(true, Ordering::Acquire) {
            return;
        }
        let work = move || {
            trim_now();
            self.trimming.store(false, Ordering::Release);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn_blocking(work)),
            Err(_) => work(),
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
}
