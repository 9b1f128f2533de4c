//! Errors of the cgroup backends, each with the path (and value) it is about, the kernel
//! rule behind a refusal, and a hint where the fix is known.

use std::path::PathBuf;
use std::time::Duration;

use super::Version;
use super::path::{BadPath, CgroupPath};
use crate::kernel::fs::{IoError, errno_name};
use placed_core::cpuset::ParseIdSetError;
use placed_core::fault::Fault;

/// A cgroup operation that failed.
///
/// Host-configuration failures ([`Error::NoCpuset`], [`Error::NoFreezer`],
/// [`Error::CannotEnableCpuset`], [`Error::MissingFile`], permission errors) are
/// [`Fault::HostConfig`]; a path or set the caller got wrong is [`Fault::InvalidInput`];
/// a cgroup that is gone is [`Fault::NotFound`]. See [`Error::fault`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An I/O error not explained by a known kernel rule.
    #[error(transparent)]
    Io(Box<IoError>),

    /// The cgroup's directory is gone: the container stopped, or someone removed it.
    /// (ENOENT on its directory, or ENODEV on a control file of a removed cgroup.)
    #[error("cgroup {} vanished", path.display())]
    Vanished {
        path: PathBuf,
        #[source]
        source: Box<IoError>,
    },

    /// The cgroup exists but a control file does not: the controller is not enabled for it.
    #[error("{} has no {file}: {hint}", parent_of(&source.path))]
    MissingFile {
        file: &'static str,
        hint: &'static str,
        #[source]
        source: Box<IoError>,
    },

    /// The kernel refused a write for a documented reason; `rule` says which. The path,
    /// the value and the errno are the source's.
    #[error(
        "the kernel refused {:?} in {} ({}): {rule}",
        source.value.as_deref().unwrap_or_default(),
        source.path.display(),
        errno_name(&source.source)
    )]
    Refused {
        rule: &'static str,
        fault: Fault,
        #[source]
        source: Box<IoError>,
    },

    /// No hierarchy offers the cpuset controller.
    #[error("no cpuset controller on this host: {hint}")]
    NoCpuset { hint: String },

    /// On cgroup v2, `+cpuset` cannot be enabled in an ancestor (the source's path).
    #[error("cannot enable cpuset for {cgroup} in {}: {reason}; hint: {hint}", source.path.display())]
    CannotEnableCpuset {
        cgroup: CgroupPath,
        reason: &'static str,
        hint: &'static str,
        #[source]
        source: Box<IoError>,
    },

    /// Freezing was asked for but the cgroup has no freezer.
    #[error("cannot freeze {cgroup}: {hint}")]
    NoFreezer { cgroup: String, hint: &'static str },

    /// The freezer did not report the cgroup frozen in time (a task stuck in the kernel,
    /// for example in uninterruptible I/O); the cgroup has been thawed again.
    #[error("{cgroup} did not freeze within {waited:?}; it was thawed again")]
    FreezeTimeout { cgroup: String, waited: Duration },

    /// A control file held something that is not what the kernel writes there.
    #[error("cannot parse {} ({content:?})", path.display())]
    Parse {
        path: PathBuf,
        content: String,
        #[source]
        source: ParseIdSetError,
    },

    /// A control file held something unexpected (not a set).
    #[error("unexpected content in {}: {content:?}", path.display())]
    Unexpected { path: PathBuf, content: String },

    /// A cgroup path from the caller is not valid.
    #[error(transparent)]
    BadPath(#[from] BadPath),

    /// A cgroup path resolves (through a symbolic link) outside the mount.
    #[error("{} resolves outside the cgroup mount {}", path.display(), mount.display())]
    OutsideMount { path: PathBuf, mount: PathBuf },

    /// A set the caller asked for is empty, which no cgroup with tasks may have.
    #[error("{what} must not be empty")]
    Empty { what: &'static str },

    /// The subtree below a container is too large to handle (more cgroups than the limit).
    #[error("{cgroup} has more than {limit} descendant cgroups")]
    TooManyCgroups { cgroup: String, limit: usize },

    /// The mount table cannot be read or parsed.
    #[error(transparent)]
    Kernel(Box<crate::kernel::KernelError>),
}

impl From<IoError> for Error {
    fn from(e: IoError) -> Self {
        Error::Io(Box::new(e))
    }
}

fn parent_of(p: &std::path::Path) -> String {
    p.parent().unwrap_or(p).display().to_string()
}

impl Error {
    /// The errno behind an I/O failure, if this is one.
    pub fn errno(&self) -> Option<i32> {
        match self {
            Error::Io(source)
            | Error::Vanished { source, .. }
            | Error::MissingFile { source, .. }
            | Error::Refused { source, .. }
            | Error::CannotEnableCpuset { source, .. } => source.errno(),
            _ => None,
        }
    }

    /// Who has to act; see [`Fault`].
    pub fn fault(&self) -> Fault {
        match self {
            Error::Io(e) => fault_of_errno(e.errno()),
            Error::Vanished { .. } => Fault::NotFound,
            Error::Refused { fault, .. } => *fault,
            Error::MissingFile { .. }
            | Error::NoCpuset { .. }
            | Error::CannotEnableCpuset { .. }
            | Error::NoFreezer { .. }
            | Error::Kernel(_) => Fault::HostConfig,
            Error::FreezeTimeout { .. } | Error::Parse { .. } | Error::Unexpected { .. } => {
                Fault::Transient
            }
            Error::BadPath(_) | Error::OutsideMount { .. } | Error::Empty { .. } => {
                Fault::InvalidInput
            }
            Error::TooManyCgroups { .. } => Fault::HostConfig,
        }
    }
}

/// What an unexplained errno means for the caller.
pub fn fault_of_errno(errno: Option<i32>) -> Fault {
    match errno {
        Some(libc::ENOENT | libc::ENODEV | libc::ESRCH) => Fault::NotFound,
        Some(libc::EACCES | libc::EPERM | libc::EROFS | libc::EOPNOTSUPP) => Fault::HostConfig,
        Some(libc::EINVAL) => Fault::InvalidInput,
        _ => Fault::Transient,
    }
}

/// The kernel rule behind a refused write to `file`, from its errno: `(rule, fault)`.
///
/// These are the rules of `kernel/cgroup/cpuset.c` (`validate_change`, `update_cpumask`,
/// `cpuset_can_attach`) and `kernel/cgroup/cgroup.c` (`cgroup_subtree_control_write`,
/// `cgroup_migrate_vet_dst`).
pub(crate) fn explain(
    version: Version,
    file: &str,
    errno: Option<i32>,
) -> Option<(&'static str, Fault)> {
    let v1 = version == Version::V1;
    Some(match (file, errno?) {
        ("cpuset.cpus" | "cpuset.mems", libc::EINVAL) if v1 => (
            "a cpuset must lie within its parent's, name only online CPUs and nodes with \
             memory, and not overlap an exclusive sibling",
            Fault::InvalidInput,
        ),
        ("cpuset.cpus" | "cpuset.mems", libc::EINVAL) => (
            "cpuset.cpus must name online CPUs and cpuset.mems nodes with memory \
             (and a partition root cannot take CPUs its siblings hold exclusively)",
            Fault::InvalidInput,
        ),
        ("cpuset.cpus" | "cpuset.mems", libc::ERANGE) => (
            "a CPU or node id beyond what this kernel supports (nr_cpu_ids, MAX_NUMNODES)",
            Fault::InvalidInput,
        ),
        ("cpuset.cpus" | "cpuset.mems", libc::ENOSPC) => (
            "a cpuset with tasks cannot become empty",
            Fault::InvalidInput,
        ),
        ("cpuset.cpus" | "cpuset.mems", libc::EBUSY) => (
            "every child cpuset must stay within its parent (v1), so children are shrunk \
             before their parent; a child cgroup outside the new set blocks it",
            Fault::HostConfig,
        ),
        ("cgroup.subtree_control", libc::EBUSY) => (
            "no internal processes: a non-root cgroup that has processes cannot enable \
             controllers for its children",
            Fault::HostConfig,
        ),
        ("cgroup.subtree_control", libc::ENOENT) => (
            "the controller is not available here: the parent has not enabled it, or it is \
             bound to a cgroup v1 hierarchy",
            Fault::HostConfig,
        ),
        ("cgroup.procs" | "tasks", libc::ENOSPC) => (
            "a task cannot join a v1 cpuset whose cpuset.cpus or cpuset.mems is empty: \
             set both before tasks join",
            Fault::HostConfig,
        ),
        ("cgroup.procs" | "cgroup.threads", libc::EBUSY) => (
            "no internal processes: the cgroup has controllers enabled for its children, \
             so processes may only join its leaves",
            Fault::HostConfig,
        ),
        ("cgroup.procs" | "tasks" | "cgroup.threads", libc::ESRCH) => {
            ("the process has exited", Fault::NotFound)
        }
        (_, libc::EACCES | libc::EPERM | libc::EROFS) => (
            "permission denied: placed must run as root with write access to the cgroup \
             mount (and CAP_SYS_NICE to move other processes' memory)",
            Fault::HostConfig,
        ),
        _ => return None,
    })
}
