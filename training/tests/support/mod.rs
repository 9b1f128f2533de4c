//! Shared by the collector's tests (`collect`, `guest`) and the tests on simulated data.

/// `n` workloads for a collection test: built-in kernels of different families
/// (leave-one-family-out needs two families at least), topped up with the collector's
/// self-test workloads to two.
pub fn workloads(n: usize) -> String {
    let mut families = Vec::new();
    let mut pick: Vec<String> = Vec::new();
    for w in placed_training::workloads::builtin() {
        if !families.contains(&w.family) && pick.len() < n {
            families.push(w.family.clone());
            pick.push(w.name);
        }
    }
    for t in placed_training::collect::SELFTEST_NAMES {
        if pick.len() < 2 {
            pick.push((*t).into());
        }
    }
    pick.join(",")
}

/// SIMULATED data for v = 16 on a small synthetic two-level machine (8 placements): 32
/// families of `workloads_per_family` workloads, the simulator's other defaults.
pub fn simulated_data(workloads_per_family: usize) -> placed_models::Dataset {
    use placed_core::machine::{Machine, TopologySource};
    use placed_training::simulate::{SimMachine, SimulationOptions, simulate};
    let machine = Machine::load(
        &TopologySource::Synthetic("pack:4 numa:2 l3:1 l2:4 core:2 pu:1".into()),
        None,
    )
    .expect("synthetic topology");
    let set = placed_core::placement::important_placements(&machine, 16).expect("placements");
    let sim = SimMachine::from_placed(&machine, &set).expect("resources");
    simulate(
        &sim,
        &SimulationOptions {
            families: 32,
            workloads_per_family,
            ..SimulationOptions::default()
        },
    )
    .expect("simulates")
}

/// What the daemon's production file would hold of `data`'s workloads of the families
/// `in_production` picks: partial runs of the `baseline`, the `probe` and one other
/// placement each, in turn over the others (where the decisions took the containers), the
/// run records marked partial as the daemon marks them. `data`'s resources line, if any,
/// is kept, as the daemon writes its host's.
pub fn production_runs(
    data: &placed_models::Dataset,
    baseline: &str,
    probe: &str,
    in_production: impl Fn(&str) -> bool,
) -> placed_models::Dataset {
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
        let other = others[i % others.len()];
        for r in data.records() {
            if r.workload == *workload
                && r.run == *run
                && [baseline, probe, other].contains(&r.placement.as_str())
            {
                let mut r = r.clone();
                r.partial = true;
                records.push(r);
            }
        }
    }
    let production =
        placed_models::Dataset::from_parts(data.header().clone(), records).expect("valid");
    match data.resources() {
        Some(r) => production
            .with_resources(r.clone())
            .expect("the same placements"),
        None => production,
    }
}
