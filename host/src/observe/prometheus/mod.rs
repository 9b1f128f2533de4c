//! A metric scraped from the container's Prometheus text endpoint.
//!
//! [`PrometheusSource::connect`] scrapes once to check that the endpoint answers and holds
//! the metric, and settles its [`Kind`]: the configured one, else the family's `# TYPE`
//! (counters, and the `_count`/`_sum` of histograms and summaries, are running totals turned
//! into rates; gauges and untyped metrics are levels averaged over the window). When several
//! series match the selector their values are summed, as `sum()` would in PromQL: per-worker
//! counters add up to the container's rate.
//!
//! Readings are stamped with the scraper's clock when the response has been read. The
//! exposition's own millisecond timestamps are ignored: most exporters omit them, and a
//! 1 ms quantum is 0.2% of a 0.5 s window, more than the noise floor measured on an idle
//! host (see `protocol`'s defaults).

mod http;
pub mod text;

use std::time::Duration;

use hyper::Uri;
use tokio::time::Instant;

use self::text::{MetricType, ParseError, Selector};
use super::source::{Kind, MetricSource, Reading, SourceError};

/// Scrapes larger than this are refused: a metrics page is kilobytes; megabytes mean the
/// URL points at something else.
const MAX_BODY: usize = 16 << 20;

/// What to scrape.
#[derive(Debug, Clone)]
pub struct PrometheusConfig {
    /// `http://host:port/path`; https is not supported.
    pub url: String,
    /// Metric name and label matchers.
    pub selector: Selector,
    /// Overrides the kind the endpoint declares.
    pub kind: Option<Kind>,
    /// Bound on one scrape, connection included.
    pub timeout: Duration,
}

/// Why a scrape failed. Messages name the URL; the underlying error is the source.
#[derive(Debug, thiserror::Error)]
pub enum PrometheusError {
    /// The URL does not parse or has no host.
    #[error("invalid metrics URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Only plain HTTP is spoken.
    #[error("metrics URL {url:?} is not http://; scrape the exporter's plain-HTTP port")]
    UnsupportedScheme {
        /// The URL as given.
        url: String,
    },
    /// Nothing listens there, or the host is unreachable.
    #[error("cannot connect to the metrics endpoint {url}")]
    Connect {
        /// The URL.
        url: String,
        /// The connect error.
        #[source]
        source: std::io::Error,
    },
    /// The peer does not speak HTTP/1.1 or broke the connection.
    #[error("HTTP exchange with {url} failed")]
    Protocol {
        /// The URL.
        url: String,
        /// hyper's error.
        #[source]
        source: hyper::Error,
    },
    /// The response body could not be read.
    #[error("reading the response body from {url} failed")]
    Body {
        /// The URL.
        url: String,
        /// The body error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A non-2xx status.
    #[error("metrics endpoint {url} answered HTTP {status}")]
    Status {
        /// The URL.
        url: String,
        /// The status code.
        status: u16,
    },
    /// The body is larger than `MAX_BODY`.
    #[error("metrics endpoint {url} sent more than {limit} bytes")]
    TooLarge {
        /// The URL.
        url: String,
        /// The limit.
        limit: usize,
    },
    /// The body is not UTF-8 text.
    #[error("metrics endpoint {url} sent a body that is not UTF-8 text")]
    NotUtf8 {
        /// The URL.
        url: String,
    },
    /// The scrape did not finish in time.
    #[error("scraping {url} took longer than {timeout:?}")]
    Timeout {
        /// The URL.
        url: String,
        /// The configured bound.
        timeout: Duration,
    },
    /// The body is not in the text exposition format.
    #[error("metrics endpoint {url} sent malformed text")]
    Malformed {
        /// The URL.
        url: String,
        /// Where and why.
        #[source]
        source: ParseError,
    },
    /// No series matches the selector.
    #[error("metrics endpoint {url} has no series matching {selector}")]
    MetricMissing {
        /// The URL.
        url: String,
        /// The selector, as PromQL would write it.
        selector: String,
    },
    /// A matching series is NaN or infinite: no rate can be made from it.
    #[error("series {selector} at {url} is {value}, not a finite number")]
    NotFinite {
        /// The URL.
        url: String,
        /// The selector.
        selector: String,
        /// The value.
        value: f64,
    },
}

/// An endpoint URL as this source can scrape it: plain `http://` with a host.
pub fn parse_url(url: &str) -> Result<Uri, PrometheusError> {
    let uri: Uri =
        url.parse().map_err(
            |e: hyper::http::uri::InvalidUri| PrometheusError::InvalidUrl {
                url: url.to_owned(),
                reason: e.to_string(),
            },
        )?;
    if uri.scheme_str() != Some("http") {
        return Err(PrometheusError::UnsupportedScheme {
            url: url.to_owned(),
        });
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(PrometheusError::InvalidUrl {
            url: url.to_owned(),
            reason: "no host".to_owned(),
        });
    }
    Ok(uri)
}

/// A [`MetricSource`] that scrapes one selector from one endpoint.
#[derive(Debug)]
pub struct PrometheusSource {
    uri: Uri,
    config: PrometheusConfig,
    kind: Kind,
}

impl PrometheusSource {
    /// Scrapes once to check the endpoint and the metric, and settles the kind.
    pub async fn connect(config: PrometheusConfig) -> Result<Self, PrometheusError> {
        let uri = parse_url(&config.url)?;
        let mut source = Self {
            uri,
            kind: config.kind.unwrap_or(Kind::Gauge),
            config,
        };
        let (_, declared) = source.scrape().await?;
        if source.config.kind.is_none() {
            source.kind = kind_of(&source.config.selector.metric, declared);
        }
        Ok(source)
    }

    /// One scrape: the summed value of the matching series and the family's declared type.
    async fn scrape(&self) -> Result<(f64, Option<MetricType>), PrometheusError> {
        let url = &self.config.url;
        let body = tokio::time::timeout(self.config.timeout, http::get(&self.uri, MAX_BODY))
            .await
            .map_err(|_| PrometheusError::Timeout {
                url: url.clone(),
                timeout: self.config.timeout,
            })??;
        let exposition = text::parse(&body).map_err(|source| PrometheusError::Malformed {
            url: url.clone(),
            source,
        })?;
        let selector = &self.config.selector;
        let mut matched = exposition
            .samples
            .iter()
            .filter(|s| selector.matches(s))
            .peekable();
        if matched.peek().is_none() {
            return Err(PrometheusError::MetricMissing {
                url: url.clone(),
                selector: selector.to_string(),
            });
        }
        let mut sum = 0.0;
        for sample in matched {
            if !sample.value.is_finite() {
                return Err(PrometheusError::NotFinite {
                    url: url.clone(),
                    selector: selector.to_string(),
                    value: sample.value,
                });
            }
            sum += sample.value;
        }
        Ok((sum, exposition.type_of(&selector.metric)))
    }
}

/// The kind a declared type implies. Untyped `_total` series are counters by naming
/// convention (Prometheus' own guidelines reserve the suffix for them).
fn kind_of(metric: &str, declared: Option<MetricType>) -> Kind {
    match declared {
        Some(MetricType::Counter | MetricType::Histogram | MetricType::Summary) => Kind::Counter,
        Some(MetricType::Gauge) => Kind::Gauge,
        Some(MetricType::Untyped) | None if metric.ends_with("_total") => Kind::Counter,
        Some(MetricType::Untyped) | None => Kind::Gauge,
    }
}

impl From<PrometheusError> for SourceError {
    fn from(e: PrometheusError) -> Self {
        Self::failed(e)
    }
}

impl MetricSource for PrometheusSource {
    fn describe(&self) -> String {
        format!("prometheus {} {}", self.config.url, self.config.selector)
    }

    fn kind(&self) -> Kind {
        self.kind
    }

    fn is_pulled(&self) -> bool {
        true
    }

    async fn poll(&mut self) -> Result<Vec<Reading>, SourceError> {
        let (value, _) = self.scrape().await?;
        Ok(vec![Reading::new(Instant::now(), value)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_types_map_to_kinds() {
        assert_eq!(kind_of("x", Some(MetricType::Counter)), Kind::Counter);
        assert_eq!(kind_of("x_count", Some(MetricType::Summary)), Kind::Counter);
        assert_eq!(kind_of("x", Some(MetricType::Gauge)), Kind::Gauge);
        assert_eq!(kind_of("x_total", None), Kind::Counter);
        assert_eq!(kind_of("x", None), Kind::Gauge);
    }
}

/// Bad endpoints over real sockets: each failure is its own variant, and none hangs.
#[cfg(test)]
mod endpoint_tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;
    use tokio::task::JoinHandle;

    use super::*;

    /// Serves `response` (raw HTTP) to every connection, or holds connections open without
    /// answering when it is `None`. Aborted by the caller when done.
    async fn server(response: Option<String>) -> (String, JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                match &response {
                    Some(r) => {
                        let mut buf = [0_u8; 4096];
                        let _ = stream.read(&mut buf).await;
                        let _ = stream.write_all(r.as_bytes()).await;
                        let _ = stream.shutdown().await;
                    }
                    None => held.push(stream),
                }
            }
        });
        (format!("http://{addr}/metrics"), task)
    }

    fn ok(body: &str) -> Option<String> {
        Some(format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ))
    }

    fn config(url: &str, selector: &str) -> PrometheusConfig {
        PrometheusConfig {
            url: url.to_owned(),
            selector: Selector::parse(selector).unwrap(),
            kind: None,
            timeout: Duration::from_millis(500),
        }
    }

    #[tokio::test]
    async fn a_good_endpoint_settles_the_kind_and_sums_series() {
        let body = "# TYPE ops_total counter\nops_total{w=\"1\"} 10\nops_total{w=\"2\"} 5\n# TYPE depth gauge\ndepth 3\n";
        let (url, task) = server(ok(body)).await;
        let mut counter = PrometheusSource::connect(config(&url, "ops_total"))
            .await
            .unwrap();
        assert_eq!(counter.kind(), Kind::Counter);
        assert_eq!(counter.poll().await.unwrap()[0].value, 15.0);
        let gauge = PrometheusSource::connect(config(&url, "depth"))
            .await
            .unwrap();
        assert_eq!(gauge.kind(), Kind::Gauge);
        let mut cfg = config(&url, r#"ops_total{w="2"}"#);
        cfg.kind = Some(Kind::Gauge);
        let mut one = PrometheusSource::connect(cfg).await.unwrap();
        assert_eq!(one.kind(), Kind::Gauge);
        assert_eq!(one.poll().await.unwrap()[0].value, 5.0);
        task.abort();
    }

    #[tokio::test]
    async fn an_endpoint_that_is_down_is_a_connect_error() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/metrics", listener.local_addr().unwrap());
        drop(listener);
        let err = PrometheusSource::connect(config(&url, "x"))
            .await
            .unwrap_err();
        assert!(matches!(err, PrometheusError::Connect { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn an_endpoint_that_never_answers_times_out() {
        let (url, task) = server(None).await;
        let err = PrometheusSource::connect(config(&url, "x"))
            .await
            .unwrap_err();
        assert!(matches!(err, PrometheusError::Timeout { .. }), "{err:?}");
        task.abort();
    }

    #[tokio::test]
    async fn bad_answers_are_told_apart() {
        let cases: Vec<(Option<String>, &str)> = vec![
            (ok("ops_total{ 1\n"), "malformed"),
            (ok("other_total 1\n"), "missing"),
            (ok("ops_total NaN\n"), "not finite"),
            (
                Some("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n".to_owned()),
                "status",
            ),
            (Some("SSH-2.0-OpenSSH_9.2\r\n".to_owned()), "protocol"),
        ];
        for (response, what) in cases {
            let (url, task) = server(response).await;
            let err = PrometheusSource::connect(config(&url, "ops_total"))
                .await
                .unwrap_err();
            let matched = match what {
                "malformed" => matches!(err, PrometheusError::Malformed { .. }),
                "missing" => matches!(err, PrometheusError::MetricMissing { .. }),
                "not finite" => matches!(err, PrometheusError::NotFinite { .. }),
                "status" => matches!(err, PrometheusError::Status { status: 503, .. }),
                _ => matches!(err, PrometheusError::Protocol { .. }),
            };
            assert!(matched, "{what}: {err:?}");
            task.abort();
        }
    }

    #[tokio::test]
    async fn unsupported_urls_are_refused_before_connecting() {
        let err = PrometheusSource::connect(config("https://example.invalid/metrics", "x"))
            .await
            .unwrap_err();
        assert!(
            matches!(err, PrometheusError::UnsupportedScheme { .. }),
            "{err:?}"
        );
        let err = PrometheusSource::connect(config("not a url", "x"))
            .await
            .unwrap_err();
        assert!(matches!(err, PrometheusError::InvalidUrl { .. }), "{err:?}");
    }
}
