//! Metric sources described as data (config, gRPC requests, the state file) and built on
//! demand, behind one concrete type so that a container's task can own whichever it has.
//!
//! [`MetricSource`] returns `impl Future`, which keeps it out of trait objects; [`AnySource`]
//! is the enum that dispatches to the five sources instead.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use placed_core::cpuset::CpuSet;

use super::command::{CommandConfig, CommandError, CommandSource, Commands};
use super::pattern::{
    LineMetric, LinePattern, Mode, PatternConfig, PatternError, PatternInput, PatternSource,
};
use super::perf::{Perf, PerfError, PerfMetric, PerfSource};
use super::prometheus::text::{ParseError, Selector};
use super::prometheus::{PrometheusConfig, PrometheusError, PrometheusSource};
use super::pushed::{self, PushedSource, Reporter};
use super::source::{Kind, MetricSource, Reading, SourceError};

/// Bounds on one reading of a pulled source. A Prometheus exporter inside a saturated
/// container can take seconds to answer; the daemon's `[observe]` section sets these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceTimeouts {
    /// One Prometheus scrape, connection included.
    pub scrape: Duration,
    /// One run of a command source.
    pub command: Duration,
}

impl Default for SourceTimeouts {
    fn default() -> Self {
        Self {
            // An exporter on the same host answers in milliseconds; 2 s leaves room for a
            // busy one without letting a dead one stall a 0.5 s window for long.
            scrape: Duration::from_secs(2),
            command: Duration::from_secs(5),
        }
    }
}

/// How to observe a container.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SourceSpec {
    /// Pushed by the application or orchestrator (gRPC ReportMetric): a rate now (gauge)
    /// or a running total (counter).
    Pushed {
        #[serde(default)]
        counter: bool,
    },
    /// Scraped from a Prometheus text endpoint.
    Prometheus {
        url: String,
        /// `name` or `name{label="value"}`.
        selector: String,
    },
    /// An operator's command that prints a number.
    Command {
        argv: Vec<String>,
        #[serde(default)]
        counter: bool,
    },
    /// Hardware counters on the container's cgroup, where the PMU exists.
    Perf { ipc: bool },
    /// A number taken by regex from each matching line of a program's output or of a
    /// file as it grows (its first capture group; no group: 1).
    Pattern {
        regex: String,
        #[serde(default)]
        mode: Mode,
        input: PatternInput,
    },
}

/// What a source described by an API caller may do on this host: run commands (command
/// metrics and pattern programs), and read which files (pattern files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub commands: Commands,
    /// `observe.pattern_files`: files, and directories whose files, may be tailed.
    pub files: Vec<PathBuf>,
}

impl From<Commands> for Access {
    /// Commands as given, no files.
    fn from(commands: Commands) -> Self {
        Self {
            commands,
            files: Vec::new(),
        }
    }
}

/// A source that could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("invalid Prometheus selector {selector:?}")]
    Selector {
        selector: String,
        #[source]
        source: ParseError,
    },
    #[error(transparent)]
    Prometheus(#[from] PrometheusError),
    #[error(transparent)]
    Command(#[from] CommandError),
    #[error(transparent)]
    Perf(#[from] PerfError),
    #[error(transparent)]
    Pattern(#[from] PatternError),
}

impl SpecError {
    /// True when the description itself is wrong (bad selector, empty command), false
    /// when the host or the endpoint is not there.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            Self::Selector { .. }
                | Self::Command(CommandError::Empty)
                | Self::Prometheus(
                    PrometheusError::InvalidUrl { .. } | PrometheusError::UnsupportedScheme { .. }
                )
        ) || matches!(self, Self::Pattern(e) if e.is_bad_input())
    }
}

impl SourceSpec {
    /// Checks the description alone, touching neither the host nor the network: a
    /// selector that parses, an `http://` URL with a host, a command with a program. A
    /// request that fails here can never work; one that passes may still meet an endpoint
    /// that is down.
    pub fn check(&self) -> Result<(), SpecError> {
        match self {
            Self::Prometheus { url, selector } => {
                Selector::parse(selector).map_err(|source| SpecError::Selector {
                    selector: selector.clone(),
                    source,
                })?;
                super::prometheus::parse_url(url)?;
            }
            Self::Command { argv, .. } if argv.first().is_none_or(|p| p.is_empty()) => {
                return Err(CommandError::Empty.into());
            }
            Self::Pattern { regex, mode, input } => {
                LinePattern::new(regex, *mode)?;
                match input {
                    PatternInput::Program { argv, .. }
                        if argv.first().is_none_or(|p| p.is_empty()) =>
                    {
                        return Err(PatternError::from(CommandError::Empty).into());
                    }
                    // Only the path's form: the allow-list is the daemon's to check.
                    PatternInput::File { path } => {
                        super::pattern::check_form(path).map_err(PatternError::from)?;
                    }
                    PatternInput::Program { .. } => {}
                }
            }
            Self::Pushed { .. } | Self::Command { .. } | Self::Perf { .. } => {}
        }
        Ok(())
    }

    /// Builds the source for a container whose cgroup (for perf) is `cgroup_dir` and
    /// whose PUs are `cpus`. A pushed source also returns the [`Reporter`] its data must be
    /// pushed into. A command source or pattern program is built only as `access.commands`
    /// allows, a pattern file only under `access.files`.
    pub async fn build(
        &self,
        name: &str,
        cgroup_dir: &Path,
        cpus: &CpuSet,
        access: impl Into<Access>,
    ) -> Result<(AnySource, Option<Reporter>), SpecError> {
        self.build_with(name, cgroup_dir, cpus, access, &SourceTimeouts::default())
            .await
    }

    /// [`SourceSpec::build`] with the given bounds on a scrape and a command run.
    pub async fn build_with(
        &self,
        name: &str,
        cgroup_dir: &Path,
        cpus: &CpuSet,
        access: impl Into<Access>,
        timeouts: &SourceTimeouts,
    ) -> Result<(AnySource, Option<Reporter>), SpecError> {
        let access = access.into();
        Ok(match self {
            Self::Pushed { counter } => {
                let kind = if *counter { Kind::Counter } else { Kind::Gauge };
                let (reporter, source) = pushed::channel(name, kind);
                (AnySource::Pushed(source), Some(reporter))
            }
            Self::Prometheus { url, selector } => {
                let parsed = Selector::parse(selector).map_err(|source| SpecError::Selector {
                    selector: selector.clone(),
                    source,
                })?;
                let config = PrometheusConfig {
                    url: url.clone(),
                    selector: parsed,
                    kind: None,
                    timeout: timeouts.scrape,
                };
                (
                    AnySource::Prometheus(PrometheusSource::connect(config).await?),
                    None,
                )
            }
            Self::Command { argv, counter } => {
                if argv.is_empty() {
                    return Err(CommandError::Empty.into());
                }
                let run_as = run_as(access.commands)?;
                let config = CommandConfig {
                    run_as,
                    argv: argv.clone(),
                    kind: if *counter { Kind::Counter } else { Kind::Gauge },
                    timeout: timeouts.command,
                };
                (AnySource::Command(CommandSource::new(config)?), None)
            }
            Self::Perf { ipc } => {
                let metric = if *ipc {
                    PerfMetric::Ipc
                } else {
                    PerfMetric::InstructionsPerSecond
                };
                // No counter is opened here: they are open only while a measurement runs.
                (
                    AnySource::Perf(PerfSource::new(Perf::host(), cgroup_dir, cpus, metric)?),
                    None,
                )
            }
            Self::Pattern { regex, mode, input } => {
                let metric = LineMetric::new(LinePattern::new(regex, *mode)?);
                let run_as = match input {
                    PatternInput::Program { argv, .. } => {
                        if argv.first().is_none_or(|p| p.is_empty()) {
                            return Err(PatternError::from(CommandError::Empty).into());
                        }
                        run_as(access.commands).map_err(PatternError::from)?
                    }
                    PatternInput::File { .. } => None,
                };
                let config = PatternConfig {
                    name: name.to_owned(),
                    input: input.clone(),
                    metric,
                    run_as,
                    files: access.files,
                };
                (
                    AnySource::Pattern(PatternSource::start(config, self.describe())?),
                    None,
                )
            }
        })
    }

    /// In words, for status output.
    pub fn describe(&self) -> String {
        match self {
            Self::Pushed { counter } => {
                format!("pushed {}", if *counter { "counter" } else { "rate" })
            }
            Self::Prometheus { url, selector } => format!("prometheus {url} {selector}"),
            Self::Command { argv, .. } => {
                placed_core::text::clip(&format!("command {}", argv.join(" ")), 200)
            }
            Self::Perf { ipc } => format!("perf {}", if *ipc { "ipc" } else { "instructions/s" }),
            Self::Pattern { regex, mode, input } => placed_core::text::clip(
                &format!(
                    "pattern {} --mode {} {}",
                    quote(regex),
                    mode.name(),
                    input.describe()
                ),
                200,
            ),
        }
    }
}

/// Whom a command runs as under `commands`; refused when commands are off.
fn run_as(commands: Commands) -> Result<Option<super::command::RunAs>, CommandError> {
    match commands {
        Commands::Refused => Err(CommandError::NotAllowed),
        Commands::Own => Ok(None),
        Commands::As(user) => Ok(Some(user)),
    }
}

/// A regex as one shell word, as `placectl --metric` takes it back.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Any of the five sources.
#[derive(Debug)]
pub enum AnySource {
    Pushed(PushedSource),
    Prometheus(PrometheusSource),
    Command(CommandSource),
    Perf(PerfSource),
    Pattern(PatternSource),
}

impl AnySource {
    /// Counts on `cpus` from the next measurement on, for a source that counts per PU
    /// (perf); the others ignore it.
    pub fn count_on(&mut self, cpus: &CpuSet) {
        if let Self::Perf(s) = self {
            s.count_on(cpus);
        }
    }

    /// Whether the source stopped for good and must be built again to measure anything
    /// (a pattern program that exited). The others recover by themselves or not at all.
    pub fn ended(&self) -> bool {
        match self {
            Self::Pattern(s) => s.ended().is_some(),
            Self::Pushed(_) | Self::Prometheus(_) | Self::Command(_) | Self::Perf(_) => false,
        }
    }
}

impl MetricSource for AnySource {
    fn describe(&self) -> String {
        match self {
            Self::Pushed(s) => s.describe(),
            Self::Prometheus(s) => s.describe(),
            Self::Command(s) => s.describe(),
            Self::Perf(s) => s.describe(),
            Self::Pattern(s) => s.describe(),
        }
    }

    fn kind(&self) -> Kind {
        match self {
            Self::Pushed(s) => s.kind(),
            Self::Prometheus(s) => s.kind(),
            Self::Command(s) => s.kind(),
            Self::Perf(s) => s.kind(),
            Self::Pattern(s) => s.kind(),
        }
    }

    fn is_pulled(&self) -> bool {
        match self {
            Self::Pushed(s) => s.is_pulled(),
            Self::Prometheus(s) => s.is_pulled(),
            Self::Command(s) => s.is_pulled(),
            Self::Perf(s) => s.is_pulled(),
            Self::Pattern(s) => s.is_pulled(),
        }
    }

    fn begin(&mut self) -> Result<(), SourceError> {
        match self {
            Self::Pushed(s) => s.begin(),
            Self::Prometheus(s) => s.begin(),
            Self::Command(s) => s.begin(),
            Self::Perf(s) => s.begin(),
            Self::Pattern(s) => s.begin(),
        }
    }

    fn end(&mut self) {
        match self {
            Self::Pushed(s) => s.end(),
            Self::Prometheus(s) => s.end(),
            Self::Command(s) => s.end(),
            Self::Perf(s) => s.end(),
            Self::Pattern(s) => s.end(),
        }
    }

    async fn poll(&mut self) -> Result<Vec<Reading>, SourceError> {
        match self {
            Self::Pushed(s) => s.poll().await,
            Self::Prometheus(s) => s.poll().await,
            Self::Command(s) => s.poll().await,
            Self::Perf(s) => s.poll().await,
            Self::Pattern(s) => s.poll().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_round_trip_as_tagged_json() {
        let spec = SourceSpec::Prometheus {
            url: "http://127.0.0.1:9100/metrics".into(),
            selector: "ops_total{job=\"api\"}".into(),
        };
        let text = serde_json::to_string(&spec).unwrap();
        assert!(text.contains("\"kind\":\"prometheus\""), "{text}");
        assert_eq!(serde_json::from_str::<SourceSpec>(&text).unwrap(), spec);
        let err = serde_json::from_str::<SourceSpec>(r#"{"kind":"carrier-pigeon"}"#).unwrap_err();
        assert!(err.to_string().contains("carrier-pigeon"), "{err}");
    }

    #[tokio::test]
    async fn bad_descriptions_are_bad_input() {
        let dir = Path::new("/nonexistent");
        let cpus: CpuSet = "0".parse().unwrap();
        let e = SourceSpec::Prometheus {
            url: "http://127.0.0.1:1/metrics".into(),
            selector: "ops{".into(),
        }
        .build("c", dir, &cpus, Commands::Refused)
        .await
        .unwrap_err();
        assert!(e.is_bad_input(), "{e}");
        let e = SourceSpec::Command {
            argv: vec![],
            counter: false,
        }
        .build("c", dir, &cpus, Commands::Refused)
        .await
        .unwrap_err();
        assert!(e.is_bad_input(), "{e}");
        // An endpoint that is down is not the caller's fault.
        let e = SourceSpec::Prometheus {
            url: "http://127.0.0.1:1/metrics".into(),
            selector: "ops_total".into(),
        }
        .build("c", dir, &cpus, Commands::Refused)
        .await
        .unwrap_err();
        assert!(!e.is_bad_input(), "{e}");
        // Without a user to run them as, command sources are never built.
        let e = SourceSpec::Command {
            argv: vec!["sh".into(), "-c".into(), "id >&2".into()],
            counter: false,
        }
        .build("c", dir, &cpus, Commands::Refused)
        .await
        .unwrap_err();
        assert!(
            matches!(e, SpecError::Command(CommandError::NotAllowed)),
            "{e}"
        );
    }

    #[test]
    fn check_refuses_what_can_never_work_and_keeps_spaces_in_selectors() {
        let prometheus = |url: &str, selector: &str| SourceSpec::Prometheus {
            url: url.into(),
            selector: selector.into(),
        };
        let url = "http://127.0.0.1:9100/metrics";
        prometheus(url, r#"ops_total{a="x", b!="y"}"#)
            .check()
            .unwrap();
        let e = prometheus(url, r#"ops_total{a="x" b!="y"}"#)
            .check()
            .unwrap_err();
        assert!(e.is_bad_input(), "{e}");
        // The message names the selector; the cause says what is wrong in it.
        assert!(
            e.to_string().contains(r#"ops_total{a=\"x\" b!=\"y\"}"#),
            "{e}"
        );
        let cause = std::error::Error::source(&e).map(ToString::to_string);
        assert!(
            cause
                .as_deref()
                .is_some_and(|c| c.contains("expected , or }")),
            "{cause:?}"
        );
        for bad_url in [
            "https://host/metrics",
            "not a url",
            "http:///metrics",
            "file:///etc/shadow",
            "unix:///run/x.sock",
        ] {
            let e = prometheus(bad_url, "ops_total").check().unwrap_err();
            assert!(e.is_bad_input(), "{bad_url}: {e}");
        }
        let e = SourceSpec::Command {
            argv: vec![String::new()],
            counter: false,
        }
        .check()
        .unwrap_err();
        assert!(matches!(e, SpecError::Command(CommandError::Empty)), "{e}");
        SourceSpec::Command {
            argv: vec!["sh".into(), "-c".into(), "echo 42".into()],
            counter: false,
        }
        .check()
        .unwrap();
    }

    fn pattern(regex: &str, input: PatternInput) -> SourceSpec {
        SourceSpec::Pattern {
            regex: regex.into(),
            mode: Mode::Increment,
            input,
        }
    }

    fn program(argv: &[&str]) -> PatternInput {
        PatternInput::Program {
            argv: argv.iter().map(|a| (*a).to_owned()).collect(),
            stream: super::super::pattern::Stream::Stdout,
        }
    }

    #[test]
    fn pattern_specs_round_trip_and_default_to_rate_on_both_streams() {
        let spec = pattern("ops ([0-9]+)", program(&["sysbench", "cpu", "run"]));
        let text = serde_json::to_string(&spec).unwrap();
        assert_eq!(
            text,
            r#"{"kind":"pattern","regex":"ops ([0-9]+)","mode":"increment","input":{"program":{"argv":["sysbench","cpu","run"],"stream":"stdout"}}}"#
        );
        assert_eq!(serde_json::from_str::<SourceSpec>(&text).unwrap(), spec);
        let short: SourceSpec = serde_json::from_str(
            r#"{"kind":"pattern","regex":"x","input":{"file":{"path":"/var/log/a.log"}}}"#,
        )
        .unwrap();
        assert!(matches!(
            short,
            SourceSpec::Pattern {
                mode: Mode::Rate,
                ..
            }
        ));
        let e = serde_json::from_str::<SourceSpec>(
            r#"{"kind":"pattern","regex":"x","input":{"socket":{}}}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("socket"), "{e}");
        assert_eq!(
            pattern(
                "it's",
                PatternInput::File {
                    path: "/l/a".into()
                }
            )
            .describe(),
            r"pattern 'it'\''s' --mode increment --file /l/a"
        );
    }

    #[tokio::test]
    async fn pattern_descriptions_that_can_never_work_are_bad_input() {
        let cases = [
            pattern("(ops", program(&["sh"])),
            pattern("ops", program(&[])),
            pattern("ops", program(&[""])),
            pattern(
                "ops",
                PatternInput::File {
                    path: "log/a".into(),
                },
            ),
            pattern(
                "ops",
                PatternInput::File {
                    path: "/l/../etc/shadow".into(),
                },
            ),
        ];
        for spec in cases {
            let e = spec.check().unwrap_err();
            assert!(e.is_bad_input(), "{spec:?}: {e}");
        }
        // The allow-list is not the description's fault, and check leaves it to build.
        let outside = pattern(
            "ops",
            PatternInput::File {
                path: "/etc/shadow".into(),
            },
        );
        outside.check().unwrap();
        let cpus = CpuSet::new();
        let e = outside
            .build("c", Path::new("/"), &cpus, Commands::Refused)
            .await
            .unwrap_err();
        assert!(!e.is_bad_input(), "{e}");
        assert!(
            e.to_string().contains("observe.pattern_files is empty"),
            "{e}"
        );
        // A program is a command: refused where commands are.
        let e = pattern("ops", program(&["sh", "-c", "echo ops"]))
            .build("c", Path::new("/"), &cpus, Commands::Refused)
            .await
            .unwrap_err();
        assert!(
            matches!(
                &e,
                SpecError::Pattern(PatternError::Command(CommandError::NotAllowed))
            ),
            "{e}"
        );
    }

    #[tokio::test]
    async fn an_allowed_pattern_file_is_built_as_a_pushed_style_counter() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("app.log");
        std::fs::write(&log, "").unwrap();
        let access = Access {
            commands: Commands::Refused,
            files: vec![dir.path().to_owned()],
        };
        let (source, reporter) = pattern("done", PatternInput::File { path: log })
            .build("c", Path::new("/"), &CpuSet::new(), access)
            .await
            .unwrap();
        assert!(reporter.is_none());
        assert!(matches!(source, AnySource::Pattern(_)));
        assert_eq!(source.kind(), Kind::Counter);
        assert!(!source.is_pulled());
        assert!(!source.ended());
    }

    /// The daemon builds a source again when it ended: a pattern program that exited says
    /// so through `AnySource::ended`.
    #[tokio::test]
    async fn a_pattern_program_that_exited_is_an_ended_source() {
        let spec = pattern("done", program(&["sh", "-c", "echo done; exit 0"]));
        let (mut source, _) = spec
            .build("c", Path::new("/"), &CpuSet::new(), Commands::Own)
            .await
            .unwrap();
        for _ in 0..3000 {
            if source.ended() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(source.ended());
        let e = source.poll().await.unwrap_err();
        assert!(e.to_string().contains("exited (exit status: 0)"), "{e}");
    }

    #[tokio::test]
    async fn pushed_specs_come_with_their_reporter() {
        let (source, reporter) = SourceSpec::Pushed { counter: false }
            .build("web", Path::new("/"), &CpuSet::new(), Commands::Refused)
            .await
            .unwrap();
        assert!(matches!(source, AnySource::Pushed(_)));
        assert_eq!(source.kind(), Kind::Gauge);
        reporter.unwrap().report(5.0).unwrap();
    }
}
