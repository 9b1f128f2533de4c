//! Memory bandwidth: the STREAM triad `a[i] = b[i] + s * c[i]` over arrays far larger
//! than the last-level cache.

use std::hint::black_box;

use super::Kernel;
use super::runner::Work;

/// Elements between two counter updates (1.5 MiB of traffic, well under a millisecond).
const CHUNK: usize = 1 << 16;
/// Bytes one triad element moves: two loads and a store of f64.
pub const BYTES_PER_ELEMENT: u64 = 24;

/// The triad, each thread on arrays of its own, first touched by that thread so that
/// they live on its node (as STREAM with OpenMP does).
#[derive(Debug)]
pub struct Triad {
    /// Elements per array per thread.
    elements: usize,
}

impl Triad {
    /// Arrays that together hold `total_bytes` across `threads` threads.
    pub fn new(total_bytes: usize, threads: usize) -> Self {
        let per_thread = total_bytes / threads.max(1) / 3 / 8;
        Self {
            elements: per_thread.max(CHUNK).next_multiple_of(CHUNK),
        }
    }
}

/// `a = b + s * c` over the three slices (as long as the shortest).
#[inline]
pub fn triad(a: &mut [f64], b: &[f64], c: &[f64], s: f64) {
    for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
        *a = b + s * c;
    }
    black_box(a);
}

impl Kernel for Triad {
    fn worker(&self, work: &mut Work<'_>) {
        let mut a = vec![0.0f64; self.elements];
        let b = vec![1.0f64; self.elements];
        let c = vec![2.0f64; self.elements];
        let s = black_box(3.0);
        while !work.stopped() {
            for ((a, b), c) in a
                .chunks_mut(CHUNK)
                .zip(b.chunks(CHUNK))
                .zip(c.chunks(CHUNK))
            {
                triad(a, b, c, s);
                work.add(CHUNK as u64 * BYTES_PER_ELEMENT);
                if work.stopped() {
                    return;
                }
            }
        }
    }
}
