//! The real daemon on this host's cgroup v1 cpuset hierarchy, driven through placectl and
//! gRPC over its Unix socket. Root only; skipped with the reason otherwise.
//!
//! This host has one NUMA node and two PUs, so every container size has a single important
//! placement and no model can be trained here (a model needs a baseline and a different
//! probe): predictions with a model run in the multi-node guest (`guest.rs`).

use placed_core::exit::Exit;
use std::time::Duration;

use placed::state::{Assigned, ContainerRecord, Cpuset, Lifecycle, Migration, State, StateStore};
use placed_core::cpuset::{CpuSet, NodeSet};
use placed_host::enact::Host;
use placed_proto::v1 as pb;
use tonic::Code;

use crate::cgroup_support::TestCgroup;
use crate::cgroup_support::host_or_say as host;
use crate::daemon_util::{Setup, TestDaemon, TestLoad, cpus_allowed, metric, watched_under_model};

fn machine(host: &Host) -> (CpuSet, NodeSet) {
    (
        host.online_cpus().expect("online CPUs"),
        host.memory_nodes().expect("memory nodes"),
    )
}

/// A test cgroup with one child `c1` running a placed-testload; the address it serves
/// its operation counter on.
fn container(host: &Host) -> (TestCgroup<TestLoad>, String) {
    let (cpus, mems) = machine(host);
    let mut cg: TestCgroup<TestLoad> = TestCgroup::new(host, &cpus, &mems);
    let c1 = cg.child("c1", &cpus, &mems);
    let load = TestLoad::start("cpu");
    let (pid, addr) = (load.pid(), load.addr.clone());
    cg.adopt(&c1, pid, load);
    (cg, addr)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

#[test]
fn discovers_places_and_reports_a_container() {
    let Some(host) = host() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (cg, addr) = container(&host);
    let pid = cg.loads[0].pid();
    let d = TestDaemon::start(dir.path(), &Setup::watching(&cg.path));

    // Discovered through the configured cgroup, under the default observe policy.
    d.wait_for("c1 discovered", |j| {
        j["containers"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["name"] == "c1" && c["state"] == "watched")
        })
    });
    let run = d.placectl(["containers"]).ok();
    assert!(
        run.stdout.contains("c1") && run.stdout.contains("observe"),
        "{run:?}"
    );

    // An orchestrator hands over its size, policy and metric; then places it.
    let metric = format!("prometheus http://{addr}/metrics testload_ops_total");
    let run = d
        .placectl([
            "manage", "c1", "--vcpus", "1", "--metric", &metric, "--json",
        ])
        .ok();
    assert_eq!(run.json()["vcpus"], 1, "{run:?}");
    assert_eq!(run.json()["vcpus_source"], "request", "{run:?}");

    let placements = d.placectl(["placements", "--vcpus", "1", "--json"]).ok();
    let id = placements.json()["placements"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let want_cpus = placements.json()["placements"][0]["cpus"]
        .as_str()
        .unwrap()
        .to_owned();
    let run = d
        .placectl(["place", "c1", "--placement", &id, "--json"])
        .ok();
    let j = run.json();
    assert_eq!(j["moved"], true, "{run:?}");
    assert_eq!(j["placement"], id.as_str(), "{run:?}");
    // A placement pins the container, and the answer says so.
    assert_eq!(j["policy"], format!("pinned:{id}"), "{run:?}");
    // The kernel agrees: the workload's threads may only run on the placement's PUs.
    assert_eq!(cpus_allowed(pid), want_cpus, "{run:?}");
    d.wait_for("c1 pinned", |j| {
        j["containers"][0]["placement"] == id.as_str()
            && j["containers"][0]["policy"] == format!("pinned:{id}")
    });

    // Placing it again where it is moves nothing.
    let again = d
        .placectl(["place", "c1", "--placement", &id, "--json"])
        .ok();
    assert_eq!(again.json()["moved"], false, "{again:?}");

    // Observe can be asked for by name, with Manage and with Place (it once travelled as
    // "unset": Manage ignored it and Place moved by the container's own policy).
    let run = d
        .placectl(["manage", "c1", "--policy", "observe", "--json"])
        .ok();
    assert_eq!(run.json()["policy"], "observe", "{run:?}");
    d.placectl(["place", "c1", "--placement", &id]).ok();
    let run = d
        .placectl(["place", "c1", "--policy", "observe", "--json"])
        .ok();
    assert_eq!(run.json()["moved"], false, "{run:?}");
    // `--keep-policy` moves once and leaves the container's policy as it was.
    let run = d
        .placectl(["place", "c1", "--placement", &id, "--keep-policy", "--json"])
        .ok();
    assert!(run.json()["policy"].is_null(), "{run:?}");
    let run = d.placectl(["containers", "--json"]).ok();
    assert_eq!(run.json()["containers"][0]["policy"], "observe", "{run:?}");
    let run = d.placectl(["containers", "--json"]).ok();
    assert_eq!(run.json()["containers"][0]["policy"], "observe", "{run:?}");
    assert_eq!(cpus_allowed(pid), want_cpus);

    // No model can exist for a one-placement machine: a clean precondition failure that
    // says what to run.
    d.placectl(["predict", "c1"])
        .fails_with(Exit::Refused, "no model for machine class");
    let run = d.placectl(["predict", "c1"]);
    // The advice is the real `placed-train` command for this v and the daemon's model dir.
    let advice = placed_models::train_command(1, dir.path().join("models").display());
    assert!(run.stderr.contains(&advice), "{run:?}");
    assert!(run.stderr.contains("FailedPrecondition"), "{run:?}");

    // Metrics count the move; status shows the container and no model.
    let m = d.metrics();
    assert!(
        m.contains("placed_migrations_total{outcome=\"ok\"} 1"),
        "{m}"
    );
    assert!(m.contains("placed_containers{state=\"watched\"} 1"), "{m}");
    let s = d.placectl(["status", "--json"]).ok();
    assert_eq!(s.json()["containers"]["watched"], 1, "{s:?}");
    assert_eq!(
        s.json()["models"].as_array().map(Vec::len),
        Some(0),
        "{s:?}"
    );
}

#[test]
fn pushed_metrics_stream_in_and_bad_samples_are_refused() {
    let Some(host) = host() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (cg, _load) = container(&host);
    let d = TestDaemon::start(dir.path(), &Setup::watching(&cg.path));
    d.wait_for("c1", |j| j["containers"][0]["name"] == "c1");
    // Not a pushed metric yet: refused, saying why.
    d.placectl(["report", "c1", "5"])
        .fails_with(Exit::Failed, "does not take pushed metrics");
    d.placectl(["manage", "c1", "--metric", "pushed"]).ok();
    // The task builds the pushed source shortly after the change.
    let start = std::time::Instant::now();
    loop {
        let run = d.placectl(["report", "c1", "10", "11", "12"]);
        if run.code == Some(0) {
            assert!(run.stdout.contains("3 accepted, 0 rejected"), "{run:?}");
            break;
        }
        // Only bounds a hang: the source is built within a step of the task.
        assert!(start.elapsed() < Duration::from_secs(300), "{run:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(d.metrics().contains("placed_metric_samples_total 3"));
    // NaN is not a rate.
    d.placectl(["report", "c1", "NaN"])
        .fails_with(Exit::Failed, "1 of 1 samples rejected");

    // Lines on stdin go out as they arrive, not at the end of input: the daemon has the
    // first while placectl still waits for the second.
    use std::io::Write;
    let mut piped = std::process::Command::new(crate::bins::bin("placectl"))
        .args(["report", "c1"])
        .env("PLACED_SOCKET", &d.socket)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = piped.stdin.take().unwrap();
    writeln!(stdin, "13").unwrap();
    let start = std::time::Instant::now();
    while metric(&d.metrics(), "placed_metric_samples_total") != Some(4.0) {
        // Only bounds a hang: without streaming the sample waits for end of input.
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the first line was not sent before the second"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // A line that is no number ends the stream, named by its number; what came before
    // counts.
    writeln!(stdin, "\noops").unwrap();
    drop(stdin);
    let out = piped.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(Exit::Failed as i32), "{stderr}");
    assert!(
        stderr.contains("stdin line 3: \"oops\" is not a number"),
        "{stderr}"
    );
    assert_eq!(
        metric(&d.metrics(), "placed_metric_samples_total"),
        Some(4.0)
    );
}

#[test]
fn bad_requests_get_the_right_status_codes() {
    let Some(host) = host() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (cg, _load) = container(&host);
    let d = TestDaemon::start(dir.path(), &Setup::watching(&cg.path));
    d.wait_for("c1", |j| j["containers"][0]["name"] == "c1");
    runtime().block_on(async {
        let mut c = d.client().await;
        fn code<T>(r: Result<tonic::Response<T>, tonic::Status>) -> Code {
            match r {
                Ok(_) => Code::Ok,
                Err(s) => s.code(),
            }
        }
        // Unknown container.
        let r = c
            .get_container(pb::GetContainerRequest {
                container: "no-such-container".into(),
            })
            .await;
        assert_eq!(code(r), Code::NotFound);
        let r = c
            .predict(pb::PredictRequest {
                container: "no-such-container".into(),
            })
            .await;
        assert_eq!(code(r), Code::NotFound);
        // A metric stream for it fails as a whole instead of answering OK with rejections.
        let r = c
            .report_metric(tokio_stream::iter(vec![pb::ReportMetricRequest {
                container: "no-such-container".into(),
                value: 1.0,
                time: None,
            }]))
            .await;
        let status = r.expect_err("a stream for an unknown container");
        assert_eq!(status.code(), Code::NotFound, "{status:?}");
        assert!(status.message().contains("no-such-container"), "{status:?}");
        // Each failed request is counted as an API error.
        let api_errors = || metric(&d.metrics(), "placed_errors_total{kind=\"api\"}");
        let before = api_errors().expect("API errors counted by now");
        let r = c
            .get_container(pb::GetContainerRequest {
                container: "no-such-container".into(),
            })
            .await;
        assert_eq!(code(r), Code::NotFound);
        assert_eq!(api_errors(), Some(before + 1.0));
        // A reference escaping the cgroup mount.
        let r = c
            .manage(pb::ManageRequest {
                container: "../../etc".into(),
                ..Default::default()
            })
            .await;
        assert_eq!(code(r), Code::InvalidArgument);
        // v = 0.
        let r = c
            .list_placements(pb::ListPlacementsRequest {
                vcpus: 0,
                ..Default::default()
            })
            .await;
        assert_eq!(code(r), Code::InvalidArgument);
        // v larger than the machine.
        let r = c
            .manage(pb::ManageRequest {
                container: "c1".into(),
                vcpus: 4096,
                ..Default::default()
            })
            .await;
        assert_eq!(code(r), Code::InvalidArgument);
        // Goals outside (0, 2].
        for goal in [2.5, -0.1] {
            let r = c
                .manage(pb::ManageRequest {
                    container: "c1".into(),
                    policy: Some(pb::Policy {
                        kind: pb::PolicyKind::Model as i32,
                        goal,
                        placement_id: String::new(),
                    }),
                    ..Default::default()
                })
                .await;
            assert_eq!(code(r), Code::InvalidArgument, "goal {goal}");
        }
        // An unknown placement id.
        let r = c
            .place(pb::PlaceRequest {
                container: "c1".into(),
                placement_id: "numa9-core77".into(),
                ..Default::default()
            })
            .await;
        let status = r.expect_err("unknown placement");
        assert_eq!(status.code(), Code::InvalidArgument);
        assert!(status.message().contains("numa9-core77"), "{status:?}");
        // Both a placement and a policy.
        let r = c
            .place(pb::PlaceRequest {
                container: "c1".into(),
                placement_id: "numa1".into(),
                policy: Some(pb::Policy {
                    kind: pb::PolicyKind::Conservative as i32,
                    ..Default::default()
                }),
                ..Default::default()
            })
            .await;
        assert_eq!(code(r), Code::InvalidArgument);
        // keep_policy with nothing to keep it from: the move would be by its own policy.
        let r = c
            .place(pb::PlaceRequest {
                container: "c1".into(),
                keep_policy: true,
                ..Default::default()
            })
            .await;
        let status = r.expect_err("keep_policy alone");
        assert_eq!(status.code(), Code::InvalidArgument);
        assert!(status.message().contains("keep_policy"), "{status:?}");
        // The model policy with no prediction yet: a precondition, not a bad request.
        let r = c
            .place(pb::PlaceRequest {
                container: "c1".into(),
                policy: Some(pb::Policy {
                    kind: pb::PolicyKind::Model as i32,
                    goal: 0.9,
                    placement_id: String::new(),
                }),
                ..Default::default()
            })
            .await;
        assert_eq!(code(r), Code::FailedPrecondition);
        // That failed Place left the policy as it was, in memory and in the state file.
        let c1 = c
            .get_container(pb::GetContainerRequest {
                container: "c1".into(),
            })
            .await
            .expect("c1")
            .into_inner()
            .container
            .expect("a container");
        assert_eq!(
            c1.policy.as_ref().map(|p| p.kind),
            Some(pb::PolicyKind::Observe as i32),
            "{c1:?}"
        );
        let fingerprint = c
            .get_status(pb::GetStatusRequest {})
            .await
            .expect("status")
            .into_inner()
            .fingerprint;
        let saved = StateStore::new(dir.path().join("state.json"))
            .load(&fingerprint)
            .expect("a readable state file")
            .expect("a state file");
        assert_eq!(
            saved.containers[0].policy,
            placed_core::policy::Policy::Observe,
            "{saved:?}"
        );

        // Clients that walk away mid-stream leave the daemon healthy.
        let (tx, rx) = tokio::sync::mpsc::channel::<pb::ReportMetricRequest>(4);
        let mut c2 = d.client().await;
        let call = tokio::spawn(async move {
            c2.report_metric(tokio_stream::wrappers::ReceiverStream::new(rx))
                .await
        });
        tx.send(pb::ReportMetricRequest {
            container: "c1".into(),
            value: 1.0,
            time: None,
        })
        .await
        .unwrap();
        call.abort();
        drop(tx);
        let mut c3 = d.client().await;
        let watch = c3
            .watch(pb::WatchRequest::default())
            .await
            .expect("watch")
            .into_inner();
        drop(watch);
        let s = c
            .get_status(pb::GetStatusRequest {})
            .await
            .expect("status after abandoned streams");
        assert!(!s.into_inner().fingerprint.is_empty());
    });
}

#[test]
fn health_and_reflection_answer_standard_clients() {
    let Some(_host) = host() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = TestDaemon::start(dir.path(), &Setup::default());
    runtime().block_on(async {
        let channel = placed_proto::unix::connect(&d.socket)
            .await
            .expect("connect");
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
        for service in ["", "placed.v1.PlacedService"] {
            let r = health
                .check(tonic_health::pb::HealthCheckRequest {
                    service: service.into(),
                })
                .await
                .expect("health check")
                .into_inner();
            assert_eq!(
                r.status,
                tonic_health::pb::health_check_response::ServingStatus::Serving as i32,
                "service {service:?}"
            );
        }
        use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
        use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
        use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
        let mut refl = ServerReflectionClient::new(channel.clone());
        let req = tonic_reflection::pb::v1::ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::ListServices(String::new())),
        };
        let mut stream = refl
            .server_reflection_info(tokio_stream::iter(vec![req]))
            .await
            .expect("reflection")
            .into_inner();
        let resp = stream
            .message()
            .await
            .expect("a reflection answer")
            .expect("one message");
        let Some(MessageResponse::ListServicesResponse(list)) = resp.message_response else {
            panic!("unexpected reflection answer");
        };
        let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
        assert!(
            names.contains(&"placed.v1.PlacedService".to_owned()),
            "{names:?}"
        );
        assert!(
            names.contains(&"grpc.health.v1.Health".to_owned()),
            "{names:?}"
        );
        // v1alpha too, for clients that only know it (older grpcurl, grpc_cli).
        use tonic_reflection::pb::v1alpha::server_reflection_client::ServerReflectionClient as Alpha;
        use tonic_reflection::pb::v1alpha::server_reflection_request::MessageRequest as AlphaRequest;
        use tonic_reflection::pb::v1alpha::server_reflection_response::MessageResponse as AlphaResponse;
        let req = tonic_reflection::pb::v1alpha::ServerReflectionRequest {
            host: String::new(),
            message_request: Some(AlphaRequest::ListServices(String::new())),
        };
        let resp = Alpha::new(channel)
            .server_reflection_info(tokio_stream::iter(vec![req]))
            .await
            .expect("reflection v1alpha")
            .into_inner()
            .message()
            .await
            .expect("a v1alpha answer")
            .expect("one message");
        let Some(AlphaResponse::ListServicesResponse(list)) = resp.message_response else {
            panic!("unexpected reflection v1alpha answer");
        };
        let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
        assert!(
            names.contains(&"placed.v1.PlacedService".to_owned()),
            "{names:?}"
        );
    });
}

#[test]
fn sigterm_stops_cleanly_and_a_restart_adopts_without_moving() {
    let Some(host) = host() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (cg, _load) = container(&host);
    let pid = cg.loads[0].pid();
    let mut d = TestDaemon::start(dir.path(), &Setup::watching(&cg.path));
    d.wait_for("c1", |j| j["containers"][0]["name"] == "c1");
    d.placectl([
        "manage",
        "c1",
        "--vcpus",
        "1",
        "--policy",
        "smart-aggressive",
    ])
    .ok();
    d.wait_for("c1 placed", |j| !j["containers"][0]["placement"].is_null());
    let placed_cpus = cpus_allowed(pid);
    let status = d.stop().expect("placed ran");
    assert!(status.success(), "exit {status}:\n{}", d.log());
    assert!(!d.socket.exists(), "socket left behind");
    assert!(d.log().contains("stopping"));

    // The state survived; the restarted daemon finds c1 where it left it and does not move
    // it (no migration event in the new log).
    let before = d.log().len();
    d.spawn();
    d.wait_for("c1 adopted", |j| {
        j["containers"][0]["name"] == "c1" && j["containers"][0]["state"] == "watched"
    });
    assert_eq!(cpus_allowed(pid), placed_cpus);
    let new_log = d.log()[before..].to_owned();
    assert!(new_log.contains("adopted from the state file"), "{new_log}");
    assert!(!new_log.contains("MigrationStarted"), "{new_log}");
}

/// SIGINT (Ctrl-C) stops the daemon as SIGTERM does: exit 0, socket removed, the signal
/// named in the log. (SIGHUP reloads: tests/e2e/ops.rs.)
#[test]
fn sigint_stops_cleanly_and_is_named() {
    let Some(_host) = host() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut d = TestDaemon::start(dir.path(), &Setup::default());
    let status = d.stop_with(libc::SIGINT).expect("placed ran");
    let log = d.log();
    assert!(status.success(), "exit {status}:\n{log}");
    assert!(!d.socket.exists(), "socket left behind");
    assert!(
        log.lines()
            .any(|l| l.contains("stopping") && l.contains("SIGINT")),
        "{log}"
    );
}

#[test]
fn a_restart_thaws_and_settles_an_interrupted_migration() {
    let Some(host) = host() else { return };
    let (cpus, mems) = machine(&host);
    if cpus.len() < 2 {
        eprintln!("skipped, because this host has a single PU");
        return;
    }
    let first: CpuSet = cpus.first().into_iter().collect();
    let last: CpuSet = cpus.last().into_iter().collect();
    let dir = tempfile::tempdir().unwrap();
    let (cg, _load) = container(&host);
    let c1 = cg.path.child("c1").unwrap();
    let pid = cg.loads[0].pid();

    // What a daemon killed in the middle of a frozen fast move leaves behind: the container
    // frozen, its cpuset half-way (neither where it was nor where it was going), and a state
    // file that names the move.
    host.cgroups().set_cpus(&c1, &last).unwrap();
    host.cgroups().set_frozen(&c1, true).unwrap();
    let state = State {
        written_unix_ms: 0,
        unmanaged: Vec::new(),
        reservations: Vec::new(),
        stopped_models: Vec::new(),
        fingerprint: placed_core::machine::Machine::load(
            &placed_core::machine::TopologySource::Host,
            None,
        )
        .unwrap()
        .fingerprint()
        .to_owned(),
        containers: vec![ContainerRecord {
            state: Lifecycle::Migrating,
            migration: Some(Migration {
                from: Cpuset {
                    cpus: cpus.clone(),
                    mems: mems.clone(),
                },
                to: Assigned {
                    placement: Some("numa1".into()),
                    units: vec![0],
                    cpus: first.clone(),
                    mems: mems.clone(),
                },
                started_unix_ms: 0,
                frozen: true,
            }),
            ..ContainerRecord::new(
                &c1.to_string(),
                "c1",
                1,
                placed_core::policy::Policy::Observe,
            )
        }],
    };
    StateStore::new(dir.path().join("state.json"))
        .save(&state)
        .unwrap();

    let d = TestDaemon::start(dir.path(), &Setup::watching(&cg.path));
    d.wait_for("c1 adopted", |j| j["containers"][0]["name"] == "c1");
    assert!(
        !host.cgroups().is_frozen(&c1).unwrap(),
        "left frozen:\n{}",
        d.log()
    );
    // Back on the whole cpuset it came from, never empty.
    assert_eq!(cpus_allowed(pid), cpus.to_string());
    let run = d.placectl(["containers", "--json"]).ok();
    let detail = run.json()["containers"][0]["detail"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(detail.contains("thawed"), "{detail}");
    assert!(detail.contains("undone"), "{detail}");
}

#[test]
fn a_state_file_from_another_machine_class_is_refused_with_instructions() {
    let Some(_host) = host() else { return };
    let dir = tempfile::tempdir().unwrap();
    StateStore::new(dir.path().join("state.json"))
        .save(&State {
            written_unix_ms: 0,
            unmanaged: Vec::new(),
            reservations: Vec::new(),
            stopped_models: Vec::new(),
            fingerprint: "mc1-0000000000000000".into(),
            containers: Vec::new(),
        })
        .unwrap();
    std::fs::write(
        dir.path().join("placed.toml"),
        format!(
            "[daemon]\nstate_file = \"{0}/state.json\"\n[grpc]\nsocket = \"{0}/s.sock\"\n[metrics]\nenabled = false\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_placed"))
        .arg("--config")
        .arg(dir.path().join("placed.toml"))
        .output()
        .unwrap();
    // Exit 4: the host's state refuses, the operator must act (placed_core::exit).
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("machine class mc1-0000000000000000"), "{err}");
    assert!(err.contains("delete the file"), "{err}");
}

#[test]
fn config_errors_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.toml");
    std::fs::write(&p, "[policy]\ngoal = 7\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_placed"))
        .arg("--config")
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("policy.goal = 7 is outside (0, 2]"), "{err}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_placed"))
        .arg("--print-config")
        .arg("--config")
        .arg("/nonexistent/placed.toml")
        .output()
        .unwrap();
    // Exit 3: not found (placed_core::exit).
    assert_eq!(out.status.code(), Some(3));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_placed"))
        .arg("--print-config")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("socket = \"/run/placed/placed.sock\""));
}

#[test]
fn a_config_file_that_is_not_utf8_is_bad_input_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("latin1.toml");
    // "café" in Latin-1, in a comment: valid TOML in any ASCII-compatible encoding but UTF-8.
    std::fs::write(&p, b"[policy]\n# caf\xe9\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_placed"))
        .arg("--print-config")
        .arg("--config")
        .arg(&p)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // Exit 2, as for any other malformed config, not 4 (a file the host cannot read).
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("latin1.toml"), "{err}");
    assert!(err.contains("not UTF-8"), "{err}");
    assert!(err.contains("offset 14"), "{err}");
}

/// The shipped unit must start on a host with no config file ("defaults work with no
/// file"): run the daemon with exactly the arguments of its ExecStart line.
#[test]
fn the_systemd_unit_starts_without_a_config_file() {
    if std::path::Path::new(placed::config::DEFAULT_CONFIG_PATH).exists() {
        eprintln!(
            "skipped, because {} exists on this host",
            placed::config::DEFAULT_CONFIG_PATH
        );
        return;
    }
    let unit = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../dist/placed.service"),
    )
    .expect("dist/placed.service");
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("an ExecStart line");
    let mut words = exec.split_whitespace();
    assert_eq!(words.next(), Some("/usr/local/bin/placed"), "{exec}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_placed"))
        .args(words)
        .arg("--print-config")
        .output()
        .expect("placed runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{exec}: {stderr}");
    let effective = String::from_utf8_lossy(&out.stdout);
    assert!(
        effective.contains("state_file = \"/var/lib/placed/state.json\""),
        "{effective}"
    );
}

/// Reads `events` until one satisfies `pick`; fails after `limit`.
async fn next_event(
    events: &mut tonic::Streaming<pb::WatchResponse>,
    what: &str,
    pick: impl Fn(&pb::WatchResponse) -> bool,
) -> pb::WatchResponse {
    // Only bounds a hang (the events come within a step of the daemon, on a loaded
    // machine too); no check depends on how soon.
    let limit = Duration::from_secs(300);
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, events.message()).await {
            Ok(Ok(Some(e))) if pick(&e) => return e,
            Ok(Ok(Some(_))) => {}
            Ok(Ok(None)) => panic!("the watch stream ended while waiting for {what}"),
            Ok(Err(status)) => panic!("watch failed while waiting for {what}: {status:?}"),
            Err(_) => panic!("no event for {what} within {limit:?}"),
        }
    }
}

/// The first important placement for `v` vCPUs on this host: its id and cpus.
fn first_placement(d: &TestDaemon, v: usize) -> (String, String) {
    let run = d
        .placectl(["placements", "--vcpus", &v.to_string(), "--json"])
        .ok();
    let p = &run.json()["placements"][0];
    (
        p["id"].as_str().expect("an id").to_owned(),
        p["cpus"].as_str().expect("cpus").to_owned(),
    )
}

#[test]
fn watch_streams_a_container_appearing_being_placed_and_vanishing() {
    let Some(host) = host() else { return };
    let (cpus, mems) = machine(&host);
    let cg: TestCgroup = TestCgroup::new(&host, &cpus, &mems);
    let dir = tempfile::tempdir().unwrap();
    let d = TestDaemon::start(dir.path(), &Setup::watching(&cg.path));
    let (one, one_cpus) = first_placement(&d, 1);
    runtime().block_on(async {
        let mut c = d.client().await;
        let mut events = c
            .watch(pb::WatchRequest::default())
            .await
            .expect("watch")
            .into_inner();

        // Appears: found through the configured parent and streamed as discovered.
        let c2 = cg.child("c2", &cpus, &mems);
        let id = c2.to_string();
        let e = next_event(&mut events, "c2 discovered", |e| {
            e.container == id && e.kind == pb::EventKind::Discovered as i32
        })
        .await;
        assert!(e.message.contains("discovered"), "{e:?}");

        // Placed: the move streams its start and its end, naming the placement.
        c.manage(pb::ManageRequest {
            container: id.clone(),
            vcpus: 1,
            ..Default::default()
        })
        .await
        .expect("manage c2");
        let r = c
            .place(pb::PlaceRequest {
                container: id.clone(),
                placement_id: one.clone(),
                ..Default::default()
            })
            .await
            .expect("place c2")
            .into_inner();
        assert!(r.moved, "{r:?}");
        assert_eq!(r.cpus, one_cpus, "{r:?}");
        for kind in [
            pb::EventKind::MigrationStarted,
            pb::EventKind::MigrationFinished,
        ] {
            let e = next_event(&mut events, &format!("{kind:?}"), |e| {
                e.container == id && e.kind == kind as i32
            })
            .await;
            assert_eq!(e.placement_id, one, "{e:?}");
        }

        // Vanishes: its cgroup removed, it is forgotten and the watchers are told.
        cg.cgroups.remove(&c2).expect("remove c2");
        next_event(&mut events, "c2 vanished", |e| {
            e.container == id && e.kind == pb::EventKind::Vanished as i32
        })
        .await;
        let listed = c
            .list_containers(pb::ListContainersRequest::default())
            .await
            .expect("list")
            .into_inner();
        assert!(listed.containers.iter().all(|x| x.id != id), "{listed:?}");
        let r = c
            .get_container(pb::GetContainerRequest {
                container: id.clone(),
            })
            .await;
        assert_eq!(r.expect_err("forgotten").code(), Code::NotFound);
    });
}

#[test]
fn a_cpuset_rewritten_from_outside_is_reported_and_written_back() {
    let Some(host) = host() else { return };
    let (cpus, mems) = machine(&host);
    let cg: TestCgroup = TestCgroup::new(&host, &cpus, &mems);
    let c1 = cg.child("c1", &cpus, &mems);
    let id = c1.to_string();
    let dir = tempfile::tempdir().unwrap();
    // No resync within the test: only inotify on the cpuset files can notice the write.
    let setup = Setup {
        resync_interval: Some("1h".into()),
        ..Setup::watching(&cg.path)
    };
    let d = TestDaemon::start(dir.path(), &setup);
    d.wait_for("c1", |j| j["containers"][0]["state"] == "watched");
    let (one, one_cpus) = first_placement(&d, 1);
    assert_ne!(one_cpus, cpus.to_string(), "the placement leaves CPUs out");
    d.placectl(["manage", "c1", "--vcpus", "1", "--on-override", "reassert"])
        .ok();
    d.placectl(["place", "c1", "--placement", &one]).ok();
    let file = host
        .cgroups()
        .root()
        .join(format!("{}/cpuset.cpus", id.trim_start_matches('/')));
    let read = || std::fs::read_to_string(&file).unwrap().trim().to_owned();
    assert_eq!(read(), one_cpus);
    runtime().block_on(async {
        let mut c = d.client().await;
        let mut events = c
            .watch(pb::WatchRequest {
                container: id.clone(),
                ..Default::default()
            })
            .await
            .expect("watch")
            .into_inner();
        // What `docker update --cpuset-cpus` or systemd's AllowedCPUs= does: a plain write.
        std::fs::write(&file, cpus.to_string()).expect("rewrite cpuset.cpus");
        let e = next_event(&mut events, "the override", |e| {
            e.kind == pb::EventKind::Overridden as i32
        })
        .await;
        let o = e.cpuset_override.clone().expect("the override's sets");
        assert_eq!(
            (o.expected_cpus.as_str(), o.found_cpus.as_str()),
            (one_cpus.as_str(), cpus.to_string().as_str()),
            "{e:?}"
        );
        assert_eq!(o.action, pb::OverrideAction::Reasserted as i32, "{e:?}");
        next_event(&mut events, "the write-back", |e| {
            e.kind == pb::EventKind::MigrationFinished as i32
        })
        .await;
    });
    assert_eq!(read(), one_cpus, "written back");
    let j = d.placectl(["containers", "--json"]).ok().json();
    let shown = &j["containers"][0];
    assert_eq!(shown["on_override"], "reassert", "{shown}");
    assert_eq!(shown["cpuset_override"]["action"], "reasserted", "{shown}");
    assert_eq!(
        shown["cpuset_override"]["found_cpus"],
        cpus.to_string(),
        "{shown}"
    );
    let text = d.placectl(["containers"]).ok().stdout;
    assert!(text.contains("OVERRIDDEN at"), "{text}");
    assert_eq!(
        metric(
            &d.metrics(),
            r#"placed_placement_overrides_total{action="reasserted"}"#
        ),
        Some(1.0)
    );
    assert!(
        d.log().contains("cpuset changed outside placed"),
        "{}",
        d.log()
    );
}

#[test]
fn recommend_answers_stay_with_exit_1_and_move_with_exit_0() {
    let Some(host) = host() else { return };
    let (cpus, mems) = machine(&host);
    let cg: TestCgroup = TestCgroup::new(&host, &cpus, &mems);
    cg.child("c1", &cpus, &mems);
    let dir = tempfile::tempdir().unwrap();
    let d = TestDaemon::start(dir.path(), &Setup::watching(&cg.path));
    d.wait_for("c1", |j| j["containers"][0]["state"] == "watched");
    let (one, one_cpus) = first_placement(&d, 1);
    d.placectl(["manage", "c1", "--vcpus", "1"]).ok();
    d.placectl(["place", "c1", "--placement", &one]).ok();

    // Where its own policy (now pinned there) wants it: it would stay, exit 1.
    let run = d.placectl(["recommend", "c1"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stdout.contains("would stay"), "{run:?}");
    assert!(run.stderr.is_empty(), "{run:?}");
    let run = d.placectl(["recommend", "c1", "--json"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.json()["would_move"], false, "{run:?}");
    assert_eq!(run.json()["placement"], one.as_str(), "{run:?}");

    // Smart-aggressive gives it the whole unit: it would move (no memory to migrate), exit 0.
    let run = d.placectl(["recommend", "c1", "--policy", "smart-aggressive", "--json"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.json()["would_move"], true, "{run:?}");
    assert_eq!(run.json()["cpus"], cpus.to_string(), "{run:?}");
    // Recommending moved nothing.
    let run = d.placectl(["containers", "--json"]).ok();
    assert_eq!(run.json()["containers"][0]["cpus"], one_cpus, "{run:?}");

    runtime().block_on(async {
        let mut c = d.client().await;
        let r = c
            .recommend(pb::RecommendRequest {
                container: "c1".into(),
                policy: None,
            })
            .await
            .expect("recommend")
            .into_inner();
        assert!(!r.would_move, "{r:?}");
        assert_eq!(r.placement_id, one, "{r:?}");
        assert_eq!(r.cpus, one_cpus, "{r:?}");
        // Observe never moves anything: there is nothing to recommend.
        let r = c
            .recommend(pb::RecommendRequest {
                container: "c1".into(),
                policy: Some(pb::Policy {
                    kind: pb::PolicyKind::Observe as i32,
                    ..Default::default()
                }),
            })
            .await;
        let status = r.expect_err("observe recommends nothing");
        assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
        assert!(status.message().contains("never moves"), "{status:?}");
    });
}

/// A directory in the v1 `cpu` hierarchy this test made, removed at the end.
struct CpuCgroup(std::path::PathBuf);

impl Drop for CpuCgroup {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir(&self.0) {
            eprintln!("warning: cannot remove {}: {e}", self.0.display());
        }
    }
}

#[test]
fn vcpus_come_from_the_cpu_quota_else_the_cpuset() {
    let Some(host) = host() else { return };
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let Some(cpu_root) = placed_host::cgroup::Mounts::parse(&mounts)
        .ok()
        .and_then(|m| m.v1("cpu").map(|c| c.mount_point.clone()))
    else {
        eprintln!("skipped, because there is no cgroup v1 cpu hierarchy here");
        return;
    };
    let (cpus, mems) = machine(&host);
    let one_pu: CpuSet = cpus.first().into_iter().collect();
    let cg: TestCgroup = TestCgroup::new(&host, &cpus, &mems);
    // The quota first, in the cpu hierarchy at the same path: it must be there when
    // discovery finds the cpuset cgroup. Removed (child first) after the cpuset ones.
    let cpu_parent = CpuCgroup(cg.path.under(&cpu_root));
    std::fs::create_dir(&cpu_parent.0).expect("cpu cgroup");
    let cpu_child = CpuCgroup(cpu_parent.0.join("quota2"));
    std::fs::create_dir(&cpu_child.0).expect("cpu cgroup");
    std::fs::write(cpu_child.0.join("cpu.cfs_period_us"), "100000").unwrap();
    // 1.5 CPUs of bandwidth: 2 vCPUs (rounded up), more than its 1-PU cpuset.
    std::fs::write(cpu_child.0.join("cpu.cfs_quota_us"), "150000").unwrap();
    cg.child("quota2", &one_pu, &mems);
    cg.child("cpuset1", &one_pu, &mems);
    let dir = tempfile::tempdir().unwrap();
    let d = TestDaemon::start(dir.path(), &Setup::watching(&cg.path));
    d.wait_for("both discovered", |j| {
        j["containers"].as_array().is_some_and(|c| c.len() == 2)
    });
    let run = d.placectl(["containers", "--json"]).ok();
    let find = |name: &str| {
        run.json()["containers"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == name).cloned())
            .unwrap_or_else(|| panic!("{name} not listed: {run:?}"))
    };
    let q = find("quota2");
    assert_eq!(
        (q["vcpus"].as_u64(), q["vcpus_source"].as_str()),
        (Some(2), Some("quota")),
        "{q}"
    );
    let c = find("cpuset1");
    assert_eq!(
        (c["vcpus"].as_u64(), c["vcpus_source"].as_str()),
        (Some(1), Some("cpuset")),
        "{c}"
    );
    drop(d);
    drop(cg);
    drop(cpu_child);
}

#[test]
fn a_request_during_an_operation_is_aborted_with_what_and_since_when() {
    let Some(host) = host() else { return };
    let (cpus, mems) = machine(&host);
    let dir = tempfile::tempdir().unwrap();
    let (cg, addr) = container(&host);
    let c1 = cg.path.child("c1").unwrap();
    // A container the previous run placed under the model policy and predicted: the
    // restarted daemon watches it, which measures it in place, holding its operation lock
    // for the whole warm-up: an hour here, so that every request below lands inside it
    // however slow this machine is (stopping the daemon ends the warm-up at once). No
    // model is needed for that.
    let m = placed_core::machine::Machine::load(&placed_core::machine::TopologySource::Host, None)
        .unwrap();
    let set = placed_core::placement::important_placements(&m, 2).unwrap();
    let p = set
        .placements
        .iter()
        .find(|p| p.cpus == cpus)
        .expect("a placement on every PU");
    let state = State {
        written_unix_ms: 0,
        unmanaged: Vec::new(),
        reservations: Vec::new(),
        stopped_models: Vec::new(),
        fingerprint: m.fingerprint().to_owned(),
        containers: vec![watched_under_model(
            &c1.to_string(),
            p,
            &mems,
            placed_host::observe::SourceSpec::Prometheus {
                url: format!("http://{addr}/metrics"),
                selector: "testload_ops_total".into(),
            },
            1000.0,
        )],
    };
    StateStore::new(dir.path().join("state.json"))
        .save(&state)
        .unwrap();
    let d = TestDaemon::start(
        dir.path(),
        &Setup {
            cgroups: vec![cg.path.to_string()],
            warmup: Some("1h".into()),
            ..Setup::default()
        },
    );
    d.wait_for("c1 being watched", |j| {
        j["containers"][0]["detail"]
            .as_str()
            .is_some_and(|s| s.starts_with("watching"))
    });

    // Manage would change v under the measurement: refused, saying what and since when.
    let run = d.placectl(["manage", "c1", "--vcpus", "1"]);
    run_is_busy(&run);
    // --wait asks again until the container is free or --timeout runs out (the watch
    // lasts an hour here, so only the timeout can end it).
    let run = d.placectl(["manage", "c1", "--vcpus", "1", "--wait", "--timeout", "2s"]);
    assert!(run.stderr.contains("is busy: watching since"), "{run:?}");
    assert!(run.stderr.contains("waiting (--wait)"), "{run:?}");
    assert!(
        run.stderr.contains("no answer from placed within 2s"),
        "{run:?}"
    );
    assert_eq!(
        run.code,
        Some(i32::from(Exit::Unavailable.code())),
        "{run:?}"
    );
    runtime().block_on(async {
        let mut c = d.client().await;
        let r = c
            .manage(pb::ManageRequest {
                container: "c1".into(),
                policy: Some(pb::Policy {
                    kind: pb::PolicyKind::Observe as i32,
                    ..Default::default()
                }),
                ..Default::default()
            })
            .await;
        let status = r.expect_err("busy");
        assert_eq!(status.code(), Code::Aborted, "{status:?}");
        assert!(status.message().contains("watching since"), "{status:?}");
        let r = c
            .place(pb::PlaceRequest {
                container: "c1".into(),
                placement_id: p.id.clone(),
                ..Default::default()
            })
            .await;
        assert_eq!(r.expect_err("busy").code(), Code::Aborted);
        let r = c
            .predict(pb::PredictRequest {
                container: "c1".into(),
            })
            .await
            .expect("the stored prediction needs no operation");
        assert_eq!(r.into_inner().model_id, "crafted");
    });
    // Nothing changed: same v, same policy, still being watched.
    let run = d.placectl(["containers", "--json"]).ok();
    let c = &run.json()["containers"][0];
    assert_eq!(c["vcpus"], 2, "{run:?}");
    assert_eq!(c["policy"], "model (goal 0.9)", "{run:?}");
    assert_eq!(c["state"], "watched", "{run:?}");
}

fn run_is_busy(run: &crate::util::Run) {
    // Busy: retry when the operation is done.
    assert_eq!(
        run.code,
        Some(i32::from(Exit::Unavailable.code())),
        "{run:?}"
    );
    assert!(run.stderr.contains("is busy: watching since"), "{run:?}");
    assert!(run.stderr.contains("Aborted"), "{run:?}");
}

#[test]
fn the_socket_gets_the_configured_mode_and_group() {
    let Some(_host) = host() else { return };
    use std::os::unix::fs::MetadataExt;
    // Any group but root's that this host has.
    let Some(group) = ["daemon", "adm", "nogroup", "users"]
        .iter()
        .find_map(|g| nix::unistd::Group::from_name(g).ok().flatten())
    else {
        eprintln!("skipped, because this host has none of the groups tried");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = TestDaemon::start(
        dir.path(),
        &Setup {
            socket_mode: Some("0640".into()),
            socket_group: Some(group.name.clone()),
            ..Setup::default()
        },
    );
    let meta = std::fs::metadata(&d.socket).expect("the socket");
    assert_eq!(meta.mode() & 0o7777, 0o640, "mode {:o}", meta.mode());
    assert_eq!(
        meta.gid(),
        group.gid.as_raw(),
        "group of {}",
        d.socket.display()
    );
}

#[test]
fn aggressive_containers_never_keep_units_another_container_holds() {
    let Some(host) = host() else { return };
    let (cpus, mems) = machine(&host);
    let cg: TestCgroup = TestCgroup::new(&host, &cpus, &mems);
    cg.child("held", &cpus, &mems);
    cg.child("sharer", &cpus, &mems);
    let dir = tempfile::tempdir().unwrap();
    let d = TestDaemon::start(dir.path(), &Setup::watching(&cg.path));
    let find = |j: &serde_json::Value, name: &str| {
        j["containers"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == name).cloned())
            .unwrap_or_default()
    };
    d.wait_for("both watched", |j| {
        find(j, "held")["state"] == "watched" && find(j, "sharer")["state"] == "watched"
    });
    // Alone, an aggressive container shares the whole machine and holds nothing.
    d.placectl(["manage", "sharer", "--policy", "aggressive"])
        .ok();
    d.wait_for("sharer placed", |j| {
        let s = find(j, "sharer");
        s["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("aggressive"))
            && s["cpus"] == cpus.to_string()
            && s["units"].as_array().is_some_and(Vec::is_empty)
    });
    // Another container takes this host's only unit: the aggressive one must not stay on
    // it, and with no unit left free it waits for room.
    d.placectl([
        "manage",
        "held",
        "--vcpus",
        "1",
        "--policy",
        "smart-aggressive",
    ])
    .ok();
    d.wait_for("held holds the unit, sharer waits", |j| {
        find(j, "held")["units"] == serde_json::json!([0])
            && find(j, "sharer")["state"] == "waiting"
            && find(j, "sharer")["detail"]
                .as_str()
                .is_some_and(|d| d.contains("no free allocation units"))
    });
}

#[test]
fn sigterm_ends_open_watch_streams_and_the_daemon_exits() {
    if host().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut d = TestDaemon::start(dir.path(), &Setup::default());
    let watch = spawn_watch(&d);
    // The servers' graceful stop waits for open streams: before the fix placed hung here
    // until stop()'s SIGKILL.
    let status = d.stop().expect("placed was running");
    assert!(
        status.success(),
        "placed did not exit on SIGTERM with a watcher connected: {status:?}\n{}",
        d.log()
    );
    let out = watch.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(i32::from(Exit::Unavailable.code())),
        "{stderr}"
    );
    assert!(
        stderr.contains("placed is stopping: watch again once it is back"),
        "{stderr}"
    );
}

/// `placectl watch` with its stdout a pipe and the daemon's socket in PLACED_SOCKET.
fn spawn_watch(d: &TestDaemon) -> std::process::Child {
    let watch = std::process::Command::new(crate::bins::bin("placectl"))
        .arg("watch")
        .env("PLACED_SOCKET", &d.socket)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start placectl watch");
    let start = std::time::Instant::now();
    while metric(&d.metrics(), "placed_watchers") != Some(1.0) {
        // Only bounds a hang: the stream is open once the daemon counts it.
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the watch never opened"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    watch
}

/// Waits for a child's exit; the bound only keeps a hang from lasting forever, and is what
/// the test asserts against: that it exits at all.
fn exit_of_child(child: &mut std::process::Child, what: &str) -> std::process::ExitStatus {
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            return status;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("{what} did not exit");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn watch_ends_when_its_reader_goes_even_with_no_event_to_write() {
    use std::io::BufRead;
    let Some(host) = host() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (cg, _load) = container(&host);
    let d = TestDaemon::start(dir.path(), &Setup::watching(&cg.path));
    d.wait_for("c1 watched", |j| j["containers"][0]["state"] == "watched");
    let mut watch = spawn_watch(&d);
    // One event: c1 handed back, after which the daemon leaves it alone and no event comes.
    d.placectl(["unmanage", "c1"]).ok();
    let mut out = std::io::BufReader::new(watch.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.contains("/c1 unmanaged "), "{line}");
    // `| head -1`: the reader has its line and goes.
    drop(out);
    // Before the fix placectl noticed only at its next write, which never came.
    let status = exit_of_child(&mut watch, "placectl watch, its reader gone");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut watch.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn watch_says_the_daemon_went_away_when_it_is_killed() {
    if host().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut d = TestDaemon::start(dir.path(), &Setup::default());
    let mut watch = spawn_watch(&d);
    // Killed: no "placed is stopping" at the end of the stream, only a closed connection.
    d.stop_with(libc::SIGKILL).expect("placed was running");
    let status = exit_of_child(&mut watch, "placectl watch, its daemon killed");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut watch.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(
        status.code(),
        Some(i32::from(Exit::Unavailable.code())),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("placectl: error: placed went away during the watch"),
        "{stderr}"
    );
    assert!(!stderr.contains("h2"), "{stderr}");
}

#[test]
fn connection_options_are_taken_before_and_after_the_command() {
    if host().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = TestDaemon::start(dir.path(), &Setup::default());
    let socket = d.socket.display().to_string();
    // No PLACED_SOCKET: only the flag says where the daemon is.
    let before =
        crate::util::placectl(["--socket", &socket, "--timeout", "60s", "status", "--json"]).ok();
    assert_eq!(before.json()["schema"], "placed.status/v1", "{before:?}");
    let after = crate::util::placectl(["status", "--socket", &socket, "--json"]).ok();
    assert_eq!(after.json()["schema"], "placed.status/v1", "{after:?}");
    // Both: the one after the command's name wins.
    crate::util::placectl([
        "--socket",
        "/nonexistent/placed.sock",
        "status",
        "--socket",
        &socket,
    ])
    .ok();
    crate::util::placectl([
        "--socket",
        &socket,
        "status",
        "--socket",
        "/nonexistent/placed.sock",
    ])
    .fails_with(Exit::Unavailable, "/nonexistent/placed.sock");
}

#[test]
fn command_metrics_run_only_programs_the_allow_list_holds() {
    let Some(host) = host() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (cg, _load) = container(&host);
    let d = TestDaemon::start(
        dir.path(),
        &Setup {
            command_metrics: true,
            // Inside [observe], where the setup's own lines end.
            extra: "command_allow = [\"/usr/bin/true\"]".into(),
            ..Setup::watching(&cg.path)
        },
    );
    d.wait_for("c1", |j| j["containers"][0]["name"] == "c1");
    // sh resolves (PATH, links followed) outside the list: refused before it is stored.
    d.placectl(["manage", "c1", "--metric", "command sh -c 'echo 1'"])
        .fails_with(
            Exit::Refused,
            "is not allowed: observe.command_allow lists /usr/bin/true",
        );
    let run = d.placectl(["containers", "--json"]).ok();
    assert!(run.json()["containers"][0]["metric"].is_null(), "{run:?}");
    // The listed program is taken.
    let run = d
        .placectl([
            "manage",
            "c1",
            "--metric",
            "command /usr/bin/true",
            "--json",
        ])
        .ok();
    assert_eq!(run.json()["metric"]["argv"][0], "/usr/bin/true", "{run:?}");
}
