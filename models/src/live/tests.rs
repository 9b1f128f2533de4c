use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::interval::conformal_quantile;

fn outcome(predicted: f64, realized: f64, half: Option<f64>, goal: Option<f64>) -> Outcome {
    Outcome {
        model_id: "m".into(),
        provenance: Provenance::Simulated,
        placement: "p1".into(),
        predicted,
        interval: half.map(|h| Interval {
            low: predicted - h,
            high: predicted + h,
            level: 0.9,
        }),
        measured: false,
        realized,
        goal,
        unix_ms: 0,
    }
}

#[test]
fn an_outcome_is_scored_as_cross_validation_scores_a_cell() {
    let o = outcome(1.1, 1.0, Some(0.05), Some(0.9));
    assert!((o.error() - 10.0).abs() < 1e-9);
    assert_eq!(o.inside(), Some(false));
    assert_eq!(o.goal_kept(), Some(true));
    let measured = Outcome {
        measured: true,
        ..o.clone()
    };
    assert!(!measured.scored());
    assert_eq!(
        measured.inside(),
        None,
        "a measured cell is not the model's"
    );
    let s = LiveSummary::of([&o, &measured]);
    assert_eq!(
        (s.decisions, s.scored, s.with_goal, s.goal_kept),
        (2, 1, 2, 2)
    );
    assert_eq!(s.coverage(), Some(0.0));
    assert!((s.mean_error.unwrap() - 10.0).abs() < 1e-9);
}

#[test]
fn the_window_keeps_the_last_decisions_and_summarises_them() {
    let mut w = LiveWindow::new(3);
    for (p, half) in [(2.0, 0.1), (1.0, 0.1), (1.2, 0.1), (1.05, 0.1)] {
        w.push(outcome(p, 1.0, Some(half), Some(1.0)));
    }
    let s = w.summary();
    assert_eq!(s.decisions, 3, "the oldest (100% off) is gone");
    assert!((s.worst_error.unwrap() - 20.0).abs() < 1e-9, "{s:?}");
    assert_eq!((s.with_interval, s.covered), (3, 2));
    assert_eq!(s.goal_attainment(), Some(1.0));
    assert!((s.mean_error.unwrap() - 25.0 / 3.0).abs() < 1e-9);
}

#[test]
fn the_binomial_tail_is_exact_on_small_cases() {
    // P(X >= 2), X ~ Bin(3, 0.5) = 4/8.
    assert!((binomial_tail(3, 2, 0.5) - 0.5).abs() < 1e-12);
    assert!((binomial_tail(10, 0, 0.1) - 1.0).abs() < 1e-12);
    assert_eq!(binomial_tail(10, 11, 0.1), 0.0);
    // P(X >= 10), X ~ Bin(10, 0.1) = 1e-10.
    assert!((binomial_tail(10, 10, 0.1) / 1e-10 - 1.0).abs() < 1e-9);
    // Large n does not underflow to 0 where the tail is the whole mass.
    assert!((binomial_tail(2000, 1, 0.5) - 1.0).abs() < 1e-12);
}

#[test]
fn a_handful_of_misses_never_trips_the_gate() {
    let gate = LiveGate::default();
    let mut w = LiveWindow::new(100);
    for _ in 0..gate.min_decisions - 1 {
        w.push(outcome(2.0, 1.0, Some(0.01), None));
    }
    // Nine decisions, all missed: still pending.
    assert!(matches!(
        gate.judge(&w),
        Judgement::Pending { decisions: 9, .. }
    ));
    w.push(outcome(2.0, 1.0, Some(0.01), None));
    let j = gate.judge(&w);
    assert!(j.tripped(), "{j:?}");
    assert!(j.to_string().contains("10 of the last 10"), "{j}");
}

#[test]
fn decisions_without_an_interval_are_not_judged() {
    let gate = LiveGate::default();
    let mut w = LiveWindow::new(100);
    for _ in 0..30 {
        w.push(outcome(2.0, 1.0, None, None));
    }
    assert!(matches!(
        gate.judge(&w),
        Judgement::Pending { decisions: 0, .. }
    ));
}

#[test]
fn misses_at_the_nominal_rate_hold() {
    let gate = LiveGate::default();
    let mut w = LiveWindow::new(100);
    // Two misses in twenty at a 10% nominal miss rate: what an accurate model does.
    for i in 0..20 {
        let realized = if i % 10 == 0 { 1.5 } else { 1.0 };
        w.push(outcome(1.0, realized, Some(0.1), None));
    }
    let j = gate.judge(&w);
    assert!(
        matches!(j, Judgement::Holds { misses: 2, decisions: 20, threshold } if threshold > 2),
        "{j:?}"
    );
}

#[test]
fn the_computed_false_alarm_rate_matches_replayed_streams() {
    let gate = LiveGate::default();
    let exact = gate.false_alarm(0.1, 20);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let trials = 20_000;
    let mut trips = 0;
    for _ in 0..trials {
        let mut w = LiveWindow::new(gate.window);
        for _ in 0..20 {
            let miss = rng.r#gen::<f64>() < 0.1;
            w.push(outcome(1.0, if miss { 1.5 } else { 1.0 }, Some(0.1), None));
            if gate.judge(&w).tripped() {
                trips += 1;
                break;
            }
        }
    }
    let replayed = f64::from(trips) / f64::from(trials);
    // 20,000 trials: a standard error of about 0.05 points at 0.5%.
    assert!((replayed - exact).abs() < 0.003, "{replayed} vs {exact}");
    assert!(exact < 0.01, "{exact}");
}

/// A standard normal draw (Box-Muller).
fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = rng.r#gen::<f64>().max(f64::MIN_POSITIVE);
    let u2: f64 = rng.r#gen();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// A Laplace draw of unit scale: heavier tails than the normal.
fn laplace(rng: &mut ChaCha8Rng) -> f64 {
    let u: f64 = rng.r#gen::<f64>() - 0.5;
    -u.signum() * (1.0 - 2.0 * u.abs()).max(f64::MIN_POSITIVE).ln()
}

/// A simulated model: relative errors `scale x draw`, calibrated (relative score, level
/// 0.9) on 1,000 cross-validation cells as placed-train calibrates; returns the interval's
/// relative half-width and the cross-validated mean error (percent).
fn calibrate(rng: &mut ChaCha8Rng, draw: fn(&mut ChaCha8Rng) -> f64, scale: f64) -> (f64, f64) {
    let errors: Vec<f64> = (0..1000).map(|_| scale * draw(rng)).collect();
    let mut scores: Vec<f64> = errors.iter().map(|e| e.abs()).collect();
    let q = conformal_quantile(&mut scores, 0.9).expect("enough cells");
    let cv = errors
        .iter()
        .map(|e| e.abs() / (1.0 + e) * 100.0)
        .sum::<f64>()
        / 1000.0;
    (q, cv)
}

/// One production decision of a model whose errors are `scale x draw`.
fn decide(rng: &mut ChaCha8Rng, draw: fn(&mut ChaCha8Rng) -> f64, scale: f64, q: f64) -> Outcome {
    let predicted = 0.6 + 0.8 * rng.r#gen::<f64>();
    let realized = predicted * (1.0 + scale * draw(rng)).max(0.05);
    outcome(predicted, realized, Some(q * predicted), Some(0.9))
}

/// Decisions until the gate trips on a fresh stream, at most `limit`.
fn decisions_to_trip(
    rng: &mut ChaCha8Rng,
    gate: &LiveGate,
    draw: fn(&mut ChaCha8Rng) -> f64,
    scale: f64,
    q: f64,
    limit: usize,
    errors: &mut Vec<f64>,
) -> Option<usize> {
    let mut w = LiveWindow::new(gate.window);
    for n in 1..=limit {
        let o = decide(rng, draw, scale, q);
        errors.push(o.error());
        w.push(o);
        if gate.judge(&w).tripped() {
            return Some(n);
        }
    }
    None
}

/// SIMULATED: the figures docs/models.md gives for the live gate ("Live accuracy"). Run with
/// `cargo test -p placed-models --lib live::tests::simulated -- --nocapture` to print them.
#[test]
fn simulated_gate_trips_on_twice_the_error_and_rarely_on_an_accurate_model() {
    let gate = LiveGate::default();
    for (name, draw, scale) in [
        ("normal", normal as fn(&mut ChaCha8Rng) -> f64, 0.05),
        ("laplace", laplace as fn(&mut ChaCha8Rng) -> f64, 0.035),
    ] {
        let mut rng = ChaCha8Rng::seed_from_u64(26);
        let (q, cv) = calibrate(&mut rng, draw, scale);
        // An accurate model: 100 windows of 20 decisions, each judged after every decision.
        let mut accurate_errors = Vec::new();
        let tripped_windows = (0..100)
            .filter(|_| {
                decisions_to_trip(&mut rng, &gate, draw, scale, q, 20, &mut accurate_errors)
                    .is_some()
            })
            .count();
        let mut many = Vec::new();
        let tripped_of_10000 = (0..10_000)
            .filter(|_| decisions_to_trip(&mut rng, &gate, draw, scale, q, 20, &mut many).is_some())
            .count();
        // Twice the cross-validated error: the errors' scale doubled.
        let mut wrong_errors = Vec::new();
        let mut to_trip: Vec<usize> = (0..1000)
            .map(|_| {
                decisions_to_trip(
                    &mut rng,
                    &gate,
                    draw,
                    2.0 * scale,
                    q,
                    200,
                    &mut wrong_errors,
                )
                .unwrap_or(usize::MAX)
            })
            .collect();
        to_trip.sort_unstable();
        let within_20 = to_trip.iter().filter(|&&n| n <= 20).count();
        let median = to_trip[to_trip.len() / 2];
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let ratio = mean(&wrong_errors) / cv;
        eprintln!(
            "SIMULATED {name}: cv mean error {cv:.2}%, interval half-width {:.1}%; accurate: live mean error {:.2}%, tripped in {tripped_windows} of 100 windows of 20 ({tripped_of_10000} of 10,000; computed {:.2}%); twice as wrong (live mean error {:.2}%, {ratio:.2} x cv): tripped within 20 decisions in {within_20} of 1000 streams, median {median} decisions",
            q * 100.0,
            mean(&accurate_errors),
            gate.false_alarm(0.1, 20) * 100.0,
            mean(&wrong_errors),
        );
        assert!(
            tripped_of_10000 < 100,
            "{name}: {tripped_of_10000} of 10,000"
        );
        assert!((1.8..2.2).contains(&ratio), "{ratio}");
        // Normal errors: most streams trip within 20 decisions. Heavier tails move fewer
        // cells past the interval when the scale doubles, so the gate needs more of them.
        let (most, by) = if name == "normal" {
            (750, 20)
        } else {
            (400, 30)
        };
        assert!(within_20 >= most, "{name}: {within_20} of 1000");
        assert!(median <= by, "{name}: median {median}");
    }
}
