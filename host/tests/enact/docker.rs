//! Real Docker containers, placed by name, where `docker info` works (see
//! `tests/support/docker.rs` for the image).

use std::path::Path;

use placed_core::cpuset::CpuSet;
use placed_host::containers::Runtime;
use placed_host::migrate::Mode;

use super::support::{Scenario, allowed};
use crate::{scenario, skip};

#[path = "../../../tests/support/docker.rs"]
mod support_docker;

use support_docker::{TestContainer, docker, ready};

#[test]
fn places_a_docker_container_by_name() {
    let Scenario { host, cpus, nodes } = scenario!();
    if let Err(why) = ready() {
        skip!("Docker is not usable here: {why}");
    }
    let one: CpuSet = cpus.first().into_iter().collect();
    let other: CpuSet = cpus.last().into_iter().collect();
    let tc = TestContainer::run(&one).unwrap();
    let id = docker(&["inspect", "--format", "{{.Id}}", &tc.name]).unwrap();

    let c = host.resolve(&tc.name).unwrap();
    assert_eq!(c.runtime, Runtime::Docker);
    assert_eq!(c.id, id);
    assert_eq!(c.name.as_deref(), Some(tc.name.as_str()));
    // The same container by runtime prefix and by short id.
    assert_eq!(
        host.resolve(&format!("docker:{}", tc.name)).unwrap().cgroup,
        c.cgroup
    );
    assert_eq!(host.resolve(&id[..12]).unwrap().cgroup, c.cgroup);
    assert!(
        host.list()
            .unwrap()
            .iter()
            .any(|l| l.id == id && l.name.as_deref() == Some(tc.name.as_str()))
    );

    let i = host.inspect(&c).unwrap();
    assert_eq!(i.cpuset.cpus, one);
    assert!(i.processes >= 3, "sh and two sleeps: {i:?}");

    // Kernel mode, then the fast mode. The fast mode freezes only when memory has to move
    // to another node: on a one-node host it writes once, unfrozen (the frozen path is
    // tested in the numa-vm guest, which has no Docker).
    let multi = nodes.len() >= 2;
    let fast_mems = if multi {
        nodes.last().into_iter().collect()
    } else {
        nodes.clone()
    };
    let fast = Mode::Fast {
        workers: 2,
        freeze: true,
    };
    for (target, mems, mode) in [
        (other.clone(), nodes.clone(), Mode::Kernel),
        (cpus.clone(), fast_mems, fast.clone()),
    ] {
        let r = host.apply(&c, &target, &mems, &mode).unwrap();
        assert!(r.tasks_checked >= 3);
        for pid in host.cgroups().threads(&c.cgroup).unwrap() {
            assert_eq!(allowed(pid).unwrap().0, target, "task {pid}");
        }
        if mode == fast {
            assert_eq!(r.migration.frozen_for.is_some(), multi, "{:?}", r.migration);
            if !multi {
                eprintln!("one NUMA node: the fast move had nothing to move and did not freeze");
            }
        }
        assert!(!host.cgroups().is_frozen(&c.cgroup).unwrap());
    }
    let state = docker(&["inspect", "--format", "{{.State.Status}}", &tc.name]).unwrap();
    assert_eq!(state, "running");

    // A paused container: the freeze guard finds it frozen and leaves it so (the same guard
    // a frozen fast move takes), and a fast move leaves it paused.
    docker(&["pause", &tc.name]).unwrap();
    assert!(
        host.cgroups().is_frozen(&c.cgroup).unwrap(),
        "docker pause froze it"
    );
    let g = host
        .cgroups()
        .freeze(&c.cgroup, std::time::Duration::from_secs(10))
        .unwrap();
    assert!(!g.owned(), "frozen by docker, not by us");
    g.thaw().unwrap();
    let state = docker(&["inspect", "--format", "{{.State.Status}}", &tc.name]).unwrap();
    assert_eq!(state, "paused");
    host.apply(&c, &one, &nodes, &fast).unwrap();
    let state = docker(&["inspect", "--format", "{{.State.Status}}", &tc.name]).unwrap();
    assert_eq!(state, "paused");
    assert!(host.cgroups().is_frozen(&c.cgroup).unwrap());
    docker(&["unpause", &tc.name]).unwrap();

    eprintln!(
        "placed docker container {} ({}) in {}",
        tc.name,
        &id[..12],
        c.cgroup
    );
    // Gone: the error says not found.
    drop(tc);
    let err = host.apply(&c, &one, &nodes, &Mode::Kernel).unwrap_err();
    assert_eq!(err.fault(), placed_core::fault::Fault::NotFound, "{err}");
    assert!(!Path::new(&c.cgroup.under(host.cgroups().root())).exists());
}
