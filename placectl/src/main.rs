//! `placectl`: the operator's command line for placed.
//!
//! Parses flags and calls into the library; everything it prints comes from `placectl::cli`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, CommandFactory, Parser, Subcommand};
use placed_proto::v1 as pb;

use placectl::cli::{self, Exit, StatusError};
use placectl::client::{self, Target};
use placed_core::machine::{Machine, TopologySource};
use placed_core::placement;
use placed_core::policy::Policy;
use placed_core::reconcile::OnOverride;
use placed_host::enact::Host;
use placed_host::migrate::ModeKind;

#[derive(Parser, Debug)]
#[command(
    name = "placectl",
    version,
    about = "Inspect and drive placed, the NUMA placement daemon",
    after_help = Exit::help_table()
)]
struct Cli {
    /// Print JSON (schemas in docs/cli-json.md) instead of tables.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

/// Where the daemon is, for the commands that talk to it (and only on those).
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Daemon connection")]
struct DaemonArgs {
    /// The daemon's Unix socket.
    #[arg(long, env = "PLACED_SOCKET", default_value = client::DEFAULT_SOCKET, value_name = "PATH")]
    socket: PathBuf,
    /// A remote daemon over TCP with TLS, e.g. https://host:7443 (instead of the socket).
    #[arg(long, value_name = "URL", requires = "ca")]
    addr: Option<String>,
    /// CA certificate (PEM) the remote daemon's certificate is checked against.
    #[arg(long, value_name = "FILE")]
    ca: Option<PathBuf>,
    /// Client certificate and key (PEM), when the daemon requires one.
    #[arg(long, value_name = "FILE", requires = "key")]
    cert: Option<PathBuf>,
    #[arg(long, value_name = "FILE", requires = "cert")]
    key: Option<PathBuf>,
    /// Give up on the daemon after this long (e.g. 30s, 2m); `watch` streams without limit.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = humantime::parse_duration)]
    timeout: Duration,
    /// When the container is busy (an evaluation or a move under way: ABORTED), try again
    /// until --timeout instead of failing (manage, predict, recommend, place).
    #[arg(long)]
    wait: bool,
}

impl DaemonArgs {
    fn target(&self) -> Target {
        match (&self.addr, &self.ca) {
            (Some(url), Some(ca)) => Target::Tls {
                url: url.clone(),
                ca: ca.clone(),
                identity: self.cert.clone().zip(self.key.clone()),
            },
            _ => Target::Unix(self.socket.clone()),
        }
    }
}

/// A policy as typed: a name and, for the model policy, a goal.
#[derive(Args, Debug, Clone)]
struct PolicyArgs {
    /// observe, model, conservative, aggressive, smart-aggressive, or pinned:<placement id>.
    #[arg(long, value_name = "POLICY")]
    policy: Option<String>,
    /// The model policy's goal: fraction of baseline performance to keep, in (0, 2].
    #[arg(long, value_name = "G", requires = "policy")]
    goal: Option<f64>,
}

impl PolicyArgs {
    fn to_pb(&self) -> Result<Option<pb::Policy>, placed_core::policy::PolicyError> {
        let Some(name) = &self.policy else {
            return Ok(None);
        };
        // The daemon fills in its configured goal when none is given (goal 0).
        let goal = self.goal.unwrap_or(0.9);
        let policy = Policy::parse(name, goal)?;
        let mut pb = placed_proto::convert::policy_to_pb(&policy);
        if self.goal.is_none() {
            pb.goal = 0.0;
        }
        Ok(Some(pb))
    }
}

#[derive(Subcommand, Debug, Clone)]
enum Command {
    /// Show a machine's topology summary and scheduling concerns (no daemon needed).
    Topology {
        #[command(flatten)]
        machine: MachineArgs,
    },
    /// List the important placements for a container of N vCPUs (no daemon needed).
    Placements {
        /// vCPUs of the container.
        #[arg(long)]
        vcpus: usize,
        #[command(flatten)]
        machine: MachineArgs,
    },
    /// Put a container on CPUs and memory nodes of this host, bringing its memory along.
    Move(cli::MoveArgs),
    /// Show a container's cpuset, tasks and memory per NUMA node.
    Inspect {
        /// The container (same forms as for `move`).
        container: String,
    },
    /// List the containers the daemon manages; with --host, every container of this host
    /// (Docker, containerd/Kubernetes, CRI-O, podman, LXC, systemd units), no daemon needed.
    Containers {
        #[arg(long)]
        host: bool,
        #[command(flatten)]
        daemon: DaemonArgs,
    },
    /// The daemon's state: machine class, containers per state, models.
    Status {
        #[command(flatten)]
        daemon: DaemonArgs,
    },
    /// Hand a container to the daemon, or change how it manages it.
    Manage {
        container: String,
        #[command(flatten)]
        daemon: DaemonArgs,
        /// vCPUs; default: from the container's CPU quota, else its cpuset.
        #[arg(long)]
        vcpus: Option<u32>,
        #[command(flatten)]
        policy: PolicyArgs,
        /// How to observe it: `pushed`, `perf`, `ipc`, `prometheus URL SELECTOR` (the
        /// selector verbatim, spaces and quotes included), `command PROGRAM ARGS...`
        /// (split as a shell splits words: `command sh -c 'echo 42'`), or `pattern REGEX
        /// [--mode rate|total|increment] [--stream stdout|stderr|both] -- PROGRAM ARGS...`
        /// or `pattern REGEX [--mode ...] --file PATH` (the regex first, one word; its first
        /// group is the number).
        #[arg(long, value_name = "SPEC")]
        metric: Option<String>,
        /// What the daemon does when something else (systemd, the kubelet, docker update)
        /// changes the container's cpuset: write its placement back, adopt the new cpuset
        /// and stop moving it, or only report it. Default: the daemon's policy.on_override.
        #[arg(long, value_name = "WHAT", value_parser = ["reassert", "adopt", "leave"])]
        on_override: Option<String>,
    },
    /// Hand a container back: the daemon stops managing it (an evaluation or a move in
    /// progress is stopped) and leaves it alone until it disappears or is managed again.
    Unmanage {
        container: String,
        #[command(flatten)]
        daemon: DaemonArgs,
        /// Put back the CPUs and memory nodes it had before the daemon first moved it
        /// (when it never moved it, the cpuset is left as it is).
        #[arg(long)]
        restore: bool,
    },
    /// Predicted performance of a container in every important placement, with the
    /// observations and the model behind it.
    Predict {
        container: String,
        #[command(flatten)]
        daemon: DaemonArgs,
    },
    /// What a policy would choose for a container, without moving it. Exit 1 when it would
    /// stay where it is.
    Recommend {
        container: String,
        #[command(flatten)]
        policy: PolicyArgs,
        #[command(flatten)]
        daemon: DaemonArgs,
    },
    /// Move a container now: to a placement, or where a policy says. Either becomes the
    /// container's policy (`--placement ID` pins it: policy `pinned:ID`), and the output
    /// says so, unless `--keep-policy`; without either, its own policy is applied.
    Place {
        container: String,
        /// An important placement id (placectl placements --vcpus N lists them).
        #[arg(long, conflicts_with = "policy")]
        placement: Option<String>,
        #[command(flatten)]
        policy: PolicyArgs,
        /// Move this once and keep the container's own policy (which may move it again at
        /// its next evaluation).
        #[arg(long)]
        keep_policy: bool,
        /// How memory follows (default: the daemon's config).
        #[arg(long, value_name = "MODE", value_enum)]
        migrate: Option<ModeKind>,
        #[command(flatten)]
        daemon: DaemonArgs,
    },
    /// Stream lifecycle events until interrupted or until the reader goes away
    /// (`placectl watch | head -1`). Times are RFC 3339, UTC.
    Watch {
        container: Option<String>,
        /// Start with the events kept after this sequence number (the last one seen).
        #[arg(long, value_name = "SEQUENCE")]
        after: Option<u64>,
        #[command(flatten)]
        daemon: DaemonArgs,
    },
    /// Push performance samples for a container (values as arguments, else one per line on
    /// stdin).
    Report {
        container: String,
        values: Vec<f64>,
        #[command(flatten)]
        daemon: DaemonArgs,
    },
    /// Print a shell completion script: `placectl completion bash > /etc/bash_completion.d/placectl`.
    Completion {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page, placectl(1), as roff (for packaging).
    #[command(hide = true)]
    Man,
}

impl Command {
    /// Where the daemon is, for a command that talks to it.
    fn daemon(&self) -> Option<&DaemonArgs> {
        match self {
            Command::Containers {
                host: false,
                daemon,
            }
            | Command::Status { daemon }
            | Command::Manage { daemon, .. }
            | Command::Unmanage { daemon, .. }
            | Command::Predict { daemon, .. }
            | Command::Recommend { daemon, .. }
            | Command::Place { daemon, .. }
            | Command::Watch { daemon, .. }
            | Command::Report { daemon, .. } => Some(daemon),
            _ => None,
        }
    }
}

/// Which machine: this host by default.
#[derive(Args, Debug, Clone)]
struct MachineArgs {
    /// An hwloc XML topology file (format v1 or v2) instead of this host.
    #[arg(long, value_name = "FILE", conflicts_with = "synthetic")]
    topology: Option<PathBuf>,
    /// An hwloc synthetic description, e.g. "pack:4 numa:1 l3:1 core:12 pu:2".
    #[arg(long, value_name = "DESCRIPTION")]
    synthetic: Option<String>,
    /// A machine file (JSON) adding measured interconnect bandwidth or concern overrides.
    #[arg(long, value_name = "FILE")]
    machine_file: Option<PathBuf>,
}

impl MachineArgs {
    fn load(&self) -> Result<Machine, placed_core::machine::MachineError> {
        let source = match (&self.topology, &self.synthetic) {
            (Some(p), _) => TopologySource::XmlFile(p.clone()),
            (None, Some(s)) => TopologySource::Synthetic(s.clone()),
            (None, None) => TopologySource::Host,
        };
        Machine::load(&source, self.machine_file.as_deref())
    }
}

fn json_text(v: &impl serde::Serialize) -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(v).map(|mut s| {
        s.push('\n');
        s
    })
}

fn run(cli: Cli) -> Result<Exit, Box<dyn std::error::Error>> {
    match cli.command {
        Command::Topology { machine } => {
            let m = machine.load()?;
            let summary = m.summary();
            let text = if cli.json {
                json_text(&summary)?
            } else {
                cli::render_topology(&summary)
            };
            Ok(cli::emit(&text))
        }
        Command::Placements { vcpus, machine } => {
            let m = machine.load()?;
            let set = placement::important_placements(&m, vcpus)?;
            let text = if cli.json {
                json_text(&cli::placements_json(&m, &set))?
            } else {
                cli::render_placements(&m, &set)
            };
            Ok(cli::emit(&text))
        }
        Command::Move(args) => {
            let mode = args.mode()?;
            let host = Host::detect()?;
            let container = host.resolve(&args.container)?;
            // Ctrl-C stops the move in good order (thawed, cpuset settled), never halfway.
            let report =
                cli::enact::apply_interruptibly(&host, &container, &args.cpus, &args.mems, &mode)?;
            let text = if cli.json {
                json_text(&cli::move_json(&report))?
            } else {
                cli::render_move(&report)
            };
            Ok(cli::emit(&text))
        }
        Command::Inspect { container } => {
            let host = Host::detect()?;
            let inspection = host.inspect(&host.resolve(&container)?)?;
            let text = if cli.json {
                json_text(&cli::inspect_json(&inspection))?
            } else {
                cli::render_inspect(&inspection)
            };
            Ok(cli::emit(&text))
        }
        Command::Completion { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "placectl", &mut script);
            Ok(cli::emit(&String::from_utf8_lossy(&script)))
        }
        Command::Man => {
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command())
                .section("1")
                .render(&mut page)?;
            Ok(cli::emit(&String::from_utf8_lossy(&page)))
        }
        Command::Containers { host: true, .. } => {
            let list = Host::detect()?.list()?;
            let text = if cli.json {
                json_text(&cli::containers_json(&list))?
            } else {
                cli::render_containers(&list)
            };
            Ok(cli::emit(&text))
        }
        command => {
            let Some(daemon) = command.daemon().cloned() else {
                return Err("not a daemon command".into());
            };
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            // A watch, or samples piped in as they happen, lasts as long as it lasts.
            let streaming = match &command {
                Command::Watch { .. } => true,
                Command::Report { values, .. } => values.is_empty(),
                _ => false,
            };
            let retry = daemon.wait
                && matches!(
                    command,
                    Command::Manage { .. }
                        | Command::Predict { .. }
                        | Command::Recommend { .. }
                        | Command::Place { .. }
                );
            runtime.block_on(async {
                let request = async {
                    if retry {
                        remote_until_free(&command, cli.json, &daemon).await
                    } else {
                        remote(command, cli.json, &daemon).await
                    }
                };
                if streaming {
                    return request.await;
                }
                match tokio::time::timeout(daemon.timeout, request).await {
                    Ok(r) => r,
                    // A timeout is "try again", as DEADLINE_EXCEEDED from the daemon is.
                    Err(_) => Err(StatusError(tonic::Status::deadline_exceeded(format!(
                        "no answer from placed within {} (--timeout)",
                        humantime::format_duration(daemon.timeout)
                    )))
                    .into()),
                }
            })
        }
    }
}

mod streams;

type Failure = Box<dyn std::error::Error>;
type Client =
    placed_proto::v1::placed_service_client::PlacedServiceClient<tonic::transport::Channel>;

/// How a daemon command's answer is printed: JSON for programs, a table for people.
#[derive(Debug, Clone, Copy)]
struct Output {
    json: bool,
}

impl Output {
    fn print(self, value: serde_json::Value, text: String) -> Result<Exit, Failure> {
        Ok(cli::emit(&if self.json {
            json_text(&value)?
        } else {
            text
        }))
    }
}

/// A daemon command sent again while the daemon answers that the container is busy
/// (ABORTED refuses before doing anything, so a retry repeats nothing), with growing pauses
/// up to 5 s; the caller's --timeout bounds the whole.
async fn remote_until_free(
    command: &Command,
    json: bool,
    daemon: &DaemonArgs,
) -> Result<Exit, Failure> {
    let mut pause = Duration::from_millis(250);
    let mut said = false;
    loop {
        match remote(command.clone(), json, daemon).await {
            Err(e) if busy(e.as_ref()) => {
                if !said {
                    eprintln!("placectl: {e}; waiting (--wait)");
                    said = true;
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(5));
            }
            r => return r,
        }
    }
}

fn busy(e: &(dyn std::error::Error + 'static)) -> bool {
    e.downcast_ref::<StatusError>()
        .is_some_and(|s| s.0.code() == tonic::Code::Aborted)
}

/// The commands that talk to the daemon.
async fn remote(command: Command, json: bool, daemon: &DaemonArgs) -> Result<Exit, Failure> {
    check_arguments(&command)?;
    let mut c = client::connect(&daemon.target()).await?;
    let out = Output { json };
    match command {
        Command::Status { .. } => {
            let s = c
                .get_status(pb::GetStatusRequest {})
                .await
                .map_err(StatusError)?
                .into_inner();
            out.print(cli::daemon::status_json(&s), cli::daemon::render_status(&s))
        }
        Command::Containers { .. } => {
            let containers = all_containers(&mut c).await?;
            out.print(
                cli::daemon::containers_json(&containers),
                cli::daemon::render_containers(&containers),
            )
        }
        Command::Manage {
            container,
            vcpus,
            policy,
            metric,
            on_override,
            ..
        } => {
            let on_override = on_override
                .map(|o| o.parse::<OnOverride>())
                .transpose()?
                .map_or(
                    pb::OnOverride::Unspecified,
                    placed_proto::convert::on_override_to_pb,
                );
            let request = pb::ManageRequest {
                container,
                vcpus: vcpus.unwrap_or(0),
                policy: policy.to_pb()?,
                metric: metric.map(|m| placectl::metric::parse(&m)).transpose()?,
                on_override: on_override as i32,
            };
            let r = c
                .manage(request)
                .await
                .map_err(StatusError)?
                .into_inner()
                .container
                .ok_or("the daemon answered Manage without the container")?;
            out.print(
                cli::daemon::container_json(&r),
                cli::daemon::render_containers(std::slice::from_ref(&r)),
            )
        }
        Command::Unmanage {
            container, restore, ..
        } => {
            let r = c
                .unmanage(pb::UnmanageRequest { container, restore })
                .await
                .map_err(StatusError)?
                .into_inner();
            out.print(
                cli::daemon::unmanaged_json(&r),
                cli::daemon::render_unmanaged(&r),
            )
        }
        Command::Predict { container, .. } => predict(&mut c, out, container).await,
        Command::Recommend {
            container, policy, ..
        } => recommend(&mut c, out, container, &policy).await,
        Command::Place {
            container,
            placement,
            policy,
            migrate,
            keep_policy,
            ..
        } => {
            place(
                &mut c,
                out,
                container,
                placement,
                &policy,
                migrate,
                keep_policy,
            )
            .await
        }
        Command::Watch {
            container, after, ..
        } => streams::watch(&mut c, out, container, after).await,
        Command::Report {
            container, values, ..
        } => streams::report(&mut c, out, &container, &values).await,
        Command::Topology { .. }
        | Command::Placements { .. }
        | Command::Move(_)
        | Command::Inspect { .. }
        | Command::Completion { .. }
        | Command::Man => Err("not a daemon command".into()),
    }
}

/// Parses what the command line gives as text (a metric, a policy, an override action)
/// before connecting: a mistake in it is the caller's, and is named as such whether or not
/// the daemon runs, not hidden behind "cannot reach placed".
fn check_arguments(command: &Command) -> Result<(), Failure> {
    match command {
        Command::Manage {
            policy,
            metric,
            on_override,
            ..
        } => {
            policy.to_pb()?;
            if let Some(m) = metric {
                placectl::metric::parse(m)?;
            }
            if let Some(o) = on_override {
                o.parse::<OnOverride>()?;
            }
        }
        Command::Recommend { policy, .. } | Command::Place { policy, .. } => {
            policy.to_pb()?;
        }
        _ => {}
    }
    Ok(())
}

/// Every managed container, page after page.
async fn all_containers(c: &mut Client) -> Result<Vec<pb::Container>, Failure> {
    let mut containers = Vec::new();
    let mut page_token = String::new();
    loop {
        let r = c
            .list_containers(pb::ListContainersRequest {
                page_size: 0,
                page_token,
            })
            .await
            .map_err(StatusError)?
            .into_inner();
        containers.extend(r.containers);
        if r.next_page_token.is_empty() {
            return Ok(containers);
        }
        page_token = r.next_page_token;
    }
}

async fn predict(c: &mut Client, out: Output, container: String) -> Result<Exit, Failure> {
    let p = c
        .predict(pb::PredictRequest {
            container: container.clone(),
        })
        .await
        .map_err(StatusError)?
        .into_inner();
    // Only to mark where the container is now: the prediction stands without it.
    let now = c
        .get_container(pb::GetContainerRequest { container })
        .await
        .ok()
        .and_then(|r| r.into_inner().container)
        .map(|c| c.placement_id);
    out.print(
        cli::daemon::prediction_json(&p),
        cli::daemon::render_prediction(&p, now.as_deref()),
    )
}

/// Exit 1 (a clean "no") when the policy would leave the container where it is.
async fn recommend(
    c: &mut Client,
    out: Output,
    container: String,
    policy: &PolicyArgs,
) -> Result<Exit, Failure> {
    let r = c
        .recommend(pb::RecommendRequest {
            container,
            policy: policy.to_pb()?,
        })
        .await
        .map_err(StatusError)?
        .into_inner();
    let code = out.print(
        cli::daemon::recommendation_json(&r),
        cli::daemon::render_recommendation(&r),
    )?;
    Ok(if code == Exit::Success && !r.would_move {
        Exit::No
    } else {
        code
    })
}

async fn place(
    c: &mut Client,
    out: Output,
    container: String,
    placement: Option<String>,
    policy: &PolicyArgs,
    migrate: Option<ModeKind>,
    keep_policy: bool,
) -> Result<Exit, Failure> {
    let migration = match migrate {
        None => pb::MigrationMode::Unspecified,
        Some(ModeKind::Kernel) => pb::MigrationMode::Kernel,
        Some(ModeKind::Fast) => pb::MigrationMode::Fast,
        Some(ModeKind::Throttled) => pb::MigrationMode::Throttled,
    };
    // A placement or a policy given to `place` becomes the container's policy (a
    // placement pins it there) unless kept: said in the output, never done silently.
    let new_policy = placement
        .as_ref()
        .map(|id| format!("pinned:{id}"))
        .or_else(|| policy.policy.clone())
        .filter(|_| !keep_policy);
    let r = c
        .place(pb::PlaceRequest {
            container,
            placement_id: placement.unwrap_or_default(),
            policy: policy.to_pb()?,
            migration: migration as i32,
            keep_policy,
        })
        .await
        .map_err(StatusError)?
        .into_inner();
    out.print(
        cli::daemon::place_json(&r, new_policy.as_deref()),
        cli::daemon::render_place(&r, new_policy.as_deref()),
    )
}

fn main() -> std::process::ExitCode {
    // SAFETY: first statement of main, before any thread exists.
    unsafe { placed_core::machine::quiet_hwloc() };
    let cli = match placed_core::exit::parse_args::<Cli>() {
        Ok(cli) => cli,
        Err(code) => return code.into(),
    };
    // Over TLS, and whether with a client certificate: a connection the daemon closes
    // under a call is explained by what the client sent.
    let tls_identity = cli.command.daemon().and_then(|d| match d.target() {
        Target::Tls { identity, .. } => Some(identity.is_some()),
        Target::Unix(_) => None,
    });
    match run(cli) {
        Ok(code) => code.into(),
        Err(e) => {
            let tls = cli::tls::failure(e.as_ref()).or_else(|| {
                tls_identity.and_then(|with| cli::tls::closed_by_daemon(e.as_ref(), with))
            });
            let line = match &tls {
                // The TLS case and its advice, instead of "transport error" or "operation
                // was canceled" and the causes that only hide it.
                Some(why) => match e.downcast_ref::<placectl::client::ConnectError>() {
                    Some(c) => format!("{c}: {why}"),
                    None => format!("the TLS connection to the daemon failed: {why}"),
                },
                None if cli::exit::tls_refused(e.as_ref())
                    || e.source().is_some_and(cli::exit::tls_refused) =>
                {
                    format!("{} ({})", cli::error_line(e.as_ref()), cli::exit::TLS_HINT)
                }
                None => cli::error_line(e.as_ref()),
            };
            eprintln!("placectl: error: {line}");
            // A named TLS case carries its own code: under load the same refusal reached
            // the client with or without an InvalidData error in the chain (CI saw the
            // "closed" line with exit 4 once).
            tls.map_or_else(|| cli::exit_of(e.as_ref()), |why| why.exit())
                .into()
        }
    }
}
