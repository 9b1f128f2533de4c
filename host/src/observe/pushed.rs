//! Metrics pushed by the application or its orchestrator.
//!
//! [`channel`] returns a [`Reporter`], the sending half, and a [`PushedSource`], the
//! [`MetricSource`] the protocol polls. The daemon's gRPC `ReportMetric` client stream
//! calls [`Reporter::report_at`] once per message, with the time the sample was taken
//! when the client sent one; a test or the training collector can call [`Reporter::report`]
//! from any thread. Reporting never blocks and never waits for the protocol: readings are
//! stamped (on arrival, or with the client's time) and kept in a bounded buffer that drops
//! the oldest when nobody polls (between measurements nobody does, and only recent readings
//! matter).
//!
//! A client's time turns a pipe's buffering into no error at all: a sample read from a
//! program's output a second late still counts at the second it was taken. Samples of one
//! metric must come in time order, at most [`MAX_AGE`] old, and not ahead of this host's
//! clock by more than [`MAX_AHEAD`] (clock skew between hosts).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::source::{Kind, MetricSource, Reading, SourceError};

/// Readings kept between two polls. At 100 reports per second this is more than ten
/// minutes, far longer than any window.
const BUFFER: usize = 65_536;

/// The oldest sample taken: older ones describe a past no window covers any more.
pub const MAX_AGE: Duration = Duration::from_secs(600);

/// How far ahead of this host's clock a sample's time may be (another host's clock).
pub const MAX_AHEAD: Duration = Duration::from_secs(1);

/// Why a push or a poll failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PushedError {
    /// Every reporter is gone (the gRPC stream ended) and nothing is left to read.
    #[error("the pushed metric {name:?} has no reporter left: the stream that fed it ended")]
    Closed {
        /// The metric's name.
        name: String,
    },
    /// The source was dropped: nobody measures this metric any more.
    #[error("nobody is measuring the pushed metric {name:?} any more")]
    SourceGone {
        /// The metric's name.
        name: String,
    },
    /// The value is NaN or infinite, or a ratio was reported to a counter or the reverse.
    #[error("invalid report for {kind:?} metric {name:?}: {reason}")]
    Invalid {
        /// The metric's name.
        name: String,
        /// The metric's kind.
        kind: Kind,
        /// What is wrong with the value.
        reason: &'static str,
    },
    /// The sample's time is too old, ahead of this host's clock, or before the previous
    /// sample's.
    #[error("the sample for {name:?} cannot be used: it was taken {when}")]
    Time {
        /// The metric's name.
        name: String,
        /// When, relative to now or to the previous sample.
        when: String,
    },
}

struct Shared {
    name: String,
    kind: Kind,
    /// Held only to push or drain; never across an await.
    buffer: Mutex<Buffer>,
    reporters: AtomicUsize,
    source_alive: AtomicBool,
}

#[derive(Default)]
struct Buffer {
    readings: VecDeque<Reading>,
    /// The latest time pushed, drained or not: samples come in time order.
    last: Option<Instant>,
}

impl Shared {
    fn buffer(&self) -> MutexGuard<'_, Buffer> {
        // A panic while holding the lock leaves a valid deque: keep using it.
        self.buffer.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Creates a pushed metric called `name` whose reports mean `kind`.
pub fn channel(name: impl Into<String>, kind: Kind) -> (Reporter, PushedSource) {
    let shared = Arc::new(Shared {
        name: name.into(),
        kind,
        buffer: Mutex::new(Buffer::default()),
        reporters: AtomicUsize::new(1),
        source_alive: AtomicBool::new(true),
    });
    (
        Reporter {
            shared: Arc::clone(&shared),
        },
        PushedSource { shared },
    )
}

/// The sending half: cheap to clone, usable from sync and async code alike.
pub struct Reporter {
    shared: Arc<Shared>,
}

impl Reporter {
    /// Reports a counter total or a gauge level, stamped now.
    pub fn report(&self, value: f64) -> Result<(), PushedError> {
        self.report_at(value, None)
    }

    /// Reports a counter total or a gauge level taken at `taken` (wall clock), or now.
    pub fn report_at(&self, value: f64, taken: Option<SystemTime>) -> Result<(), PushedError> {
        if self.shared.kind == Kind::Ratio {
            return Err(self.invalid("a ratio metric takes report_ratio"));
        }
        let at = match taken {
            Some(taken) => self.instant(taken, SystemTime::now(), Instant::now())?,
            None => Instant::now(),
        };
        self.push(Reading::new(at, value))
    }

    /// The monotonic instant of a wall-clock time, given both clocks read now.
    fn instant(
        &self,
        taken: SystemTime,
        wall: SystemTime,
        now: Instant,
    ) -> Result<Instant, PushedError> {
        let time = |when: String| PushedError::Time {
            name: self.shared.name.clone(),
            when,
        };
        match wall.duration_since(taken) {
            Ok(age) if age > MAX_AGE => Err(time(format!(
                "{} s ago, more than the {} s kept",
                age.as_secs(),
                MAX_AGE.as_secs()
            ))),
            Ok(age) => Ok(now.checked_sub(age).unwrap_or(now)),
            Err(ahead) if ahead.duration() <= MAX_AHEAD => Ok(now),
            Err(ahead) => Err(time(format!(
                "{:.1} s ahead of this host's clock (more than {} s of skew)",
                ahead.duration().as_secs_f64(),
                MAX_AHEAD.as_secs()
            ))),
        }
    }

    /// Reports the two running totals of a ratio metric, stamped now.
    pub fn report_ratio(&self, numerator: f64, denominator: f64) -> Result<(), PushedError> {
        if self.shared.kind != Kind::Ratio {
            return Err(self.invalid("only a ratio metric takes report_ratio"));
        }
        if !denominator.is_finite() {
            return Err(self.invalid("the denominator is not finite"));
        }
        self.push(Reading::ratio(Instant::now(), numerator, denominator))
    }

    fn push(&self, reading: Reading) -> Result<(), PushedError> {
        if !reading.value.is_finite() {
            return Err(self.invalid("the value is not finite"));
        }
        if !self.shared.source_alive.load(Ordering::Acquire) {
            return Err(PushedError::SourceGone {
                name: self.shared.name.clone(),
            });
        }
        let mut buffer = self.shared.buffer();
        if let Some(last) = buffer.last.filter(|&last| reading.at < last) {
            return Err(PushedError::Time {
                name: self.shared.name.clone(),
                when: format!(
                    "{:.3} s before the previous sample (samples come in time order)",
                    (last - reading.at).as_secs_f64()
                ),
            });
        }
        buffer.last = Some(reading.at);
        if buffer.readings.len() == BUFFER {
            buffer.readings.pop_front();
        }
        buffer.readings.push_back(reading);
        Ok(())
    }

    fn invalid(&self, reason: &'static str) -> PushedError {
        PushedError::Invalid {
            name: self.shared.name.clone(),
            kind: self.shared.kind,
            reason,
        }
    }
}

impl Clone for Reporter {
    fn clone(&self) -> Self {
        self.shared.reporters.fetch_add(1, Ordering::AcqRel);
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        self.shared.reporters.fetch_sub(1, Ordering::AcqRel);
    }
}

impl std::fmt::Debug for Reporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reporter")
            .field("name", &self.shared.name)
            .finish_non_exhaustive()
    }
}

/// The receiving half, a [`MetricSource`].
pub struct PushedSource {
    shared: Arc<Shared>,
}

impl Drop for PushedSource {
    fn drop(&mut self) {
        self.shared.source_alive.store(false, Ordering::Release);
    }
}

impl std::fmt::Debug for PushedSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushedSource")
            .field("name", &self.shared.name)
            .field("kind", &self.shared.kind)
            .finish_non_exhaustive()
    }
}

impl From<PushedError> for SourceError {
    fn from(e: PushedError) -> Self {
        Self::failed(e)
    }
}

impl MetricSource for PushedSource {
    fn describe(&self) -> String {
        format!("pushed {}", self.shared.name)
    }

    fn kind(&self) -> Kind {
        self.shared.kind
    }

    fn is_pulled(&self) -> bool {
        false
    }

    async fn poll(&mut self) -> Result<Vec<Reading>, SourceError> {
        let drained: Vec<Reading> = self.shared.buffer().readings.drain(..).collect();
        if drained.is_empty() && self.shared.reporters.load(Ordering::Acquire) == 0 {
            return Err(PushedError::Closed {
                name: self.shared.name.clone(),
            }
            .into());
        }
        Ok(drained)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn readings_arrive_in_order_and_are_drained_once() {
        let (reporter, mut source) = channel("ops", Kind::Counter);
        reporter.report(1.0).unwrap();
        reporter.clone().report(2.0).unwrap();
        let got: Vec<f64> = source
            .poll()
            .await
            .unwrap()
            .iter()
            .map(|r| r.value)
            .collect();
        assert_eq!(got, vec![1.0, 2.0]);
        assert!(source.poll().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn the_stream_ending_is_an_error_once_drained() {
        let (reporter, mut source) = channel("ops", Kind::Gauge);
        reporter.report(5.0).unwrap();
        drop(reporter);
        assert_eq!(source.poll().await.unwrap().len(), 1);
        let err = source.poll().await.unwrap_err();
        assert!(
            matches!(err.failure(), Some(PushedError::Closed { .. })),
            "{err:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_time_dates_the_reading_and_bad_times_are_refused() {
        let (reporter, mut source) = channel("ops", Kind::Counter);
        tokio::time::advance(Duration::from_secs(3600)).await;
        let wall = SystemTime::now();
        let now = Instant::now();
        let at = |ago: u64| reporter.instant(wall - Duration::from_secs(ago), wall, now);
        assert_eq!(at(2).unwrap(), now - Duration::from_secs(2));
        let old = at(601).unwrap_err().to_string();
        assert!(old.contains("601 s ago, more than the 600 s kept"), "{old}");
        assert_eq!(
            reporter.instant(wall + Duration::from_millis(500), wall, now),
            Ok(now),
            "half a second of skew is now"
        );
        let ahead = reporter
            .instant(wall + Duration::from_secs(5), wall, now)
            .unwrap_err()
            .to_string();
        assert!(
            ahead.contains("5.0 s ahead of this host's clock"),
            "{ahead}"
        );
        // In order through report_at; one out of order is refused and changes nothing.
        // (The wall clock runs on between the calls while tokio's is paused: the gap shrinks
        // by that much, never grows.)
        let t0 = SystemTime::now() - Duration::from_secs(200);
        reporter.report_at(1.0, Some(t0)).unwrap();
        reporter
            .report_at(2.0, Some(t0 + Duration::from_secs(100)))
            .unwrap();
        let late = reporter.report_at(3.0, Some(t0)).unwrap_err().to_string();
        assert!(late.contains("s before the previous sample"), "{late}");
        let got = source.poll().await.unwrap();
        assert_eq!(got.len(), 2);
        let gap = got[1].at - got[0].at;
        assert!(
            gap <= Duration::from_secs(100) && gap > Duration::from_secs(90),
            "{gap:?}"
        );
        // The order holds across a drain too.
        assert!(reporter.report_at(4.0, Some(t0)).is_err());
    }

    #[test]
    fn bad_values_and_a_gone_source_are_refused() {
        let (reporter, source) = channel("ipc", Kind::Ratio);
        assert!(matches!(
            reporter.report(1.0),
            Err(PushedError::Invalid { .. })
        ));
        assert!(matches!(
            reporter.report_ratio(f64::NAN, 1.0),
            Err(PushedError::Invalid { .. })
        ));
        drop(source);
        assert!(matches!(
            reporter.report_ratio(1.0, 1.0),
            Err(PushedError::SourceGone { .. })
        ));
    }
}
