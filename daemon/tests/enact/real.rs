//! Against the real kernel of whatever runs the tests: cgroup v1 on this project's
//! machines, cgroup v2 with several NUMA nodes in the numa-vm guest (see guest.rs, which
//! runs this module there). Tests that need more CPUs or nodes than the host has say so
//! and return.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use placed::cgroup::{self, CgroupPath, Version};
use placed::cpuset::{CpuSet, NodeSet};
use placed::enact::{ApplyOptions, Error, Rollback};
use placed::fault::Fault;
use placed::migrate::{self, Mode, MoveOptions};

use crate::skip;
use crate::support::{TestCgroup, allowed, anon_bytes_on, host, machine, threads_of};

fn set<K>(s: &str) -> placed::cpuset::IdSet<K> {
    s.parse().unwrap()
}

fn first<K>(s: &placed::cpuset::IdSet<K>) -> placed::cpuset::IdSet<K> {
    s.first().into_iter().collect()
}

fn last<K>(s: &placed::cpuset::IdSet<K>) -> placed::cpuset::IdSet<K> {
    s.last().into_iter().collect()
}

#[test]
fn moves_a_process_with_many_threads_and_every_thread_follows() {
    let host = match host() {
        Ok(h) => h,
        Err(why) => skip!("{why}"),
    };
    let (cpus, nodes) = machine(&host);
    if cpus.len() < 2 {
        skip!("one CPU only");
    }
    let mut cg = TestCgroup::new(&host, &first(&cpus), &first(&nodes));
    let path = cg.path.clone();
    let pid = cg.start(&path, "threads=64");
    let c = host.resolve(&cg.reference()).unwrap();
    assert_eq!(c.cgroup, cg.path);

    for target in [last(&cpus), cpus.clone(), first(&cpus)] {
        let r = host
            .apply(&c, &target, &first(&nodes), &Mode::Kernel)
            .unwrap();
        assert!(r.tasks_checked >= 64, "{}", r.tasks_checked);
        assert_eq!(r.after.cpus, target);
        // Independently of the library: every thread's allowed CPUs.
        let tids = threads_of(pid);
        assert!(tids.len() >= 64);
        for tid in tids {
            let (c, m) = allowed(tid).unwrap();
            assert_eq!(c, target, "thread {tid}");
            assert_eq!(m, first(&nodes), "thread {tid}");
        }
    }
    let i = host.inspect(&c).unwrap();
    assert!(i.threads >= 64 && i.processes == 1, "{i:?}");
    assert!(i.disagreeing_tasks.is_empty(), "{:?}", i.disagreeing_tasks);
    assert!(i.memory.total() > 0);
}

#[test]
fn a_subtree_moves_to_disjoint_cpus_in_an_order_the_kernel_accepts() {
    let host = match host() {
        Ok(h) => h,
        Err(why) => skip!("{why}"),
    };
    let (cpus, nodes) = machine(&host);
    if cpus.len() < 2 {
        skip!("one CPU only");
    }
    let (a, b) = (first(&cpus), last(&cpus));
    let mut cg = TestCgroup::new(&host, &a, &first(&nodes));
    // On v2 a process may only live in a leaf once the parent enables cpuset for children.
    let leaf = cg.child("leaf", &a, &first(&nodes));
    let inner = cg.child("inner", &a, &first(&nodes));
    let deep = CgroupPath::parse(&format!("{inner}/deep")).unwrap();
    host.cgroups().create(&deep, &a, &first(&nodes)).unwrap();
    let p1 = cg.start(&leaf, "threads=4");
    let p2 = cg.start(&deep, "threads=4");
    let c = host.resolve(&cg.reference()).unwrap();

    // Disjoint: a naive parent-first write fails on v1 (EBUSY), a child-first one too
    // (EINVAL); the plan grows, writes, then shrinks.
    let r = host.apply(&c, &b, &first(&nodes), &Mode::Kernel).unwrap();
    assert_eq!(r.cgroups, 4);
    for pid in [p1, p2] {
        for tid in threads_of(pid) {
            assert_eq!(allowed(tid).unwrap().0, b, "thread {tid}");
        }
    }
    if host.cgroups().version() == Version::V1 {
        for p in [&cg.path, &leaf, &inner, &deep] {
            assert_eq!(host.cgroups().cpuset(p).unwrap().cpus, b, "{p}");
        }
    }
    host.apply(&c, &a, &first(&nodes), &Mode::Kernel).unwrap();
    for tid in threads_of(p2) {
        assert_eq!(allowed(tid).unwrap().0, a);
    }
}

#[test]
fn the_kernels_refusals_are_explained_and_bad_requests_write_nothing() {
    let host = match host() {
        Ok(h) => h,
        Err(why) => skip!("{why}"),
    };
    let (cpus, nodes) = machine(&host);
    let mut cg = TestCgroup::new(&host, &first(&cpus), &first(&nodes));
    let path = cg.path.clone();
    cg.start(&path, "threads=1");
    let c = host.resolve(&cg.reference()).unwrap();

    // A CPU that does not exist: the kernel says ERANGE (beyond nr_cpu_ids) or EINVAL
    // (possible but offline); either way we say why, and that it is the caller's fault.
    let err = host.cgroups().set_cpus(&cg.path, &set("4000")).unwrap_err();
    assert!(
        matches!(err.errno(), Some(libc::ERANGE | libc::EINVAL)),
        "{err}"
    );
    assert!(matches!(err, cgroup::Error::Refused { .. }), "{err}");
    assert_eq!(err.fault(), Fault::InvalidInput);

    // The same through apply: refused before any write.
    let err = host
        .apply(&c, &set("4000"), &first(&nodes), &Mode::Kernel)
        .unwrap_err();
    assert!(matches!(err, Error::OfflineCpus { .. }), "{err}");
    let err = host
        .apply(&c, &cpus, &set("1000"), &Mode::Kernel)
        .unwrap_err();
    assert!(matches!(err, Error::NodesWithoutMemory { .. }), "{err}");
    assert_eq!(host.cgroups().cpuset(&cg.path).unwrap().cpus, first(&cpus));

    // v1: a task cannot join a cpuset with empty sets (ENOSPC), and one with tasks cannot
    // become empty (ENOSPC).
    if host.cgroups().version() == Version::V1 {
        let raw = cg.path.child("raw").unwrap();
        std::fs::create_dir(raw.under(host.cgroups().root())).unwrap();
        let err = host.cgroups().attach(&raw, std::process::id()).unwrap_err();
        assert_eq!(err.errno(), Some(libc::ENOSPC), "{err}");
        assert!(err.to_string().contains("before tasks join"), "{err}");
        let err = host
            .cgroups()
            .set_cpus(&cg.path, &CpuSet::new())
            .unwrap_err();
        assert_eq!(err.errno(), Some(libc::ENOSPC), "{err}");
        // Shrinking a parent below its child: EBUSY.
        if cpus.len() >= 2 {
            host.cgroups().set_cpus(&cg.path, &cpus).unwrap();
            let kid = cg.child("kid", &last(&cpus), &first(&nodes));
            let err = host
                .cgroups()
                .set_cpus(&cg.path, &first(&cpus))
                .unwrap_err();
            assert_eq!(err.errno(), Some(libc::EBUSY), "{err}");
            host.cgroups().remove(&kid).unwrap();
        }
    }

    // A cgroup that vanished.
    let gone = host.resolve(&cg.reference()).unwrap();
    let tmp = cg.child("tmp", &first(&cpus), &first(&nodes));
    let mut gone_child = gone.clone();
    gone_child.cgroup = tmp.clone();
    host.cgroups().remove(&tmp).unwrap();
    let err = host
        .apply(&gone_child, &first(&cpus), &first(&nodes), &Mode::Kernel)
        .unwrap_err();
    assert_eq!(err.fault(), Fault::NotFound, "{err}");
}

#[test]
fn freezing_stops_the_tasks_and_the_guard_always_thaws() {
    let host = match host() {
        Ok(h) => h,
        Err(why) => skip!("{why}"),
    };
    let (cpus, nodes) = machine(&host);
    let mut cg = TestCgroup::new(&host, &first(&cpus), &first(&nodes));
    let path = cg.path.clone();
    let pid = cg.start(&path, "threads=8");
    let b = host.cgroups().backend().clone();
    {
        let g = cgroup::freeze(&b, &cg.path, Duration::from_secs(10)).unwrap();
        assert!(g.owned());
        assert!(host.cgroups().is_frozen(&cg.path).unwrap());
        // Dropped without thaw(): as on an error path.
    }
    assert!(!host.cgroups().is_frozen(&cg.path).unwrap());

    // A fast migration with freezing leaves it thawed, and the tasks alive.
    let c = host.resolve(&cg.reference()).unwrap();
    let r = host
        .apply(
            &c,
            &first(&cpus),
            &first(&nodes),
            &Mode::Fast {
                workers: 2,
                freeze: true,
            },
        )
        .unwrap();
    assert!(!host.cgroups().is_frozen(&cg.path).unwrap());
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    assert_eq!(r.migration.left_on_old_nodes, 0);
}

#[test]
fn memory_follows_the_cpuset_in_every_mode() {
    let host = match host() {
        Ok(h) => h,
        Err(why) => skip!("{why}"),
    };
    let (cpus, nodes) = machine(&host);
    if nodes.len() < 2 {
        skip!("this host has one NUMA node ({nodes}); guest.rs runs this in a multi-node guest");
    }
    let (from, to) = (first(&nodes), last(&nodes));
    const MIB: u64 = 48;
    let modes = [
        Mode::Kernel,
        Mode::Fast {
            workers: 2,
            freeze: true,
        },
        Mode::Fast {
            workers: 2,
            freeze: false,
        },
        Mode::Throttled {
            bytes_per_sec: 256 << 20,
        },
    ];
    for mode in modes {
        let mut cg = TestCgroup::new(&host, &cpus, &from);
        let path = cg.path.clone();
        let pid = cg.start(&path, &format!("threads=4,mib={MIB}"));
        assert!(
            anon_bytes_on(pid, from.first().unwrap()) >= MIB << 20,
            "allocated on {from}"
        );
        let c = host.resolve(&cg.reference()).unwrap();
        let r = host.apply(&c, &cpus, &to, &mode).unwrap();
        let on_new = anon_bytes_on(pid, to.first().unwrap());
        eprintln!(
            "{mode}: moved {} in {:?}, {} left on old nodes; the load has {} on node {to}",
            placed::cli::human_bytes(r.migration.bytes_moved),
            r.migration.duration,
            placed::cli::human_bytes(r.migration.left_on_old_nodes),
            placed::cli::human_bytes(on_new)
        );
        assert!(on_new >= MIB << 20, "{mode}: only {on_new} bytes on {to}");
        assert!(
            r.migration.bytes_moved >= MIB << 20,
            "{mode}: {:?}",
            r.migration
        );
        assert!(
            r.migration
                .after
                .0
                .get(&to.first().unwrap())
                .copied()
                .unwrap_or(0)
                >= MIB << 20
        );
        match mode {
            Mode::Fast { freeze: true, .. } => assert!(r.migration.frozen_for.is_some()),
            _ => assert!(r.migration.frozen_for.is_none()),
        }
        if !matches!(mode, Mode::Kernel) {
            let w = r.migration.workers.as_ref().unwrap();
            assert!(w.pages_moved > 0 && w.processes == 1, "{w:?}");
        }
        for tid in threads_of(pid) {
            assert_eq!(allowed(tid).unwrap().1, to);
        }
    }
    println!(
        "memory_follows_the_cpuset_in_every_mode: ran on {} nodes",
        nodes.len()
    );
}

#[test]
fn processes_that_exit_or_appear_mid_migration_are_handled() {
    let host = match host() {
        Ok(h) => h,
        Err(why) => skip!("{why}"),
    };
    let (cpus, nodes) = machine(&host);
    if nodes.len() < 2 {
        skip!("this host has one NUMA node ({nodes}); guest.rs runs this in a multi-node guest");
    }
    let (from, to) = (first(&nodes), last(&nodes));
    let mut cg = TestCgroup::new(&host, &cpus, &from);
    let path = cg.path.clone();
    let p1 = cg.start(&path, "threads=1,mib=8");
    let p2 = cg.start(&path, "threads=1,mib=8");
    let p3 = cg.start(&path, "threads=1,mib=8");
    // Widen the mems as apply's first step does, so the workers may move to `to`.
    host.cgroups().set_mems(&cg.path, &from.union(&to)).unwrap();
    // p2 exits after the first listing; p3 "appears" in the second.
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let loads = std::sync::Mutex::new(&mut cg.loads);
    let list = || {
        let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if n == 0 {
            let mut l = loads.lock().unwrap();
            l[1].kill();
            return Ok(vec![p1, p2]);
        }
        Ok(vec![p1, p3])
    };
    let stats = migrate::move_memory(
        host.proc(),
        &list,
        &to,
        &MoveOptions {
            workers: 2,
            rate: None,
            chunk_pages: 256,
            // Chunks, not migrate_pages: the chunked path is the one that meets ESRCH.
            whole_process_bytes: Some(0),
        },
        &AtomicBool::new(false),
    )
    .unwrap();
    assert_eq!(stats.processes_exited, 1, "{stats:?}");
    assert_eq!(stats.processes_appeared, 1, "{stats:?}");
    assert!(stats.rounds >= 2);
    for pid in [p1, p3] {
        assert!(
            anon_bytes_on(pid, to.first().unwrap()) >= 8 << 20,
            "pid {pid}"
        );
    }
    host.cgroups().set_mems(&cg.path, &to).unwrap();
}

#[test]
fn a_failed_migration_restores_the_previous_cpuset() {
    let host = match host() {
        Ok(h) => h,
        Err(why) => skip!("{why}"),
    };
    let (cpus, nodes) = machine(&host);
    let mut cg = TestCgroup::new(&host, &first(&cpus), &first(&nodes));
    let path = cg.path.clone();
    cg.start(&path, "threads=2,mib=4");
    let c = host.resolve(&cg.reference()).unwrap();
    // A freeze that cannot complete in zero time fails the fast mode after nothing was
    // written; a cancelled one still finishes the cpuset.
    let opts = ApplyOptions {
        freeze_timeout: Duration::ZERO,
        ..ApplyOptions::default()
    };
    let target = last(&cpus);
    if nodes.len() >= 2 {
        let err = host
            .apply_with(
                &c,
                &target,
                &last(&nodes),
                &Mode::Fast {
                    workers: 1,
                    freeze: true,
                },
                &opts,
            )
            .map(|_| ());
        if let Err(Error::Failed { rollback, .. }) = &err {
            assert_eq!(rollback, &Rollback::Restored);
            assert_eq!(host.cgroups().cpuset(&cg.path).unwrap().cpus, first(&cpus));
        }
        assert!(!host.cgroups().is_frozen(&cg.path).unwrap());
    }
    let cancel = std::sync::Arc::new(AtomicBool::new(true));
    let opts = ApplyOptions {
        cancel: Some(cancel),
        ..ApplyOptions::default()
    };
    let r = host
        .apply_with(
            &c,
            &target,
            &last(&nodes),
            &Mode::Fast {
                workers: 1,
                freeze: false,
            },
            &opts,
        )
        .unwrap();
    assert_eq!(r.after.cpus, target);
    assert_eq!(r.after.mems, last(&nodes));
    let _: NodeSet = r.after.mems;
}

#[test]
fn v2_children_without_the_cpuset_controller_follow_the_container() {
    let host = match host() {
        Ok(h) => h,
        Err(why) => skip!("{why}"),
    };
    if host.cgroups().version() != Version::V2 {
        skip!("cgroup v1 children always have their own cpuset");
    }
    let (cpus, nodes) = machine(&host);
    let mut cg = TestCgroup::new(&host, &first(&cpus), &first(&nodes));
    // A plain child, as systemd or a runtime makes inside a container: no +cpuset in the
    // container's cgroup.subtree_control, so the child inherits.
    let sub = cg.path.child("sub").unwrap();
    std::fs::create_dir(sub.under(host.cgroups().root())).unwrap();
    let pid = cg.start(&sub, "threads=3");
    let c = host.resolve(&cg.reference()).unwrap();
    let r = host
        .apply(&c, &last(&cpus), &last(&nodes), &Mode::Kernel)
        .unwrap();
    assert!(r.tasks_checked >= 3);
    for tid in threads_of(pid) {
        assert_eq!(
            allowed(tid).unwrap(),
            (last(&cpus), last(&nodes)),
            "thread {tid}"
        );
    }
}
