//! Data shared between threads: the cost is cache-line transfers between cores, which
//! depends on whether the threads share a core, a cache or a node.

use std::sync::Mutex;
use std::sync::PoisonError;
use std::sync::atomic::{AtomicU64, Ordering};

use super::Kernel;
use super::runner::Work;

/// Spins before yielding, so that a ring with more threads than PUs still moves.
const SPINS_BEFORE_YIELD: u32 = 1 << 12;

/// A token passed round the threads through one atomic: thread `i` waits until the
/// count is `i` modulo the thread count, then increments it. One operation is a hand-off.
#[derive(Debug, Default)]
pub struct PingPong {
    token: AtomicU64,
}

impl Kernel for PingPong {
    fn worker(&self, work: &mut Work<'_>) {
        let threads = work.threads as u64;
        let me = work.index as u64;
        let mut spins = 0u32;
        while !work.stopped() {
            let t = self.token.load(Ordering::Acquire);
            if t % threads == me {
                self.token.store(t + 1, Ordering::Release);
                work.add(1);
                spins = 0;
            } else {
                spins += 1;
                if spins >= SPINS_BEFORE_YIELD {
                    spins = 0;
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
        }
    }
}

/// Every thread updates one small table under one lock.
#[derive(Debug, Default)]
pub struct Lock {
    table: Mutex<[u64; 8]>,
}

/// Lock acquisitions between two counter updates.
const LOCK_CHUNK: u64 = 256;

impl Kernel for Lock {
    fn worker(&self, work: &mut Work<'_>) {
        let mut x = work.index as u64;
        while !work.stopped() {
            for _ in 0..LOCK_CHUNK {
                let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
                for v in table.iter_mut() {
                    *v = v.wrapping_add(x);
                }
                x = table[(x % 8) as usize];
                drop(table);
            }
            work.add(LOCK_CHUNK);
        }
    }
}

/// Eight counters on one cache line.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct Line(pub [AtomicU64; 8]);

/// Each thread increments its own counter, but all counters share one cache line.
#[derive(Debug, Default)]
pub struct FalseSharing {
    line: Line,
}

/// Increments between two counter updates.
const FALSE_CHUNK: u64 = 1 << 12;

/// `n` increments of slot `slot` of `line`.
#[inline]
pub fn false_share(line: &Line, slot: usize, n: u64) {
    let cell = &line.0[slot % line.0.len()];
    for _ in 0..n {
        // A plain load and store, as a compiler emits for `counter[i]++`: the line
        // bounces between cores without a locked instruction's extra cost.
        cell.store(
            cell.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        );
    }
}

impl Kernel for FalseSharing {
    fn worker(&self, work: &mut Work<'_>) {
        while !work.stopped() {
            false_share(&self.line, work.index, FALSE_CHUNK);
            work.add(FALSE_CHUNK);
        }
    }
}
