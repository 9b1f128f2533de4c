//! The header of data measured on this machine model's placements, built from them (with
//! the `machine` feature, which knows the machine model).

use super::{DATA_FORMAT_VERSION, MachineHeader, PlacementInfo};

impl MachineHeader {
    /// The header of data measured in `set`'s placements: what the collector writes and
    /// the daemon's production data begins with.
    #[cfg(feature = "machine")]
    pub fn of(set: &placed_core::placement::PlacementSet) -> Self {
        Self {
            version: DATA_FORMAT_VERSION,
            fingerprint: set.fingerprint.clone(),
            v: u32::try_from(set.vcpus).unwrap_or(u32::MAX),
            concerns: set.concerns.clone(),
            placements: set
                .placements
                .iter()
                .map(|p| PlacementInfo {
                    id: p.id.clone(),
                    scores: p.scores_in_units(),
                })
                .collect(),
        }
    }
}
