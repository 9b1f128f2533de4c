//! Cgroups a test creates and always removes, shared by the `e2e` and `enact` test
//! binaries (each includes this file with `#[path]`).

// Each binary uses a different subset.
#![allow(dead_code)]

use std::process::Child;
use std::sync::atomic::{AtomicUsize, Ordering};

use placed_core::cpuset::{CpuSet, NodeSet};
use placed_host::cgroup::{CgroupPath, Cgroups};
use placed_host::enact::Host;

/// A process a test started in its cgroup, stopped before the cgroup is removed.
pub trait Load {
    fn stop(&mut self);
}

impl Load for Child {
    fn stop(&mut self) {
        let _ = self.kill();
        let _ = self.wait();
    }
}

/// The host, if this process may change its cgroups (root, a cpuset hierarchy we can
/// write); otherwise the reason not.
pub fn host() -> Result<Host, String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not running as root".into());
    }
    Host::detect().map_err(|e| format!("no usable cpuset hierarchy: {e}"))
}

/// [`host`], or `None` after saying why the test is skipped.
pub fn host_or_say() -> Option<Host> {
    match host() {
        Ok(h) => Some(h),
        Err(why) => {
            eprintln!("skipped, because {why}");
            None
        }
    }
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A cgroup this test created, directly below the root of the cpuset hierarchy. On drop
/// it is thawed, the loads in it are stopped, any other task is moved to the root, and the
/// cgroup (with any child cgroups) removed, also when the test failed.
pub struct TestCgroup<L: Load = Child> {
    pub cgroups: Cgroups,
    pub path: CgroupPath,
    pub loads: Vec<L>,
}

impl<L: Load> TestCgroup<L> {
    pub fn new(host: &Host, cpus: &CpuSet, mems: &NodeSet) -> Self {
        let name = format!(
            "placed-test-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        Self::named(host, &name, cpus, mems)
    }

    /// The same under a name of the caller's choosing (unique to this test process).
    pub fn named(host: &Host, name: &str, cpus: &CpuSet, mems: &NodeSet) -> Self {
        let path = CgroupPath::parse(name).expect("a valid cgroup name");
        let cgroups = host.cgroups().clone();
        cgroups
            .create(&path, cpus, mems)
            .expect("create the test cgroup");
        Self {
            cgroups,
            path,
            loads: Vec::new(),
        }
    }

    /// A child cgroup (removed with this one).
    pub fn child(&self, name: &str, cpus: &CpuSet, mems: &NodeSet) -> CgroupPath {
        let p = self.path.child(name).expect("a valid cgroup name");
        self.cgroups
            .create(&p, cpus, mems)
            .expect("create a child cgroup");
        p
    }

    /// Moves process `pid` into `cg` and keeps `load` to stop it at the end.
    pub fn adopt(&mut self, cg: &CgroupPath, pid: u32, load: L) {
        self.loads.push(load);
        self.cgroups.attach(cg, pid).expect("attach the load");
    }

    pub fn reference(&self) -> String {
        format!("cgroup:{}", self.path)
    }
}

impl<L: Load> Drop for TestCgroup<L> {
    fn drop(&mut self) {
        let tree = self
            .cgroups
            .subtree(&self.path)
            .unwrap_or_else(|_| vec![self.path.clone()]);
        for cg in &tree {
            let _ = self.cgroups.set_frozen(cg, false);
        }
        for load in &mut self.loads {
            load.stop();
        }
        for cg in tree.iter().rev() {
            for pid in self.cgroups.procs(cg).unwrap_or_default() {
                let _ = self.cgroups.attach(&CgroupPath::root(), pid);
            }
            if let Err(e) = self.cgroups.remove(cg) {
                eprintln!("warning: cannot remove test cgroup {cg}: {e}");
            }
        }
    }
}
