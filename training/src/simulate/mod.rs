//! Simulated training data, to develop and test the models without a multi-socket host.
//! Every record it writes has provenance `simulated`, every workload name starts with
//! `sim-`, and every model fitted on it carries the provenance on.

mod behaviour;
mod machine;
mod production;

use std::collections::BTreeMap;

use placed_models::data::{
    DATA_FORMAT_VERSION, DataError, Dataset, MachineHeader, Measurement, PlacementInfo, Provenance,
    RunRecord,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use behaviour::{Archetype, Span, Traits};
pub use machine::{SimMachine, SimPlacement};
pub use production::production_runs;

/// What to simulate.
#[derive(Debug, Clone, PartialEq)]
pub struct SimulationOptions {
    /// Families; archetypes are dealt round-robin, so 16 or more give every archetype at
    /// least two families and leaving one out still leaves a sibling behaviour to learn.
    pub families: usize,
    /// Workloads per family.
    pub workloads_per_family: usize,
    /// Relative variation of an archetype's secondary traits between families.
    pub family_variation: f64,
    /// Relative spread of a workload's traits around its family's.
    pub sibling_spread: f64,
    /// Relative measurement noise (standard deviation of a log-normal factor).
    pub noise: f64,
    /// Seed: the same seed and machine give the same data.
    pub seed: u64,
}

impl Default for SimulationOptions {
    fn default() -> Self {
        Self {
            families: 24,
            workloads_per_family: 8,
            family_variation: 0.2,
            sibling_spread: 0.1,
            noise: 0.01,
            seed: 0,
        }
    }
}

/// Why data could not be simulated.
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    /// The machine model has no placements to simulate.
    #[error("no important placements to simulate")]
    NoPlacements,
    /// `v` beyond what the data format holds.
    #[error("{v} vCPUs is more than the data format holds")]
    TooManyVcpus {
        /// The v asked for.
        v: usize,
    },
    /// Options out of range.
    #[error("simulation option {name} {reason}")]
    InvalidOption {
        /// Option name.
        name: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
    /// The machine's interconnect figures are unusable.
    #[error(transparent)]
    Interconnect(#[from] placed_core::machine::InterconnectError),
    /// The generated data failed validation (a simulator bug).
    #[error("simulated data failed validation")]
    Data(#[from] DataError),
}

/// Simulates every workload of every family in every placement of `machine`.
pub fn simulate(
    machine: &SimMachine,
    options: &SimulationOptions,
) -> Result<Dataset, SimulateError> {
    if machine.placements.is_empty() {
        return Err(SimulateError::NoPlacements);
    }
    if options.families == 0 || options.workloads_per_family == 0 {
        return Err(SimulateError::InvalidOption {
            name: "families/workloads_per_family",
            reason: "must be at least 1",
        });
    }
    if !(options.noise >= 0.0 && options.sibling_spread >= 0.0 && options.family_variation >= 0.0) {
        return Err(SimulateError::InvalidOption {
            name: "noise/sibling_spread/family_variation",
            reason: "must be non-negative",
        });
    }
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    let span = Span::of(&machine.placements);
    let max_share = machine
        .placements
        .iter()
        .map(|p| p.share)
        .fold(1.0, f64::max);
    let mut records = Vec::new();
    for f in 0..options.families {
        let archetype = Archetype::ALL[f % Archetype::ALL.len()];
        let family = format!("sim-{}-{}", archetype.name(), f / Archetype::ALL.len());
        let traits = Traits::family(archetype, span, options.family_variation, &mut rng);
        for w in 0..options.workloads_per_family {
            let workload = traits.sibling(options.sibling_spread, &mut rng);
            let scale = 10f64.powf(rng.gen_range(3.0..5.0));
            let truth: Vec<f64> = machine
                .placements
                .iter()
                .map(|p| workload.performance(p, max_share))
                .collect();
            let best = truth.iter().copied().fold(f64::MIN, f64::max);
            for (p, &perf) in machine.placements.iter().zip(&truth) {
                let value = scale * perf * lognormal(&mut rng, options.noise);
                let counters = workload
                    .counters(p, perf / best)
                    .into_iter()
                    .map(|(name, v)| (name.to_owned(), v * lognormal(&mut rng, 0.05)))
                    .collect::<BTreeMap<_, _>>();
                let performance = Measurement {
                    value,
                    unit: "simulated ops/s".into(),
                    repetitions: 5,
                    spread: 2.0 * options.noise * value,
                };
                records.push(
                    RunRecord::new(
                        &machine.fingerprint,
                        machine.v,
                        &family,
                        &format!("{family}-w{w}"),
                        &p.id,
                        performance,
                        Provenance::Simulated,
                    )
                    .with_counters(counters),
                );
            }
        }
    }
    let header = MachineHeader {
        version: DATA_FORMAT_VERSION,
        fingerprint: machine.fingerprint.clone(),
        v: machine.v,
        concerns: machine.concerns.clone(),
        placements: machine
            .placements
            .iter()
            .map(|p| PlacementInfo {
                id: p.id.clone(),
                scores: p.scores.clone(),
            })
            .collect(),
    };
    let data = Dataset::from_parts(header, records)?;
    Ok(match &machine.resources {
        Some(r) => data.with_resources(r.clone())?,
        None => data,
    })
}

/// A log-normal factor with median 1 and log-standard-deviation `sigma` (Box-Muller).
fn lognormal<R: Rng>(rng: &mut R, sigma: f64) -> f64 {
    let u1: f64 = 1.0 - rng.r#gen::<f64>(); // in (0, 1]: ln stays finite
    let u2: f64 = rng.r#gen();
    let normal = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
    (sigma * normal).exp()
}

#[cfg(test)]
mod tests;
