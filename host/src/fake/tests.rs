//! The fake behaves like the kernel where placed relies on it.

use super::*;
use crate::cgroup::CgroupPath;
use crate::migrate::Mode;
use crate::observe::{NoiseProbe, Target};
use placed_core::fault::Fault;

fn cg(s: &str) -> CgroupPath {
    CgroupPath::parse(s).unwrap()
}

/// The allowed lists in a thread's status.
fn allowed(k: &FakeKernel, tid: u32) -> (String, String) {
    let text = std::fs::read_to_string(k.proc_root().join(format!("{tid}/status"))).unwrap();
    let (cpus, mems) = crate::enact::parse_status(&text).unwrap();
    (cpus.to_string(), mems.to_string())
}

#[test]
fn tasks_show_the_cpuset_they_are_in_and_follow_its_writes() {
    for k in [
        FakeKernel::v1("0-7", "0-1"),
        FakeKernel::v2("0-7", "0-1", "cpuset"),
    ] {
        k.cgroup("/a", "0-3", "0-1");
        let pid = k.process("/a", 3);
        for tid in pid..pid + 3 {
            assert_eq!(
                allowed(&k, tid),
                ("0-3".into(), "0-1".into()),
                "{:?}",
                k.version
            );
        }
        let c = k.cgroups();
        c.set_cpus(&cg("/a"), &"2-3".parse().unwrap()).unwrap();
        c.set_mems(&cg("/a"), &"1".parse().unwrap()).unwrap();
        for tid in pid..pid + 3 {
            assert_eq!(
                allowed(&k, tid),
                ("2-3".into(), "1".into()),
                "{:?}",
                k.version
            );
        }
        // An escaped thread keeps what it was told to show.
        k.escape(pid + 1, "0-7", "0");
        c.set_cpus(&cg("/a"), &"1-3".parse().unwrap()).unwrap();
        assert_eq!(allowed(&k, pid), ("1-3".into(), "1".into()));
        assert_eq!(allowed(&k, pid + 1), ("0-7".into(), "0".into()));
    }
}

/// On v2 a child without the cpuset controller inherits; its tasks follow the parent.
#[test]
fn v2_tasks_of_an_inheriting_child_follow_the_parent() {
    let k = FakeKernel::v2("0-7", "0-1", "cpuset");
    k.cgroup("/c", "0-1", "0");
    k.cgroup("/c/inner", "", "");
    let pid = k.process("/c/inner", 1);
    assert_eq!(allowed(&k, pid), ("0-1".into(), "0".into()));
    k.cgroups()
        .set_cpus(&cg("/c"), &"4".parse().unwrap())
        .unwrap();
    assert_eq!(allowed(&k, pid), ("4".into(), "0".into()));
}

#[test]
fn memory_moves_with_a_mems_write_where_the_cgroup_migrates() {
    let mib = |n: u64| n << 20;
    // v1 without memory_migrate: pages stay where they are.
    let k = FakeKernel::v1("0-3", "0-1");
    k.cgroup("/a", "0-3", "0-1");
    let pid = k.process("/a", 1);
    k.set_memory(pid, &[(0, mib(3)), (1, mib(1))]);
    let proc = crate::migrate::Proc::new(k.files());
    assert_eq!(proc.footprint(&[pid]).unwrap().total(), mib(4));
    assert_eq!(proc.resident(&[pid]).unwrap(), mib(4));
    k.cgroups()
        .set_mems(&cg("/a"), &"1".parse().unwrap())
        .unwrap();
    assert_eq!(k.memory(pid), [(0, mib(3)), (1, mib(1))]);
    // With memory_migrate (what prepare() sets), what is outside the new nodes moves.
    let c = k.cgroups();
    c.set_mems(&cg("/a"), &"0-1".parse().unwrap()).unwrap();
    c.prepare(&cg("/a")).unwrap();
    c.set_mems(&cg("/a"), &"1".parse().unwrap()).unwrap();
    assert_eq!(k.memory(pid), [(1, mib(4))]);
    assert_eq!(
        proc.footprint(&[pid])
            .unwrap()
            .outside(&"1".parse().unwrap()),
        0
    );

    // v2 always migrates.
    let k = FakeKernel::v2("0-3", "0-1", "cpuset");
    k.cgroup("/a", "0-3", "0");
    let pid = k.process("/a", 1);
    k.set_memory(pid, &[(0, mib(2))]);
    k.cgroups()
        .set_mems(&cg("/a"), &"1".parse().unwrap())
        .unwrap();
    assert_eq!(k.memory(pid), [(1, mib(2))]);
}

/// A whole host on the fake: a kernel-mode move is verified through the fake /proc and its
/// memory is reported moved.
#[test]
fn a_host_on_the_fake_applies_verifies_and_reports_the_memory_moved() {
    let k = FakeKernel::v1("0-7", "0-1");
    k.cgroup("/docker/c", "0-3", "0");
    let pid = k.process("/docker/c", 4);
    k.set_memory(pid, &[(0, 8 << 20)]);
    let host = k.host();
    let c = host.resolve("/docker/c").unwrap();
    let r = host
        .apply(
            &c,
            &"4-5".parse().unwrap(),
            &"1".parse().unwrap(),
            &Mode::Kernel,
        )
        .unwrap();
    assert_eq!(r.tasks_checked, 4);
    assert_eq!(r.migration.bytes_moved, 8 << 20);
    assert_eq!(r.migration.left_on_old_nodes, 0);
    let i = host.inspect(&c).unwrap();
    assert_eq!((i.processes, i.threads), (1, 4));
    assert_eq!(i.memory.outside(&"1".parse().unwrap()), 0);
}

#[test]
fn a_container_appears_and_vanishes_with_its_processes() {
    let k = FakeKernel::v2("0-3", "0", "cpuset");
    let host = k.host();
    let err = host.resolve("/web").unwrap_err();
    assert_eq!(err.fault(), Fault::NotFound, "{err}");
    k.cgroup("/web", "0-1", "0");
    k.cgroup("/web/inner", "", "");
    let pid = k.process("/web/inner", 2);
    let c = host.resolve("/web").unwrap();
    assert_eq!(host.inspect(&c).unwrap().threads, 2);
    k.remove_cgroup("/web");
    assert_eq!(host.resolve("/web").unwrap_err().fault(), Fault::NotFound);
    assert_eq!(
        host.proc().read(pid, "status").unwrap(),
        None,
        "its process is gone"
    );
    assert!(!k.cpuset_root().join("web").exists());
}

/// Attaching moves the process out of its previous cgroup, and `/proc/<pid>/cgroup` says
/// where it is, for discovery.
#[test]
fn attaching_moves_a_process_and_its_cgroup_file_follows() {
    for k in [
        FakeKernel::v1("0-3", "0"),
        FakeKernel::v2("0-3", "0", "cpuset"),
    ] {
        k.cgroup("/from", "0-1", "0");
        k.cgroup("/to", "2-3", "0");
        let pid = k.process("/from", 2);
        let c = k.cgroups();
        c.attach(&cg("/to"), pid).unwrap();
        assert!(c.procs(&cg("/from")).unwrap().is_empty(), "{:?}", k.version);
        assert_eq!(c.threads(&cg("/to")).unwrap(), [pid, pid + 1]);
        assert_eq!(allowed(&k, pid + 1).0, "2-3");
        let d = crate::containers::Discovery::new(c.clone(), k.files(), Vec::new());
        assert_eq!(d.cgroup_of_pid(pid).unwrap(), cg("/to"), "{:?}", k.version);
    }
}

/// The noise probe reads the fake's /proc: a restarted workload is a new incarnation.
#[test]
fn the_noise_probe_runs_on_the_fake() {
    let k = FakeKernel::v2("0-3", "0", "cpuset");
    k.cgroup("/w", "0-3", "0");
    let first = k.process("/w", 2);
    let probe = k
        .host()
        .noise_probe(Target::Cgroup(k.cpuset_root().join("w")), None);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let a = rt.block_on(probe.incarnation()).unwrap();
    assert_eq!(a.pid, first);
    let s = rt.block_on(probe.snapshot()).unwrap();
    assert_eq!((s.threads.len(), s.ticks.pus), (2, 4));
    k.exit(first);
    let second = k.process("/w", 1);
    let b = rt.block_on(probe.incarnation()).unwrap();
    assert_ne!(a, b);
    assert_eq!(b.pid, second);
    k.exit(second);
    assert!(matches!(
        rt.block_on(probe.incarnation()),
        Err(crate::observe::NoiseError::Gone { .. })
    ));
}
