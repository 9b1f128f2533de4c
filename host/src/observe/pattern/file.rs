//! A pattern source's file: tailed from its end on a thread of its own, like `tail -F`.
//!
//! The daemon runs as root and the path comes from an API caller, and a regex over a file
//! is an oracle for its contents (an `increment` count of `^root:\$6\$a` lines). So a file
//! is read only when the operator allows it (`observe.pattern_files`: files, and
//! directories whose files are allowed), and the check is made on the file actually opened:
//! opened with `O_NOFOLLOW` (a link is refused) and `O_NONBLOCK` (a FIFO cannot hang the
//! open), it must be a regular file, not on procfs, sysfs or another kernel filesystem, and
//! its real path (`/proc/self/fd`, links resolved by the kernel) must lie under an allowed
//! entry. A path moved into place between a check and the open cannot get past that.
//!
//! Appends are read every [`TAIL_INTERVAL`]. A file that shrinks was truncated (logrotate's
//! `copytruncate`): it is read again from its start. A path that names another file than the
//! one open was rotated: the old file is read to its end, then the new one from its start,
//! checked as above. While the path names no file (between a rename and the next create)
//! the old file is kept.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::super::pushed::Reporter;
use super::lines::{LineMetric, Lines};
use super::{Ended, PatternError, end};

/// How often the file is checked for new lines. Readings are stamped when read, so this
/// bounds how late a reading's time can be.
pub const TAIL_INTERVAL: Duration = Duration::from_millis(20);

/// Bytes read per check: a log growing faster than this is read behind, not all at once.
const READ_BUDGET: usize = 4 << 20;
const CHUNK: usize = 64 << 10;

/// Kernel filesystems whose "regular files" are interfaces, not logs (statfs(2) magics).
const KERNEL_FILESYSTEMS: &[(i64, &str)] = &[
    (0x9fa0, "procfs"),
    (0x6265_6572, "sysfs"),
    (0x6367_7270, "cgroup2"),
    (0x0027_e0eb, "cgroup"),
    (0x6462_6720, "debugfs"),
    (0x7472_6163, "tracefs"),
    (0x7363_6673, "securityfs"),
    (0xcafe_4a11, "bpf"),
    (0x6265_6570, "configfs"),
    (0xde5e_81e4, "efivarfs"),
    (0x1cd1, "devpts"),
];

/// Why a file cannot be tailed.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The path is not absolute, or has `..` in it.
    #[error("pattern file {path:?}: {reason}")]
    Path { path: String, reason: &'static str },
    /// The operator allows no files.
    #[error(
        "pattern metrics cannot read files on this host: observe.pattern_files is empty (pattern file {path:?})"
    )]
    NoneAllowed { path: String },
    /// The file is not under an allowed entry.
    #[error(
        "pattern file {path:?} ({resolved}) is not allowed: observe.pattern_files lists {allowed}"
    )]
    NotAllowed {
        path: String,
        /// Where it really is, or `not checked` before it is opened.
        resolved: String,
        allowed: String,
    },
    /// It is not a regular file on a disk filesystem.
    #[error("pattern file {path:?} is {what}, not a regular file")]
    NotRegular { path: String, what: &'static str },
    #[error("cannot open pattern file {path:?}")]
    Open {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read pattern file {path:?}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

fn shown(path: &Path) -> String {
    placed_core::text::clip(&path.display().to_string(), 200)
}

fn listed(allow: &[PathBuf]) -> String {
    placed_core::text::clip(
        &allow
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        400,
    )
}

/// Checks the form of `path`: absolute and without `..`. A path that fails this can never
/// be read, wherever the operator allows files.
pub fn check_form(path: &Path) -> Result<(), FileError> {
    if !path.is_absolute() {
        return Err(FileError::Path {
            path: shown(path),
            reason: "not an absolute path",
        });
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(FileError::Path {
            path: shown(path),
            reason: "a path with `..` in it is refused",
        });
    }
    Ok(())
}

/// Checks `path` by its text alone, touching nothing: [`check_form`], and under one of
/// `allow` as written. Manage refuses what fails here; the open checks again on the file.
pub fn check_path(path: &Path, allow: &[PathBuf]) -> Result<(), FileError> {
    check_form(path)?;
    if allow.is_empty() {
        return Err(FileError::NoneAllowed { path: shown(path) });
    }
    if allow.iter().any(|entry| path.starts_with(entry)) {
        Ok(())
    } else {
        Err(FileError::NotAllowed {
            path: shown(path),
            resolved: "as written".into(),
            allowed: listed(allow),
        })
    }
}

/// Opens `path` for tailing if `allow` lets it be read (see the module's documentation).
pub fn open(path: &Path, allow: &[PathBuf]) -> Result<File, FileError> {
    check_path(path, allow)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|source| match source.raw_os_error() {
            Some(libc::ELOOP) => FileError::NotRegular {
                path: shown(path),
                what: "a symbolic link",
            },
            _ => FileError::Open {
                path: shown(path),
                source,
            },
        })?;
    let not_regular = |what| FileError::NotRegular {
        path: shown(path),
        what,
    };
    let meta = file.metadata().map_err(|source| FileError::Open {
        path: shown(path),
        source,
    })?;
    if !meta.is_file() {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        return Err(not_regular(if t.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a FIFO"
        } else if t.is_socket() {
            "a socket"
        } else {
            "a device"
        }));
    }
    if let Some(fs) = kernel_filesystem(&file) {
        return Err(not_regular(fs));
    }
    let real =
        std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).map_err(|source| {
            FileError::Open {
                path: shown(path),
                source,
            }
        })?;
    let inside = |entry: &PathBuf| match std::fs::canonicalize(entry) {
        Ok(e) => real.starts_with(&e),
        Err(_) => false,
    };
    if !allow.iter().any(inside) {
        return Err(FileError::NotAllowed {
            path: shown(path),
            resolved: shown(&real),
            allowed: listed(allow),
        });
    }
    Ok(file)
}

/// The kernel filesystem `file` lies on, if it is one.
fn kernel_filesystem(file: &File) -> Option<&'static str> {
    // SAFETY: statfs is plain old data; all zeros is a valid value.
    let mut buf: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: the descriptor is open for the call's duration and `buf` is a valid,
    // writable statfs the kernel fills.
    if unsafe { libc::fstatfs(file.as_raw_fd(), &mut buf) } != 0 {
        // Unknown: the other checks stand.
        return None;
    }
    #[allow(clippy::unnecessary_cast)] // f_type is i64 on some targets, u32/i32 on others.
    let magic = buf.f_type as i64;
    KERNEL_FILESYSTEMS
        .iter()
        .find(|(m, _)| *m == magic)
        .map(|(_, name)| *name)
}

/// The tailing thread: stopped when dropped (within one interval).
#[derive(Debug)]
pub(super) struct Tailing {
    stop: Arc<AtomicBool>,
}

impl Drop for Tailing {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// Opens `path` (checked against `allow`) and starts tailing it from its end.
pub(super) fn start(
    path: &Path,
    allow: &[PathBuf],
    metric: LineMetric,
    reporter: Reporter,
    ended: Ended,
) -> Result<Tailing, PatternError> {
    let mut file = open(path, allow)?;
    // Only lines written from now on: what is in the file describes the past.
    let offset = file
        .seek(SeekFrom::End(0))
        .map_err(|source| FileError::Read {
            path: shown(path),
            source,
        })?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut tail = Tail {
        path: path.to_owned(),
        allow: allow.to_vec(),
        file,
        offset,
        lines: Lines::default(),
        metric,
        reporter,
        buf: vec![0; CHUNK],
    };
    let flag = Arc::clone(&stop);
    std::thread::Builder::new()
        .name("pattern-file".into())
        .spawn(move || {
            while !flag.load(Ordering::Acquire) {
                if let Err(e) = tail.step() {
                    tracing::warn!(error = %placed_core::text::error_line(&e), "pattern metric file");
                    end(&ended, e.into());
                    return;
                }
                std::thread::sleep(TAIL_INTERVAL);
            }
        })
        .map_err(|source| FileError::Open {
            path: shown(path),
            source,
        })?;
    Ok(Tailing { stop })
}

struct Tail {
    path: PathBuf,
    allow: Vec<PathBuf>,
    file: File,
    offset: u64,
    lines: Lines,
    metric: LineMetric,
    reporter: Reporter,
    buf: Vec<u8>,
}

impl Tail {
    /// One check: new lines, truncation, rotation.
    fn step(&mut self) -> Result<(), FileError> {
        let read_error = |path: &Path| {
            let path = shown(path);
            move |source| FileError::Read { path, source }
        };
        let size = self.file.metadata().map_err(read_error(&self.path))?.len();
        if size < self.offset {
            self.file
                .seek(SeekFrom::Start(0))
                .map_err(read_error(&self.path))?;
            self.offset = 0;
            self.lines.reset();
        }
        if self.read_available()? < READ_BUDGET && self.rotated() {
            // Whatever was appended to the old file before the switch.
            while self.read_available()? == READ_BUDGET {}
            let (metric, reporter) = (&mut self.metric, &self.reporter);
            self.lines.finish(|l| parse(metric, reporter, l));
            self.file = open(&self.path, &self.allow)?;
            self.offset = 0;
            self.read_available()?;
        }
        Ok(())
    }

    /// Reads what was appended, up to [`READ_BUDGET`] bytes; returns how much.
    fn read_available(&mut self) -> Result<usize, FileError> {
        let mut read = 0;
        while read < READ_BUDGET {
            let n = match self.file.read(&mut self.buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(FileError::Read {
                        path: shown(&self.path),
                        source,
                    });
                }
            };
            read += n;
            self.offset += n as u64;
            let (metric, reporter) = (&mut self.metric, &self.reporter);
            self.lines
                .push(&self.buf[..n], |l| parse(metric, reporter, l));
        }
        Ok(read)
    }

    /// Whether the path now names another file than the one open. A missing path is not
    /// (yet) a rotation.
    fn rotated(&self) -> bool {
        let Ok(now) = std::fs::symlink_metadata(&self.path) else {
            return false;
        };
        let Ok(open) = self.file.metadata() else {
            return false;
        };
        (now.dev(), now.ino()) != (open.dev(), open.ino())
    }
}

fn parse(metric: &mut LineMetric, reporter: &Reporter, line: &str) {
    if let Some(value) = metric.line(line) {
        // An error means the source is gone; the thread stops at its next check.
        let _ = reporter.report(value);
    }
}
