//! The daemon with real Docker containers, where `docker info` works: discovered as they
//! start, placed by name, forgotten when removed.

use crate::daemon_util::{Setup, TestDaemon, cpus_allowed};
use crate::docker_support::{TestContainer, docker, ready};

#[test]
fn the_daemon_places_a_docker_container_by_name() {
    let host = match crate::cgroup_support::host() {
        Ok(h) => h,
        Err(why) => {
            eprintln!("skipped, because {why}");
            return;
        }
    };
    if let Err(why) = ready() {
        eprintln!("skipped, because Docker is not usable here: {why}");
        return;
    }
    let cpus = host.online_cpus().expect("online CPUs");
    let dir = tempfile::tempdir().unwrap();
    let d = TestDaemon::start(
        dir.path(),
        &Setup {
            runtimes: vec!["docker".into()],
            ..Setup::default()
        },
    );
    let mut tc = TestContainer::run(&cpus).expect("docker run");
    let pid: u32 = docker(&["inspect", "--format", "{{.State.Pid}}", &tc.name])
        .expect("inspect")
        .parse()
        .expect("a pid");
    let name = tc.name.clone();
    d.wait_for("the container discovered by name", |j| {
        j["containers"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["name"] == name.as_str() && c["runtime"] == "docker")
        })
    });
    // A rename reaches the daemon at its next resync (the test daemon resyncs every
    // second); references by the new name work from then on.
    let renamed = format!("{}-renamed", tc.name);
    docker(&["rename", &tc.name, &renamed]).expect("docker rename");
    tc.name = renamed;
    let name = tc.name.clone();
    d.wait_for("the rename followed", |j| {
        j["containers"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["name"] == name.as_str()))
    });
    let placements = d.placectl(["placements", "--vcpus", "1", "--json"]).ok();
    let id = placements.json()["placements"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let want = placements.json()["placements"][0]["cpus"]
        .as_str()
        .unwrap()
        .to_owned();
    d.placectl(["manage", &tc.name, "--vcpus", "1"]).ok();
    let run = d
        .placectl(["place", &tc.name, "--placement", &id, "--json"])
        .ok();
    assert_eq!(run.json()["moved"], true, "{run:?}");
    assert_eq!(cpus_allowed(pid), want, "{run:?}");
    let state = docker(&["inspect", "--format", "{{.State.Status}}", &tc.name]).unwrap();
    assert_eq!(state, "running");

    drop(tc);
    d.wait_for("the removed container forgotten", |j| {
        j["containers"]
            .as_array()
            .is_some_and(|cs| !cs.iter().any(|c| c["name"] == name.as_str()))
    });
    assert!(d.log().contains("vanished"), "{}", d.log());
}
