//! `placectl move`, `inspect` and `containers` on this host's real cgroups (root only; a
//! test cgroup holding a `sleep`, removed afterwards whatever happens).

use placed_core::exit::Exit;
use std::process::Command;

use placed_core::cpuset::{CpuSet, NodeSet};
use placed_host::enact::Host;

use crate::cgroup_support::TestCgroup;
use crate::cgroup_support::host_or_say as host;
use crate::util::placectl;

/// A test cgroup holding one `sleep`.
fn sleeper(host: &Host, cpus: &CpuSet, mems: &NodeSet) -> TestCgroup {
    let mut cg = TestCgroup::new(host, cpus, mems);
    let child = Command::new("sleep")
        .arg("600")
        .spawn()
        .expect("start sleep");
    let path = cg.path.clone();
    let pid = child.id();
    cg.adopt(&path, pid, child);
    cg
}

#[test]
fn move_and_inspect_a_cgroup_by_path() {
    let Some(host) = host() else { return };
    let cpus = host.online_cpus().unwrap();
    let nodes = host.memory_nodes().unwrap();
    let first: CpuSet = cpus.first().into_iter().collect();
    let node: NodeSet = nodes.first().into_iter().collect();
    let s = sleeper(&host, &first, &node);
    let reference = s.reference();

    let run = placectl(["inspect", &reference]).ok();
    assert!(run.stdout.contains(&format!("cpus {first}")), "{run:?}");
    assert!(run.stdout.contains("1 processes"), "{run:?}");

    let run = placectl([
        "move",
        &reference,
        "--cpus",
        &cpus.to_string(),
        "--mems",
        &node.to_string(),
        "--migrate",
        "fast",
        "--workers",
        "2",
        "--json",
    ])
    .ok();
    let j = run.json();
    assert_eq!(j["schema"], "placed.move/v1", "{run:?}");
    assert_eq!(j["after"]["cpus"], cpus.to_string(), "{run:?}");
    assert_eq!(j["migration"]["mode"]["kind"], "fast", "{run:?}");
    assert_eq!(j["container"]["runtime"], "cgroup", "{run:?}");
    assert!(j["tasks_checked"].as_u64().unwrap() >= 1, "{run:?}");

    let run = placectl(["inspect", &reference, "--json"]).ok();
    assert_eq!(
        run.json()["cpuset"]["effective_cpus"],
        cpus.to_string(),
        "{run:?}"
    );

    let run = placectl([
        "move",
        &reference,
        "--cpus",
        &first.to_string(),
        "--mems",
        &node.to_string(),
    ])
    .ok();
    assert!(run.stdout.contains("Verified  1 tasks"), "{run:?}");

    placectl([
        "move",
        &reference,
        "--cpus",
        "4000",
        "--mems",
        &node.to_string(),
    ])
    .fails_with(Exit::BadInput, "CPUs 4000 are not online");
}

#[test]
fn move_errors_are_one_line_with_exit_2() {
    let Some(host) = host() else { return };
    let node = host
        .memory_nodes()
        .unwrap()
        .first()
        .unwrap_or(0)
        .to_string();
    placectl([
        "move",
        "placed-e2e-no-such-container",
        "--cpus",
        "0",
        "--mems",
        &node,
    ])
    .fails_with(
        Exit::NotFound,
        "no container \"placed-e2e-no-such-container\"",
    );
    placectl(["move", "../../etc", "--cpus", "0", "--mems", &node])
        .fails_with(Exit::BadInput, "invalid container reference");
    placectl(["inspect", "cgroup:/placed-e2e-absent"])
        .fails_with(Exit::NotFound, "no cgroup /placed-e2e-absent");
}

#[test]
fn containers_lists_as_json() {
    let Some(_host) = host() else { return };
    let run = placectl(["containers", "--host", "--json"]).ok();
    // Not the daemon's list (`placed.containers/v1`): another shape, another id.
    assert_eq!(run.json()["schema"], "placed.host-containers/v1", "{run:?}");
    assert!(run.json()["containers"].is_array(), "{run:?}");
}
