//! The Prometheus text exposition format (version 0.0.4, and the OpenMetrics lines that
//! share its syntax), and metric selectors written the way PromQL writes them
//! (`ops_total{job="api",instance!="b"}`). Parsers take `&str`, so tests need no sockets.

use std::collections::HashMap;

/// A metric family's declared type (`# TYPE name type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    /// Monotonic total.
    Counter,
    /// Level.
    Gauge,
    /// Buckets, `_sum` and `_count`; the last two are running totals.
    Histogram,
    /// Quantiles, `_sum` and `_count`.
    Summary,
    /// No type, or one this parser does not know.
    Untyped,
}

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Metric name.
    pub name: String,
    /// Labels in the order written.
    pub labels: Vec<(String, String)>,
    /// The value (may be NaN or infinite: the format allows it).
    pub value: f64,
}

/// A parsed scrape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exposition {
    /// Declared types by family name.
    pub types: HashMap<String, MetricType>,
    /// Every sample line, in order.
    pub samples: Vec<Sample>,
}

/// Text that is not in the exposition format, or a selector that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}: {text:?}")]
pub struct ParseError {
    /// 1-based line number (always 1 for a selector).
    pub line: usize,
    /// What is wrong.
    pub reason: &'static str,
    /// The offending line, cut to 120 characters.
    pub text: String,
}

/// A label matcher: `=` or `!=`. Regular-expression matchers (`=~`, `!~`) are not
/// supported: no container we met needed them, and they would pull a regex engine in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matcher {
    /// Label name.
    pub label: String,
    /// Value to compare with.
    pub value: String,
    /// `true` for `=`, `false` for `!=`.
    pub equal: bool,
}

impl Matcher {
    /// Whether a sample's labels satisfy this matcher. A missing label has the empty value,
    /// as in PromQL.
    pub fn matches(&self, labels: &[(String, String)]) -> bool {
        let value = labels
            .iter()
            .find(|(k, _)| *k == self.label)
            .map_or("", |(_, v)| v.as_str());
        (value == self.value) == self.equal
    }
}

/// A metric name with label matchers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    /// Metric name (the sample's name, `_total` suffix included).
    pub metric: String,
    /// All must match.
    pub matchers: Vec<Matcher>,
}

impl Selector {
    /// Parses `name` or `name{label="value",other!="x"}`.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let err = |reason| ParseError {
            line: 1,
            reason,
            text: clip(text),
        };
        let mut cur = Cursor::new(text.trim());
        let metric = cur.name().ok_or_else(|| err("expected a metric name"))?;
        let mut matchers = Vec::new();
        if cur.eat('{') {
            loop {
                cur.skip_spaces();
                if cur.eat('}') {
                    break;
                }
                let label = cur.name().ok_or_else(|| err("expected a label name"))?;
                cur.skip_spaces();
                let equal = if cur.eat_str("!=") {
                    false
                } else if cur.eat('=') {
                    if cur.peek() == Some('~') {
                        return Err(err("regular-expression matchers are not supported"));
                    }
                    true
                } else {
                    return Err(err("expected = or != after a label name"));
                };
                cur.skip_spaces();
                let value = cur
                    .quoted()
                    .ok_or_else(|| err("expected a quoted label value"))?;
                matchers.push(Matcher {
                    label,
                    value,
                    equal,
                });
                cur.skip_spaces();
                if cur.eat('}') {
                    break;
                }
                if !cur.eat(',') {
                    return Err(err("expected , or } after a matcher"));
                }
            }
        }
        if !cur.rest().trim().is_empty() {
            return Err(err("unexpected text after the selector"));
        }
        Ok(Self { metric, matchers })
    }

    /// Whether `sample` is one of the series this selector names.
    pub fn matches(&self, sample: &Sample) -> bool {
        sample.name == self.metric && self.matchers.iter().all(|m| m.matches(&sample.labels))
    }
}

impl std::fmt::Display for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.metric)?;
        if !self.matchers.is_empty() {
            let parts: Vec<String> = self
                .matchers
                .iter()
                .map(|m| {
                    let op = if m.equal { "=" } else { "!=" };
                    format!("{}{op}\"{}\"", m.label, escape(&m.value))
                })
                .collect();
            write!(f, "{{{}}}", parts.join(","))?;
        }
        Ok(())
    }
}

/// Parses a whole scrape. Comments other than `# TYPE` are skipped, as are `# EOF` and
/// blank lines; a sample's optional timestamp is accepted and ignored (rates are computed
/// on the scraper's clock, see `super` for why).
pub fn parse(text: &str) -> Result<Exposition, ParseError> {
    let mut out = Exposition::default();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let err = |reason| ParseError {
            line: i + 1,
            reason,
            text: clip(line),
        };
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let mut words = comment.split_whitespace();
            if words.next() == Some("TYPE") {
                let name = words.next().ok_or_else(|| err("TYPE without a name"))?;
                let kind = match words.next() {
                    Some("counter") => MetricType::Counter,
                    Some("gauge") => MetricType::Gauge,
                    Some("histogram") => MetricType::Histogram,
                    Some("summary") => MetricType::Summary,
                    Some(_) => MetricType::Untyped,
                    None => return Err(err("TYPE without a type")),
                };
                out.types.insert(name.to_owned(), kind);
            }
            continue;
        }
        let mut cur = Cursor::new(line);
        let name = cur.name().ok_or_else(|| err("expected a metric name"))?;
        let mut labels = Vec::new();
        if cur.eat('{') {
            loop {
                cur.skip_spaces();
                if cur.eat('}') {
                    break;
                }
                let label = cur.name().ok_or_else(|| err("expected a label name"))?;
                cur.skip_spaces();
                if !cur.eat('=') {
                    return Err(err("expected = after a label name"));
                }
                cur.skip_spaces();
                let value = cur
                    .quoted()
                    .ok_or_else(|| err("expected a quoted label value"))?;
                labels.push((label, value));
                cur.skip_spaces();
                if cur.eat('}') {
                    break;
                }
                if !cur.eat(',') {
                    return Err(err("expected , or } in the label set"));
                }
            }
        }
        let mut fields = cur.rest().split_whitespace();
        let value = fields
            .next()
            .ok_or_else(|| err("missing value"))
            .and_then(|v| parse_value(v).ok_or_else(|| err("the value is not a number")))?;
        if let Some(ts) = fields.next() {
            ts.parse::<f64>()
                .map_err(|_| err("the timestamp is not a number"))?;
        }
        if fields.next().is_some() {
            return Err(err("unexpected text after the timestamp"));
        }
        out.samples.push(Sample {
            name,
            labels,
            value,
        });
    }
    Ok(out)
}

impl Exposition {
    /// The declared type of the family `sample_name` belongs to: the name itself, or the
    /// name without a `_total`, `_count`, `_sum`, `_bucket` or `_created` suffix.
    pub fn type_of(&self, sample_name: &str) -> Option<MetricType> {
        if let Some(t) = self.types.get(sample_name) {
            return Some(*t);
        }
        ["_total", "_count", "_sum", "_bucket", "_created"]
            .iter()
            .filter_map(|suffix| sample_name.strip_suffix(suffix))
            .find_map(|family| self.types.get(family).copied())
    }
}

/// A label value as the exposition format and PromQL quote it: only `\\`, `"` and newline
/// are escaped, the three escapes [`Cursor::quoted`] reads. (Rust's `{:?}` escapes more,
/// `\t` and `\u{..}` among them, which read back as other text.)
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn parse_value(text: &str) -> Option<f64> {
    match text {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => text.parse().ok(),
    }
}

fn clip(text: &str) -> String {
    text.chars().take(120).collect()
}

/// A tiny hand-written scanner: the grammar is four productions, not worth a parser crate.
struct Cursor<'a> {
    rest: &'a str,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str) -> Self {
        Self { rest: text }
    }

    fn rest(&self) -> &'a str {
        self.rest
    }

    fn peek(&self) -> Option<char> {
        self.rest.chars().next()
    }

    fn eat(&mut self, c: char) -> bool {
        match self.rest.strip_prefix(c) {
            Some(r) => {
                self.rest = r;
                true
            }
            None => false,
        }
    }

    fn eat_str(&mut self, s: &str) -> bool {
        match self.rest.strip_prefix(s) {
            Some(r) => {
                self.rest = r;
                true
            }
            None => false,
        }
    }

    fn skip_spaces(&mut self) {
        self.rest = self.rest.trim_start();
    }

    /// `[a-zA-Z_:][a-zA-Z0-9_:]*`
    fn name(&mut self) -> Option<String> {
        let end = self
            .rest
            .char_indices()
            .find(|&(i, c)| {
                !(c.is_ascii_alphabetic() || c == '_' || c == ':' || (i > 0 && c.is_ascii_digit()))
            })
            .map_or(self.rest.len(), |(i, _)| i);
        if end == 0 {
            return None;
        }
        let (name, rest) = self.rest.split_at(end);
        self.rest = rest;
        Some(name.to_owned())
    }

    /// A double-quoted string with `\\`, `\"` and `\n` escapes.
    fn quoted(&mut self) -> Option<String> {
        let body = self.rest.strip_prefix('"')?;
        let mut out = String::new();
        let mut chars = body.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.rest = &body[i + 1..];
                    return Some(out);
                }
                '\\' => match chars.next()?.1 {
                    'n' => out.push('\n'),
                    other => out.push(other),
                },
                _ => out.push(c),
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRAPE: &str = r#"# HELP ops_total Operations done.
# TYPE ops_total counter
ops_total{job="api",path="/a,b}"} 1027 1395066363000
ops_total{job="batch"} 3
# TYPE queue_depth gauge
queue_depth 1.5e1
# TYPE latency_seconds histogram
latency_seconds_bucket{le="+Inf"} 9
latency_seconds_count 9
latency_seconds_sum NaN
weird{msg="say \"hi\"\n"} -Inf
# EOF
"#;

    #[test]
    fn parses_types_labels_values_and_escapes() {
        let e = parse(SCRAPE).unwrap();
        assert_eq!(e.samples.len(), 7);
        assert_eq!(e.samples[0].labels[1], ("path".into(), "/a,b}".into()));
        assert_eq!(e.samples[0].value, 1027.0);
        assert_eq!(e.samples[2].value, 15.0);
        assert!(e.samples[5].value.is_nan());
        assert_eq!(e.samples[6].labels[0].1, "say \"hi\"\n");
        assert_eq!(e.type_of("ops_total"), Some(MetricType::Counter));
        assert_eq!(
            e.type_of("latency_seconds_count"),
            Some(MetricType::Histogram)
        );
        assert_eq!(e.type_of("weird"), None);
    }

    #[test]
    fn malformed_lines_name_their_line() {
        let cases = [
            (
                "ops_total{job=\"a\" 1",
                1,
                "expected , or } in the label set",
            ),
            ("ok 1\nops_total one", 2, "the value is not a number"),
            ("ops_total{job=api} 1", 1, "expected a quoted label value"),
            ("ops_total", 1, "missing value"),
            ("{job=\"a\"} 1", 1, "expected a metric name"),
            ("ops_total 1 2 3", 1, "unexpected text after the timestamp"),
            (
                "ops_total{job=\"unterminated} 1",
                1,
                "expected a quoted label value",
            ),
        ];
        for (text, line, reason) in cases {
            let e = parse(text).unwrap_err();
            assert_eq!((e.line, e.reason), (line, reason), "{text:?}");
        }
    }

    #[test]
    fn selectors_parse_match_and_print() {
        let s = Selector::parse(r#"ops_total{job="api", path!="/health"}"#).unwrap();
        assert_eq!(s.to_string(), r#"ops_total{job="api",path!="/health"}"#);
        let e = parse(SCRAPE).unwrap();
        let hits: Vec<f64> = e
            .samples
            .iter()
            .filter(|x| s.matches(x))
            .map(|x| x.value)
            .collect();
        assert_eq!(hits, vec![1027.0]);
        // A missing label is the empty string, as in PromQL.
        let s = Selector::parse(r#"ops_total{path=""}"#).unwrap();
        let hits: Vec<f64> = e
            .samples
            .iter()
            .filter(|x| s.matches(x))
            .map(|x| x.value)
            .collect();
        assert_eq!(hits, vec![3.0]);
        assert_eq!(
            Selector::parse(r#"x{a=~"b"}"#).unwrap_err().reason,
            "regular-expression matchers are not supported"
        );
        assert_eq!(
            Selector::parse("x{a=\"b\"} junk").unwrap_err().reason,
            "unexpected text after the selector"
        );
    }
}
