//! Runs a kernel on `threads` threads and prints the running operation total.
//!
//! Each thread publishes its own total in a counter on a cache line of its own (so that
//! counting does not itself become false sharing); the main thread sums them every
//! [`PRINT_EVERY`] and prints one number per line, which the launcher reads.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::Kernel;

/// How often the total is printed: often enough for 0.5 s windows to see many readings.
pub const PRINT_EVERY: Duration = Duration::from_millis(50);

/// A counter alone on its cache line (128 bytes: adjacent-line prefetchers pair lines).
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct Padded(pub AtomicU64);

/// What a worker thread sees: where to count and when to stop.
#[derive(Debug)]
pub struct Work<'a> {
    /// This thread's index, `0..threads`.
    pub index: usize,
    /// Threads running the kernel.
    pub threads: usize,
    counter: &'a Padded,
    stop: &'a AtomicBool,
    total: u64,
}

impl Work<'_> {
    /// Adds `ops` completed operations; only this thread writes its counter.
    #[inline]
    pub fn add(&mut self, ops: u64) {
        self.total = self.total.wrapping_add(ops);
        self.counter.0.store(self.total, Ordering::Relaxed);
    }

    /// True once the kernel must end.
    #[inline]
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Runs `kernel` on `threads` threads, printing totals to `out` until `seconds` have
/// passed (forever when `None`) or `out` can no longer be written (the reader is gone).
pub fn run(
    kernel: &dyn Kernel,
    threads: usize,
    seconds: Option<f64>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let threads = threads.max(1);
    let counters: Vec<Padded> = (0..threads).map(|_| Padded::default()).collect();
    let stop = AtomicBool::new(false);
    let deadline = seconds.map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0)));
    std::thread::scope(|scope| {
        for (index, counter) in counters.iter().enumerate() {
            let stop = &stop;
            std::thread::Builder::new()
                .name(format!("kernel-{index}"))
                .spawn_scoped(scope, move || {
                    let mut work = Work {
                        index,
                        threads,
                        counter,
                        stop,
                        total: 0,
                    };
                    kernel.worker(&mut work);
                })?;
        }
        let result = print_loop(&counters, deadline, out);
        stop.store(true, Ordering::Relaxed);
        kernel.release();
        result
    })
}

fn print_loop(
    counters: &[Padded],
    deadline: Option<Instant>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let mut next = Instant::now() + PRINT_EVERY;
    loop {
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
        next += PRINT_EVERY;
        let total: u64 = counters
            .iter()
            .map(|c| c.0.load(Ordering::Relaxed))
            .fold(0u64, u64::wrapping_add);
        writeln!(out, "{total}")?;
        out.flush()?;
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::kernels::compute;

    #[test]
    fn totals_are_printed_rising_until_the_time_is_up() {
        let mut out = Vec::new();
        run(&compute::Int, 2, Some(0.3), &mut out).unwrap();
        let totals: Vec<u64> = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        assert!((4..=10).contains(&totals.len()), "{totals:?}");
        assert!(totals.windows(2).all(|w| w[1] >= w[0]), "{totals:?}");
        assert!(totals[totals.len() - 1] > 0, "{totals:?}");
    }

    #[test]
    fn a_closed_output_ends_the_run() {
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let err = run(&compute::Int, 1, None, &mut Closed).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe);
    }
}
