//! The plugin against the in-process fake runtime ([`placed_nri::fake`]): the protocol's
//! conversation end to end (multiplexer, ttrpc, messages) on every machine, no root.

#![allow(clippy::unwrap_used, reason = "test fixture")]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;

use placed_core::reconcile::Sets;
use placed_nri::fake::{Connection, FakeRuntime};
use placed_nri::{
    Config, Container, ContainerState, Event, EventMask, Placer, Pod, Resources, StateChange,
    Status, Update, UpdateError, Vcpus,
};

fn sets(cpus: &str, mems: &str) -> Sets {
    Sets {
        cpus: cpus.parse().unwrap(),
        mems: mems.parse().unwrap(),
    }
}

/// What the test placer was asked.
#[derive(Debug, Clone, PartialEq)]
enum Call {
    Synchronize(Vec<Pod>, Vec<Container>),
    Create(Pod, Container),
    Update(Container, Resources),
    Stop(Container),
    State(StateChange),
    Disconnected,
}

#[derive(Debug, thiserror::Error)]
#[error("test placer refuses")]
struct Refused;

/// Pins every container of a pod annotated `placed.io/policy` to `pin`, holds it there,
/// adopts such containers at synchronization; optionally slow, failing or panicking.
struct TestPlacer {
    pin: Sets,
    delay: Option<Duration>,
    fail: AtomicBool,
    panic: AtomicBool,
    calls: mpsc::UnboundedSender<Call>,
}

impl TestPlacer {
    fn new(pin: Sets) -> (Arc<Self>, mpsc::UnboundedReceiver<Call>) {
        Self::slow(pin, None)
    }

    fn slow(pin: Sets, delay: Option<Duration>) -> (Arc<Self>, mpsc::UnboundedReceiver<Call>) {
        let (calls, rx) = mpsc::unbounded_channel();
        let p = Self {
            pin,
            delay,
            fail: AtomicBool::new(false),
            panic: AtomicBool::new(false),
            calls,
        };
        (Arc::new(p), rx)
    }

    fn managed(pod: &Pod) -> bool {
        pod.annotations.contains_key("placed.io/policy")
    }

    async fn decide(&self, pod: &Pod) -> Result<Option<Sets>, Refused> {
        if let Some(d) = self.delay {
            tokio::time::sleep(d).await;
        }
        if self.panic.load(Ordering::SeqCst) {
            panic!("test placer panics");
        }
        if self.fail.load(Ordering::SeqCst) {
            return Err(Refused);
        }
        Ok(Self::managed(pod).then(|| self.pin.clone()))
    }
}

impl Placer for TestPlacer {
    type Error = Refused;

    async fn synchronize(&self, pods: Vec<Pod>, containers: Vec<Container>) -> Vec<Update> {
        let _ = self
            .calls
            .send(Call::Synchronize(pods.clone(), containers.clone()));
        if let Some(d) = self.delay {
            tokio::time::sleep(d).await;
        }
        containers
            .iter()
            .filter(|c| c.state == ContainerState::Running)
            .filter(|c| pods.iter().any(|p| p.id == c.pod_id && Self::managed(p)))
            .map(|c| Update {
                container_id: c.id.clone(),
                sets: self.pin.clone(),
            })
            .collect()
    }

    async fn create_container(
        &self,
        pod: Pod,
        container: Container,
    ) -> Result<Option<Sets>, Refused> {
        let _ = self.calls.send(Call::Create(pod.clone(), container));
        self.decide(&pod).await
    }

    async fn update_container(
        &self,
        pod: Pod,
        container: Container,
        requested: Resources,
    ) -> Result<Option<Sets>, Refused> {
        let _ = self.calls.send(Call::Update(container, requested));
        self.decide(&pod).await
    }

    async fn stop_container(&self, _pod: Pod, container: Container) {
        let _ = self.calls.send(Call::Stop(container));
    }

    async fn state_change(&self, change: StateChange) {
        let _ = self.calls.send(Call::State(change));
    }

    async fn disconnected(&self) {
        let _ = self.calls.send(Call::Disconnected);
    }
}

/// The update that pins `c` where the test placer pins.
fn pinned(c: &Container) -> [Update; 1] {
    [Update {
        container_id: c.id.clone(),
        sets: sets("1", "0"),
    }]
}

fn pod(uid: &str, managed: bool) -> Pod {
    let mut p = Pod {
        id: format!("sandbox-{uid}"),
        uid: uid.into(),
        name: format!("web-{uid}"),
        namespace: "shop".into(),
        labels: [("app".to_string(), "web".to_string())].into(),
        cgroup_parent: format!("/kubepods/burstable/pod{uid}"),
        ..Pod::default()
    };
    if managed {
        p.annotations
            .insert("placed.io/policy".into(), "model".into());
    }
    p
}

fn container(pod: &Pod, name: &str, state: ContainerState) -> Container {
    let id = format!("{name}-{}", pod.uid);
    Container {
        cgroups_path: format!("{}/{id}", pod.cgroup_parent),
        id,
        pod_id: pod.id.clone(),
        name: name.into(),
        state,
        pid: (state == ContainerState::Running).then_some(4242),
        resources: Resources {
            cpu_shares: Some(1024),
            cpu_quota: Some(150_000),
            cpu_period: Some(100_000),
            ..Resources::default()
        },
        ..Container::default()
    }
}

fn config() -> Config {
    Config {
        backoff: Duration::from_millis(10),
        backoff_max: Duration::from_millis(50),
        ..Config::default()
    }
}

async fn next_call(calls: &mut mpsc::UnboundedReceiver<Call>) -> Call {
    calls.recv().await.expect("the placer is alive")
}

async fn wait_status(plugin: &placed_nri::Plugin, want: impl Fn(&Status) -> bool) -> Status {
    let mut status = plugin.status();
    status
        .wait_for(|s| want(s))
        .await
        .expect("the plugin runs")
        .clone()
}

/// A plugin registered with an in-memory fake runtime and synchronized on an empty node
/// (the placer's Synchronize call already taken from `calls`).
struct Connected {
    _fake: FakeRuntime,
    plugin: placed_nri::Plugin,
    conn: Connection,
    calls: mpsc::UnboundedReceiver<Call>,
}

async fn connected(
    (placer, mut calls): (Arc<TestPlacer>, mpsc::UnboundedReceiver<Call>),
) -> Connected {
    let fake = FakeRuntime::in_memory();
    let plugin = fake.start_plugin(config(), placer).unwrap();
    let (conn, _, _) = fake.accept_synchronized(&[], &[]).await.unwrap();
    assert_eq!(
        next_call(&mut calls).await,
        Call::Synchronize(vec![], vec![])
    );
    Connected {
        _fake: fake,
        plugin,
        conn,
        calls,
    }
}

#[tokio::test]
async fn the_plugin_registers_subscribes_and_reports_itself_connected() {
    let fake = FakeRuntime::in_memory();
    let (placer, mut calls) = TestPlacer::new(sets("1", "0"));
    let plugin = fake.start_plugin(config(), placer).unwrap();
    let (conn, events, updates) = fake.accept_synchronized(&[], &[]).await.unwrap();
    assert_eq!(
        (conn.plugin_name.as_str(), conn.plugin_index.as_str()),
        ("placed", "50")
    );
    assert_eq!(events, EventMask::PLACED);
    assert_eq!(updates, []);
    assert_eq!(
        next_call(&mut calls).await,
        Call::Synchronize(vec![], vec![])
    );
    let status = wait_status(&plugin, |s| matches!(s, Status::Connected { .. })).await;
    assert_eq!(
        status,
        Status::Connected {
            runtime: "fake".into(),
            version: "0.6.1".into()
        }
    );
    assert!(plugin.updater().connected());
    plugin.stop().await;
    conn.closed().await;
}

#[tokio::test]
async fn a_created_container_is_pinned_when_its_pod_asks_and_left_alone_otherwise() {
    let mut s = connected(TestPlacer::new(sets("1", "0"))).await;
    let (conn, calls) = (&mut s.conn, &mut s.calls);

    let managed = pod("u1", true);
    let c = container(&managed, "web", ContainerState::Created);
    assert_eq!(
        conn.create_container(&managed, &c).await.unwrap(),
        Some(sets("1", "0"))
    );
    // The placer saw the plain values the runtime sent.
    let Call::Create(seen_pod, seen) = next_call(calls).await else {
        panic!("expected a create call");
    };
    assert_eq!(seen_pod, managed);
    assert_eq!(seen, c);
    assert_eq!(seen.resources.vcpus(), Some(Vcpus::Limit(2)));
    assert_eq!(seen.cgroups_path, "/kubepods/burstable/podu1/web-u1");

    let plain = pod("u2", false);
    let c = container(&plain, "web", ContainerState::Created);
    assert_eq!(conn.create_container(&plain, &c).await.unwrap(), None);
}

#[tokio::test]
async fn an_update_from_someone_else_is_held_to_placeds_cpuset() {
    let mut s = connected(TestPlacer::new(sets("1", "0"))).await;
    let (conn, calls) = (&mut s.conn, &mut s.calls);

    let managed = pod("u1", true);
    let c = container(&managed, "web", ContainerState::Running);
    // What a static CPU manager sends.
    let requested = Resources {
        cpus: Some("0-1".parse().unwrap()),
        mems: Some("0".parse().unwrap()),
        cpu_quota: Some(100_000),
        cpu_period: Some(100_000),
        ..Resources::default()
    };
    let held = conn
        .update_container(&managed, &c, &requested)
        .await
        .unwrap();
    assert_eq!(held, pinned(&c));
    assert_eq!(
        next_call(calls).await,
        Call::Update(c.clone(), requested.clone())
    );

    // Nothing to hold when the request already agrees, or for an unmanaged pod.
    let agreeing = Resources {
        cpus: Some("1".parse().unwrap()),
        ..requested.clone()
    };
    assert_eq!(
        conn.update_container(&managed, &c, &agreeing)
            .await
            .unwrap(),
        []
    );
    let plain = pod("u2", false);
    let c = container(&plain, "web", ContainerState::Running);
    assert_eq!(
        conn.update_container(&plain, &c, &requested).await.unwrap(),
        []
    );
}

#[tokio::test]
async fn synchronize_adopts_the_running_containers_of_annotated_pods() {
    let fake = FakeRuntime::in_memory();
    let (placer, mut calls) = TestPlacer::new(sets("1", "0"));
    let _plugin = fake.start_plugin(config(), placer).unwrap();
    let managed = pod("u1", true);
    let plain = pod("u2", false);
    let running = container(&managed, "web", ContainerState::Running);
    let stopped = container(&managed, "init", ContainerState::Stopped);
    let other = container(&plain, "web", ContainerState::Running);
    let pods = [managed.clone(), plain.clone()];
    let containers = [running.clone(), stopped.clone(), other.clone()];
    let (_conn, _, updates) = fake.accept_synchronized(&pods, &containers).await.unwrap();
    assert_eq!(updates, pinned(&running));
    assert_eq!(
        next_call(&mut calls).await,
        Call::Synchronize(pods.to_vec(), containers.to_vec())
    );
}

#[tokio::test]
async fn the_updater_moves_a_running_container_and_reports_refusals() {
    let Connected {
        _fake,
        plugin,
        mut conn,
        ..
    } = connected(TestPlacer::new(sets("1", "0"))).await;
    let updater = plugin.updater();
    let moved = [Update {
        container_id: "c1".into(),
        sets: sets("0", "0"),
    }];
    updater.update(&moved).await.unwrap();
    assert_eq!(conn.next_updates().await.unwrap(), moved);

    conn.fail_updates_of("c1");
    match updater.update(&moved).await {
        Err(UpdateError::Failed { containers }) => assert_eq!(containers, ["c1"]),
        other => panic!("expected the runtime's refusal, got {other:?}"),
    }
    // A cpuset with an empty half is never sent.
    let empty = [Update {
        container_id: "c2".into(),
        sets: sets("", "0"),
    }];
    assert!(matches!(
        updater.update(&empty).await,
        Err(UpdateError::Empty(_))
    ));
    conn.next_updates().await.unwrap();
    plugin.stop().await;
    assert!(matches!(
        updater.update(&moved).await,
        Err(UpdateError::NotConnected)
    ));
}

#[tokio::test(start_paused = true)]
async fn a_slow_placer_never_delays_creation_and_its_decision_follows_as_an_update() {
    let fake = FakeRuntime::in_memory();
    let delay = Duration::from_secs(10);
    let (placer, mut calls) = TestPlacer::slow(sets("1", "0"), Some(delay));
    let cfg = config();
    let budget = cfg.budget;
    let _plugin = fake.start_plugin(cfg, placer).unwrap();
    let (mut conn, _, _) = fake.accept_synchronized(&[], &[]).await.unwrap();
    next_call(&mut calls).await;
    // Synchronize was late too: nothing is pending from it (no containers).

    let managed = pod("u1", true);
    let c = container(&managed, "web", ContainerState::Created);
    let asked = tokio::time::Instant::now();
    // The runtime gets "no change" at the budget, well before its own 2 s timeout
    // (which would have made the call fail here).
    assert_eq!(conn.create_container(&managed, &c).await.unwrap(), None);
    assert_eq!(asked.elapsed(), budget);
    assert!(budget < placed_nri::config::RUNTIME_TIMEOUT);
    // The decision arrives when the placer is done, as an update of the container.
    let late = conn.next_updates().await.unwrap();
    assert_eq!(asked.elapsed(), delay);
    assert_eq!(late, pinned(&c));
}

#[tokio::test(start_paused = true)]
async fn a_late_synchronization_sends_its_adoptions_when_done() {
    let fake = FakeRuntime::in_memory();
    let (placer, _calls) = TestPlacer::slow(sets("1", "0"), Some(Duration::from_secs(5)));
    let _plugin = fake.start_plugin(config(), placer).unwrap();
    let managed = pod("u1", true);
    let running = container(&managed, "web", ContainerState::Running);
    let (mut conn, _, updates) = fake
        .accept_synchronized(
            std::slice::from_ref(&managed),
            std::slice::from_ref(&running),
        )
        .await
        .unwrap();
    assert_eq!(updates, [], "answered at the budget, without the adoption");
    assert_eq!(conn.next_updates().await.unwrap(), pinned(&running));
}

#[tokio::test]
async fn a_failing_or_panicking_placer_fails_open_and_the_connection_lives_on() {
    let (placer, calls) = TestPlacer::new(sets("1", "0"));
    let s = connected((placer.clone(), calls)).await;
    let conn = &s.conn;
    let managed = pod("u1", true);
    let c = container(&managed, "web", ContainerState::Created);

    placer.fail.store(true, Ordering::SeqCst);
    assert_eq!(conn.create_container(&managed, &c).await.unwrap(), None);
    assert_eq!(
        conn.update_container(&managed, &c, &Resources::default())
            .await
            .unwrap(),
        []
    );
    placer.fail.store(false, Ordering::SeqCst);
    placer.panic.store(true, Ordering::SeqCst);
    assert_eq!(conn.create_container(&managed, &c).await.unwrap(), None);
    placer.panic.store(false, Ordering::SeqCst);
    assert_eq!(
        conn.create_container(&managed, &c).await.unwrap(),
        Some(sets("1", "0"))
    );
}

#[tokio::test]
async fn an_empty_cpuset_from_the_placer_is_not_sent_as_a_pin() {
    let s = connected(TestPlacer::new(sets("", "0"))).await;
    let conn = &s.conn;
    let managed = pod("u1", true);
    let c = container(&managed, "web", ContainerState::Created);
    assert_eq!(conn.create_container(&managed, &c).await.unwrap(), None);
    assert_eq!(
        conn.update_container(&managed, &c, &Resources::default())
            .await
            .unwrap(),
        []
    );
}

#[tokio::test]
async fn stops_and_state_changes_reach_the_placer() {
    let mut s = connected(TestPlacer::new(sets("1", "0"))).await;
    let (conn, calls) = (&mut s.conn, &mut s.calls);
    let managed = pod("u1", true);
    let c = container(&managed, "web", ContainerState::Running);
    assert_eq!(conn.stop_container(&managed, &c).await.unwrap(), []);
    assert_eq!(next_call(calls).await, Call::Stop(c.clone()));
    let started = StateChange {
        event: Event::PostStartContainer,
        pod: managed.clone(),
        container: Some(c.clone()),
    };
    conn.state_change(&started).await.unwrap();
    assert_eq!(next_call(calls).await, Call::State(started));
    let removed = StateChange {
        event: Event::RemovePodSandbox,
        pod: managed,
        container: None,
    };
    conn.state_change(&removed).await.unwrap();
    assert_eq!(next_call(calls).await, Call::State(removed));
}

#[tokio::test]
async fn the_plugin_keeps_trying_while_the_runtime_is_down() {
    let fake = FakeRuntime::in_memory();
    fake.set_refusing(true);
    let (placer, _calls) = TestPlacer::new(sets("1", "0"));
    let plugin = fake.start_plugin(config(), placer).unwrap();
    let status = wait_status(&plugin, |s| {
        matches!(s, Status::Disconnected { error: Some(_), .. })
    })
    .await;
    let Status::Disconnected {
        error: Some(error),
        retry_in: Some(_),
    } = status
    else {
        panic!("expected a failed attempt, got {status:?}");
    };
    assert!(
        error.starts_with("cannot connect to the NRI socket"),
        "{error}"
    );
    fake.set_refusing(false);
    fake.accept_synchronized(&[], &[]).await.unwrap();
    wait_status(&plugin, |s| matches!(s, Status::Connected { .. })).await;
}

#[tokio::test]
async fn a_restarted_runtime_gets_placed_back_and_it_adopts_the_running_container() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("nri.sock");
    let managed = pod("u1", true);
    let running = container(&managed, "web", ContainerState::Running);
    let (placer, mut calls) = TestPlacer::new(sets("1", "0"));

    let fake = FakeRuntime::bind(&socket).unwrap();
    let plugin = fake.start_plugin(config(), placer).unwrap();
    let (conn, _, _) = fake.accept_synchronized(&[], &[]).await.unwrap();
    assert_eq!(
        next_call(&mut calls).await,
        Call::Synchronize(vec![], vec![])
    );
    wait_status(&plugin, |s| matches!(s, Status::Connected { .. })).await;

    // The runtime goes away: its socket with it, as when containerd stops.
    drop(conn);
    drop(fake);
    assert_eq!(next_call(&mut calls).await, Call::Disconnected);
    let status = wait_status(&plugin, |s| matches!(s, Status::Disconnected { .. })).await;
    assert!(matches!(
        status,
        Status::Disconnected { error: Some(_), .. }
    ));
    assert!(!plugin.updater().connected());

    // Back, with a container created meanwhile by a pod that asks for placed.
    let fake = FakeRuntime::bind(&socket).unwrap();
    let (_conn, _, updates) = fake
        .accept_synchronized(
            std::slice::from_ref(&managed),
            std::slice::from_ref(&running),
        )
        .await
        .unwrap();
    assert_eq!(updates, pinned(&running));
    assert_eq!(
        next_call(&mut calls).await,
        Call::Synchronize(vec![managed], vec![running])
    );
    wait_status(&plugin, |s| matches!(s, Status::Connected { .. })).await;
}

#[tokio::test]
async fn a_runtime_shutting_down_is_left_and_reconnected_to() {
    let Connected {
        _fake: fake,
        plugin: _plugin,
        conn,
        mut calls,
    } = connected(TestPlacer::new(sets("1", "0"))).await;
    conn.shutdown().await.unwrap();
    // The runtime closes the connection after Shutdown, as containerd does when it stops.
    drop(conn);
    assert_eq!(next_call(&mut calls).await, Call::Disconnected);
    fake.accept_synchronized(&[], &[]).await.unwrap();
    assert!(matches!(next_call(&mut calls).await, Call::Synchronize(..)));
}

#[tokio::test]
async fn a_bad_config_is_refused_before_connecting() {
    let fake = FakeRuntime::in_memory();
    let (placer, _calls) = TestPlacer::new(sets("1", "0"));
    let bad = Config {
        events: EventMask::EMPTY,
        ..config()
    };
    let err = fake.start_plugin(bad, placer).unwrap_err();
    assert_eq!(
        placed_core::text::error_line(&err),
        "nri.events: an empty event mask would subscribe to every event (the protocol reads 0 as all)"
    );
}
