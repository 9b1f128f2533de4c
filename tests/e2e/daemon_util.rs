//! Running the real daemon for a test: its own directory, socket, state file and metrics
//! port; stopped (SIGTERM, then SIGKILL) when the test ends, its log printed if it failed.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use placectl::client::{self, Target};
use placed_proto::v1::placed_service_client::PlacedServiceClient;
use tonic::transport::Channel;

use crate::util::{Run, placectl_with};

/// A free TCP port on loopback (bound, read, released: racy only against other tests).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    l.local_addr().expect("local address").port()
}

/// What a test daemon manages and how; the rest of its config is fixed for tests.
pub struct Setup {
    /// Plain cgroups whose children it manages.
    pub cgroups: Vec<String>,
    pub runtimes: Vec<String>,
    /// More TOML sections (not ones already written: daemon, grpc, metrics, containers,
    /// observe).
    pub extra: String,
    pub policy_default: String,
    /// `grpc.tcp`: also serve on TCP (needs a `[grpc.tls]` section in `extra`).
    pub grpc_tcp: Option<String>,
    /// `grpc.socket_mode` and `grpc.socket_group`, when not the defaults.
    pub socket_mode: Option<String>,
    pub socket_group: Option<String>,
    /// `observe.warmup`, when not the short one tests use (a long warm-up keeps a
    /// measurement, and the container's operation lock, going for as long as a test needs).
    pub warmup: Option<String>,
    /// `observe.watch_interval`, when not the default.
    pub watch_interval: Option<String>,
    /// `containers.resync_interval`, when not the tests' 1 s (a long one leaves a change to
    /// inotify alone).
    pub resync_interval: Option<String>,
    /// `grpc.watch_history`, when not the default.
    pub watch_history: Option<usize>,
    /// `observe.allow_command_metrics` (they run as `nobody`).
    pub command_metrics: bool,
    /// More lines of the `[policy]` section (the drift rule, say).
    pub policy_lines: String,
    /// Run as systemd runs a service: stderr is "the journal" (`JOURNAL_STREAM` names the
    /// log file's device and inode).
    pub journal: bool,
    /// `NOTIFY_SOCKET`: run as a `Type=notify` service, telling this datagram socket.
    pub notify_socket: Option<PathBuf>,
}

impl Setup {
    /// The defaults, managing the children of one plain cgroup.
    pub fn watching(cgroup: &impl std::fmt::Display) -> Self {
        Self {
            cgroups: vec![cgroup.to_string()],
            ..Self::default()
        }
    }
}

impl Default for Setup {
    fn default() -> Self {
        Self {
            cgroups: Vec::new(),
            runtimes: Vec::new(),
            extra: String::new(),
            policy_default: "observe".into(),
            grpc_tcp: None,
            socket_mode: None,
            socket_group: None,
            warmup: None,
            watch_interval: None,
            resync_interval: None,
            watch_history: None,
            command_metrics: false,
            policy_lines: String::new(),
            journal: false,
            notify_socket: None,
        }
    }
}

pub struct TestDaemon {
    child: Option<Child>,
    pub socket: PathBuf,
    pub metrics_port: u16,
    log: PathBuf,
    config: PathBuf,
    journal: bool,
    notify_socket: Option<PathBuf>,
}

impl TestDaemon {
    /// Writes the config in `dir` and starts the daemon; returns once it serves.
    pub fn start(dir: &Path, setup: &Setup) -> Self {
        let metrics_port = free_port();
        let quote = |v: &[String]| {
            v.iter()
                .map(|s| format!("{s:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let config = format!(
            r#"
[daemon]
state_file = "{dir}/state.json"
model_dir = "{dir}/models"
[grpc]
socket = "{dir}/placed.sock"
{tcp}
{socket_mode}
{socket_group}
{watch_history}
[metrics]
listen = "127.0.0.1:{metrics_port}"
[containers]
runtimes = [{runtimes}]
cgroups = [{cgroups}]
resync_interval = "{resync}"
[policy]
default = "{policy}"
{policy_lines}
# This 2-core test machine is shared with the test harness itself: short windows, and no
# dropping of windows for foreign load or CPU steal (the defaults would refuse most
# measurements here when CI runs the suite under load).
[observe]
warmup = "{warmup}"
window = "200ms"
windows = 8
max_foreign_load = 1.0
max_steal = 1.0
{watch_interval}
allow_command_metrics = {command_metrics}
{extra}
"#,
            dir = dir.display(),
            runtimes = quote(&setup.runtimes),
            cgroups = quote(&setup.cgroups),
            policy = setup.policy_default,
            policy_lines = setup.policy_lines,
            tcp = setup
                .grpc_tcp
                .as_ref()
                .map(|a| format!("tcp = \"{a}\""))
                .unwrap_or_default(),
            socket_mode = setup
                .socket_mode
                .as_ref()
                .map(|m| format!("socket_mode = \"{m}\""))
                .unwrap_or_default(),
            socket_group = setup
                .socket_group
                .as_ref()
                .map(|g| format!("socket_group = \"{g}\""))
                .unwrap_or_default(),
            warmup = setup.warmup.as_deref().unwrap_or("200ms"),
            resync = setup.resync_interval.as_deref().unwrap_or("1s"),
            watch_history = setup
                .watch_history
                .map(|n| format!("watch_history = {n}"))
                .unwrap_or_default(),
            watch_interval = setup
                .watch_interval
                .as_ref()
                .map(|i| format!("watch_interval = \"{i}\""))
                .unwrap_or_default(),
            command_metrics = setup.command_metrics,
            extra = setup.extra,
        );
        let config_path = dir.join("placed.toml");
        std::fs::write(&config_path, config).expect("write the test config");
        std::fs::create_dir_all(dir.join("models")).expect("model dir");
        let mut d = Self {
            child: None,
            socket: dir.join("placed.sock"),
            metrics_port,
            log: dir.join("placed.log"),
            config: config_path,
            journal: setup.journal,
            notify_socket: setup.notify_socket.clone(),
        };
        d.spawn();
        d
    }

    /// Starts the daemon process again with the same config (after `stop` or `kill`).
    pub fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("open the log");
        let mut command = Command::new(env!("CARGO_BIN_EXE_placed"));
        command
            .arg("--config")
            .arg(&self.config)
            .env("RUST_LOG", "info,placed=debug")
            .env_remove("JOURNAL_STREAM")
            .env_remove("NOTIFY_SOCKET");
        if let Some(socket) = &self.notify_socket {
            command.env("NOTIFY_SOCKET", socket);
        }
        if self.journal {
            use std::os::unix::fs::MetadataExt;
            let m = log.metadata().expect("stat the log");
            command.env("JOURNAL_STREAM", format!("{}:{}", m.dev(), m.ino()));
        }
        let child = command
            .stdout(Stdio::from(log.try_clone().expect("dup log")))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start placed");
        self.child = Some(child);
        self.wait_serving(Duration::from_secs(60));
    }

    fn wait_serving(&mut self, limit: Duration) {
        let start = Instant::now();
        loop {
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(status)) = c.try_wait() {
                    panic!(
                        "placed exited with {status} while starting:\n{}",
                        self.log()
                    );
                }
            }
            let run = self.placectl(["status"]);
            if run.code == Some(0) {
                return;
            }
            if start.elapsed() > limit {
                panic!("placed did not start serving in {limit:?}:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The config file the daemon was started with (tests rewrite it before a reload).
    pub fn config_path(&self) -> &Path {
        &self.config
    }

    /// Sends `signal` to the running daemon without waiting for anything.
    pub fn signal(&self, signal: libc::c_int) {
        let child = self.child.as_ref().expect("placed is running");
        let pid = i32::try_from(child.id()).expect("a pid");
        // SAFETY: kill(2) on our own child's pid, which we have not reaped yet.
        unsafe { libc::kill(pid, signal) };
    }

    /// Whether the daemon process is still running.
    pub fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Polls the log from byte `from` until a line satisfies `check`; returns that line. The
    /// limit only bounds a hang.
    pub fn wait_log_line<F: Fn(&str) -> bool>(&self, from: usize, what: &str, check: F) -> String {
        let start = Instant::now();
        loop {
            let log = self.log();
            if let Some(l) = log.get(from..).unwrap_or("").lines().find(|l| check(l)) {
                return l.to_owned();
            }
            if start.elapsed() > Duration::from_secs(120) {
                panic!("timed out waiting for {what} in the log:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGTERM, and the exit status (SIGKILL after 30 s).
    pub fn stop(&mut self) -> Option<ExitStatus> {
        self.stop_with(libc::SIGTERM)
    }

    /// `signal`, and the exit status (SIGKILL after 30 s).
    pub fn stop_with(&mut self, signal: libc::c_int) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        // SAFETY: kill(2) on our own child's pid, which we have not reaped yet.
        unsafe { libc::kill(i32::try_from(child.id()).ok()?, signal) };
        let start = Instant::now();
        loop {
            if let Ok(Some(s)) = child.try_wait() {
                return Some(s);
            }
            if start.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                return child.wait().ok();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn placectl<I, S>(&self, args: I) -> Run
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        // The connection flags belong to the daemon commands (after the command's name); the
        // environment reaches every command whatever its arguments.
        let socket = self.socket.display().to_string();
        placectl_with(args, &[("PLACED_SOCKET", &socket)])
    }

    pub async fn client(&self) -> PlacedServiceClient<Channel> {
        client::connect(&Target::Unix(self.socket.clone()))
            .await
            .expect("connect to the test daemon")
    }

    /// Polls `check` on `placectl containers --json` until it holds. The limit only bounds
    /// a hang: no test relies on anything happening within it.
    pub fn wait_for<F: Fn(&serde_json::Value) -> bool>(&self, what: &str, check: F) {
        let start = Instant::now();
        loop {
            let run = self.placectl(["containers", "--json"]);
            if run.code == Some(0) && check(&run.json()) {
                return;
            }
            if start.elapsed() > Duration::from_secs(300) {
                panic!(
                    "timed out waiting for {what}: {run:?}\n--- daemon log ---\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    pub fn metrics(&self) -> String {
        let out = Command::new("curl")
            .args([
                "-s",
                &format!("http://127.0.0.1:{}/metrics", self.metrics_port),
            ])
            .output();
        match out {
            Ok(o) => String::from_utf8_lossy(&o.stdout).into_owned(),
            Err(_) => http_get(self.metrics_port, "/metrics"),
        }
    }
}

/// The value of one sample in a Prometheus text exposition, e.g.
/// `placed_errors_total{kind="api"}`; `None` when it is not exported (yet).
pub fn metric(exposition: &str, sample: &str) -> Option<f64> {
    exposition.lines().find_map(|l| {
        let value = l.strip_prefix(sample)?.strip_prefix(' ')?;
        value.split_whitespace().next()?.parse().ok()
    })
}

/// A minimal HTTP GET, for hosts without curl.
fn http_get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n");
    let mut body = String::new();
    let _ = s.read_to_string(&mut body);
    body
}

impl Drop for TestDaemon {
    fn drop(&mut self) {
        self.stop();
        if std::thread::panicking() {
            eprintln!(
                "--- daemon log ({}) ---\n{}",
                self.log.display(),
                self.log()
            );
        }
    }
}

/// `placed-testload` serving its operation counter on a Prometheus endpoint.
pub struct TestLoad {
    pub child: Child,
    pub addr: String,
}

impl TestLoad {
    pub fn start(mode: &str) -> Self {
        let mut child = Command::new(crate::bins::bin("placed-testload"))
            .args([mode, "--serve", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start placed-testload");
        let out = child.stdout.take().expect("testload stdout");
        let mut line = String::new();
        BufReader::new(out)
            .read_line(&mut line)
            .expect("read the testload's ready line");
        let addr = line
            .trim()
            .strip_prefix("ready ")
            .unwrap_or_default()
            .to_owned();
        assert!(!addr.is_empty(), "placed-testload said {line:?}");
        Self { child, addr }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl crate::cgroup_support::Load for TestLoad {
    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `Cpus_allowed_list` of a process, from /proc.
pub fn cpus_allowed(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_owned())
        .unwrap_or_default()
}

/// A state-file record of container `id` that a previous run placed in `p` under the model
/// policy and predicted (a crafted, simulated prediction whose baseline measured
/// `baseline_value` there): a daemon started on it watches the container, which measures
/// it in place with `metric`. No model is needed for that, so it works on this host.
pub fn watched_under_model(
    id: &str,
    p: &placed_core::placement::Placement,
    mems: &placed_core::cpuset::NodeSet,
    metric: placed_host::observe::SourceSpec,
    baseline_value: f64,
) -> placed::state::ContainerRecord {
    use placed::state::{
        Assigned, ContainerRecord, Lifecycle, ObservationRecord, PredictedRecord, PredictionRecord,
    };
    let vcpus = p.cpus.len();
    ContainerRecord {
        state: Lifecycle::Watched,
        assigned: Some(Assigned {
            placement: Some(p.id.clone()),
            units: p.units.clone(),
            cpus: p.cpus.clone(),
            mems: mems.clone(),
        }),
        prediction: Some(PredictionRecord {
            model_id: "crafted".into(),
            model_path: String::new(),
            provenance: placed_models::Provenance::Simulated,
            vcpus,
            baseline: p.id.clone(),
            probe: p.id.clone(),
            observations: vec![ObservationRecord {
                placement: p.id.clone(),
                value: baseline_value,
                low: baseline_value * 0.99,
                high: baseline_value * 1.01,
                source: metric.describe(),
                windows: 8,
                dropped: 0,
            }],
            placements: vec![PredictedRecord {
                placement: p.id.clone(),
                relative: 1.0,
                spread: 0.0,
                measured: true,
                interval: None,
            }],
            warnings: Vec::new(),
            unix_ms: 0,
            below_gate: None,
            novel: false,
            third: None,
            across_classes: false,
        }),
        metric: Some(metric),
        ..ContainerRecord::new(
            id,
            id.rsplit('/').next().unwrap_or(id),
            vcpus,
            placed_core::policy::Policy::Model { goal: 0.9 },
        )
    }
}
