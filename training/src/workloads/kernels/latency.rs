//! Dependent-load latency: a random pointer chase through a working set of a chosen
//! size, one cache line per hop, so that every load waits for the one before.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use super::Kernel;
use super::runner::Work;

/// `usize` slots per cache line: one hop per line.
const STRIDE: usize = 64 / std::mem::size_of::<usize>();
/// Hops between two counter updates.
const CHUNK: u64 = 1 << 14;

/// A pointer chase over `bytes` per thread.
#[derive(Debug)]
pub struct Chase {
    bytes: usize,
}

impl Chase {
    /// A chase over `bytes` per thread (at least a few lines).
    pub fn new(bytes: usize) -> Self {
        Self {
            bytes: bytes.max(64 * 16),
        }
    }
}

/// A single random cycle through `lines` cache lines, as slot indices: following
/// `next[i]` from any line visits every line once before returning (Sattolo's order).
pub fn cycle(lines: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..lines).collect();
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    let mut next = vec![0usize; lines * STRIDE];
    for (i, &line) in order.iter().enumerate() {
        let following = order[(i + 1) % lines];
        next[line * STRIDE] = following * STRIDE;
    }
    next
}

/// Follows `n` hops of `next` from `at`; returns where it stopped.
#[inline]
pub fn chase(next: &[usize], mut at: usize, n: u64) -> usize {
    for _ in 0..n {
        at = next[at];
    }
    std::hint::black_box(at)
}

impl Kernel for Chase {
    fn worker(&self, work: &mut Work<'_>) {
        let next = cycle(self.bytes / 64, work.index as u64);
        let mut at = 0usize;
        while !work.stopped() {
            at = chase(&next, at, CHUNK);
            work.add(CHUNK);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chase_visits_every_line_once_per_lap() {
        let lines = 1000;
        let next = cycle(lines, 7);
        let mut seen = vec![false; lines];
        let mut at = 0;
        for _ in 0..lines {
            assert!(!seen[at / STRIDE]);
            seen[at / STRIDE] = true;
            at = next[at];
        }
        assert_eq!(at, 0);
        assert!(seen.iter().all(|&s| s));
    }
}
