//! The fake's [`Fs`]: cgroup writes checked against the kernel's rules and answered with its
//! errnos, injected faults, and the record of successful writes.

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

use super::{FakeKernel, touch};
use crate::cgroup::Version;
use crate::kernel::fs::{Fs, RealFs};
use placed_core::cpuset::{CpuSet, IdSet, NodeSet};

pub(super) fn errno(n: i32) -> io::Error {
    io::Error::from_raw_os_error(n)
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

impl FakeKernel {
    pub(super) fn in_freezer(&self, path: &Path) -> bool {
        self.version == Version::V1 && path.starts_with(self.freezer_root())
    }

    fn is_root(&self, dir: &Path) -> bool {
        dir == self.cpuset_root() || dir == self.freezer_root()
    }

    pub(super) fn set<K>(&self, path: &Path) -> IdSet<K> {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_default()
    }

    fn has_tasks(&self, dir: &Path) -> bool {
        std::fs::read_to_string(dir.join("cgroup.procs")).is_ok_and(|s| !s.trim().is_empty())
    }

    pub(super) fn child_dirs(dir: &Path) -> Vec<PathBuf> {
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

    /// The effective-set file name for cpus or mems.
    pub(super) fn effective_name(&self, cpus: bool) -> &'static str {
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
        // Tasks follow; a mems change moves their memory where the cgroup migrates it.
        self.sync(!cpus);
        Ok(())
    }

    /// A pid written to `cgroup.procs` (or a tid to v1 `tasks`): the process moves here from
    /// wherever it was in this hierarchy.
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
        let id: u32 = value.trim().parse().map_err(|_| errno(libc::EINVAL))?;
        let tids = {
            let s = self.state();
            s.threads
                .iter()
                .find(|(_, tids)| tids.contains(&id))
                .map_or_else(|| vec![id], |(_, tids)| tids.clone())
        };
        let root = if self.in_freezer(path) {
            self.freezer_root()
        } else {
            self.cpuset_root()
        };
        self.leave(&root, &tids);
        let add = |file: &str, ids: &[u32]| -> io::Result<()> {
            let p = dir.join(file);
            if p.exists() {
                let mut text = std::fs::read_to_string(&p)?;
                for i in ids {
                    text.push_str(&format!("{i}\n"));
                }
                std::fs::write(p, text)?;
            }
            Ok(())
        };
        add("cgroup.procs", &tids[..1])?;
        add("tasks", &tids)?;
        add("cgroup.threads", &tids)?;
        if !self.in_freezer(path) {
            self.sync(false);
        }
        Ok(())
    }

    /// Takes `tids` (one process's threads) out of every cgroup of the hierarchy at `root`.
    pub(super) fn leave(&self, root: &Path, tids: &[u32]) {
        let mut stack = vec![root.to_owned()];
        while let Some(dir) = stack.pop() {
            for file in ["cgroup.procs", "tasks", "cgroup.threads"] {
                let p = dir.join(file);
                let Ok(text) = std::fs::read_to_string(&p) else {
                    continue;
                };
                let kept: String = text
                    .lines()
                    .filter(|l| l.trim().parse().map_or(true, |i: u32| !tids.contains(&i)))
                    .map(|l| format!("{l}\n"))
                    .collect();
                if kept != text {
                    std::fs::write(&p, kept).unwrap();
                }
            }
            stack.extend(Self::child_dirs(&dir));
        }
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

    /// A v1 cpu cgroup's files: no quota.
    pub(super) fn cpu_files(&self, dir: &Path) {
        touch(dir, "cpu.cfs_quota_us", "-1\n");
        touch(dir, "cpu.cfs_period_us", "100000\n");
    }

    fn write_freeze(&self, path: &Path, value: &str) -> io::Result<()> {
        let stuck = self.state().stuck_freeze;
        match path.file_name().and_then(|n| n.to_str()) {
            Some("cgroup.freeze") => {
                let frozen = value.trim() == "1" && !stuck;
                std::fs::write(path, value)?;
                touch(
                    path.parent().unwrap(),
                    "cgroup.events",
                    &format!("populated 1\nfrozen {}\n", u8::from(frozen)),
                );
            }
            _ => {
                let state = match value.trim() {
                    "FROZEN" if stuck => "FREEZING",
                    "FROZEN" => "FROZEN",
                    "THAWED" => "THAWED",
                    _ => return Err(errno(libc::EINVAL)),
                };
                std::fs::write(path, state)?;
            }
        }
        Ok(())
    }

    /// Records a successful write by its path relative to its hierarchy.
    fn record(&self, path: &Path, value: &str) {
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
        self.state().writes.push((rel, value.to_owned()));
    }

    fn mkdir_v1(&self, path: &Path) {
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
        // Runtimes make a container's cgroup in every hierarchy; the fake mirrors the
        // cpu one, where the quota is.
        if let Ok(rel) = path.strip_prefix(self.cpuset_root()) {
            let cpu = self.cpu_root().join(rel);
            if std::fs::create_dir_all(&cpu).is_ok() {
                self.cpu_files(&cpu);
            }
        }
    }

    fn mkdir_v2(&self, path: &Path) -> io::Result<()> {
        let parent = path.parent().unwrap();
        let sub = std::fs::read_to_string(parent.join("cgroup.subtree_control"))?;
        for (f, v) in [
            ("cgroup.controllers", sub.as_str()),
            ("cgroup.subtree_control", ""),
            ("cgroup.procs", ""),
            ("cgroup.threads", ""),
            ("cgroup.freeze", "0"),
            ("cgroup.events", "populated 0\nfrozen 0\n"),
            ("cpu.max", "max 100000\n"),
        ] {
            touch(path, f, v);
        }
        if sub.split_whitespace().any(|c| c == "cpuset") {
            self.add_cpuset_files(path);
        }
        Ok(())
    }
}

impl Fs for FakeKernel {
    fn read(&self, path: &Path) -> io::Result<String> {
        if let Some(e) = take_fault(&mut self.state().read_faults, path) {
            return Err(errno(e));
        }
        RealFs.read(path)
    }

    fn write(&self, path: &Path, value: &str) -> io::Result<()> {
        if let Some(e) = take_fault(&mut self.state().faults, path) {
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
            "cgroup.freeze" | "freezer.state" => self.write_freeze(path, value)?,
            _ => RealFs.write(path, value)?,
        }
        self.record(path, value);
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
            Version::V1 => self.mkdir_v1(path),
            Version::V2 => self.mkdir_v2(path)?,
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
        std::fs::remove_dir_all(path)?;
        if self.version == Version::V1 {
            if let Ok(rel) = path.strip_prefix(self.cpuset_root()) {
                let _ = std::fs::remove_dir_all(self.cpu_root().join(rel));
            }
        }
        Ok(())
    }

    fn subdirs(&self, path: &Path) -> io::Result<Vec<String>> {
        RealFs.subdirs(path)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        RealFs.canonicalize(path)
    }
}
