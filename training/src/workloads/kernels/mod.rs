//! The built-in training kernels that `placed-train workload run` executes.
//!
//! Each kernel family lives in a file of its own; [`KERNELS`] lists them with their
//! family (the cross-validation group) and unit. A kernel is built for a thread count
//! (shared state such as a lock is sized then) and run by [`runner::run`].

pub mod bandwidth;
pub mod cache;
pub mod compute;
pub mod latency;
pub mod mix;
pub mod runner;
pub mod sharing;
pub mod smt;

use cache::Caches;

const MIB: usize = 1 << 20;
const GIB: usize = 1 << 30;

/// A kernel: what each of its threads does until told to stop.
pub trait Kernel: Sync + std::fmt::Debug {
    /// Runs on each worker thread until `work.stopped()`, counting operations with
    /// `work.add`.
    fn worker(&self, work: &mut runner::Work<'_>);

    /// Called once the stop flag is set: wakes any thread blocked on another.
    fn release(&self) {}
}

/// A built-in kernel's description.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Its workload name.
    pub name: &'static str,
    /// Cross-validation family.
    pub family: &'static str,
    /// What one operation is.
    pub unit: &'static str,
    /// Builds the kernel for `threads` threads.
    pub build: fn(threads: usize) -> Box<dyn Kernel>,
}

impl Spec {
    /// A row of [`KERNELS`]: name, family, unit, builder.
    const fn new(
        name: &'static str,
        family: &'static str,
        unit: &'static str,
        build: fn(threads: usize) -> Box<dyn Kernel>,
    ) -> Self {
        Self {
            name,
            family,
            unit,
            build,
        }
    }
}

/// Every built-in kernel.
pub const KERNELS: &[Spec] = &[
    Spec::new("stream-triad", "bandwidth", "B/s", |threads| {
        Box::new(bandwidth::Triad::new(triad_bytes(Caches::host()), threads))
    }),
    Spec::new("latency-l2", "latency", "loads/s", |_| {
        Box::new(latency::Chase::new(Caches::host().l2 / 2))
    }),
    Spec::new("latency-l3", "latency", "loads/s", |threads| {
        Box::new(latency::Chase::new(l3_share(Caches::host(), threads)))
    }),
    Spec::new("latency-dram", "latency", "loads/s", |threads| {
        Box::new(latency::Chase::new(dram_share(Caches::host(), threads)))
    }),
    Spec::new("compute-int", "compute", "iterations/s", |_| {
        Box::new(compute::Int)
    }),
    Spec::new("compute-fp", "compute", "iterations/s", |_| {
        Box::new(compute::Float)
    }),
    Spec::new("smt-friendly", "smt", "iterations/s", |_| {
        Box::new(smt::Friendly)
    }),
    Spec::new("smt-hostile", "smt", "flops/s", |_| Box::new(smt::Hostile)),
    Spec::new("sharing-pingpong", "sharing", "handoffs/s", |_| {
        Box::new(sharing::PingPong::default())
    }),
    Spec::new("sharing-lock", "sharing", "acquisitions/s", |_| {
        Box::new(sharing::Lock::default())
    }),
    Spec::new("sharing-false", "sharing", "increments/s", |_| {
        Box::new(sharing::FalseSharing::default())
    }),
    Spec::new("mix-memory-compute", "mix", "rounds/s", |threads| {
        Box::new(mix::MemoryCompute::new(
            triad_bytes(Caches::host()) / threads.max(1),
        ))
    }),
    Spec::new("mix-cache-sharing", "mix", "rounds/s", |threads| {
        Box::new(mix::CacheSharing::new(l3_share(Caches::host(), threads)))
    }),
];

/// Triad arrays in all: four times the last-level cache so that no level of it holds a
/// useful part, within bounds that keep start-up quick and memory modest.
fn triad_bytes(caches: Caches) -> usize {
    (4 * caches.llc).clamp(256 * MIB, 4 * GIB)
}

/// A per-thread working set that fits the thread's share of the last-level cache (only
/// a quarter: on a VM the reported LLC is the whole socket's, shared with neighbours)
/// but not L2.
fn l3_share(caches: Caches, threads: usize) -> usize {
    (caches.llc / (4 * threads.max(1))).max(2 * caches.l2)
}

/// A per-thread working set that no cache holds: twice the last-level cache per thread,
/// within 64 MiB..1 GiB, and 4 GiB over all threads.
fn dram_share(caches: Caches, threads: usize) -> usize {
    (2 * caches.llc)
        .clamp(64 * MIB, GIB)
        .min(4 * GIB / threads.max(1))
        .max(64 * MIB)
}

/// The kernel called `name`.
pub fn find(name: &str) -> Option<&'static Spec> {
    KERNELS.iter().find(|k| k.name == name)
}
