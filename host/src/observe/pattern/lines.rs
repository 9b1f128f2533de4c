//! Output split into lines, and a number taken from each line a regex matches: the one
//! parser behind the daemon's pattern source and `placed-train`'s output metrics.

use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};

use super::super::source::Kind;
use super::PatternError;

/// Longer lines are cut: a metric is near the start, and memory stays bounded.
pub const MAX_LINE: usize = 64 << 10;

/// The longest regex accepted. Real patterns are a few dozen characters; the bound keeps
/// error messages short and compiling cheap for a regex that came from an API caller.
pub const MAX_REGEX: usize = 4 << 10;

/// Bound on a compiled regex (and on its lazy DFA cache), for the same reason.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// What a matched number means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// A rate now (`sysbench --report-interval`, `pgbench --progress`): readings are
    /// averaged over a window.
    #[default]
    Rate,
    /// A running total (operations so far): a window's value is its increase per second.
    Total,
    /// An amount completed since the previous match, added to a running total (one line
    /// per finished request or short run); then as `Total`. A line that matches with no
    /// capture group counts 1.
    Increment,
}

impl Mode {
    /// How the source's readings become a window's value.
    pub fn kind(self) -> Kind {
        match self {
            Self::Rate => Kind::Gauge,
            Self::Total | Self::Increment => Kind::Counter,
        }
    }

    /// The word used in configuration, the API and `--metric`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Rate => "rate",
            Self::Total => "total",
            Self::Increment => "increment",
        }
    }
}

/// Which output streams of a program the regex reads. The other one is still drained, so
/// the program never blocks on a full pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    Stdout,
    Stderr,
    #[default]
    Both,
}

impl Stream {
    /// Whether lines of standard output are parsed.
    pub fn stdout(self) -> bool {
        self != Self::Stderr
    }

    /// Whether lines of standard error are parsed.
    pub fn stderr(self) -> bool {
        self != Self::Stdout
    }
}

/// A compiled regex and what its number means; cheap to clone.
#[derive(Debug, Clone)]
pub struct LinePattern {
    regex: Regex,
    mode: Mode,
}

impl LinePattern {
    /// Compiles `regex`; its first capture group is the number (no group: 1).
    pub fn new(regex: &str, mode: Mode) -> Result<Self, PatternError> {
        let shown = || placed_core::text::clip(regex, 200);
        if regex.len() > MAX_REGEX {
            return Err(PatternError::Regex {
                regex: shown(),
                reason: format!("longer than {MAX_REGEX} bytes"),
            });
        }
        let regex = RegexBuilder::new(regex)
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map_err(|e| PatternError::Regex {
                regex: shown(),
                // The regex crate's message quotes the whole pattern; clipped like it.
                reason: placed_core::text::clip(&e.to_string(), 600),
            })?;
        Ok(Self { regex, mode })
    }

    /// What a matched number means.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The regex as given.
    pub fn as_str(&self) -> &str {
        self.regex.as_str()
    }

    /// The number on `line`: `None` when the regex does not match or the first group is
    /// not a finite number; 1 when it matches and has no group (or the group took no part).
    pub fn number(&self, line: &str) -> Option<f64> {
        let caps = self.regex.captures(line)?;
        match caps.get(1) {
            Some(m) => m
                .as_str()
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite()),
            None => Some(1.0),
        }
    }
}

/// Lines to readings: a [`LinePattern`] plus the running total of an `increment` metric.
/// One per metric, shared by every stream it reads, so that both streams add to one total.
#[derive(Debug, Clone)]
pub struct LineMetric {
    pattern: LinePattern,
    total: f64,
}

impl LineMetric {
    pub fn new(pattern: LinePattern) -> Self {
        Self {
            pattern,
            total: 0.0,
        }
    }

    /// How the readings become a window's value.
    pub fn kind(&self) -> Kind {
        self.pattern.mode.kind()
    }

    /// The value to report for `line`, if it matches: the number itself (rate, total) or
    /// the running total it brings the sum to (increment). Always finite: an increment
    /// that would overflow the total is dropped.
    pub fn line(&mut self, line: &str) -> Option<f64> {
        let value = self.pattern.number(line)?;
        match self.pattern.mode {
            Mode::Rate | Mode::Total => Some(value),
            Mode::Increment => {
                let total = self.total + value;
                if !total.is_finite() {
                    return None;
                }
                self.total = total;
                Some(total)
            }
        }
    }
}

/// Bytes to lines as they arrive: a line ends at `\n` or `\r` (progress meters redraw with
/// `\r`), empty lines are skipped, trailing whitespace is dropped, invalid UTF-8 is
/// replaced, and a line longer than [`MAX_LINE`] bytes keeps its start only.
#[derive(Debug, Default)]
pub struct Lines {
    line: Vec<u8>,
}

impl Lines {
    /// Feeds `bytes`, calling `on_line` with each line they complete.
    pub fn push(&mut self, bytes: &[u8], mut on_line: impl FnMut(&str)) {
        let mut rest = bytes;
        while let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.take(&rest[..end]);
            self.emit(&mut on_line);
            rest = &rest[end + 1..];
        }
        self.take(rest);
    }

    /// The end of the input: the unterminated last line, if any, is a line too.
    pub fn finish(&mut self, mut on_line: impl FnMut(&str)) {
        self.emit(&mut on_line);
    }

    /// Forgets a partial line (the file it came from was truncated).
    pub fn reset(&mut self) {
        self.line.clear();
    }

    fn take(&mut self, bytes: &[u8]) {
        let room = MAX_LINE.saturating_sub(self.line.len());
        self.line.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    fn emit(&mut self, on_line: &mut impl FnMut(&str)) {
        if !self.line.is_empty() {
            let text = String::from_utf8_lossy(&self.line);
            let text = text.trim_end();
            if !text.is_empty() {
                on_line(text);
            }
            self.line.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metric(regex: &str, mode: Mode) -> LineMetric {
        LineMetric::new(LinePattern::new(regex, mode).unwrap())
    }

    fn feed(metric: &mut LineMetric, lines: &[&str]) -> Vec<f64> {
        lines.iter().filter_map(|l| metric.line(l)).collect()
    }

    #[test]
    fn rate_and_total_report_the_number_itself() {
        for mode in [Mode::Rate, Mode::Total] {
            let mut m = metric(r"tps: ([0-9.]+)", mode);
            let got = feed(
                &mut m,
                &["[ 1s ] tps: 120.5 qps: 9", "noise", "[ 2s ] tps: 118"],
            );
            assert_eq!(got, [120.5, 118.0], "{mode:?}");
        }
        assert_eq!(Mode::Rate.kind(), Kind::Gauge);
        assert_eq!(Mode::Total.kind(), Kind::Counter);
    }

    #[test]
    fn increment_adds_to_a_running_total_and_no_group_counts_one() {
        let mut m = metric(r"done ([0-9]+)", Mode::Increment);
        assert_eq!(feed(&mut m, &["done 5", "x", "done 7"]), [5.0, 12.0]);
        let mut m = metric("request served", Mode::Increment);
        assert_eq!(
            feed(&mut m, &["request served", "request served", "idle"]),
            [1.0, 2.0]
        );
        assert_eq!(Mode::Increment.kind(), Kind::Counter);
    }

    #[test]
    fn non_matching_and_non_finite_numbers_give_nothing() {
        let mut m = metric(r"ops ([^ ]+)", Mode::Rate);
        assert_eq!(
            feed(
                &mut m,
                &[
                    "ops NaN",
                    "ops inf",
                    "ops -inf",
                    "ops 1e999",
                    "ops fast",
                    "other 5"
                ]
            ),
            Vec::<f64>::new()
        );
        // An optional group that took no part counts as a match without a number.
        let mut m = metric(r"done(?: ([0-9]+))?", Mode::Increment);
        assert_eq!(feed(&mut m, &["done", "done 4"]), [1.0, 5.0]);
        // An increment that would overflow the total is dropped; the total stays finite.
        let mut m = metric(r"n (.+)", Mode::Increment);
        assert_eq!(feed(&mut m, &["n 1e308", "n 1e308", "n 1"]), [1e308, 1e308]);
    }

    #[test]
    fn bad_and_huge_regexes_are_refused_with_a_short_message() {
        let e = LinePattern::new("(unclosed", Mode::Rate).unwrap_err();
        assert!(e.to_string().contains("(unclosed"), "{e}");
        let long = "a".repeat(MAX_REGEX + 1);
        let e = LinePattern::new(&long, Mode::Rate).unwrap_err().to_string();
        assert!(e.len() < 600, "{e}");
        // Small text, huge automaton: refused by the size limit, not compiled.
        let e = LinePattern::new(r"\w{1000}\w{1000}\w{1000}", Mode::Rate).unwrap_err();
        assert!(e.to_string().contains("size limit"), "{e}");
    }

    fn split(chunks: &[&[u8]]) -> Vec<String> {
        let mut lines = Lines::default();
        let mut got = Vec::new();
        for chunk in chunks {
            lines.push(chunk, |l| got.push(l.to_owned()));
        }
        lines.finish(|l| got.push(l.to_owned()));
        got
    }

    #[test]
    fn lines_end_at_newline_or_carriage_return_across_chunks() {
        assert_eq!(
            split(&[
                b"ops 1\nop",
                b"s 2\r\n\n",
                b"progress 3\rprogress 4  \n",
                b"tail"
            ]),
            ["ops 1", "ops 2", "progress 3", "progress 4", "tail"]
        );
        assert_eq!(split(&[b"\xffops 5\n"]), ["\u{fffd}ops 5"]);
        assert!(split(&[b"\n\r  \n"]).is_empty());
    }

    #[test]
    fn overlong_lines_keep_their_start_and_the_next_line_is_whole() {
        let mut long = b"ops 7 ".to_vec();
        long.extend(std::iter::repeat_n(b'x', 3 * MAX_LINE));
        long.extend_from_slice(b"\nops 8\n");
        let got = split(&[&long[..MAX_LINE], &long[MAX_LINE..]]);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].len(), MAX_LINE);
        assert!(got[0].starts_with("ops 7 xxx"));
        assert_eq!(got[1], "ops 8");
    }

    #[test]
    fn reset_drops_a_partial_line() {
        let mut lines = Lines::default();
        let mut got = Vec::new();
        lines.push(b"ops 1\nops 2", |l| got.push(l.to_owned()));
        lines.reset();
        lines.push(b"ops 3\n", |l| got.push(l.to_owned()));
        assert_eq!(got, ["ops 1", "ops 3"]);
    }
}
