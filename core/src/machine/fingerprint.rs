//! The machine-class fingerprint: a hash of exactly what the concerns see, so that a model
//! trained on one host serves every host that looks the same to the placement model.
//!
//! In: the shape of the sharing tree (instance sizes and nesting, in logical order), which
//! level is the allocation unit, the concerns with their flags, and the interconnect's
//! pairwise numbers. Out: PU and node os indices (two identical servers that number SMT
//! siblings differently are the same class), host names, serials, memory sizes, cache sizes
//! and the machine file's label. The format number changes whenever the hashed content
//! does, so fingerprints never collide across versions.

use sha2::{Digest, Sha256};

use super::Machine;
use super::concerns::{Scope, milli};

const FORMAT: u32 = 1;

#[derive(serde::Serialize)]
struct Canonical<'a> {
    format: u32,
    levels: Vec<CanonicalLevel<'a>>,
    unit_level: usize,
    numa_level: usize,
    concerns: Vec<CanonicalConcern<'a>>,
    /// Pairwise bandwidth in thousandths, row-major over NUMA positions.
    interconnect: Vec<i64>,
    /// Measured whole-set values in thousandths, by NUMA positions.
    interconnect_sets: Vec<(Vec<usize>, i64)>,
}

#[derive(serde::Serialize)]
struct CanonicalLevel<'a> {
    name: &'a str,
    sizes: Vec<usize>,
    parents: Vec<usize>,
}

#[derive(serde::Serialize)]
struct CanonicalConcern<'a> {
    name: &'a str,
    scope: &'a Scope,
    lower_cost: bool,
    lower_can_raise_perf: bool,
}

pub fn compute(m: &Machine) -> String {
    let h = &m.hierarchy;
    let n = m.interconnect.nodes();
    let canonical = Canonical {
        format: FORMAT,
        levels: h
            .levels
            .iter()
            .map(|l| CanonicalLevel {
                name: &l.name,
                sizes: l.instances.iter().map(|i| i.cpus.len()).collect(),
                parents: l.instances.iter().map(|i| i.parent).collect(),
            })
            .collect(),
        unit_level: h.unit_level,
        numa_level: h.numa_level,
        concerns: m
            .concerns
            .iter()
            .map(|c| CanonicalConcern {
                name: &c.name,
                scope: &c.scope,
                lower_cost: c.lower_cost,
                lower_can_raise_perf: c.lower_can_raise_perf,
            })
            .collect(),
        interconnect: (0..n)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .map(|(i, j)| m.interconnect.pair(i, j).map_or(-1, milli))
            .collect(),
        interconnect_sets: m
            .interconnect
            .measured_sets()
            .map(|(k, v)| (k.clone(), milli(v)))
            .collect(),
    };
    // serde_json writes struct fields in declaration order and Vecs in order: stable bytes.
    let bytes = serde_json::to_vec(&canonical).unwrap_or_default();
    let digest = Sha256::digest(&bytes);
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("mc1-{hex}")
}
