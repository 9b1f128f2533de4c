//! What the daemon's production data would hold of simulated runs, for trials of learning
//! from it: the runs of some families, each measured where a daemon deciding with a model
//! measures a container (the model's baseline and probe) and in one other placement (where
//! the decision took it), the records marked partial as the daemon marks them.

use placed_models::data::{DataError, Dataset};

/// The runs of `data` of the families `in_production` picks, each cut to the `baseline`,
/// the `probe` and one other placement, in turn over the others in the header's order.
/// `data`'s resources line is kept, as the daemon writes its host's.
pub fn production_runs(
    data: &Dataset,
    baseline: &str,
    probe: &str,
    in_production: impl Fn(&str) -> bool,
) -> Result<Dataset, DataError> {
    let others: Vec<&str> = data
        .header()
        .placements
        .iter()
        .map(|p| p.id.as_str())
        .filter(|id| *id != baseline && *id != probe)
        .collect();
    let mut runs: Vec<(&str, u32)> = Vec::new();
    for r in data.records().iter().filter(|r| in_production(&r.family)) {
        if !runs.contains(&(r.workload.as_str(), r.run)) {
            runs.push((r.workload.as_str(), r.run));
        }
    }
    let mut records = Vec::new();
    for (i, (workload, run)) in runs.iter().enumerate() {
        let other = others.get(i % others.len().max(1)).copied();
        for r in data.records() {
            let here = r.placement.as_str();
            if r.workload == *workload
                && r.run == *run
                && (here == baseline || here == probe || Some(here) == other)
            {
                let mut r = r.clone();
                r.partial = true;
                records.push(r);
            }
        }
    }
    let production = Dataset::from_parts(data.header().clone(), records)?;
    match data.resources() {
        Some(r) => production.with_resources(r.clone()),
        None => Ok(production),
    }
}
