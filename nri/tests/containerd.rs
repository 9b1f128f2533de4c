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

use k8s_cri::v1 as cri;
use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use tokio::sync::mpsc;
use tonic::transport::Channel;

use placed_core::reconcile::Sets;
use placed_nri::{
    Config, Container, ContainerState, Placer, Plugin, Pod, Resources, StateChange, Status, Update,
    Vcpus,
};
use support::containerd::{Containerd, IMAGE};

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

struct TestPod {
    id: String,
    parent: String,
    config: cri::PodSandboxConfig,
}

async fn run_pod(
    ctrd: &mut Containerd,
    cri: &mut RuntimeServiceClient<Channel>,
    name: &str,
    managed: bool,
) -> TestPod {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // A uid in Kubernetes' form, naming this test process.
    let uid = format!("7e570000-0000-4000-8000-{:08x}{n:04x}", std::process::id());
    let parent = ctrd.pod_cgroup(&uid);
    let mut annotations = HashMap::new();
    if managed {
        annotations.insert("placed.io/policy".to_string(), "model".to_string());
    }
    let config = cri::PodSandboxConfig {
        metadata: Some(cri::PodSandboxMetadata {
            name: name.into(),
            uid: uid.clone(),
            namespace: "placed-test".into(),
            attempt: 0,
        }),
        // Host network: the host's UTS namespace too, so no hostname (as the kubelet).
        labels: [("app".to_string(), name.to_string())].into(),
        annotations,
        linux: Some(cri::LinuxPodSandboxConfig {
            cgroup_parent: parent.clone(),
            security_context: Some(cri::LinuxSandboxSecurityContext {
                namespace_options: Some(cri::NamespaceOption {
                    network: cri::NamespaceMode::Node as i32,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let id = cri
        .run_pod_sandbox(cri::RunPodSandboxRequest {
            config: Some(config.clone()),
            runtime_handler: String::new(),
        })
        .await
        .expect("RunPodSandbox")
        .into_inner()
        .pod_sandbox_id;
    ctrd.note_shims();
    TestPod { id, parent, config }
}

/// CreateContainer with a CPU limit of 1 and a request of 1 (period, quota, shares), as
/// the kubelet sends them; then StartContainer.
async fn start_container(
    cri: &mut RuntimeServiceClient<Channel>,
    pod: &TestPod,
    name: &str,
) -> String {
    let config = cri::ContainerConfig {
        metadata: Some(cri::ContainerMetadata {
            name: name.into(),
            attempt: 0,
        }),
        image: Some(cri::ImageSpec {
            image: IMAGE.into(),
            ..Default::default()
        }),
        command: vec!["/bin/sleep".into(), "3600".into()],
        linux: Some(cri::LinuxContainerConfig {
            resources: Some(cri::LinuxContainerResources {
                cpu_period: 100_000,
                cpu_quota: 100_000,
                cpu_shares: 1024,
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let id = cri
        .create_container(cri::CreateContainerRequest {
            pod_sandbox_id: pod.id.clone(),
            config: Some(config),
            sandbox_config: Some(pod.config.clone()),
        })
        .await
        .expect("CreateContainer")
        .into_inner()
        .container_id;
    cri.start_container(cri::StartContainerRequest {
        container_id: id.clone(),
    })
    .await
    .expect("StartContainer");
    id
}

/// UpdateContainerResources as a static CPU manager sends it: the same limit and request,
/// its own cpuset.
async fn update_cpuset(cri: &mut RuntimeServiceClient<Channel>, container: &str, cpus: &str) {
    cri.update_container_resources(cri::UpdateContainerResourcesRequest {
        container_id: container.to_owned(),
        linux: Some(cri::LinuxContainerResources {
            cpu_period: 100_000,
            cpu_quota: 100_000,
            cpu_shares: 1024,
            cpuset_cpus: cpus.to_owned(),
            ..Default::default()
        }),
        ..Default::default()
    })
    .await
    .expect("UpdateContainerResources");
}

async fn remove_pod(cri: &mut RuntimeServiceClient<Channel>, pod: &TestPod, containers: &[&str]) {
    for c in containers {
        cri.stop_container(cri::StopContainerRequest {
            container_id: c.to_string(),
            timeout: 0,
        })
        .await
        .expect("StopContainer");
        cri.remove_container(cri::RemoveContainerRequest {
            container_id: c.to_string(),
        })
        .await
        .expect("RemoveContainer");
    }
    cri.stop_pod_sandbox(cri::StopPodSandboxRequest {
        pod_sandbox_id: pod.id.clone(),
    })
    .await
    .expect("StopPodSandbox");
    cri.remove_pod_sandbox(cri::RemovePodSandboxRequest {
        pod_sandbox_id: pod.id.clone(),
    })
    .await
    .expect("RemovePodSandbox");
}

/// The container's cpuset as the kernel has it: (cpus, mems).
fn cpuset(pod: &TestPod, container: &str) -> (String, String) {
    let read = |f| {
        std::fs::read_to_string(Containerd::cpuset_file(&pod.parent, container, f))
            .unwrap_or_else(|e| panic!("{f} of {container}: {e}"))
            .trim()
            .to_owned()
    };
    (read("cpuset.cpus"), read("cpuset.mems"))
}

/// Waits for an effect containerd applies after the plugin answered (a synchronization's
/// updates), bounded: it normally takes milliseconds.
async fn wait_cpuset(pod: &TestPod, container: &str, want: (&str, &str)) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = cpuset(pod, container);
        if (got.0.as_str(), got.1.as_str()) == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "cpuset of {container} is {got:?}, not {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
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
    let mut ctrd = match Containerd::start() {
        Ok(c) => c,
        Err(skip) => {
            eprintln!("skipped: {}", skip.0);
            return;
        }
    };
    let all = std::fs::read_to_string("/sys/fs/cgroup/cpuset/cpuset.cpus")
        .expect("root cpuset")
        .trim()
        .to_owned();
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
    let pod_a = run_pod(&mut ctrd, &mut cri, "web", true).await;
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
    let pod_c = run_pod(&mut ctrd, &mut cri, "plain", false).await;
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
    let pod_b = run_pod(&mut ctrd, &mut cri, "batch", true).await;
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
