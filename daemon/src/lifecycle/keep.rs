//! A measurement of the container kept as production data ([`super::production`]), from
//! whichever step made it: baseline and probe, the third measurement, a watch measurement
//! where a decision left it.

use placed_core::placement::PlacementSet;
use placed_host::observe::Measurement;

use crate::state::ContainerRecord;

use super::handle::Handle;
use super::production::{Measured, run_of};

impl Handle {
    /// Keeps `m`, taken in `placement` for the evaluation made at `evaluated_ms`.
    pub(crate) fn keep_measurement(
        &self,
        set: &PlacementSet,
        rec: &ContainerRecord,
        evaluated_ms: i64,
        placement: &str,
        m: &Measurement,
    ) {
        let config = self.core.settings.config();
        self.core.production.keep(
            &config.production_data,
            &Measured {
                set,
                name: &rec.name,
                labels: &rec.labels,
                run: run_of(evaluated_ms),
                placement,
                measurement: m,
            },
        );
    }
}
