//! Kubelet-shaped CRI calls to the private containerd: pods with the kubelet's cgroupfs
//! parent and host network, containers sized as the kubelet sizes them, a static CPU
//! manager's update, teardown; and the containers' cpusets as the kernel has them.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use k8s_cri::v1 as cri;
use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use tonic::transport::Channel;

use super::containerd::{Containerd, IMAGE};

/// The CPUs of the root cpuset: what a container the runtime creates unpinned gets.
pub fn root_cpus() -> String {
    std::fs::read_to_string("/sys/fs/cgroup/cpuset/cpuset.cpus")
        .expect("the root cpuset")
        .trim()
        .to_owned()
}

/// A pod sandbox the tests made: its id, cgroup parent and CRI config.
pub struct TestPod {
    pub id: String,
    pub parent: String,
    pub config: cri::PodSandboxConfig,
}

pub async fn run_pod(
    ctrd: &mut Containerd,
    cri: &mut RuntimeServiceClient<Channel>,
    name: &str,
    annotations: &[(&str, &str)],
) -> TestPod {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // A uid in Kubernetes' form, naming this test process.
    let uid = format!("7e570000-0000-4000-8000-{:08x}{n:04x}", std::process::id());
    let parent = ctrd.pod_cgroup(&uid);
    let annotations: HashMap<String, String> = annotations
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
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
pub async fn start_container(
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
pub async fn update_cpuset(cri: &mut RuntimeServiceClient<Channel>, container: &str, cpus: &str) {
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

pub async fn remove_pod(
    cri: &mut RuntimeServiceClient<Channel>,
    pod: &TestPod,
    containers: &[&str],
) {
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
pub fn cpuset(pod: &TestPod, container: &str) -> (String, String) {
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
pub async fn wait_cpuset(pod: &TestPod, container: &str, want: (&str, &str)) {
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
