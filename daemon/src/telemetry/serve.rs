//! The `/metrics` endpoint: content negotiation between the Prometheus text format 0.0.4
//! (what `promtool check metrics` and most scrapers without OpenMetrics read) and
//! OpenMetrics 1.0 (what Prometheus asks for first), and an endpoint that a reload can move
//! to another address or switch off, whose connections are let in within limits
//! (`listener`).

use std::net::SocketAddr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::Metrics;
use crate::config::MetricsConfig;

pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
pub const TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// An exposition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Prometheus text 0.0.4.
    Text,
    OpenMetrics,
}

impl Format {
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => TEXT,
            Format::OpenMetrics => OPENMETRICS,
        }
    }

    /// What an `Accept` header asks for: OpenMetrics when it names it with a weight at
    /// least that of plain text, the text format otherwise (no header, `*/*`, `text/plain`).
    pub fn negotiate(accept: Option<&str>) -> Self {
        let (mut openmetrics, mut text) = (0.0_f64, 0.0_f64);
        for range in accept.unwrap_or("").split(',') {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or("").to_ascii_lowercase();
            let q = parts
                .filter_map(|p| p.strip_prefix("q="))
                .find_map(|q| q.parse::<f64>().ok())
                .unwrap_or(1.0);
            match media.as_str() {
                "application/openmetrics-text" => openmetrics = openmetrics.max(q),
                "text/plain" | "text/*" | "*/*" => text = text.max(q),
                _ => {}
            }
        }
        if openmetrics > 0.0 && openmetrics >= text {
            Format::OpenMetrics
        } else {
            Format::Text
        }
    }
}

/// Rewrites an OpenMetrics exposition as Prometheus text 0.0.4: no `# EOF` or `# UNIT`;
/// a counter's `# HELP` and `# TYPE` name its samples (`..._total`); an info family is a
/// gauge named `..._info`.
pub fn to_text(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    let mut kinds = std::collections::HashMap::new();
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            if let Some((name, kind)) = rest.split_once(' ') {
                kinds.insert(name.to_owned(), kind.to_owned());
            }
        }
    }
    let renamed = |name: &str| -> (String, Option<&str>) {
        match kinds.get(name).map(String::as_str) {
            Some("counter") => (format!("{name}_total"), None),
            Some("info") => (format!("{name}_info"), Some("gauge")),
            _ => (name.to_owned(), None),
        }
    };
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            out.push_str(&format!("# HELP {} {help}\n", renamed(name).0));
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "untyped"));
            let (name, as_kind) = renamed(name);
            out.push_str(&format!("# TYPE {name} {}\n", as_kind.unwrap_or(kind)));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Binds the endpoint's listener, if metrics are enabled. Binding errors are returned so
/// that a port clash is reported at start-up, not swallowed.
pub async fn bind(config: &MetricsConfig) -> std::io::Result<Option<tokio::net::TcpListener>> {
    if config.enabled {
        tokio::net::TcpListener::bind(config.listen).await.map(Some)
    } else {
        Ok(None)
    }
}

/// The running endpoint, which a reload may move or switch off.
#[derive(Debug)]
pub struct Endpoint {
    metrics: Arc<Metrics>,
    /// Ends every server the endpoint starts (the daemon stopping).
    parent: CancellationToken,
    /// The configured address served now, and what stops that server alone.
    running: Option<(SocketAddr, CancellationToken)>,
}

impl Endpoint {
    pub fn new(metrics: Arc<Metrics>, parent: CancellationToken) -> Self {
        Self {
            metrics,
            parent,
            running: None,
        }
    }

    /// Serves on `listener`, bound for the configured address `addr`.
    pub fn serve(&mut self, addr: SocketAddr, listener: tokio::net::TcpListener) {
        self.stop();
        let token = self.parent.child_token();
        tokio::spawn(serve(listener, self.metrics.clone(), token.clone()));
        self.running = Some((addr, token));
    }

    fn stop(&mut self) {
        if let Some((_, token)) = self.running.take() {
            token.cancel();
        }
    }

    /// Follows a new `[metrics]` section: starts, moves or stops the server. The new
    /// address is bound before the old one is let go (except when both use one port), so a
    /// failed bind keeps the endpoint where it was.
    pub async fn reconfigure(&mut self, config: &MetricsConfig) -> std::io::Result<()> {
        let wanted = config.enabled.then_some(config.listen);
        let now = self.running.as_ref().map(|(a, _)| *a);
        if wanted == now {
            return Ok(());
        }
        let Some(addr) = wanted else {
            self.stop();
            return Ok(());
        };
        match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => {
                self.serve(addr, l);
                Ok(())
            }
            Err(e) if now.is_some_and(|old| old.port() == addr.port()) => {
                // The old server holds the port (e.g. 127.0.0.1 to 0.0.0.0): let it go
                // first, and take it back if the new address still cannot be bound.
                let old = now.unwrap_or(addr);
                self.stop();
                match tokio::net::TcpListener::bind(addr).await {
                    Ok(l) => {
                        self.serve(addr, l);
                        Ok(())
                    }
                    Err(_) => {
                        if let Ok(l) = tokio::net::TcpListener::bind(old).await {
                            self.serve(old, l);
                        }
                        Err(e)
                    }
                }
            }
            Err(e) => Err(e),
        }
    }
}

async fn serve(
    listener: tokio::net::TcpListener,
    metrics: Arc<Metrics>,
    cancel: CancellationToken,
) {
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move |headers: axum::http::HeaderMap| {
            let m = metrics.clone();
            async move {
                let accept = headers
                    .get(axum::http::header::ACCEPT)
                    .and_then(|v| v.to_str().ok());
                let format = Format::negotiate(accept);
                (
                    [(axum::http::header::CONTENT_TYPE, format.content_type())],
                    m.render(format),
                )
            }
        }),
    );
    // Any local user can reach this port: connections are capped per address and in all,
    // and silent ones closed, so that they can take neither every descriptor (and with
    // them the API) nor every place a scrape needs.
    let listener = listener::Admitted::new(listener);
    if let Err(e) = axum::serve(listener, app)
        .with_graceful_shutdown(async move { cancel.cancelled().await })
        .await
    {
        tracing::error!(error = %e, "metrics endpoint stopped");
    }
}

mod listener;

#[cfg(test)]
mod tests;
