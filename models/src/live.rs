//! Every decision checked against what happened (docs/models.md, "Live accuracy").
//!
//! Cross-validation says how a model does on the training families; production says how it
//! does on this host's own workloads. After each decision (a move, or a decision to stay)
//! the daemon measures the container at the chosen placement, on the same metric and run of
//! the workload as the evaluation's baseline, and the [`Outcome`] sets that realized relative
//! performance against the predicted cell and its calibrated interval. A [`LiveWindow`] keeps
//! a model's last outcomes; the [`LiveGate`] judges them against what the calibration
//! promised.
//!
//! # The test
//!
//! A calibrated interval of level `L` holds the realized value with probability at least
//! `L` (conformal calibration on the held-out families, docs/models.md). So among `n`
//! decisions on cells with an interval, the misses of an accurate model are at most
//! Binomial(`n`, `1 - L`). The gate takes the last [`LiveGate::window`] such decisions and
//! trips when the one-sided binomial tail `P(X >= misses)` under that null is at most
//! [`LiveGate::significance`], judged after every decision once there are
//! [`LiveGate::min_decisions`]: a handful of misses never trips it. Because it is judged
//! again after each decision, its false-alarm rate over a window is larger than the
//! per-test significance; [`LiveGate::false_alarm`] computes it exactly (a recursion over
//! the decisions and their misses), so the figure the daemon and the docs give is computed,
//! not guessed.
//!
//! Cells that were measured rather than predicted (the baseline, the probe, a third
//! measurement) are kept as outcomes for goal attainment but not scored: their error says
//! how repeatable the measurement is, not how good the model is, and cross-validation does
//! not score them either.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::data::Provenance;
use crate::interval::Interval;

/// One decision set against what was measured afterwards at the chosen placement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The model the decision was made on.
    pub model_id: String,
    /// Where that model's training data came from.
    pub provenance: Provenance,
    /// The chosen placement (where the container was left or moved to).
    pub placement: String,
    /// Its predicted performance relative to the baseline.
    pub predicted: f64,
    /// Its calibrated interval, if the model has one for that cell.
    pub interval: Option<Interval>,
    /// Whether the cell was measured (baseline, probe, third measurement) rather than
    /// predicted: then it is not scored against the model.
    pub measured: bool,
    /// Performance measured there afterwards, relative to the same baseline observation.
    pub realized: f64,
    /// The goal the decision was made for (relative to the baseline), if any.
    pub goal: Option<f64>,
    /// When it was measured (ms since the epoch).
    pub unix_ms: i64,
}

impl Outcome {
    /// Absolute percentage error of the prediction, as cross-validation measures it
    /// (`|predicted - realized| / realized x 100`); infinite when nothing was realized.
    pub fn error(&self) -> f64 {
        if self.realized > 0.0 {
            (self.predicted - self.realized).abs() / self.realized * 100.0
        } else {
            f64::INFINITY
        }
    }

    /// Whether it counts against the model: a predicted cell, not a measured one.
    pub fn scored(&self) -> bool {
        !self.measured && self.realized.is_finite() && self.predicted.is_finite()
    }

    /// Whether the interval held what was realized; `None` without one, or when not scored.
    pub fn inside(&self) -> Option<bool> {
        self.interval
            .filter(|_| self.scored())
            .map(|i| i.contains(self.realized))
    }

    /// Whether the goal held; `None` without a goal.
    pub fn goal_kept(&self) -> Option<bool> {
        self.goal.map(|g| self.realized >= g)
    }
}

/// A model's outcomes over its last decisions, summarised.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LiveSummary {
    /// Decisions in the window.
    pub decisions: usize,
    /// Of those, on a predicted cell (scored).
    pub scored: usize,
    /// Mean absolute percentage error over the scored ones.
    pub mean_error: Option<f64>,
    /// Worst of them.
    pub worst_error: Option<f64>,
    /// Scored decisions whose cell had an interval.
    pub with_interval: usize,
    /// Of those, the ones whose interval held the realized value.
    pub covered: usize,
    /// The intervals' nominal level (the lowest seen, when several).
    pub level: Option<f64>,
    /// Decisions made for a goal.
    pub with_goal: usize,
    /// Of those, the ones whose goal held.
    pub goal_kept: usize,
}

impl LiveSummary {
    /// Fraction of intervals that held; `None` without any.
    pub fn coverage(&self) -> Option<f64> {
        (self.with_interval > 0).then(|| self.covered as f64 / self.with_interval as f64)
    }

    /// Fraction of goals kept; `None` without any.
    pub fn goal_attainment(&self) -> Option<f64> {
        (self.with_goal > 0).then(|| self.goal_kept as f64 / self.with_goal as f64)
    }

    /// Summarises `outcomes`.
    pub fn of<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> Self {
        let mut s = Self {
            decisions: 0,
            scored: 0,
            mean_error: None,
            worst_error: None,
            with_interval: 0,
            covered: 0,
            level: None,
            with_goal: 0,
            goal_kept: 0,
        };
        let mut sum = 0.0;
        for o in outcomes {
            s.decisions += 1;
            if let Some(kept) = o.goal_kept() {
                s.with_goal += 1;
                s.goal_kept += usize::from(kept);
            }
            if !o.scored() {
                continue;
            }
            s.scored += 1;
            let e = o.error();
            sum += e;
            s.worst_error = Some(s.worst_error.map_or(e, |w: f64| w.max(e)));
            if let Some(inside) = o.inside() {
                s.with_interval += 1;
                s.covered += usize::from(inside);
                let level = o.interval.map_or(1.0, |i| i.level);
                s.level = Some(s.level.map_or(level, |l: f64| l.min(level)));
            }
        }
        s.mean_error = (s.scored > 0).then(|| sum / s.scored as f64);
        s
    }
}

/// A model's last outcomes, oldest first, at most `capacity` of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveWindow {
    capacity: usize,
    outcomes: VecDeque<Outcome>,
}

impl LiveWindow {
    /// An empty window keeping the last `capacity` outcomes (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            outcomes: VecDeque::new(),
        }
    }

    /// Adds an outcome, dropping the oldest beyond the capacity.
    pub fn push(&mut self, outcome: Outcome) {
        if self.outcomes.len() == self.capacity {
            self.outcomes.pop_front();
        }
        self.outcomes.push_back(outcome);
    }

    /// Forgets every outcome (an operator re-enabled the model: it starts afresh).
    pub fn clear(&mut self) {
        self.outcomes.clear();
    }

    /// The outcomes kept, oldest first.
    pub fn outcomes(&self) -> impl DoubleEndedIterator<Item = &Outcome> + ExactSizeIterator {
        self.outcomes.iter()
    }

    /// Summary of the window.
    pub fn summary(&self) -> LiveSummary {
        LiveSummary::of(&self.outcomes)
    }
}

/// The live gate's test (module documentation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LiveGate {
    /// Scored decisions with an interval it looks at: the most recent ones.
    pub window: usize,
    /// Fewest of them before it judges at all.
    pub min_decisions: usize,
    /// Per-test significance of the one-sided binomial test.
    pub significance: f64,
}

/// The default window: 20 decisions, as the gate must trip within 20 decisions on a model
/// twice as wrong as cross-validation said.
pub const DEFAULT_WINDOW: usize = 20;
/// The default minimum: 10 decisions. Fewer say little (at a 10% nominal miss rate, three
/// misses in five decisions happen once in 117 windows of an accurate model).
pub const DEFAULT_MIN_DECISIONS: usize = 10;
/// The default per-test significance, chosen so that an accurate model trips the gate in
/// fewer than 1 of 100 windows of 20 decisions ([`LiveGate::false_alarm`]: 0.50% at the
/// nominal 10% miss rate, 0.79% at 11%, where a calibration fitted on a thousand cells may
/// really be), while a model twice as wrong as promised trips it within 20 decisions most
/// of the time (docs/models.md, "Live accuracy").
pub const DEFAULT_SIGNIFICANCE: f64 = 0.003;

impl Default for LiveGate {
    fn default() -> Self {
        Self {
            window: DEFAULT_WINDOW,
            min_decisions: DEFAULT_MIN_DECISIONS,
            significance: DEFAULT_SIGNIFICANCE,
        }
    }
}

/// What the gate says of a model's recent decisions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Judgement {
    /// Too few decisions with an interval to judge.
    Pending {
        /// Scored decisions with an interval so far.
        decisions: usize,
        /// How many it needs.
        needed: usize,
    },
    /// Misses within what the calibration allows.
    Holds {
        /// Decisions judged.
        decisions: usize,
        /// Intervals missed.
        misses: usize,
        /// Misses that would trip it.
        threshold: usize,
    },
    /// Significantly more misses than the calibration allows: stop acting on the model.
    Trips {
        /// Decisions judged.
        decisions: usize,
        /// Intervals missed.
        misses: usize,
        /// The nominal miss rate (1 - level).
        miss_rate: f64,
        /// `P(X >= misses)` for X ~ Binomial(decisions, miss_rate).
        p_value: f64,
    },
}

impl Judgement {
    /// Whether the model must stop moving containers.
    pub fn tripped(&self) -> bool {
        matches!(self, Self::Trips { .. })
    }
}

impl std::fmt::Display for Judgement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Pending { decisions, needed } => write!(
                f,
                "{decisions} of the {needed} decisions with an interval the live gate needs to judge"
            ),
            Self::Holds {
                decisions,
                misses,
                threshold,
            } => write!(
                f,
                "{misses} of the last {decisions} intervals missed (the gate trips at {threshold})"
            ),
            Self::Trips {
                decisions,
                misses,
                miss_rate,
                p_value,
            } => write!(
                f,
                "{misses} of the last {decisions} calibrated intervals missed what was measured, where the model promised at most {:.0}% misses (one-sided binomial test, p = {p_value:.2e})",
                miss_rate * 100.0
            ),
        }
    }
}

impl LiveGate {
    /// Misses among `n` that trip the gate at a nominal `miss_rate`: the smallest `k` with
    /// `P(X >= k) <= significance`; `n + 1` when no count is that unlikely.
    pub fn threshold(&self, n: usize, miss_rate: f64) -> usize {
        (0..=n)
            .find(|&k| binomial_tail(n, k, miss_rate) <= self.significance)
            .unwrap_or(n + 1)
    }

    /// Judges a model's window: its last [`LiveGate::window`] scored decisions with an
    /// interval.
    pub fn judge(&self, window: &LiveWindow) -> Judgement {
        let judged: Vec<&Outcome> = window
            .outcomes()
            .rev()
            .filter(|o| o.inside().is_some())
            .take(self.window)
            .collect();
        let decisions = judged.len();
        if decisions < self.min_decisions.max(1) {
            return Judgement::Pending {
                decisions,
                needed: self.min_decisions.max(1),
            };
        }
        let misses = judged.iter().filter(|o| o.inside() == Some(false)).count();
        // The weakest promise among them: the lowest level misses most.
        let level = judged
            .iter()
            .filter_map(|o| o.interval.map(|i| i.level))
            .fold(1.0_f64, f64::min);
        let miss_rate = (1.0 - level).clamp(0.0, 1.0);
        let threshold = self.threshold(decisions, miss_rate);
        if misses >= threshold {
            Judgement::Trips {
                decisions,
                misses,
                miss_rate,
                p_value: binomial_tail(decisions, misses, miss_rate),
            }
        } else {
            Judgement::Holds {
                decisions,
                misses,
                threshold,
            }
        }
    }

    /// The probability that a model missing each interval independently with probability
    /// `miss_rate` trips the gate within its first `decisions` decisions (judged after each
    /// one from [`LiveGate::min_decisions`] on, as the daemon judges), computed exactly:
    /// the distribution of misses not yet tripped, carried from one decision to the next.
    /// Up to [`LiveGate::window`] decisions this is the gate exactly; beyond, the window
    /// slides and the figure is the rate of a gate that never forgets (an upper bound on
    /// the sliding gate's for the first window, not a steady-state rate).
    pub fn false_alarm(&self, miss_rate: f64, decisions: usize) -> f64 {
        let mut alive = vec![1.0_f64];
        let mut tripped = 0.0;
        for n in 1..=decisions {
            let mut next = vec![0.0; alive.len() + 1];
            for (k, p) in alive.iter().enumerate() {
                next[k] += p * (1.0 - miss_rate);
                next[k + 1] += p * miss_rate;
            }
            if n >= self.min_decisions.max(1) {
                let threshold = self.threshold(n, miss_rate);
                for p in next.iter_mut().skip(threshold) {
                    tripped += *p;
                    *p = 0.0;
                }
            }
            alive = next;
        }
        tripped
    }
}

/// `P(X >= k)` for X ~ Binomial(n, p).
pub fn binomial_tail(n: usize, k: usize, p: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > n {
        return 0.0;
    }
    if p <= 0.0 {
        return 0.0;
    }
    if p >= 1.0 {
        return 1.0;
    }
    // Each term from the previous one: C(n, i+1) p^(i+1) q^(n-i-1) = term x (n-i)/(i+1) x p/q,
    // started in logs so that q^n does not underflow for large n.
    let (q, nf) = (1.0 - p, n as f64);
    let mut log_term = nf * q.ln();
    let mut sum = 0.0;
    for i in 0..=n {
        if i >= k {
            sum += log_term.exp();
        }
        let fi = i as f64;
        log_term += ((nf - fi) / (fi + 1.0)).ln() + (p / q).ln();
    }
    sum.min(1.0)
}

#[cfg(test)]
mod tests;
