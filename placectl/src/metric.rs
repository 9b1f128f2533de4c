//! Metric sources in `--json` output; the text form (`--metric`) is parsed by
//! `placed_proto::metric_text`, which the daemon's NRI mode shares.

pub use placed_proto::metric_text::{MetricError, parse};
use placed_proto::v1 as pb;
use serde_json::{Value, json};

/// A metric source in `--json` output (docs/cli-json.md).
pub fn json(m: &pb::MetricSpec) -> Value {
    use pb::metric_spec::Source;
    match &m.source {
        None => Value::Null,
        Some(Source::Pushed(p)) => json!({"kind": "pushed", "unit": p.unit, "total": p.total}),
        Some(Source::Prometheus(p)) => {
            json!({"kind": "prometheus", "url": p.url, "selector": p.selector})
        }
        Some(Source::Command(c)) => {
            json!({"kind": "command", "argv": c.argv, "total": c.total})
        }
        Some(Source::Pattern(p)) => {
            use pb::pattern_metric::Input;
            let mode = match pb::PatternMode::try_from(p.mode) {
                Ok(pb::PatternMode::Total) => "total",
                Ok(pb::PatternMode::Increment) => "increment",
                _ => "rate",
            };
            let mut out = json!({"kind": "pattern", "regex": p.regex, "mode": mode});
            match &p.input {
                Some(Input::Program(program)) => {
                    out["argv"] = json!(program.argv);
                    out["stream"] = json!(match pb::PatternStream::try_from(program.stream) {
                        Ok(pb::PatternStream::Stdout) => "stdout",
                        Ok(pb::PatternStream::Stderr) => "stderr",
                        _ => "both",
                    });
                }
                Some(Input::File(path)) => out["file"] = json!(path),
                None => {}
            }
            out
        }
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

    #[test]
    fn json_names_the_kind_and_its_fields() {
        assert_eq!(
            json(&parse("command --total cat x").unwrap())["total"],
            Value::Bool(true)
        );
        assert_eq!(
            json(&parse(r"pattern 'ops (\d+)' --mode total --file /l/a").unwrap()),
            json!({"kind": "pattern", "regex": r"ops (\d+)", "mode": "total", "file": "/l/a"})
        );
    }
}
