//! Logs and Prometheus metrics.
//!
//! Logs go through `tracing`: text without colours or timestamps under journald (which adds
//! its own), text with timestamps on a terminal, or JSON lines for log shippers. Metrics are
//! one registry, served as Prometheus text at `/metrics`.

use std::net::SocketAddr;
use std::sync::Arc;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

use crate::config::LogFormat;

/// Sets up the global subscriber. `RUST_LOG` overrides the level (default `info`).
pub fn init_logging(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let under_journald = std::env::var_os("JOURNAL_STREAM").is_some();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let result = match (format, under_journald) {
        (LogFormat::Json, _) => builder.json().flatten_event(true).try_init(),
        (LogFormat::Text, true) => builder
            .with_ansi(false)
            .without_time()
            .with_target(false)
            .try_init(),
        (LogFormat::Text, false) => builder.with_ansi(false).try_init(),
    };
    // A second init (tests) keeps the first subscriber.
    let _ = result;
}

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
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("placed");
        let containers = Family::<StateLabel, Gauge>::default();
        let predictions = Counter::default();
        let migrations = Family::<OutcomeLabel, Counter>::default();
        let migration_bytes = Counter::default();
        // 10 ms to about 80 s.
        let migration_seconds = Histogram::new(exponential_buckets(0.01, 2.0, 14));
        let errors = Family::<KindLabel, Counter>::default();
        let metric_samples = Counter::default();
        registry.register(
            "containers",
            "Containers per lifecycle state",
            containers.clone(),
        );
        registry.register("predictions", "Predictions made", predictions.clone());
        registry.register(
            "migrations",
            "Container moves by outcome",
            migrations.clone(),
        );
        registry.register(
            "migration_bytes",
            "Bytes of memory moved between NUMA nodes",
            migration_bytes.clone(),
        );
        registry.register(
            "migration_seconds",
            "Duration of container moves",
            migration_seconds.clone(),
        );
        registry.register("errors", "Errors by kind", errors.clone());
        registry.register(
            "metric_samples",
            "Performance samples received over ReportMetric",
            metric_samples.clone(),
        );
        Self {
            registry,
            containers,
            predictions,
            migrations,
            migration_bytes,
            migration_seconds,
            errors,
            metric_samples,
        }
    }
}

impl Metrics {
    pub fn error(&self, kind: &str) {
        self.errors
            .get_or_create(&KindLabel { kind: kind.into() })
            .inc();
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

/// Serves `/metrics` until cancelled. Binding errors are returned so that a port clash is
/// reported at start-up, not swallowed.
pub async fn bind_metrics(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr).await
}

pub async fn serve_metrics(
    listener: tokio::net::TcpListener,
    metrics: Arc<Metrics>,
    cancel: CancellationToken,
) {
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let m = metrics.clone();
            async move {
                (
                    [(
                        axum::http::header::CONTENT_TYPE,
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    m.render(),
                )
            }
        }),
    );
    let listener = crate::service::guard::GuardedListener::new(
        listener,
        crate::service::guard::MAX_CONNECTIONS,
        crate::service::guard::IDLE,
    );
    if let Err(e) = axum::serve(listener, app)
        .with_graceful_shutdown(async move { cancel.cancelled().await })
        .await
    {
        tracing::error!(error = %e, "metrics endpoint stopped");
    }
}
