//! Against the real kernel of whatever runs the tests: cgroup v1 on this project's
//! machines, cgroup v2 with several NUMA nodes in the numa-vm guest (see guest.rs, which
//! runs this module there). Tests that need more CPUs or nodes than the host has say so
//! and return.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use placed_core::cpuset::CpuSet;
use placed_core::fault::Fault;
use placed_host::cgroup::{self, CgroupPath, Version};
use placed_host::enact::{ApplyOptions, Error, Rollback};
use placed_host::migrate::{self, Mode, MoveOptions};

use super::support::{
    FaultyFs, Scenario, TestCgroup, allowed, anon_bytes_on, host_through, threads_of,
};
use crate::{scenario, skip};

fn set<K>(s: &str) -> placed_core::cpuset::IdSet<K> {
    s.parse().unwrap()
}

fn first<K>(s: &placed_core::cpuset::IdSet<K>) -> placed_core::cpuset::IdSet<K> {
    s.first().into_iter().collect()
}

fn last<K>(s: &placed_core::cpuset::IdSet<K>) -> placed_core::cpuset::IdSet<K> {
    s.last().into_iter().collect()
}

#[test]
fn moves_a_process_with_many_threads_and_every_thread_follows() {
    let Scenario { host, cpus, nodes } = scenario!();
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
    let Scenario { host, cpus, nodes } = scenario!();
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
    let Scenario { host, cpus, nodes } = scenario!();
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
    let Scenario { host, cpus, nodes } = scenario!();
    let mut cg = TestCgroup::new(&host, &first(&cpus), &first(&nodes));
    let path = cg.path.clone();
    let pid = cg.start(&path, "threads=8,mib=16");
    {
        let g = host
            .cgroups()
            .freeze(&cg.path, Duration::from_secs(10))
            .unwrap();
        assert!(g.owned());
        assert!(host.cgroups().is_frozen(&cg.path).unwrap());
        // Dropped without thaw(): as on an error path.
    }
    assert!(!host.cgroups().is_frozen(&cg.path).unwrap());

    // Frozen by someone else (`docker pause`, an operator): a guard leaves it frozen.
    freeze_by_hand(&host, &cg.path);
    let g = host
        .cgroups()
        .freeze(&cg.path, Duration::from_secs(10))
        .unwrap();
    assert!(!g.owned());
    g.thaw().unwrap();
    assert!(host.cgroups().is_frozen(&cg.path).unwrap());
    host.cgroups().set_frozen(&cg.path, false).unwrap();

    // apply freezes only when there is memory to move, which needs a second node.
    if nodes.len() < 2 {
        eprintln!(
            "skipped the frozen fast moves, because this host has one NUMA node ({nodes}): \
             with nothing to move, apply writes once and never freezes (guest.rs runs them)"
        );
        return;
    }
    let (from, to) = (first(&nodes), last(&nodes));
    let fast = Mode::Fast {
        workers: 2,
        freeze: true,
    };
    let c = host.resolve(&cg.reference()).unwrap();
    let r = host.apply(&c, &first(&cpus), &to, &fast).unwrap();
    assert!(r.migration.frozen_for.is_some(), "{:?}", r.migration);
    assert!(!host.cgroups().is_frozen(&cg.path).unwrap());
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    assert!(anon_bytes_on(pid, to.first().unwrap()) >= 16 << 20);

    // Paused by someone else during a frozen move: still paused afterwards.
    freeze_by_hand(&host, &cg.path);
    let r = host.apply(&c, &first(&cpus), &from, &fast).unwrap();
    assert!(r.migration.frozen_for.is_some(), "{:?}", r.migration);
    assert!(host.cgroups().is_frozen(&cg.path).unwrap(), "left paused");
    assert!(anon_bytes_on(pid, from.first().unwrap()) >= 16 << 20);
    host.cgroups().set_frozen(&cg.path, false).unwrap();
    println!(
        "freezing_stops_the_tasks_and_the_guard_always_thaws: ran on {} nodes",
        nodes.len()
    );
}

/// Freezes `cg` without a guard, as `docker pause` does, and waits until it is frozen.
fn freeze_by_hand(host: &placed_host::enact::Host, cg: &CgroupPath) {
    host.cgroups().set_frozen(cg, true).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !host.cgroups().is_frozen(cg).unwrap() {
        assert!(Instant::now() < deadline, "{cg} did not freeze");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn memory_follows_the_cpuset_in_every_mode() {
    let Scenario { host, cpus, nodes } = scenario!();
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
            placed_core::text::human_bytes(r.migration.bytes_moved),
            r.migration.duration,
            placed_core::text::human_bytes(r.migration.left_on_old_nodes),
            placed_core::text::human_bytes(on_new)
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
    println!("real tests on cgroup {}", host.cgroups().version());
}

#[test]
fn processes_that_exit_or_appear_mid_migration_are_handled() {
    let Scenario { host, cpus, nodes } = scenario!();
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
            hold: None,
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
            "pid {pid}: {stats:?}"
        );
    }
    host.cgroups().set_mems(&cg.path, &to).unwrap();
}

/// A write that fails in the middle of a real apply (injected between us and the kernel:
/// nothing in the kernel fails on cue) restores the previous sets in the kernel, every
/// thread follows them back, and a cgroup the move froze is thawed. With several nodes it
/// is a frozen fast move failing in its second write, after the workers moved the memory,
/// and the rollback brings the memory back too.
#[test]
fn a_failed_move_restores_the_previous_cpuset() {
    let _ = scenario!();
    let fs = Arc::new(FaultyFs::default());
    let Scenario { host, cpus, nodes } = Scenario::on(host_through(fs.clone()));
    if cpus.len() < 2 {
        skip!("one CPU only");
    }
    let (old_cpus, old_mems) = (first(&cpus), first(&nodes));
    let mut cg = TestCgroup::new(&host, &old_cpus, &old_mems);
    let sub = cg.child("sub", &old_cpus, &old_mems);
    let pid = cg.start(&sub, "threads=2,mib=16");
    let c = host.resolve(&cg.reference()).unwrap();
    let root = host.cgroups().root().to_owned();
    let multi = nodes.len() >= 2;
    let (mode, new_mems) = if multi {
        // sub's mems are written in step 1 (old and new nodes), then in step 2 (new): the
        // second write fails, after the freeze, the first writes and the workers.
        let suffix = sub.under(&root).join("cpuset.mems");
        fs.fail_write(&suffix.to_string_lossy(), libc::EIO, 1);
        let fast = Mode::Fast {
            workers: 2,
            freeze: true,
        };
        (fast, last(&nodes))
    } else {
        // Nothing to move on one node, so no freeze: the kernel mode's plan grows the
        // container's cpus first, then sub's cpus write fails.
        let suffix = sub.under(&root).join("cpuset.cpus");
        fs.fail_write(&suffix.to_string_lossy(), libc::EIO, 0);
        (Mode::Kernel, old_mems.clone())
    };
    let seen = fs.writes().len();
    let err = host.apply(&c, &last(&cpus), &new_mems, &mode).unwrap_err();
    match &err {
        Error::Failed {
            rollback, cause, ..
        } => {
            assert_eq!(rollback, &Rollback::Restored, "{err}");
            assert!(
                matches!(&**cause, Error::Cgroup(e) if e.errno() == Some(libc::EIO)),
                "{cause}"
            );
        }
        other => panic!("{other}"),
    }
    for p in [&cg.path, &sub] {
        let s = host.cgroups().cpuset(p).unwrap();
        assert_eq!(
            (s.effective_cpus, s.effective_mems),
            (old_cpus.clone(), old_mems.clone()),
            "{p}"
        );
    }
    for tid in threads_of(pid) {
        assert_eq!(
            allowed(tid).unwrap(),
            (old_cpus.clone(), old_mems.clone()),
            "thread {tid}"
        );
    }
    assert!(!host.cgroups().is_frozen(&cg.path).unwrap());
    let writes = &fs.writes()[seen..];
    let sets = writes
        .iter()
        .position(|(p, _)| p.ends_with("cpuset.cpus") || p.ends_with("cpuset.mems"));
    assert!(
        sets.is_some(),
        "a write went through before the fault: {writes:?}"
    );
    if !multi {
        eprintln!("(one NUMA node: kernel mode, nothing to move, nothing frozen)");
        return;
    }
    let at = |freeze: bool| {
        writes.iter().position(|(p, v)| {
            (p.ends_with("cgroup.freeze") && v == if freeze { "1" } else { "0" })
                || (p.ends_with("freezer.state") && v == if freeze { "FROZEN" } else { "THAWED" })
        })
    };
    let (frozen, thawed) = (at(true), at(false));
    assert!(
        frozen.is_some() && frozen < sets && sets < thawed,
        "frozen, written, thawed: {writes:?}"
    );
    // The workers had moved the memory; restoring the old nodes brought it back.
    assert!(
        anon_bytes_on(pid, old_mems.first().unwrap()) >= 16 << 20,
        "memory back on {old_mems}"
    );
    println!(
        "a_failed_move_restores_the_previous_cpuset: ran on {} nodes",
        nodes.len()
    );
}

/// A cancel stops the workers. Fast mode: the final write still moves the rest (the kernel
/// does). Throttled mode: cancelled halfway, the cgroup stays on both nodes and only what
/// the worker moved has moved.
#[test]
fn a_cancelled_move_finishes_fast_and_stays_on_both_nodes_throttled() {
    let Scenario { host, cpus, nodes } = scenario!();
    if nodes.len() < 2 {
        skip!("this host has one NUMA node ({nodes}): nothing to move, nothing to cancel");
    }
    let (from, to) = (first(&nodes), last(&nodes));
    let both = from.union(&to);

    // Cancelled before it starts: the workers move nothing, the final write moves it all.
    let mut cg = TestCgroup::new(&host, &cpus, &from);
    let path = cg.path.clone();
    let pid = cg.start(&path, "threads=2,mib=16");
    let c = host.resolve(&cg.reference()).unwrap();
    let opts = ApplyOptions {
        cancel: Some(Arc::new(AtomicBool::new(true))),
        ..ApplyOptions::default()
    };
    let fast = Mode::Fast {
        workers: 2,
        freeze: true,
    };
    let r = host.apply_with(&c, &cpus, &to, &fast, &opts).unwrap();
    assert!(r.migration.cancelled);
    assert_eq!(r.migration.workers.as_ref().unwrap().bytes_moved, 0);
    assert_eq!(r.after.mems, to);
    assert!(anon_bytes_on(pid, to.first().unwrap()) >= 16 << 20);
    assert!(!host.cgroups().is_frozen(&cg.path).unwrap());
    drop(cg);

    // Throttled to 4 MiB/s with 32 MiB to move, cancelled once its first chunk has moved
    // (the workers hold there until then: no race with the pace of a loaded machine).
    const MIB: u64 = 32;
    let mut cg = TestCgroup::new(&host, &cpus, &from);
    let path = cg.path.clone();
    let pid = cg.start(&path, &format!("threads=2,mib={MIB}"));
    let c = host.resolve(&cg.reference()).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let hold = placed_host::migrate::HoldPoint {
        release: scratch.path().join("hold"),
    };
    std::fs::write(&hold.release, b"").unwrap();
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = cancel.clone();
    let marker = hold.reached_marker();
    let canceller = std::thread::spawn(move || {
        while !marker.exists() {
            std::thread::sleep(Duration::from_millis(5));
        }
        flag.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let opts = ApplyOptions {
        cancel: Some(cancel),
        hold: Some(hold),
        ..ApplyOptions::default()
    };
    let throttled = Mode::Throttled {
        bytes_per_sec: 4 << 20,
    };
    let r = host.apply_with(&c, &cpus, &to, &throttled, &opts).unwrap();
    canceller.join().unwrap();
    assert!(r.migration.cancelled, "{:?}", r.migration);
    let moved = r.migration.workers.as_ref().unwrap().bytes_moved;
    assert!(moved > 0 && moved < MIB << 20, "moved {moved}");
    assert_eq!(r.after.mems, both);
    let s = host.cgroups().cpuset(&cg.path).unwrap();
    assert_eq!((s.cpus, s.mems), (cpus.clone(), both.clone()));
    for tid in threads_of(pid) {
        assert_eq!(allowed(tid).unwrap().1, both, "thread {tid}");
    }
    let left = anon_bytes_on(pid, from.first().unwrap());
    assert!(
        left >= (MIB << 20) - moved - (1 << 20),
        "left {left}, moved {moved}"
    );
    assert!(r.migration.left_on_old_nodes > 0);
    assert!(
        r.warnings.iter().any(|w| w.contains("uncapped")),
        "{:?}",
        r.warnings
    );
    println!(
        "a_cancelled_move_finishes_fast_and_stays_on_both_nodes_throttled: ran on {} nodes",
        nodes.len()
    );
}

/// `placectl move` killed by Ctrl-C (SIGINT) halfway through a frozen fast move, and by
/// SIGTERM halfway through a throttled one: it exits 130 saying so, and leaves the container
/// thawed, on a whole cpuset, its processes alive.
#[test]
fn placectl_move_interrupted_by_a_signal_leaves_the_container_in_order() {
    let Scenario { host, cpus, nodes } = scenario!();
    if nodes.len() < 2 {
        skip!(
            "this host has one NUMA node ({nodes}): `placectl move --migrate fast` has \
             nothing to move, so it neither freezes nor runs workers, and a signal has no \
             window to land in (guest.rs runs this)"
        );
    }
    let (from, to) = (first(&nodes), last(&nodes));
    // The signal must land mid-move whatever the pace of the (emulated, loaded) machine:
    // placectl's workers wait after their first chunk while `hold` exists and announce it,
    // so the test signals at a known point instead of racing the move.
    let scratch = tempfile::tempdir().unwrap();
    let hold = placed_host::migrate::HoldPoint {
        release: scratch.path().join("hold"),
    };
    let placectl = |cg: &TestCgroup, args: &[&str]| {
        std::fs::write(&hold.release, b"").unwrap();
        let _ = std::fs::remove_file(hold.reached_marker());
        std::process::Command::new(crate::bins::bin("placectl"))
            .args(["move", &cg.reference(), "--cpus", &cpus.to_string()])
            .args(["--mems", &to.to_string()])
            .args(args)
            .env(placed_host::migrate::HOLD_ENV, &hold.release)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let signal = |child: &std::process::Child, sig: libc::c_int| {
        let pid = libc::pid_t::try_from(child.id()).unwrap();
        // SAFETY: kill(2) takes plain integers; the child is ours and not yet reaped.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
    };
    // No deadline: the move waits at the hold point until signalled, and a placectl that
    // ends first fails the test with its output.
    let wait_held = |child: &mut std::process::Child| {
        while !hold.reached_marker().exists() {
            if let Some(status) = child.try_wait().unwrap() {
                panic!("placectl exited ({status}) before its move reached the hold point");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    };

    // Fast and frozen, 128 MiB with one worker, held frozen after its first chunk.
    let mut cg = TestCgroup::new(&host, &cpus, &from);
    let path = cg.path.clone();
    let pid = cg.start(&path, "threads=2,mib=128");
    let mut child = placectl(&cg, &["--migrate", "fast", "--workers", "1"]);
    wait_held(&mut child);
    assert!(
        host.cgroups().is_frozen(&path).unwrap(),
        "held, but not frozen"
    );
    signal(&child, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Exit 130: interrupted, stopped in good order (placed_core::exit).
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted by SIGINT"), "{stderr}");
    assert!(
        !host.cgroups().is_frozen(&path).unwrap(),
        "left frozen: {stderr}"
    );
    let s = host.cgroups().cpuset(&path).unwrap();
    assert_eq!(
        (s.effective_cpus, s.effective_mems),
        (cpus.clone(), to.clone())
    );
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    // Fast mode finishes: what the worker had not moved, the kernel did.
    assert!(anon_bytes_on(pid, to.first().unwrap()) >= 128 << 20);
    drop(cg);

    // Throttled, 32 MiB, held after its first chunk (the first write, both nodes, is in).
    let both = from.union(&to);
    let mut cg = TestCgroup::new(&host, &cpus, &from);
    let path = cg.path.clone();
    let pid = cg.start(&path, "threads=2,mib=32");
    let mut child = placectl(&cg, &["--migrate", "throttled", "--bandwidth", "4M"]);
    wait_held(&mut child);
    assert_eq!(host.cgroups().cpuset(&path).unwrap().effective_mems, both);
    signal(&child, libc::SIGTERM);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Exit 130: interrupted, stopped in good order (placed_core::exit).
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted by SIGTERM") && stderr.contains("uncapped"),
        "{stderr}"
    );
    assert_eq!(host.cgroups().cpuset(&path).unwrap().effective_mems, both);
    assert!(
        anon_bytes_on(pid, from.first().unwrap()) > 0,
        "nothing moved uncapped"
    );
    println!(
        "placectl_move_interrupted_by_a_signal_leaves_the_container_in_order: ran on {} nodes",
        nodes.len()
    );
}

#[test]
fn v2_children_without_the_cpuset_controller_follow_the_container() {
    let Scenario { host, cpus, nodes } = scenario!();
    if host.cgroups().version() != Version::V2 {
        skip!("cgroup v1 children always have their own cpuset");
    }
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
