//! The one interface every metric source implements, and the arithmetic that turns a
//! source's readings into one value per sub-window.
//!
//! A source produces timestamped readings. Pulled sources (Prometheus, perf, a command)
//! take one reading each time they are polled; pushed sources hand over whatever arrived
//! since the last poll. What a reading means is the source's [`Kind`]: a running total
//! (turned into a rate), a level (averaged), or a pair of running totals (their ratio, such
//! as instructions per cycle).

use std::future::Future;

use tokio::time::Instant;

/// How a source's readings become a sub-window's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A running total (operations done so far): the window's value is its increase per
    /// second. A decrease is a counter reset; it is handled as Prometheus' `rate()` does
    /// (the value after the reset counts from zero) and flags the window as disturbed.
    Counter,
    /// A level (operations per second right now): the window's value is the mean of the
    /// readings taken inside it.
    Gauge,
    /// Two running totals: the window's value is the increase of the first over the
    /// increase of the second (instructions over cycles).
    Ratio,
}

/// One reading of a source.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// When it was taken (pulled) or received (pushed).
    pub at: Instant,
    /// The total, the level, or the ratio's numerator total.
    pub value: f64,
    /// The ratio's denominator total; `None` for counters and gauges.
    pub denominator: Option<f64>,
}

impl Reading {
    /// A counter or gauge reading.
    pub fn new(at: Instant, value: f64) -> Self {
        Self {
            at,
            value,
            denominator: None,
        }
    }

    /// A reading of a [`Kind::Ratio`] source.
    pub fn ratio(at: Instant, numerator: f64, denominator: f64) -> Self {
        Self {
            at,
            value: numerator,
            denominator: Some(denominator),
        }
    }
}

/// A source of one metric of one container.
///
/// Futures are `Send` so that a source can live in the daemon's per-container task; the
/// training collector, which is synchronous, drives the same sources through
/// [`super::block_on`].
pub trait MetricSource: Send {
    /// What is measured, for reports and to refuse comparing two different metrics
    /// (for example `prometheus http://10.0.0.2:9100/metrics ops_total{job="api"}`).
    fn describe(&self) -> String;

    /// How readings become a window's value.
    fn kind(&self) -> Kind;

    /// Whether each poll takes a reading now (`true`) or returns what was pushed since the
    /// last poll (`false`). A pulled gauge is polled several times per window.
    fn is_pulled(&self) -> bool;

    /// Takes what the source holds only while a measurement runs (perf counters and their
    /// descriptors); [`super::measure`] calls it before the warm-up. Most sources hold
    /// nothing of the kind.
    fn begin(&mut self) -> Result<(), SourceError> {
        Ok(())
    }

    /// Gives back what [`MetricSource::begin`] took; [`super::measure`] calls it however
    /// the measurement ends, cancelled included.
    fn end(&mut self) {}

    /// Readings since the previous poll, oldest first. A pulled source returns exactly one.
    /// Every implementation bounds its own waiting (timeouts), so this never hangs.
    fn poll(&mut self) -> impl Future<Output = Result<Vec<Reading>, SourceError>> + Send;
}

/// Why a source gave no reading: the source's own error, or too few readings in a window.
///
/// Each source has its own error enum (`PrometheusError`, `CommandError`, `PerfError`,
/// `PushedError`, `PatternError`), converted into this one where the source defines it, so
/// that this module, and every source, knows no other source. [`SourceError::failure`]
/// gives the source's error back by its type.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The source failed: the Prometheus endpoint could not be read or did not hold the
    /// metric, the operator's command failed, hung or printed no number, the perf counters
    /// could not be opened or read, the pushed stream ended, or the pattern source's program
    /// exited or its file could not be read any more. Shown as the source's own error.
    #[error(transparent)]
    Failed(Box<dyn std::error::Error + Send + Sync>),
    /// A window held too few readings to compute its value (a pushed source that reports
    /// less often than once per window, or a counter read only once).
    #[error(
        "no {kind:?} reading in a window of {window_s:.3} s; the source must report at least once per window (twice for counters)"
    )]
    NoData {
        /// The source's kind.
        kind: Kind,
        /// The window's length in seconds.
        window_s: f64,
    },
}

impl SourceError {
    /// A source's own error.
    pub fn failed(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Failed(Box::new(error))
    }

    /// The source's own error, when it failed with an `E` (`PushedError`,
    /// `Arc<PatternError>`, ...).
    pub fn failure<E: std::error::Error + 'static>(&self) -> Option<&E> {
        match self {
            Self::Failed(e) => e.downcast_ref(),
            Self::NoData { .. } => None,
        }
    }
}

/// A window's value, and whether a counter went backwards inside it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct WindowValue {
    pub value: f64,
    pub counter_reset: bool,
}

/// The value of the window that ends with `inside`'s last reading.
///
/// `before` is the last reading of the previous window (counters and ratios start from
/// it); `None` for the first window after the warm-up of a pushed source, which then starts
/// from its own first reading. Returns `None` when there is not enough to compute a value.
pub(crate) fn window_value(
    kind: Kind,
    before: Option<&Reading>,
    inside: &[Reading],
) -> Option<WindowValue> {
    match kind {
        Kind::Gauge => {
            if inside.is_empty() {
                return None;
            }
            let sum: f64 = inside.iter().map(|r| r.value).sum();
            Some(WindowValue {
                value: sum / inside.len() as f64,
                counter_reset: false,
            })
        }
        Kind::Counter | Kind::Ratio => {
            let series: Vec<&Reading> = before.into_iter().chain(inside).collect();
            let (first, last) = (series.first()?, series.last()?);
            let mut num = 0.0;
            let mut den = 0.0;
            let mut reset = false;
            for pair in series.windows(2) {
                let (inc, r) = increase(pair[0].value, pair[1].value);
                num += inc;
                reset |= r;
                if let (Some(d0), Some(d1)) = (pair[0].denominator, pair[1].denominator) {
                    let (inc, r) = increase(d0, d1);
                    den += inc;
                    reset |= r;
                }
            }
            if kind == Kind::Counter {
                den = last.at.saturating_duration_since(first.at).as_secs_f64();
            }
            if den <= 0.0 {
                return None;
            }
            Some(WindowValue {
                value: num / den,
                counter_reset: reset,
            })
        }
    }
}

/// Increase of a running total between two readings, Prometheus-style: a decrease means
/// the counter restarted from zero, so the whole new value is the increase.
fn increase(prev: f64, next: f64) -> (f64, bool) {
    if next < prev {
        (next, true)
    } else {
        (next - prev, false)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn at(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    #[test]
    fn counter_rate_spans_from_the_previous_windows_last_reading() {
        let t0 = Instant::now();
        let before = Reading::new(t0, 100.0);
        let inside = [Reading::new(at(t0, 500), 600.0)];
        let w = window_value(Kind::Counter, Some(&before), &inside).unwrap();
        assert!((w.value - 1000.0).abs() < 1e-9);
        assert!(!w.counter_reset);
    }

    #[test]
    fn counter_reset_counts_from_zero_and_is_flagged() {
        let t0 = Instant::now();
        // 100 -> 400 (+300), reset, -> 50 (+50), -> 150 (+100): 450 over 1.5 s.
        let series = [
            Reading::new(at(t0, 500), 400.0),
            Reading::new(at(t0, 1000), 50.0),
            Reading::new(at(t0, 1500), 150.0),
        ];
        let before = Reading::new(t0, 100.0);
        let w = window_value(Kind::Counter, Some(&before), &series).unwrap();
        assert!((w.value - 300.0).abs() < 1e-9, "{w:?}");
        assert!(w.counter_reset);
    }

    #[test]
    fn gauge_is_the_mean_of_readings_inside() {
        let t0 = Instant::now();
        let inside = [Reading::new(t0, 10.0), Reading::new(at(t0, 100), 20.0)];
        let w = window_value(Kind::Gauge, None, &inside).unwrap();
        assert!((w.value - 15.0).abs() < 1e-12);
        assert_eq!(window_value(Kind::Gauge, None, &[]), None);
    }

    #[test]
    fn ratio_divides_the_two_increases() {
        let t0 = Instant::now();
        let before = Reading::ratio(t0, 1_000.0, 1_000.0);
        let inside = [Reading::ratio(at(t0, 500), 3_000.0, 2_000.0)];
        let w = window_value(Kind::Ratio, Some(&before), &inside).unwrap();
        assert!((w.value - 2.0).abs() < 1e-12);
    }

    #[test]
    fn a_single_counter_reading_has_no_rate() {
        let t0 = Instant::now();
        assert_eq!(
            window_value(Kind::Counter, None, &[Reading::new(t0, 5.0)]),
            None
        );
    }
}
