//! CreateContainer answer time through placed's NRI plugin with many managed containers,
//! in-process on placed-host's fake kernel (no root): `cargo bench -p placed --bench nri
//! [-- --containers N --calls C]`.
//!
//! The daemon runs its real NRI plugin (`kubernetes::Node`) connected over a real Unix
//! socket to `placed_nri::fake::FakeRuntime`, which speaks the protocol as containerd does.
//! The machine is synthetic (support/crowded.rs: 224 PUs in 8 NUMA nodes), with N managed
//! containers (default 100) under the observe policy. Each call is a pod annotated `placed.io/policy:
//! smart-aggressive` with a limit of 2 CPUs: the admission decides and holds a unit, the
//! answer pins the container; a StopContainer then frees the hold for the next call. The
//! time is the runtime's, from sending CreateContainer to the answer. Times on this shared
//! 2-core VM are indicative only.

#[path = "support/crowded.rs"]
mod crowded;

use std::time::Instant;

use placed::kubernetes::Node;
use placed_nri::fake::FakeRuntime;
use placed_nri::{Container, Pod, Resources};

use crowded::{Crowd, arg, report};

fn pod(i: usize) -> (Pod, Container) {
    let pod = Pod {
        id: format!("sandbox{i}"),
        uid: format!("uid{i}"),
        name: format!("web{i}"),
        namespace: "bench".into(),
        annotations: [("placed.io/policy".to_owned(), "smart-aggressive".to_owned())].into(),
        cgroup_parent: format!("/kubepods/burstable/poduid{i}"),
        ..Pod::default()
    };
    let container = Container {
        id: format!("c{i}"),
        pod_id: pod.id.clone(),
        name: "app".into(),
        cgroups_path: format!("/kubepods/burstable/poduid{i}/c{i}"),
        resources: Resources {
            cpu_quota: Some(200_000),
            cpu_period: Some(100_000),
            cpu_shares: Some(2048),
            ..Resources::default()
        },
        ..Container::default()
    };
    (pod, container)
}

fn main() {
    let calls = arg("--calls", 1000);
    let mut crowd = Crowd::new(arg("--containers", 100));
    let dir = crowd.dir.path().to_owned();
    crowd.config.nri.enabled = true;
    crowd.config.nri.socket = dir.join("nri.sock");
    crowd.config.nri.kubelet_cpu_manager_state = dir.join("none");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let nri = crowd.config.nri.clone();
        let fake = FakeRuntime::bind(&nri.socket).expect("the fake runtime listens");
        let daemon = crowd.start().await;
        let node = Node::start(&nri, &daemon)
            .expect("valid [nri]")
            .expect("enabled");
        let (conn, _, _) = fake
            .accept_synchronized(&[], &[])
            .await
            .expect("the plugin registers");
        let mut times = Vec::with_capacity(calls);
        let mut pinned = 0;
        for i in 0..calls {
            let (p, c) = pod(i);
            let t = Instant::now();
            let sets = conn.create_container(&p, &c).await.expect("answered");
            times.push(t.elapsed());
            pinned += usize::from(sets.is_some());
            conn.stop_container(&p, &c).await.expect("stopped");
        }
        report(
            &format!("CreateContainer smart-aggressive v=2 ({pinned} pinned)"),
            times,
        );
        node.stop().await;
        daemon.shutdown().await;
    });
}
