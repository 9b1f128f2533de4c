//! Bringing a container's memory to its new NUMA nodes (docs/design.md, "Enactment"; thesis §2.5.2).
//!
//! Three [`Mode`]s:
//! - `Kernel`: the cpuset write itself migrates (v2 always; v1 with `memory_migrate=1`),
//!   one task after another inside the write.
//! - `Fast`: worker threads move each process's pages with `move_pages(2)` /
//!   `migrate_pages(2)` ([`move_memory`]), optionally with the cgroup frozen so that the
//!   tasks do not contend for the same locks.
//! - `Throttled`: the same without freezing, under a bandwidth cap, for latency-sensitive
//!   containers.
//!
//! The order of writes around the workers is in [`crate::enact`]. Whatever the mode, the
//! [`MigrationReport`] says how much moved, how long it took, and what
//! `/proc/<pid>/numa_maps` still shows on the old nodes.

mod hold;
mod mover;
pub mod numa_maps;
pub mod sys;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

pub use hold::{HOLD_ENV, HoldPoint};
pub use mover::{MoveOptions, MoveStats, destination, move_memory};
pub use numa_maps::{NodeBytes, Vma};

use crate::cgroup;
use crate::kernel::Files;
use crate::kernel::fs::IoError;
use placed_core::fault::Fault;

/// The three ways memory can follow a cpuset change, by name: the one spelling of the
/// config's `policy.migration`, `placectl`'s `--migrate` and the API's mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum ModeKind {
    /// The kernel migrates inside the cpuset write.
    Kernel,
    /// Worker threads move the pages, the container frozen unless told otherwise.
    Fast,
    /// One worker under a bandwidth cap, never frozen.
    Throttled,
}

impl ModeKind {
    pub const ALL: [ModeKind; 3] = [Self::Kernel, Self::Fast, Self::Throttled];

    pub fn name(self) -> &'static str {
        match self {
            Self::Kernel => "kernel",
            Self::Fast => "fast",
            Self::Throttled => "throttled",
        }
    }

    /// The mode with its defaults: fast frozen with [`default_workers`], throttled at
    /// `throttle_bytes_per_sec`.
    pub fn mode(self, throttle_bytes_per_sec: u64) -> Mode {
        match self {
            Self::Kernel => Mode::Kernel,
            Self::Fast => Mode::fast(),
            Self::Throttled => Mode::Throttled {
                bytes_per_sec: throttle_bytes_per_sec,
            },
        }
    }
}

impl fmt::Display for ModeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ModeKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown migration mode {s:?} (kernel, fast, throttled)"))
    }
}

/// How memory follows a cpuset change.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Mode {
    /// The kernel migrates inside the `cpuset.mems` write.
    Kernel,
    /// Worker threads move the pages, the cgroup frozen if `freeze`.
    Fast { workers: usize, freeze: bool },
    /// One worker under a bandwidth cap, never frozen.
    Throttled { bytes_per_sec: u64 },
}

impl Mode {
    /// The fast mode as the thesis uses it: frozen, [`default_workers`] workers.
    pub fn fast() -> Self {
        Mode::Fast {
            workers: default_workers(),
            freeze: true,
        }
    }

    pub fn kind(&self) -> ModeKind {
        match self {
            Mode::Kernel => ModeKind::Kernel,
            Mode::Fast { .. } => ModeKind::Fast,
            Mode::Throttled { .. } => ModeKind::Throttled,
        }
    }

    pub fn name(&self) -> &'static str {
        self.kind().name()
    }
}

/// Workers of the fast mode by default: one per CPU this process may use, at most 8.
/// Uncalibrated on real multi-socket hardware; see docs/enactment.md for the guest's figures.
pub fn default_workers() -> usize {
    std::thread::available_parallelism()
        .map_or(4, std::num::NonZero::get)
        .clamp(1, 8)
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mode::Kernel => f.write_str(ModeKind::Kernel.name()),
            Mode::Fast { workers, freeze } => write!(
                f,
                "fast ({workers} workers{})",
                if *freeze { ", frozen" } else { "" }
            ),
            Mode::Throttled { bytes_per_sec } => {
                write!(
                    f,
                    "throttled ({:.0} MiB/s)",
                    *bytes_per_sec as f64 / f64::from(1 << 20)
                )
            }
        }
    }
}

/// Parses a bandwidth like `100M`, `1.5G`, `512K` or a plain number of bytes (per second).
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let t = s
        .trim()
        .trim_end_matches("/s")
        .trim_end_matches('B')
        .trim_end_matches('i');
    let (num, mult) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 1 << 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a rate like 100M or 1G (bytes per second)"))?;
    if !(v.is_finite() && v > 0.0) {
        return Err(format!("{s:?}: the rate must be positive"));
    }
    // `as` saturates from float to int: an absurd rate is simply "no cap".
    #[allow(clippy::cast_possible_truncation, reason = "saturating on purpose")]
    Ok((v * mult as f64) as u64)
}

impl FromStr for Mode {
    type Err = String;
    /// `kernel`, `fast` (frozen, default workers) or `throttled` (100 MiB/s).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(s.parse::<ModeKind>()?.mode(100 << 20))
    }
}

/// What a migration did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MigrationReport {
    pub mode: Mode,
    /// Bytes that changed node: the drop of resident memory outside the new nodes in
    /// `numa_maps`, or the workers' own count (fast, throttled) when that is larger. The
    /// kernel's final sweep after the workers is included in the former.
    pub bytes_moved: u64,
    /// From the first write (or freeze) to the last, cpuset writes included.
    #[serde(serialize_with = "secs")]
    pub duration: Duration,
    /// How long the cgroup was frozen, if it was.
    #[serde(serialize_with = "opt_secs")]
    pub frozen_for: Option<Duration>,
    /// Resident memory of the container's processes per node, before and after.
    pub before: NodeBytes,
    pub after: NodeBytes,
    /// What `numa_maps` still shows outside the new nodes afterwards.
    pub left_on_old_nodes: u64,
    /// The workers' own account (fast and throttled modes).
    pub workers: Option<MoveStats>,
    /// The workers were told to stop before they were done (`ApplyOptions::cancel`): in
    /// the fast mode the kernel moved the rest; in the throttled mode the rest stayed and
    /// the cgroup kept its old nodes as well as the new ones.
    pub cancelled: bool,
}

impl MigrationReport {
    /// Bytes moved per second of `duration`.
    pub fn throughput(&self) -> u64 {
        let ns = self.duration.as_nanos().max(1);
        u64::try_from(u128::from(self.bytes_moved) * 1_000_000_000 / ns).unwrap_or(u64::MAX)
    }
}

pub(crate) fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

fn opt_secs<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

/// A migration that could not run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read the memory map of process {pid}")]
    Proc {
        pid: u32,
        #[source]
        source: IoError,
    },
    #[error(transparent)]
    Malformed(#[from] numa_maps::Malformed),
    #[error("process {pid}'s status has VmRSS {line:?}, not a size in kB")]
    Status { pid: u32, line: String },
    #[error(transparent)]
    Cgroup(#[from] cgroup::Error),
}

impl Error {
    pub fn fault(&self) -> Fault {
        match self {
            Error::Proc { source, .. } => cgroup::fault_of_errno(source.errno()),
            Error::Malformed(_) | Error::Status { .. } => Fault::Transient,
            Error::Cgroup(e) => e.fault(),
        }
    }
}

/// The memory maps and resident memory of processes, from `/proc` through
/// [`crate::kernel::Files`].
#[derive(Debug, Clone)]
pub struct Proc {
    files: Files,
}

impl Proc {
    pub fn new(files: Files) -> Self {
        Self { files }
    }

    pub fn files(&self) -> &Files {
        &self.files
    }

    /// A file of `/proc/<pid>/`; `None` if the process is gone (ENOENT, ESRCH).
    pub fn read(&self, pid: u32, file: &str) -> Result<Option<String>, Error> {
        self.files
            .task(pid, file)
            .map_err(|source| Error::Proc { pid, source })
    }

    /// The process's mappings with resident pages; `None` if it exited.
    pub fn vmas(&self, pid: u32) -> Result<Option<Vec<Vma>>, Error> {
        // maps first: a mapping created between the two reads is missing from maps and
        // skipped, one removed between them is in maps only and harmless.
        let Some(maps) = self.read(pid, "maps")? else {
            return Ok(None);
        };
        let Some(numa) = self.read(pid, "numa_maps")? else {
            return Ok(None);
        };
        let ends = numa_maps::parse_maps(&maps)?;
        Ok(Some(numa_maps::parse_numa_maps(&numa, &ends)?))
    }

    /// Whether the kernel's automatic NUMA balancing is on (`sys/kernel/numa_balancing`
    /// non-zero): it then moves pages toward the CPUs that touch them, whatever placed does.
    pub fn numa_balancing(&self) -> bool {
        self.files
            .proc("sys/kernel/numa_balancing")
            .is_ok_and(|t| t.trim() != "0")
    }

    /// Resident memory per node of the processes (those that exited are left out).
    pub fn footprint(&self, pids: &[u32]) -> Result<NodeBytes, Error> {
        let mut total = NodeBytes::default();
        for &pid in pids {
            for v in self.vmas(pid)?.unwrap_or_default() {
                total.add(&v.bytes());
            }
        }
        Ok(total)
    }

    /// Resident memory of the processes in all (`VmRSS` of `/proc/<pid>/status`), for when
    /// the per-node figures cannot be had; those that exited are left out.
    pub fn resident(&self, pids: &[u32]) -> Result<u64, Error> {
        let mut total = 0_u64;
        for &pid in pids {
            let Some(status) = self.read(pid, "status")? else {
                continue;
            };
            // Kernel threads have no VmRSS line: nothing resident of their own.
            let kib = status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .map(|v| {
                    v.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .map_err(|_| Error::Status {
                            pid,
                            line: v.trim().to_owned(),
                        })
                })
                .transpose()?
                .unwrap_or(0);
            total = total.saturating_add(kib.saturating_mul(1024));
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_and_rates() {
        assert_eq!("kernel".parse::<Mode>().unwrap(), Mode::Kernel);
        assert!(matches!(
            "fast".parse::<Mode>().unwrap(),
            Mode::Fast { freeze: true, .. }
        ));
        "slow".parse::<Mode>().unwrap_err();
        assert_eq!(parse_rate("100M").unwrap(), 100 << 20);
        assert_eq!(parse_rate("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_rate("64KiB/s").unwrap(), 64 << 10);
        assert_eq!(parse_rate("4096").unwrap(), 4096);
        assert!(parse_rate("0").unwrap_err().contains("positive"));
        assert!(parse_rate("fast").unwrap_err().contains("not a rate"));
    }

    #[test]
    fn own_footprint_is_readable() {
        let p = Proc::new(Files::host());
        let me = p.footprint(&[std::process::id()]).unwrap();
        assert!(me.total() > 0);
        assert!(
            p.vmas(u32::MAX - 1).unwrap().is_none(),
            "no such process: None"
        );
        // VmRSS counts every resident page, numa_maps the mapped ones: close, and both
        // present for a live process.
        let rss = p.resident(&[std::process::id(), u32::MAX - 1]).unwrap();
        assert!(rss > 0);
    }

    #[test]
    fn resident_reads_vmrss_and_refuses_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let write = |pid: u32, status: &str| {
            let d = dir.path().join(pid.to_string());
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("status"), status).unwrap();
        };
        write(5, "Name:\tx\nVmRSS:\t    2048 kB\n");
        write(6, "Name:\tkthreadd\n");
        write(7, "Name:\tx\nVmRSS:\tlots\n");
        let p = Proc::new(Files::new(
            std::sync::Arc::new(crate::kernel::fs::RealFs),
            dir.path().to_owned(),
            dir.path().to_owned(),
        ));
        assert_eq!(p.resident(&[5, 6, 99]).unwrap(), 2 << 20);
        let err = p.resident(&[7]).unwrap_err();
        assert!(err.to_string().contains("process 7"), "{err}");
    }
}
