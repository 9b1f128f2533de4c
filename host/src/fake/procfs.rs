//! The fake's `/proc` and `/sys`: the mount table, the host-wide files the noise probe and
//! the request checks read, and each task's files, kept in step with the cpusets.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{FakeKernel, touch};
use crate::cgroup::Version;
use placed_core::cpuset::{CpuSet, NodeSet};

/// Where a fake process's mappings start; each node's memory is one mapping, 1 GiB apart.
const MAPPING_BASE: u64 = 0x7f00_0000_0000;
const MAPPING_STRIDE: u64 = 1 << 30;
const PAGE: u64 = 4096;

/// A mount point as mountinfo escapes it (space, tab, newline, backslash in octal).
fn escaped(path: &Path) -> String {
    let mut out = String::new();
    for c in path.to_string_lossy().chars() {
        match c {
            ' ' | '\t' | '\n' | '\\' => {
                let _ = write!(out, "\\{:03o}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

impl FakeKernel {
    /// The mount table, the host-wide `/proc` files and `/sys`.
    pub(super) fn write_proc_and_sys(&self, cpus: &str, mems: &str) {
        let proc = self.proc_root();
        std::fs::create_dir_all(proc.join("self")).unwrap();
        std::fs::create_dir_all(proc.join("sys/kernel")).unwrap();
        let mut info = String::from("22 1 0:21 / / rw - tmpfs tmpfs rw\n");
        let mount = |id: u32, path: PathBuf, tail: &str| {
            format!("{id} 22 0:{id} / {} rw,nosuid - {tail}\n", escaped(&path))
        };
        match self.version {
            Version::V1 => {
                info += &mount(30, self.cpuset_root(), "cgroup cgroup rw,cpuset");
                info += &mount(31, self.freezer_root(), "cgroup cgroup rw,freezer");
                info += &mount(32, self.cpu_root(), "cgroup cgroup rw,cpu,cpuacct");
            }
            Version::V2 => {
                info += &mount(30, self.cpuset_root(), "cgroup2 cgroup2 rw,nsdelegate");
            }
        }
        touch(&proc.join("self"), "mountinfo", &info);
        touch(&proc.join("sys/kernel"), "numa_balancing", "0\n");
        let online: CpuSet = cpus.parse().unwrap();
        let mut stat = String::from("cpu  0 0 0 0 0 0 0 0 0 0\n");
        let mut header = String::new();
        let mut zeros = String::new();
        for cpu in online.iter() {
            let _ = writeln!(stat, "cpu{cpu} 0 0 0 0 0 0 0 0 0 0");
            let _ = write!(header, "       CPU{cpu}");
            zeros.push_str("          0");
        }
        touch(&proc, "stat", &stat);
        touch(
            &proc,
            "interrupts",
            &format!("{header}\nLOC:{zeros}   Local timer interrupts\n"),
        );
        let sys = self.sys_root();
        for (rel, value) in [
            ("devices/system/cpu/online", cpus),
            ("devices/system/node/has_memory", mems),
        ] {
            let path = sys.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, format!("{value}\n")).unwrap();
        }
    }

    /// `/proc/<pid>/` and `/proc/<tid>/` of a new process: its threads, `stat` (started at
    /// tick `pid`, so a new process is a new incarnation), counters at zero, no memory.
    pub(super) fn new_task_files(&self, pid: u32, tids: &[u32]) {
        let dir = self.proc_root().join(pid.to_string());
        for tid in tids {
            std::fs::create_dir_all(dir.join("task").join(tid.to_string())).unwrap();
            let t = self.proc_root().join(tid.to_string());
            std::fs::create_dir_all(&t).unwrap();
            touch(&t, "schedstat", "0 0 0\n");
            touch(
                &t,
                "stat",
                &format!(
                    "{tid} (fake) S 1 {pid} {pid} 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 {pid} 0 0\n"
                ),
            );
        }
        self.write_memory(pid);
    }

    /// Rewrites the status of one thread: its allowed sets and its process's `VmRSS`.
    pub(super) fn write_status(&self, tid: u32, cpus: &str, mems: &str) {
        let (pid, rss) = {
            let s = self.state();
            let pid = s
                .threads
                .iter()
                .find(|(_, t)| t.contains(&tid))
                .map_or(tid, |(p, _)| *p);
            let rss: u64 = s.memory.get(&pid).map_or(0, |m| m.values().sum());
            (pid, rss)
        };
        let dir = self.proc_root().join(tid.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        touch(
            &dir,
            "status",
            &format!(
                "Name:\tfake\nTgid:\t{pid}\nPid:\t{tid}\nVmRSS:\t{} kB\n\
                 Cpus_allowed_list:\t{cpus}\nMems_allowed_list:\t{mems}\n\
                 nonvoluntary_ctxt_switches:\t0\n",
                rss / 1024
            ),
        );
    }

    /// `maps` and `numa_maps` of a process from its memory per node (one anonymous mapping
    /// per node), and `VmRSS` in its threads' status.
    pub(super) fn write_memory(&self, pid: u32) {
        let memory = self.state().memory.get(&pid).cloned().unwrap_or_default();
        let (mut maps, mut numa) = (String::new(), String::new());
        for (i, (node, bytes)) in (0_u64..).zip(&memory) {
            let start = MAPPING_BASE + i * MAPPING_STRIDE;
            let pages = bytes.div_ceil(PAGE);
            let _ = writeln!(
                maps,
                "{start:x}-{:x} rw-p 00000000 00:00 0",
                start + pages * PAGE
            );
            let _ = writeln!(
                numa,
                "{start:x} default anon={pages} dirty={pages} N{node}={pages} kernelpagesize_kB=4"
            );
        }
        let dir = self.proc_root().join(pid.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        touch(&dir, "maps", &maps);
        touch(&dir, "numa_maps", &numa);
        let tids = self.state().threads.get(&pid).cloned().unwrap_or_default();
        for tid in tids {
            let status = self.proc_root().join(tid.to_string()).join("status");
            if let Ok(text) = std::fs::read_to_string(&status) {
                let rss: u64 = memory.values().sum();
                let text: String = text
                    .lines()
                    .map(|l| {
                        if l.starts_with("VmRSS:") {
                            format!("VmRSS:\t{} kB\n", rss / 1024)
                        } else {
                            format!("{l}\n")
                        }
                    })
                    .collect();
                touch(status.parent().unwrap(), "status", &text);
            }
        }
    }

    /// The pids in the cgroup at `dir` and below it.
    pub(super) fn procs_below(&self, dir: &Path) -> Vec<u32> {
        let mut pids = Vec::new();
        let mut stack = vec![dir.to_owned()];
        while let Some(d) = stack.pop() {
            pids.extend(ids_in(&d.join("cgroup.procs")));
            stack.extend(Self::child_dirs(&d));
        }
        pids
    }

    /// Brings every task's `/proc` files in line with the cpuset it is in: allowed sets in
    /// its status (unless escaped), its `cgroup` file and, after a `cpuset.mems` write
    /// (`migrate`), its memory where the cgroup migrates it.
    pub(super) fn sync(&self, migrate: bool) {
        let root = self.cpuset_root();
        let eff = (self.effective_name(true), self.effective_name(false));
        let mut stack: Vec<(PathBuf, CpuSet, NodeSet)> = vec![(
            root.clone(),
            self.set(&root.join(eff.0)),
            self.set(&root.join(eff.1)),
        )];
        while let Some((dir, up_cpus, up_mems)) = stack.pop() {
            // On v2 a cgroup without the cpuset controller inherits its parent's sets.
            let (cpus, mems) = if dir.join(eff.0).exists() {
                (self.set(&dir.join(eff.0)), self.set(&dir.join(eff.1)))
            } else {
                (up_cpus, up_mems)
            };
            let threads = match self.version {
                Version::V1 => "tasks",
                Version::V2 => "cgroup.threads",
            };
            let escaped = self.state().escaped.clone();
            for tid in ids_in(&dir.join(threads)) {
                if !escaped.contains(&tid) {
                    self.write_status(tid, &cpus.to_string(), &mems.to_string());
                }
            }
            let rel = dir
                .strip_prefix(&root)
                .unwrap_or(&dir)
                .display()
                .to_string();
            let migrates = self.version == Version::V2
                || std::fs::read_to_string(dir.join("cpuset.memory_migrate"))
                    .is_ok_and(|v| v.trim() == "1");
            for pid in ids_in(&dir.join("cgroup.procs")) {
                let line = match self.version {
                    Version::V1 => format!("4:cpuset:/{rel}\n3:freezer:/{rel}\n"),
                    Version::V2 => format!("0::/{rel}\n"),
                };
                self.proc_file(pid, "cgroup", &line);
                if migrate && migrates {
                    self.follow_mems(pid, &mems);
                }
            }
            for child in Self::child_dirs(&dir) {
                stack.push((child, cpus.clone(), mems.clone()));
            }
        }
    }

    /// Moves what lies outside `mems` to the lowest node of `mems`.
    fn follow_mems(&self, pid: u32, mems: &NodeSet) {
        let Some(to) = mems.iter().next() else {
            return;
        };
        let moved = {
            let mut s = self.state();
            let Some(memory) = s.memory.get_mut(&pid) else {
                return;
            };
            let outside: Vec<(u32, u64)> = memory
                .iter()
                .filter(|(n, _)| !mems.contains(**n))
                .map(|(n, b)| (*n, *b))
                .collect();
            for (node, bytes) in &outside {
                memory.remove(node);
                *memory.entry(to).or_default() += bytes;
            }
            !outside.is_empty()
        };
        if moved {
            self.write_memory(pid);
        }
    }
}

fn ids_in(path: &Path) -> Vec<u32> {
    std::fs::read_to_string(path)
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}
