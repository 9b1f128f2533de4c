//! The daemon's configuration: TOML, every field optional, defaults that work on a host
//! with no file at all. Documented in `docs/daemon.md`; `placed --print-config` shows the
//! effective values.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use placed_core::policy::GoalBound;
use placed_core::reconcile::OnOverride;
use placed_host::migrate::ModeKind;
use serde::{Deserialize, Serialize};

mod checks;
mod production;

pub use production::ProductionDataConfig;

/// Where the daemon looks when `--config` is not given; a missing file means defaults.
pub const DEFAULT_CONFIG_PATH: &str = "/etc/placed/placed.toml";

/// The shortest `containers.resync_interval`: listing the cgroup tree more often than
/// this is a busy loop, and change notifications catch almost everything anyway.
pub const MIN_RESYNC: Duration = Duration::from_secs(1);

/// Longest value from the file an error repeats.
const ECHO_MAX: usize = 200;

fn echo(s: &str) -> String {
    placed_core::text::clip(s, ECHO_MAX)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub daemon: DaemonConfig,
    pub grpc: GrpcConfig,
    pub machine: MachineConfig,
    pub containers: ContainersConfig,
    pub policy: PolicyConfig,
    pub observe: ObserveConfig,
    pub metrics: MetricsConfig,
    /// The NRI plugin mode on Kubernetes nodes (docs/kubernetes.md).
    pub nri: crate::kubernetes::NriConfig,
    /// What the daemon measures, kept as training data (docs/daemon.md, "Production data").
    pub production_data: ProductionDataConfig,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DaemonConfig {
    /// The state file: what placed decided, so that a restart adopts instead of moving.
    pub state_file: PathBuf,
    /// Model files (`*.json` from `placed-train fit`), one per machine class and vCPU count.
    pub model_dir: PathBuf,
    /// `text` for people and journald, `json` for log shippers.
    pub log_format: LogFormat,
    /// Which log lines are written: a level (`info`) or a filter (`info,placed=debug`).
    /// `RUST_LOG` overrides it. Changes on reload (SIGHUP).
    pub log_level: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GrpcConfig {
    /// The Unix socket placectl and local orchestrators use.
    pub socket: PathBuf,
    /// Permissions of the socket, octal.
    pub socket_mode: String,
    /// Group owning the socket (members may drive placed); unset keeps root's group.
    pub socket_group: Option<String>,
    /// Optional TCP listener for remote orchestrators; requires `tls`.
    pub tcp: Option<SocketAddr>,
    pub tls: Option<TlsConfig>,
    /// Lifecycle events kept for `Watch` streams that resume after a sequence number.
    pub watch_history: usize,
    /// `Watch` streams open at once, over all listeners; one more is refused with
    /// RESOURCE_EXHAUSTED. Each costs a broadcast receiver and its buffers (10,000 streams
    /// took 78 MiB without a cap).
    pub max_watchers: usize,
    /// Connections the Unix socket holds at once (a few of them kept for root); one more is
    /// answered RESOURCE_EXHAUSTED and closed, so that descriptors stay for the cgroup tree
    /// and the other listeners.
    pub max_unix_connections: usize,
    /// Connections one peer holds at once: a uid other than root on the Unix socket, an
    /// address without a client certificate on TCP. One peer cannot take a listener.
    pub max_connections_per_peer: usize,
    /// How long a new connection may take to finish its TLS handshake, and then to send
    /// its first bytes; a silent connection holds a place no longer.
    #[serde(with = "humantime_serde")]
    pub handshake_timeout: Duration,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM certificate chain and private key of the server.
    pub cert: PathBuf,
    pub key: PathBuf,
    /// PEM CA bundle: when set, clients must present a certificate it signed.
    pub client_ca: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct MachineConfig {
    /// An hwloc XML file to use instead of discovering this host (tests, odd firmware).
    pub topology: Option<PathBuf>,
    /// A machine file: measured interconnect, concern overrides, allocation unit.
    pub machine_file: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ContainersConfig {
    /// Containers of these runtimes are managed as soon as they appear: docker, podman,
    /// containerd, crio, cri, pod, lxc, systemd. Others are managed when an orchestrator asks
    /// (Manage).
    pub runtimes: Vec<String>,
    /// Plain cgroups (paths in the cpuset hierarchy) whose children are managed as they
    /// appear, for workloads started without a container runtime.
    pub cgroups: Vec<String>,
    /// How often the cgroup tree is listed again, in case a change notification was missed.
    #[serde(with = "humantime_serde")]
    pub resync_interval: Duration,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PolicyConfig {
    /// The policy of containers nobody configured: observe (measure and predict, never
    /// move), model, conservative, aggressive or smart-aggressive.
    pub default: String,
    /// The model policy's goal: keep at least this fraction of baseline performance.
    pub goal: f64,
    /// Where a container under the model policy goes while the live gate has stopped its
    /// model: `observe` (left where it is, the default), or a policy that needs no model,
    /// `conservative`, `smart-aggressive` or `aggressive` (docs/daemon.md, "Live gate").
    pub fallback: String,
    /// What the model policy holds against the goal: `point` (the prediction) or
    /// `lower-bound` (the lower end of the model's calibrated interval, where it has one).
    pub goal_bound: GoalBound,
    /// Before the model policy moves a container, measure one more placement when the
    /// choice hinges on a cell whose predicted interval holds the goal, or when the
    /// container is unlike every training workload (docs/daemon.md, "Third measurement").
    pub third_measurement: bool,
    /// A move must pay for itself within this time: predicted gain x horizon > migration time.
    #[serde(with = "humantime_serde")]
    pub horizon: Duration,
    /// The narrowest the prediction's interval is taken to be, either side of the point
    /// prediction (relative); a watched container is re-evaluated only when its observed
    /// interval misses the prediction's (docs/daemon.md, "Drift").
    pub drift: f64,
    /// Consecutive watch measurements whose interval misses the prediction's before the
    /// container is evaluated again.
    pub drift_windows: u32,
    /// No re-evaluation (and so no second migration) within this time of the last
    /// evaluation, unless ordered (`Place`, `Manage`).
    #[serde(with = "humantime_serde")]
    pub cooldown: Duration,
    /// How memory follows a move: `kernel` (the cpuset write), `fast` (parallel
    /// move_pages workers, container frozen) or `throttled` (no freeze, bandwidth cap).
    /// Kernel by default: in the emulated guest the fast mode was not faster (docs/enactment.md).
    pub migration: ModeKind,
    /// The throttled mode's cap, MiB/s.
    pub throttle_mib_per_s: u64,
    /// What to do when a container's cpuset is changed outside placed, for containers that
    /// do not say (`Manage`, `placectl manage --on-override`): `adopt`, `reassert` or
    /// `leave` (docs/daemon.md, "Placements changed outside placed").
    pub on_override: OnOverride,
    /// `reassert` writes a placement back at most this many times within
    /// `reassert_window`, then gives up and says so.
    pub reassert_limit: u32,
    #[serde(with = "humantime_serde")]
    pub reassert_window: Duration,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ObserveConfig {
    /// Discarded after each move before measuring.
    #[serde(with = "humantime_serde")]
    pub warmup: Duration,
    /// One sub-window of a measurement.
    #[serde(with = "humantime_serde")]
    pub window: Duration,
    /// Sub-windows per measurement.
    pub windows: u32,
    /// How often a watched container is observed.
    #[serde(with = "humantime_serde")]
    pub watch_interval: Duration,
    /// Windows where other tasks take more than this share of the container's CPUs are
    /// dropped as disturbed (default 0.05). Raise it on small shared test machines only.
    pub max_foreign_load: Option<f64>,
    /// Windows where the hypervisor steals more than this share of the CPU are dropped as
    /// disturbed (default 0.02). Raise it on small shared test machines only: a steal-heavy
    /// window measures the neighbours, not the container.
    pub max_steal: Option<f64>,
    /// Bound on one Prometheus scrape, connection included.
    #[serde(with = "humantime_serde")]
    pub scrape_timeout: Duration,
    /// Bound on one run of a command metric.
    #[serde(with = "humantime_serde")]
    pub command_timeout: Duration,
    /// Shortest time between two readings of a pulled source (Prometheus, command): its
    /// windows are at least this long and a gauge is read at most this often. 0 (the
    /// default) reads at every window boundary, and a gauge 5 times per window.
    #[serde(with = "humantime_serde")]
    pub scrape_interval: Duration,
    /// Whether API callers may give a container a `command` metric. Off by default: the
    /// command runs on this host, so allowing it hands every API caller a way to run
    /// programs (docs/daemon.md, Security).
    pub allow_command_metrics: bool,
    /// The unprivileged user command metrics run as when they are allowed.
    pub command_user: String,
    /// The programs command metrics may run: files, and directories whose programs are
    /// allowed (links followed). Empty allows any program once commands are allowed.
    pub command_allow: Vec<PathBuf>,
    /// The files pattern metrics may tail: files, and directories whose files are allowed
    /// (checked on the real path of the file opened). Empty, the default, allows none: the
    /// daemon reads them as root, and a regex over a file tells its contents.
    pub pattern_files: Vec<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// Serve the Prometheus text endpoint (`/metrics`).
    pub enabled: bool,
    pub listen: SocketAddr,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        Self {
            state_file: "/var/lib/placed/state.json".into(),
            model_dir: "/var/lib/placed/models".into(),
            log_format: LogFormat::Text,
            log_level: "info".into(),
        }
    }
}

/// `Watch` streams open at once by default: far more than the orchestrators and operators
/// of one host watch with (one or two each), and at about 8 KiB each a bound of 2 MiB.
pub const DEFAULT_MAX_WATCHERS: usize = 256;

/// Connections one peer holds at once by default: a quarter of a listener's 256.
pub const DEFAULT_MAX_CONNECTIONS_PER_PEER: usize = 64;

/// The largest `grpc.max_watchers` and `grpc.max_unix_connections`: each holds a descriptor
/// or a buffer, and `dist/placed.service` allows 65,536 descriptors in all.
const MAX_LISTENER_LIMIT: usize = 16_384;

impl Default for GrpcConfig {
    fn default() -> Self {
        Self {
            socket: "/run/placed/placed.sock".into(),
            socket_mode: "0660".into(),
            socket_group: None,
            tcp: None,
            tls: None,
            watch_history: crate::lifecycle::events::DEFAULT_HISTORY,
            max_watchers: DEFAULT_MAX_WATCHERS,
            max_unix_connections: crate::service::guard::MAX_CONNECTIONS,
            max_connections_per_peer: DEFAULT_MAX_CONNECTIONS_PER_PEER,
            handshake_timeout: crate::service::guard::HANDSHAKE,
        }
    }
}

impl Default for ContainersConfig {
    fn default() -> Self {
        Self {
            runtimes: ["docker", "podman", "containerd", "crio", "cri", "lxc"]
                .map(String::from)
                .to_vec(),
            cgroups: Vec::new(),
            resync_interval: Duration::from_secs(30),
        }
    }
}

impl Default for PolicyConfig {
    fn default() -> Self {
        Self {
            default: "observe".into(),
            fallback: "observe".into(),
            goal: 0.9,
            goal_bound: GoalBound::Point,
            third_measurement: true,
            horizon: Duration::from_secs(600),
            drift: 0.15,
            // Three watch measurements (three minutes at the default watch interval): one or
            // two can be a neighbour's burst, three in a row are the workload.
            drift_windows: 3,
            // As long as the horizon a move must pay for itself in: moving again sooner
            // would spend what the last move was supposed to earn.
            cooldown: Duration::from_secs(600),
            migration: ModeKind::Kernel,
            throttle_mib_per_s: 100,
            // Whoever rewrote the cpuset (systemd, the kubelet, an operator with docker
            // update) usually meant it: taking it never fights and never migrates, and says
            // so; reassert is for hosts where placed alone decides.
            on_override: OnOverride::Adopt,
            // Three write-backs in ten minutes: a controller that undoes every one of them
            // is not going away, and each round may migrate the container's memory twice.
            reassert_limit: 3,
            reassert_window: Duration::from_secs(600),
        }
    }
}

impl Default for ObserveConfig {
    fn default() -> Self {
        Self {
            // The observation engine's measured defaults (observe::Protocol::default).
            warmup: Duration::from_secs(2),
            window: Duration::from_millis(500),
            windows: 16,
            watch_interval: Duration::from_secs(60),
            max_foreign_load: None,
            max_steal: None,
            scrape_timeout: placed_host::observe::SourceTimeouts::default().scrape,
            command_timeout: placed_host::observe::SourceTimeouts::default().command,
            scrape_interval: Duration::ZERO,
            allow_command_metrics: false,
            command_user: "nobody".into(),
            command_allow: Vec::new(),
            pattern_files: Vec::new(),
        }
    }
}

impl Default for MetricsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            listen: SocketAddr::from(([127, 0, 0, 1], 9464)),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("config file {path}: {detail}")]
    Parse { path: PathBuf, detail: String },
    #[error("config file {path}: {detail}")]
    Invalid { path: PathBuf, detail: String },
}

impl ConfigError {
    /// Who has to act: a missing file is not found; one that cannot be read is the host's;
    /// one that says something wrong is bad input.
    pub fn fault(&self) -> placed_core::fault::Fault {
        use placed_core::fault::Fault;
        match self {
            Self::Read { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                Fault::NotFound
            }
            Self::Read { .. } => Fault::HostConfig,
            Self::Parse { .. } | Self::Invalid { .. } => Fault::InvalidInput,
        }
    }
}

impl Config {
    /// Reads `path`; when `path` is the default location and does not exist, the defaults.
    pub fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
        let (path, explicit) = match path {
            Some(p) => (p.to_owned(), true),
            None => (PathBuf::from(DEFAULT_CONFIG_PATH), false),
        };
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if !explicit && e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Self::default());
            }
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        // Not UTF-8 is a malformed file like any other (bad input), not one that cannot be read.
        let text = String::from_utf8(bytes).map_err(|e| ConfigError::Parse {
            detail: format!(
                "not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
            path: path.clone(),
        })?;
        Self::parse(&path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            detail: placed_core::text::parser_message(&e.to_string()),
        })?;
        config.validate(path)?;
        Ok(config)
    }

    fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        match checks::problem(self) {
            Some(detail) => Err(ConfigError::Invalid {
                path: path.to_owned(),
                detail,
            }),
            None => Ok(()),
        }
    }

    /// What is accepted but probably a mistake, for the log at start: paths that do not
    /// exist (yet).
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if !self.daemon.model_dir.is_dir() {
            w.push(format!(
                "daemon.model_dir {} does not exist: no model is loaded until it does (placed-train fit writes them)",
                self.daemon.model_dir.display()
            ));
        }
        w
    }

    /// The measurement protocol: the observation engine's measured defaults, with the
    /// `[observe]` settings on top.
    pub fn protocol(
        &self,
    ) -> Result<placed_host::observe::Protocol, placed_host::observe::ObserveError> {
        let base = placed_host::observe::Protocol::default();
        let windows = usize::try_from(self.observe.windows).unwrap_or(base.windows);
        let mut p = placed_host::observe::Protocol {
            warmup: self.observe.warmup,
            window: self.observe.window,
            windows,
            min_windows: base.min_windows.min(windows),
            ..base
        };
        if let Some(f) = self.observe.max_foreign_load {
            p.rules.max_foreign = f;
        }
        if let Some(s) = self.observe.max_steal {
            p.rules.max_steal = s;
        }
        p.validate()?;
        Ok(p)
    }

    /// The bounds on one reading of a metric source.
    pub fn source_timeouts(&self) -> placed_host::observe::SourceTimeouts {
        placed_host::observe::SourceTimeouts {
            scrape: self.observe.scrape_timeout,
            command: self.observe.command_timeout,
        }
    }

    /// The protocol for a source: a pulled one is read no more often than
    /// `observe.scrape_interval`, so its windows grow to that and a gauge's polls thin out.
    pub fn protocol_for(
        &self,
        base: &placed_host::observe::Protocol,
        pulled: bool,
    ) -> placed_host::observe::Protocol {
        let interval = self.observe.scrape_interval;
        let mut p = base.clone();
        if pulled && !interval.is_zero() {
            p.window = p.window.max(interval);
            let fit = p.window.as_nanos() / interval.as_nanos();
            p.gauge_polls = u32::try_from(fit)
                .unwrap_or(u32::MAX)
                .clamp(1, base.gauge_polls);
        }
        p
    }

    /// The socket mode as a number.
    pub fn socket_mode(&self) -> u32 {
        u32::from_str_radix(&self.grpc.socket_mode, 8).unwrap_or(0o660)
    }
}

/// Longest scrape or command timeout, and longest scrape interval: beyond a minute a
/// measurement of 16 windows would take a quarter of an hour.
const MAX_SOURCE_WAIT: Duration = Duration::from_secs(60);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_is_the_defaults() {
        let c = Config::parse(Path::new("p.toml"), "").unwrap();
        assert_eq!(c, Config::default());
        assert_eq!(c.socket_mode(), 0o660);
    }

    #[test]
    fn a_missing_default_file_is_the_defaults_but_a_missing_named_file_is_an_error() {
        // The default path is absent on test machines; a named one must exist.
        if !Path::new(DEFAULT_CONFIG_PATH).exists() {
            assert_eq!(Config::load(None).unwrap(), Config::default());
        }
        assert!(matches!(
            Config::load(Some(Path::new("/nonexistent/placed.toml"))),
            Err(ConfigError::Read { .. })
        ));
    }

    #[test]
    fn a_file_that_is_not_utf8_is_malformed_not_unreadable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("latin1.toml");
        std::fs::write(&path, b"[policy]\n# caf\xe9\n").unwrap();
        let e = Config::load(Some(&path)).unwrap_err();
        assert_eq!(e.fault(), placed_core::fault::Fault::InvalidInput, "{e}");
        assert!(e.to_string().contains("latin1.toml"), "{e}");
        assert!(e.to_string().contains("offset 14"), "{e}");
    }

    #[test]
    fn fields_parse_with_durations() {
        let c = Config::parse(
            Path::new("p.toml"),
            r#"
            [grpc]
            socket = "/tmp/p.sock"
            socket_mode = "0600"
            [policy]
            default = "model"
            goal = 0.8
            horizon = "5m"
            [observe]
            window = "500ms"
            windows = 7
            "#,
        )
        .unwrap();
        assert_eq!(c.grpc.socket, Path::new("/tmp/p.sock"));
        assert_eq!(c.policy.horizon, Duration::from_secs(300));
        assert_eq!(c.observe.window, Duration::from_millis(500));
    }

    #[test]
    fn the_goal_bound_defaults_to_the_point_prediction_and_takes_the_lower_bound() {
        assert_eq!(Config::default().policy.goal_bound, GoalBound::Point);
        let c = Config::parse(
            Path::new("p.toml"),
            "[policy]\ngoal_bound = \"lower-bound\"",
        )
        .unwrap();
        assert_eq!(c.policy.goal_bound, GoalBound::LowerBound);
        let refused = Config::parse(Path::new("p.toml"), "[policy]\ngoal_bound = \"upper\"")
            .expect_err("not a bound");
        assert!(refused.to_string().contains("p.toml"), "{refused}");
    }

    #[test]
    fn a_slow_exporter_gets_a_longer_timeout_and_fewer_scrapes() {
        let c = Config::parse(
            Path::new("p.toml"),
            "[observe]\nscrape_timeout = \"8s\"\nscrape_interval = \"2s\"\ncommand_timeout = \"1s\"",
        )
        .unwrap();
        let t = c.source_timeouts();
        assert_eq!(t.scrape, Duration::from_secs(8));
        assert_eq!(t.command, Duration::from_secs(1));
        let base = c.protocol().unwrap();
        let pulled = c.protocol_for(&base, true);
        assert_eq!(pulled.window, Duration::from_secs(2));
        assert_eq!(pulled.gauge_polls, 1, "one read per 2 s window");
        assert_eq!(pulled.windows, base.windows);
        // A pushed sample or a perf counter costs nothing to read: unchanged.
        assert_eq!(c.protocol_for(&base, false), base);
        // The default reads at every window boundary, as before the setting existed.
        let d = Config::default();
        let p = d.protocol().unwrap();
        assert_eq!(d.protocol_for(&p, true), p);
        assert_eq!(
            d.source_timeouts(),
            placed_host::observe::SourceTimeouts::default()
        );
    }

    #[test]
    fn bad_values_are_named() {
        let bad = |text: &str| {
            Config::parse(Path::new("p.toml"), text)
                .unwrap_err()
                .to_string()
        };
        assert!(bad("[policy]\ngoal = 3.0").contains("policy.goal = 3 is outside (0, 2]"));
        assert!(bad("[policy]\ndefault = \"greedy\"").contains("greedy"));
        assert!(bad("[grpc]\nsocket_mode = \"rw\"").contains("octal"));
        assert!(bad("[grpc]\ntcp = \"0.0.0.0:7443\"").contains("needs grpc.tls"));
        assert!(bad("[grpc]\nmax_watchers = 0").contains("grpc.max_watchers = 0 is outside"));
        assert!(
            bad("[grpc]\nmax_unix_connections = 100000")
                .contains("grpc.max_unix_connections = 100000 is outside")
        );
        assert!(
            bad("[grpc]\nmax_connections_per_peer = 0")
                .contains("grpc.max_connections_per_peer = 0 is outside")
        );
        assert!(
            bad("[grpc]\nhandshake_timeout = \"0s\"")
                .contains("grpc.handshake_timeout = 0ns is outside")
        );
        assert!(bad("[daemon]\nstate_fil = \"/x\"").contains("state_fil"));
        assert!(bad("[observe]\nwindows = 3").contains("too small to reach the confidence"));
        assert!(bad("[observe]\nwindow = \"0s\"").contains("window is empty"));
        assert!(bad("[policy]\nmigration = \"teleport\"").contains("teleport"));
        assert!(bad("[observe]\nmax_foreign_load = 2.0").contains("outside [0, 1]"));
        assert!(bad("[observe]\nscrape_timeout = \"0s\"").contains("observe.scrape_timeout"));
        assert!(bad("[observe]\nscrape_interval = \"2m\"").contains("observe.scrape_interval"));
        for drift in ["0", "-0.1", "nan", "inf"] {
            let e = bad(&format!("[policy]\ndrift = {drift}"));
            assert!(e.contains("policy.drift = "), "{e}");
            assert!(e.contains("must be a number above 0"), "{e}");
        }
        assert!(bad("[policy]\nthrottle_mib_per_s = 0").contains("policy.throttle_mib_per_s = 0"));
        assert!(bad("[policy]\non_override = \"fight\"").contains("fight"));
        assert!(bad("[policy]\nreassert_limit = 0").contains("on_override = \"leave\""));
        assert!(bad("[policy]\nreassert_window = \"0s\"").contains("policy.reassert_window"));
        let c = Config::parse(Path::new("p.toml"), "[policy]\non_override = \"reassert\"")
            .expect("a valid override policy");
        assert_eq!(c.policy.on_override, OnOverride::Reassert);
        assert_eq!(Config::default().policy.on_override, OnOverride::Adopt);
        Config::parse(Path::new("p.toml"), "[policy]\ndrift = 0.3").expect("a valid drift");
    }

    #[test]
    fn cgroups_resync_and_socket_mode_are_checked() {
        let bad = |text: &str| {
            Config::parse(Path::new("p.toml"), text)
                .unwrap_err()
                .to_string()
        };
        for c in ["", "/", "/../..", "relative/x", "/a/./b", "/a//b", "/a/"] {
            let e = bad(&format!("[containers]\ncgroups = [{c:?}]"));
            assert!(e.contains("containers.cgroups entry"), "{c:?}: {e}");
        }
        Config::parse(
            Path::new("p.toml"),
            "[containers]\ncgroups = [\"/batch/jobs\"]",
        )
        .expect("an absolute path");
        let e = bad("[containers]\nresync_interval = \"0s\"");
        assert!(e.contains("below the minimum of 1s"), "{e}");
        for mode in ["0777", "7777", "0662", "4660"] {
            let e = bad(&format!("[grpc]\nsocket_mode = {mode:?}"));
            assert!(e.contains("every local user"), "{mode}: {e}");
        }
        Config::parse(Path::new("p.toml"), "[grpc]\nsocket_mode = \"0770\"").expect("0770");
        assert!(bad("[observe]\ncommand_user = \"\"").contains("command_user"));
        assert!(
            bad("[observe]\ncommand_allow = [\"bin/tool\"]")
                .contains("observe.command_allow entry \"bin/tool\" is not an absolute path")
        );
        for entry in [
            "var/log",
            "/",
            "/proc",
            "/sys/fs",
            "/dev",
            "/var/log/../../etc",
        ] {
            let e = bad(&format!("[observe]\npattern_files = [{entry:?}]"));
            assert!(e.contains("observe.pattern_files entry"), "{entry}: {e}");
        }
        Config::parse(
            Path::new("p.toml"),
            "[observe]\npattern_files = [\"/var/log/app\", \"/srv/bench.log\"]",
        )
        .expect("absolute paths");
    }

    #[test]
    fn long_values_are_clipped_in_refusals() {
        let long = "x".repeat(100_000);
        for text in [
            format!("[policy]\ndefault = \"{long}\""),
            format!("[policy]\nmigration = \"{long}\""),
            format!("[grpc]\nsocket_mode = \"{long}\""),
            format!("[containers]\ncgroups = [\"/{long}\"]"),
            format!("[daemon]\n{long} = 1"),
        ] {
            let e = Config::parse(Path::new("p.toml"), &text)
                .unwrap_err()
                .to_string();
            assert!(e.len() < 1000, "{} bytes: {}", e.len(), &e[..200]);
            assert!(e.contains("characters in all"), "{e}");
        }
    }

    #[test]
    fn a_missing_model_dir_is_a_warning() {
        let mut c = Config::default();
        c.daemon.model_dir = "/nonexistent/models".into();
        assert!(c.warnings()[0].contains("/nonexistent/models"));
        c.daemon.model_dir = std::env::temp_dir();
        assert!(c.warnings().is_empty());
    }
}
