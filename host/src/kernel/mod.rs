//! The kernel's files: `/proc`, `/sys` and the cgroup mounts, found once and read through
//! one [`Fs`]. The ground floor of placed-host: it imports nothing else of the crate, and
//! every other module builds on it.
//!
//! [`Files`] says where `/proc` and `/sys` are and reads them: every read of a kernel file in
//! placed-host goes through its helpers (or, for cgroup control files, through the same
//! [`Fs`] inside the cgroup backends), so an error names the path, and a test puts a fake tree
//! behind all of them at once. [`Kernel`] adds the mount table, read from
//! `<proc>/self/mountinfo` and parsed once when it is built; the floors above build their
//! views from it: the cpuset hierarchy (`cgroup::Cgroups::of`), the cpu and perf_event
//! controllers (`cgroup::quota::Controllers::of`), `/proc`'s memory maps
//! (`migrate::Proc::of`) and the noise probe (`observe::ProcProbe::of`). [`Kernel::host`] is
//! this host: build it once at start and pass it on (`enact::Host::new` takes one).
//!
//! - [`fs`]: the read and write helpers every kernel file goes through, and the errors
//!   that name its path.
//! - [`mountinfo`]: the mount table's parser.
//!
//! The `fake` feature's whole fake host (`crate::fake`) sits on top of the crate, since it
//! builds hierarchies and hosts too.

pub mod fs;
pub mod mountinfo;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use self::fs::{Fs, IoError, Op, RealFs};
use self::mountinfo::{MountinfoError, Mounts};

/// Where `/proc` and `/sys` are, and the [`Fs`] that reads them. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Files {
    fs: Arc<dyn Fs>,
    proc: PathBuf,
    sys: PathBuf,
}

impl Files {
    /// `proc` and `sys` are normally `/proc` and `/sys`; a test passes a fake tree's.
    pub fn new(fs: Arc<dyn Fs>, proc: PathBuf, sys: PathBuf) -> Self {
        Self { fs, proc, sys }
    }

    /// This host's `/proc` and `/sys` on the real file system.
    pub fn host() -> Self {
        Self::new(
            Arc::new(RealFs),
            PathBuf::from("/proc"),
            PathBuf::from("/sys"),
        )
    }

    pub fn fs(&self) -> &Arc<dyn Fs> {
        &self.fs
    }

    pub fn proc_root(&self) -> &Path {
        &self.proc
    }

    pub fn sys_root(&self) -> &Path {
        &self.sys
    }

    /// Any kernel file (a cgroup's, `/proc`'s, `/sys`'s) by its full path.
    pub fn read(&self, path: &Path) -> Result<String, IoError> {
        fs::read(self.fs.as_ref(), path)
    }

    /// `<proc>/<rel>`: `stat`, `interrupts`, `sys/kernel/numa_balancing`, ...
    pub fn proc(&self, rel: &str) -> Result<String, IoError> {
        self.read(&self.proc.join(rel))
    }

    /// `<sys>/<rel>`: `devices/system/cpu/online`, ...
    pub fn sys(&self, rel: &str) -> Result<String, IoError> {
        self.read(&self.sys.join(rel))
    }

    /// The path of `<proc>/<pid>/<file>`.
    pub fn task_path(&self, pid: u32, file: &str) -> PathBuf {
        self.proc.join(pid.to_string()).join(file)
    }

    /// `<proc>/<pid>/<file>`; `None` when the process (or thread) is gone (ENOENT, ESRCH).
    pub fn task(&self, pid: u32, file: &str) -> Result<Option<String>, IoError> {
        match self.read(&self.task_path(pid, file)) {
            Ok(text) => Ok(Some(text)),
            Err(e) if is_gone(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The thread ids of a process (`<proc>/<pid>/task`), sorted; `None` when it is gone.
    pub fn threads_of(&self, pid: u32) -> Result<Option<Vec<u32>>, IoError> {
        let dir = self.task_path(pid, "task");
        match fs::dir_op(Op::List, &dir, self.fs.subdirs(&dir)) {
            Ok(names) => {
                let mut tids: Vec<u32> = names.iter().filter_map(|n| n.parse().ok()).collect();
                tids.sort_unstable();
                Ok(Some(tids))
            }
            Err(e) if is_gone(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// Whether a read failed because what it read is gone: a process that exited, a cgroup
/// removed.
pub fn is_gone(e: &IoError) -> bool {
    matches!(e.errno(), Some(libc::ENOENT | libc::ESRCH))
}

/// The mount table cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error("cannot read the mount table")]
    Read {
        #[source]
        source: IoError,
    },
    #[error("cannot parse the mount table {}", path.display())]
    Parse {
        path: PathBuf,
        #[source]
        source: MountinfoError,
    },
}

/// [`Files`] and the mount table read from them once. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Kernel {
    files: Files,
    mountinfo: PathBuf,
    mounts: Arc<Mounts>,
}

impl Kernel {
    /// This host: `/proc`, `/sys`, and the mounts of `/proc/self/mountinfo`.
    pub fn host() -> Result<Self, KernelError> {
        Self::new(Files::host())
    }

    /// Reads and parses `<proc>/self/mountinfo` through `files`.
    pub fn new(files: Files) -> Result<Self, KernelError> {
        let mountinfo = files.proc_root().join("self/mountinfo");
        let text = files
            .read(&mountinfo)
            .map_err(|source| KernelError::Read { source })?;
        let mounts = Mounts::parse(&text).map_err(|source| KernelError::Parse {
            path: mountinfo.clone(),
            source,
        })?;
        Ok(Self {
            files,
            mountinfo,
            mounts: Arc::new(mounts),
        })
    }

    pub fn files(&self) -> &Files {
        &self.files
    }

    pub fn fs(&self) -> &Arc<dyn Fs> {
        self.files.fs()
    }

    /// The mountinfo file the mounts were read from.
    pub fn mountinfo(&self) -> &Path {
        &self.mountinfo
    }

    pub fn mounts(&self) -> &Mounts {
        &self.mounts
    }
}

#[cfg(test)]
mod tests;
