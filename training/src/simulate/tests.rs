use placed_core::machine::{Machine, TopologySource};
use placed_core::placement::important_placements;
use rand::SeedableRng;

use super::behaviour::{Archetype, Span, Traits};
use super::*;

/// Invented: four placements of an 8-vCPU container on a 2-node, SMT2 machine with one L3
/// per node. `share` 2 packs two vCPUs per core.
fn toy() -> SimMachine {
    let p = |id: &str, nodes: f64, share: f64| SimPlacement {
        id: id.into(),
        scores: vec![nodes, 8.0 / share],
        nodes,
        packages: nodes,
        l3: nodes,
        share,
        interconnect: 1.0,
    };
    SimMachine {
        fingerprint: "toy".into(),
        v: 8,
        concerns: vec!["numa".into(), "core".into()],
        placements: vec![
            p("n1-smt", 1.0, 2.0),
            p("n1", 1.0, 1.0),
            p("n2-smt", 2.0, 2.0),
            p("n2", 2.0, 1.0),
        ],
        resources: None,
    }
}

/// Relative performance of a freshly drawn family of `archetype` on the toy placements.
fn shape(archetype: Archetype) -> Vec<f64> {
    let m = toy();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let t = Traits::family(archetype, Span::of(&m.placements), 0.2, &mut rng);
    let perf: Vec<f64> = m.placements.iter().map(|p| t.performance(p, 2.0)).collect();
    perf.iter().map(|v| v / perf[1]).collect()
}

#[test]
fn archetypes_have_the_shapes_the_thesis_describes() {
    let [n1_smt, _, n2_smt, n2] = shape(Archetype::SmtHating)[..] else {
        panic!()
    };
    assert!(
        n1_smt < 0.8 && n2_smt < n2 * 0.8,
        "SMT-hating loses when sharing cores"
    );
    let [n1_smt, ..] = shape(Archetype::SmtPreferring)[..] else {
        panic!()
    };
    assert!(n1_smt > 1.05, "SMT-preferring gains when sharing cores");
    let [_, _, _, n2] = shape(Archetype::Bandwidth)[..] else {
        panic!()
    };
    assert!(n2 > 1.2, "bandwidth-bound prefers more nodes: {n2}");
    let [_, _, _, n2] = shape(Archetype::Latency)[..] else {
        panic!()
    };
    assert!(n2 < 0.9, "latency-bound prefers one node: {n2}");
    let [_, _, _, n2] = shape(Archetype::CacheFit)[..] else {
        panic!()
    };
    assert!(
        n2 > 1.25,
        "the working set fits in two nodes' L3 and not one: {n2}"
    );
    let flat = shape(Archetype::Compute);
    assert!(
        flat.iter().all(|v| (v - 1.0).abs() < 0.15),
        "compute-bound barely cares: {flat:?}"
    );
}

#[test]
fn every_record_is_simulated_and_every_workload_complete() {
    let options = SimulationOptions {
        families: 16,
        workloads_per_family: 3,
        ..SimulationOptions::default()
    };
    let data = simulate(&toy(), &options).expect("simulates");
    assert_eq!(data.provenance(), Provenance::Simulated);
    assert_eq!(
        data.records().len(),
        16 * 3 * 4,
        "validated: every workload in every placement"
    );
    assert!(
        data.records()
            .iter()
            .all(|r| r.provenance == Provenance::Simulated && r.workload.starts_with("sim-"))
    );
    assert!(data.records().iter().all(|r| r.counters.len() == 3));
}

#[test]
fn the_same_seed_simulates_the_same_data() {
    let options = SimulationOptions {
        families: 8,
        workloads_per_family: 2,
        ..SimulationOptions::default()
    };
    let a = simulate(&toy(), &options).expect("simulates");
    let b = simulate(&toy(), &options).expect("simulates");
    let c = simulate(&toy(), &SimulationOptions { seed: 1, ..options }).expect("simulates");
    assert_eq!(a.records(), b.records());
    assert_ne!(a.records(), c.records());
}

#[test]
fn bad_options_are_refused() {
    let none = SimulationOptions {
        families: 0,
        ..SimulationOptions::default()
    };
    assert!(matches!(
        simulate(&toy(), &none),
        Err(SimulateError::InvalidOption { .. })
    ));
    let empty = SimMachine {
        placements: Vec::new(),
        ..toy()
    };
    assert!(matches!(
        simulate(&empty, &SimulationOptions::default()),
        Err(SimulateError::NoPlacements)
    ));
}

#[test]
fn resources_are_counted_on_the_machine_model() {
    // Invented, shaped like the thesis's AMD Opteron 6272: 4 packages of 2 nodes, one L3
    // per node, modules of 2 cores sharing an L2.
    let machine = Machine::load(
        &TopologySource::Synthetic("pack:4 numa:2 l3:1 l2:4 core:2 pu:1".into()),
        None,
    )
    .expect("synthetic topology");
    let set = important_placements(&machine, 16).expect("placements");
    let sim = SimMachine::from_placed(&machine, &set).expect("resources");
    assert_eq!(sim.placements.len(), set.placements.len());
    for (p, placed) in sim.placements.iter().zip(&set.placements) {
        assert_eq!(p.id, placed.id);
        assert_eq!(p.nodes, placed.units.len() as f64, "{}", p.id);
        assert_eq!(p.l3, p.nodes, "one L3 per node");
        assert!(
            p.share == 1.0 || p.share == 2.0,
            "{}: share {}",
            p.id,
            p.share
        );
        assert!(p.interconnect > 0.0 && p.interconnect <= 1.0);
    }
    // Both sharing and not sharing the L2 modules are important on this machine.
    assert!(sim.placements.iter().any(|p| p.share == 2.0));
    assert!(sim.placements.iter().any(|p| p.share == 1.0));
    // What the model across classes reads is written into the data, placement for
    // placement, with the node counts the simulator used.
    let resources = sim.resources.clone().expect("counted on the machine model");
    assert_eq!(resources.machine.nodes, 8.0);
    for (r, p) in resources.placements.iter().zip(&sim.placements) {
        assert_eq!((r.id.as_str(), r.nodes), (p.id.as_str(), p.nodes));
    }
    let data = simulate(&sim, &SimulationOptions::default()).expect("simulates");
    assert_eq!(data.resources(), Some(&resources));
}
