//! The NRI socket's multiplexer: several byte streams over one Unix socket.
//!
//! Every frame is an 8-byte header, the connection id then the payload's length (both u32,
//! big-endian), and the payload. Connection 1 carries the plugin's ttrpc service (placed
//! serves it), connection 2 the runtime's (placed calls it). Opening a connection sends
//! nothing: both ends simply use the id. A connection is a byte stream: ttrpc's own
//! messages may be cut across frames or share one, so frame boundaries mean nothing above
//! this module.
//!
//! Limits, as NRI's multiplexer has them: a frame carries at most [`MAX_PAYLOAD`] bytes
//! (16 MiB; a longer one is a protocol error that ends the trunk, since nothing after it
//! can be found again); frames for a connection nobody opened are dropped, as NRI drops
//! them; id 0 is reserved. ttrpc's own limit, 4 MiB a message, is ttrpc's to enforce (it
//! answers an oversized request with an error status). Frames we send are at most
//! [`SEND_CHUNK`] bytes, well under what NRI's reader takes in one read.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};
use tokio::sync::{Mutex, watch};
use tokio::task::JoinHandle;

/// The plugin's service: the runtime calls placed on it.
pub const PLUGIN_SERVICE: u32 = 1;
/// The runtime's service: placed calls the runtime on it.
pub const RUNTIME_SERVICE: u32 = 2;
/// Length of a frame header.
pub const HEADER_LEN: usize = 8;
/// The longest payload a frame may carry (NRI's multiplexer refuses to send more).
pub const MAX_PAYLOAD: u32 = 1 << 24;
/// The longest payload placed sends in one frame.
pub const SEND_CHUNK: usize = 1 << 16;
/// Bytes buffered between the multiplexer and each connection's user: one ttrpc message
/// of the largest size fits, so a frame never waits on a slow reader for long.
const CONN_BUFFER: usize = 4 << 20;

/// A frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub conn: u32,
    pub len: u32,
}

impl Header {
    pub fn encode(self) -> [u8; HEADER_LEN] {
        let mut b = [0; HEADER_LEN];
        b[..4].copy_from_slice(&self.conn.to_be_bytes());
        b[4..].copy_from_slice(&self.len.to_be_bytes());
        b
    }

    pub fn decode(b: [u8; HEADER_LEN]) -> Self {
        let [c0, c1, c2, c3, l0, l1, l2, l3] = b;
        Self {
            conn: u32::from_be_bytes([c0, c1, c2, c3]),
            len: u32::from_be_bytes([l0, l1, l2, l3]),
        }
    }
}

/// Why the trunk stopped carrying frames.
#[derive(Debug, thiserror::Error)]
pub enum MuxError {
    #[error(
        "frame for connection {conn} announces {len} bytes, above the protocol's {MAX_PAYLOAD}"
    )]
    Oversized { conn: u32, len: u32 },
    #[error("the trunk ended inside a frame")]
    Truncated,
    #[error("cannot read the trunk")]
    Read(#[source] std::io::Error),
    #[error("cannot write the trunk")]
    Write(#[source] std::io::Error),
}

/// Reads one frame: `None` at a clean end of the trunk (between frames).
pub async fn read_frame<R: AsyncRead + Unpin>(
    r: &mut R,
) -> Result<Option<(u32, Vec<u8>)>, MuxError> {
    let mut header = [0; HEADER_LEN];
    let mut got = 0;
    while got < HEADER_LEN {
        match r.read(&mut header[got..]).await.map_err(MuxError::Read)? {
            0 if got == 0 => return Ok(None),
            0 => return Err(MuxError::Truncated),
            n => got += n,
        }
    }
    let Header { conn, len } = Header::decode(header);
    if len > MAX_PAYLOAD {
        return Err(MuxError::Oversized { conn, len });
    }
    let len = usize::try_from(len).map_err(|_| MuxError::Oversized { conn, len })?;
    let mut payload = vec![0; len];
    r.read_exact(&mut payload)
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => MuxError::Truncated,
            _ => MuxError::Read(e),
        })?;
    Ok(Some((conn, payload)))
}

/// Writes `data` for `conn` as frames of at most [`SEND_CHUNK`] bytes, each header and
/// payload in one write so that frames of other connections never land inside it.
pub async fn write_frames<W: AsyncWrite + Unpin>(
    w: &mut W,
    conn: u32,
    data: &[u8],
) -> Result<(), MuxError> {
    for chunk in data.chunks(SEND_CHUNK) {
        let len = u32::try_from(chunk.len()).map_err(|_| MuxError::Oversized {
            conn,
            len: u32::MAX,
        })?;
        let mut frame = Vec::with_capacity(HEADER_LEN + chunk.len());
        frame.extend_from_slice(&Header { conn, len }.encode());
        frame.extend_from_slice(chunk);
        w.write_all(&frame).await.map_err(MuxError::Write)?;
    }
    w.flush().await.map_err(MuxError::Write)
}

/// How the trunk ended.
#[derive(Debug, Clone)]
pub enum End {
    /// The peer closed it between frames.
    Closed,
    /// A protocol or I/O error; the message is the error chain on one line.
    Failed(String),
}

/// A running multiplexer. Dropping it closes the trunk and every connection.
#[derive(Debug)]
pub struct Mux {
    tasks: Vec<JoinHandle<()>>,
    end: watch::Receiver<Option<End>>,
}

impl Mux {
    /// Starts multiplexing `trunk`; returns the byte streams of the connections `ids`
    /// (in that order). Frames for any other id are dropped.
    pub fn start<T>(trunk: T, ids: &[u32]) -> (Self, Vec<DuplexStream>)
    where
        T: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (mut trunk_rd, trunk_wr) = tokio::io::split(trunk);
        let trunk_wr = Arc::new(Mutex::new(trunk_wr));
        let (end_tx, end) = watch::channel(None);
        let end_tx = Arc::new(end_tx);
        let mut tasks = Vec::new();
        let mut users = Vec::new();
        let mut routes = HashMap::new();
        for &id in ids {
            let (user, inner) = tokio::io::duplex(CONN_BUFFER);
            users.push(user);
            let (mut inner_rd, inner_wr) = tokio::io::split(inner);
            routes.insert(id, inner_wr);
            let (trunk_wr, end_tx) = (trunk_wr.clone(), end_tx.clone());
            tasks.push(tokio::spawn(async move {
                let mut buf = vec![0; SEND_CHUNK];
                loop {
                    let n = match inner_rd.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    let mut w = trunk_wr.lock().await;
                    if let Err(e) = write_frames(&mut *w, id, &buf[..n]).await {
                        end_tx.send_if_modified(|end| first_end(end, failed(&e)));
                        break;
                    }
                }
            }));
        }
        tasks.push(tokio::spawn(async move {
            let end = loop {
                match read_frame(&mut trunk_rd).await {
                    Ok(None) => break End::Closed,
                    Err(e) => break failed(&e),
                    Ok(Some((conn, payload))) => match routes.get_mut(&conn) {
                        Some(w) => {
                            // The user end gone (its side dropped) is not the trunk's
                            // end: the other connection may still be in use.
                            if w.write_all(&payload).await.is_err() {
                                routes.remove(&conn);
                            }
                        }
                        None => tracing::debug!(
                            conn,
                            bytes = payload.len(),
                            "NRI frame for a connection nobody opened, dropped"
                        ),
                    },
                }
            };
            // Every user's stream ends: they read end-of-file.
            for w in routes.values_mut() {
                let _ = w.shutdown().await;
            }
            end_tx.send_if_modified(|e| first_end(e, end));
        }));
        (Self { tasks, end }, users)
    }

    /// Waits until the trunk ends, and says how.
    pub async fn ended(&self) -> End {
        let mut end = self.end.clone();
        match end.wait_for(Option::is_some).await {
            Ok(e) => e.clone().unwrap_or(End::Closed),
            // The tasks are gone without a word: only when the runtime shuts down.
            Err(_) => End::Closed,
        }
    }
}

impl Drop for Mux {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn failed(e: &MuxError) -> End {
    End::Failed(placed_core::text::error_line(e))
}

/// Keeps the first reason the trunk ended.
fn first_end(slot: &mut Option<End>, end: End) -> bool {
    if slot.is_some() {
        return false;
    }
    *slot = Some(end);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_id_then_length_big_endian() {
        let h = Header {
            conn: 2,
            len: 0x0102_0304,
        };
        assert_eq!(h.encode(), [0, 0, 0, 2, 1, 2, 3, 4]);
        assert_eq!(Header::decode(h.encode()), h);
    }

    #[tokio::test]
    async fn frames_are_read_whole_across_split_reads() {
        // The header and payload arrive in pieces: a reader that returned short reads
        // as frames would split ttrpc messages at random points.
        let (mut a, mut b) = tokio::io::duplex(3);
        let writer = tokio::spawn(async move {
            write_frames(&mut a, 1, b"hello").await.unwrap();
            write_frames(&mut a, 2, b"").await.unwrap();
        });
        assert_eq!(
            read_frame(&mut b).await.unwrap(),
            Some((1, b"hello".to_vec()))
        );
        assert_eq!(
            read_frame(&mut b).await.unwrap(),
            None,
            "an empty write sends no frame"
        );
        writer.await.unwrap();
    }

    #[tokio::test]
    async fn long_writes_are_split_into_frames_and_joined_by_the_reader() {
        let data: Vec<u8> = (0..SEND_CHUNK * 2 + 17)
            .map(|i| u8::try_from(i % 251).unwrap())
            .collect();
        let mut wire = Vec::new();
        write_frames(&mut wire, 1, &data).await.unwrap();
        let mut r = wire.as_slice();
        let mut sizes = Vec::new();
        let mut joined = Vec::new();
        while let Some((conn, payload)) = read_frame(&mut r).await.unwrap() {
            assert_eq!(conn, 1);
            sizes.push(payload.len());
            joined.extend(payload);
        }
        assert_eq!(sizes, [SEND_CHUNK, SEND_CHUNK, 17]);
        assert_eq!(joined, data);
    }

    #[tokio::test]
    async fn a_frame_over_the_limit_is_refused_before_its_payload_is_read() {
        let wire = Header {
            conn: 1,
            len: MAX_PAYLOAD + 1,
        }
        .encode();
        match read_frame(&mut wire.as_slice()).await {
            Err(MuxError::Oversized { conn: 1, len }) => assert_eq!(len, MAX_PAYLOAD + 1),
            other => panic!("expected an oversized frame, got {other:?}"),
        }
        // Exactly the limit is allowed (the payload is then simply missing here).
        let wire = Header {
            conn: 1,
            len: MAX_PAYLOAD,
        }
        .encode();
        assert!(matches!(
            read_frame(&mut wire.as_slice()).await,
            Err(MuxError::Truncated)
        ));
    }

    #[tokio::test]
    async fn a_trunk_cut_inside_a_header_is_truncated_not_closed() {
        let wire = [0u8, 0, 0];
        assert!(matches!(
            read_frame(&mut wire.as_slice()).await,
            Err(MuxError::Truncated)
        ));
    }

    #[tokio::test]
    async fn connections_are_demultiplexed_and_unknown_ids_dropped() {
        let (ours, mut theirs) = tokio::io::duplex(1 << 20);
        let (mux, mut conns) = Mux::start(ours, &[PLUGIN_SERVICE, RUNTIME_SERVICE]);
        let mut runtime_conn = conns.pop().unwrap();
        let mut plugin_conn = conns.pop().unwrap();
        // Two frames for connection 1, one in the middle for an id nobody opened, one for
        // connection 2: the first two join into one stream, the stray one vanishes.
        write_frames(&mut theirs, 1, b"ab").await.unwrap();
        write_frames(&mut theirs, 9, b"lost").await.unwrap();
        write_frames(&mut theirs, 1, b"cd").await.unwrap();
        write_frames(&mut theirs, 2, b"xy").await.unwrap();
        let mut got = [0; 4];
        plugin_conn.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"abcd");
        let mut got = [0; 2];
        runtime_conn.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"xy");
        // Writes of each connection go out as frames with its id.
        runtime_conn.write_all(b"to runtime").await.unwrap();
        plugin_conn.write_all(b"to plugin").await.unwrap();
        let mut seen = HashMap::<u32, Vec<u8>>::new();
        while seen.values().map(Vec::len).sum::<usize>() < 19 {
            let (conn, payload) = read_frame(&mut theirs).await.unwrap().unwrap();
            seen.entry(conn).or_default().extend(payload);
        }
        assert_eq!(seen[&1], b"to plugin");
        assert_eq!(seen[&2], b"to runtime");
        // The peer closing the trunk ends the mux and each connection's stream.
        drop(theirs);
        assert!(matches!(mux.ended().await, End::Closed));
        assert_eq!(plugin_conn.read(&mut got).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn an_oversized_frame_ends_the_trunk_with_the_reason() {
        let (ours, mut theirs) = tokio::io::duplex(1 << 10);
        let (mux, mut conns) = Mux::start(ours, &[PLUGIN_SERVICE]);
        theirs
            .write_all(
                &Header {
                    conn: 1,
                    len: u32::MAX,
                }
                .encode(),
            )
            .await
            .unwrap();
        match mux.ended().await {
            End::Failed(why) => assert!(why.contains("above the protocol's"), "{why}"),
            End::Closed => panic!("an oversized frame is an error, not a close"),
        }
        let mut buf = [0; 1];
        assert_eq!(conns[0].read(&mut buf).await.unwrap(), 0);
    }
}
