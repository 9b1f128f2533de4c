//! Compute-bound kernels: everything in registers, no memory traffic to speak of.

use std::hint::black_box;

use super::Kernel;
use super::runner::Work;

/// Iterations between two counter updates: about a millisecond of work.
const CHUNK: u64 = 1 << 18;

/// Integer hashing: multiply, xor and shift on four independent streams.
#[derive(Debug)]
pub struct Int;

/// `n` hashing steps on four streams.
#[inline]
pub fn int_steps(state: &mut [u64; 4], n: u64) {
    for _ in 0..n {
        for s in state.iter_mut() {
            *s = s
                .wrapping_mul(0x5851_f42d_4c95_7f2d)
                .wrapping_add(0x1405_7b7e);
            *s ^= *s >> 29;
        }
    }
    black_box(state);
}

/// A starting state that differs per thread.
pub fn int_state(thread: usize) -> [u64; 4] {
    [1u64, 2, 3, 4].map(|s| s ^ (thread as u64).wrapping_mul(0x9e37))
}

impl Kernel for Int {
    fn worker(&self, work: &mut Work<'_>) {
        let mut state = int_state(work.index);
        while !work.stopped() {
            int_steps(&mut state, CHUNK);
            work.add(CHUNK);
        }
    }
}

/// Floating point: polynomial steps on four independent streams, kept finite.
#[derive(Debug)]
pub struct Float;

/// `n` polynomial steps on four streams.
#[inline]
pub fn float_steps(x: &mut [f64; 4], n: u64) {
    let a = black_box(0.999_999);
    let b = black_box(1e-7);
    for _ in 0..n {
        for v in x.iter_mut() {
            // Converges to b/(1-a) and stays finite (and normal) whatever the start.
            *v = (*v * a + b) * a + b;
        }
    }
    black_box(x);
}

impl Kernel for Float {
    fn worker(&self, work: &mut Work<'_>) {
        let mut x = [0.1f64, 0.2, 0.3, 0.4];
        while !work.stopped() {
            float_steps(&mut x, CHUNK);
            work.add(CHUNK);
        }
    }
}
