//! `placectl move`, `placectl inspect` and `placectl containers`: what they take and what
//! they print. The work is [`placed_host::enact::Host`]'s.

use std::fmt::Write;

use placed_core::cpuset::{CpuSet, NodeSet};
use placed_host::containers::{Container, short_id as short};
use placed_host::enact::{self, ApplyOptions, ApplyReport, Host, Inspection};
use placed_host::migrate::{self, Mode, ModeKind, NodeBytes};
use placed_host::stop::{OnHangup, SignalError, SignalWatch, Stop};

use super::human_bytes;
use super::table::Table;

/// `placectl move CONTAINER --cpus LIST --mems LIST [--migrate MODE]`.
#[derive(Debug, Clone, clap::Args)]
pub struct MoveArgs {
    /// The container: a Docker or podman name or id, `lxc:NAME`, `pod:UID`, a systemd
    /// unit (`NAME.service`), a cgroup path (`/a/b` or `cgroup:a/b`), or `RUNTIME:ID`.
    pub container: String,
    /// The CPUs (PUs) to run on, in cpulist syntax (`0-3,8`).
    #[arg(long, value_name = "LIST")]
    pub cpus: CpuSet,
    /// The NUMA nodes for its memory, in cpulist syntax.
    #[arg(long, value_name = "LIST")]
    pub mems: NodeSet,
    /// How the memory follows.
    #[arg(long, value_enum, default_value_t = ModeKind::Kernel)]
    pub migrate: ModeKind,
    /// Fast mode: worker threads (default: one per CPU, at most 8).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// Fast mode: do not freeze the container while its pages move.
    #[arg(long)]
    pub no_freeze: bool,
    /// Throttled mode: bytes per second, e.g. 100M or 1G (default 100M).
    #[arg(long, value_name = "RATE", value_parser = migrate::parse_rate)]
    pub bandwidth: Option<u64>,
}

impl MoveArgs {
    /// The validated mode: flags of one mode are refused with another.
    pub fn mode(&self) -> Result<Mode, String> {
        match self.migrate {
            ModeKind::Kernel => {
                if self.workers.is_some() || self.no_freeze || self.bandwidth.is_some() {
                    return Err(
                        "--workers, --no-freeze and --bandwidth need --migrate fast or throttled"
                            .into(),
                    );
                }
                Ok(Mode::Kernel)
            }
            ModeKind::Fast => {
                if self.bandwidth.is_some() {
                    return Err("--bandwidth is for --migrate throttled".into());
                }
                match self.workers {
                    Some(0) => Err("--workers must be at least 1".into()),
                    w => Ok(Mode::Fast {
                        workers: w.unwrap_or_else(migrate::default_workers),
                        freeze: !self.no_freeze,
                    }),
                }
            }
            ModeKind::Throttled => {
                if self.workers.is_some() || self.no_freeze {
                    return Err("--workers and --no-freeze are for --migrate fast (throttled never freezes)".into());
                }
                Ok(Mode::Throttled {
                    bytes_per_sec: self.bandwidth.unwrap_or(100 << 20),
                })
            }
        }
    }
}

/// Why `placectl move` failed.
#[derive(Debug, thiserror::Error)]
pub enum MoveError {
    #[error(transparent)]
    Apply(#[from] enact::Error),
    /// A signal stopped the move; `state` says where the container was left.
    #[error("interrupted by {signal}; {state}")]
    Interrupted {
        signal: &'static str,
        state: String,
        /// The apply's own error, when it failed as well.
        #[source]
        cause: Option<Box<enact::Error>>,
    },
    #[error(transparent)]
    Signals(#[from] SignalError),
}

/// `placectl move`: [`Host::apply_with`], stopped in good order by SIGINT, SIGTERM or
/// SIGHUP.
///
/// A fast move freezes the container, and only this process thaws it: killed by Ctrl-C
/// halfway, it would leave the container frozen. So for the length of the apply the
/// signals are taken by a [`SignalWatch`], which sets the apply's `cancel` flag (the
/// [`Stop`]'s): the workers stop, the cpuset is finished (fast) or left on both nodes
/// (throttled), and the freeze guard thaws, before this returns [`MoveError::Interrupted`].
/// [`Host::thaw_all`] runs afterwards as a backstop. SIGKILL cannot be caught; the daemon's
/// start-up thaws what such a kill leaves.
pub fn apply_interruptibly(
    host: &Host,
    container: &Container,
    cpus: &CpuSet,
    mems: &NodeSet,
    mode: &Mode,
) -> Result<ApplyReport, MoveError> {
    let stop = Stop::new();
    let watch = SignalWatch::start(&stop, OnHangup::Stop, |signal| {
        eprintln!(
            "placectl: {signal}: stopping the migration; the container is thawed and its \
             cpuset settled before placectl exits"
        );
    })?;
    let opts = ApplyOptions {
        cancel: Some(stop.flag()),
        hold: migrate::HoldPoint::from_env(),
        ..ApplyOptions::default()
    };
    let result = host.apply_with(container, cpus, mems, mode, &opts);
    let Some(signal) = watch.finish() else {
        return Ok(result?);
    };
    let thawed = host.thaw_all();
    let mut state = match &result {
        Ok(r) => interrupted_state(r),
        Err(enact::Error::Failed { rollback, .. }) => {
            format!("the move failed as well; {rollback}")
        }
        Err(_) => "the move failed before anything was written".to_owned(),
    };
    if thawed > 0 {
        let _ = write!(state, "; {thawed} cgroup(s) still frozen were thawed");
    }
    Err(MoveError::Interrupted {
        signal: signal.name(),
        state,
        cause: result.err().map(Box::new),
    })
}

/// Where an interrupted but completed apply left the container.
fn interrupted_state(r: &ApplyReport) -> String {
    let m = &r.migration;
    let mut s = if m.cancelled {
        format!(
            "the migration stopped early ({} moved by the workers); the container is on cpus {} \
             mems {}",
            human_bytes(m.workers.as_ref().map_or(0, |w| w.bytes_moved)),
            r.after.cpus,
            r.after.mems
        )
    } else {
        format!(
            "the move had already completed: the container is on cpus {} mems {}",
            r.after.cpus, r.after.mems
        )
    };
    let _ = write!(
        s,
        ", {} still on nodes outside {}",
        human_bytes(m.left_on_old_nodes),
        r.after.mems
    );
    if m.frozen_for.is_some() {
        s.push_str("; it was frozen and is thawed");
    }
    for w in &r.warnings {
        let _ = write!(s, "; {w}");
    }
    s
}

fn duration(d: std::time::Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.0} µs", s * 1e6)
    }
}

fn per_node(b: &NodeBytes) -> String {
    if b.0.is_empty() {
        return "-".into();
    }
    b.0.iter()
        .map(|(n, v)| format!("N{n} {}", human_bytes(*v)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn who(c: &Container) -> String {
    format!(
        "{} ({} {}, cgroup {})",
        c.label(),
        c.runtime,
        short(&c.id),
        c.cgroup
    )
}

fn mode_text(m: &Mode) -> String {
    match m {
        Mode::Kernel => "kernel (cpuset write)".into(),
        Mode::Fast { workers, freeze } => {
            format!(
                "fast ({workers} workers{})",
                if *freeze { ", frozen" } else { "" }
            )
        }
        Mode::Throttled { bytes_per_sec } => {
            format!("throttled ({}/s)", human_bytes(*bytes_per_sec))
        }
    }
}

/// `placectl move`: what changed and what moved.
pub fn render_move(r: &ApplyReport) -> String {
    let mut o = String::new();
    let m = &r.migration;
    let _ = writeln!(o, "Moved     {}", who(&r.container));
    let _ = writeln!(
        o,
        "Cpuset    cpus {} mems {}  ->  cpus {} mems {}  (cgroup {}, {} cgroup{})",
        r.before.cpus,
        r.before.mems,
        r.after.cpus,
        r.after.mems,
        r.version,
        r.cgroups,
        if r.cgroups == 1 { "" } else { "s" }
    );
    let _ = writeln!(o, "Mode      {}", mode_text(&m.mode));
    let rate = if m.bytes_moved > 0 {
        format!(", {}/s", human_bytes(m.throughput()))
    } else {
        String::new()
    };
    let frozen = m
        .frozen_for
        .map(|f| format!(", frozen {}", duration(f)))
        .unwrap_or_default();
    let _ = writeln!(
        o,
        "Memory    {} moved in {}{rate}{frozen}",
        human_bytes(m.bytes_moved),
        duration(m.duration)
    );
    let _ = writeln!(o, "          before: {}", per_node(&m.before));
    let _ = writeln!(o, "          after:  {}", per_node(&m.after));
    let _ = writeln!(
        o,
        "          still on the old nodes: {}",
        human_bytes(m.left_on_old_nodes)
    );
    if let Some(w) = &m.workers {
        let failed: u64 = w.pages_failed.values().sum();
        if failed > 0 || w.processes_exited > 0 || w.processes_appeared > 0 {
            let reasons: Vec<String> = w
                .pages_failed
                .iter()
                .map(|(k, v)| format!("{v} {k}"))
                .collect();
            let _ = writeln!(
                o,
                "Workers   {} processes ({} exited, {} appeared); pages not moved: {}",
                w.processes,
                w.processes_exited,
                w.processes_appeared,
                if reasons.is_empty() {
                    "none".into()
                } else {
                    reasons.join(", ")
                }
            );
        }
        if w.shared_pages_skipped {
            let _ = writeln!(
                o,
                "Warning   no CAP_SYS_NICE: pages shared with other processes stayed"
            );
        }
    }
    let _ = writeln!(
        o,
        "Verified  {} tasks; cpuset writes {}, total {}",
        r.tasks_checked,
        duration(r.cpuset_write),
        duration(r.total)
    );
    for w in &r.warnings {
        let _ = writeln!(o, "Warning   {w}");
    }
    o
}

/// `placectl inspect`: sets, tasks, memory per node.
pub fn render_inspect(i: &Inspection) -> String {
    let mut o = String::new();
    let s = &i.cpuset;
    let inherit = |empty: bool| if empty { " (inherited)" } else { "" };
    let _ = writeln!(o, "Container {}", who(&i.container));
    if let Some(pod) = &i.container.pod {
        let _ = writeln!(o, "Pod       {pod}");
    }
    let _ = writeln!(
        o,
        "Cpuset    cpus {}{} (effective {}), mems {}{} (effective {}), cgroup {}",
        s.cpus,
        inherit(s.cpus.is_empty()),
        s.effective_cpus,
        s.mems,
        inherit(s.mems.is_empty()),
        s.effective_mems,
        i.version
    );
    let frozen = match i.frozen {
        Some(true) => "frozen",
        Some(false) => "running",
        None => "no freezer",
    };
    let _ = writeln!(
        o,
        "Tasks     {} processes, {} threads in {} cgroup{}; {frozen}",
        i.processes,
        i.threads,
        i.cgroups,
        if i.cgroups == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        o,
        "Memory    {} resident: {}",
        human_bytes(i.memory.total()),
        per_node(&i.memory)
    );
    if i.disagreeing_tasks.is_empty() {
        let _ = writeln!(
            o,
            "Check     every task's allowed CPUs and nodes match the cpuset"
        );
    } else {
        for p in &i.disagreeing_tasks {
            let _ = writeln!(o, "Mismatch  {p}");
        }
    }
    o
}

/// `placectl containers`: one row each.
pub fn render_containers(list: &[Container]) -> String {
    if list.is_empty() {
        return "No containers found.\n".into();
    }
    let mut t = Table::new(["RUNTIME", "NAME", "ID", "POD", "CGROUP"]);
    for c in list {
        t.row([
            c.runtime.to_string(),
            c.name.clone().unwrap_or_else(|| "-".into()),
            short(&c.id).to_owned(),
            c.pod.clone().unwrap_or_else(|| "-".into()),
            c.cgroup.to_string(),
        ]);
    }
    t.render("")
}

/// `placectl move --json`: `placed.move/v1`.
pub fn move_json(r: &ApplyReport) -> serde_json::Value {
    with_schema("placed.move/v1", r)
}

/// `placectl inspect --json`: `placed.inspect/v1`.
pub fn inspect_json(i: &Inspection) -> serde_json::Value {
    with_schema("placed.inspect/v1", i)
}

/// The schema id of `placectl containers --host --json`: the host's containers as the
/// host shows them, a shape other than the daemon's list (`placed.containers/v1`).
pub const HOST_CONTAINERS_SCHEMA: &str = "placed.host-containers/v1";

/// `placectl containers --host --json`: [`HOST_CONTAINERS_SCHEMA`].
pub fn containers_json(list: &[Container]) -> serde_json::Value {
    serde_json::json!({ "schema": HOST_CONTAINERS_SCHEMA, "containers": list })
}

fn with_schema(schema: &str, v: &impl serde::Serialize) -> serde_json::Value {
    let mut value = serde_json::to_value(v).unwrap_or(serde_json::Value::Null);
    if let serde_json::Value::Object(map) = &mut value {
        map.insert("schema".into(), schema.into());
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        args: MoveArgs,
    }

    fn parse(args: &[&str]) -> Result<Mode, String> {
        let mut argv = vec!["placectl-move", "web", "--cpus", "0-3", "--mems", "0"];
        argv.extend_from_slice(args);
        Cli::try_parse_from(argv)
            .map_err(|e| e.to_string())?
            .args
            .mode()
    }

    #[test]
    fn multi_byte_ids_are_shortened_without_panicking() {
        let c = Container {
            runtime: placed_host::containers::Runtime::Cgroup,
            id: "ß".repeat(64),
            name: None,
            pod: None,
            cgroup: placed_host::cgroup::CgroupPath::root(),
        };
        let table = render_containers(std::slice::from_ref(&c));
        assert!(table.contains(&"ß".repeat(12)), "{table}");
        assert!(!table.contains(&"ß".repeat(13)), "{table}");
        // 64 bytes, not 64 characters: shown whole.
        let odd = Container {
            id: format!("{}{}", "a".repeat(11), "é".repeat(26) + "b"),
            ..c
        };
        assert_eq!(odd.id.len(), 64);
        assert!(render_containers(std::slice::from_ref(&odd)).contains(&odd.id));
    }

    /// A cancelled throttled move's report, as `Host::apply_with` returns it (the enact
    /// tests check that it does).
    fn cancelled_report() -> ApplyReport {
        let sets = |cpus: &str, mems: &str| placed_host::cgroup::plan::Sets {
            cpus: cpus.parse().unwrap(),
            mems: mems.parse().unwrap(),
        };
        ApplyReport {
            container: Container {
                runtime: placed_host::containers::Runtime::Cgroup,
                id: "web".into(),
                name: None,
                pod: None,
                cgroup: placed_host::cgroup::CgroupPath::root(),
            },
            version: placed_host::cgroup::Version::V2,
            before: sets("0-1", "0"),
            after: sets("2-3", "0-1"),
            cgroups: 1,
            cpuset_write: std::time::Duration::from_millis(1),
            migration: migrate::MigrationReport {
                mode: Mode::Throttled {
                    bytes_per_sec: 1 << 20,
                },
                bytes_moved: 1 << 20,
                duration: std::time::Duration::from_secs(1),
                frozen_for: None,
                before: NodeBytes::default(),
                after: NodeBytes::default(),
                left_on_old_nodes: 2 << 20,
                workers: None,
                cancelled: true,
            },
            tasks_checked: 1,
            total: std::time::Duration::from_secs(1),
            warnings: vec!["cancelled: 2 MiB stay on node 0".into()],
        }
    }

    #[test]
    fn a_cancelled_move_prints_its_warning() {
        let text = render_move(&cancelled_report());
        assert!(
            text.contains("Warning   cancelled: 2 MiB stay on node 0"),
            "{text}"
        );
    }

    #[test]
    fn flag_interactions() {
        assert_eq!(parse(&[]).unwrap(), Mode::Kernel);
        assert_eq!(
            parse(&["--migrate", "fast", "--workers", "3", "--no-freeze"]).unwrap(),
            Mode::Fast {
                workers: 3,
                freeze: false
            }
        );
        assert!(matches!(
            parse(&["--migrate", "fast"]).unwrap(),
            Mode::Fast { freeze: true, .. }
        ));
        assert_eq!(
            parse(&["--migrate", "throttled", "--bandwidth", "50M"]).unwrap(),
            Mode::Throttled {
                bytes_per_sec: 50 << 20
            }
        );
        assert_eq!(
            parse(&["--migrate", "throttled"]).unwrap(),
            Mode::Throttled {
                bytes_per_sec: 100 << 20
            }
        );
        for bad in [
            &["--workers", "2"][..],
            &["--bandwidth", "1G"],
            &["--migrate", "fast", "--bandwidth", "1G"],
            &["--migrate", "throttled", "--no-freeze"],
            &["--migrate", "fast", "--workers", "0"],
            &["--migrate", "slow"],
            &["--bandwidth", "lots", "--migrate", "throttled"],
        ] {
            assert!(parse(bad).is_err_and(|e| !e.is_empty()), "{bad:?}");
        }
        let err = Cli::try_parse_from(["m", "web", "--cpus", "0-x", "--mems", "0"]).unwrap_err();
        assert!(err.to_string().contains("0-x"), "{err}");
    }
}
