//! 15. Pods through NRI (issue 27): the daemon's plugin (`kubernetes::Agent`, `Node`)
//!     against placed-nri's in-process runtime, which speaks the real protocol over an
//!     in-memory pipe, on the fake host. A pod's container is "created" by the fake runtime
//!     and appears as `/ctr/<name>` on the fake kernel, as the runtime would make it. The
//!     machine has two NUMA nodes of 16 PUs, each one allocation unit.

#![allow(clippy::unwrap_used, reason = "test fixture")]

use std::time::Duration;

use placed::kubernetes::{Agent, Node, NriConfig};
use placed::lifecycle::{EventKind, PlaceTarget};
use placed_core::policy::Policy;
use placed_core::reconcile::Sets;
use placed_nri::fake::{Connection, FakeRuntime};
use placed_nri::{Container, ContainerState, Event, Pod, Resources, StateChange};

use crate::scenario::{Running, Scenario, cg};

/// A pod `name` with one container `name` of `vcpus` (a CPU limit), annotated with
/// `annotations`; its cgroup is `/ctr/<name>`.
fn pod(name: &str, vcpus: i64, annotations: &[(&str, &str)]) -> (Pod, Container) {
    let pod = Pod {
        id: format!("sandbox-{name}"),
        uid: format!("uid-{name}"),
        name: name.into(),
        namespace: "shop".into(),
        annotations: annotations
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        cgroup_parent: "/ctr".into(),
        ..Pod::default()
    };
    let container = Container {
        id: format!("id-{name}"),
        pod_id: pod.id.clone(),
        name: name.into(),
        state: ContainerState::Created,
        cgroups_path: cg(name),
        resources: Resources {
            cpu_quota: Some(vcpus * 100_000),
            cpu_period: Some(100_000),
            cpu_shares: Some(u64::try_from(vcpus).unwrap() * 1024),
            ..Resources::default()
        },
        ..Container::default()
    };
    (pod, container)
}

const SMART: &[(&str, &str)] = &[("placed.io/policy", "smart-aggressive")];

struct Node1 {
    d: Running,
    runtime: FakeRuntime,
    conn: Connection,
    node: Node,
    dir: tempfile::TempDir,
}

async fn start(d: Running, configure: impl FnOnce(&mut NriConfig)) -> Node1 {
    let dir = tempfile::tempdir().unwrap();
    let mut config = NriConfig {
        enabled: true,
        kubelet_cpu_manager_state: dir.path().join("cpu_manager_state"),
        ..NriConfig::default()
    };
    configure(&mut config);
    let runtime = FakeRuntime::in_memory();
    let agent = Agent::new(d.daemon.clone(), config.clone());
    let plugin = runtime
        .start_plugin(config.plugin().unwrap(), agent)
        .unwrap();
    let node = Node::around(plugin, &config, &d.daemon);
    let (conn, _, updates) = runtime.accept_synchronized(&[], &[]).await.unwrap();
    assert!(updates.is_empty());
    Node1 {
        d,
        runtime,
        conn,
        node,
        dir,
    }
}

/// The runtime starts the container: its cgroup exists with a process, and PostStart is
/// sent.
async fn started(n: &Node1, pod: &Pod, c: &Container, sets: Option<&Sets>) -> Container {
    let (cpus, mems) = sets.map_or((String::new(), String::new()), |s| {
        (s.cpus.to_string(), s.mems.to_string())
    });
    let pid = n.d.kernel.process(&cg(&c.name), 2);
    n.d.kernel.cgroup(&cg(&c.name), &cpus, &mems);
    let running = Container {
        state: ContainerState::Running,
        pid: Some(pid),
        ..c.clone()
    };
    n.conn
        .state_change(&StateChange {
            event: Event::PostStartContainer,
            pod: pod.clone(),
            container: Some(running.clone()),
        })
        .await
        .unwrap();
    running
}

async fn create(n: &Node1, pod: &Pod, c: &Container) -> Option<Sets> {
    // The runtime makes the cgroup before it asks plugins (with no cpuset of its own yet).
    n.d.kernel.cgroup(&cg(&c.name), "", "");
    n.conn.create_container(pod, c).await.unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_pod_is_placed_at_creation_claims_its_hold_and_is_managed_by_its_name() {
    let n = start(Scenario::new().start().await, |_| {}).await;
    let (p, c) = pod("web", 16, SMART);
    let sets = create(&n, &p, &c).await.expect("pinned at creation");
    assert_eq!(sets.cpus.len(), 16, "one NUMA node's PUs: {sets:?}");
    assert_eq!(sets.mems.len(), 1);
    let held = n.d.daemon.reservations();
    assert_eq!(held.len(), 1, "held until it starts: {held:?}");
    assert_eq!(held[0].for_container.as_deref(), Some("id-web"));

    started(&n, &p, &c, Some(&sets)).await;
    let v = n.d.daemon.container(&cg("web")).expect("managed");
    assert_eq!(v.record.name, "shop/web/web");
    assert_eq!(v.record.vcpus, 16);
    assert_eq!(v.record.policy, Policy::SmartAggressive);
    assert_eq!(v.record.labels["placed.io/via"], "nri");
    assert_eq!(v.record.labels["placed.io/runtime-id"], "id-web");
    assert_eq!(v.record.labels["io.kubernetes.pod.namespace"], "shop");
    let a = v.record.assigned.expect("on the held units");
    assert_eq!((a.cpus, a.mems), (sets.cpus.clone(), sets.mems.clone()));
    assert!(n.d.daemon.reservations().is_empty(), "the hold is claimed");
    n.node.stop().await;
    n.d.daemon.shutdown().await;
    drop((n.runtime, n.dir));
}

#[tokio::test(start_paused = true)]
async fn pods_not_opted_in_unsized_or_without_room_start_as_the_runtime_starts_them() {
    let mut n = start(Scenario::new().start().await, |_| {}).await;
    let (p, c) = pod("plain", 4, &[]);
    assert_eq!(create(&n, &p, &c).await, None, "no annotation");
    let (p, mut c) = pod("besteffort", 4, &[("placed.io/manage", "true")]);
    c.resources = Resources {
        cpu_shares: Some(2),
        ..Resources::default()
    };
    assert_eq!(create(&n, &p, &c).await, None, "BestEffort");
    assert!(n.d.daemon.reservations().is_empty());

    // Two pods of a whole node each take both units; the third has no room, starts
    // unplaced and is told about in an event.
    for name in ["a", "b"] {
        let (p, c) = pod(name, 16, SMART);
        assert!(create(&n, &p, &c).await.is_some(), "{name}");
    }
    let (p, c) = pod("c", 16, SMART);
    assert_eq!(create(&n, &p, &c).await, None);
    let e =
        n.d.next_about("shop/c/c", |e| e.kind == EventKind::Error)
            .await;
    assert!(
        e.message.contains("started where the runtime puts it"),
        "{e:?}"
    );

    // Bad annotations are reported and the rest applies.
    let (p, c) = pod(
        "typo",
        16,
        &[("placed.io/policy", "observe"), ("placed.io/gola", "0.9")],
    );
    assert_eq!(create(&n, &p, &c).await, None, "observe pins nothing");
    let e =
        n.d.next_about("shop/typo/typo", |e| e.kind == EventKind::Error)
            .await;
    assert!(e.message.contains("placed.io/gola"), "{e:?}");
    n.node.stop().await;
    n.d.daemon.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_managed_pod_is_held_against_updates_resized_and_freed_when_it_stops() {
    let mut n = start(Scenario::new().start().await, |_| {}).await;
    let (p, c) = pod("web", 16, SMART);
    let sets = create(&n, &p, &c).await.unwrap();
    let c = started(&n, &p, &c, Some(&sets)).await;

    // A static CPU manager's update: the cpuset stays placed's.
    let requested = Resources {
        cpus: Some("0-31".parse().unwrap()),
        ..c.resources.clone()
    };
    let held = n.conn.update_container(&p, &c, &requested).await.unwrap();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].sets, sets);

    // A resize to 8 vCPUs: held now, placed again for the new size.
    let smaller = Resources {
        cpu_quota: Some(800_000),
        ..c.resources.clone()
    };
    let held = n.conn.update_container(&p, &c, &smaller).await.unwrap();
    assert_eq!(held[0].sets, sets);
    tokio::time::timeout(Duration::from_secs(3600), async {
        while n
            .d
            .daemon
            .container(&cg("web"))
            .ok()
            .map(|v| v.record.vcpus)
            != Some(8)
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("placed again for 8 vCPUs");
    n.d.until_free("web").await;

    // Stopped: handed back, its unit free for the next pod.
    n.conn.stop_container(&p, &c).await.unwrap();
    n.d.daemon
        .container(&cg("web"))
        .expect_err("handed back when it stops");
    let (p2, c2) = pod("next", 16, SMART);
    let both = create(&n, &p2, &c2).await;
    assert!(both.is_some(), "a unit is free again");
    n.node.stop().await;
    n.d.daemon.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn placeds_own_moves_are_told_to_the_runtime() {
    let mut n = start(Scenario::new().start().await, |_| {}).await;
    let (p, c) = pod("web", 16, SMART);
    let sets = create(&n, &p, &c).await.unwrap();
    started(&n, &p, &c, Some(&sets)).await;
    n.d.until_free("web").await;
    // Over both NUMA nodes: not where it is.
    let other =
        n.d.placements_for(16)
            .placements
            .iter()
            .map(|pl| pl.id.clone())
            .find(|id| id.starts_with("numa2"))
            .expect("a placement over both nodes");
    let moved =
        n.d.daemon
            .place(
                &cg("web"),
                PlaceTarget::Policy(Policy::Pinned { placement: other }),
                None,
            )
            .await
            .expect("placed");
    assert!(moved.moved, "{moved:?}");
    let want = Sets {
        cpus: moved.cpus,
        mems: moved.mems,
    };
    // The claim was told first (the same cpuset it was created with), then the move.
    loop {
        let told = n.conn.next_updates().await.expect("UpdateContainers");
        assert!(told.iter().all(|u| u.container_id == "id-web"), "{told:?}");
        if told.iter().any(|u| u.sets == want) {
            break;
        }
        assert!(told.iter().all(|u| u.sets == sets), "{told:?}");
    }
    n.node.stop().await;
    n.d.daemon.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_reconnection_adopts_what_placed_manages_and_the_static_cpu_manager_stops_it() {
    let n = start(Scenario::new().start().await, |_| {}).await;
    let (p, c) = pod("web", 16, SMART);
    let sets = create(&n, &p, &c).await.unwrap();
    let running = started(&n, &p, &c, Some(&sets)).await;

    // The runtime restarts: at Synchronize the running container gets its cpuset again.
    n.conn.shutdown().await.unwrap();
    let (again, _, updates) = n
        .runtime
        .accept_synchronized(std::slice::from_ref(&p), std::slice::from_ref(&running))
        .await
        .unwrap();
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(updates[0].sets, sets);

    // The kubelet's static CPU manager: placed stands aside and says why.
    std::fs::write(
        n.dir.path().join("cpu_manager_state"),
        r#"{"policyName":"static","defaultCpuSet":"0-31","checksum":1}"#,
    )
    .unwrap();
    let (p2, c2) = pod("late", 16, SMART);
    n.d.kernel.cgroup(&cg("late"), "", "");
    assert_eq!(again.create_container(&p2, &c2).await.unwrap(), None);
    let status = n.d.daemon.status();
    assert!(
        status.warnings.iter().any(|w| w.contains("\"static\"")),
        "{:?}",
        status.warnings
    );
    n.node.stop().await;
    n.d.daemon.shutdown().await;
}
