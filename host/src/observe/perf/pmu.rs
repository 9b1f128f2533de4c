//! The one door to `perf_event_open`: a [`Pmu`] opens the events of one PU as one group
//! (a leader and its members, read together with `PERF_FORMAT_GROUP`), so that every
//! event of a window is read by one read(2) and all of them were scheduled for the same
//! time. Behind a trait so that tests can count descriptors on a fake PMU
//! ([`super::fake::FakePmu`]): this project's VMs have no hardware counters.

use std::io;
use std::os::fd::{AsRawFd as _, BorrowedFd, FromRawFd as _, OwnedFd};

use perf_event::hooks::sys::{self, bindings};

/// An event counted on the container's cgroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PerfEvent {
    /// Instructions retired.
    Instructions,
    /// CPU cycles (not halted).
    Cycles,
    /// Last-level cache misses (the kernel's generic `cache-misses`, the LLC on x86).
    LlcMisses,
    /// Cycles stalled in the back end (waiting on memory, mostly): the nearest generic
    /// event to "memory stall"; absent on many Intel cores.
    StalledCyclesBackend,
    /// The software task clock: there with or without a PMU.
    TaskClock,
}

impl PerfEvent {
    /// The name `perf list` gives it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Instructions => "instructions",
            Self::Cycles => "cycles",
            Self::LlcMisses => "cache-misses",
            Self::StalledCyclesBackend => "stalled-cycles-backend",
            Self::TaskClock => "task-clock",
        }
    }

    fn type_and_config(self) -> (u32, u64) {
        let hw = |c: u32| (bindings::PERF_TYPE_HARDWARE, u64::from(c));
        match self {
            Self::Instructions => hw(bindings::PERF_COUNT_HW_INSTRUCTIONS),
            Self::Cycles => hw(bindings::PERF_COUNT_HW_CPU_CYCLES),
            Self::LlcMisses => hw(bindings::PERF_COUNT_HW_CACHE_MISSES),
            Self::StalledCyclesBackend => hw(bindings::PERF_COUNT_HW_STALLED_CYCLES_BACKEND),
            Self::TaskClock => (
                bindings::PERF_TYPE_SOFTWARE,
                u64::from(bindings::PERF_COUNT_SW_TASK_CLOCK),
            ),
        }
    }
}

/// One read of a group: how long it was enabled and scheduled, and each event's count in
/// the order the group was opened with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupCounts {
    /// Nanoseconds the group was enabled.
    pub time_enabled: u64,
    /// Nanoseconds it was on the PMU (less than enabled when multiplexed).
    pub time_running: u64,
    /// One count per event.
    pub values: Vec<u64>,
}

/// An open group of counters on one PU; closing it (dropping) frees its descriptors.
pub trait CounterGroup: Send {
    /// Reads every event of the group at once.
    fn read(&mut self) -> io::Result<GroupCounts>;
}

/// Opens counter groups.
pub trait Pmu: Send + Sync {
    /// Opens `events` as one group on PU `cpu`, counting the tasks of the cgroup whose
    /// directory is open as `cgroup`, and enables it. Costs one descriptor per event.
    fn open_group(
        &self,
        cgroup: BorrowedFd<'_>,
        cpu: u32,
        events: &[PerfEvent],
    ) -> io::Result<Box<dyn CounterGroup>>;
}

/// The attribute struct's size, as the kernel wants it told (a few hundred bytes).
#[allow(
    clippy::cast_possible_truncation,
    reason = "checked by the assertion, at compile time"
)]
const ATTR_SIZE: u32 = {
    let size = std::mem::size_of::<bindings::perf_event_attr>();
    assert!(size <= u32::MAX as usize);
    size as u32
};

/// The kernel's perf events.
#[derive(Debug, Clone, Copy, Default)]
pub struct KernelPmu;

struct KernelGroup {
    leader: OwnedFd,
    /// Held only so that they stay open: the leader's read covers them.
    _members: Vec<OwnedFd>,
    events: usize,
}

impl Pmu for KernelPmu {
    fn open_group(
        &self,
        cgroup: BorrowedFd<'_>,
        cpu: u32,
        events: &[PerfEvent],
    ) -> io::Result<Box<dyn CounterGroup>> {
        let cpu =
            libc::c_int::try_from(cpu).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        let mut fds: Vec<OwnedFd> = Vec::with_capacity(events.len());
        for event in events {
            let (type_, config) = event.type_and_config();
            let mut attrs = bindings::perf_event_attr {
                size: ATTR_SIZE,
                type_,
                config,
                read_format: u64::from(
                    bindings::PERF_FORMAT_TOTAL_TIME_ENABLED
                        | bindings::PERF_FORMAT_TOTAL_TIME_RUNNING
                        | bindings::PERF_FORMAT_GROUP,
                ),
                ..bindings::perf_event_attr::default()
            };
            // The leader starts disabled and enables the whole group at once; members
            // follow their leader.
            attrs.set_disabled(u64::from(fds.is_empty()));
            // User space only: what an unprivileged daemon (paranoid level 2) may count,
            // and what the workload itself executes.
            attrs.set_exclude_kernel(1);
            attrs.set_exclude_hv(1);
            let group_fd = fds.first().map_or(-1, |l| l.as_raw_fd());
            // SAFETY: `attrs` is a valid attribute struct of the size it declares; the
            // cgroup and group descriptors are open for the duration of the call.
            let fd = unsafe {
                sys::perf_event_open(
                    &mut attrs,
                    cgroup.as_raw_fd(),
                    cpu,
                    group_fd,
                    libc::c_ulong::from(
                        bindings::PERF_FLAG_PID_CGROUP | bindings::PERF_FLAG_FD_CLOEXEC,
                    ),
                )
            };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: perf_event_open returned a new descriptor that nothing else owns.
            fds.push(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let mut fds = fds.into_iter();
        let leader = fds
            .next()
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: an ioctl on a perf descriptor we own, with the group flag as argument.
        let rc =
            unsafe { sys::ioctls::ENABLE(leader.as_raw_fd(), bindings::PERF_IOC_FLAG_GROUP as _) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Box::new(KernelGroup {
            leader,
            _members: fds.collect(),
            events: events.len(),
        }))
    }
}

impl CounterGroup for KernelGroup {
    fn read(&mut self) -> io::Result<GroupCounts> {
        // struct read_format { u64 nr; u64 time_enabled; u64 time_running; u64 values[nr]; }
        let mut data = vec![0_u64; 3 + self.events];
        let bytes = std::mem::size_of_val(&data[..]);
        // SAFETY: reads at most `bytes` into the buffer we own, of exactly that size.
        let n = unsafe { libc::read(self.leader.as_raw_fd(), data.as_mut_ptr().cast(), bytes) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if usize::try_from(n).ok() != Some(bytes) || data[0] != self.events as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "perf group read gave {n} bytes for {} events (expected {bytes})",
                    data[0]
                ),
            ));
        }
        Ok(GroupCounts {
            time_enabled: data[1],
            time_running: data[2],
            values: data[3..].to_vec(),
        })
    }
}
