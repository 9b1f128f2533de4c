//! Metrics pushed by the application or its orchestrator.
//!
//! [`channel`] returns a [`Reporter`], the sending half, and a [`PushedSource`], the
//! [`MetricSource`] the protocol polls. The daemon's gRPC `ReportMetric` client stream
//! calls [`Reporter::report`] once per message; a test or the training collector can call
//! it from any thread. Reporting never blocks and never waits for the protocol: readings are
//! stamped on arrival and kept in a bounded buffer that drops the oldest when nobody polls
//! (between measurements nobody does, and only recent readings matter).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::time::Instant;

use super::source::{Kind, MetricSource, Reading, SourceError};

/// Readings kept between two polls. At 100 reports per second this is more than ten
/// minutes, far longer than any window.
const BUFFER: usize = 65_536;

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
}

struct Shared {
    name: String,
    kind: Kind,
    /// Held only to push or drain; never across an await.
    buffer: Mutex<VecDeque<Reading>>,
    reporters: AtomicUsize,
    source_alive: AtomicBool,
}

impl Shared {
    fn buffer(&self) -> MutexGuard<'_, VecDeque<Reading>> {
        // A panic while holding the lock leaves a valid deque: keep using it.
        self.buffer.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Creates a pushed metric called `name` whose reports mean `kind`.
pub fn channel(name: impl Into<String>, kind: Kind) -> (Reporter, PushedSource) {
    let shared = Arc::new(Shared {
        name: name.into(),
        kind,
        buffer: Mutex::new(VecDeque::new()),
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
        if self.shared.kind == Kind::Ratio {
            return Err(self.invalid("a ratio metric takes report_ratio"));
        }
        self.push(Reading::new(Instant::now(), value))
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
        if buffer.len() == BUFFER {
            buffer.pop_front();
        }
        buffer.push_back(reading);
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
        let drained: Vec<Reading> = self.shared.buffer().drain(..).collect();
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
        assert!(matches!(
            source.poll().await,
            Err(SourceError::Pushed(PushedError::Closed { .. }))
        ));
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
