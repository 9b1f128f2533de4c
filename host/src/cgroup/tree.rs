//! One cgroup hierarchy rooted at a mount point: reads and writes of control files that turn
//! errnos into the errors of [`super::Error`].

use std::path::PathBuf;
use std::sync::Arc;

use super::error::{Error, explain};
use super::{CgroupPath, Version};
use crate::kernel::fs::{self, Fs, IoError, Op};
use placed_core::cpuset::IdSet;

/// A hierarchy: its mount point, its version and the file system it lives on.
#[derive(Debug, Clone)]
pub(crate) struct Tree {
    pub root: PathBuf,
    pub version: Version,
    pub fs: Arc<dyn Fs>,
}

impl Tree {
    pub fn new(root: impl Into<PathBuf>, version: Version, fs: Arc<dyn Fs>) -> Self {
        Self {
            root: root.into(),
            version,
            fs,
        }
    }

    pub fn dir(&self, cg: &CgroupPath) -> PathBuf {
        cg.under(&self.root)
    }

    /// Whether the cgroup exists; an error if it resolves outside the mount.
    pub fn exists(&self, cg: &CgroupPath) -> Result<bool, Error> {
        let dir = self.dir(cg);
        match self.fs.canonicalize(&dir) {
            Ok(real) => {
                let root = self.fs.canonicalize(&self.root).map_err(|source| IoError {
                    op: Op::Read,
                    path: self.root.clone(),
                    value: None,
                    source,
                })?;
                if !real.starts_with(&root) {
                    return Err(Error::OutsideMount {
                        path: dir,
                        mount: self.root.clone(),
                    });
                }
                Ok(true)
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
            Err(source) => Err(IoError {
                op: Op::Read,
                path: dir,
                value: None,
                source,
            }
            .into()),
        }
    }

    pub fn read(&self, cg: &CgroupPath, file: &'static str) -> Result<String, Error> {
        let path = self.dir(cg).join(file);
        fs::read(self.fs.as_ref(), &path).map_err(|e| self.classify(cg, file, e))
    }

    pub fn write(&self, cg: &CgroupPath, file: &'static str, value: &str) -> Result<(), Error> {
        let path = self.dir(cg).join(file);
        fs::write(self.fs.as_ref(), &path, value).map_err(|e| self.classify(cg, file, e))
    }

    pub fn read_set<K>(&self, cg: &CgroupPath, file: &'static str) -> Result<IdSet<K>, Error> {
        let text = self.read(cg, file)?;
        text.parse().map_err(|source| Error::Parse {
            path: self.dir(cg).join(file),
            content: text,
            source,
        })
    }

    /// A list of ids, one a line (`tasks`, `cgroup.procs`, `cgroup.threads`), sorted and
    /// without duplicates (v1 `cgroup.procs` may repeat a pid).
    pub fn read_ids(&self, cg: &CgroupPath, file: &'static str) -> Result<Vec<u32>, Error> {
        let text = self.read(cg, file)?;
        let mut ids = parse_ids(&text).ok_or_else(|| Error::Unexpected {
            path: self.dir(cg).join(file),
            content: text.chars().take(200).collect(),
        })?;
        ids.sort_unstable();
        ids.dedup();
        Ok(ids)
    }

    pub fn children(&self, cg: &CgroupPath) -> Result<Vec<CgroupPath>, Error> {
        let dir = self.dir(cg);
        let names = fs::dir_op(Op::List, &dir, self.fs.subdirs(&dir))
            .map_err(|e| self.classify_dir(cg, e))?;
        names
            .iter()
            .map(|n| cg.child(n).map_err(Error::from))
            .collect()
    }

    pub fn mkdir(&self, cg: &CgroupPath) -> Result<(), Error> {
        let dir = self.dir(cg);
        fs::dir_op(Op::Mkdir, &dir, self.fs.mkdir(&dir)).map_err(Error::from)
    }

    pub fn rmdir(&self, cg: &CgroupPath) -> Result<(), Error> {
        let dir = self.dir(cg);
        fs::dir_op(Op::Rmdir, &dir, self.fs.rmdir(&dir)).map_err(|e| match e.errno() {
            Some(libc::EBUSY) => Error::Refused {
                rule: "a cgroup with tasks or child cgroups cannot be removed",
                fault: placed_core::fault::Fault::Transient,
                source: Box::new(e),
            },
            _ => self.classify_dir(cg, e),
        })
    }

    /// Turns a failed read or write of `file` into the error that says why.
    fn classify(&self, cg: &CgroupPath, file: &'static str, e: IoError) -> Error {
        match e.errno() {
            // A removed cgroup whose file is still open answers ENODEV; a missing directory
            // ENOENT. A missing file in an existing directory is a controller that is not
            // enabled (v2) or not mounted here.
            Some(libc::ENODEV) => self.vanished(cg, e),
            Some(libc::ENOENT) if matches!(self.exists(cg), Ok(false)) => self.vanished(cg, e),
            // The file exists and the kernel still says ENOENT: a refusal (for example
            // `+cpuset` in a cgroup.subtree_control whose cgroup does not offer it).
            Some(libc::ENOENT) if self.fs.read(&e.path).is_err() => Error::MissingFile {
                file,
                hint: missing_file_hint(self.version, file),
                source: Box::new(e),
            },
            errno => match (e.op, explain(self.version, file, errno)) {
                (Op::Write, Some((rule, fault))) => Error::Refused {
                    rule,
                    fault,
                    source: Box::new(e),
                },
                _ => Error::from(e),
            },
        }
    }

    fn classify_dir(&self, cg: &CgroupPath, e: IoError) -> Error {
        match e.errno() {
            Some(libc::ENOENT | libc::ENODEV) => self.vanished(cg, e),
            _ => Error::from(e),
        }
    }

    fn vanished(&self, cg: &CgroupPath, source: IoError) -> Error {
        Error::Vanished {
            path: self.dir(cg),
            source: Box::new(source),
        }
    }
}

fn missing_file_hint(version: Version, file: &str) -> &'static str {
    match (version, file) {
        (Version::V2, f) if f.starts_with("cpuset.") => {
            "the cpuset controller is not enabled for this cgroup: add +cpuset to the \
             cgroup.subtree_control of every ancestor (placed does this when it prepares \
             a cgroup)"
        }
        (_, "cgroup.freeze" | "freezer.state") => {
            "this cgroup has no freezer (cgroup.freeze exists only in non-root v2 cgroups)"
        }
        (Version::V1, "cpuset.memory_migrate") => {
            "this kernel's cpuset controller has no memory_migrate; memory will not follow \
             cpuset.mems"
        }
        _ => "the kernel does not offer this control file here",
    }
}

/// Parses one id a line; `None` if a line is not a number.
pub(crate) fn parse_ids(text: &str) -> Option<Vec<u32>> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| l.parse().ok())
        .collect()
}
