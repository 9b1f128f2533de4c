//! Mixes of the other kernels in fixed proportions, for workloads whose sensitivity to
//! a placement lies between the pure ones. One operation is one round of every part.

use super::Kernel;
use super::bandwidth::triad;
use super::compute::{float_steps, int_state, int_steps};
use super::latency::{chase, cycle};
use super::runner::Work;
use super::sharing::{Line, false_share};

/// Triad elements per round (and steps of integer work to balance them).
const TRIAD: usize = 1 << 14;
const INT_STEPS: u64 = 1 << 14;

/// Streaming through memory, then computing on registers.
#[derive(Debug)]
pub struct MemoryCompute {
    elements: usize,
}

impl MemoryCompute {
    /// Arrays of `bytes_per_thread` bytes in all per thread.
    pub fn new(bytes_per_thread: usize) -> Self {
        Self {
            elements: (bytes_per_thread / 3 / 8)
                .max(TRIAD)
                .next_multiple_of(TRIAD),
        }
    }
}

impl Kernel for MemoryCompute {
    fn worker(&self, work: &mut Work<'_>) {
        let mut a = vec![0.0f64; self.elements];
        let b = vec![1.0f64; self.elements];
        let c = vec![2.0f64; self.elements];
        let mut state = int_state(work.index);
        let mut at = 0;
        while !work.stopped() {
            let end = at + TRIAD;
            triad(&mut a[at..end], &b[at..end], &c[at..end], 3.0);
            at = if end == self.elements { 0 } else { end };
            int_steps(&mut state, INT_STEPS);
            work.add(1);
        }
    }
}

/// Hops per round through a cache-sized chase, increments of a falsely shared line, and
/// floating-point steps.
const HOPS: u64 = 1 << 10;
const SHARED: u64 = 1 << 10;
const FLOAT_STEPS: u64 = 1 << 12;

/// Waiting on the cache, on other cores, and on the FP units in turn.
#[derive(Debug)]
pub struct CacheSharing {
    chase_bytes: usize,
    line: Line,
}

impl CacheSharing {
    /// A chase over `chase_bytes` per thread.
    pub fn new(chase_bytes: usize) -> Self {
        Self {
            chase_bytes: chase_bytes.max(64 * 16),
            line: Line::default(),
        }
    }
}

impl Kernel for CacheSharing {
    fn worker(&self, work: &mut Work<'_>) {
        let next = cycle(self.chase_bytes / 64, 1000 + work.index as u64);
        let mut at = 0;
        let mut x = [0.1f64, 0.2, 0.3, 0.4];
        while !work.stopped() {
            at = chase(&next, at, HOPS);
            false_share(&self.line, work.index, SHARED);
            float_steps(&mut x, FLOAT_STEPS);
            work.add(1);
        }
    }
}
