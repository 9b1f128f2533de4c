//! `[production_data]`: whether the daemon keeps what it measures of managed containers as
//! training data, and how large each file may grow (docs/daemon.md, "Production data").

use serde::{Deserialize, Serialize};

/// The default bound of one data file: about 200,000 records of a few hundred bytes.
pub const DEFAULT_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// The smallest bound accepted: a header line and a few records.
pub const MIN_MAX_BYTES: u64 = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProductionDataConfig {
    /// Append every measurement of a managed container (baseline, probe, third measurement,
    /// where a decision left it) to `<state dir>/production/<fingerprint>-v<N>.jsonl`.
    pub enabled: bool,
    /// The largest one file may grow; a full file stops growing (said once in the log).
    pub max_bytes: u64,
    /// Runs after which the log says a size predicted by the model across classes has
    /// enough production data for the host's own model (`placed-train fit --prior`); 0
    /// never says it.
    pub fit_after_runs: u64,
}

/// The default of `fit_after_runs`: leaving each of nine classes out of the corpus, the
/// host's own model fitted on 64 runs beat the prior on seven of them (SIMULATED,
/// `placed-train classes trial`; docs/models.md).
pub const DEFAULT_FIT_AFTER_RUNS: u64 = 64;

impl Default for ProductionDataConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_bytes: DEFAULT_MAX_BYTES,
            fit_after_runs: DEFAULT_FIT_AFTER_RUNS,
        }
    }
}

impl ProductionDataConfig {
    /// What the section refuses, in a line naming the key.
    pub fn problem(&self) -> Option<String> {
        (self.max_bytes < MIN_MAX_BYTES).then(|| {
            format!(
                "production_data.max_bytes = {} is below the minimum of {MIN_MAX_BYTES}: a file that small holds a header and hardly a run (set enabled = false to keep no data)",
                self.max_bytes
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_too_small_for_a_run_is_refused_by_name() {
        assert_eq!(ProductionDataConfig::default().problem(), None);
        let small = ProductionDataConfig {
            max_bytes: 1000,
            ..ProductionDataConfig::default()
        };
        let p = small.problem().expect("refused");
        assert!(p.contains("production_data.max_bytes = 1000"), "{p}");
    }
}
