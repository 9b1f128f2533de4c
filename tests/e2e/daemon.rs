//! The real daemon on this host's cgroup v1 cpuset hierarchy, driven through placectl and
//! gRPC over its Unix socket. Root only; skipped with the reason otherwise.
//!
//! This host has one NUMA node and two PUs, so every container size has a single important
//! placement and no model can be trained here (a model needs a baseline and a different
//! probe): predictions with a model run in the multi-node guest (`guest.rs`).

use std::time::Duration;

use placed::cpuset::{CpuSet, NodeSet};
use placed::enact::Host;
use placed::state::{
    Assigned, ContainerRecord, Cpuset, Lifecycle, Migration, State, StateStore, VcpuSource,
};
use placed_proto::v1 as pb;
use tonic::Code;

use crate::cgroup_support::TestCgroup;
use crate::daemon_util::{Setup, TestDaemon, TestLoad, cpus_allowed, metric};

fn host() -> Option<Host> {
    match crate::cgroup_support::host() {
        Ok(h) => Some(h),
        Err(why) => {
            eprintln!("skipped, because {why}");
            None
        }
    }
}

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
    let d = TestDaemon::start(
        dir.path(),
        &Setup {
            cgroups: vec![cg.path.to_string()],
            ..Setup::default()
        },
    );

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
    let run = d.placectl(["containers", "--json"]).ok();
    assert_eq!(run.json()["containers"][0]["policy"], "observe", "{run:?}");
    assert_eq!(cpus_allowed(pid), want_cpus);

    // No model can exist for a one-placement machine: a clean precondition failure that
    // says what to run.
    d.placectl(["predict", "c1"])
        .fails_with("no model for machine class");
    let run = d.placectl(["predict", "c1"]);
    // The advice is the real `placed-train` command for this v and the daemon's model dir.
    let advice = placed::lifecycle::train_command(1, dir.path().join("models").display());
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
    let d = TestDaemon::start(
        dir.path(),
        &Setup {
            cgroups: vec![cg.path.to_string()],
            ..Setup::default()
        },
    );
    d.wait_for("c1", |j| j["containers"][0]["name"] == "c1");
    // Not a pushed metric yet: refused, saying why.
    d.placectl(["report", "c1", "5"])
        .fails_with("does not take pushed metrics");
    d.placectl(["manage", "c1", "--metric", "pushed"]).ok();
    // The task builds the pushed source shortly after the change.
    let start = std::time::Instant::now();
    loop {
        let run = d.placectl(["report", "c1", "10", "11", "12"]);
        if run.code == Some(0) {
            assert!(run.stdout.contains("3 accepted, 0 rejected"), "{run:?}");
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "{run:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(d.metrics().contains("placed_metric_samples_total 3"));
    // NaN is not a rate.
    d.placectl(["report", "c1", "NaN"])
        .fails_with("1 of 1 samples rejected");
}

#[test]
fn bad_requests_get_the_right_status_codes() {
    let Some(host) = host() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (cg, _load) = container(&host);
    let d = TestDaemon::start(
        dir.path(),
        &Setup {
            cgroups: vec![cg.path.to_string()],
            ..Setup::default()
        },
    );
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
            .report_metric(tokio_stream::iter(vec![pb::MetricSample {
                container: "no-such-container".into(),
                value: 1.0,
                unix_ms: 0,
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
            .list_placements(pb::ListPlacementsRequest { vcpus: 0 })
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
            .into_inner();
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
            placed::policy::Policy::Observe,
            "{saved:?}"
        );

        // Clients that walk away mid-stream leave the daemon healthy.
        let (tx, rx) = tokio::sync::mpsc::channel::<pb::MetricSample>(4);
        let mut c2 = d.client().await;
        let call = tokio::spawn(async move {
            c2.report_metric(tokio_stream::wrappers::ReceiverStream::new(rx))
                .await
        });
        tx.send(pb::MetricSample {
            container: "c1".into(),
            value: 1.0,
            unix_ms: 0,
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
        let channel = {
            let socket = d.socket.clone();
            tonic::transport::Endpoint::from_static("http://placed.invalid")
                .connect_with_connector(tower::service_fn(move |_: tonic::transport::Uri| {
                    let s = socket.clone();
                    async move {
                        Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(
                            tokio::net::UnixStream::connect(s).await?,
                        ))
                    }
                }))
                .await
                .expect("connect")
        };
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
        for service in ["", "placed.v1.Placed"] {
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
        let mut refl = ServerReflectionClient::new(channel);
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
        assert!(names.contains(&"placed.v1.Placed".to_owned()), "{names:?}");
        assert!(
            names.contains(&"grpc.health.v1.Health".to_owned()),
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
    let mut d = TestDaemon::start(
        dir.path(),
        &Setup {
            cgroups: vec![cg.path.to_string()],
            ..Setup::default()
        },
    );
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
        fingerprint: placed::machine::Machine::load(&placed::machine::TopologySource::Host, None)
            .unwrap()
            .fingerprint()
            .to_owned(),
        containers: vec![ContainerRecord {
            id: c1.to_string(),
            name: "c1".into(),
            runtime: "cgroup".into(),
            runtime_id: c1.to_string(),
            vcpus: 1,
            vcpus_source: VcpuSource::Request,
            policy: placed::policy::Policy::Observe,
            state: Lifecycle::Migrating,
            detail: String::new(),
            original: None,
            assigned: None,
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
            resume: None,
            metric: None,
            prediction: None,
            updated_unix_ms: 0,
        }],
    };
    StateStore::new(dir.path().join("state.json"))
        .save(&state)
        .unwrap();

    let d = TestDaemon::start(
        dir.path(),
        &Setup {
            cgroups: vec![cg.path.to_string()],
            ..Setup::default()
        },
    );
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
    assert_eq!(out.status.code(), Some(2));
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
    assert_eq!(out.status.code(), Some(2));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_placed"))
        .arg("--print-config")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("socket = \"/run/placed/placed.sock\""));
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
