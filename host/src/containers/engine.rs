//! A minimal client of the Docker Engine API (also served by podman's `podman.sock`), over
//! its Unix socket: enough to turn a container name into its id and main pid.
//!
//! HTTP/1.0 requests, so the engine answers without chunked encoding and closes the
//! connection; the body is JSON (`GET /containers/json`, `GET /containers/{name}/json`).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use super::Runtime;

/// The largest answer read from an engine; a host with thousands of containers stays far
/// below it.
const MAX_RESPONSE: u64 = 64 << 20;

/// An engine's Unix socket.
#[derive(Debug, Clone)]
pub struct Engine {
    pub runtime: Runtime,
    pub socket: PathBuf,
    pub timeout: Duration,
}

/// A container as the engine reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineContainer {
    pub id: String,
    /// The name without the engine's leading `/`.
    pub name: String,
    /// The main process on the host, when running.
    pub pid: Option<u32>,
}

/// Why the engine did not answer usefully.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot connect to {}", socket.display())]
    Connect {
        socket: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} did not answer {request}", socket.display())]
    Io {
        socket: PathBuf,
        request: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{} answered {request} with {status}: {body}", socket.display())]
    Status {
        socket: PathBuf,
        request: String,
        status: u16,
        body: String,
    },
    #[error("{} answered {request} with something that is not the Engine API: {what}", socket.display())]
    Garbled {
        socket: PathBuf,
        request: String,
        what: String,
    },
}

impl EngineError {
    /// Whether the engine is simply not there (no socket, refused), as opposed to broken.
    pub fn is_absent(&self) -> bool {
        matches!(self, EngineError::Connect { source, .. }
            if matches!(source.raw_os_error(), Some(libc::ENOENT | libc::ECONNREFUSED)))
    }
}

impl Engine {
    pub fn new(runtime: Runtime, socket: impl Into<PathBuf>) -> Self {
        Self {
            runtime,
            socket: socket.into(),
            timeout: Duration::from_secs(5),
        }
    }

    /// Docker's default socket.
    pub fn docker() -> Self {
        Self::new(Runtime::Docker, "/var/run/docker.sock")
    }

    /// Podman's Docker-compatible socket (the rootful `podman.socket` unit).
    pub fn podman() -> Self {
        Self::new(Runtime::Podman, "/run/podman/podman.sock")
    }

    /// Running containers.
    pub fn list(&self) -> Result<Vec<EngineContainer>, EngineError> {
        let request = "/containers/json";
        let body = self.get(request)?;
        let garbled = |what: &str| EngineError::Garbled {
            socket: self.socket.clone(),
            request: request.to_owned(),
            what: what.to_owned(),
        };
        let v: serde_json::Value =
            serde_json::from_str(&body).map_err(|e| garbled(&e.to_string()))?;
        let items = v.as_array().ok_or_else(|| garbled("not a list"))?;
        Ok(items
            .iter()
            .filter_map(|c| {
                Some(EngineContainer {
                    id: c.get("Id")?.as_str()?.to_owned(),
                    name: c
                        .get("Names")?
                        .as_array()?
                        .first()?
                        .as_str()?
                        .trim_start_matches('/')
                        .to_owned(),
                    pid: None,
                })
            })
            .collect())
    }

    /// One container by name or id (prefix), or `None` if the engine does not know it.
    /// `name_or_id` must already be validated (letters, digits, `_.-`: nothing to escape).
    pub fn inspect(&self, name_or_id: &str) -> Result<Option<EngineContainer>, EngineError> {
        let request = format!("/containers/{name_or_id}/json");
        let body = match self.get(&request) {
            Ok(b) => b,
            Err(EngineError::Status { status: 404, .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let garbled = |what: &str| EngineError::Garbled {
            socket: self.socket.clone(),
            request: request.clone(),
            what: what.to_owned(),
        };
        let v: serde_json::Value =
            serde_json::from_str(&body).map_err(|e| garbled(&e.to_string()))?;
        let id = v
            .get("Id")
            .and_then(|i| i.as_str())
            .ok_or_else(|| garbled("no Id"))?;
        let name = v.get("Name").and_then(|n| n.as_str()).unwrap_or_default();
        let state = v.get("State");
        let running = state
            .and_then(|s| s.get("Running"))
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false);
        let pid = state
            .and_then(|s| s.get("Pid"))
            .and_then(serde_json::Value::as_u64)
            .and_then(|p| u32::try_from(p).ok())
            .filter(|&p| running && p > 0);
        Ok(Some(EngineContainer {
            id: id.to_owned(),
            name: name.trim_start_matches('/').to_owned(),
            pid,
        }))
    }

    fn get(&self, request: &str) -> Result<String, EngineError> {
        let io = |source| EngineError::Io {
            socket: self.socket.clone(),
            request: request.to_owned(),
            source,
        };
        let mut stream =
            UnixStream::connect(&self.socket).map_err(|source| EngineError::Connect {
                socket: self.socket.clone(),
                source,
            })?;
        stream.set_read_timeout(Some(self.timeout)).map_err(io)?;
        stream.set_write_timeout(Some(self.timeout)).map_err(io)?;
        // One write: a server that answers after the first read must have the whole request.
        let head = format!("GET {request} HTTP/1.0\r\nHost: localhost\r\n\r\n");
        stream.write_all(head.as_bytes()).map_err(io)?;
        let mut raw = Vec::new();
        stream
            .take(MAX_RESPONSE)
            .read_to_end(&mut raw)
            .map_err(io)?;
        // Bytes until the body is whole: chunk sizes count bytes, and a chunk may end
        // inside a UTF-8 character, so the text is decoded only after dechunking.
        let (head, body) = parse_response(&raw).ok_or_else(|| EngineError::Garbled {
            socket: self.socket.clone(),
            request: request.to_owned(),
            what: String::from_utf8_lossy(&raw).chars().take(80).collect(),
        })?;
        let body = if head.chunked {
            dechunk(body)
        } else {
            body.to_vec()
        };
        let body = String::from_utf8_lossy(&body);
        if head.status != 200 {
            return Err(EngineError::Status {
                socket: self.socket.clone(),
                request: request.to_owned(),
                status: head.status,
                body: body.trim().chars().take(200).collect(),
            });
        }
        Ok(body.into_owned())
    }
}

struct Head {
    status: u16,
    chunked: bool,
}

/// Splits an HTTP response into its status line facts and body.
fn parse_response(raw: &[u8]) -> Option<(Head, &[u8])> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    // The head is ASCII by the HTTP grammar; anything else in it is garbage we ignore.
    let head = String::from_utf8_lossy(&raw[..end]);
    let body = &raw[end + 4..];
    let mut lines = head.lines();
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let chunked = lines.any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    Some((Head { status, chunked }, body))
}

/// Decodes a chunked body (an engine may use it even for HTTP/1.0 behind a proxy); stops
/// at the last chunk or at the first malformed or truncated one.
fn dechunk(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&rest[..eol]).unwrap_or("");
        // A size may carry extensions after ';' (RFC 9112 7.1.1).
        let size = size.split(';').next().unwrap_or("").trim();
        let Ok(n) = usize::from_str_radix(size, 16) else {
            break;
        };
        let data = &rest[eol + 2..];
        if n == 0 || data.len() < n {
            break;
        }
        out.extend_from_slice(&data[..n]);
        rest = &data[n..];
        rest = rest.strip_prefix(b"\r\n").unwrap_or(rest);
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    /// Serves canned answers on a Unix socket in a temporary directory: each connection
    /// gets the answer whose request path it asked for, or a 404.
    pub(crate) fn fake_engine(
        answers: Vec<(&'static str, &'static str)>,
    ) -> (tempfile::TempDir, PathBuf) {
        fake_engine_raw(
            answers
                .into_iter()
                .map(|(path, body)| {
                    let reply =
                        format!("HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{body}");
                    (path, reply.into_bytes())
                })
                .collect(),
        )
    }

    /// The same with whole responses given as bytes (heads included).
    fn fake_engine_raw(answers: Vec<(&'static str, Vec<u8>)>) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("engine.sock");
        let listener = UnixListener::bind(&path).unwrap();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { break };
                let mut req = String::new();
                let mut buf = [0u8; 4096];
                while !req.contains("\r\n\r\n") {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => req.push_str(&String::from_utf8_lossy(&buf[..n])),
                    }
                }
                let path = req.split_whitespace().nth(1).unwrap_or("").to_owned();
                let reply = match answers.iter().find(|(p, _)| *p == path) {
                    Some((_, reply)) => reply.clone(),
                    None => b"HTTP/1.0 404 Not Found\r\n\r\n{\"message\":\"No such container\"}"
                        .to_vec(),
                };
                let _ = conn.write_all(&reply);
            }
        });
        (dir, path)
    }

    /// `body` in chunks of `size` bytes, cut wherever that falls, UTF-8 or not.
    fn chunked(body: &str, size: usize) -> Vec<u8> {
        let mut out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        for chunk in body.as_bytes().chunks(size) {
            out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
            out.extend_from_slice(chunk);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
        out
    }

    #[test]
    fn a_chunk_boundary_inside_a_utf8_character_is_decoded_whole() {
        let body = r#"{"Id":"abc123","Name":"/café-ü","State":{"Running":true,"Pid":7}}"#;
        // Every cut, so that some chunk ends after the first byte of 'é' or 'ü'.
        for size in 1..=body.len() {
            let raw = chunked(body, size);
            let (head, got) = parse_response(&raw).unwrap();
            assert!(head.chunked);
            assert_eq!(dechunk(got), body.as_bytes(), "chunks of {size}");
        }
        let cut = body.find('é').unwrap() + 1;
        let (_dir, sock) = fake_engine_raw(vec![("/containers/c/json", chunked(body, cut))]);
        let c = Engine::new(Runtime::Docker, &sock)
            .inspect("c")
            .unwrap()
            .unwrap();
        assert_eq!((c.name.as_str(), c.pid), ("café-ü", Some(7)));
    }

    #[test]
    fn invalid_utf8_and_malformed_chunks_are_errors_or_replacements_not_panics() {
        // A lone continuation byte in the body, an error status with multi-byte text, a
        // chunk size beyond the data, and no head at all.
        let mut bad = b"HTTP/1.0 200 OK\r\n\r\n{\"Id\":\"x\",\"Name\":\"/\xa9\"}".to_vec();
        bad.push(b'\n');
        let (_dir, sock) = fake_engine_raw(vec![
            ("/containers/bad/json", bad),
            (
                "/containers/gone/json",
                "HTTP/1.0 404 Not Found\r\n\r\n{\"message\":\"kein Container ›gone‹\"}"
                    .as_bytes()
                    .to_vec(),
            ),
            (
                "/containers/short/json",
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nff\r\n{}".to_vec(),
            ),
            ("/containers/json", "\u{e9}\u{e9}\u{e9}".as_bytes().to_vec()),
        ]);
        let e = Engine::new(Runtime::Docker, &sock);
        let c = e.inspect("bad").unwrap().unwrap();
        assert_eq!(c.name, "\u{fffd}");
        assert_eq!(e.inspect("gone").unwrap(), None);
        let err = e.inspect("short").unwrap_err();
        assert!(matches!(err, EngineError::Garbled { .. }), "{err}");
        let err = e.list().unwrap_err();
        assert!(matches!(err, EngineError::Garbled { .. }), "{err}");
        assert!(err.to_string().contains("\u{e9}\u{e9}"), "{err}");
    }

    #[test]
    fn inspects_and_lists() {
        let (_dir, sock) = fake_engine(vec![
            (
                "/containers/web/json",
                r#"{"Id":"abc123","Name":"/web","State":{"Running":true,"Pid":4242}}"#,
            ),
            (
                "/containers/old/json",
                r#"{"Id":"def456","Name":"/old","State":{"Running":false,"Pid":0}}"#,
            ),
            ("/containers/json", r#"[{"Id":"abc123","Names":["/web"]}]"#),
        ]);
        let e = Engine::new(Runtime::Docker, &sock);
        let web = e.inspect("web").unwrap().unwrap();
        assert_eq!(
            (web.id.as_str(), web.name.as_str(), web.pid),
            ("abc123", "web", Some(4242))
        );
        assert_eq!(e.inspect("old").unwrap().unwrap().pid, None);
        assert_eq!(e.inspect("nope").unwrap(), None);
        assert_eq!(e.list().unwrap()[0].name, "web");
    }

    #[test]
    fn absent_engine_is_told_apart() {
        let e = Engine::new(Runtime::Docker, "/nonexistent/docker.sock");
        let err = e.list().unwrap_err();
        assert!(err.is_absent(), "{err}");
    }

    #[test]
    fn chunked_bodies_are_decoded() {
        let (head, body) = parse_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n[1,2\r\n2\r\n,3\r\n1\r\n]\r\n0\r\n\r\n").unwrap();
        assert!(head.chunked);
        assert_eq!(dechunk(body), b"[1,2,3]");
    }
}
