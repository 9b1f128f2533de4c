//! A measurement of the container kept as production data ([`super::production`]), from
//! whichever step made it: baseline and probe, the third measurement, a watch measurement
//! where a decision left it. Once a size predicted by the model across classes has kept
//! `production_data.fit_after_runs` runs, the log says the host's own model can be fitted.

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
        let runs = self.core.production.keep(
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
        let due = config.production_data.fit_after_runs;
        if due > 0 && runs == Some(due) {
            if let Some(prior) = self.core.models.prior_for(&set.fingerprint, set) {
                // Said once per file: the count passes the setting once.
                tracing::info!(
                    vcpus = set.vcpus,
                    runs,
                    data = %self.core.production.file_of(set).display(),
                    prior = %prior.display(),
                    "production data: containers of this size are predicted by the model across classes, and their data now has enough runs for this host's own model: placed-train fit --prior PRIOR --production DATA, then placed-train challenge --install (docs/models.md)"
                );
            }
        }
    }
}
