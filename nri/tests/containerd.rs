//! The plugin against a real containerd 1.7 with NRI (a private instance, see
//! support/containerd.rs), driven by kubelet-shaped CRI calls, asserting the containers'
//! real cpusets in the cgroup v1 cpuset hierarchy. Root only; skipped, saying why, where
//! it cannot run (not root, the Debian archive unreachable).
//!
//! The test placer pins every container of a pod annotated `placed.io/policy` to CPU 1
//! and memory node 0 (this 2-CPU, one-node machine's only room to show a pin), holds what
//! it last set, and adopts such containers at synchronization. Figures from this VM are
//! not placement results.

#![allow(clippy::unwrap_used, reason = "test fixture")]

mod support;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use placed_core::reconcile::Sets;
use placed_nri::{
    Config, Container, ContainerState, Placer, Plugin, Pod, Resources, StateChange, Status, Update,
    Vcpus,
};
use support::containerd::Containerd;
use support::pods::{
    cpuset, remove_pod, root_cpus, run_pod, start_container, update_cpuset, wait_cpuset,
};

/// The annotation the test placer takes a pod by.
const MANAGED: &[(&str, &str)] = &[("placed.io/policy", "model")];

fn sets(cpus: &str, mems: &str) -> Sets {
    Sets {
        cpus: cpus.parse().unwrap(),
        mems: mems.parse().unwrap(),
    }
}

#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

struct PinPlacer {
    pin: Sets,
    /// What "placed" set for each container.
    placed: Mutex<HashMap<String, Sets>>,
    synchronized: mpsc::UnboundedSender<Vec<Container>>,
    /// What containerd said at each CreateContainer and UpdateContainer: the fields of
    /// placed's protocol subset as a real runtime fills them.
    created: mpsc::UnboundedSender<(Pod, Container)>,
    updated: mpsc::UnboundedSender<(Container, Resources)>,
}

impl PinPlacer {
    fn managed(pod: &Pod) -> bool {
        pod.annotations.contains_key("placed.io/policy")
    }

    fn set(&self, id: &str, s: &Sets) {
        self.placed.lock().unwrap().insert(id.to_owned(), s.clone());
    }
}

impl Placer for PinPlacer {
    type Error = Never;

    async fn synchronize(&self, pods: Vec<Pod>, containers: Vec<Container>) -> Vec<Update> {
        let _ = self.synchronized.send(containers.clone());
        let mut placed = self.placed.lock().unwrap();
        containers
            .iter()
            .filter(|c| c.state == ContainerState::Running)
            .filter(|c| pods.iter().any(|p| p.id == c.pod_id && Self::managed(p)))
            .map(|c| {
                // Adoption: keep what was placed; a container placed never had (started
                // while placed was down) gets the pin now.
                let sets = placed
                    .entry(c.id.clone())
                    .or_insert_with(|| self.pin.clone())
                    .clone();
                Update {
                    container_id: c.id.clone(),
                    sets,
                }
            })
            .collect()
    }

    async fn create_container(&self, pod: Pod, c: Container) -> Result<Option<Sets>, Never> {
        let _ = self.created.send((pod.clone(), c.clone()));
        if !Self::managed(&pod) {
            return Ok(None);
        }
        self.set(&c.id, &self.pin);
        Ok(Some(self.pin.clone()))
    }

    async fn update_container(
        &self,
        _: Pod,
        c: Container,
        requested: Resources,
    ) -> Result<Option<Sets>, Never> {
        let _ = self.updated.send((c.clone(), requested));
        Ok(self.placed.lock().unwrap().get(&c.id).cloned())
    }

    async fn stop_container(&self, _: Pod, c: Container) {
        self.placed.lock().unwrap().remove(&c.id);
    }

    async fn state_change(&self, _: StateChange) {}
}

async fn connected(plugin: &Plugin) {
    let mut status = plugin.status();
    tokio::time::timeout(
        Duration::from_secs(20),
        status.wait_for(|s| matches!(s, Status::Connected { .. })),
    )
    .await
    .expect("the plugin registers with containerd within 20 s")
    .expect("the plugin runs");
}

fn config(ctrd: &Containerd) -> Config {
    Config {
        socket: ctrd.nri_socket.clone(),
        backoff: Duration::from_millis(50),
        backoff_max: Duration::from_millis(500),
        ..Config::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn containerd_places_holds_and_moves_pods_through_the_plugin() {
    let t0 = Instant::now();
    let Some(mut ctrd) = Containerd::start_or_say() else {
        return;
    };
    let all = root_cpus();
    let root_cpus: placed_core::cpuset::CpuSet = all.parse().expect("root cpuset");
    if !root_cpus.contains(1) || !root_cpus.contains(0) {
        eprintln!("skipped: CPUs 0 and 1 are needed to show a pin, the host has {all}");
        return;
    }
    let (synchronized, mut syncs) = mpsc::unbounded_channel();
    let (created, mut creates) = mpsc::unbounded_channel();
    let (updated, mut updates) = mpsc::unbounded_channel();
    let placer = std::sync::Arc::new(PinPlacer {
        pin: sets("1", "0"),
        placed: Mutex::new(HashMap::new()),
        synchronized,
        created,
        updated,
    });
    let plugin = Plugin::start(config(&ctrd), placer.clone()).expect("valid config");
    connected(&plugin).await;
    assert_eq!(
        syncs.recv().await.unwrap(),
        [],
        "a fresh containerd has no containers"
    );
    let mut cri = ctrd.cri().await;

    // Created pinned: the CreateContainer adjustment set its cpuset.
    let pod_a = run_pod(&mut ctrd, &mut cri, "web", MANAGED).await;
    let web = start_container(&mut cri, &pod_a, "web").await;
    assert_eq!(cpuset(&pod_a, &web), ("1".into(), "0".into()));
    // What the placer was told, as containerd fills placed's protocol subset.
    let (pod, c) = creates.recv().await.unwrap();
    let uid = pod_a.config.metadata.as_ref().unwrap().uid.clone();
    assert_eq!(
        (pod.id.as_str(), pod.uid.as_str()),
        (pod_a.id.as_str(), uid.as_str())
    );
    assert_eq!(
        (pod.name.as_str(), pod.namespace.as_str()),
        ("web", "placed-test")
    );
    assert_eq!(pod.labels.get("app").map(String::as_str), Some("web"));
    assert_eq!(
        pod.annotations.get("placed.io/policy").map(String::as_str),
        Some("model")
    );
    assert_eq!(pod.cgroup_parent, pod_a.parent);
    assert_eq!(
        (c.id.as_str(), c.name.as_str(), c.pod_id.as_str()),
        (web.as_str(), "web", pod_a.id.as_str())
    );
    assert_eq!(c.cgroups_path, format!("{}/{web}", pod_a.parent));
    assert_eq!(
        (
            c.resources.cpu_period,
            c.resources.cpu_quota,
            c.resources.cpu_shares
        ),
        (Some(100_000), Some(100_000), Some(1024))
    );
    assert_eq!(c.resources.vcpus(), Some(Vcpus::Limit(1)));

    // An unannotated pod is left as containerd makes it, and takes a CRI cpuset as
    // given (what the hold below prevents for placed's containers).
    let pod_c = run_pod(&mut ctrd, &mut cri, "plain", &[]).await;
    let plain = start_container(&mut cri, &pod_c, "plain").await;
    assert_eq!(cpuset(&pod_c, &plain).0, all);
    assert_eq!(creates.recv().await.unwrap().1.id, plain);
    update_cpuset(&mut cri, &plain, "1").await;
    assert_eq!(cpuset(&pod_c, &plain).0, "1");
    assert_eq!(updates.recv().await.unwrap().0.id, plain);

    // Moved while it runs: UpdateContainers.
    placer.set(&web, &sets("0", "0"));
    plugin
        .updater()
        .update(&[Update {
            container_id: web.clone(),
            sets: sets("0", "0"),
        }])
        .await
        .expect("UpdateContainers");
    assert_eq!(cpuset(&pod_a, &web), ("0".into(), "0".into()));

    // Held: a static CPU manager's UpdateContainerResources(cpuset 0-1) keeps placed's.
    update_cpuset(&mut cri, &web, "0-1").await;
    assert_eq!(cpuset(&pod_a, &web), ("0".into(), "0".into()));
    let (c, requested) = updates.recv().await.unwrap();
    assert_eq!(c.id, web);
    assert_eq!(requested.cpus, Some("0-1".parse().unwrap()));
    assert_eq!(requested.cpu_quota, Some(100_000));

    // With placed down, a pod still starts, as containerd would start it.
    plugin.stop().await;
    let pod_b = run_pod(&mut ctrd, &mut cri, "batch", MANAGED).await;
    let batch = start_container(&mut cri, &pod_b, "batch").await;
    assert_eq!(
        cpuset(&pod_b, &batch).0,
        all,
        "not pinned while placed is down"
    );

    // placed back: Synchronize hands it the running containers; it keeps the first where
    // it was (adoption) and places the one started without it.
    let plugin = Plugin::start(config(&ctrd), placer.clone()).expect("valid config");
    connected(&plugin).await;
    let seen: Vec<_> = syncs
        .recv()
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert!(
        seen.contains(&web) && seen.contains(&batch),
        "Synchronize gave {seen:?}"
    );
    wait_cpuset(&pod_b, &batch, ("1", "0")).await;
    assert_eq!(cpuset(&pod_a, &web), ("0".into(), "0".into()));

    remove_pod(&mut cri, &pod_a, &[&web]).await;
    remove_pod(&mut cri, &pod_b, &[&batch]).await;
    remove_pod(&mut cri, &pod_c, &[&plain]).await;
    plugin.stop().await;
    drop(cri);
    let parents = [
        pod_a.parent.clone(),
        pod_b.parent.clone(),
        pod_c.parent.clone(),
    ];
    drop(ctrd);
    for p in parents {
        let dir = std::path::Path::new("/sys/fs/cgroup/cpuset").join(p.trim_start_matches('/'));
        assert!(!dir.exists(), "{} is left behind", dir.display());
    }
    eprintln!("containerd end-to-end: {:.1} s", t0.elapsed().as_secs_f64());
}
