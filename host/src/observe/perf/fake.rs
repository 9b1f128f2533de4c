//! A simulated PMU for tests: counts that grow by a fixed step per read, and a count of
//! the descriptors its groups hold, so that a test can show the budget is kept on a
//! machine this project does not have. Nothing it returns is a measurement.

use std::io;
use std::os::fd::BorrowedFd;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;

use super::pmu::{CounterGroup, GroupCounts, PerfEvent, Pmu};

#[derive(Debug, Default)]
struct Held {
    open: usize,
    peak: usize,
    opened_groups: usize,
    reads: usize,
}

/// A simulated PMU.
#[derive(Debug, Clone, Default)]
pub struct FakePmu {
    held: Arc<Mutex<Held>>,
    /// Events it refuses with ENOENT, as a host without them does.
    missing: Arc<Vec<PerfEvent>>,
}

impl FakePmu {
    /// A PMU with every event.
    pub fn new() -> Self {
        Self::default()
    }

    /// A PMU without `missing` (ENOENT, as the kernel says for an absent event).
    pub fn without(missing: &[PerfEvent]) -> Self {
        Self {
            held: Arc::default(),
            missing: Arc::new(missing.to_vec()),
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Descriptors its open groups hold now.
    pub fn open(&self) -> usize {
        self.held().open
    }

    /// The most descriptors ever held at once.
    pub fn peak(&self) -> usize {
        self.held().peak
    }

    /// Groups opened so far.
    pub fn opened_groups(&self) -> usize {
        self.held().opened_groups
    }

    /// Group reads so far (one per PU per reading).
    pub fn reads(&self) -> usize {
        self.held().reads
    }
}

struct FakeGroup {
    pmu: FakePmu,
    events: Vec<PerfEvent>,
    reads: u64,
}

impl Pmu for FakePmu {
    fn open_group(
        &self,
        _cgroup: BorrowedFd<'_>,
        _cpu: u32,
        events: &[PerfEvent],
    ) -> io::Result<Box<dyn CounterGroup>> {
        if events.iter().any(|e| self.missing.contains(e)) {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        let mut held = self.held();
        held.open += events.len();
        held.peak = held.peak.max(held.open);
        held.opened_groups += 1;
        drop(held);
        Ok(Box::new(FakeGroup {
            pmu: self.clone(),
            events: events.to_vec(),
            reads: 0,
        }))
    }
}

impl CounterGroup for FakeGroup {
    fn read(&mut self) -> io::Result<GroupCounts> {
        self.reads += 1;
        self.pmu.held().reads += 1;
        let n = self.reads;
        Ok(GroupCounts {
            time_enabled: n * 1_000_000,
            time_running: n * 1_000_000,
            // Per read and PU: 2,000 instructions, 1,000 cycles (IPC 2), 10 misses, 300
            // stalled cycles, 1 ms of task clock.
            values: self
                .events
                .iter()
                .map(|e| {
                    n * match e {
                        PerfEvent::Instructions => 2_000,
                        PerfEvent::Cycles => 1_000,
                        PerfEvent::LlcMisses => 10,
                        PerfEvent::StalledCyclesBackend => 300,
                        PerfEvent::TaskClock => 1_000_000,
                    }
                })
                .collect(),
        })
    }
}

impl Drop for FakeGroup {
    fn drop(&mut self) {
        let mut held = self.pmu.held();
        held.open = held.open.saturating_sub(self.events.len());
    }
}
