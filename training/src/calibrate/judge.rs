//! Whether calibration's figures can be trusted, decided from the measured values alone (no
//! hardware, so tested with made-up figures): every node set is measured in rounds of
//! [`REPEATS`] measurements, a round counts only when its measurements agree within
//! [`MAX_SPREAD`], and the accepted figures must look like an interconnect at all
//! (docs/training.md, "Calibration").

use std::fmt;

use placed_core::machine::MEASURED_RANGE;

/// How far the measurements of one round may disagree: (largest - smallest) / median.
/// Stream-triad bandwidth on an idle host repeats within a few percent; 15% leaves room for
/// that and for a busy neighbour's short burst, while the differences calibration exists to
/// find (a remote hop costs 20-60% of local bandwidth) stay well above it.
pub const MAX_SPREAD: f64 = 0.15;

/// Measurements per round.
pub const REPEATS: usize = 2;

/// Rounds per node set before calibration gives up on it: a disturbance that spoils one
/// round rarely spoils the next; a host that spoils three in a row is not quiet enough.
pub const ROUNDS: usize = 3;

/// The least a node set may measure relative to a set it contains. More nodes bring more
/// memory controllers; a little contention can cost some bandwidth, but a set that streams at
/// less than half of one of its parts is a measurement of something else (a descheduled
/// virtual CPU, a host under load).
pub const MIN_SUBSET_RATIO: f64 = 0.5;

/// Everything measured for one pair of nodes or one node set.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// What was measured, in words (`node set 0-1`).
    pub what: String,
    /// The node set, when threads and memory were both on it (a single node, a multi-node
    /// set); `None` for a remote pair, which is not a node set.
    pub set: Option<Vec<u32>>,
    /// Every round's measurements, in order; the last round is the one that counts.
    pub rounds: Vec<Vec<f64>>,
}

impl Measured {
    /// The figure written: the median of the last round.
    pub fn value(&self) -> f64 {
        self.rounds.last().map_or(f64::NAN, |r| median(r))
    }

    /// How far the last round's measurements disagree, relative to their median.
    pub fn spread(&self) -> f64 {
        self.rounds.last().map_or(f64::INFINITY, |r| spread(r))
    }
}

/// Whether to measure another round after `rounds`: the last one disagrees and the bound on
/// rounds is not reached.
pub fn another_round(rounds: &[Vec<f64>]) -> bool {
    let Some(last) = rounds.last() else {
        return true;
    };
    let agrees = last.len() >= REPEATS && spread(last) <= MAX_SPREAD;
    !agrees && rounds.len() < ROUNDS
}

/// (largest - smallest) / median; infinite for fewer than two values or a median <= 0.
pub fn spread(values: &[f64]) -> f64 {
    let m = median(values);
    if values.len() < 2 || !(m.is_finite() && m > 0.0) {
        return f64::INFINITY;
    }
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    (hi - lo) / m
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// One reason not to trust the figures.
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    /// No round's measurements agreed within [`MAX_SPREAD`].
    Unrepeatable {
        what: String,
        rounds: Vec<Vec<f64>>,
        spread: f64,
    },
    /// Not a bandwidth at all (the machine file cannot hold it, even with `--force`).
    NotPositive { what: String, value: f64 },
    /// A figure the machine model refuses to score (`placed_core::machine::MEASURED_RANGE`
    /// times the slowest node): no interconnect does that, and `--force` would only move the
    /// refusal to the daemon's start.
    OutOfRange {
        what: String,
        value: f64,
        slowest: String,
        slowest_value: f64,
    },
    /// A node set far slower than a set it contains.
    SlowerThanSubset {
        what: String,
        value: f64,
        subset: String,
        subset_value: f64,
    },
}

impl Problem {
    /// Whether `--force` can write the figures anyway.
    pub fn forceable(&self) -> bool {
        !matches!(
            self,
            Problem::NotPositive { .. } | Problem::OutOfRange { .. }
        )
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Unrepeatable {
                what,
                rounds,
                spread,
            } => {
                let rounds: Vec<String> = rounds
                    .iter()
                    .map(|r| {
                        let v: Vec<String> = r.iter().map(|x| format!("{x:.3e}")).collect();
                        format!("[{}]", v.join(", "))
                    })
                    .collect();
                write!(
                    f,
                    "{what}: measurements disagree by {:.0}% in the last of {} round(s) {} (bound {:.0}%)",
                    100.0 * spread,
                    rounds.len(),
                    rounds.join(" "),
                    100.0 * MAX_SPREAD
                )
            }
            Problem::NotPositive { what, value } => {
                write!(f, "{what}: {value} is not a bandwidth")
            }
            Problem::OutOfRange {
                what,
                value,
                slowest,
                slowest_value,
            } => write!(
                f,
                "{what}: {value:.3e} is {:.3e}x {slowest} ({slowest_value:.3e}), the slowest node; placement scores take {}x to {}x",
                value / slowest_value,
                MEASURED_RANGE.start,
                MEASURED_RANGE.end
            ),
            Problem::SlowerThanSubset {
                what,
                value,
                subset,
                subset_value,
            } => write!(
                f,
                "{what}: {value:.3e} is {:.2}x {subset} ({subset_value:.3e}), below {MIN_SUBSET_RATIO}x: more nodes cannot stream that much slower than fewer",
                value / subset_value
            ),
        }
    }
}

/// Everything wrong with a calibration's figures, in the order measured.
pub fn judge(all: &[Measured]) -> Vec<Problem> {
    let mut problems = Vec::new();
    for m in all {
        let value = m.value();
        if !(value.is_finite() && value > 0.0) {
            problems.push(Problem::NotPositive {
                what: m.what.clone(),
                value,
            });
        } else if m.spread() > MAX_SPREAD {
            problems.push(Problem::Unrepeatable {
                what: m.what.clone(),
                rounds: m.rounds.clone(),
                spread: m.spread(),
            });
        }
    }
    let sets: Vec<(&Measured, &Vec<u32>, f64)> = all
        .iter()
        .filter_map(|m| Some((m, m.set.as_ref()?, m.value())))
        .filter(|(_, _, v)| v.is_finite() && *v > 0.0)
        .collect();
    // The machine model scores every set relative to the slowest single node.
    let slowest = sets
        .iter()
        .filter(|(_, nodes, _)| nodes.len() == 1)
        .min_by(|a, b| a.2.total_cmp(&b.2));
    if let Some(&(slowest, _, slowest_value)) = slowest {
        for &(m, _, value) in &sets {
            if !MEASURED_RANGE.contains(&(value / slowest_value)) {
                problems.push(Problem::OutOfRange {
                    what: m.what.clone(),
                    value,
                    slowest: slowest.what.clone(),
                    slowest_value,
                });
            }
        }
    }
    for &(big, big_nodes, value) in &sets {
        for &(small, small_nodes, subset_value) in &sets {
            let proper = small_nodes.len() < big_nodes.len()
                && small_nodes.iter().all(|n| big_nodes.contains(n));
            if proper && value < MIN_SUBSET_RATIO * subset_value {
                problems.push(Problem::SlowerThanSubset {
                    what: big.what.clone(),
                    value,
                    subset: small.what.clone(),
                    subset_value,
                });
            }
        }
    }
    problems
}

/// Measures in rounds of [`REPEATS`] until a round agrees or [`ROUNDS`] are spent; `after`
/// hears each finished round (for the progress lines).
pub fn measure_rounds<E>(
    mut measure: impl FnMut() -> Result<f64, E>,
    mut after: impl FnMut(&[Vec<f64>]),
) -> Result<Vec<Vec<f64>>, E> {
    let mut rounds: Vec<Vec<f64>> = Vec::new();
    while another_round(&rounds) {
        let mut round = Vec::with_capacity(REPEATS);
        for _ in 0..REPEATS {
            round.push(measure()?);
        }
        rounds.push(round);
        after(&rounds);
    }
    Ok(rounds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(what: &str, set: Option<&[u32]>, rounds: &[&[f64]]) -> Measured {
        Measured {
            what: what.into(),
            set: set.map(<[u32]>::to_vec),
            rounds: rounds.iter().map(|r| r.to_vec()).collect(),
        }
    }

    /// A quiet 2-node host: local 10, remote 6, both nodes together 15.
    fn quiet() -> Vec<Measured> {
        vec![
            measured("node 0", Some(&[0]), &[&[10.0, 10.2]]),
            measured("threads on 0, memory on 1", None, &[&[6.0, 6.1]]),
            measured("threads on 1, memory on 0", None, &[&[6.1, 6.0]]),
            measured("node 1", Some(&[1]), &[&[9.9, 10.0]]),
            measured("node set 0-1", Some(&[0, 1]), &[&[15.0, 15.3]]),
        ]
    }

    #[test]
    fn a_quiet_host_passes() {
        assert_eq!(judge(&quiet()), []);
        assert!((quiet()[0].value() - 10.1).abs() < 1e-9);
    }

    #[test]
    fn measurements_that_disagree_in_every_round_are_refused_with_their_figures() {
        let mut all = quiet();
        all[4] = measured(
            "node set 0-1",
            Some(&[0, 1]),
            &[&[15.0, 9.0], &[14.0, 20.0], &[11.0, 16.0]],
        );
        let problems = judge(&all);
        assert_eq!(problems.len(), 1, "{problems:?}");
        let text = problems[0].to_string();
        assert!(
            text.starts_with("node set 0-1: measurements disagree by 37%"),
            "{text}"
        );
        assert!(
            text.contains("1.100e1, 1.600e1") && text.contains("3 round(s)"),
            "{text}"
        );
        assert!(problems[0].forceable());
        // A later round that agrees is what counts.
        all[4].rounds.push(vec![15.0, 15.5]);
        assert_eq!(judge(&all), []);
    }

    #[test]
    fn a_set_far_slower_than_its_part_is_refused() {
        // What a noisy virtual host wrote: four nodes together 100x slower than one.
        let mut all = quiet();
        all[4] = measured("node set 0-1", Some(&[0, 1]), &[&[0.1, 0.1]]);
        let problems = judge(&all);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(matches!(
            &problems[0],
            Problem::SlowerThanSubset { subset, .. } if subset == "node 0"
        ));
        assert!(
            problems[0].to_string().contains("0.01x node 0"),
            "{}",
            problems[0]
        );
        // Somewhat slower (contention) is not refused.
        all[4] = measured("node set 0-1", Some(&[0, 1]), &[&[8.0, 8.0]]);
        assert_eq!(judge(&all), []);
    }

    #[test]
    fn a_set_the_machine_model_would_not_score_cannot_be_forced() {
        let mut all = quiet();
        all[4] = measured("node set 0-1", Some(&[0, 1]), &[&[2.0e4, 2.0e4]]);
        let problems = judge(&all);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(!problems[0].forceable());
        let text = problems[0].to_string();
        assert!(text.contains("2.010e3x node 1"), "{text}");
    }

    #[test]
    fn a_value_that_is_not_a_bandwidth_cannot_be_forced() {
        let mut all = quiet();
        all[1] = measured("threads on 0, memory on 1", None, &[&[f64::NAN, 6.0]]);
        all[3] = measured("node 1", Some(&[1]), &[&[0.0, 0.0]]);
        let problems = judge(&all);
        assert!(
            !problems.is_empty() && problems.iter().all(|p| !p.forceable()),
            "{problems:?}"
        );
    }

    #[test]
    fn rounds_stop_at_agreement_or_at_the_bound() {
        let mut figures = [10.0, 14.0, 10.0, 10.5, 99.0].into_iter();
        let mut heard = 0;
        let rounds = measure_rounds(
            || figures.next().ok_or("no more"),
            |r: &[Vec<f64>]| heard = r.len(),
        )
        .unwrap();
        assert_eq!(rounds, [vec![10.0, 14.0], vec![10.0, 10.5]]);
        assert_eq!(heard, 2);

        let mut noisy = [1.0, 2.0].into_iter().cycle();
        let rounds = measure_rounds(|| Ok::<f64, ()>(noisy.next().unwrap_or(1.0)), |_| {}).unwrap();
        assert_eq!(rounds.len(), ROUNDS);
        // A failed measurement stops it with the error.
        let mut n = 0;
        let err = measure_rounds(
            || {
                n += 1;
                if n == 3 {
                    Err("gone")
                } else {
                    Ok(1.0 + n as f64)
                }
            },
            |_| {},
        );
        assert_eq!(err, Err("gone"));
    }
}
