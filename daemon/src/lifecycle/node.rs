//! The node room: the machine the daemon places on (its model, its important placements
//! per container size) and the host it acts on (cgroups, containers, memory migration),
//! with what moves have taught it about migration speed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use placed_core::machine::Machine;
use placed_core::placement::{PlacementSet, important_placements};
use placed_host::enact::Host;
use placed_host::migrate::HoldPoint;

use super::error::DaemonError;

/// 1 GiB/s: a conservative guess for the kernel's cpuset migration on a server until a move
/// measures the real figure (the guest here moved 0.2-0.6 GiB/s under emulation).
const DEFAULT_MIGRATION_BYTES_PER_S: f64 = 1024.0 * 1024.0 * 1024.0;

#[derive(Debug)]
pub(crate) struct Node {
    pub machine: Machine,
    pub host: Host,
    /// Whether hardware counters work here (perf is offered only then).
    pub pmu: bool,
    /// Tests only: where migrations wait ([`HoldPoint`]).
    pub migration_hold: Option<HoldPoint>,
    /// The important placements per vCPU count, computed once each.
    placements: Mutex<HashMap<usize, Arc<PlacementSet>>>,
    /// Migration throughput assumed for the move-or-not rule until a move measures it.
    migration_bytes_per_s: Mutex<f64>,
}

impl Node {
    pub fn new(machine: Machine, host: Host, pmu: bool, migration_hold: Option<HoldPoint>) -> Self {
        Self {
            machine,
            host,
            pmu,
            migration_hold,
            placements: Mutex::new(HashMap::new()),
            migration_bytes_per_s: Mutex::new(DEFAULT_MIGRATION_BYTES_PER_S),
        }
    }

    /// The important placements for `v` vCPUs, computed once per `v`.
    pub fn placements(&self, v: usize) -> Result<Arc<PlacementSet>, DaemonError> {
        let cached = self
            .placements
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&v)
            .cloned();
        if let Some(s) = cached {
            return Ok(s);
        }
        let set = Arc::new(important_placements(&self.machine, v).map_err(|source| {
            DaemonError::Placements {
                vcpus: v,
                source: Box::new(source),
            }
        })?);
        self.placements
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(v, set.clone());
        Ok(set)
    }

    /// The migration throughput the move-or-not rule assumes now.
    pub fn migration_speed(&self) -> f64 {
        *self
            .migration_bytes_per_s
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    pub fn learn_migration_speed(&self, bytes: u64, seconds: f64) {
        // Only moves big enough to time meaningfully update the estimate.
        if bytes >= 64 << 20 && seconds > 0.01 {
            *self
                .migration_bytes_per_s
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = bytes as f64 / seconds;
        }
    }
}
