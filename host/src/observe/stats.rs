//! Distribution-free statistics for sub-window rates: the median with an order-statistic
//! interval, and the ratio of two placements as a Hodges–Lehmann shift of log rates with
//! the Mann–Whitney (Moses) interval.
//!
//! Why distribution-free: sub-window rates on a shared host are not normal. They have a
//! tight core and a tail of disturbed windows; a busy neighbour can slow a window by orders
//! of magnitude (Kozak, *Chasing Zero Variability in Software Performance*, table 3.2: 2 of 10 trials took 80x
//! longer under `make -j`). A mean and a t-interval follow that tail; ranks do not. The seeds
//! that report means (Dawson, JabPerf blog, "5-level vs 4-level page tables": 30 runs,
//! mean and t-based 95% CI, harmonic mean for throughputs) work on quiesced machines; the
//! daemon cannot quiesce the host it manages, so it relies on ranks instead.
//!
//! The Moses interval is exact for continuous i.i.d. samples that differ by a shift, so two
//! identical placements are declared different in at most `1 - confidence` of comparisons,
//! whatever the shape of the noise. Working on logs turns the shift into a ratio, which is
//! what the models consume (docs/design.md, "Observation").

/// An estimate with a two-sided interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Estimate {
    /// The point estimate.
    pub value: f64,
    /// Lower end of the interval.
    pub lo: f64,
    /// Upper end of the interval.
    pub hi: f64,
    /// The coverage the interval really has: order statistics only reach discrete levels,
    /// so this is the smallest level at or above the one asked for.
    pub confidence: f64,
}

/// Above this many pooled samples the Mann–Whitney null distribution is replaced by its
/// normal approximation: the exact counts are `C(m+n, m)`, which overflow `i128` beyond
/// `m + n = 124` (`C(124, 62)` is about 1.8e36; 1.7e38 is the limit).
const EXACT_POOLED_LIMIT: usize = 120;

/// The median of `xs`, or `None` when `xs` is empty or holds a NaN.
pub fn median(xs: &[f64]) -> Option<f64> {
    let sorted = sorted(xs)?;
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    Some(if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    })
}

/// Coefficient of variation (sample standard deviation over mean), or `None` for fewer than
/// two samples or a zero mean.
pub fn coefficient_of_variation(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if mean == 0.0 || !mean.is_finite() {
        return None;
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some(var.sqrt() / mean.abs())
}

/// The median of `xs` with a distribution-free interval from order statistics: the `k`-th
/// smallest and `k`-th largest sample, with `k` the largest rank whose binomial tail stays
/// within `(1 - confidence) / 2`.
///
/// `None` when `xs` is too short to reach `confidence` at all (at 95%: fewer than 6
/// samples, since even the widest interval, min to max, misses with probability `2 / 2^n`).
pub fn median_interval(xs: &[f64], confidence: f64) -> Option<Estimate> {
    let sorted = sorted(xs)?;
    let n = sorted.len();
    let value = median(&sorted)?;
    let alpha_half = (1.0 - confidence) / 2.0;
    // cdf[i] = P(B <= i) for B ~ Binomial(n, 1/2).
    let cdf = binomial_half_cdf(n);
    // The interval [x_(k), x_(n+1-k)] (1-based) misses the median with probability
    // 2 * P(B <= k - 1).
    let k = (1..=n / 2)
        .take_while(|&k| cdf[k - 1] <= alpha_half)
        .last()?;
    Some(Estimate {
        value,
        lo: sorted[k - 1],
        hi: sorted[n - k],
        confidence: 1.0 - 2.0 * cdf[k - 1],
    })
}

/// The ratio `b / a` of two positive samples: `exp` of the Hodges–Lehmann shift between
/// `ln b` and `ln a` (the median of all pairwise differences), with the Moses interval.
///
/// `None` when a sample holds a value that is not positive and finite, or when the samples
/// are too short to reach `confidence`.
pub fn ratio_interval(a: &[f64], b: &[f64], confidence: f64) -> Option<Estimate> {
    let log = |xs: &[f64]| -> Option<Vec<f64>> {
        xs.iter()
            .map(|&x| (x > 0.0 && x.is_finite()).then(|| x.ln()))
            .collect()
    };
    let (la, lb) = (log(a)?, log(b)?);
    let shift = shift_interval(&la, &lb, confidence)?;
    Some(Estimate {
        value: shift.value.exp(),
        lo: shift.lo.exp(),
        hi: shift.hi.exp(),
        confidence: shift.confidence,
    })
}

/// Hodges–Lehmann shift `b - a` with the Moses interval: the `K`-th smallest and `K`-th
/// largest of the `m * n` pairwise differences, `K` from the Mann–Whitney null distribution.
fn shift_interval(a: &[f64], b: &[f64], confidence: f64) -> Option<Estimate> {
    let (m, n) = (a.len(), b.len());
    if m == 0 || n == 0 {
        return None;
    }
    let mut diffs: Vec<f64> = b
        .iter()
        .flat_map(|y| a.iter().map(move |x| y - x))
        .collect();
    diffs.sort_by(f64::total_cmp);
    let value = median(&diffs)?;
    let alpha_half = (1.0 - confidence) / 2.0;
    let (k, tail) = mann_whitney_rank(m, n, alpha_half)?;
    let total = diffs.len();
    Some(Estimate {
        value,
        lo: diffs[k - 1],
        hi: diffs[total - k],
        confidence: 1.0 - 2.0 * tail,
    })
}

/// The largest `K >= 1` with `P(U <= K - 1) <= alpha_half` under the null hypothesis, and
/// that tail probability. `U` counts the pairs `(x, y)` with `y < x`; it is symmetric on
/// `0..=m*n`.
fn mann_whitney_rank(m: usize, n: usize, alpha_half: f64) -> Option<(usize, f64)> {
    if m + n <= EXACT_POOLED_LIMIT {
        let counts = mann_whitney_counts(m, n);
        let total: f64 = counts.iter().map(|&c| c as f64).sum();
        let mut cum = 0.0;
        let mut best = None;
        // P(U <= k - 1) for k = 1, 2, ...: stop once the tail exceeds alpha_half.
        for (u, &c) in counts.iter().enumerate().take(m * n / 2 + 1) {
            cum += c as f64 / total;
            if cum > alpha_half {
                break;
            }
            best = Some((u + 1, cum));
        }
        best
    } else {
        let mu = (m * n) as f64 / 2.0;
        let sigma = ((m * n * (m + n + 1)) as f64 / 12.0).sqrt();
        let z = normal_quantile(1.0 - alpha_half);
        let k = (mu + 0.5 - z * sigma).floor();
        if k < 1.0 {
            return None;
        }
        let tail = normal_cdf((k - 1.0 + 0.5 - mu) / sigma);
        // `k` is below `mu`, itself at most m*n/2, so it fits.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let k = k as usize;
        Some((k, tail))
    }
}

/// Number of orderings of `m` x's and `n` y's for each value of `U`: the coefficients of
/// the Gaussian binomial `[m+n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i)`.
/// Exact in `i128` for `m + n <= EXACT_POOLED_LIMIT`.
fn mann_whitney_counts(m: usize, n: usize) -> Vec<i128> {
    let degree = m * n;
    let mut c = vec![0_i128; degree + 1];
    c[0] = 1;
    for i in 1..=m {
        // Multiply by (1 - q^(n+i)), from the top so each term uses the old coefficient.
        for u in (n + i..=degree).rev() {
            c[u] -= c[u - (n + i)];
        }
        // Divide by (1 - q^i): a strided prefix sum.
        for u in i..=degree {
            c[u] += c[u - i];
        }
    }
    c
}

/// `cdf[i] = P(B <= i)` for `B ~ Binomial(n, 1/2)`, computed in log space so that large
/// `n` neither overflows the binomial coefficients nor underflows `2^-n`.
fn binomial_half_cdf(n: usize) -> Vec<f64> {
    let ln_half_n = n as f64 * 0.5_f64.ln();
    let mut ln_coef = 0.0_f64; // ln C(n, 0)
    let mut cum = 0.0;
    let mut cdf = Vec::with_capacity(n + 1);
    for i in 0..=n {
        if i > 0 {
            ln_coef += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        cum += (ln_coef + ln_half_n).exp();
        cdf.push(cum.min(1.0));
    }
    cdf
}

/// Standard normal CDF through the complementary error function (Numerical Recipes'
/// `erfcc`, fractional error below 1.2e-7: far finer than the discreteness of the ranks).
fn normal_cdf(z: f64) -> f64 {
    // Phi(z) = erfc(-z / sqrt 2) / 2.
    let x = -z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * x.abs());
    let poly = -x * x - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    let erfc = if x >= 0.0 { erfc } else { 2.0 - erfc };
    0.5 * erfc
}

/// Inverse of [`normal_cdf`] by bisection: only called once per comparison, so clarity wins
/// over a rational approximation.
fn normal_quantile(p: f64) -> f64 {
    let (mut lo, mut hi) = (-40.0_f64, 40.0_f64);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if normal_cdf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// A sorted copy, or `None` when a value is NaN (a NaN rate is a bug upstream, and sorting
/// it anywhere would silently move the median).
fn sorted(xs: &[f64]) -> Option<Vec<f64>> {
    if xs.iter().any(|x| x.is_nan()) {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_samples() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn coefficient_of_variation_matches_hand_computation() {
        // mean 10, sample sd sqrt(((-1)^2 + 0 + 1^2) / 2) = 1.
        let cv = coefficient_of_variation(&[9.0, 10.0, 11.0]).unwrap();
        assert!((cv - 0.1).abs() < 1e-12, "{cv}");
        assert_eq!(coefficient_of_variation(&[1.0]), None);
    }

    #[test]
    fn median_interval_uses_the_textbook_ranks() {
        // n = 10 at 95%: P(B <= 1) = 11/1024, P(B <= 2) = 56/1024 > 0.025, so k = 2 and the
        // interval is [x_(2), x_(9)] with coverage 1 - 22/1024.
        let xs: Vec<f64> = (1..=10).map(f64::from).collect();
        let est = median_interval(&xs, 0.95).unwrap();
        assert_eq!((est.lo, est.value, est.hi), (2.0, 5.5, 9.0));
        assert!((est.confidence - (1.0 - 22.0 / 1024.0)).abs() < 1e-12);
        // n = 5 cannot reach 95%: even [min, max] misses with probability 2/32.
        assert_eq!(median_interval(&xs[..5], 0.95), None);
        assert!(median_interval(&xs[..6], 0.95).is_some());
    }

    #[test]
    fn mann_whitney_counts_match_small_enumerations() {
        // m = n = 2: the 6 orderings give U = 0,1,2,2,3,4.
        assert_eq!(mann_whitney_counts(2, 2), vec![1, 1, 2, 1, 1]);
        // Totals are C(m+n, m).
        let total: i128 = mann_whitney_counts(10, 12).iter().sum();
        assert_eq!(total, 646_646);
        // The largest exact case still sums correctly (no overflow): C(120, 60).
        let total: i128 = mann_whitney_counts(60, 60).iter().sum();
        assert_eq!(total, 96_614_908_840_363_322_603_893_139_521_372_656);
    }

    #[test]
    fn mann_whitney_rank_matches_published_critical_values() {
        // Two-sided 5% critical values of U (Mann & Whitney tables): n1 = n2 = 10 gives 23,
        // n1 = n2 = 16 gives 75; the interval rank K is the critical value plus one.
        assert_eq!(mann_whitney_rank(10, 10, 0.025).map(|r| r.0), Some(24));
        assert_eq!(mann_whitney_rank(16, 16, 0.025).map(|r| r.0), Some(76));
        // The normal approximation lands on the same rank where both apply.
        let exact = mann_whitney_rank(50, 50, 0.025).unwrap().0;
        let mu = 1250.0;
        let sigma = (2500.0_f64 * 101.0 / 12.0).sqrt();
        let approx = (mu + 0.5 - normal_quantile(0.975) * sigma).floor();
        assert!((exact as f64 - approx).abs() <= 1.0, "{exact} vs {approx}");
    }

    #[test]
    fn normal_quantile_inverts_the_cdf() {
        assert!((normal_quantile(0.975) - 1.959_964).abs() < 1e-5);
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
    }

    #[test]
    fn ratio_interval_recovers_a_pure_scaling() {
        let a: Vec<f64> = (0..12).map(|i| 100.0 + f64::from(i)).collect();
        let b: Vec<f64> = a.iter().map(|x| x * 1.25).collect();
        let est = ratio_interval(&a, &b, 0.95).unwrap();
        assert!((est.value - 1.25).abs() < 0.02, "{est:?}");
        assert!(est.lo < est.value && est.value < est.hi);
        assert!(est.confidence >= 0.95);
        assert_eq!(ratio_interval(&a, &[0.0; 12], 0.95), None);
    }
}
