//! SIMULATED-like training data of a machine class, for other crates' tests (feature
//! `fake`): the daemon's tests of the model across classes need classes other than their
//! test machine's, with the resources line a corpus needs.
//!
//! Performance follows the share of the machine's nodes a placement uses, rising with it
//! for half the families and falling for the other half, the same function on every
//! machine, so a model across classes carries from one class to another. The workloads of
//! a family differ by as much as the two directions do: a category's mean is a rough
//! guess where the probe tells them apart, so the model across classes, which has the
//! probe, does better than no model.

use placed_core::machine::Machine;
use placed_core::placement::PlacementSet;

use crate::data::{Dataset, MachineHeader, RunRecord};
use crate::resources::of_machine;

/// Four families of four workloads each (`up-a`, `up-b`, `down-a`, `down-b`), measured once
/// in every placement of `set` at 1000 x `relative(up, workload, placement index)`.
///
/// # Panics
/// When the records do not validate: test data is made right or the test is wrong.
pub fn four_families(set: &PlacementSet, relative: impl Fn(bool, u32, usize) -> f64) -> Dataset {
    let header = MachineHeader::of(set);
    let mut records = Vec::new();
    for family in ["up-a", "up-b", "down-a", "down-b"] {
        for w in 0..4 {
            for (i, p) in set.placements.iter().enumerate() {
                records.push(RunRecord::simulated(
                    &set.fingerprint,
                    header.v,
                    family,
                    &format!("{family}-{w}"),
                    &p.id,
                    1000.0 * relative(family.starts_with("up"), w, i),
                ));
            }
        }
    }
    Dataset::from_parts(header, records).expect("valid test data")
}

/// [`four_families`] whose performance follows the share of the machine's nodes each
/// placement uses, with the machine's resources line.
///
/// # Panics
/// When `set`'s resources cannot be counted on `machine`.
pub fn class_data(machine: &Machine, set: &PlacementSet) -> Dataset {
    let resources = of_machine(machine, set).expect("the test machine's resources");
    let shares: Vec<f64> = resources
        .placements
        .iter()
        .map(|p| p.nodes / resources.machine.nodes)
        .collect();
    four_families(set, |up, w, i| {
        let j = 0.4 * f64::from(w);
        if up {
            1.0 + (0.5 + j) * shares[i]
        } else {
            1.0 / (1.0 + (0.3 + j) * shares[i])
        }
    })
    .with_resources(resources)
    .expect("resources of the data's own placements")
}
