//! One measurement's attempts: each in a fresh cgroup with a fresh start of the workload,
//! each retry with longer windows. An attempt the protocol refuses is retried; so is one
//! whose interval is wider than the bound (`--max-interval`), and when every attempt was too
//! wide the measurement is recorded as unusable rather than learned from
//! (docs/training.md, "Measurements that are not good enough").
//!
//! The one measured-run procedure of placed-train: the collector measures each workload in
//! each placement through it, and calibration each node set's bandwidth.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use placed_core::cpuset::{CpuSet, NodeSet};
use placed_core::text::error_line;
use placed_host::observe::{Measurement as Observed, ProcProbe, Protocol, Target};

use super::counters::{self, RunCounters};
use super::{CollectError, Job, Parent, Scratch};
use crate::interrupt;
use crate::workloads::Launch;

/// The default bound on a measurement's 95% interval, as a half-width relative to the
/// median. Placements the model must tell apart differ by 5-50%, and the accuracy gate
/// allows a 10% mean error: a record known only to +/-10% would spend that budget alone.
pub const DEFAULT_MAX_INTERVAL: f64 = 0.10;

/// What the attempts of one measurement came to.
#[derive(Debug)]
pub enum Outcome {
    /// A measurement within the bound, with the run's hardware counters (empty where the
    /// PMU does not allow them).
    Measured(Observed, BTreeMap<String, f64>),
    /// Every attempt that measured was wider than the bound: recorded, as not a number.
    Unusable { reason: String },
    /// Every attempt failed (refused, workload failed): nothing to record; the last reason.
    Failed(String),
}

/// The relative half-width of a measurement's interval.
pub fn relative_interval(m: &Observed) -> f64 {
    ((m.estimate.hi - m.estimate.lo) / 2.0).max(0.0) / m.estimate.value
}

/// A fraction as a percentage with a precision that does not round a small bound to 0.
fn percent(fraction: f64) -> String {
    let p = 100.0 * fraction;
    if p >= 1.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.2e}%")
    }
}

/// One measurement: a workload on a set of PUs and nodes, under a protocol.
#[derive(Debug, Clone, Copy)]
pub struct Measure<'a> {
    pub job: &'a dyn Job,
    pub cpus: &'a CpuSet,
    pub mems: &'a NodeSet,
    /// The workload's threads (the container size it stands for).
    pub threads: usize,
    /// The protocol of the first attempt; the job's minimum window and each retry make its
    /// windows longer.
    pub protocol: &'a Protocol,
    /// The `placed-train` binary, which runs the built-in kernels.
    pub exe: &'a Path,
    /// Further attempts after one the protocol refuses (or whose workload fails), or whose
    /// interval is wider than `max_interval`.
    pub retries: u32,
    /// Widest acceptable interval, as a half-width relative to the median
    /// ([`DEFAULT_MAX_INTERVAL`]; infinite for no bound).
    pub max_interval: f64,
    /// Names the attempts' scratch directories below the caller's scratch root.
    pub tag: &'a str,
}

/// Runs up to `1 + retries` attempts of one measurement, counting each run's hardware
/// events with `counters` when given.
pub fn measure(
    m: &Measure<'_>,
    parent: &mut Parent,
    scratch_root: &Path,
    mut counters: Option<&mut RunCounters>,
) -> Result<Outcome, CollectError> {
    let tries = m.retries + 1;
    let mut last_error = String::new();
    let mut widths: Vec<f64> = Vec::new();
    for attempt in 0..tries {
        if interrupt::raised() {
            return Err(CollectError::Interrupted {
                signal: interrupt::signal(),
            });
        }
        let scratch = scratch_root.join(format!("{}-{attempt}", m.tag));
        match measure_once(m, attempt, parent, &scratch, counters.as_deref_mut())? {
            Ok((measured, counted)) => {
                let width = relative_interval(&measured);
                if width <= m.max_interval {
                    return Ok(Outcome::Measured(measured, counted));
                }
                let next = if attempt + 1 < tries {
                    "; measuring again with longer windows"
                } else {
                    ""
                };
                eprintln!(
                    "placed-train:   attempt {} of {tries}: interval +/-{} is wider than +/-{}{next}",
                    attempt + 1,
                    percent(width),
                    percent(m.max_interval)
                );
                widths.push(width);
            }
            Err(why) => {
                eprintln!(
                    "placed-train:   attempt {} of {tries} failed: {why}",
                    attempt + 1
                );
                last_error = why;
            }
        }
    }
    if widths.is_empty() {
        return Ok(Outcome::Failed(last_error));
    }
    let shown: Vec<String> = widths
        .iter()
        .map(|w| format!("+/-{}", percent(*w)))
        .collect();
    Ok(Outcome::Unusable {
        reason: fit_record(format!(
            "95% interval wider than the bound of +/-{} in {} of {tries} attempt(s) ({}){}",
            percent(m.max_interval),
            widths.len(),
            shown.join(", "),
            if last_error.is_empty() {
                String::new()
            } else {
                format!("; other attempts failed: {last_error}")
            }
        )),
    })
}

/// The reason cut to what a data file may hold ([`placed_models::data::MAX_NAME`]
/// characters), ending in `...` when cut: four attempts' widths and another attempt's error
/// passed the bound, and the loader then refused the file its own collector wrote.
fn fit_record(reason: String) -> String {
    let max = placed_models::data::MAX_NAME;
    if reason.chars().count() <= max {
        return reason;
    }
    let mut cut: String = reason.chars().take(max - 3).collect();
    cut.push_str("...");
    cut
}

/// A measurement and the run's counters.
type Counted = (Observed, BTreeMap<String, f64>);

/// One attempt: cgroup, launch, measure, stop, remove. The outer error is fatal (cgroups,
/// signals), the inner one a failed attempt worth retrying.
fn measure_once(
    m: &Measure<'_>,
    attempt: u32,
    parent: &mut Parent,
    scratch: &Path,
    counters: Option<&mut RunCounters>,
) -> Result<Result<Counted, String>, CollectError> {
    let cgroup = parent.run(m.cpus, m.mems)?;
    let scratch = Scratch::create(scratch)?;
    let extra = cgroup.extra_dirs();
    let launch = Launch {
        threads: m.threads,
        cgroup_dir: cgroup.dir(),
        extra_cgroup_dirs: &extra,
        scratch: &scratch.0,
        exe: m.exe,
    };
    let mut running = match m.job.start(&launch) {
        Ok(r) => r,
        Err(e) => return Ok(Err(e.to_string())),
    };
    // Open from the start to the end of the measurement: the run's counters, warm-up
    // included, summed over its PUs.
    let mut open = counters.and_then(|c| c.open(cgroup.perf_dir(), m.cpus));
    let probe = ProcProbe::new(
        Target::Cgroup(cgroup.dir().to_owned()),
        Some(m.cpus.clone()),
    );
    // A workload whose rate moves in coarse steps needs windows at least that long.
    let mut protocol = m.protocol.clone();
    if let Some(min) = m.job.min_window() {
        protocol.window = protocol.window.max(min);
    }
    protocol.window = longer_window(protocol.window, attempt);
    let outcome = placed_host::observe::block_on(async {
        tokio::select! {
            measured = placed_host::observe::measure(running.source(), &probe, &protocol) => {
                Some(measured)
            }
            () = interrupt::wait() => None,
        }
    });
    let counted = open.as_mut().map(counters::record).unwrap_or_default();
    drop(open);
    if let Err(e) = running.stop() {
        tracing::warn!(error = %e, "stopping the workload failed; its cgroup is emptied anyway");
    }
    drop(cgroup);
    match outcome {
        Err(e) => Ok(Err(error_line(&e))),
        Ok(None) => Err(CollectError::Interrupted {
            signal: interrupt::signal(),
        }),
        Ok(Some(Err(e))) => Ok(Err(error_line(&e))),
        Ok(Some(Ok(measured))) => {
            let rate = measured.estimate.value;
            if rate.is_finite() && rate > 0.0 {
                Ok(Ok((measured, counted)))
            } else {
                Ok(Err(format!("the workload made no progress (rate {rate})")))
            }
        }
    }
}

/// The window for a retry: most refusals on a slow host (a guest, an emulated one above
/// all) come from a workload whose rate advances in steps longer than the window (a
/// counter that did not move, a window without a reading), so each retry doubles it, up to
/// 4 s.
pub fn longer_window(window: Duration, attempt: u32) -> Duration {
    let longer = window.saturating_mul(1 << attempt.min(4));
    longer.min(Duration::from_secs(4)).max(window)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_bounds_are_not_shown_as_zero() {
        assert_eq!(percent(0.1), "10.0%");
        assert_eq!(percent(0.000_000_01), "1.00e-6%");
    }

    #[test]
    fn retries_double_the_window_up_to_4_s() {
        let w = Duration::from_millis(500);
        assert_eq!(longer_window(w, 0), w);
        assert_eq!(longer_window(w, 1), Duration::from_secs(1));
        assert_eq!(longer_window(w, 9), Duration::from_secs(4));
    }

    /// Found by the collector's own test on a busy host: four attempts' widths made a
    /// reason of 203 characters, which the data file's loader refused.
    #[test]
    fn a_long_reason_is_cut_to_what_a_data_file_holds() {
        let max = placed_models::data::MAX_NAME;
        let short = "95% interval wider than the bound".to_owned();
        assert_eq!(fit_record(short.clone()), short);
        let long = format!("{short} {}", "é".repeat(500));
        let cut = fit_record(long);
        assert_eq!(cut.chars().count(), max);
        assert!(cut.ends_with("...") && cut.starts_with(&short), "{cut}");
    }
}
