//! apply / inspect on the fake kernel, with a fake `/proc` and `/sys`: the request checks,
//! the rollback, and what errors say. Real tasks and real migration are in
//! `host/tests/enact`.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use super::*;
use crate::containers::Runtime;
use crate::fake::FakeKernel;
use crate::migrate::Mode;

struct Fake {
    kernel: Arc<FakeKernel>,
    host: Host,
    /// The process in /docker/c and the one in /docker/c/sub.
    pids: [u32; 2],
}

/// A v1 host with CPUs 0-7 online and nodes 0-1 with memory; /docker holds 0-5 and 0-1;
/// the container /docker/c has a child /docker/c/sub; one process in each. The fake's pids
/// are above PID_MAX_LIMIT: the workers of the fast and throttled modes call the real
/// move_pages/migrate_pages, and on these they fail with ESRCH and touch nothing.
fn fake() -> Fake {
    let k = FakeKernel::v1("0-7", "0-1");
    k.cgroup("/docker", "0-5", "0-1");
    k.cgroup("/docker/c", "0-1", "0");
    k.cgroup("/docker/c/sub", "0-1", "0");
    let pids = [k.process("/docker/c", 1), k.process("/docker/c/sub", 1)];
    Fake {
        host: k.host(),
        kernel: k,
        pids,
    }
}

impl Fake {
    /// Both tasks' /proc/<tid>/status stop following the cpuset and show these sets: as if
    /// they escaped it.
    fn escape(&self, cpus: &str, mems: &str) {
        for tid in self.pids {
            self.kernel.escape(tid, cpus, mems);
        }
    }

    /// Gives each task 1 MiB resident on `node`.
    fn memory_on(&self, node: u32) {
        for pid in self.pids {
            self.kernel.set_memory(pid, &[(node, 1 << 20)]);
        }
    }

    fn container(&self) -> Container {
        self.host.resolve("/docker/c").unwrap()
    }

    fn sets(&self, cg: &str) -> (String, String) {
        (
            self.kernel.file(&format!("{cg}/cpuset.cpus")),
            self.kernel.file(&format!("{cg}/cpuset.mems")),
        )
    }
}

fn set<K>(s: &str) -> placed_core::cpuset::IdSet<K> {
    s.parse().unwrap()
}

#[test]
fn requests_the_host_cannot_satisfy_write_nothing() {
    let f = fake();
    let c = f.container();
    let cases: Vec<(&str, &str, &str, Fault, &str)> = vec![
        (
            "offline CPU",
            "0-8",
            "0",
            Fault::InvalidInput,
            "CPUs 8 are not online (online: 0-7)",
        ),
        (
            "node without memory",
            "0",
            "2",
            Fault::InvalidInput,
            "nodes 2 have no memory",
        ),
        (
            "outside the parent",
            "6-7",
            "0",
            Fault::InvalidInput,
            "not within the cpuset of the parent cgroup /docker (cpus 0-5",
        ),
        (
            "no CPUs",
            "",
            "0",
            Fault::InvalidInput,
            "CPU set of a placement must not be empty",
        ),
        ("no nodes", "0", "", Fault::InvalidInput, "memory node set"),
    ];
    for (what, cpus, mems, fault, text) in cases {
        let err = f
            .host
            .apply(&c, &set(cpus), &set(mems), &Mode::Kernel)
            .unwrap_err();
        assert_eq!(err.fault(), fault, "{what}: {err}");
        assert!(err.to_string().contains(text), "{what}: {err}");
    }
    assert!(f.kernel.writes().is_empty(), "{:?}", f.kernel.writes());

    let root = Container {
        runtime: Runtime::Cgroup,
        id: "/".into(),
        name: None,
        pod: None,
        cgroup: CgroupPath::root(),
    };
    assert!(matches!(
        f.host.apply(&root, &set("0"), &set("0"), &Mode::Kernel),
        Err(Error::RootCgroup)
    ));
}

#[test]
fn applies_a_subtree_and_verifies_every_task() {
    let f = fake();
    let c = f.container();
    // The fake /proc follows the cpuset, as the kernel's does.
    let r = f
        .host
        .apply(&c, &set("2-3"), &set("1"), &Mode::Kernel)
        .unwrap();
    assert_eq!(f.sets("docker/c"), ("2-3".into(), "1".into()));
    assert_eq!(f.sets("docker/c/sub"), ("2-3".into(), "1".into()));
    assert_eq!(r.tasks_checked, 2);
    assert_eq!(r.cgroups, 2);
    assert_eq!(r.before.cpus.to_string(), "0-1");
    assert_eq!(r.after.mems.to_string(), "1");
    assert_eq!(f.kernel.file("docker/c/cpuset.memory_migrate"), "1");
    // Parent grown first, child written, parent shrunk last.
    let order: Vec<String> = f
        .kernel
        .writes()
        .iter()
        .filter(|(p, _)| p.ends_with("cpuset.cpus"))
        .map(|(p, v)| format!("{p}={v}"))
        .collect();
    assert_eq!(
        order,
        [
            "docker/c/cpuset.cpus=0-3",
            "docker/c/sub/cpuset.cpus=2-3",
            "docker/c/cpuset.cpus=2-3"
        ]
    );
}

#[test]
fn a_task_that_did_not_follow_rolls_back() {
    let f = fake();
    let c = f.container();
    // /proc keeps showing the old sets: as if the tasks escaped the cpuset.
    f.escape("0-1", "0");
    let err = f
        .host
        .apply(&c, &set("2-3"), &set("1"), &Mode::Kernel)
        .unwrap_err();
    match &err {
        Error::Failed {
            rollback, cause, ..
        } => {
            assert_eq!(rollback, &Rollback::Restored);
            assert!(matches!(**cause, Error::Verify { .. }), "{cause}");
        }
        other => panic!("{other}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("previous cpuset was restored"), "{msg}");
    assert_eq!(f.sets("docker/c"), ("0-1".into(), "0".into()));
    assert_eq!(f.sets("docker/c/sub"), ("0-1".into(), "0".into()));
}

#[test]
fn a_refused_write_mid_plan_rolls_back() {
    let f = fake();
    let c = f.container();
    // The child's cpus write fails after the parent has grown.
    f.kernel.inject("c/sub/cpuset.cpus", libc::EBUSY);
    let err = f
        .host
        .apply(&c, &set("2-3"), &set("1"), &Mode::Kernel)
        .unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Failed {
                rollback: Rollback::Restored,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        err.fault(),
        Fault::HostConfig,
        "EBUSY on cpuset.cpus: {err}"
    );
    assert_eq!(f.sets("docker/c"), ("0-1".into(), "0".into()));

    // And when restoring fails too, the error says so loudly.
    // Apply: grows /docker/c (one cpus write), then fails on the child; restore: shrinking
    // /docker/c back (the second cpus write) fails.
    f.kernel.inject("c/sub/cpuset.cpus", libc::EBUSY);
    f.kernel
        .inject_after("docker/c/cpuset.cpus", libc::EINVAL, 1);
    let err = f
        .host
        .apply(&c, &set("2-3"), &set("1"), &Mode::Kernel)
        .unwrap_err();
    match &err {
        Error::Failed {
            rollback: Rollback::Failed(why),
            ..
        } => assert!(why.contains("EINVAL"), "{why}"),
        other => panic!("{other}"),
    }
    assert!(
        err.to_string()
            .contains("RESTORING THE PREVIOUS CPUSET FAILED")
    );
}

#[test]
fn fast_mode_without_memory_to_move_writes_once_and_freezes_nothing() {
    let f = fake();
    let c = f.container();
    let r = f
        .host
        .apply(
            &c,
            &set("2-3"),
            &set("1"),
            &Mode::Fast {
                workers: 2,
                freeze: true,
            },
        )
        .unwrap();
    assert_eq!(r.migration.frozen_for, None);
    assert_eq!(r.migration.bytes_moved, 0);
    assert!(
        f.kernel
            .writes()
            .iter()
            .all(|(p, _)| !p.contains("freezer"))
    );
}

#[test]
fn a_vanished_container_is_not_found() {
    let f = fake();
    let c = f.container();
    f.kernel.remove_cgroup("/docker/c");
    let err = f
        .host
        .apply(&c, &set("2-3"), &set("1"), &Mode::Kernel)
        .unwrap_err();
    assert_eq!(err.fault(), Fault::NotFound, "{err}");
    let err = f.host.inspect(&c).unwrap_err();
    assert_eq!(err.fault(), Fault::NotFound, "{err}");
}

#[test]
fn inspect_reports_sets_tasks_and_disagreements() {
    let f = fake();
    let c = f.container();
    let i = f.host.inspect(&c).unwrap();
    assert_eq!((i.processes, i.threads, i.cgroups), (2, 2, 2));
    assert_eq!(i.cpuset.cpus.to_string(), "0-1");
    assert_eq!(i.frozen, Some(false));
    assert!(i.disagreeing_tasks.is_empty());
    f.escape("0-3", "0");
    let i = f.host.inspect(&c).unwrap();
    assert_eq!(i.disagreeing_tasks.len(), 2, "{:?}", i.disagreeing_tasks);
}

#[test]
fn v2_parent_without_cpuset_is_checked_against_the_nearest_ancestor() {
    let k = FakeKernel::v2("0-7", "0-1", "");
    // /sys.slice has no cpuset files yet: the root has not enabled cpuset for children.
    k.cgroup("/sys.slice/c", "", "");
    let host = k.host();
    let c = host.resolve("/sys.slice/c").unwrap();
    let r = host
        .apply(&c, &set("2-3"), &set("1"), &Mode::Kernel)
        .unwrap();
    assert_eq!(r.after.cpus.to_string(), "2-3");
    assert_eq!(k.file("cgroup.subtree_control"), "cpuset");
    assert_eq!(k.file("sys.slice/cgroup.subtree_control"), "cpuset");
    assert_eq!(k.file("sys.slice/c/cpuset.cpus"), "2-3");
}

#[test]
fn v2_descendants_without_cpuset_inherit_and_are_verified_against_the_container() {
    let k = FakeKernel::v2("0-7", "0-1", "cpuset");
    k.cgroup("/c", "0-1", "0");
    // /c/sub: /c does not enable cpuset for its children, so sub has no cpuset files.
    k.cgroup("/c/sub", "", "");
    let pid = k.process("/c/sub", 1);
    // It shows /c's sets, which it inherits.
    let status = |k: &FakeKernel| {
        std::fs::read_to_string(k.proc_root().join(format!("{pid}/status"))).unwrap()
    };
    assert!(
        status(&k).contains("Cpus_allowed_list:\t0-1\n"),
        "{}",
        status(&k)
    );
    let host = k.host();
    let c = host.resolve("/c").unwrap();
    let r = host
        .apply(&c, &set("4-5"), &set("1"), &Mode::Kernel)
        .unwrap();
    assert_eq!((r.tasks_checked, r.cgroups), (1, 2));
    assert!(
        !k.cpuset_root().join("c/sub/cpuset.cpus").exists(),
        "nothing enabled below the container"
    );
    let i = host.inspect(&c).unwrap();
    assert!(i.disagreeing_tasks.is_empty(), "{:?}", i.disagreeing_tasks);
    assert!(
        status(&k).contains("Cpus_allowed_list:\t4-5\n"),
        "{}",
        status(&k)
    );
}

/// Fast mode, frozen, with memory to move: a write that fails after the freeze and after
/// the first cpuset writes (in the first step, and in the second after the workers ran)
/// thaws the cgroup and restores every cgroup's previous sets.
#[test]
fn a_fast_move_failing_after_the_freeze_thaws_and_restores() {
    let fast = Mode::Fast {
        workers: 2,
        freeze: true,
    };
    // /docker/c/sub's mems are written once in step 1 (to 0-1) and once in step 2 (to 1).
    for (step, skip) in [("step 1", 0), ("step 2", 1)] {
        let f = fake();
        f.memory_on(0);
        let c = f.container();
        f.kernel.inject_after("c/sub/cpuset.mems", libc::EIO, skip);
        let err = f.host.apply(&c, &set("2-3"), &set("1"), &fast).unwrap_err();
        match &err {
            Error::Failed {
                rollback, cause, ..
            } => {
                assert_eq!(rollback, &Rollback::Restored, "{step}: {err}");
                assert!(
                    matches!(&**cause, Error::Cgroup(e) if e.errno() == Some(libc::EIO)),
                    "{step}: {cause}"
                );
            }
            other => panic!("{step}: {other}"),
        }
        let writes = f.kernel.writes();
        let at = |path: &str, value: &str| {
            writes
                .iter()
                .position(|(p, v)| p == path && v == value)
                .unwrap_or_else(|| panic!("{step}: no {path}={value} in {writes:?}"))
        };
        let frozen = at("docker/c/freezer.state", "FROZEN");
        let thawed = at("docker/c/freezer.state", "THAWED");
        let first_write = writes
            .iter()
            .position(|(p, _)| p.ends_with("cpuset.cpus") || p.ends_with("cpuset.mems"))
            .unwrap();
        assert!(
            frozen < first_write && first_write < thawed,
            "{step}: frozen, written, thawed: {writes:?}"
        );
        assert_eq!(f.kernel.freezer_file("docker/c/freezer.state"), "THAWED");
        assert_eq!(f.sets("docker/c"), ("0-1".into(), "0".into()), "{step}");
        assert_eq!(f.sets("docker/c/sub"), ("0-1".into(), "0".into()), "{step}");
    }
}

/// A cancelled fast move finishes the cpuset (the kernel moves the rest); a cancelled
/// throttled one keeps the old and new nodes, so that nothing moves uncapped, and says so.
#[test]
fn a_cancel_finishes_a_fast_move_and_leaves_a_throttled_one_on_both_nodes() {
    let cancel = Arc::new(AtomicBool::new(true));
    let opts = ApplyOptions {
        cancel: Some(cancel),
        ..ApplyOptions::default()
    };

    let f = fake();
    f.memory_on(0);
    let fast = Mode::Fast {
        workers: 2,
        freeze: true,
    };
    let r = f
        .host
        .apply_with(&f.container(), &set("2-3"), &set("1"), &fast, &opts)
        .unwrap();
    assert!(r.migration.cancelled);
    assert_eq!(r.after.mems.to_string(), "1");
    assert_eq!(f.sets("docker/c"), ("2-3".into(), "1".into()));
    assert_eq!(f.kernel.freezer_file("docker/c/freezer.state"), "THAWED");
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("kernel moved the rest")),
        "{:?}",
        r.warnings
    );

    let f = fake();
    f.memory_on(0);
    let throttled = Mode::Throttled {
        bytes_per_sec: 1 << 20,
    };
    let r = f
        .host
        .apply_with(&f.container(), &set("2-3"), &set("1"), &throttled, &opts)
        .unwrap();
    assert!(r.migration.cancelled);
    assert_eq!(r.after.cpus.to_string(), "2-3");
    assert_eq!(r.after.mems.to_string(), "0-1");
    assert_eq!(f.sets("docker/c"), ("2-3".into(), "0-1".into()));
    assert_eq!(f.sets("docker/c/sub"), ("2-3".into(), "0-1".into()));
    assert!(
        !f.kernel
            .writes()
            .iter()
            .any(|(p, v)| p.ends_with("cpuset.mems") && v == "1"),
        "no write of the new nodes alone: {:?}",
        f.kernel.writes()
    );
    assert_eq!(r.migration.left_on_old_nodes, 2 << 20);
    assert!(
        r.warnings.iter().any(|w| w.contains("uncapped")),
        "{:?}",
        r.warnings
    );
    // placectl prints each warning (its own tests check the text).
    assert!(
        r.warnings.iter().any(|w| w.starts_with("cancelled")),
        "{:?}",
        r.warnings
    );
}

/// Once the move is verified, failing to read the memory for the report does not undo it:
/// the report comes back with a warning and the unmeasured parts empty.
#[test]
fn memory_unreadable_after_a_verified_move_is_a_warning_not_a_rollback() {
    let f = fake();
    f.memory_on(0);
    // The first read (before the move) works, the second (after) fails.
    f.kernel
        .inject_read_after(&format!("{}/numa_maps", f.pids[0]), libc::EIO, 1);
    let r = f
        .host
        .apply(&f.container(), &set("2-3"), &set("1"), &Mode::Kernel)
        .unwrap();
    assert_eq!(f.sets("docker/c"), ("2-3".into(), "1".into()));
    assert_eq!(r.after.mems.to_string(), "1");
    assert_eq!(r.migration.before.total(), 2 << 20);
    assert_eq!(r.migration.after.total(), 0);
    assert_eq!(r.migration.bytes_moved, 0, "unmeasured, not guessed");
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    assert!(
        r.warnings[0].contains("could not be read") && r.warnings[0].contains("EIO"),
        "{}",
        r.warnings[0]
    );
}

/// The move-cost inputs count the container's whole subtree; without per-node figures the
/// bytes a move would migrate are all of its resident memory, the most a move can take.
#[test]
fn move_cost_inputs_count_the_subtree_and_fall_back_to_all_resident_memory() {
    let f = fake();
    let cg = f.container().cgroup;
    f.kernel
        .set_memory(f.pids[0], &[(0, 3 << 20), (1, 1 << 20)]);
    f.kernel.set_memory(f.pids[1], &[(0, 2 << 20)]);
    let per_node = f.host.resident_per_node(&cg).unwrap();
    assert_eq!(per_node.total(), 6 << 20);
    assert_eq!(f.host.bytes_outside(&cg, &set("1")).unwrap(), 5 << 20);
    assert_eq!(f.host.bytes_outside(&cg, &set("0-1")).unwrap(), 0);
    f.kernel
        .inject_read_after(&format!("{}/numa_maps", f.pids[1]), libc::EIO, 0);
    assert_eq!(f.host.bytes_outside(&cg, &set("1")).unwrap(), 6 << 20);
    f.kernel.remove_cgroup("/docker/c");
    let err = f.host.bytes_outside(&cg, &set("1")).unwrap_err();
    assert_eq!(err.fault(), Fault::NotFound, "{err}");
}

/// The vCPU count from the CPU quota and the perf directory come from the host object.
#[test]
fn the_host_reads_the_cpu_quota_of_a_container() {
    let f = fake();
    let cg = f.container().cgroup;
    assert_eq!(f.host.vcpus_from_quota(&cg), None, "no quota: unlimited");
    f.kernel.set_cpu_quota("/docker/c", 150_000, 100_000);
    assert_eq!(f.host.vcpus_from_quota(&cg), Some(2));
    assert_eq!(
        f.host.perf_dir(&cg),
        None,
        "the fake v1 host mounts no perf_event"
    );
}

/// A fast move holding the container frozen when the host shuts down: the host's
/// `thaw_all` thaws it (and the move's own guard then leaves it alone).
#[test]
fn the_host_thaws_what_a_move_of_its_own_holds_frozen() {
    let f = fake();
    f.memory_on(0);
    let scratch = tempfile::tempdir().unwrap();
    let hold = migrate::HoldPoint {
        release: scratch.path().join("hold"),
    };
    std::fs::write(&hold.release, b"").unwrap();
    let opts = ApplyOptions {
        hold: Some(hold.clone()),
        ..ApplyOptions::default()
    };
    let fast = Mode::Fast {
        workers: 1,
        freeze: true,
    };
    std::thread::scope(|s| {
        let mover = s.spawn(|| {
            f.host
                .apply_with(&f.container(), &set("2-3"), &set("1"), &fast, &opts)
        });
        // The workers announce the hold point once there: wait for that event.
        while !hold.reached_marker().exists() {
            std::thread::yield_now();
        }
        assert_eq!(f.kernel.freezer_file("docker/c/freezer.state"), "FROZEN");
        // Another host object on the same kernel holds no guard of this move.
        assert_eq!(f.kernel.host().thaw_all(), 0);
        assert_eq!(f.host.clone().thaw_all(), 1);
        assert_eq!(f.kernel.freezer_file("docker/c/freezer.state"), "THAWED");
        std::fs::remove_file(&hold.release).unwrap();
        mover.join().unwrap().unwrap();
    });
    assert_eq!(f.kernel.freezer_file("docker/c/freezer.state"), "THAWED");
}
