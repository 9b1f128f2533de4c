//! A fake host for tests: a cgroup tree, `/proc`, `/sys` and a mount table in a temporary
//! directory, behind the same [`Fs`] as the real kernel. Writes are checked against the
//! kernel's cpuset rules and answered with its errnos; faults can be injected; tasks and
//! their memory follow the cpusets they are in.
//!
//! Public with the `fake` feature of placed-host, so that the daemon's tests build a whole
//! [`Host`] on it ([`FakeKernel::host`]) and run without root.
//!
//! # What it does as the kernel does
//!
//! - `<proc>/self/mountinfo` lists its hierarchies: v1 `cpuset`, `freezer` and `cpu`
//!   (quota) mounts, or one cgroup2 mount; [`Kernel::new`] finds them as on a real host.
//! - cpuset writes obey the rules of `kernel/cgroup/cpuset.c` (within the parent's, children
//!   within theirs, no empty set with tasks, online CPUs and nodes with memory only), v2's
//!   `+cpuset` enabling and no-internal-process rules, and effective sets follow.
//! - When a cgroup's cpuset changes, `/proc/<tid>/status` of every task below it shows the
//!   new `Cpus_allowed_list` and `Mems_allowed_list` (so [`Host::apply`]'s verification passes),
//!   unless the task was made to [`FakeKernel::escape`].
//! - A process's resident memory per node ([`FakeKernel::set_memory`]) is in its `maps` and
//!   `numa_maps` (and `VmRSS`); a `cpuset.mems` write moves what lies outside the new nodes,
//!   on v2 always and on v1 where `cpuset.memory_migrate` is 1.
//! - Writing a pid to `cgroup.procs` moves the process out of its previous cgroup of that
//!   hierarchy and updates `/proc/<pid>/cgroup`.
//! - Cgroups can be created ([`FakeKernel::cgroup`]) and removed with their tasks
//!   ([`FakeKernel::remove_cgroup`]): a container appears and vanishes.
//!
//! # Where it differs from the kernel
//!
//! - Tasks are numbers in files: nothing runs. [`FakeKernel::process`] hands out pids above
//!   the kernel's `PID_MAX_LIMIT` (2^22), so the real `move_pages(2)` of the fast and
//!   throttled modes fails on them with ESRCH and touches no real process; their memory then
//!   moves only with the final `cpuset.mems` write.
//! - Memory outside the new nodes all goes to the lowest new node (the kernel keeps nodes'
//!   relative positions); nothing moves when a task joins a cgroup.
//! - Writing a thread id to v1 `tasks` moves its whole process.
//! - `/proc/stat`, `/proc/interrupts` and every task's `schedstat` are constant: the noise
//!   probe works and sees no noise.
//! - v2 `cpu.max` exists in every cgroup (the kernel has it only where the parent enables
//!   `+cpu`); v1 has no `perf_event` hierarchy; there are no exclusive or partition flags; a
//!   removed cgroup answers ENOENT, never ENODEV; freezing completes at once unless
//!   [`FakeKernel::stick_freeze`] says otherwise.

// A fixture whose own temporary directory cannot be written has failed its test: panicking
// with the error is the right report.
#![allow(clippy::unwrap_used, reason = "test fixture; see above")]

mod procfs;
mod rules;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::cgroup::{Cgroups, Version};
use crate::enact::Host;
use crate::kernel::fs::Fs;
use crate::kernel::{Files, Kernel};

/// The first pid [`FakeKernel::process`] hands out: above `PID_MAX_LIMIT`, which no real
/// process can have.
pub const FIRST_PID: u32 = (1 << 22) + 1000;

/// A fake kernel: cgroup hierarchies, `/proc` and `/sys` in a temporary directory.
#[derive(Debug)]
pub struct FakeKernel {
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
    /// Each process's threads (the pid first).
    threads: BTreeMap<u32, Vec<u32>>,
    /// Each process's resident bytes per node.
    memory: BTreeMap<u32, BTreeMap<u32, u64>>,
    /// Threads whose status no longer follows their cpuset.
    escaped: BTreeSet<u32>,
    next_pid: u32,
}

fn touch(dir: &Path, name: &str, value: &str) {
    std::fs::write(dir.join(name), value).unwrap();
}

impl FakeKernel {
    /// A v1 host: cpuset, freezer and cpu hierarchies, the root cpuset holding `cpus` (the
    /// online CPUs) and `mems` (the nodes with memory).
    pub fn v1(cpus: &str, mems: &str) -> Arc<Self> {
        let k = Self::new(Version::V1, cpus, mems);
        let root = k.cpuset_root();
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
        let freezer = k.freezer_root();
        std::fs::create_dir(&freezer).unwrap();
        touch(&freezer, "cgroup.procs", "");
        let cpu = k.cpu_root();
        std::fs::create_dir(&cpu).unwrap();
        k.cpu_files(&cpu);
        Arc::new(k)
    }

    /// A v2 host whose root offers cpuset, with `subtree` in its `cgroup.subtree_control`.
    pub fn v2(cpus: &str, mems: &str, subtree: &str) -> Arc<Self> {
        let k = Self::new(Version::V2, cpus, mems);
        let root = k.cpuset_root();
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

    fn new(version: Version, cpus: &str, mems: &str) -> Self {
        let k = Self {
            dir: tempfile::tempdir().unwrap(),
            version,
            state: Mutex::new(State {
                next_pid: FIRST_PID,
                ..State::default()
            }),
        };
        k.write_proc_and_sys(cpus, mems);
        k
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    /// The temporary directory everything lives in.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn cpuset_root(&self) -> PathBuf {
        match self.version {
            Version::V1 => self.dir().join("cpuset"),
            Version::V2 => self.dir().join("unified"),
        }
    }

    pub fn freezer_root(&self) -> PathBuf {
        self.dir().join("freezer")
    }

    /// The v1 cpu hierarchy (on v2, the unified one).
    pub fn cpu_root(&self) -> PathBuf {
        match self.version {
            Version::V1 => self.dir().join("cpu"),
            Version::V2 => self.cpuset_root(),
        }
    }

    pub fn proc_root(&self) -> PathBuf {
        self.dir().join("proc")
    }

    pub fn sys_root(&self) -> PathBuf {
        self.dir().join("sys")
    }

    /// `/proc` and `/sys` of this fake, read through it.
    pub fn files(self: &Arc<Self>) -> Files {
        Files::new(self.clone(), self.proc_root(), self.sys_root())
    }

    /// The kernel layer on this fake, its mount table read from its own mountinfo.
    pub fn kernel(self: &Arc<Self>) -> Kernel {
        Kernel::new(self.files()).unwrap()
    }

    /// The cpuset hierarchy, found through [`FakeKernel::kernel`] (each call has its own
    /// freeze registry).
    pub fn cgroups(self: &Arc<Self>) -> Cgroups {
        Cgroups::of(&self.kernel()).unwrap()
    }

    /// A whole [`Host`] on this fake, with no container engines.
    pub fn host(self: &Arc<Self>) -> Host {
        Host::new(self.kernel(), Vec::new()).unwrap()
    }

    /// Creates `rel` as the kernel would (and its ancestors), then writes its sets (an empty
    /// value is not written). New cgroups first get their parent's sets (v1).
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
        self.state().writes.clear();
    }

    /// Removes `rel` and everything below it from every hierarchy, its processes exiting
    /// first: the container stopped.
    pub fn remove_cgroup(&self, rel: &str) {
        let rel = rel.trim_start_matches('/');
        let dir = self.cpuset_root().join(rel);
        for pid in self.procs_below(&dir) {
            self.exit(pid);
        }
        for root in [self.cpuset_root(), self.freezer_root(), self.cpu_root()] {
            let d = root.join(rel);
            if d.exists() {
                std::fs::remove_dir_all(d).unwrap();
            }
        }
    }

    /// Puts task ids into a cgroup's task files as they are (replacing what was there),
    /// bypassing the rules; each becomes a one-thread process in `/proc`. The ids are taken
    /// as given: use [`FakeKernel::process`] for tasks a fast or throttled move may reach.
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
        for &id in ids {
            self.state().threads.entry(id).or_insert_with(|| vec![id]);
            self.new_task_files(id, &[id]);
        }
        self.sync(false);
    }

    /// Starts a process of `threads` threads (at least one) in `rel` through its
    /// `cgroup.procs`, as a runtime would; returns its pid.
    pub fn process(&self, rel: &str, threads: usize) -> u32 {
        let tids: Vec<u32> = {
            let mut s = self.state();
            let pid = s.next_pid;
            let n = u32::try_from(threads.max(1)).unwrap();
            s.next_pid += n;
            (pid..pid + n).collect()
        };
        let pid = tids[0];
        self.state().threads.insert(pid, tids.clone());
        self.new_task_files(pid, &tids);
        let procs = self
            .cpuset_root()
            .join(rel.trim_start_matches('/'))
            .join("cgroup.procs");
        self.write(&procs, &pid.to_string()).unwrap();
        if self.version == Version::V1 {
            let freezer = self
                .freezer_root()
                .join(rel.trim_start_matches('/'))
                .join("cgroup.procs");
            self.write(&freezer, &pid.to_string()).unwrap();
        }
        self.state().writes.clear();
        pid
    }

    /// The process exits: gone from its cgroups and from `/proc`.
    pub fn exit(&self, pid: u32) {
        let tids = self
            .state()
            .threads
            .remove(&pid)
            .unwrap_or_else(|| vec![pid]);
        self.state().memory.remove(&pid);
        for root in [self.cpuset_root(), self.freezer_root()] {
            self.leave(&root, &tids);
        }
        for tid in &tids {
            let _ = std::fs::remove_dir_all(self.proc_root().join(tid.to_string()));
        }
    }

    /// Sets a process's resident memory: `bytes` (a multiple of 4 KiB) on each node.
    pub fn set_memory(&self, pid: u32, per_node: &[(u32, u64)]) {
        self.state()
            .memory
            .insert(pid, per_node.iter().copied().collect());
        self.write_memory(pid);
    }

    /// A process's resident memory per node, as its `numa_maps` says.
    pub fn memory(&self, pid: u32) -> Vec<(u32, u64)> {
        self.state()
            .memory
            .get(&pid)
            .map(|m| m.iter().map(|(n, b)| (*n, *b)).collect())
            .unwrap_or_default()
    }

    /// The thread's `/proc/<tid>/status` stops following its cpuset and shows `cpus` and
    /// `mems`: a task the kernel failed to move.
    pub fn escape(&self, tid: u32, cpus: &str, mems: &str) {
        self.state().escaped.insert(tid);
        self.write_status(tid, cpus, mems);
    }

    /// Writes a file of `/proc/<pid>/` as given (a fixture the fake does not make itself).
    pub fn proc_file(&self, pid: u32, file: &str, text: &str) {
        let dir = self.proc_root().join(pid.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        touch(&dir, file, text);
    }

    /// Gives `rel` a CPU bandwidth quota of `quota_us` per `period_us`.
    pub fn set_cpu_quota(&self, rel: &str, quota_us: u64, period_us: u64) {
        let dir = self.cpu_root().join(rel.trim_start_matches('/'));
        std::fs::create_dir_all(&dir).unwrap();
        match self.version {
            Version::V1 => {
                touch(&dir, "cpu.cfs_quota_us", &format!("{quota_us}\n"));
                touch(&dir, "cpu.cfs_period_us", &format!("{period_us}\n"));
            }
            Version::V2 => touch(&dir, "cpu.max", &format!("{quota_us} {period_us}\n")),
        }
    }

    /// The next write to a file whose path ends with `suffix` fails with `errno`.
    pub fn inject(&self, suffix: &str, errno: i32) {
        self.inject_after(suffix, errno, 0);
    }

    /// The write to a file whose path ends with `suffix` after `skip` successful ones fails
    /// with `errno`.
    pub fn inject_after(&self, suffix: &str, errno: i32, skip: usize) {
        self.state().faults.push((suffix.to_owned(), errno, skip));
    }

    /// The read of a file whose path ends with `suffix` after `skip` successful ones fails
    /// with `errno` (any file read through this `Fs`, the fake `/proc` included).
    pub fn inject_read_after(&self, suffix: &str, errno: i32, skip: usize) {
        self.state()
            .read_faults
            .push((suffix.to_owned(), errno, skip));
    }

    /// Freezing never completes (a task stuck in uninterruptible sleep).
    pub fn stick_freeze(&self) {
        self.state().stuck_freeze = true;
    }

    /// Successful cgroup writes so far, as (path relative to the hierarchy root, value).
    pub fn writes(&self) -> Vec<(String, String)> {
        self.state().writes.clone()
    }

    /// A file's content, by path relative to the cpuset hierarchy's root.
    pub fn file(&self, rel: &str) -> String {
        read_trimmed(&self.cpuset_root().join(rel.trim_start_matches('/')))
    }

    /// A file's content, by path relative to the freezer hierarchy's root.
    pub fn freezer_file(&self, rel: &str) -> String {
        read_trimmed(&self.freezer_root().join(rel.trim_start_matches('/')))
    }
}

fn read_trimmed(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap().trim().to_owned()
}

#[cfg(test)]
mod tests;
