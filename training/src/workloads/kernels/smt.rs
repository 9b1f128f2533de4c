//! Instruction mixes that share a core's SMT siblings well or badly.
//!
//! A hyperthread pair shares issue ports: a latency-bound thread leaves most of them idle
//! for its sibling (SMT-friendly), a throughput-bound one takes them all (SMT-hostile).
//! The placement models must learn which placements co-locate siblings.

use std::hint::black_box;

use super::Kernel;
use super::runner::Work;

const CHUNK: u64 = 1 << 16;

/// One dependent chain of integer multiplies and one of floating-point divides: every
/// instruction waits for the previous result, so the ports are mostly free.
#[derive(Debug)]
pub struct Friendly;

impl Kernel for Friendly {
    fn worker(&self, work: &mut Work<'_>) {
        let mut x = black_box(0x1234_5678_9abc_def1u64 ^ work.index as u64);
        let mut y = black_box(1.000_001f64);
        let d = black_box(1.000_000_1f64);
        while !work.stopped() {
            for _ in 0..CHUNK {
                x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                // Dividing by a number close to one drifts slowly; the floor keeps it
                // normal so that the divide latency stays constant.
                y = (y / d).max(1e-3);
            }
            black_box((x, y));
            work.add(CHUNK);
        }
    }
}

/// Sixteen independent multiply-add streams: as many floating-point operations per
/// cycle as the core's ports take, vectorised where the target allows.
#[derive(Debug)]
pub struct Hostile;

impl Kernel for Hostile {
    fn worker(&self, work: &mut Work<'_>) {
        let mut acc = [0.5f64; 16];
        let a = black_box([0.999_99f64; 16]);
        let b = black_box([1e-6f64; 16]);
        while !work.stopped() {
            for _ in 0..CHUNK / 16 {
                for ((v, a), b) in acc.iter_mut().zip(&a).zip(&b) {
                    *v = *v * a + b;
                }
            }
            black_box(&mut acc);
            work.add(CHUNK);
        }
    }
}
