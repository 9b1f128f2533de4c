//! Helpers for tests against the real kernel: skipping with a reason, a load process to
//! place, and cgroups that are removed whatever happens.

use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};

use placed_core::cpuset::{CpuSet, NodeSet};
use placed_host::cgroup::{CgroupPath, Fs, RealFs};
use placed_host::enact::Host;
use placed_host::kernel::{Files, Kernel};

/// Prints why a test does not run here and returns from it.
#[macro_export]
macro_rules! skip {
    ($($why:tt)*) => {{
        eprintln!("skipped, because {}", format!($($why)*));
        return;
    }};
}

#[path = "../../../tests/support/cgroup.rs"]
mod shared;

pub use shared::host;

/// The test cgroups of this binary hold [`Load`] processes.
pub type TestCgroup = shared::TestCgroup<Load>;

impl shared::Load for Load {
    fn stop(&mut self) {
        self.kill();
    }
}

impl shared::TestCgroup<Load> {
    /// Starts a load in `cg` (this cgroup or one of its children) and waits until it is
    /// ready; returns its pid.
    pub fn start(&mut self, cg: &CgroupPath, spec: &str) -> u32 {
        let mut load = Load::spawn(spec);
        let pid = load.pid;
        self.cgroups.attach(cg, pid).unwrap();
        load.go();
        self.loads.push(load);
        pid
    }
}

/// The online CPUs and the nodes with memory.
pub fn machine(host: &Host) -> (CpuSet, NodeSet) {
    (host.online_cpus().unwrap(), host.memory_nodes().unwrap())
}

/// What every test against the real kernel starts from: the host, its online CPUs and its
/// nodes with memory. [`scenario!`] makes one or skips the test with the reason.
pub struct Scenario {
    pub host: Host,
    pub cpus: CpuSet,
    pub nodes: NodeSet,
}

impl Scenario {
    /// Why not, when the tests cannot run here (not root, no cpuset hierarchy).
    pub fn new() -> Result<Self, String> {
        Ok(Self::on(host()?))
    }

    /// On a given host object (one reading through a faulty file system, say).
    pub fn on(host: Host) -> Self {
        let (cpus, nodes) = machine(&host);
        Self { host, cpus, nodes }
    }
}

/// `let Scenario { host, cpus, nodes } = scenario!();`, or the test skips with the reason.
#[macro_export]
macro_rules! scenario {
    () => {
        match $crate::enact::support::Scenario::new() {
            Ok(s) => s,
            Err(why) => $crate::skip!("{why}"),
        }
    };
}

/// A process of this test binary running `load_helper` (see mod.rs): it waits for "go",
/// touches `mib` MiB, starts `threads` threads, says ready, and sleeps until killed.
pub struct Load {
    pub pid: u32,
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Load {
    pub fn spawn(spec: &str) -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "enact::load_helper",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("PLACED_TEST_LOAD", spec)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        Self {
            pid: child.id(),
            child,
            stdin,
        }
    }

    fn go(&mut self) {
        let mut stdin = self.stdin.take().unwrap();
        writeln!(stdin, "go").unwrap();
        self.stdin = Some(stdin);
        let out = self.child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                if line.is_ok_and(|l| l.contains("PLACED-LOAD-READY")) {
                    let _ = tx.send(());
                    return;
                }
            }
        });
        // Generous: a TCG guest is slow, and the machine is shared. A panic here still
        // runs the cgroup guard's drop.
        if rx
            .recv_timeout(std::time::Duration::from_secs(120))
            .is_err()
        {
            panic!("load {} did not get ready", self.pid);
        }
    }

    /// Kills the load now (to test processes that exit).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The body of the load process, called from the `load_helper` test when
/// `PLACED_TEST_LOAD` is set: `threads=N,mib=M`.
pub fn load_main(spec: &str) {
    let mut threads = 1usize;
    let mut mib = 0usize;
    for kv in spec.split(',') {
        match kv.split_once('=') {
            Some(("threads", v)) => threads = v.parse().unwrap(),
            Some(("mib", v)) => mib = v.parse().unwrap(),
            _ => panic!("bad load spec {spec:?}"),
        }
    }
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    // Touch every page, so the memory is resident on the cgroup's nodes.
    let mut mem = vec![0u8; mib << 20];
    for i in (0..mem.len()).step_by(4096) {
        mem[i] = 1;
    }
    for _ in 1..threads {
        std::thread::Builder::new()
            .stack_size(64 << 10)
            .spawn(|| {
                loop {
                    std::thread::sleep(std::time::Duration::from_secs(3600));
                }
            })
            .unwrap();
    }
    // Straight to fd 1: println! would go to libtest's output capture.
    let mut out = std::io::stdout().lock();
    writeln!(out, "PLACED-LOAD-READY").unwrap();
    out.flush().unwrap();
    drop(out);
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
        std::hint::black_box(&mem);
    }
}

/// Bytes of a process's anonymous memory per node, from its numa_maps.
pub fn anon_bytes_on(pid: u32, node: u32) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/numa_maps")).unwrap();
    let mut total = 0;
    for line in text.lines().filter(|l| l.contains(" anon=")) {
        let page_kb: u64 = line
            .split_whitespace()
            .find_map(|t| t.strip_prefix("kernelpagesize_kB="))
            .and_then(|v| v.parse().ok())
            .unwrap_or(4);
        if let Some(n) = line
            .split_whitespace()
            .find_map(|t| t.strip_prefix(&format!("N{node}=")))
        {
            total += n.parse::<u64>().unwrap() * page_kb * 1024;
        }
    }
    total
}

/// Allowed CPUs and nodes of a task, from /proc.
pub fn allowed(tid: u32) -> Option<(CpuSet, NodeSet)> {
    let text = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    placed_host::enact::parse_status(&text)
}

/// Every thread of a process.
pub fn threads_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// The real file system with a fault injected: the write to a file whose path ends with
/// `suffix`, after `skip` successful ones, fails with `errno` instead of reaching the
/// kernel. Every write is recorded. For failures in the middle of a real apply (real
/// freezing, real writes, real migration, real rollback), which a test cannot provoke
/// from the kernel at a chosen step.
#[derive(Debug, Default)]
pub struct FaultyFs {
    fault: Mutex<Option<(String, i32, usize)>>,
    writes: Mutex<Vec<(String, String)>>,
}

impl FaultyFs {
    pub fn fail_write(&self, suffix: &str, errno: i32, skip: usize) {
        *self.fault.lock().unwrap() = Some((suffix.to_owned(), errno, skip));
    }

    /// The writes that went through, as (path, value).
    pub fn writes(&self) -> Vec<(String, String)> {
        self.writes.lock().unwrap().clone()
    }
}

impl Fs for FaultyFs {
    fn read(&self, path: &Path) -> io::Result<String> {
        RealFs.read(path)
    }

    fn write(&self, path: &Path, value: &str) -> io::Result<()> {
        {
            let mut fault = self.fault.lock().unwrap();
            if let Some((suffix, errno, skip)) = fault.as_mut() {
                if path.to_string_lossy().ends_with(suffix.as_str()) {
                    if *skip == 0 {
                        let e = *errno;
                        *fault = None;
                        return Err(io::Error::from_raw_os_error(e));
                    }
                    *skip -= 1;
                }
            }
        }
        RealFs.write(path, value)?;
        self.writes
            .lock()
            .unwrap()
            .push((path.to_string_lossy().into_owned(), value.to_owned()));
        Ok(())
    }

    fn mkdir(&self, path: &Path) -> io::Result<()> {
        RealFs.mkdir(path)
    }

    fn rmdir(&self, path: &Path) -> io::Result<()> {
        RealFs.rmdir(path)
    }

    fn subdirs(&self, path: &Path) -> io::Result<Vec<String>> {
        RealFs.subdirs(path)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        RealFs.canonicalize(path)
    }
}

/// This host, with every cgroup, `/proc` and `/sys` access going through `fs`.
pub fn host_through(fs: Arc<FaultyFs>) -> Host {
    let files = Files::new(fs, PathBuf::from("/proc"), PathBuf::from("/sys"));
    Host::new(Kernel::new(files).unwrap(), vec![]).unwrap()
}
