//! One HTTP/1.1 GET over a fresh TCP connection, with hyper.
//!
//! The connection is driven inside the request's own future instead of a spawned task, so
//! that dropping the future (the caller's timeout) closes the socket and leaves nothing
//! running behind: a hung endpoint cannot pin a task or a file descriptor.

use http_body_util::{BodyExt, Empty, LengthLimitError, Limited};
use hyper::body::Bytes;
use hyper::{Request, Uri};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::PrometheusError;

/// Fetches `uri` and returns its body as text, refusing bodies above `max_bytes`.
pub(super) async fn get(uri: &Uri, max_bytes: usize) -> Result<String, PrometheusError> {
    let url = uri.to_string();
    if uri.scheme_str() != Some("http") {
        return Err(PrometheusError::UnsupportedScheme { url });
    }
    let Some(host) = uri.host() else {
        return Err(PrometheusError::InvalidUrl {
            url,
            reason: "no host".to_owned(),
        });
    };
    let port = uri.port_u16().unwrap_or(80);
    // IPv6 literals come bracketed in URIs; the resolver wants them bare.
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let stream =
        TcpStream::connect((host, port))
            .await
            .map_err(|source| PrometheusError::Connect {
                url: url.clone(),
                source,
            })?;
    let protocol = |source| PrometheusError::Protocol {
        url: url.clone(),
        source,
    };
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(protocol)?;
    let authority = uri.authority().map_or(host, |a| a.as_str());
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let request = Request::get(path)
        .header(hyper::header::HOST, authority)
        .header(hyper::header::ACCEPT, "text/plain;version=0.0.4")
        .header(hyper::header::CONNECTION, "close")
        .body(Empty::<Bytes>::new())
        .map_err(|e| PrometheusError::InvalidUrl {
            url: url.clone(),
            reason: e.to_string(),
        })?;
    let fetch = async {
        let response = sender.send_request(request).await.map_err(protocol)?;
        let status = response.status();
        if !status.is_success() {
            return Err(PrometheusError::Status {
                url: url.clone(),
                status: status.as_u16(),
            });
        }
        let body = Limited::new(response.into_body(), max_bytes)
            .collect()
            .await
            .map_err(|e| {
                if e.is::<LengthLimitError>() {
                    PrometheusError::TooLarge {
                        url: url.clone(),
                        limit: max_bytes,
                    }
                } else {
                    PrometheusError::Body {
                        url: url.clone(),
                        source: e,
                    }
                }
            })?
            .to_bytes();
        String::from_utf8(body.to_vec()).map_err(|_| PrometheusError::NotUtf8 { url: url.clone() })
    };
    tokio::pin!(fetch);
    tokio::pin!(conn);
    tokio::select! {
        biased;
        result = &mut fetch => result,
        // The connection ends once the server closes it; whatever the response still holds
        // is buffered, so finish reading it. A broken connection fails the request.
        ended = &mut conn => {
            ended.map_err(protocol)?;
            fetch.await
        }
    }
}
