//! A metric source as people type it (`placectl manage --metric`, a pod's `placed.io/metric`
//! annotation), to the structured `MetricSpec` placed.v1 carries. One parser serves the CLI
//! and the daemon's NRI mode, so both accept exactly the same text.
//!
//! A command's words are split as a POSIX shell splits them, so `command sh -c 'echo 42'`
//! is the argv `["sh", "-c", "echo 42"]`, passed to the daemon unchanged. A Prometheus
//! selector is everything after the URL, verbatim: its own quotes and spaces
//! (`{a="x", b!="y"}`) belong to PromQL, not to a shell.
//!
//! A pattern metric is split as a shell splits words too: `pattern REGEX [--mode MODE]
//! [--stream STREAM] -- PROGRAM ARGS...` or `pattern REGEX [--mode MODE] --file PATH`. The
//! regex is always the first word (quote it), options come next, and `--` ends them: every
//! word after it is the program's, so the program's own options are never read as ours.

use crate::v1 as pb;

/// What `--metric` accepts, for error messages.
const FORMS: &str = "pushed [--total], perf, ipc, prometheus URL SELECTOR, command [--total] PROGRAM ARGS..., pattern REGEX [--mode rate|total|increment] [--stream stdout|stderr|both] -- PROGRAM ARGS..., or pattern REGEX [--mode ...] --file PATH";

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
    #[error(
        "--metric pattern: {problem}; expected pattern REGEX [--mode rate|total|increment] [--stream stdout|stderr|both] -- PROGRAM ARGS..., or pattern REGEX [--mode ...] --file PATH"
    )]
    Pattern { problem: String },
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
        // `--total`: the values are a running total (a counter) whose rate is the
        // performance; without it each value is a rate now. No program is named
        // `--total`, so a command's first word decides unambiguously.
        "pushed" if rest.is_empty() || rest.trim_end() == "--total" => {
            Source::Pushed(pb::PushedMetric {
                unit: String::new(),
                total: !rest.is_empty(),
            })
        }
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
            let mut argv =
                shlex::split(rest).ok_or_else(|| MetricError::Unbalanced { spec: spec.into() })?;
            let total = argv.first().is_some_and(|w| w == "--total");
            if total {
                argv.remove(0);
            }
            if argv.is_empty() {
                return Err(MetricError::NoProgram);
            }
            Source::Command(pb::CommandMetric { argv, total })
        }
        "pattern" => {
            let words =
                shlex::split(rest).ok_or_else(|| MetricError::Unbalanced { spec: spec.into() })?;
            Source::Pattern(pattern(words)?)
        }
        _ => return Err(MetricError::Unknown { spec: spec.into() }),
    };
    Ok(pb::MetricSpec {
        source: Some(source),
    })
}

/// The words after `pattern`, split.
fn pattern(words: Vec<String>) -> Result<pb::PatternMetric, MetricError> {
    use pb::pattern_metric::Input;
    let problem = |problem: String| MetricError::Pattern { problem };
    let mut words = words.into_iter();
    let regex = words
        .next()
        .filter(|r| !r.is_empty())
        .ok_or_else(|| problem("no regex".into()))?;
    let mut mode = pb::PatternMode::Unspecified;
    let mut stream = None;
    let mut input = None;
    while let Some(word) = words.next() {
        let mut value = |name: &str| {
            words
                .next()
                .ok_or_else(|| problem(format!("{name} needs a value")))
        };
        match word.as_str() {
            "--mode" => {
                mode = match value("--mode")?.as_str() {
                    "rate" => pb::PatternMode::Rate,
                    "total" => pb::PatternMode::Total,
                    "increment" => pb::PatternMode::Increment,
                    other => {
                        return Err(problem(format!(
                            "--mode {other:?} is not rate, total or increment"
                        )));
                    }
                }
            }
            "--stream" => {
                stream = Some(match value("--stream")?.as_str() {
                    "stdout" => pb::PatternStream::Stdout,
                    "stderr" => pb::PatternStream::Stderr,
                    "both" => pb::PatternStream::Both,
                    other => {
                        return Err(problem(format!(
                            "--stream {other:?} is not stdout, stderr or both"
                        )));
                    }
                })
            }
            "--file" if input.is_none() => input = Some(Input::File(value("--file")?)),
            "--" if input.is_none() => {
                let argv: Vec<String> = words.by_ref().collect();
                if argv.is_empty() {
                    return Err(problem("no program after --".into()));
                }
                input = Some(Input::Program(pb::PatternProgram { argv, stream: 0 }));
            }
            "--file" | "--" => {
                return Err(problem("either --file PATH or -- PROGRAM, not both".into()));
            }
            other => {
                return Err(problem(format!(
                    "{:?} is not an option here (a program goes after --)",
                    placed_core::text::clip(other, 100)
                )));
            }
        }
    }
    let input = match (input, stream) {
        (None, _) => {
            return Err(problem(
                "no input: add -- PROGRAM ARGS... or --file PATH".into(),
            ));
        }
        (Some(Input::File(_)), Some(_)) => {
            return Err(problem("--stream is for a program, not a file".into()));
        }
        (Some(Input::Program(mut p)), Some(s)) => {
            p.stream = s as i32;
            Input::Program(p)
        }
        (Some(input), None) => input,
    };
    Ok(pb::PatternMetric {
        regex,
        mode: mode as i32,
        input: Some(input),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pb::metric_spec::Source;

    fn source(spec: &str) -> Source {
        parse(spec).unwrap().source.unwrap()
    }

    #[test]
    fn a_running_total_is_chosen_with_total_for_pushed_and_command() {
        let Source::Pushed(p) = source("pushed --total") else {
            panic!("not pushed")
        };
        assert!(p.total);
        let Source::Pushed(p) = source("pushed") else {
            panic!("not pushed")
        };
        assert!(!p.total);
        let Source::Command(c) = source("command --total cat /run/app/requests") else {
            panic!("not a command")
        };
        assert!(c.total);
        assert_eq!(c.argv, ["cat", "/run/app/requests"]);
        // Only the first word: a program's own --total is its own.
        let Source::Command(c) = source("command tool --total") else {
            panic!("not a command")
        };
        assert!(!c.total);
        assert_eq!(c.argv, ["tool", "--total"]);
        assert!(matches!(
            parse("command --total"),
            Err(MetricError::NoProgram)
        ));
        parse("pushed --rate").unwrap_err();
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
    fn pattern_forms_split_as_a_shell_and_stop_at_the_double_dash() {
        use pb::pattern_metric::Input;
        let Source::Pattern(p) = source(
            r"pattern 'tps: ([0-9.]+)' --mode rate --stream stderr -- sysbench --report-interval=1 cpu run",
        ) else {
            panic!("not a pattern")
        };
        assert_eq!(p.regex, "tps: ([0-9.]+)");
        assert_eq!(p.mode, pb::PatternMode::Rate as i32);
        let Some(Input::Program(program)) = p.input else {
            panic!("not a program: {:?}", p.input)
        };
        assert_eq!(
            program.argv,
            ["sysbench", "--report-interval=1", "cpu", "run"]
        );
        assert_eq!(program.stream, pb::PatternStream::Stderr as i32);
        // After --, even our own option names are the program's.
        let Source::Pattern(p) = source("pattern done -- tool --mode total --file x") else {
            panic!("not a pattern")
        };
        assert_eq!(p.mode, pb::PatternMode::Unspecified as i32);
        let Some(Input::Program(program)) = p.input else {
            panic!("not a program")
        };
        assert_eq!(program.argv, ["tool", "--mode", "total", "--file", "x"]);
        assert_eq!(program.stream, 0);

        let Source::Pattern(p) =
            source(r#"pattern '"GET /' --mode increment --file "/var/log/my app/access.log""#)
        else {
            panic!("not a pattern")
        };
        assert_eq!(p.regex, "\"GET /");
        assert_eq!(p.mode, pb::PatternMode::Increment as i32);
        assert_eq!(
            p.input,
            Some(Input::File("/var/log/my app/access.log".into()))
        );
    }

    #[test]
    fn pattern_forms_that_say_too_little_or_too_much() {
        for (spec, says) in [
            ("pattern", "no regex"),
            ("pattern ops", "no input"),
            ("pattern ops --", "no program after --"),
            ("pattern ops --file", "--file needs a value"),
            ("pattern ops --mode fast -- sh", "\"fast\" is not rate"),
            ("pattern ops --stream tty -- sh", "\"tty\" is not stdout"),
            ("pattern ops --file /a -- sh", "not both"),
            (
                "pattern ops --stream stdout --file /a",
                "--stream is for a program",
            ),
            ("pattern ops sysbench", "\"sysbench\" is not an option here"),
        ] {
            let e = parse(spec).unwrap_err();
            assert!(
                matches!(&e, MetricError::Pattern { problem } if problem.contains(says)),
                "{spec}: {e}"
            );
        }
        assert!(matches!(
            parse("pattern 'ops -- sh"),
            Err(MetricError::Unbalanced { .. })
        ));
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
