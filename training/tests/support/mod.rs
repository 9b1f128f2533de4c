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
