//! Error paths of both backends on the fake kernel (`crate::fake`); the real kernel
//! is exercised by `host/tests/enact`.

use std::sync::Arc;
use std::time::Duration;

use super::plan::{self, Change, Sets};
use super::*;
use crate::fake::FakeKernel;
use placed_core::fault::Fault;

fn cg(s: &str) -> CgroupPath {
    CgroupPath::parse(s).unwrap()
}

#[test]
fn detects_each_host_layout_from_mountinfo() {
    // Hybrid (this project's CI): v1 cpuset wins over a cgroup2 mount without cpuset.
    let k = FakeKernel::v1("0-3", "0");
    let info = format!(
        "34 31 0:31 / {} rw - cgroup cgroup rw,cpuset\n\
         37 31 0:34 / {} rw - cgroup cgroup rw,freezer\n\
         41 31 0:38 / /nonexistent/unified rw - cgroup2 cgroup2 rw\n",
        k.cpuset_root().display(),
        k.freezer_root().display()
    );
    let c = Cgroups::from_mounts(&Mounts::parse(&info).unwrap(), k.clone()).unwrap();
    assert_eq!(c.version(), Version::V1);
    assert_eq!(c.root(), k.cpuset_root());

    // Pure v2 with cpuset offered by the root.
    let k2 = FakeKernel::v2("0-3", "0-1", "");
    let info = format!(
        "25 22 0:23 / {} rw - cgroup2 cgroup2 rw\n",
        k2.cpuset_root().display()
    );
    let c = Cgroups::from_mounts(&Mounts::parse(&info).unwrap(), k2.clone()).unwrap();
    assert_eq!(c.version(), Version::V2);

    // cgroup2 without cpuset and no v1 cpuset: a host-configuration error with a hint.
    std::fs::write(
        k2.cpuset_root().join("cgroup.controllers"),
        "cpu io memory pids",
    )
    .unwrap();
    let err = Cgroups::from_mounts(&Mounts::parse(&info).unwrap(), k2.clone()).unwrap_err();
    assert!(matches!(err, Error::NoCpuset { .. }), "{err}");
    assert_eq!(err.fault(), Fault::HostConfig);
    assert!(
        err.to_string().contains("mount -t cgroup -o cpuset"),
        "{err}"
    );

    let err = Cgroups::from_mounts(&Mounts::default(), k2).unwrap_err();
    assert!(matches!(err, Error::NoCpuset { .. }));
}

#[test]
fn v1_create_fills_sets_before_tasks_join() {
    let k = FakeKernel::v1("0-3", "0-1");
    let c = k.cgroups();
    // Without sets, joining fails with ENOSPC, explained.
    std::fs::create_dir(k.cpuset_root().join("raw")).unwrap();
    for f in ["cpuset.cpus", "cpuset.mems", "cgroup.procs", "tasks"] {
        std::fs::write(k.cpuset_root().join("raw").join(f), "").unwrap();
    }
    let err = c.attach(&cg("/raw"), 42).unwrap_err();
    match &err {
        Error::Refused { fault, source, .. } => {
            assert_eq!(source.errno(), Some(libc::ENOSPC));
            assert_eq!(*fault, Fault::HostConfig);
            assert_eq!(source.value.as_deref(), Some("42"));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        err.to_string().contains("set both before tasks join"),
        "{err}"
    );

    c.create(&cg("/job"), &"1-2".parse().unwrap(), &"1".parse().unwrap())
        .unwrap();
    c.attach(&cg("/job"), 42).unwrap();
    assert_eq!(
        k.writes()
            .iter()
            .map(|(p, _)| p.as_str())
            .collect::<Vec<_>>(),
        [
            "job/cpuset.cpus",
            "job/cpuset.mems",
            "job/cpuset.memory_migrate",
            "job/cgroup.procs",
            "job/cgroup.procs"
        ]
    );
    assert_eq!(c.procs(&cg("/job")).unwrap(), vec![42]);
    assert_eq!(k.freezer_file("job/cgroup.procs"), "42");
}

#[test]
fn v1_refusals_name_path_value_and_rule() {
    let k = FakeKernel::v1("0-3", "0-1");
    k.cgroup("/docker", "0-1", "0");
    k.cgroup("/docker/abc", "0-1", "0");
    k.tasks("/docker/abc", &[7]);
    let c = k.cgroups();
    let abc = cg("/docker/abc");

    // Outside the parent's cpuset: EINVAL, the caller's to fix.
    let err = c.set_cpus(&abc, &"2-3".parse().unwrap()).unwrap_err();
    assert_eq!(err.fault(), Fault::InvalidInput);
    let msg = err.to_string();
    assert!(
        msg.contains("docker/abc/cpuset.cpus")
            && msg.contains("\"2-3\"")
            && msg.contains("EINVAL")
            && msg.contains("within its parent"),
        "{msg}"
    );

    // Emptying a cpuset with tasks: ENOSPC.
    let err = c.set_mems(&abc, &NodeSet::new()).unwrap_err();
    assert!(
        matches!(&err, Error::Refused { .. }) && err.errno() == Some(libc::ENOSPC),
        "{err}"
    );

    // Shrinking a parent below its child: EBUSY.
    let err = c
        .set_cpus(&cg("/docker"), &"0".parse().unwrap())
        .unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Refused {
                fault: Fault::HostConfig,
                ..
            }
        ) && err.errno() == Some(libc::EBUSY),
        "{err}"
    );

    // Permission denied: the operator's to fix.
    k.inject("abc/cpuset.cpus", libc::EACCES);
    let err = c.set_cpus(&abc, &"0".parse().unwrap()).unwrap_err();
    assert_eq!(err.fault(), Fault::HostConfig);
    assert!(err.to_string().contains("root"), "{err}");

    // Nothing was changed by the refused writes.
    assert_eq!(k.file("docker/abc/cpuset.cpus"), "0-1");
    assert_eq!(k.file("docker/cpuset.cpus"), "0-1");
}

#[test]
fn vanished_cgroup_is_not_found() {
    let k = FakeKernel::v1("0-3", "0");
    k.cgroup("/docker/gone", "0", "0");
    let c = k.cgroups();
    std::fs::remove_dir_all(k.cpuset_root().join("docker/gone")).unwrap();
    for err in [
        c.cpuset(&cg("/docker/gone")).unwrap_err(),
        c.set_cpus(&cg("/docker/gone"), &"1".parse().unwrap())
            .unwrap_err(),
        c.threads(&cg("/docker/gone")).unwrap_err(),
        c.children(&cg("/docker/gone")).unwrap_err(),
    ] {
        assert!(matches!(err, Error::Vanished { .. }), "{err}");
        assert_eq!(err.fault(), Fault::NotFound);
    }
}

#[test]
fn v2_enables_cpuset_in_ancestors_only() {
    let k = FakeKernel::v2("0-7", "0-3", "");
    let c = k.cgroups();
    c.create(&cg("/a"), &"0-1".parse().unwrap(), &"0".parse().unwrap())
        .unwrap();
    c.create(&cg("/a/b"), &"0".parse().unwrap(), &"0".parse().unwrap())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(k.file("cgroup.subtree_control"), "cpuset");
    assert_eq!(k.file("a/cgroup.subtree_control"), "cpuset");
    // The leaf's own subtree_control stays empty: it may hold processes.
    assert_eq!(k.file("a/b/cgroup.subtree_control"), "");
    c.attach(&cg("/a/b"), 9).unwrap();

    // A populated non-root ancestor: EBUSY from the no-internal-process rule, with a hint.
    k.cgroup("/busy", "", "");
    k.tasks("/busy", &[5]);
    let err = c
        .create(&cg("/busy/x"), &"0".parse().unwrap(), &"0".parse().unwrap())
        .unwrap_err();
    match &err {
        Error::CannotEnableCpuset { source, .. } => {
            assert!(source.path.ends_with("busy/cgroup.subtree_control"))
        }
        other => panic!("{other}"),
    }
    assert_eq!(err.fault(), Fault::HostConfig);
    assert!(err.to_string().contains("leaf"), "{err}");

    // Attaching to a cgroup that enables controllers for its children: EBUSY.
    let err = c.attach(&cg("/a"), 10).unwrap_err();
    assert!(
        matches!(&err, Error::Refused { .. }) && err.errno() == Some(libc::EBUSY),
        "{err}"
    );
}

#[test]
fn v2_missing_cpuset_files_say_how_to_enable() {
    let k = FakeKernel::v2("0-7", "0-3", "");
    k.cgroup("/plain", "", "");
    let err = k.cgroups().cpuset(&cg("/plain")).unwrap_err();
    assert!(
        matches!(
            err,
            Error::MissingFile {
                file: "cpuset.cpus",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("+cpuset"), "{err}");
    // prepare() fixes it.
    let c = k.cgroups();
    c.prepare(&cg("/plain")).unwrap();
    let s = c.cpuset(&cg("/plain")).unwrap();
    assert!(s.cpus.is_empty(), "v2: empty means inherit");
    assert_eq!(s.effective_cpus.to_string(), "0-7");
}

#[test]
fn v2_effective_is_within_parent() {
    let k = FakeKernel::v2("0-7", "0-3", "cpuset");
    k.cgroup("/p", "0-3", "0-1");
    k.cgroup("/p/c", "", "");
    let c = k.cgroups();
    c.prepare(&cg("/p/c")).unwrap();
    c.set_cpus(&cg("/p/c"), &"2-5".parse().unwrap()).unwrap();
    assert_eq!(
        c.cpuset(&cg("/p/c")).unwrap().effective_cpus.to_string(),
        "2-3"
    );
    // Offline CPU: EINVAL, bad input.
    let err = c.set_cpus(&cg("/p/c"), &"9".parse().unwrap()).unwrap_err();
    assert_eq!(err.fault(), Fault::InvalidInput);
}

#[test]
fn subtree_is_preorder_and_plan_executes_on_v1() {
    let k = FakeKernel::v1("0-7", "0-1");
    k.cgroup("/pod", "0-3", "0");
    k.cgroup("/pod/c1", "0-1", "0");
    k.cgroup("/pod/c1/x", "0", "0");
    k.cgroup("/pod/c2", "2-3", "0");
    for p in ["/pod/c1/x", "/pod/c2"] {
        k.tasks(p, &[1]);
    }
    let c = k.cgroups();
    let tree = c.subtree(&cg("/pod")).unwrap();
    assert_eq!(
        tree.iter().map(ToString::to_string).collect::<Vec<_>>(),
        ["/pod", "/pod/c1", "/pod/c1/x", "/pod/c2"]
    );
    let to = Sets {
        cpus: "4-7".parse().unwrap(),
        mems: "1".parse().unwrap(),
    };
    let changes: Vec<Change> = tree
        .iter()
        .map(|p| {
            let s = c.cpuset(p).unwrap();
            Change {
                cgroup: p.clone(),
                from: Sets {
                    cpus: s.cpus,
                    mems: s.mems,
                },
                to: to.clone(),
            }
        })
        .collect();
    let writes = plan::order(&changes).unwrap();
    plan::execute(c.backend().as_ref(), &writes).unwrap();
    for p in ["pod", "pod/c1", "pod/c1/x", "pod/c2"] {
        assert_eq!(k.file(&format!("{p}/cpuset.cpus")), "4-7");
        assert_eq!(k.file(&format!("{p}/cpuset.mems")), "1");
    }
    // Writing the children first, as a naive loop would, is refused by the fake as by the
    // kernel: the order matters.
    let k = FakeKernel::v1("0-7", "0-1");
    k.cgroup("/pod", "0-3", "0");
    k.cgroup("/pod/c1", "0-1", "0");
    let err = k
        .cgroups()
        .set_cpus(&cg("/pod/c1"), &"4-7".parse().unwrap())
        .unwrap_err();
    assert!(matches!(&err, Error::Refused { .. }) && err.errno() == Some(libc::EINVAL));
}

#[test]
fn freeze_guard_thaws_on_drop_and_error() {
    for k in [
        FakeKernel::v1("0-3", "0"),
        FakeKernel::v2("0-3", "0", "cpuset"),
    ] {
        k.cgroup("/c", "0", "0");
        let c = k.cgroups();
        {
            let g = c.freeze(&cg("/c"), Duration::from_secs(1)).unwrap();
            assert!(g.owned());
            assert!(c.is_frozen(&cg("/c")).unwrap());
        }
        assert!(
            !c.is_frozen(&cg("/c")).unwrap(),
            "{:?}: dropped guard thaws",
            k.version
        );

        // Frozen by someone else (docker pause): stays frozen.
        c.set_frozen(&cg("/c"), true).unwrap();
        let g = c.freeze(&cg("/c"), Duration::from_secs(1)).unwrap();
        assert!(!g.owned());
        g.thaw().unwrap();
        assert!(c.is_frozen(&cg("/c")).unwrap());
        c.set_frozen(&cg("/c"), false).unwrap();

        // A freeze that never completes: timeout, and thawed again.
        k.stick_freeze();
        let err = c.freeze(&cg("/c"), Duration::from_millis(50)).unwrap_err();
        assert!(matches!(err, Error::FreezeTimeout { .. }), "{err}");
        assert_eq!(err.fault(), Fault::Transient);
        let last = k.writes().last().cloned().unwrap();
        assert!(last.1 == "0" || last.1 == "THAWED", "{last:?}");
    }
}

#[test]
fn thaw_all_releases_the_live_guards_of_its_own_hierarchy() {
    let k = FakeKernel::v2("0-3", "0", "cpuset");
    k.cgroup("/held", "0", "0");
    k.cgroup("/other", "0", "0");
    k.cgroup("/paused", "0", "0");
    let c = k.cgroups();
    // A clone shares the registry (the daemon's Host holds clones of one Cgroups).
    let clone = c.clone();
    let g = c.freeze(&cg("/held"), Duration::from_secs(1)).unwrap();
    // Frozen by someone else (docker pause): its guard owns nothing, thaw_all leaves it.
    c.set_frozen(&cg("/paused"), true).unwrap();
    let paused = c.freeze(&cg("/paused"), Duration::from_secs(1)).unwrap();
    // Another hierarchy object on the same kernel (another host in the process) has its own
    // registry: it neither sees nor thaws this one's guards.
    let stranger = k.cgroups();
    let other = stranger
        .freeze(&cg("/other"), Duration::from_secs(1))
        .unwrap();
    assert_eq!(clone.thaw_all(), 1);
    assert!(!c.is_frozen(&cg("/held")).unwrap());
    assert!(
        c.is_frozen(&cg("/paused")).unwrap(),
        "never thaws what it did not freeze"
    );
    assert!(
        c.is_frozen(&cg("/other")).unwrap(),
        "not this hierarchy's guard"
    );
    assert_eq!(c.thaw_all(), 0, "thawed guards are forgotten");
    // The thawed guard's drop writes nothing more.
    let writes = k.writes().len();
    drop(g);
    assert_eq!(k.writes().len(), writes);
    assert_eq!(stranger.thaw_all(), 1);
    assert!(!c.is_frozen(&cg("/other")).unwrap());
    drop((paused, other));
    assert!(c.is_frozen(&cg("/paused")).unwrap());
}

/// A thaw that thaw_all cannot do stays the guard's: its drop tries again.
#[test]
fn a_thaw_all_that_fails_leaves_the_guard_responsible() {
    let k = FakeKernel::v2("0-3", "0", "cpuset");
    k.cgroup("/c", "0", "0");
    let c = k.cgroups();
    let g = c.freeze(&cg("/c"), Duration::from_secs(1)).unwrap();
    k.inject("c/cgroup.freeze", libc::EIO);
    assert_eq!(c.thaw_all(), 0);
    assert!(c.is_frozen(&cg("/c")).unwrap());
    drop(g);
    assert!(
        !c.is_frozen(&cg("/c")).unwrap(),
        "the guard's drop thawed it"
    );
}

#[test]
fn v1_freeze_without_freezer_cgroup_says_why() {
    let k = FakeKernel::v1("0-3", "0");
    k.cgroup("/c", "0", "0");
    std::fs::remove_dir_all(k.freezer_root().join("c")).unwrap();
    let err = k
        .cgroups()
        .freeze(&cg("/c"), Duration::from_secs(1))
        .unwrap_err();
    assert!(matches!(err, Error::NoFreezer { .. }), "{err}");
    let c = Cgroups::v1(k.cpuset_root(), None, k.clone());
    let err = c.is_frozen(&cg("/c")).unwrap_err();
    assert!(err.to_string().contains("not mounted"), "{err}");
}

#[test]
fn symlink_out_of_the_mount_is_refused() {
    let k = FakeKernel::v1("0-3", "0");
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), k.cpuset_root().join("evil")).unwrap();
    let err = k.cgroups().exists(&cg("/evil")).unwrap_err();
    assert!(matches!(err, Error::OutsideMount { .. }), "{err}");
    assert_eq!(err.fault(), Fault::InvalidInput);
    assert!(!k.cgroups().exists(&cg("/absent")).unwrap());
}

#[test]
fn v1_prepare_sets_memory_migrate_in_the_subtree() {
    let k = FakeKernel::v1("0-3", "0");
    k.cgroup("/a", "0", "0");
    k.cgroup("/a/b", "0", "0");
    k.cgroups().prepare(&cg("/a")).unwrap();
    assert_eq!(k.file("a/cpuset.memory_migrate"), "1");
    assert_eq!(k.file("a/b/cpuset.memory_migrate"), "1");
    let _ = Arc::strong_count(k.cgroups().backend());
}

#[test]
fn a_failed_thaw_is_reported_and_retried_on_drop() {
    let k = FakeKernel::v2("0-3", "0", "cpuset");
    k.cgroup("/c", "0", "0");
    let c = k.cgroups();
    let g = c.freeze(&cg("/c"), Duration::from_secs(1)).unwrap();
    k.inject("c/cgroup.freeze", libc::EIO);
    let err = g.thaw().unwrap_err();
    assert_eq!(err.errno(), Some(libc::EIO), "{err}");
    // The guard's drop (inside thaw) tried again, and that write went through.
    assert!(!c.is_frozen(&cg("/c")).unwrap());
}

#[test]
fn v2_cpuset_not_offered_cannot_be_enabled() {
    let k = FakeKernel::v2("0-3", "0", "");
    std::fs::write(k.cpuset_root().join("cgroup.controllers"), "cpu memory").unwrap();
    // Built by hand: detection would refuse this host up front (NoCpuset, tested above).
    let err = Cgroups::v2(k.cpuset_root(), k.clone())
        .create(&cg("/a"), &"0".parse().unwrap(), &"0".parse().unwrap())
        .unwrap_err();
    assert!(matches!(err, Error::CannotEnableCpuset { .. }), "{err}");
    assert_eq!(err.errno(), Some(libc::ENOENT));
    assert_eq!(err.fault(), Fault::HostConfig);
    assert!(err.to_string().contains("cgroup_no_v1"), "{err}");
}
