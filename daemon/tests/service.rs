//! The gRPC service on a real Unix socket, in-process on a fake host (no root): the cap on
//! `Watch` streams and on the socket's connections, and `Unmanage` through the real API.

#![allow(clippy::unwrap_used, reason = "test fixture")]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use placed::config::Config;
use placed::lifecycle::{Daemon, Environment};
use placed::service::{self, Limits, ServeHandle};
use placed::telemetry::Metrics;
use placed_core::machine::{Machine, TopologySource};
use placed_host::fake::FakeKernel;
use placed_proto::v1 as pb;
use placed_proto::v1::placed_service_client::PlacedServiceClient;
use prost::Message as _;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;

/// Bounds a wait for something the daemon does on its own time (a stream's slot given back
/// after the client went away): it only stops a hang, it times nothing.
const HANG: Duration = Duration::from_secs(120);

/// A daemon on a fake host with two nodes (16 PUs), served on a socket in `dir`.
struct Served {
    daemon: Daemon,
    metrics: Arc<Metrics>,
    socket: PathBuf,
    state_file: PathBuf,
    stop: CancellationToken,
    servers: Option<ServeHandle>,
    fake: Arc<FakeKernel>,
}

impl Served {
    async fn start(dir: &Path, limits: Limits) -> Self {
        let fake = FakeKernel::v1("0-15", "0-1");
        // Discovery manages the children of /batch.
        fake.cgroup("/batch/job", "", "");
        Self::start_on(dir, limits, fake).await
    }

    /// The same on an existing fake host (a restart).
    async fn start_on(dir: &Path, limits: Limits, fake: Arc<FakeKernel>) -> Self {
        let mut config = Config::default();
        config.containers.cgroups = vec!["/batch".into()];
        config.containers.resync_interval = Duration::from_secs(1);
        config.daemon.state_file = dir.join("state.json");
        config.daemon.model_dir = dir.join("models");
        config.containers.runtimes = Vec::new();
        config.metrics.enabled = false;
        config.grpc.socket = dir.join("placed.sock");
        config.grpc.socket_group = None;
        let unix = service::listen::bind_unix(&config).await.unwrap();
        let metrics = Arc::new(Metrics::default());
        let stop = CancellationToken::new();
        let listening = service::Listening { unix, tcp: None };
        let (serving, servers) = service::serve(listening, limits, &metrics, stop.clone())
            .await
            .unwrap();
        let env = Environment {
            machine: Machine::load(
                &TopologySource::Synthetic("pack:2 numa:1 core:4 pu:2".into()),
                None,
            )
            .unwrap(),
            host: fake.host(),
            pmu: false,
            migration_hold: None,
            // A fake host: what it measures is SIMULATED.
            provenance: placed_models::Provenance::Simulated,
        };
        let daemon = Daemon::start(config.clone(), env, metrics.clone())
            .await
            .unwrap();
        serving.ready(daemon.clone()).await;
        Self {
            daemon,
            metrics,
            socket: config.grpc.socket,
            state_file: config.daemon.state_file,
            stop,
            servers: Some(servers),
            fake,
        }
    }

    async fn client(&self) -> PlacedServiceClient<Channel> {
        PlacedServiceClient::new(placed_proto::unix::connect(&self.socket).await.unwrap())
    }

    /// The names of the containers the daemon manages, through the API.
    async fn names(&self, client: &mut PlacedServiceClient<Channel>) -> Vec<String> {
        let list = client
            .list_containers(pb::ListContainersRequest::default())
            .await
            .unwrap()
            .into_inner();
        list.containers.into_iter().map(|c| c.name).collect()
    }

    /// Waits until the daemon manages a container named `name`.
    async fn until_managed(&self, client: &mut PlacedServiceClient<Channel>, name: &str) {
        let deadline = tokio::time::Instant::now() + HANG;
        while !self.names(client).await.iter().any(|n| n == name) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{name} never managed"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn on_disk(&self) -> placed::state::State {
        placed::state::StateStore::new(self.state_file.clone())
            .load(self.daemon.machine().fingerprint())
            .unwrap()
            .expect("a state file")
    }

    /// Stops serving and the daemon; the fake host, for a restart.
    async fn stop(mut self) -> Arc<FakeKernel> {
        self.stop.cancel();
        self.daemon.shutdown().await;
        if let Some(s) = self.servers.take() {
            s.wait().await.unwrap();
        }
        self.fake.clone()
    }
}

fn limits(max_watchers: usize, max_unix_connections: usize) -> Limits {
    Limits {
        max_watchers,
        connections: service::accept::ConnectionLimits {
            unix: max_unix_connections,
            per_peer: 64,
            // Long: a connection these tests hold open without a word must not be closed
            // by the handshake bound however slowly the test runs.
            handshake: HANG,
        },
    }
}

async fn watch(
    client: &mut PlacedServiceClient<Channel>,
) -> Result<tonic::Streaming<pb::WatchResponse>, tonic::Status> {
    client
        .watch(pb::WatchRequest::default())
        .await
        .map(tonic::Response::into_inner)
}

/// Polls until `f` holds; panics after [`HANG`].
async fn until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + HANG;
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// 10,000 `Watch` streams took 78 MiB: past `grpc.max_watchers` a stream is refused with
/// RESOURCE_EXHAUSTED naming the limit and the setting, and a stream the client cancels,
/// or whose connection goes away, gives its slot back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchers_past_the_cap_are_refused_and_a_cancelled_stream_frees_its_slot() {
    let dir = tempfile::tempdir().unwrap();
    let s = Served::start(dir.path(), limits(3, 64)).await;
    let mut one = s.client().await;
    let mut other = s.client().await;
    let first = watch(&mut one).await.unwrap();
    let second = watch(&mut one).await.unwrap();
    let third = watch(&mut other).await.unwrap();
    assert_eq!(s.metrics.watchers.get(), 3);
    let refused = watch(&mut one).await.unwrap_err();
    assert_eq!(
        refused.code(),
        tonic::Code::ResourceExhausted,
        "{refused:?}"
    );
    assert!(
        refused.message().contains("3 Watch streams")
            && refused.message().contains("grpc.max_watchers"),
        "{refused:?}"
    );
    let text = s.metrics.render(placed::telemetry::serve::Format::Text);
    assert!(text.contains("placed_watchers 3"), "{text}");

    // The client cancels one stream: its slot comes back, and a new stream is served.
    drop(first);
    until("a cancelled stream's slot is given back", || {
        s.metrics.watchers.get() == 2
    })
    .await;
    let fourth = watch(&mut one).await.unwrap();
    assert_eq!(s.metrics.watchers.get(), 3);

    // A client that goes away entirely gives back its stream's slot too.
    drop(third);
    drop(other);
    until("a closed connection's stream slot is given back", || {
        s.metrics.watchers.get() == 2
    })
    .await;
    drop((second, fourth));
    until("every slot is given back", || s.metrics.watchers.get() == 0).await;
    s.stop().await;
}

/// The Unix socket holds at most `grpc.max_unix_connections`: one more is answered
/// RESOURCE_EXHAUSTED naming the limit and the setting (it used to be closed at once, and
/// clients saw "Broken pipe"), and once a held connection closes, a client is served again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_unix_socket_holds_at_most_its_connection_budget() {
    let dir = tempfile::tempdir().unwrap();
    let s = Served::start(dir.path(), limits(8, 2)).await;
    let mut client = s.client().await;
    client.get_status(pb::GetStatusRequest {}).await.unwrap();
    let held = tokio::net::UnixStream::connect(&s.socket).await.unwrap();
    // Both connections are taken: a third is told why it is refused.
    let mut third = s.client().await;
    let refused = third.get_status(pb::GetStatusRequest {}).await.unwrap_err();
    assert_eq!(
        refused.code(),
        tonic::Code::ResourceExhausted,
        "{refused:?}"
    );
    assert!(
        refused.message().contains(
            "the Unix socket holds 2 connections, as many as it may (grpc.max_unix_connections)"
        ),
        "{refused:?}"
    );
    drop(third);
    // Once one goes, a new client is served.
    drop(held);
    let deadline = tokio::time::Instant::now() + HANG;
    loop {
        if let Ok(ch) = placed_proto::unix::connect(&s.socket).await {
            let mut c = PlacedServiceClient::new(ch);
            if c.get_status(pb::GetStatusRequest {}).await.is_ok() {
                break;
            }
        }
        assert!(tokio::time::Instant::now() < deadline, "never served again");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The first client's connection was never disturbed.
    client.get_status(pb::GetStatusRequest {}).await.unwrap();
    s.stop().await;
}

/// `Unmanage` through the real API: NOT_FOUND for a container placed does not manage,
/// INVALID_ARGUMENT for none; a placed container handed back with its original cpuset, an
/// event saying so, the state file without it and remembering it; discovery leaves it alone
/// while it adopts a new neighbour; `Manage` takes it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unmanage_over_grpc_hands_a_container_back_and_it_stays_handed_back() {
    let dir = tempfile::tempdir().unwrap();
    let s = Served::start(dir.path(), limits(8, 64)).await;
    let mut c = s.client().await;
    s.until_managed(&mut c, "job").await;

    let unmanage = |name: &str, restore: bool| pb::UnmanageRequest {
        container: name.into(),
        restore,
    };
    let err = c.unmanage(unmanage("nothing", false)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::NotFound, "{err:?}");
    assert!(
        err.message().contains("manages no container nothing"),
        "{err:?}"
    );
    let err = c.unmanage(unmanage("", false)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");

    // Placed somewhere narrower than where it started, then handed back with its cpuset.
    c.manage(pb::ManageRequest {
        container: "job".into(),
        vcpus: 2,
        ..Default::default()
    })
    .await
    .unwrap();
    let narrow = s.daemon.placements(2).unwrap().placements[0].id.clone();
    let placed = c
        .place(pb::PlaceRequest {
            container: "job".into(),
            placement_id: narrow,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_ne!(placed.cpus, "0-15", "{placed:?}");
    let since = c
        .list_containers(pb::ListContainersRequest::default())
        .await
        .unwrap()
        .into_inner()
        .event_sequence;
    let back = c
        .unmanage(unmanage("job", true))
        .await
        .unwrap()
        .into_inner();
    assert!(back.restored, "{back:?}");
    assert_eq!(
        (back.container.as_str(), back.name.as_str()),
        ("/batch/job", "job")
    );
    assert_eq!((back.cpus.as_str(), back.mems.as_str()), ("0-15", "0-1"));
    assert_eq!(s.fake.file("/batch/job/cpuset.cpus").trim(), "0-15");
    assert_eq!(s.fake.file("/batch/job/cpuset.mems").trim(), "0-1");

    let mut events = c
        .watch(pb::WatchRequest {
            container: String::new(),
            resume_after_sequence: since,
            ..pb::WatchRequest::default()
        })
        .await
        .unwrap()
        .into_inner();
    let event = tokio::time::timeout(HANG, async {
        loop {
            let e = events.message().await.unwrap().expect("an event");
            if e.kind == pb::EventKind::Unmanaged as i32 {
                return e;
            }
        }
    })
    .await
    .expect("no Unmanaged event");
    drop(events);
    assert_eq!(event.container, "/batch/job");
    assert!(event.message.contains("handed back"), "{event:?}");
    let state = s.on_disk();
    assert!(state.containers.is_empty(), "{:?}", state.containers);
    assert_eq!(state.unmanaged, ["/batch/job"]);
    let err = c.unmanage(unmanage("job", false)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::NotFound, "{err:?}");

    // Discovery adopts a new container beside it, in the same pass that would have taken
    // the handed-back one again.
    s.fake.cgroup("/batch/other", "", "");
    s.until_managed(&mut c, "other").await;
    assert_eq!(s.names(&mut c).await, ["other"]);

    // Manage takes it again, and discovery follows it as before.
    c.manage(pb::ManageRequest {
        container: "/batch/job".into(),
        ..Default::default()
    })
    .await
    .unwrap();
    assert_eq!(s.names(&mut c).await, ["job", "other"]);
    assert!(s.on_disk().unmanaged.is_empty());
    s.stop().await;
}

/// Handed back stays handed back across a restart (the state file keeps the id), and is
/// forgotten once the container disappears: a new container in the same cgroup is managed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handed_back_container_stays_unmanaged_after_a_restart_until_it_disappears() {
    let dir = tempfile::tempdir().unwrap();
    let s = Served::start(dir.path(), limits(8, 64)).await;
    let mut c = s.client().await;
    s.until_managed(&mut c, "job").await;
    c.unmanage(pb::UnmanageRequest {
        container: "job".into(),
        restore: false,
    })
    .await
    .unwrap();
    drop(c);
    let fake = s.stop().await;

    let s = Served::start_on(dir.path(), limits(8, 64), fake).await;
    let mut c = s.client().await;
    // A neighbour appears: discovery has run since the restart, and left "job" alone.
    s.fake.cgroup("/batch/other", "", "");
    s.until_managed(&mut c, "other").await;
    assert_eq!(s.names(&mut c).await, ["other"]);
    assert_eq!(s.on_disk().unmanaged, ["/batch/job"]);

    // It stops; a new container in the same cgroup later is a new container.
    s.fake.remove_cgroup("/batch/job");
    let deadline = tokio::time::Instant::now() + HANG;
    while !s.on_disk().unmanaged.is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "never forgotten");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    s.fake.cgroup("/batch/job", "", "");
    s.until_managed(&mut c, "job").await;
    drop(c);
    s.stop().await;
}

/// A pattern metric through the real API: what can never work is `INVALID_ARGUMENT`, what
/// the operator's rules refuse (a program while command metrics are off, a file while
/// `observe.pattern_files` is empty) `FAILED_PRECONDITION` naming the setting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pattern_metrics_over_grpc_are_refused_by_their_own_rule() {
    use pb::pattern_metric::Input;
    let dir = tempfile::tempdir().unwrap();
    let s = Served::start(dir.path(), limits(8, 64)).await;
    let mut c = s.client().await;
    s.until_managed(&mut c, "job").await;
    let manage = |regex: &str, input: Input| pb::ManageRequest {
        container: "job".into(),
        vcpus: 2,
        metric: Some(pb::MetricSpec {
            source: Some(pb::metric_spec::Source::Pattern(pb::PatternMetric {
                regex: regex.into(),
                mode: pb::PatternMode::Total as i32,
                input: Some(input),
            })),
        }),
        ..Default::default()
    };
    let program = || {
        Input::Program(pb::PatternProgram {
            argv: vec!["sh".into(), "-c".into(), "echo ops 1".into()],
            stream: 0,
        })
    };
    let log = dir.path().join("app.log").display().to_string();
    for (request, code, says) in [
        (
            manage("(ops", program()),
            tonic::Code::InvalidArgument,
            "invalid pattern regex",
        ),
        (
            manage("ops", program()),
            tonic::Code::FailedPrecondition,
            "observe.allow_command_metrics",
        ),
        (
            manage("ops", Input::File(log)),
            tonic::Code::FailedPrecondition,
            "observe.pattern_files is empty",
        ),
    ] {
        let err = c.manage(request).await.unwrap_err();
        assert_eq!(err.code(), code, "{err:?}");
        assert!(err.message().contains(says), "{says}: {err:?}");
    }
    s.stop().await;
}

/// `placed_errors_total{kind="api"}`, as the metrics page shows it.
fn api_errors(metrics: &Metrics) -> f64 {
    let page = metrics.render(placed::telemetry::serve::Format::Text);
    page.lines()
        .find_map(|l| l.strip_prefix("placed_errors_total{kind=\"api\"} "))
        .map_or(0.0, |v| v.trim().parse().unwrap())
}

/// The stable reason a status carries in `google.rpc.ErrorInfo`, with its domain checked.
fn reason(s: &tonic::Status) -> String {
    use tonic_types::StatusExt;
    let info = s
        .get_error_details()
        .error_info()
        .cloned()
        .unwrap_or_else(|| panic!("no ErrorInfo on {s:?}"));
    assert_eq!(info.domain, "placed.io", "{s:?}");
    info.reason
}

/// The field a status names in `google.rpc.BadRequest`.
fn bad_field(s: &tonic::Status) -> String {
    use tonic_types::StatusExt;
    s.get_error_details()
        .bad_request()
        .and_then(|b| b.field_violations.first().map(|v| v.field.clone()))
        .unwrap_or_else(|| panic!("no BadRequest on {s:?}"))
}

/// Raw bytes as a request message, whatever the method expects; the answer's bytes raw.
#[derive(Debug, Clone, Default)]
struct Raw;

impl tonic::codec::Codec for Raw {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = Raw;
    type Decoder = Raw;

    fn encoder(&mut self) -> Raw {
        Raw
    }

    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl tonic::codec::Encoder for Raw {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn encode(
        &mut self,
        item: Vec<u8>,
        dst: &mut tonic::codec::EncodeBuf<'_>,
    ) -> Result<(), tonic::Status> {
        use bytes::BufMut;
        dst.put_slice(&item);
        Ok(())
    }
}

impl tonic::codec::Decoder for Raw {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn decode(
        &mut self,
        src: &mut tonic::codec::DecodeBuf<'_>,
    ) -> Result<Option<Vec<u8>>, tonic::Status> {
        use bytes::Buf;
        let mut out = vec![0; src.remaining()];
        src.copy_to_slice(&mut out);
        Ok(Some(out))
    }
}

/// Issue 24: a request whose deadline has passed when placed takes it up changes nothing
/// and answers DEADLINE_EXCEEDED; one whose deadline passes while it runs answers
/// DEADLINE_EXCEEDED too, not tonic's `CANCELLED: Timeout expired`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passed_deadline_changes_nothing_and_answers_deadline_exceeded() {
    let dir = tempfile::tempdir().unwrap();
    let s = Served::start(dir.path(), limits(8, 64)).await;
    let mut c = s.client().await;
    s.until_managed(&mut c, "job").await;

    // A client enforces its own deadline too (tonic's, grpcio's): a bare HTTP/2 client
    // waits for the daemon's answer whatever the grpc-timeout says.
    let manage = pb::ManageRequest {
        container: "job".into(),
        labels: [("team".to_owned(), "db".to_owned())].into(),
        ..Default::default()
    };
    let answer = bare_call(&s.socket, "Manage", &manage.encode_to_vec(), "0n", true).await;
    assert_eq!(answer.code(), tonic::Code::DeadlineExceeded, "{answer:?}");
    assert_eq!(reason(&answer), "DEADLINE_EXCEEDED");
    assert!(answer.message().contains("nothing was done"), "{answer:?}");
    let job = c
        .get_container(pb::GetContainerRequest {
            container: "job".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .container
        .unwrap();
    assert!(
        job.labels.is_empty(),
        "a late Manage changed labels: {job:?}"
    );
    // The same Manage with time to spare is done: the deadline was the only difference.
    let answer = bare_call(&s.socket, "Manage", &manage.encode_to_vec(), "60S", true).await;
    assert_eq!(answer.code(), tonic::Code::Ok, "{answer:?}");

    // A metric stream that never ends holds its handler until the deadline passes.
    let answer = bare_call(&s.socket, "ReportMetric", &[], "200m", false).await;
    assert_eq!(answer.code(), tonic::Code::DeadlineExceeded, "{answer:?}");
    assert_eq!(reason(&answer), "DEADLINE_EXCEEDED");
    assert!(answer.message().contains("stopped there"), "{answer:?}");
}

/// One call over a bare HTTP/2 connection, with `grpc-timeout: timeout`: `message` as the
/// request's one message, and the request stream left open unless `end`; the status the
/// daemon answers (OK when it answers with a message).
async fn bare_call(
    socket: &Path,
    method: &str,
    message: &[u8],
    timeout: &str,
    end: bool,
) -> tonic::Status {
    let io = tokio::net::UnixStream::connect(socket).await.unwrap();
    let (mut client, connection) = h2::client::handshake(io).await.unwrap();
    tokio::spawn(connection);
    let request = http::Request::post(format!("http://localhost/placed.v1.PlacedService/{method}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("grpc-timeout", timeout)
        .body(())
        .unwrap();
    let (response, mut send) = client.send_request(request, false).unwrap();
    let mut frame = vec![0u8];
    frame.extend_from_slice(&u32::try_from(message.len()).unwrap().to_be_bytes());
    frame.extend_from_slice(message);
    if end || !message.is_empty() {
        send.send_data(frame.into(), end).unwrap();
    }
    let response = tokio::time::timeout(HANG, response)
        .await
        .expect("an answer")
        .unwrap();
    // Trailers-only (an error answered at once), else the trailers after the body.
    if let Some(status) = tonic::Status::from_header_map(response.headers()) {
        return status;
    }
    let mut body = response.into_body();
    while let Some(data) = body.data().await {
        let data = data.unwrap();
        let _ = body.flow_control().release_capacity(data.len());
    }
    let trailers = body.trailers().await.unwrap().expect("trailers");
    drop(send);
    tonic::Status::from_header_map(&trailers).expect("a grpc-status")
}

/// Issue 24: a message that does not decode is INVALID_ARGUMENT (tonic said INTERNAL, "a
/// bug") and not counted as the daemon's error; an empty container in ReportMetric is
/// INVALID_ARGUMENT like every other call's; and every status carries its reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn argument_errors_have_one_code_and_every_status_its_details() {
    let dir = tempfile::tempdir().unwrap();
    let s = Served::start(dir.path(), limits(1, 64)).await;
    let mut c = s.client().await;
    s.until_managed(&mut c, "job").await;
    let before = api_errors(&s.metrics);

    // Field 1 of ManageRequest is a string; a varint there does not decode.
    let channel = placed_proto::unix::connect(&s.socket).await.unwrap();
    let mut raw = tonic::client::Grpc::new(channel);
    raw.ready().await.unwrap();
    let path = http::uri::PathAndQuery::from_static("/placed.v1.PlacedService/Manage");
    let err = raw
        .unary(tonic::Request::new(vec![0x08, 0x05]), path, Raw)
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
    assert_eq!(reason(&err), "MALFORMED_REQUEST");
    raw.ready().await.unwrap();
    let path = http::uri::PathAndQuery::from_static("/placed.v1.PlacedService/ReportMetric");
    let err = raw
        .client_streaming(
            tonic::Request::new(tokio_stream::iter([vec![0x08, 0x05]])),
            path,
            Raw,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
    assert_eq!(reason(&err), "MALFORMED_REQUEST");
    assert_eq!(
        api_errors(&s.metrics),
        before,
        "a malformed message counted as the daemon's error"
    );

    let sample = |container: &str| pb::ReportMetricRequest {
        container: container.into(),
        value: 1.0,
        time: None,
    };
    let err = c
        .report_metric(tokio_stream::iter([sample("")]))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
    assert_eq!(
        (reason(&err), bad_field(&err)),
        ("BAD_REQUEST".into(), "container".into())
    );
    let err = c
        .report_metric(tokio_stream::iter([sample("nothing")]))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::NotFound, "{err:?}");
    assert_eq!(reason(&err), "CONTAINER_NOT_FOUND");

    // The statuses the service builds itself, not from a daemon error.
    let err = c
        .list_containers(pb::ListContainersRequest {
            page_size: -1,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(
        (reason(&err), bad_field(&err)),
        ("BAD_REQUEST".into(), "page_size".into())
    );
    let err = c
        .list_containers(pb::ListContainersRequest {
            page_token: "bm90IGEgdG9rZW4".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(bad_field(&err), "page_token");
    let err = c
        .place(pb::PlaceRequest {
            container: "job".into(),
            migration: 42,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), bad_field(&err)),
        (tonic::Code::InvalidArgument, "migration".into())
    );
    let err = c
        .admit_batch(pb::AdmitBatchRequest {
            requests: vec![pb::AdmitRequest {
                vcpus: 1,
                reserve: Some(prost_types::Duration {
                    seconds: -1,
                    nanos: 0,
                }),
                ..Default::default()
            }],
            mode: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(bad_field(&err), "requests[0].reserve", "{err:?}");
    let err = c
        .watch(pb::WatchRequest {
            resume_after_sequence: u64::MAX / 2,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::OutOfRange, "{err:?}");
    assert_eq!(reason(&err), "RESUME_POINT_NEVER_ISSUED");
    let _open = watch(&mut c).await.unwrap();
    let err = watch(&mut c).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::ResourceExhausted, "{err:?}");
    assert_eq!(reason(&err), "TOO_MANY_WATCHERS");
}
