//! `--metric` as typed on a command line, to the structured `MetricSpec` placed.v1 carries,
//! and back to JSON for `--json` output.
//!
//! A command's words are split as a POSIX shell splits them, so `command sh -c 'echo 42'`
//! is the argv `["sh", "-c", "echo 42"]`, passed to the daemon unchanged. A Prometheus
//! selector is everything after the URL, verbatim: its own quotes and spaces
//! (`{a="x", b!="y"}`) belong to PromQL, not to a shell.

use placed_proto::v1 as pb;
use serde_json::{Value, json};

/// What `--metric` accepts, for error messages.
const FORMS: &str = "pushed, perf, ipc, prometheus URL SELECTOR, or command PROGRAM ARGS...";

/// Why a `--metric` value cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricError {
    #[error("--metric {spec:?}: expected {FORMS}")]
    Unknown { spec: String },
    #[error(
        "--metric prometheus needs a URL and a selector: prometheus http://host:9100/metrics 'ops_total{{job=\"api\"}}'"
    )]
    PrometheusIncomplete,
    #[error("--metric command needs a program: command sh -c 'curl -s host/ops | jq .rate'")]
    NoProgram,
    #[error("--metric {spec:?}: a quote is not closed")]
    Unbalanced { spec: String },
}

/// Splits off the first whitespace-delimited word.
fn first_word(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find(char::is_whitespace) {
        Some(i) => (&s[..i], s[i..].trim_start()),
        None => (s, ""),
    }
}

/// `pushed`, `perf`, `ipc`, `prometheus URL SELECTOR`, `command PROGRAM ARGS...`.
pub fn parse(spec: &str) -> Result<pb::MetricSpec, MetricError> {
    use pb::metric_spec::Source;
    let (kind, rest) = first_word(spec);
    let source = match kind {
        "pushed" if rest.is_empty() => Source::Pushed(pb::PushedMetric::default()),
        "perf" if rest.is_empty() => Source::Perf(pb::PerfMetric {
            counter: pb::PerfCounter::Instructions as i32,
        }),
        "ipc" if rest.is_empty() => Source::Perf(pb::PerfMetric {
            counter: pb::PerfCounter::Ipc as i32,
        }),
        "prometheus" => {
            let (url, selector) = first_word(rest);
            let selector = selector.trim_end();
            // One layer of shell-style single quotes around the whole selector is taken
            // off: a selector never starts with a quote, so this cannot eat PromQL.
            let selector = selector
                .strip_prefix('\'')
                .and_then(|s| s.strip_suffix('\''))
                .unwrap_or(selector);
            if url.is_empty() || selector.is_empty() {
                return Err(MetricError::PrometheusIncomplete);
            }
            Source::Prometheus(pb::PrometheusMetric {
                url: url.into(),
                selector: selector.into(),
            })
        }
        "command" => {
            let argv =
                shlex::split(rest).ok_or_else(|| MetricError::Unbalanced { spec: spec.into() })?;
            if argv.is_empty() {
                return Err(MetricError::NoProgram);
            }
            Source::Command(pb::CommandMetric { argv })
        }
        _ => return Err(MetricError::Unknown { spec: spec.into() }),
    };
    Ok(pb::MetricSpec {
        source: Some(source),
    })
}

/// A metric source in `--json` output (docs/cli-json.md).
pub fn json(m: &pb::MetricSpec) -> Value {
    use pb::metric_spec::Source;
    match &m.source {
        None => Value::Null,
        Some(Source::Pushed(p)) => json!({"kind": "pushed", "unit": p.unit}),
        Some(Source::Prometheus(p)) => {
            json!({"kind": "prometheus", "url": p.url, "selector": p.selector})
        }
        Some(Source::Command(c)) => json!({"kind": "command", "argv": c.argv}),
        Some(Source::Perf(p)) => json!({
            "kind": "perf",
            "counter": match pb::PerfCounter::try_from(p.counter) {
                Ok(pb::PerfCounter::Ipc) => "ipc",
                _ => "instructions",
            },
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pb::metric_spec::Source;

    fn source(spec: &str) -> Source {
        parse(spec).unwrap().source.unwrap()
    }

    #[test]
    fn command_words_split_as_a_shell_splits_them() {
        let Source::Command(c) = source("command sh -c 'echo 42'") else {
            panic!("not a command")
        };
        assert_eq!(c.argv, ["sh", "-c", "echo 42"]);
        let Source::Command(c) = source(r#"command  /usr/bin/probe --name "my app" 'a b'\ c"#)
        else {
            panic!("not a command")
        };
        assert_eq!(c.argv, ["/usr/bin/probe", "--name", "my app", "a b c"]);
        assert_eq!(
            parse("command sh -c 'echo").unwrap_err(),
            MetricError::Unbalanced {
                spec: "command sh -c 'echo".into()
            }
        );
        assert_eq!(parse("command   ").unwrap_err(), MetricError::NoProgram);
    }

    #[test]
    fn prometheus_selectors_keep_their_spaces_and_quotes() {
        for spec in [
            r#"prometheus http://h:9100/metrics ops_total{a="x", b!="y"}"#,
            r#"prometheus   http://h:9100/metrics   'ops_total{a="x", b!="y"}'  "#,
        ] {
            let Source::Prometheus(p) = source(spec) else {
                panic!("not prometheus")
            };
            assert_eq!(p.url, "http://h:9100/metrics");
            assert_eq!(p.selector, r#"ops_total{a="x", b!="y"}"#);
        }
        assert_eq!(
            parse("prometheus http://h:9100/metrics").unwrap_err(),
            MetricError::PrometheusIncomplete
        );
    }

    #[test]
    fn the_simple_forms_and_unknown_ones() {
        assert!(matches!(source("pushed"), Source::Pushed(_)));
        let Source::Perf(p) = source("ipc") else {
            panic!("not perf")
        };
        assert_eq!(p.counter, pb::PerfCounter::Ipc as i32);
        for bad in ["carrier-pigeon", "pushed extra", ""] {
            assert!(
                matches!(parse(bad), Err(MetricError::Unknown { .. })),
                "{bad:?}"
            );
        }
    }
}
