//! Metric sources described as data (config, gRPC requests, the state file) and built on
//! demand, behind one concrete type so that a container's task can own whichever it has.
//!
//! [`MetricSource`] returns `impl Future`, which keeps it out of trait objects; [`AnySource`]
//! is the enum that dispatches to the four sources instead.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use placed_core::cpuset::CpuSet;

use super::command::{CommandConfig, CommandError, CommandSource, Commands};
use super::perf::{PerfError, PerfMetric, PerfSource};
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
        )
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
            Self::Pushed { .. } | Self::Command { .. } | Self::Perf { .. } => {}
        }
        Ok(())
    }

    /// Builds the source for a container whose cgroup (for perf) is `cgroup_dir` and
    /// whose PUs are `cpus`. A pushed source also returns the [`Reporter`] its data must be
    /// pushed into. A command source is built only as `commands` allows.
    pub async fn build(
        &self,
        name: &str,
        cgroup_dir: &Path,
        cpus: &CpuSet,
        commands: Commands,
    ) -> Result<(AnySource, Option<Reporter>), SpecError> {
        self.build_with(name, cgroup_dir, cpus, commands, &SourceTimeouts::default())
            .await
    }

    /// [`SourceSpec::build`] with the given bounds on a scrape and a command run.
    pub async fn build_with(
        &self,
        name: &str,
        cgroup_dir: &Path,
        cpus: &CpuSet,
        commands: Commands,
        timeouts: &SourceTimeouts,
    ) -> Result<(AnySource, Option<Reporter>), SpecError> {
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
                let run_as = match commands {
                    Commands::Refused => return Err(CommandError::NotAllowed.into()),
                    Commands::Own => None,
                    Commands::As(user) => Some(user),
                };
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
                (
                    AnySource::Perf(PerfSource::open(cgroup_dir, cpus, metric)?),
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
        }
    }
}

/// Any of the four sources.
#[derive(Debug)]
pub enum AnySource {
    Pushed(PushedSource),
    Prometheus(PrometheusSource),
    Command(CommandSource),
    Perf(PerfSource),
}

impl MetricSource for AnySource {
    fn describe(&self) -> String {
        match self {
            Self::Pushed(s) => s.describe(),
            Self::Prometheus(s) => s.describe(),
            Self::Command(s) => s.describe(),
            Self::Perf(s) => s.describe(),
        }
    }

    fn kind(&self) -> Kind {
        match self {
            Self::Pushed(s) => s.kind(),
            Self::Prometheus(s) => s.kind(),
            Self::Command(s) => s.kind(),
            Self::Perf(s) => s.kind(),
        }
    }

    fn is_pulled(&self) -> bool {
        match self {
            Self::Pushed(s) => s.is_pulled(),
            Self::Prometheus(s) => s.is_pulled(),
            Self::Command(s) => s.is_pulled(),
            Self::Perf(s) => s.is_pulled(),
        }
    }

    async fn poll(&mut self) -> Result<Vec<Reading>, SourceError> {
        match self {
            Self::Pushed(s) => s.poll().await,
            Self::Prometheus(s) => s.poll().await,
            Self::Command(s) => s.poll().await,
            Self::Perf(s) => s.poll().await,
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
