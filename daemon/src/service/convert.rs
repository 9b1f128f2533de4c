//! The daemon's own values to placed.v1 messages and back. Core values (machine,
//! placements, policies) are converted by [`placed_proto::convert`], which `placectl` shares.

use std::time::Duration;

use placed_host::observe::{Mode, PatternInput, SourceSpec, Stream};
use placed_proto::v1 as pb;
use tonic::Status;

use crate::lifecycle::ContainerView;
use crate::lifecycle::events::{EventKind, Sequenced};
use crate::state::{Lifecycle, OverrideRecord, PredictionRecord, VcpuSource};

pub fn state(s: Lifecycle) -> pb::ContainerState {
    placed_proto::convert::state_to_pb(s)
}

/// The runtime as the state file names it (`placed_host::containers::Runtime`'s names);
/// a name this daemon does not know is UNSPECIFIED rather than a guess.
pub fn runtime(name: &str) -> pb::ContainerRuntime {
    match name {
        "docker" => pb::ContainerRuntime::Docker,
        "podman" => pb::ContainerRuntime::Podman,
        "containerd" => pb::ContainerRuntime::Containerd,
        "crio" => pb::ContainerRuntime::Crio,
        "cri" => pb::ContainerRuntime::Cri,
        "pod" => pb::ContainerRuntime::Pod,
        "lxc" => pb::ContainerRuntime::Lxc,
        "systemd" => pb::ContainerRuntime::Systemd,
        "cgroup" => pb::ContainerRuntime::Cgroup,
        _ => pb::ContainerRuntime::Unspecified,
    }
}

fn vcpu_source(s: VcpuSource) -> pb::VcpuSource {
    match s {
        VcpuSource::Request => pb::VcpuSource::Request,
        VcpuSource::Quota => pb::VcpuSource::Quota,
        VcpuSource::Cpuset => pb::VcpuSource::Cpuset,
    }
}

/// Milliseconds since the epoch as a protobuf Timestamp.
pub fn timestamp(unix_ms: i64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: unix_ms.div_euclid(1000),
        // In 0..1_000_000_000 by construction.
        nanos: i32::try_from(unix_ms.rem_euclid(1000) * 1_000_000).unwrap_or(0),
    }
}

/// A length of time from a request's `field`: none when absent or zero, else at least
/// `min`; INVALID_ARGUMENT naming the field for anything else.
pub fn duration_from_pb(
    d: Option<&prost_types::Duration>,
    field: &str,
    min: Duration,
) -> Result<Option<Duration>, Status> {
    let Some(d) = d.filter(|d| d.seconds != 0 || d.nanos != 0) else {
        return Ok(None);
    };
    let whole = d.seconds >= 0 && (0..1_000_000_000).contains(&d.nanos);
    let value = u64::try_from(d.seconds)
        .ok()
        .filter(|_| whole)
        .map(|s| Duration::new(s, u32::try_from(d.nanos).unwrap_or(0)))
        .filter(|v| *v >= min);
    value.map(Some).ok_or_else(|| {
        super::status::bad_request(
            field,
            format!(
                "{field}: {}s {}ns; at least {} ms, or unset for none",
                d.seconds,
                d.nanos,
                min.as_millis()
            ),
        )
    })
}

pub fn duration(d: Duration) -> prost_types::Duration {
    prost_types::Duration {
        seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(d.subsec_nanos()).unwrap_or(0),
    }
}

pub fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

pub fn container(v: &ContainerView) -> pb::Container {
    let r = &v.record;
    let (placement_id, cpus, mems, units) = match &r.assigned {
        Some(a) => (
            a.placement.clone().unwrap_or_default(),
            a.cpus.to_string(),
            a.mems.to_string(),
            a.units.iter().map(|&u| count(u)).collect(),
        ),
        None => (String::new(), String::new(), String::new(), Vec::new()),
    };
    let detail = match &v.doing {
        Some(d) if r.detail.is_empty() => d.clone(),
        Some(d) => format!("{d}; {}", r.detail),
        None => r.detail.clone(),
    };
    pb::Container {
        id: r.id.clone(),
        name: r.name.clone(),
        runtime: runtime(&r.runtime) as i32,
        cgroup: r.id.clone(),
        vcpus: count(r.vcpus),
        vcpus_source: vcpu_source(r.vcpus_source) as i32,
        policy: Some(placed_proto::convert::policy_to_pb(&r.policy)),
        state: state(r.state) as i32,
        detail,
        placement_id,
        cpus,
        mems,
        units,
        model_id: r
            .prediction
            .as_ref()
            .map(|p| p.model_id.clone())
            .unwrap_or_default(),
        update_time: Some(timestamp(r.updated_unix_ms)),
        metric: r.metric.as_ref().map(metric_to_pb),
        on_override: r
            .on_override
            .map_or(pb::OnOverride::Unspecified, on_override) as i32,
        effective_on_override: on_override(v.on_override) as i32,
        cpuset_override: r.overridden.as_ref().map(cpuset_override),
        labels: r.labels.clone().into_iter().collect(),
        outcome: r.outcome.as_ref().map(outcome),
    }
}

/// A decision's outcome as the API shows it, on a container and on its event.
pub fn outcome(o: &placed_models::live::Outcome) -> pb::DecisionOutcome {
    pb::DecisionOutcome {
        model_id: o.model_id.clone(),
        provenance: provenance(o.provenance) as i32,
        placement_id: o.placement.clone(),
        predicted: o.predicted,
        interval_low: o.interval.map_or(0.0, |i| i.low),
        interval_high: o.interval.map_or(0.0, |i| i.high),
        interval_level: o.interval.map_or(0.0, |i| i.level),
        measured: o.measured,
        realized: o.realized,
        error_percent: o.error(),
        inside_interval: o.inside() == Some(true),
        goal: o.goal.unwrap_or(0.0),
        goal_kept: o.goal_kept() == Some(true),
        time: Some(timestamp(o.unix_ms)),
    }
}

/// A model's live accuracy as the API shows it.
pub fn live(m: &crate::lifecycle::ModelLive) -> pb::LiveAccuracy {
    let s = &m.summary;
    pb::LiveAccuracy {
        model_id: m.model_id.clone(),
        provenance: provenance(m.provenance) as i32,
        decisions: count(s.decisions),
        scored: count(s.scored),
        mean_error_percent: s.mean_error.unwrap_or(0.0),
        worst_error_percent: s.worst_error.unwrap_or(0.0),
        with_interval: count(s.with_interval),
        covered: count(s.covered),
        with_goal: count(s.with_goal),
        goal_kept: count(s.goal_kept),
        gate: m.judgement.to_string(),
        stopped_since: m.stopped.as_ref().map(|st| timestamp(st.since_unix_ms)),
        stopped_reason: m
            .stopped
            .as_ref()
            .map(|st| st.reason.clone())
            .unwrap_or_default(),
    }
}

fn on_override(o: placed_core::reconcile::OnOverride) -> pb::OnOverride {
    placed_proto::convert::on_override_to_pb(o)
}

/// An override as the API shows it, on a container and on its event.
pub fn cpuset_override(o: &OverrideRecord) -> pb::CpusetOverride {
    pb::CpusetOverride {
        expected_cpus: o.expected.cpus.to_string(),
        expected_mems: o.expected.mems.to_string(),
        found_cpus: o.found.cpus.to_string(),
        found_mems: o.found.mems.to_string(),
        action: placed_proto::convert::override_action_to_pb(o.action) as i32,
        time: Some(timestamp(o.unix_ms)),
    }
}

pub fn provenance(p: placed_models::Provenance) -> pb::Provenance {
    match p {
        placed_models::Provenance::Real => pb::Provenance::Real,
        placed_models::Provenance::VirtualMachine => pb::Provenance::VirtualMachine,
        placed_models::Provenance::Simulated => pb::Provenance::Simulated,
    }
}

pub fn prediction(container: &str, p: &PredictionRecord) -> pb::PredictResponse {
    pb::PredictResponse {
        container: container.to_owned(),
        model_id: p.model_id.clone(),
        provenance: provenance(p.provenance) as i32,
        baseline_id: p.baseline.clone(),
        probe_id: p.probe.clone(),
        observations: p
            .observations
            .iter()
            .map(|o| pb::Observation {
                placement_id: o.placement.clone(),
                value: o.value,
                low: o.low,
                high: o.high,
                unit: o.source.clone(),
                windows: count(o.windows),
                dropped_windows: count(o.dropped),
            })
            .collect(),
        placements: p
            .placements
            .iter()
            .map(|x| pb::PredictedPlacement {
                placement_id: x.placement.clone(),
                relative: x.relative,
                spread: x.spread,
                interval_low: x.interval.map_or(0.0, |i| i.low),
                interval_high: x.interval.map_or(0.0, |i| i.high),
                interval_level: x.interval.map_or(0.0, |i| i.level),
                measured: x.measured,
            })
            .collect(),
        warnings: p.warnings.clone(),
        vcpus: count(p.vcpus),
        third_measurement: p.third.clone().unwrap_or_default(),
    }
}

pub fn event(s: &Sequenced) -> pb::WatchResponse {
    let e = &s.event;
    pb::WatchResponse {
        sequence: s.sequence,
        time: Some(timestamp(e.unix_ms)),
        container: e.container.clone(),
        kind: match e.kind {
            EventKind::Discovered => pb::EventKind::Discovered,
            EventKind::State => pb::EventKind::State,
            EventKind::Predicted => pb::EventKind::Predicted,
            EventKind::MigrationStarted => pb::EventKind::MigrationStarted,
            EventKind::MigrationFinished => pb::EventKind::MigrationFinished,
            EventKind::Vanished => pb::EventKind::Vanished,
            EventKind::Error => pb::EventKind::Error,
            EventKind::Overridden => pb::EventKind::Overridden,
            EventKind::Unmanaged => pb::EventKind::Unmanaged,
            EventKind::Reserved => pb::EventKind::Reserved,
            EventKind::Released => pb::EventKind::Released,
            EventKind::Claimed => pb::EventKind::Claimed,
            EventKind::Outcome => pb::EventKind::Outcome,
            EventKind::ModelStopped => pb::EventKind::ModelStopped,
            EventKind::ModelEnabled => pb::EventKind::ModelEnabled,
        } as i32,
        state: state(e.state) as i32,
        placement_id: e.placement.clone().unwrap_or_default(),
        message: e.message.clone(),
        cpuset_override: e.cpuset_override.as_ref().map(cpuset_override),
        labels: e.labels.clone().into_iter().collect(),
        outcome: e.outcome.as_ref().map(outcome),
    }
}

/// A stored metric source as the API shows it.
pub fn metric_to_pb(m: &SourceSpec) -> pb::MetricSpec {
    use pb::metric_spec::Source;
    let source = match m {
        SourceSpec::Pushed { counter } => Source::Pushed(pb::PushedMetric {
            unit: String::new(),
            total: *counter,
        }),
        SourceSpec::Prometheus { url, selector } => Source::Prometheus(pb::PrometheusMetric {
            url: url.clone(),
            selector: selector.clone(),
        }),
        SourceSpec::Command { argv, counter } => Source::Command(pb::CommandMetric {
            argv: argv.clone(),
            total: *counter,
        }),
        SourceSpec::Perf { ipc } => Source::Perf(pb::PerfMetric {
            counter: if *ipc {
                pb::PerfCounter::Ipc
            } else {
                pb::PerfCounter::Instructions
            } as i32,
        }),
        SourceSpec::Pattern { regex, mode, input } => {
            Source::Pattern(pattern_to_pb(regex, *mode, input))
        }
    };
    pb::MetricSpec {
        source: Some(source),
    }
}

fn pattern_to_pb(regex: &str, mode: Mode, input: &PatternInput) -> pb::PatternMetric {
    use pb::pattern_metric::Input;
    pb::PatternMetric {
        regex: regex.to_owned(),
        mode: match mode {
            Mode::Rate => pb::PatternMode::Rate,
            Mode::Total => pb::PatternMode::Total,
            Mode::Increment => pb::PatternMode::Increment,
        } as i32,
        input: Some(match input {
            PatternInput::Program { argv, stream } => Input::Program(pb::PatternProgram {
                argv: argv.clone(),
                stream: match stream {
                    Stream::Stdout => pb::PatternStream::Stdout,
                    Stream::Stderr => pb::PatternStream::Stderr,
                    Stream::Both => pb::PatternStream::Both,
                } as i32,
            }),
            PatternInput::File { path } => Input::File(path.display().to_string()),
        }),
    }
}

fn pattern_from_pb(p: &pb::PatternMetric) -> Result<SourceSpec, Status> {
    use pb::pattern_metric::Input;
    let mode = match pb::PatternMode::try_from(p.mode) {
        Ok(pb::PatternMode::Unspecified | pb::PatternMode::Rate) => Mode::Rate,
        Ok(pb::PatternMode::Total) => Mode::Total,
        Ok(pb::PatternMode::Increment) => Mode::Increment,
        Err(_) => {
            return Err(super::status::bad_request(
                "metric.pattern.mode",
                format!(
                    "metric.pattern.mode = {}: not a PatternMode this daemon knows (rate = 1, total = 2, increment = 3)",
                    p.mode
                ),
            ));
        }
    };
    let input = match &p.input {
        None => {
            return Err(super::status::bad_request(
                "metric.pattern.input",
                "a pattern metric needs a program or a file to read",
            ));
        }
        Some(Input::Program(program)) => PatternInput::Program {
            argv: program.argv.clone(),
            stream: match pb::PatternStream::try_from(program.stream) {
                Ok(pb::PatternStream::Unspecified | pb::PatternStream::Both) => Stream::Both,
                Ok(pb::PatternStream::Stdout) => Stream::Stdout,
                Ok(pb::PatternStream::Stderr) => Stream::Stderr,
                Err(_) => {
                    return Err(super::status::bad_request(
                        "metric.pattern.program.stream",
                        format!(
                            "metric.pattern.program.stream = {}: not a PatternStream this daemon knows (stdout = 1, stderr = 2, both = 3)",
                            program.stream
                        ),
                    ));
                }
            },
        },
        Some(Input::File(path)) => PatternInput::File { path: path.into() },
    };
    Ok(SourceSpec::Pattern {
        regex: p.regex.clone(),
        mode,
        input,
    })
}

/// A requested metric source, checked as far as it can be without the network: a
/// description that can never work is INVALID_ARGUMENT now, not a failure at the first
/// measurement.
pub fn metric_from_pb(m: &pb::MetricSpec) -> Result<Option<SourceSpec>, Status> {
    use pb::metric_spec::Source;
    let spec = match &m.source {
        None => return Ok(None),
        Some(Source::Pushed(p)) => SourceSpec::Pushed { counter: p.total },
        Some(Source::Prometheus(p)) => {
            if p.url.is_empty() || p.selector.is_empty() {
                return Err(super::status::bad_request(
                    "metric.prometheus",
                    "a Prometheus metric needs a url and a selector",
                ));
            }
            SourceSpec::Prometheus {
                url: p.url.clone(),
                selector: p.selector.clone(),
            }
        }
        Some(Source::Command(c)) => SourceSpec::Command {
            argv: c.argv.clone(),
            counter: c.total,
        },
        Some(Source::Pattern(p)) => pattern_from_pb(p)?,
        Some(Source::Perf(p)) => match pb::PerfCounter::try_from(p.counter) {
            Ok(pb::PerfCounter::Unspecified | pb::PerfCounter::Instructions) => {
                SourceSpec::Perf { ipc: false }
            }
            Ok(pb::PerfCounter::Ipc) => SourceSpec::Perf { ipc: true },
            Err(_) => {
                return Err(super::status::bad_request(
                    "metric.perf.counter",
                    format!(
                        "metric.perf.counter = {}: not a PerfCounter this daemon knows (instructions = 1, ipc = 2)",
                        p.counter
                    ),
                ));
            }
        },
    };
    spec.check()
        .map_err(|e| super::status::bad_request("metric", placed_core::text::error_line(&e)))?;
    Ok(Some(spec))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_source_survives_the_round_trip() {
        for spec in [
            SourceSpec::Pushed { counter: false },
            // A running total, from placectl's `--total`: it was once lost on the way in.
            SourceSpec::Pushed { counter: true },
            SourceSpec::Command {
                argv: vec!["cat".into(), "/run/app/requests".into()],
                counter: true,
            },
            SourceSpec::Prometheus {
                url: "http://127.0.0.1:9100/metrics".into(),
                selector: r#"ops_total{a="x", b!="y"}"#.into(),
            },
            SourceSpec::Command {
                argv: vec!["sh".into(), "-c".into(), "echo '4 2' | tr -d ' '".into()],
                counter: false,
            },
            SourceSpec::Perf { ipc: true },
            SourceSpec::Perf { ipc: false },
            SourceSpec::Pattern {
                regex: r"tps: ([0-9.]+)".into(),
                mode: Mode::Rate,
                input: PatternInput::Program {
                    argv: vec!["sysbench".into(), "--report-interval=1".into()],
                    stream: Stream::Stderr,
                },
            },
            SourceSpec::Pattern {
                regex: "GET /".into(),
                mode: Mode::Increment,
                input: PatternInput::File {
                    path: "/var/log/nginx/access.log".into(),
                },
            },
        ] {
            let back = metric_from_pb(&metric_to_pb(&spec)).map_err(|s| s.message().to_owned());
            assert_eq!(back, Ok(Some(spec)));
        }
    }

    #[test]
    fn bad_metric_requests_name_the_problem() {
        let selector = pb::MetricSpec {
            source: Some(pb::metric_spec::Source::Prometheus(pb::PrometheusMetric {
                url: "http://127.0.0.1:9100/metrics".into(),
                selector: r#"ops_total{a="x" b="y"}"#.into(),
            })),
        };
        let status = metric_from_pb(&selector).unwrap_err();
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        assert!(status.message().contains("expected , or }"), "{status:?}");
        let perf = pb::MetricSpec {
            source: Some(pb::metric_spec::Source::Perf(pb::PerfMetric {
                counter: 99,
            })),
        };
        let status = metric_from_pb(&perf).unwrap_err();
        assert!(status.message().contains("99"), "{status:?}");
        let empty = pb::MetricSpec {
            source: Some(pb::metric_spec::Source::Command(
                pb::CommandMetric::default(),
            )),
        };
        assert_eq!(
            metric_from_pb(&empty).unwrap_err().code(),
            tonic::Code::InvalidArgument
        );
        let pattern = |regex: &str, mode: i32, input| pb::MetricSpec {
            source: Some(pb::metric_spec::Source::Pattern(pb::PatternMetric {
                regex: regex.into(),
                mode,
                input,
            })),
        };
        let file = |p: &str| Some(pb::pattern_metric::Input::File(p.into()));
        for (spec, says) in [
            (
                pattern("(ops", 0, file("/var/log/a")),
                "invalid pattern regex",
            ),
            (
                pattern("ops", 9, file("/var/log/a")),
                "metric.pattern.mode = 9",
            ),
            (pattern("ops", 1, None), "a program or a file"),
            (pattern("ops", 1, file("log/a")), "not an absolute path"),
            (
                pattern(
                    "ops",
                    1,
                    Some(pb::pattern_metric::Input::Program(pb::PatternProgram {
                        argv: vec!["sh".into()],
                        stream: 7,
                    })),
                ),
                "stream = 7",
            ),
        ] {
            let status = metric_from_pb(&spec).unwrap_err();
            assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
            assert!(status.message().contains(says), "{says}: {status:?}");
        }
        // Mode and stream unset: a rate over both streams.
        let spec = metric_from_pb(&pattern(
            "ops",
            0,
            Some(pb::pattern_metric::Input::Program(pb::PatternProgram {
                argv: vec!["sh".into()],
                stream: 0,
            })),
        ))
        .unwrap();
        assert_eq!(
            spec,
            Some(SourceSpec::Pattern {
                regex: "ops".into(),
                mode: Mode::Rate,
                input: PatternInput::Program {
                    argv: vec!["sh".into()],
                    stream: Stream::Both,
                },
            })
        );
    }

    #[test]
    fn timestamps_keep_milliseconds_before_and_after_the_epoch() {
        let t = timestamp(1_700_000_000_123);
        assert_eq!((t.seconds, t.nanos), (1_700_000_000, 123_000_000));
        let t = timestamp(-1);
        assert_eq!((t.seconds, t.nanos), (-1, 999_000_000));
    }
}
