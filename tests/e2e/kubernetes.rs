//! placed as a Kubernetes node's NRI plugin, for real: a private containerd 1.7 with NRI
//! (nri/tests/support), the placed binary in NRI mode, kubelet-shaped CRI calls, and the
//! containers' real cpusets in the cgroup v1 hierarchy. Root only; skipped, saying why,
//! where it cannot run (not root, the Debian archive unreachable).
//!
//! This VM has 2 PUs and one NUMA node, so one allocation unit: a pod pinned by placed
//! holds it, and a second one has no room. Nothing here is a placement result.

use placed_proto::v1 as pb;
use serde_json::Value;

use crate::daemon_util::{Setup, TestDaemon};
use crate::nri_support::containerd::Containerd;
use crate::nri_support::pods::{
    TestPod, cpuset, remove_pod, root_cpus, run_pod, start_container, update_cpuset,
};

const PLACED: &[(&str, &str)] = &[("placed.io/policy", "smart-aggressive")];

/// The container placectl lists under `name` (namespace/pod/container), if any.
fn listed(d: &TestDaemon, name: &str) -> Option<Value> {
    let run = d.placectl(["containers", "--json"]);
    run.json()["containers"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == name)
        .cloned()
}

/// Waits for the plugin to have registered with the runtime, from byte `from` of the log.
fn connected(d: &TestDaemon, from: usize) {
    d.wait_log_line(from, "the NRI registration", |l| {
        l.contains("NRI: connected to the container runtime")
    });
}

fn blocking<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_are_placed_when_created_held_adopted_and_freed_through_nri() {
    if crate::cgroup_support::host_or_say().is_none() {
        return;
    }
    let Some(mut ctrd) = Containerd::start_or_say() else {
        return;
    };
    let all = root_cpus();
    let dir = tempfile::tempdir().unwrap();
    let setup = Setup {
        policy_default: "observe".into(),
        extra: format!(
            "[nri]\nenabled = true\nsocket = {:?}\nkubelet_cpu_manager_state = {:?}\n",
            ctrd.nri_socket,
            dir.path().join("no-kubelet-here")
        ),
        ..Setup::default()
    };
    let mut d = blocking(|| TestDaemon::start(dir.path(), &setup));
    blocking(|| connected(&d, 0));
    eprintln!("kubernetes e2e: placed connected");
    let mut cri = ctrd.cri().await;

    // Created in the placement the admission chose, its units held until it started, then
    // managed under its pod's name with its Kubernetes identity.
    let web_pod = run_pod(&mut ctrd, &mut cri, "web", PLACED).await;
    let web = start_container(&mut cri, &web_pod, "web").await;
    eprintln!("kubernetes e2e: web started");
    let (cpus, mems) = cpuset(&web_pod, &web);
    // The hold made at CreateContainer was for this container: it claimed it at start.
    // (One unit here, of every CPU: the pin itself cannot differ from the runtime's.)
    blocking(|| {
        d.wait_log_line(0, "web's claim", |l| {
            l.contains("claimed reservation") && l.contains(web.as_str())
        })
    });
    blocking(|| {
        d.wait_for("web under management", |_| {
            listed(&d, "placed-test/web/web").is_some_and(|c| c["cpus"] == cpus.as_str())
        })
    });
    let rec = blocking(|| listed(&d, "placed-test/web/web")).unwrap();
    assert_eq!(rec["mems"], mems.as_str(), "{rec}");
    assert_eq!(rec["policy"], "smart-aggressive", "{rec}");
    assert_eq!(rec["vcpus"], 1, "from the CPU limit: {rec}");
    let held = d
        .client()
        .await
        .list_reservations(pb::ListReservationsRequest {})
        .await
        .expect("ListReservations")
        .into_inner();
    assert!(
        held.reservations.is_empty(),
        "the hold made at creation is claimed once the container runs: {held:?}"
    );

    // Held against a static CPU manager's UpdateContainerResources.
    update_cpuset(&mut cri, &web, &all).await;
    assert_eq!(cpuset(&web_pod, &web), (cpus.clone(), mems.clone()));

    // A second pod finds no room (one unit here, held by web): it starts where the runtime
    // puts it, and placed says why.
    let batch_pod = run_pod(&mut ctrd, &mut cri, "batch", PLACED).await;
    let batch = start_container(&mut cri, &batch_pod, "batch").await;
    assert_eq!(cpuset(&batch_pod, &batch).0, all);
    blocking(|| {
        d.wait_log_line(0, "batch left to the runtime", |l| {
            l.contains("placed-test/batch/batch") && l.contains("started where the runtime puts it")
        })
    });

    // A restart of placed: Synchronize hands it the running containers, and web keeps its
    // placement (adopted from the state file).
    assert!(
        blocking(|| d.stop()).is_some_and(|s| s.success()),
        "{}",
        d.log()
    );
    let from = d.log().len();
    blocking(|| d.spawn());
    blocking(|| connected(&d, from));
    blocking(|| {
        d.wait_for("web adopted", |_| {
            listed(&d, "placed-test/web/web").is_some_and(|c| c["cpus"] == cpus.as_str())
        })
    });
    assert_eq!(cpuset(&web_pod, &web), (cpus.clone(), mems.clone()));

    // placed down: a pod still starts, as the runtime would start it.
    assert!(
        blocking(|| d.stop()).is_some_and(|s| s.success()),
        "{}",
        d.log()
    );
    let late_pod = run_pod(&mut ctrd, &mut cri, "late", PLACED).await;
    let late = start_container(&mut cri, &late_pod, "late").await;
    assert_eq!(cpuset(&late_pod, &late).0, all);
    let from = d.log().len();
    blocking(|| d.spawn());
    blocking(|| connected(&d, from));
    // Taken at synchronization like any running annotated container.
    blocking(|| {
        d.wait_for("late taken", |_| {
            listed(&d, "placed-test/late/late").is_some()
        })
    });

    // Stopped and removed: handed back, its unit free.
    remove_pod(&mut cri, &web_pod, &[&web]).await;
    blocking(|| {
        d.wait_for("web handed back", |_| {
            listed(&d, "placed-test/web/web").is_none()
        })
    });
    for (pod, c) in [(&batch_pod, &batch), (&late_pod, &late)] {
        remove_pod(&mut cri, pod, &[c.as_str()]).await;
    }
    assert!(
        blocking(|| d.stop()).is_some_and(|s| s.success()),
        "{}",
        d.log()
    );
    let parents: Vec<String> = [&web_pod, &batch_pod, &late_pod]
        .iter()
        .map(|p: &&TestPod| p.parent.clone())
        .collect();
    drop(cri);
    drop(ctrd);
    for p in parents {
        let dir = std::path::Path::new("/sys/fs/cgroup/cpuset").join(p.trim_start_matches('/'));
        assert!(!dir.exists(), "{} is left behind", dir.display());
    }
}
