//! When a watched container has really left its prediction: its observed interval and the
//! prediction's interval no longer overlap, for several watch measurements in a row, and
//! not within the cool-down after its last evaluation (docs/daemon.md, "Drift"). One
//! measurement 64% away while both intervals cover each other is noise, not evidence.

use std::time::Duration;

/// The prediction's interval for the container's current placement, in the metric's unit:
/// the baseline observation's interval times the predicted ratio's range (the model's
/// calibrated interval, or two standard deviations across trees from a model without one,
/// [`crate::state::PredictedRecord::relative_range`]), and never narrower than `tolerance`
/// (`policy.drift`) either side of the point prediction, so a confident model does not
/// chase a few percent.
pub(crate) fn predicted_interval(
    baseline: (f64, f64, f64),
    relative: f64,
    range: (f64, f64),
    tolerance: f64,
) -> (f64, f64) {
    let (lo, value, hi) = baseline;
    let center = value * relative;
    let low = (lo * range.0).min(center * (1.0 - tolerance));
    let high = (hi * range.1).max(center * (1.0 + tolerance));
    (low, high)
}

/// Whether two closed intervals share a point.
pub(crate) fn overlap(a: (f64, f64), b: (f64, f64)) -> bool {
    a.0 <= b.1 && b.0 <= a.1
}

/// What one watch measurement decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The intervals overlap: the count of measurements off starts again.
    Holds,
    /// Off its prediction `count` times in a row, fewer than the rule's.
    Off { count: u32 },
    /// Off often enough, but within the cool-down after the last evaluation: watched on,
    /// re-evaluated once the cool-down is over if still off.
    CoolingDown { count: u32, left: Duration },
    /// Evaluate again.
    Reevaluate { count: u32 },
}

/// The drift rule: `windows` consecutive measurements off, none within `cooldown` of the
/// last evaluation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rule {
    pub windows: u32,
    pub cooldown: Duration,
}

impl Rule {
    /// Judges one measurement; `count` is the run of measurements off so far, updated here.
    pub(crate) fn judge(&self, off: bool, count: &mut u32, since_evaluation: Duration) -> Verdict {
        if !off {
            *count = 0;
            return Verdict::Holds;
        }
        *count = count.saturating_add(1);
        if *count < self.windows.max(1) {
            return Verdict::Off { count: *count };
        }
        if since_evaluation < self.cooldown {
            return Verdict::CoolingDown {
                count: *count,
                left: self.cooldown - since_evaluation,
            };
        }
        Verdict::Reevaluate { count: *count }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: Rule = Rule {
        windows: 3,
        cooldown: Duration::from_secs(600),
    };
    const LATE: Duration = Duration::from_secs(3600);

    #[test]
    fn the_issue_s_noisy_measurement_overlaps_its_prediction() {
        // Baseline 100 [60, 140] (a noisy workload), predicted ratio 1.0 with spread 0.1:
        // one measurement 64% higher but with interval [120, 210] is no evidence of drift.
        let predicted = predicted_interval((60.0, 100.0, 140.0), 1.0, (0.8, 1.2), 0.15);
        assert!(overlap((120.0, 210.0), predicted), "{predicted:?}");
        // A steady one far off is.
        assert!(!overlap((180.0, 190.0), predicted), "{predicted:?}");
    }

    #[test]
    fn a_confident_prediction_is_still_given_the_tolerance() {
        let (lo, hi) = predicted_interval((100.0, 100.0, 100.0), 1.5, (1.5, 1.5), 0.15);
        assert!(
            (lo - 127.5).abs() < 1e-9 && (hi - 172.5).abs() < 1e-9,
            "{lo} {hi}"
        );
    }

    #[test]
    fn a_calibrated_interval_wider_than_two_spreads_is_the_one_used() {
        use crate::state::PredictedRecord;
        use placed_models::interval::Interval;
        let mut cell = PredictedRecord {
            placement: "p1".into(),
            relative: 1.0,
            spread: 0.01,
            measured: false,
            interval: None,
        };
        // Uncalibrated: two spreads, 0.98-1.02, widened to the 15% tolerance.
        let old = predicted_interval((100.0, 100.0, 100.0), 1.0, cell.relative_range(), 0.15);
        assert!(!overlap((130.0, 135.0), old), "{old:?}");
        // The model's calibrated interval says the trees were overconfident here.
        cell.interval = Some(Interval {
            low: 0.7,
            high: 1.4,
            level: 0.9,
        });
        let new = predicted_interval((100.0, 100.0, 100.0), 1.0, cell.relative_range(), 0.15);
        assert!(overlap((130.0, 135.0), new), "{new:?}");
        assert!((new.0 - 70.0).abs() < 1e-9 && (new.1 - 140.0).abs() < 1e-9);
    }

    #[test]
    fn only_consecutive_windows_off_count() {
        let mut count = 0;
        assert_eq!(
            RULE.judge(true, &mut count, LATE),
            Verdict::Off { count: 1 }
        );
        assert_eq!(
            RULE.judge(true, &mut count, LATE),
            Verdict::Off { count: 2 }
        );
        // One window within its prediction starts the count again.
        assert_eq!(RULE.judge(false, &mut count, LATE), Verdict::Holds);
        assert_eq!(
            RULE.judge(true, &mut count, LATE),
            Verdict::Off { count: 1 }
        );
        assert_eq!(
            RULE.judge(true, &mut count, LATE),
            Verdict::Off { count: 2 }
        );
        assert_eq!(
            RULE.judge(true, &mut count, LATE),
            Verdict::Reevaluate { count: 3 }
        );
    }

    #[test]
    fn no_second_evaluation_within_the_cool_down() {
        let mut count = 2;
        assert_eq!(
            RULE.judge(true, &mut count, Duration::from_secs(240)),
            Verdict::CoolingDown {
                count: 3,
                left: Duration::from_secs(360)
            }
        );
        // Still off once the cool-down is over: now it is evidence.
        assert_eq!(
            RULE.judge(true, &mut count, Duration::from_secs(601)),
            Verdict::Reevaluate { count: 4 }
        );
    }
}
