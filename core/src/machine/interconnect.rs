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

use std::collections::BTreeMap;

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
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InterconnectError {
    #[error(
        "the machine file's interconnect table has no entry for NUMA nodes {nodes:?} and no pairwise matrix to estimate it from; add the set or a matrix (placed-train calibrate writes both)"
    )]
    MissingSet { nodes: Vec<u32> },
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
        }
    }

    /// From measurements: an optional pairwise matrix and optional whole-set values.
    pub fn measured(
        n: usize,
        unit: String,
        matrix: Option<Vec<f64>>,
        sets: BTreeMap<Vec<usize>, f64>,
    ) -> Self {
        Self {
            source: InterconnectSource::Measured { unit },
            n,
            bw: matrix,
            sets,
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

    /// Aggregate bandwidth of a set of node positions (sorted, distinct). `os` maps positions
    /// to os indices for error messages.
    pub fn score(&self, nodes: &[usize], os: &[u32]) -> Result<f64, InterconnectError> {
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
        assert_eq!(ic.score(&[0, 1], &[4, 5, 6]).unwrap(), 42.0);
        assert_eq!(
            ic.score(&[0, 2], &[4, 5, 6]),
            Err(InterconnectError::MissingSet { nodes: vec![4, 6] })
        );
    }
}
