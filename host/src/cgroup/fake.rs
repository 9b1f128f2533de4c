//! A fake kernel for tests of error paths: a cgroup tree of regular files in a temporary
//! directory, whose writes are checked against the kernel's cpuset rules and answered with
//! the kernel's errnos, plus injected faults.
//!
//! Where it differs from the kernel: pids are just numbers in files (no tasks, no
//! migration, no `/proc`); effective sets are recomputed on each cpuset write only; there
//! are no exclusive or partition flags; a removed cgroup answers ENOENT, never ENODEV;
//! freezing completes at once unless [`FakeKernel::stick_freeze`] says otherwise.

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{Cgroups, Fs, RealFs, Version};
use placed_core::cpuset::{CpuSet, IdSet, NodeSet};

#[derive(Debug)]
pub(crate) struct FakeKernel {
    dir: tempfile::TempDir,
    pub version: Version,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    faults: Vec<(String, i32, usize)>,
    read_faults: Vec<(String, i32, usize)>,
    writes: Vec<(String, String)>,
    stuck_freeze: bool,
}

fn errno(n: i32) -> io::Error {
    io::Error::from_raw_os_error(n)
}

fn touch(dir: &Path, name: &str, value: &str) {
    std::fs::write(dir.join(name), value).unwrap();
}

impl FakeKernel {
    /// A v1 host: cpuset and freezer hierarchies, the root cpuset holding `cpus` and `mems`.
    pub fn v1(cpus: &str, mems: &str) -> Arc<Self> {
        let k = Self::new(Version::V1);
        let root = k.dir.path().join("cpuset");
        std::fs::create_dir(&root).unwrap();
        for (f, v) in [
            ("cpuset.cpus", cpus),
            ("cpuset.mems", mems),
            ("cpuset.effective_cpus", cpus),
            ("cpuset.effective_mems", mems),
            ("cpuset.memory_migrate", "0"),
            ("tasks", ""),
            ("cgroup.procs", ""),
        ] {
            touch(&root, f, v);
        }
        let freezer = k.dir.path().join("freezer");
        std::fs::create_dir(&freezer).unwrap();
        touch(&freezer, "cgroup.procs", "");
        Arc::new(k)
    }

    /// A v2 host whose root offers cpuset, with `subtree` in its `cgroup.subtree_control`.
    pub fn v2(cpus: &str, mems: &str, subtree: &str) -> Arc<Self> {
        let k = Self::new(Version::V2);
        let root = k.dir.path().join("unified");
        std::fs::create_dir(&root).unwrap();
        for (f, v) in [
            ("cgroup.controllers", "cpuset cpu io memory pids"),
            ("cgroup.subtree_control", subtree),
            ("cpuset.cpus.effective", cpus),
            ("cpuset.mems.effective", mems),
            ("cgroup.procs", ""),
            ("cgroup.threads", ""),
        ] {
            touch(&root, f, v);
        }
        Arc::new(k)
    }

    fn new(version: Version) -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
            version,
            state: Mutex::default(),
        }
    }

    pub fn cpuset_root(&self) -> PathBuf {
        match self.version {
            Version::V1 => self.dir.path().join("cpuset"),
            Version::V2 => self.dir.path().join("unified"),
        }
    }

    pub fn freezer_root(&self) -> PathBuf {
        self.dir.path().join("freezer")
    }

    pub fn cgroups(self: &Arc<Self>) -> Cgroups {
        match self.version {
            Version::V1 => Cgroups::v1(self.cpuset_root(), Some(self.freezer_root()), self.clone()),
            Version::V2 => Cgroups::v2(self.cpuset_root(), self.clone()),
        }
    }

    /// Creates `rel` as the kernel would, then writes its sets (an empty value is not
    /// written). New cgroups first get their parent's sets (v1).
    pub fn cgroup(&self, rel: &str, cpus: &str, mems: &str) {
        let mut path = self.cpuset_root();
        for part in rel.split('/').filter(|p| !p.is_empty()) {
            path.push(part);
            if !path.exists() {
                self.mkdir(&path).unwrap();
                if self.version == Version::V1 {
                    let f = self
                        .freezer_root()
                        .join(path.strip_prefix(self.cpuset_root()).unwrap());
                    self.mkdir(&f).unwrap();
                    let parent = path.parent().unwrap().to_owned();
                    for file in ["cpuset.cpus", "cpuset.mems"] {
                        let v = std::fs::read_to_string(parent.join(file)).unwrap();
                        self.write(&path.join(file), &v).unwrap();
                    }
                }
            }
        }
        for (file, v) in [("cpuset.cpus", cpus), ("cpuset.mems", mems)] {
            if !v.is_empty() {
                self.write(&path.join(file), v).unwrap();
            }
        }
        self.state.lock().unwrap().writes.clear();
    }

    /// Puts task ids into a cgroup's task files, bypassing the rules.
    pub fn tasks(&self, rel: &str, ids: &[u32]) {
        let dir = self.cpuset_root().join(rel.trim_start_matches('/'));
        let text: String = ids.iter().map(|i| format!("{i}\n")).collect();
        let files: &[&str] = match self.version {
            Version::V1 => &["tasks", "cgroup.procs"],
            Version::V2 => &["cgroup.threads", "cgroup.procs"],
        };
        for f in files {
            touch(&dir, f, &text);
        }
    }

    /// The next write to a file whose path ends with `suffix` fails with `errno`.
    pub fn inject(&self, suffix: &str, errno: i32) {
        self.inject_after(suffix, errno, 0);
    }

    /// The write to a file whose path ends with `suffix` after `skip` successful ones fails
    /// with `errno`.
    pub fn inject_after(&self, suffix: &str, errno: i32, skip: usize) {
        self.state
            .lock()
            .unwrap()
            .faults
            .push((suffix.to_owned(), errno, skip));
    }

    /// The read of a file whose path ends with `suffix` after `skip` successful ones fails
    /// with `errno` (any file read through this `Fs`, the fake `/proc` included).
    pub fn inject_read_after(&self, suffix: &str, errno: i32, skip: usize) {
        self.state
            .lock()
            .unwrap()
            .read_faults
            .push((suffix.to_owned(), errno, skip));
    }

    /// Freezing never completes (a task stuck in uninterruptible sleep).
    pub fn stick_freeze(&self) {
        self.state.lock().unwrap().stuck_freeze = true;
    }

    /// Successful writes so far, as (path relative to the hierarchy root, value).
    pub fn writes(&self) -> Vec<(String, String)> {
        self.state.lock().unwrap().writes.clone()
    }

    /// A file's content, by path relative to the temporary directory's hierarchies.
    pub fn file(&self, rel: &str) -> String {
        std::fs::read_to_string(self.cpuset_root().join(rel.trim_start_matches('/')))
            .unwrap()
            .trim()
            .to_owned()
    }

    pub fn freezer_file(&self, rel: &str) -> String {
        std::fs::read_to_string(self.freezer_root().join(rel.trim_start_matches('/')))
            .unwrap()
            .trim()
            .to_owned()
    }

    fn in_freezer(&self, path: &Path) -> bool {
        self.version == Version::V1 && path.starts_with(self.freezer_root())
    }

    fn is_root(&self, dir: &Path) -> bool {
        dir == self.cpuset_root() || dir == self.freezer_root()
    }

    fn set<K>(&self, path: &Path) -> IdSet<K> {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_default()
    }

    fn has_tasks(&self, dir: &Path) -> bool {
        std::fs::read_to_string(dir.join("cgroup.procs")).is_ok_and(|s| !s.trim().is_empty())
    }

    fn child_dirs(dir: &Path) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// The effective-set file name for `file` (cpus or mems).
    fn effective_name(&self, cpus: bool) -> &'static str {
        match (self.version, cpus) {
            (Version::V1, true) => "cpuset.effective_cpus",
            (Version::V1, false) => "cpuset.effective_mems",
            (Version::V2, true) => "cpuset.cpus.effective",
            (Version::V2, false) => "cpuset.mems.effective",
        }
    }

    /// Recomputes v2 effective sets below `dir` (v1: effective = configured).
    fn refresh_effective(&self, dir: &Path, cpus: bool) {
        let conf = if cpus { "cpuset.cpus" } else { "cpuset.mems" };
        let eff = self.effective_name(cpus);
        let own: BTreeSet<u32> = self.set::<()>(&dir.join(conf)).iter().collect();
        let value = match self.version {
            Version::V1 => own.iter().copied().collect::<IdSet<()>>(),
            Version::V2 => {
                let parent: IdSet<()> = self.set(&dir.parent().unwrap().join(eff));
                let mine: IdSet<()> = own.iter().copied().collect();
                let inter = mine.intersection(&parent);
                if inter.is_empty() { parent } else { inter }
            }
        };
        touch(dir, eff, &value.to_string());
        for c in Self::child_dirs(dir) {
            if c.join(conf).exists() {
                self.refresh_effective(&c, cpus);
            }
        }
    }

    fn write_set(&self, path: &Path, value: &str) -> io::Result<()> {
        let dir = path.parent().unwrap();
        let cpus = path.file_name().unwrap() == "cpuset.cpus";
        let new: IdSet<()> = value.parse().map_err(|_| errno(libc::EINVAL))?;
        let root_eff: IdSet<()> = self.set(&self.cpuset_root().join(self.effective_name(cpus)));
        // Only online CPUs / nodes with memory (the root's).
        if !new.is_subset(&root_eff) {
            return Err(errno(libc::EINVAL));
        }
        if self.version == Version::V1 {
            let name = path.file_name().unwrap();
            let parent: IdSet<()> = self.set(&dir.parent().unwrap().join(name));
            if !new.is_subset(&parent) {
                return Err(errno(libc::EINVAL));
            }
            for c in Self::child_dirs(dir) {
                let child: IdSet<()> = self.set(&c.join(name));
                if !child.is_subset(&new) {
                    return Err(errno(libc::EBUSY));
                }
            }
            if new.is_empty() && self.has_tasks(dir) {
                return Err(errno(libc::ENOSPC));
            }
        }
        std::fs::write(path, value)?;
        self.refresh_effective(dir, cpus);
        Ok(())
    }

    fn write_procs(&self, path: &Path, value: &str) -> io::Result<()> {
        let dir = path.parent().unwrap();
        if !self.in_freezer(path) {
            match self.version {
                Version::V1 => {
                    let c: CpuSet = self.set(&dir.join("cpuset.cpus"));
                    let m: NodeSet = self.set(&dir.join("cpuset.mems"));
                    if c.is_empty() || m.is_empty() {
                        return Err(errno(libc::ENOSPC));
                    }
                }
                Version::V2 => {
                    let sub = std::fs::read_to_string(dir.join("cgroup.subtree_control"))?;
                    if !self.is_root(dir) && !sub.trim().is_empty() {
                        return Err(errno(libc::EBUSY));
                    }
                }
            }
        }
        let pid: u32 = value.trim().parse().map_err(|_| errno(libc::EINVAL))?;
        let mut ids = std::fs::read_to_string(path)?;
        ids.push_str(&format!("{pid}\n"));
        std::fs::write(path, &ids)?;
        for other in ["tasks", "cgroup.threads"] {
            if dir.join(other).exists() {
                std::fs::write(dir.join(other), &ids)?;
            }
        }
        Ok(())
    }

    fn write_subtree_control(&self, path: &Path, value: &str) -> io::Result<()> {
        let dir = path.parent().unwrap();
        let mut on: Vec<String> = std::fs::read_to_string(path)?
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        let available = std::fs::read_to_string(dir.join("cgroup.controllers"))?;
        for token in value.split_whitespace() {
            let (add, name) = token.split_at(1);
            if !available.split_whitespace().any(|c| c == name) {
                return Err(errno(libc::ENOENT));
            }
            if add == "+" {
                if !self.is_root(dir) && self.has_tasks(dir) {
                    return Err(errno(libc::EBUSY));
                }
                if !on.iter().any(|c| c == name) {
                    on.push(name.to_owned());
                }
            } else {
                on.retain(|c| c != name);
            }
        }
        std::fs::write(path, on.join(" "))?;
        // What the children may enable is what their parent enables now.
        for c in Self::child_dirs(dir) {
            std::fs::write(c.join("cgroup.controllers"), on.join(" "))?;
            if on.iter().any(|x| x == "cpuset") && !c.join("cpuset.cpus").exists() {
                self.add_cpuset_files(&c);
            }
        }
        Ok(())
    }

    fn add_cpuset_files(&self, dir: &Path) {
        let parent = dir.parent().unwrap();
        for (f, v) in [
            ("cpuset.cpus", String::new()),
            ("cpuset.mems", String::new()),
            (
                "cpuset.cpus.effective",
                std::fs::read_to_string(parent.join("cpuset.cpus.effective")).unwrap(),
            ),
            (
                "cpuset.mems.effective",
                std::fs::read_to_string(parent.join("cpuset.mems.effective")).unwrap(),
            ),
        ] {
            touch(dir, f, &v);
        }
    }
}

/// The errno of the first fault that matches `path` and is due; counts down the others'
/// skips.
fn take_fault(faults: &mut Vec<(String, i32, usize)>, path: &Path) -> Option<i32> {
    let p = path.to_string_lossy();
    let i = faults.iter().position(|(s, ..)| p.ends_with(s.as_str()))?;
    if faults[i].2 == 0 {
        return Some(faults.remove(i).1);
    }
    faults[i].2 -= 1;
    None
}

impl Fs for FakeKernel {
    fn read(&self, path: &Path) -> io::Result<String> {
        if let Some(e) = take_fault(&mut self.state.lock().unwrap().read_faults, path) {
            return Err(errno(e));
        }
        RealFs.read(path)
    }

    fn write(&self, path: &Path, value: &str) -> io::Result<()> {
        if let Some(e) = take_fault(&mut self.state.lock().unwrap().faults, path) {
            return Err(errno(e));
        }
        if !path.exists() {
            return Err(errno(libc::ENOENT));
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        match name {
            "cpuset.cpus" | "cpuset.mems" => self.write_set(path, value)?,
            "cgroup.procs" | "tasks" => self.write_procs(path, value)?,
            "cgroup.subtree_control" => self.write_subtree_control(path, value)?,
            "cgroup.freeze" => {
                let frozen = value.trim() == "1" && !self.state.lock().unwrap().stuck_freeze;
                std::fs::write(path, value)?;
                touch(
                    path.parent().unwrap(),
                    "cgroup.events",
                    &format!("populated 1\nfrozen {}\n", u8::from(frozen)),
                );
            }
            "freezer.state" => {
                let state = match value.trim() {
                    "FROZEN" if self.state.lock().unwrap().stuck_freeze => "FREEZING",
                    "FROZEN" => "FROZEN",
                    "THAWED" => "THAWED",
                    _ => return Err(errno(libc::EINVAL)),
                };
                std::fs::write(path, state)?;
            }
            _ => RealFs.write(path, value)?,
        }
        let root = if self.in_freezer(path) {
            self.freezer_root()
        } else {
            self.cpuset_root()
        };
        let rel = path
            .strip_prefix(&root)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned();
        self.state
            .lock()
            .unwrap()
            .writes
            .push((rel, value.to_owned()));
        Ok(())
    }

    fn mkdir(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir(path)?;
        if self.in_freezer(path) {
            touch(path, "freezer.state", "THAWED");
            touch(path, "cgroup.procs", "");
            return Ok(());
        }
        match self.version {
            Version::V1 => {
                for (f, v) in [
                    ("cpuset.cpus", ""),
                    ("cpuset.mems", ""),
                    ("cpuset.effective_cpus", ""),
                    ("cpuset.effective_mems", ""),
                    ("cpuset.memory_migrate", "0"),
                    ("tasks", ""),
                    ("cgroup.procs", ""),
                ] {
                    touch(path, f, v);
                }
            }
            Version::V2 => {
                let parent = path.parent().unwrap();
                let sub = std::fs::read_to_string(parent.join("cgroup.subtree_control"))?;
                for (f, v) in [
                    ("cgroup.controllers", sub.as_str()),
                    ("cgroup.subtree_control", ""),
                    ("cgroup.procs", ""),
                    ("cgroup.threads", ""),
                    ("cgroup.freeze", "0"),
                    ("cgroup.events", "populated 0\nfrozen 0\n"),
                ] {
                    touch(path, f, v);
                }
                if sub.split_whitespace().any(|c| c == "cpuset") {
                    self.add_cpuset_files(path);
                }
            }
        }
        Ok(())
    }

    fn rmdir(&self, path: &Path) -> io::Result<()> {
        if !path.exists() {
            return Err(errno(libc::ENOENT));
        }
        if self.has_tasks(path) || !Self::child_dirs(path).is_empty() {
            return Err(errno(libc::EBUSY));
        }
        std::fs::remove_dir_all(path)
    }

    fn subdirs(&self, path: &Path) -> io::Result<Vec<String>> {
        RealFs.subdirs(path)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        RealFs.canonicalize(path)
    }
}
