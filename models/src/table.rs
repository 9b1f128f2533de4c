//! A validated dataset arranged for learning: one row per workload run, one column per
//! placement, performance relative to the baseline placement.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use ndarray::{Array2, ArrayView2, Axis};

use crate::data::{Dataset, PlacementInfo};
use crate::features::{Feature, Observation, ObservationError, feature_vector};

/// Who a row is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowInfo {
    /// Workload name.
    pub workload: String,
    /// Its family (the cross-validation group).
    pub family: String,
    /// Run number.
    pub run: u32,
}

/// The dataset as matrices. Invariant: every row has an observation in every placement, and
/// `counter_names` are the counters present in every record.
#[derive(Debug, Clone)]
pub(crate) struct PerformanceTable {
    placements: Vec<PlacementInfo>,
    baseline: usize,
    rows: Vec<RowInfo>,
    /// rows x placements, each entry a full observation.
    observations: Vec<Vec<Observation>>,
    /// rows x placements, performance over the row's baseline performance.
    relative: Array2<f64>,
    /// `relative` where the cell was measured, NaN where another model completed it
    /// (`RunRecord::completed`): what errors and intervals are judged on.
    measured: Array2<f64>,
    counter_names: Vec<String>,
    /// Counters some records have and others lack: not features.
    dropped_counters: Vec<String>,
}

impl PerformanceTable {
    /// Arranges `data` with `baseline` (an index into the header's placements) as the
    /// reference every vector is relative to.
    pub(crate) fn new(data: &Dataset, baseline: usize) -> Self {
        let placements = data.header().placements.clone();
        let column: HashMap<&str, usize> = placements
            .iter()
            .enumerate()
            .map(|(i, p)| (p.id.as_str(), i))
            .collect();
        let mut row_of: HashMap<(&str, u32), usize> = HashMap::new();
        let mut rows = Vec::new();
        let mut observations: Vec<Vec<Observation>> = Vec::new();
        let mut completed: BTreeSet<(usize, usize)> = BTreeSet::new();
        // Runs without a whole vector: one unusable cell, or a partial (production) run.
        let left_out: BTreeSet<(&str, u32)> = data
            .records()
            .iter()
            .filter(|r| r.unusable.is_some() || r.partial)
            .map(|r| (r.workload.as_str(), r.run))
            .collect();
        for r in data.records() {
            if left_out.contains(&(r.workload.as_str(), r.run)) {
                continue;
            }
            let row = *row_of
                .entry((r.workload.as_str(), r.run))
                .or_insert_with(|| {
                    rows.push(RowInfo {
                        workload: r.workload.clone(),
                        family: r.family.clone(),
                        run: r.run,
                    });
                    observations.push(vec![Observation::default(); placements.len()]);
                    rows.len() - 1
                });
            // Dataset validation guarantees the id is known and each cell filled once.
            if let Some(&col) = column.get(r.placement.as_str()) {
                if r.completed {
                    completed.insert((row, col));
                }
                observations[row][col] = Observation {
                    value: r.performance.value,
                    spread: r.performance.spread,
                    counters: r.counters.clone(),
                };
            }
        }
        let relative = Array2::from_shape_fn((rows.len(), placements.len()), |(r, p)| {
            observations[r][p].value / observations[r][baseline].value
        });
        let mut measured = relative.clone();
        for &cell in &completed {
            measured[cell] = f64::NAN;
        }
        let (counter_names, dropped_counters) = common_counters(&observations);
        Self {
            placements,
            baseline,
            rows,
            observations,
            relative,
            measured,
            counter_names,
            dropped_counters,
        }
    }

    pub(crate) fn placements(&self) -> &[PlacementInfo] {
        &self.placements
    }

    pub(crate) fn baseline(&self) -> usize {
        self.baseline
    }

    pub(crate) fn rows(&self) -> &[RowInfo] {
        &self.rows
    }

    pub(crate) fn relative(&self) -> ArrayView2<'_, f64> {
        self.relative.view()
    }

    /// [`Self::relative`] as measured: NaN in a cell another model completed, which the
    /// forest learns from but no error or interval is judged on.
    pub(crate) fn measured(&self) -> ArrayView2<'_, f64> {
        self.measured.view()
    }

    pub(crate) fn counter_names(&self) -> &[String] {
        &self.counter_names
    }

    /// The observation of row `row` in placement column `placement`.
    pub(crate) fn observation(&self, row: usize, placement: usize) -> &Observation {
        &self.observations[row][placement]
    }

    pub(crate) fn dropped_counters(&self) -> &[String] {
        &self.dropped_counters
    }

    /// The feature matrix for the given rows, observing `probe` as the second placement.
    pub(crate) fn features(
        &self,
        features: &[Feature],
        probe: usize,
        rows: &[usize],
    ) -> Result<Array2<f64>, ObservationError> {
        let mut x = Array2::zeros((rows.len(), features.len()));
        for (mut out, &r) in x.axis_iter_mut(Axis(0)).zip(rows) {
            let v = feature_vector(
                features,
                &self.observations[r][self.baseline],
                &self.observations[r][probe],
            )?;
            out.iter_mut().zip(v).for_each(|(o, v)| *o = v);
        }
        Ok(x)
    }

    /// The target matrix (relative performance in every placement) for the given rows.
    pub(crate) fn targets(&self, rows: &[usize]) -> Array2<f64> {
        self.relative.select(Axis(0), rows)
    }

    /// Distinct workloads, for summaries.
    pub(crate) fn workloads(&self) -> BTreeSet<&str> {
        self.rows.iter().map(|r| r.workload.as_str()).collect()
    }

    /// Workload runs per family, for summaries.
    pub(crate) fn rows_per_family(&self) -> BTreeMap<&str, usize> {
        let mut counts = BTreeMap::new();
        for r in &self.rows {
            *counts.entry(r.family.as_str()).or_insert(0) += 1;
        }
        counts
    }
}

/// Counters present in every observation (a counter some runs lack cannot be a feature),
/// and those left out for that.
fn common_counters(observations: &[Vec<Observation>]) -> (Vec<String>, Vec<String>) {
    let mut all = observations.iter().flatten();
    let Some(first) = all.next() else {
        return (Vec::new(), Vec::new());
    };
    let mut common: BTreeSet<&String> = first.counters.keys().collect();
    for o in all {
        common.retain(|name| o.counters.contains_key(*name));
    }
    let dropped: BTreeSet<&String> = observations
        .iter()
        .flatten()
        .flat_map(|o| o.counters.keys())
        .filter(|n| !common.contains(n))
        .collect();
    if !dropped.is_empty() {
        tracing::warn!(
            ?dropped,
            "counters missing from some records are not used as features"
        );
    }
    (
        common.into_iter().cloned().collect(),
        dropped.into_iter().cloned().collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_some_records_lack_is_left_out_and_named() {
        let data = crate::test_data::standard();
        let mut records = data.records().to_vec();
        records[0].counters.insert("llc_misses".into(), 1.0);
        let data = Dataset::from_parts(data.header().clone(), records).expect("valid");
        let table = PerformanceTable::new(&data, 0);
        assert_eq!(table.counter_names(), ["ipc"]);
        assert_eq!(table.dropped_counters(), ["llc_misses"]);
    }
}
