//! Logs ([`logging`]) and Prometheus metrics: one registry, served at `/metrics`
//! ([`serve`]): the daemon's own families under `placed_`, the standard `process_`
//! families ([`process`]), and per-container families read at each scrape
//! ([`containers`]). Every family is present from start, with zero values for each known
//! label value, so that `rate()` and absence alerts see data before the first event.

pub mod containers;
pub mod live;
pub mod logging;
pub mod process;
pub mod serve;

use std::sync::Arc;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

use crate::state::Lifecycle;

/// Error kinds counted in `placed_errors_total` (each exported from start at 0).
pub const ERROR_KINDS: [&str; 6] = ["api", "lifecycle", "observe", "enact", "state", "discovery"];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabel {
    pub state: String,
}

/// How a move ended, as the `outcome` label of `placed_migrations_total`.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Failed,
    RolledBack,
}

impl EncodeLabelValue for Outcome {
    fn encode(
        &self,
        encoder: &mut prometheus_client::encoding::LabelValueEncoder<'_>,
    ) -> Result<(), std::fmt::Error> {
        use std::fmt::Write;
        encoder.write_str(match self {
            Outcome::Ok => "ok",
            Outcome::Failed => "failed",
            Outcome::RolledBack => "rolled_back",
        })
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabel {
    pub outcome: Outcome,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    pub kind: String,
}

/// What the daemon did about a cpuset changed outside it, as the `action` label of
/// `placed_placement_overrides_total` (`placed_core::reconcile::Action`'s names).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ActionLabel {
    pub action: String,
}

/// A container size, as the `vcpus` label of `placed_production_data_runs`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VcpusLabel {
    pub vcpus: u32,
}

/// Every metric the daemon exports. `tests/e2e` checks each is exported.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// Containers per lifecycle state (set on every change).
    pub containers: Family<StateLabel, Gauge>,
    pub predictions: Counter,
    pub migrations: Family<OutcomeLabel, Counter>,
    pub migration_bytes: Counter,
    pub migration_seconds: Histogram,
    /// Errors by kind: `api` (a request answered with an error status), `lifecycle` (a
    /// container's task failed a step), `observe`, `enact`, `state`, `discovery`.
    pub errors: Family<KindLabel, Counter>,
    pub metric_samples: Counter,
    /// Cpusets found changed outside placed, by what the daemon did (`reasserted`,
    /// `adopted`, `left`, `gave_up`).
    pub overrides: Family<ActionLabel, Counter>,
    /// `Watch` streams open now (at most `grpc.max_watchers`).
    pub watchers: Gauge,
    /// Writes of the state file (saves queued behind a write are covered by the next one).
    pub state_writes: Counter,
    /// Checks of a managed container's cpuset against what placed enacted.
    pub cpuset_checks: Counter,
    /// Per-container families, read from the daemon at each scrape.
    pub per_container: Arc<containers::PerContainer>,
    /// Live accuracy per model.
    pub live: live::LiveMetrics,
    /// Measurements kept as production data.
    pub production_records: Counter,
    /// Measurements production data failed to keep (a write error).
    pub production_errors: Counter,
    /// Runs (evaluations of a container) in this host's production data file of each size,
    /// from the first measurement kept after start.
    pub production_runs: Family<VcpusLabel, Gauge>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut root = Registry::default();
        root.register_collector(Box::new(process::ProcessCollector));
        let mut metrics = Self {
            registry: Registry::default(),
            containers: Family::default(),
            predictions: Counter::default(),
            migrations: Family::default(),
            migration_bytes: Counter::default(),
            // 10 ms to about 80 s.
            migration_seconds: Histogram::new(exponential_buckets(0.01, 2.0, 14)),
            errors: Family::default(),
            metric_samples: Counter::default(),
            overrides: Family::default(),
            watchers: Gauge::default(),
            state_writes: Counter::default(),
            cpuset_checks: Counter::default(),
            per_container: Arc::new(containers::PerContainer::default()),
            live: live::LiveMetrics::default(),
            production_records: Counter::default(),
            production_errors: Counter::default(),
            production_runs: Family::default(),
        };
        metrics.register(root.sub_registry_with_prefix("placed"));
        metrics.zero_series();
        metrics.registry = root;
        metrics
    }
}

impl Metrics {
    /// Every family under `placed_`, with its help text.
    fn register(&self, registry: &mut Registry) {
        registry.register(
            "build",
            "The daemon's version and build",
            Info::new(vec![
                ("version", env!("CARGO_PKG_VERSION")),
                (
                    "profile",
                    if cfg!(debug_assertions) {
                        "debug"
                    } else {
                        "release"
                    },
                ),
                ("arch", std::env::consts::ARCH),
            ]),
        );
        registry.register_collector(Box::new(self.per_container.clone()));
        registry.register(
            "containers",
            "Containers per lifecycle state",
            self.containers.clone(),
        );
        registry.register("predictions", "Predictions made", self.predictions.clone());
        registry.register(
            "migrations",
            "Container moves by outcome",
            self.migrations.clone(),
        );
        registry.register(
            "migration_bytes",
            "Bytes of memory moved between NUMA nodes",
            self.migration_bytes.clone(),
        );
        registry.register(
            "migration_seconds",
            "Duration of container moves",
            self.migration_seconds.clone(),
        );
        registry.register("errors", "Errors by kind", self.errors.clone());
        registry.register(
            "metric_samples",
            "Performance samples received over ReportMetric",
            self.metric_samples.clone(),
        );
        registry.register(
            "placement_overrides",
            "Managed containers' cpusets found changed outside placed, by what the daemon did",
            self.overrides.clone(),
        );
        registry.register(
            "watchers",
            "Watch streams open now (at most grpc.max_watchers)",
            self.watchers.clone(),
        );
        registry.register(
            "state_writes",
            "Writes of the state file",
            self.state_writes.clone(),
        );
        registry.register(
            "cpuset_checks",
            "Checks of a managed container's cpuset against what placed enacted",
            self.cpuset_checks.clone(),
        );
        self.live.register(registry);
        registry.register(
            "production_data_records",
            "Measurements of managed containers kept as production data",
            self.production_records.clone(),
        );
        registry.register(
            "production_data_errors",
            "Measurements production data failed to keep (write errors; the log says the first)",
            self.production_errors.clone(),
        );
        registry.register(
            "production_data_runs",
            "Runs (evaluations of a container) in this host's production data file of each size",
            self.production_runs.clone(),
        );
    }

    /// Every labelled series a scrape should see from the start, at zero: a rate over a
    /// series that appears only at its first event misses that event.
    fn zero_series(&self) {
        for action in placed_core::reconcile::Action::ALL {
            let _zero = self.overrides.get_or_create(&ActionLabel {
                action: action.name().into(),
            });
        }
        for state in Lifecycle::ALL {
            let _zero = self.containers.get_or_create(&StateLabel {
                state: state.name().into(),
            });
        }
        for outcome in [Outcome::Ok, Outcome::Failed, Outcome::RolledBack] {
            let _zero = self.migrations.get_or_create(&OutcomeLabel { outcome });
        }
        for kind in ERROR_KINDS {
            let _zero = self.errors.get_or_create(&KindLabel { kind: kind.into() });
        }
    }
}

impl Metrics {
    /// `placed_production_data_runs` of the production data file of size `vcpus`.
    pub fn production_runs_of(&self, vcpus: u32) -> Gauge {
        self.production_runs
            .get_or_create(&VcpusLabel { vcpus })
            .clone()
    }

    pub fn error(&self, kind: &str) {
        self.errors
            .get_or_create(&KindLabel { kind: kind.into() })
            .inc();
    }

    /// The exposition in `format`.
    pub fn render(&self, format: serve::Format) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        match format {
            serve::Format::OpenMetrics => out,
            serve::Format::Text => serve::to_text(&out),
        }
    }
}
