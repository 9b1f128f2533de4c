//! Observation: how fast a container runs in its current placement (docs/design.md, "Observation").
//!
//! # What it offers
//!
//! - Metric sources behind one trait, [`MetricSource`]: [`pushed`] by the application or
//!   the orchestrator (fed by the daemon's gRPC stream), [`prometheus`] scrapes, [`perf`]
//!   hardware counters on the container's cgroup (refused with [`PerfError::NoPmu`] where
//!   the host has no PMU, never zeros; [`probe_pmu`] tells at start-up whether to offer
//!   it), an operator's [`command`], and [`pattern`]: a number taken by regex from the lines
//!   a program prints or a file gains.
//! - [`measure`]: the protocol of [`Protocol`] (warm-up, fixed sub-windows, noise recorded
//!   per window by a [`NoiseProbe`], disturbed windows dropped and replaced, median with a
//!   distribution-free interval), giving a [`Measurement`].
//! - [`compare`]: two measurements of one run of the workload as a ratio with its interval
//!   and a [`Verdict`] (higher, lower, equivalent, inconclusive).
//! - [`block_on`] for synchronous callers (the training collector).
//!
//! # Layout
//!
//! - [`source`]: the trait, readings, and the arithmetic from readings to a window's value.
//! - [`pushed`], [`prometheus`], [`perf`], [`command`], [`pattern`]: the five sources; `spec`: a source
//!   described as data ([`SourceSpec`]) and built into [`AnySource`], which owns any of them.
//! - [`noise`]: per-window noise figures from procfs/sysfs, and the run (incarnation) measured.
//! - `disturbance`: which windows to drop. `stats`: medians and rank-based intervals.
//! - `protocol`: the measurement loop and its defaults. `compare`: the verdict.

pub mod command;
mod compare;
mod disturbance;
pub mod noise;
pub mod pattern;
pub mod perf;
pub mod prometheus;
mod protocol;
pub mod pushed;
pub mod source;
mod spec;
mod stats;
#[cfg(test)]
pub(crate) mod testing;

pub use self::command::{
    CommandConfig, CommandError, CommandSource, Commands, RunAs, check_allowed,
};
pub use self::compare::{CompareError, Comparison, Verdict, compare};
pub use self::disturbance::{Disturbance, DisturbanceRules, Indicator};
pub use self::noise::{Incarnation, Noise, NoiseError, NoiseProbe, ProcProbe, Target};
pub use self::pattern::{
    LineMetric, LinePattern, Lines, Mode, PatternError, PatternInput, PatternSource, Stream,
};
pub use self::perf::{
    BudgetExhausted, FdBudget, Perf, PerfError, PerfEvent, PerfMetric, PerfSource, probe_pmu,
};
pub use self::prometheus::{PrometheusConfig, PrometheusError, PrometheusSource};
pub use self::protocol::{Measurement, ObserveError, Protocol, WindowRecord, block_on, measure};
pub use self::pushed::{PushedError, PushedSource, Reporter};
pub use self::source::{Kind, MetricSource, Reading, SourceError};
pub use self::spec::{Access, AnySource, SourceSpec, SourceTimeouts, SpecError};
pub use self::stats::{
    Estimate, coefficient_of_variation, median, median_interval, ratio_interval,
};
