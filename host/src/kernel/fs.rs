//! The only place that touches cgroup, `/proc` and `/sys` files: one read helper, one write
//! helper, both through [`Fs`] so that tests can put a fake kernel behind them.
//!
//! Writes never create a file: a misspelt control file (or a controller that is not enabled
//! for this cgroup) must fail with ENOENT, not appear as a regular file that the kernel
//! ignores. Each write is a single `write(2)`, because a cgroup control file treats every
//! `write(2)` as one complete value.

use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// What was being done when an I/O error happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
    Mkdir,
    Rmdir,
    List,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Mkdir => "create",
            Op::Rmdir => "remove",
            Op::List => "list",
        })
    }
}

/// An I/O error with the path it happened on and, for writes, the value written.
///
/// The message names the errno (`EINVAL`, ...) but not the OS's text for it; the
/// [`io::Error`] is the `source()`, so a printed chain shows it once.
#[derive(Debug, thiserror::Error)]
#[error("cannot {op} {}{} ({})", path.display(), value_suffix(.value), errno_name(.source))]
pub struct IoError {
    pub op: Op,
    pub path: PathBuf,
    /// The value of a failed write, as written (without the newline).
    pub value: Option<String>,
    #[source]
    pub source: io::Error,
}

fn value_suffix(value: &Option<String>) -> String {
    value
        .as_ref()
        .map(|v| format!(" with {v:?}"))
        .unwrap_or_default()
}

impl IoError {
    pub fn errno(&self) -> Option<i32> {
        self.source.raw_os_error()
    }
}

/// The symbolic name of an errno, for messages that explain a kernel rule (`EINVAL`,
/// `ENOSPC`, ...); other errors print as their `io::ErrorKind`.
pub fn errno_name(err: &io::Error) -> String {
    let name = match err.raw_os_error() {
        Some(libc::EPERM) => "EPERM",
        Some(libc::ENOENT) => "ENOENT",
        Some(libc::ESRCH) => "ESRCH",
        Some(libc::EINTR) => "EINTR",
        Some(libc::EIO) => "EIO",
        Some(libc::E2BIG) => "E2BIG",
        Some(libc::EAGAIN) => "EAGAIN",
        Some(libc::ENOMEM) => "ENOMEM",
        Some(libc::EACCES) => "EACCES",
        Some(libc::EFAULT) => "EFAULT",
        Some(libc::EBUSY) => "EBUSY",
        Some(libc::EEXIST) => "EEXIST",
        Some(libc::ENODEV) => "ENODEV",
        Some(libc::ENOTDIR) => "ENOTDIR",
        Some(libc::EISDIR) => "EISDIR",
        Some(libc::EINVAL) => "EINVAL",
        Some(libc::ENOSPC) => "ENOSPC",
        Some(libc::EROFS) => "EROFS",
        Some(libc::ERANGE) => "ERANGE",
        Some(libc::ENOTEMPTY) => "ENOTEMPTY",
        Some(libc::EOPNOTSUPP) => "EOPNOTSUPP",
        Some(libc::ENOSYS) => "ENOSYS",
        Some(n) => return format!("errno {n}"),
        None => return err.kind().to_string(),
    };
    name.to_owned()
}

/// File-system access for everything under a cgroup mount, `/proc` and `/sys`.
///
/// [`RealFs`] is the kernel; tests use a fake that enforces the kernel's rules on a temporary
/// directory and returns the errno the kernel would.
pub trait Fs: fmt::Debug + Send + Sync {
    /// The whole file as text.
    fn read(&self, path: &Path) -> io::Result<String>;
    /// Writes `value` to an existing file in one `write(2)`; never creates the file.
    fn write(&self, path: &Path, value: &str) -> io::Result<()>;
    /// Creates one directory (its parent must exist).
    fn mkdir(&self, path: &Path) -> io::Result<()>;
    /// Removes one empty directory (for a cgroup: no tasks, no children).
    fn rmdir(&self, path: &Path) -> io::Result<()>;
    /// The names of the subdirectories of `path`, sorted.
    fn subdirs(&self, path: &Path) -> io::Result<Vec<String>>;
    /// The path with symbolic links resolved, to check that it stays under a mount.
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf>;
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

impl Fs for RealFs {
    fn read(&self, path: &Path) -> io::Result<String> {
        fs::read_to_string(path)
    }

    fn write(&self, path: &Path, value: &str) -> io::Result<()> {
        // No `create`: see the module doc. `truncate` is what runc does too; cgroupfs
        // ignores it and a fake tree of regular files needs it.
        let mut file = OpenOptions::new().write(true).truncate(true).open(path)?;
        let written = file.write(value.as_bytes())?;
        if written != value.len() {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("short write: {written} of {} bytes", value.len()),
            ));
        }
        Ok(())
    }

    fn mkdir(&self, path: &Path) -> io::Result<()> {
        fs::create_dir(path)
    }

    fn rmdir(&self, path: &Path) -> io::Result<()> {
        fs::remove_dir(path)
    }

    fn subdirs(&self, path: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(path)? {
            let entry = entry?;
            // file_type() does not follow symlinks: a symlinked directory is not a cgroup.
            if entry.file_type()?.is_dir() {
                if let Ok(name) = entry.file_name().into_string() {
                    names.push(name);
                }
            }
        }
        names.sort();
        Ok(names)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        fs::canonicalize(path)
    }
}

/// The read helper: the file's text, or an error naming the path.
pub fn read(fs: &dyn Fs, path: &Path) -> Result<String, IoError> {
    fs.read(path).map_err(|source| IoError {
        op: Op::Read,
        path: path.to_owned(),
        value: None,
        source,
    })
}

/// The write helper: `value` in one write to an existing file, or an error naming the path
/// and the value.
pub fn write(fs: &dyn Fs, path: &Path, value: &str) -> Result<(), IoError> {
    tracing::trace!(path = %path.display(), value, "write");
    fs.write(path, value).map_err(|source| IoError {
        op: Op::Write,
        path: path.to_owned(),
        value: Some(value.to_owned()),
        source,
    })
}

/// Wraps a directory operation's error with its path.
pub(crate) fn dir_op<T>(op: Op, path: &Path, r: io::Result<T>) -> Result<T, IoError> {
    r.map_err(|source| IoError {
        op,
        path: path.to_owned(),
        value: None,
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_never_creates_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cpuset.cpsu");
        let err = write(&RealFs, &path, "0-1").unwrap_err();
        assert_eq!(err.errno(), Some(libc::ENOENT));
        assert!(!path.exists());
        assert_eq!(err.value.as_deref(), Some("0-1"));
        let msg = err.to_string();
        assert!(
            msg.contains("cpuset.cpsu") && msg.contains("ENOENT"),
            "{msg}"
        );
    }

    #[test]
    fn write_replaces_the_whole_value() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cpuset.cpus");
        std::fs::write(&path, "0-15\n").unwrap();
        write(&RealFs, &path, "2").unwrap();
        assert_eq!(read(&RealFs, &path).unwrap(), "2");
    }
}
