//! The interconnect concern's score: the aggregate memory bandwidth a set of NUMA nodes
//! offers a container whose threads and memory are spread evenly over them.
//!
//! The thesis measured it with stream for every node set (§2.3). Without a measurement we
//! derive it from the firmware's distance matrix, reading distance as the inverse of
//! bandwidth: node `i`'s threads touch memory on every node of the set equally, so each byte
//! costs the mean of `d(i,j)/d(i,i)` and node `i` streams at the inverse of that; the set's
//! score is the sum over its nodes. One node scores 1; two nodes at the ACPI default
//! distance of 20 score 1.333; a closer pair scores more than a farther one. Only the order
//! matters (the concern is used for Pareto filtering), and distance is monotone in hop count
//! on every machine of the corpus. A measured pairwise matrix (GB/s, from `placed-train
//! calibrate`) goes through the same formula; measured sets override it outright.
//!
//! Measured scores are relative to the slowest single node's bandwidth (so, like derived
//! ones, one node scores 1 or a little more, whatever the unit) and rounded to
//! [`MEASURED_DIGITS`] significant digits: steps of 1% at one node, 0.5% at a score of 2. The
//! digits below are measurement noise; keeping them gave every calibration its own placement
//! ids and split sets that perform alike into separate placements. Relative to the slowest
//! node rather than the fastest, because a score just below 1 would get steps ten times
//! finer. A measured score outside [`MEASURED_RANGE`] is refused: no interconnect makes a set
//! a thousand times faster or slower than one node, so the file is wrong, and a placement id
//! must never carry such a number.

use std::collections::BTreeMap;
use std::ops::Range;

/// Significant digits a measured score keeps (1.93, 0.987, 12.4).
pub const MEASURED_DIGITS: i32 = 3;

/// Measured scores, relative to the best single node, that can be right.
pub const MEASURED_RANGE: Range<f64> = 0.001..1000.0;

/// Where the numbers come from, shown in the machine summary.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum InterconnectSource {
    /// Derived from the topology's NUMA distance matrix (hwloc's name for it).
    Distances { matrix: String },
    /// No distance matrix: every remote node assumed at ACPI's default distance (20 vs 10).
    Uniform,
    /// Measured bandwidth from a machine file.
    Measured { unit: String },
}

/// Bandwidth model over the CPU nodes, indexed by their position in the NUMA level.
#[derive(Debug, Clone)]
pub struct Interconnect {
    pub source: InterconnectSource,
    n: usize,
    /// `bw[i * n + j]`: bandwidth of threads on node `i` reading memory of node `j`.
    bw: Option<Vec<f64>>,
    /// Measured aggregate bandwidth of whole sets, keyed by sorted node positions.
    sets: BTreeMap<Vec<usize>, f64>,
    /// Measured: the bandwidth a score of 1 stands for (the slowest single node's).
    reference: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InterconnectError {
    #[error(
        "the machine file's interconnect table has no entry for NUMA nodes {nodes:?} and no pairwise matrix to estimate it from; add the set or a matrix (placed-train calibrate writes both)"
    )]
    MissingSet { nodes: Vec<u32> },
    #[error(
        "the machine file's interconnect gives NUMA nodes {nodes:?} {bandwidth:.4e}, {relative:.3e} times the slowest single node's {reference:.4e}: outside what an interconnect can do (1/1000 to 1000 times), so the figures are wrong; calibrate again on a quiet host (placed-train calibrate) or fix the file"
    )]
    Absurd {
        nodes: Vec<u32>,
        bandwidth: f64,
        reference: f64,
        relative: f64,
    },
}

impl Interconnect {
    /// From a distance matrix lookup; `distance(i, j)` is `None` where the matrix has no
    /// entry, and those pairs fall back to the ACPI default ratio of 2.
    pub fn from_distances(
        n: usize,
        matrix: Option<String>,
        distance: impl Fn(usize, usize) -> Option<u64>,
    ) -> Self {
        let mut bw = vec![0.0; n * n];
        for i in 0..n {
            let local = distance(i, i).filter(|&d| d > 0);
            for j in 0..n {
                let ratio = match (local, distance(i, j)) {
                    (Some(l), Some(d)) if d > 0 => l as f64 / d as f64,
                    _ if i == j => 1.0,
                    _ => 0.5,
                };
                bw[i * n + j] = ratio;
            }
        }
        let source = match matrix {
            Some(matrix) => InterconnectSource::Distances { matrix },
            None => InterconnectSource::Uniform,
        };
        Self {
            source,
            n,
            bw: Some(bw),
            sets: BTreeMap::new(),
            reference: None,
        }
    }

    /// From measurements: an optional pairwise matrix and optional whole-set values.
    pub fn measured(
        n: usize,
        unit: String,
        matrix: Option<Vec<f64>>,
        sets: BTreeMap<Vec<usize>, f64>,
    ) -> Self {
        let reference = measured_reference(n, matrix.as_deref(), &sets);
        Self {
            source: InterconnectSource::Measured { unit },
            n,
            bw: matrix,
            sets,
            reference: Some(reference),
        }
    }

    /// Number of CPU nodes the model covers.
    pub fn nodes(&self) -> usize {
        self.n
    }

    /// Pairwise bandwidth, where the model has it.
    pub fn pair(&self, i: usize, j: usize) -> Option<f64> {
        self.bw
            .as_ref()
            .and_then(|bw| bw.get(i * self.n + j).copied())
    }

    /// Measured whole-set values, by sorted node positions.
    pub fn measured_sets(&self) -> impl Iterator<Item = (&Vec<usize>, f64)> {
        self.sets.iter().map(|(k, &v)| (k, v))
    }

    /// The interconnect concern's score of a set of node positions (sorted, distinct): its
    /// aggregate bandwidth, for a measured interconnect relative to the slowest single node and
    /// rounded (module docs). `os` maps positions to os indices for error messages.
    pub fn score(&self, nodes: &[usize], os: &[u32]) -> Result<f64, InterconnectError> {
        let bandwidth = self.bandwidth(nodes, os)?;
        let Some(reference) = self.reference else {
            return Ok(bandwidth);
        };
        let relative = bandwidth / reference;
        if !MEASURED_RANGE.contains(&relative) {
            return Err(InterconnectError::Absurd {
                nodes: nodes.iter().filter_map(|&i| os.get(i).copied()).collect(),
                bandwidth,
                reference,
                relative,
            });
        }
        Ok(round_significant(relative, MEASURED_DIGITS))
    }

    /// Aggregate bandwidth of a set, in the model's own unit.
    fn bandwidth(&self, nodes: &[usize], os: &[u32]) -> Result<f64, InterconnectError> {
        if let Some(&v) = self.sets.get(nodes) {
            return Ok(v);
        }
        let Some(bw) = &self.bw else {
            return Err(InterconnectError::MissingSet {
                nodes: nodes.iter().filter_map(|&i| os.get(i).copied()).collect(),
            });
        };
        let k = nodes.len() as f64;
        Ok(nodes
            .iter()
            .map(|&i| {
                let cost: f64 = nodes
                    .iter()
                    .map(|&j| {
                        let b = bw[i * self.n + j];
                        if b > 0.0 { 1.0 / b } else { f64::INFINITY }
                    })
                    .sum();
                k / cost
            })
            .sum())
    }
}

/// The bandwidth a measured score of 1 stands for: the slowest single node's (a listed
/// one-node set, else the matrix's diagonal), or with neither, the smallest per-node share
/// of a listed set. Any positive constant keeps the order; this one makes one node score 1
/// or a little more, as derived scores do.
fn measured_reference(n: usize, matrix: Option<&[f64]>, sets: &BTreeMap<Vec<usize>, f64>) -> f64 {
    let single = (0..n)
        .filter_map(|i| {
            sets.get(&vec![i])
                .copied()
                .or_else(|| matrix.and_then(|bw| bw.get(i * n + i).copied()))
        })
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold(None, |least: Option<f64>, v| {
            Some(least.map_or(v, |l| l.min(v)))
        });
    let per_node = || {
        sets.iter()
            .filter(|(k, _)| !k.is_empty())
            .map(|(k, &v)| v / k.len() as f64)
            .filter(|v| v.is_finite() && *v > 0.0)
            .fold(None, |least: Option<f64>, v| {
                Some(least.map_or(v, |l| l.min(v)))
            })
    };
    // The machine file refuses a table with neither a matrix nor sets, or a value <= 0.
    single.or_else(per_node).unwrap_or(1.0)
}

/// `x` rounded to `digits` significant digits (0 stays 0).
pub fn round_significant(x: f64, digits: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    // A finite non-zero f64 has a decimal exponent within +/-324: the cast cannot truncate.
    #[allow(clippy::cast_possible_truncation)]
    let magnitude = x.abs().log10().floor() as i32;
    let scale = 10f64.powi(digits - 1 - magnitude);
    (x * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opteron_like() -> Interconnect {
        // Two packages of two nodes: 16 inside a package, 22 across.
        let d = [
            [10, 16, 22, 22],
            [16, 10, 22, 22],
            [22, 22, 10, 16],
            [22, 22, 16, 10],
        ];
        Interconnect::from_distances(4, Some("NUMALatency".into()), |i, j| Some(d[i][j]))
    }

    #[test]
    fn one_node_scores_one_and_closer_pairs_score_more() {
        let ic = opteron_like();
        let os = [0, 1, 2, 3];
        assert!((ic.score(&[2], &os).unwrap() - 1.0).abs() < 1e-9);
        let near = ic.score(&[0, 1], &os).unwrap();
        let far = ic.score(&[0, 2], &os).unwrap();
        assert!((near - 2.0 * 2.0 / (1.0 + 1.6)).abs() < 1e-9, "{near}");
        assert!(near > far);
        assert!(ic.score(&[0, 1, 2, 3], &os).unwrap() > near);
    }

    #[test]
    fn uniform_when_no_matrix() {
        let ic = Interconnect::from_distances(2, None, |_, _| None);
        assert_eq!(ic.source, InterconnectSource::Uniform);
        let s = ic.score(&[0, 1], &[0, 1]).unwrap();
        assert!((s - 4.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn measured_sets_override_and_missing_sets_are_errors() {
        let mut sets = BTreeMap::new();
        sets.insert(vec![0, 1], 42.0);
        let ic = Interconnect::measured(3, "GB/s".into(), None, sets);
        // The only set is the reference: its per-node share is 21, so it scores 2.
        assert_eq!(ic.score(&[0, 1], &[4, 5, 6]).unwrap(), 2.0);
        assert_eq!(
            ic.score(&[0, 2], &[4, 5, 6]),
            Err(InterconnectError::MissingSet { nodes: vec![4, 6] })
        );
    }

    /// A 4-node matrix: 10 locally, 6 to the package neighbour, 4 across, in `unit_scale`
    /// units, each value off by a relative `noise(i, j)`.
    fn measured_four(unit_scale: f64, noise: impl Fn(usize, usize) -> f64) -> Interconnect {
        let base = [
            [10.0, 6.0, 4.0, 4.0],
            [6.0, 10.0, 4.0, 4.0],
            [4.0, 4.0, 10.0, 6.0],
            [4.0, 4.0, 6.0, 10.0],
        ];
        let bw = (0..16)
            .map(|k| base[k / 4][k % 4] * unit_scale * (1.0 + noise(k / 4, k % 4)))
            .collect();
        Interconnect::measured(4, "B/s".into(), Some(bw), BTreeMap::new())
    }

    #[test]
    fn measured_scores_are_relative_to_one_node_and_rounded_so_noise_does_not_show() {
        let os = [0, 1, 2, 3];
        let clean = measured_four(1.0, |_, _| 0.0);
        // The same machine measured in bytes per second, each value off by up to 0.1%.
        let noisy = measured_four(1.3e10, |i, j| {
            0.001 * (((i * 5 + j * 3 + i * j) % 7) as f64 - 3.0) / 3.0
        });
        let sets: [&[usize]; 9] = [
            &[0],
            &[1],
            &[2],
            &[3],
            &[0, 1],
            &[2, 3],
            &[0, 2],
            &[1, 3],
            &[0, 1, 2, 3],
        ];
        for nodes in sets {
            let a = clean.score(nodes, &os).unwrap();
            let b = noisy.score(nodes, &os).unwrap();
            assert_eq!(a, b, "{nodes:?}");
            // At most three significant digits, so an id shows at most 3 of them.
            assert_eq!(a, round_significant(a, 3), "{nodes:?}: {a}");
            assert!(a < 10.0, "{nodes:?}: {a}");
        }
        assert_eq!(clean.score(&[0], &os).unwrap(), 1.0);
        // Sets alike on the machine score alike, so they make one placement, not two.
        assert_ne!(noisy.bandwidth(&[0, 1], &os), noisy.bandwidth(&[2, 3], &os));
        assert_eq!(
            noisy.score(&[0, 1], &os).unwrap(),
            noisy.score(&[2, 3], &os).unwrap()
        );
        assert_eq!(noisy.score(&[0, 1], &os).unwrap(), 1.5);
        assert!(noisy.score(&[0, 1], &os).unwrap() > noisy.score(&[0, 2], &os).unwrap());
    }

    #[test]
    fn an_absurd_measured_score_is_refused_with_its_figures() {
        let mut sets = BTreeMap::new();
        sets.insert(vec![0, 1, 2, 3], 1.0e-5);
        let mut ic = measured_four(1.0, |_, _| 0.0);
        ic.sets = sets;
        let err = ic.score(&[0, 1, 2, 3], &[0, 1, 2, 3]).unwrap_err();
        assert!(
            matches!(&err, InterconnectError::Absurd { nodes, .. } if nodes == &[0, 1, 2, 3]),
            "{err}"
        );
        assert!(err.to_string().contains("calibrate again"), "{err}");
        // Distance-derived scores are exact and stay as they are.
        let derived = Interconnect::from_distances(2, None, |_, _| None);
        assert_eq!(derived.score(&[0, 1], &[0, 1]).unwrap(), 4.0 / 3.0);
    }

    #[test]
    fn significant_digits() {
        assert_eq!(round_significant(133_835_905.658, 3), 134_000_000.0);
        assert_eq!(round_significant(1.93456, 3), 1.93);
        assert_eq!(round_significant(0.0012345, 3), 0.00123);
        assert_eq!(round_significant(0.0, 3), 0.0);
    }
}
