//! The client-to-server half of one HTTP/2 connection (RFC 9113), frame by frame: header
//! blocks (HEADERS and their CONTINUATIONs) are gathered and decoded; every other frame
//! passes through as it arrives, byte for byte.
//!
//! Until a block carries an `:authority` the server would refuse, blocks pass through
//! unchanged too. From that block on, every block of the connection is sent re-encoded
//! (see `block`), because the server's HPACK table no longer follows the client's.

use super::block::{BlockError, Decoder};

const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const FRAME_HEADER: usize = 9;
const HEADERS: u8 = 0x1;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;
/// The largest frame sent on: SETTINGS_MAX_FRAME_SIZE's floor, which every server takes.
const MAX_FRAME: usize = 16_384;
/// The largest header block (its frames, as received) gathered before giving up.
pub(super) const MAX_BLOCK: usize = 256 << 10;

/// Why a connection cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum RewriteError {
    #[error("header block of stream {stream}")]
    Block {
        stream: u32,
        #[source]
        source: BlockError,
    },
    #[error("header block of stream {stream} is above {MAX_BLOCK} bytes")]
    BlockTooLarge { stream: u32 },
    #[error("frame of type {kind:#x} on stream {stream} inside the header block of stream {open}")]
    Interleaved { kind: u8, stream: u32, open: u32 },
    #[error("CONTINUATION on stream {stream} with no header block open")]
    Orphan { stream: u32 },
    #[error("HEADERS frame on stream {stream} shorter than its padding and priority")]
    Malformed { stream: u32 },
}

#[derive(Debug, Clone, Copy)]
enum Stage {
    /// Matching the client's connection preface; `matched` bytes so far.
    Preface { matched: usize },
    /// Not HTTP/2 with prior knowledge: everything is passed on untouched.
    Opaque,
    /// At a frame boundary.
    Frame,
    /// Passing on the rest of a frame that is not part of a header block.
    Payload { remaining: usize },
}

#[derive(Debug)]
struct OpenBlock {
    stream: u32,
    /// END_STREAM and PRIORITY from the HEADERS frame.
    flags: u8,
    priority: Option<[u8; 5]>,
    /// The frames as received, for passing on unchanged.
    raw: Vec<u8>,
    fragment: Vec<u8>,
}

/// One connection's client-to-server byte stream, rewritten.
#[derive(Debug)]
pub struct Rewriter {
    stage: Stage,
    pending: Vec<u8>,
    decoder: Decoder,
    open: Option<OpenBlock>,
    rewriting: bool,
    /// The first refused authority, until taken for the log.
    refused: Option<Vec<u8>>,
}

impl Default for Rewriter {
    fn default() -> Self {
        Self {
            stage: Stage::Preface { matched: 0 },
            pending: Vec::new(),
            decoder: Decoder::default(),
            open: None,
            rewriting: false,
            refused: None,
        }
    }
}

struct FrameHeader {
    len: usize,
    kind: u8,
    flags: u8,
    stream: u32,
}

fn frame_header(b: &[u8]) -> FrameHeader {
    FrameHeader {
        len: usize::from(b[0]) << 16 | usize::from(b[1]) << 8 | usize::from(b[2]),
        kind: b[3],
        flags: b[4],
        stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
    }
}

fn write_frame_header(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let len = u32::try_from(len).unwrap_or(0).to_be_bytes();
    out.extend_from_slice(&len[1..]);
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
}

impl Rewriter {
    /// The first `:authority` this connection sent that the server would refuse, once.
    pub fn take_refused(&mut self) -> Option<Vec<u8>> {
        self.refused.take()
    }

    /// Takes the next bytes from the client and appends what the server gets to `out`.
    pub fn push(&mut self, data: &[u8], out: &mut Vec<u8>) -> Result<(), RewriteError> {
        self.pending.extend_from_slice(data);
        let mut pos = 0;
        loop {
            let avail = &self.pending[pos..];
            match self.stage {
                Stage::Preface { matched } => {
                    let n = avail.len().min(PREFACE.len() - matched);
                    if n == 0 {
                        break;
                    }
                    self.stage = if avail[..n] != PREFACE[matched..matched + n] {
                        Stage::Opaque
                    } else if matched + n == PREFACE.len() {
                        Stage::Frame
                    } else {
                        Stage::Preface {
                            matched: matched + n,
                        }
                    };
                    out.extend_from_slice(&avail[..n]);
                    pos += n;
                }
                Stage::Opaque => {
                    out.extend_from_slice(avail);
                    pos += avail.len();
                    break;
                }
                Stage::Frame => {
                    if avail.len() < FRAME_HEADER {
                        break;
                    }
                    let h = frame_header(avail);
                    let in_block = h.kind == HEADERS || h.kind == CONTINUATION;
                    if !in_block && self.open.is_none() {
                        out.extend_from_slice(&avail[..FRAME_HEADER]);
                        pos += FRAME_HEADER;
                        self.stage = Stage::Payload { remaining: h.len };
                        continue;
                    }
                    if let (false, Some(open)) = (in_block, &self.open) {
                        return Err(RewriteError::Interleaved {
                            kind: h.kind,
                            stream: h.stream,
                            open: open.stream,
                        });
                    }
                    let whole = FRAME_HEADER + h.len;
                    if whole > MAX_BLOCK {
                        return Err(RewriteError::BlockTooLarge { stream: h.stream });
                    }
                    if avail.len() < whole {
                        break;
                    }
                    let frame = avail[..whole].to_vec();
                    pos += whole;
                    self.block_frame(&h, &frame, out)?;
                }
                Stage::Payload { remaining } => {
                    let n = avail.len().min(remaining);
                    if n == 0 && remaining > 0 {
                        break;
                    }
                    out.extend_from_slice(&avail[..n]);
                    pos += n;
                    self.stage = if remaining == n {
                        Stage::Frame
                    } else {
                        Stage::Payload {
                            remaining: remaining - n,
                        }
                    };
                }
            }
        }
        self.pending.drain(..pos);
        Ok(())
    }

    /// A HEADERS or CONTINUATION frame, whole.
    fn block_frame(
        &mut self,
        h: &FrameHeader,
        frame: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), RewriteError> {
        let payload = &frame[FRAME_HEADER..];
        if h.kind == HEADERS {
            if let Some(open) = &self.open {
                return Err(RewriteError::Interleaved {
                    kind: h.kind,
                    stream: h.stream,
                    open: open.stream,
                });
            }
            let malformed = || RewriteError::Malformed { stream: h.stream };
            let (pad, rest) = if h.flags & PADDED != 0 {
                let (&pad, rest) = payload.split_first().ok_or_else(malformed)?;
                (usize::from(pad), rest)
            } else {
                (0, payload)
            };
            let (priority, rest) = if h.flags & PRIORITY != 0 {
                let p: [u8; 5] = rest
                    .get(..5)
                    .and_then(|p| p.try_into().ok())
                    .ok_or_else(malformed)?;
                (Some(p), &rest[5..])
            } else {
                (None, rest)
            };
            let end = rest.len().checked_sub(pad).ok_or_else(malformed)?;
            self.open = Some(OpenBlock {
                stream: h.stream,
                flags: h.flags & (END_STREAM | PRIORITY),
                priority,
                raw: frame.to_vec(),
                fragment: rest[..end].to_vec(),
            });
        } else {
            let open = match &mut self.open {
                Some(open) if open.stream == h.stream => open,
                Some(open) => {
                    return Err(RewriteError::Interleaved {
                        kind: h.kind,
                        stream: h.stream,
                        open: open.stream,
                    });
                }
                None => return Err(RewriteError::Orphan { stream: h.stream }),
            };
            if open.raw.len() + frame.len() > MAX_BLOCK {
                return Err(RewriteError::BlockTooLarge { stream: h.stream });
            }
            open.raw.extend_from_slice(frame);
            open.fragment.extend_from_slice(payload);
        }
        if h.flags & END_HEADERS != 0 {
            self.finish(out)?;
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), RewriteError> {
        let Some(block) = self.open.take() else {
            return Ok(());
        };
        let fields =
            self.decoder
                .decode(&block.fragment)
                .map_err(|source| RewriteError::Block {
                    stream: block.stream,
                    source,
                })?;
        if let Some(refused) = fields.refused_authority.as_ref() {
            if !self.rewriting {
                self.rewriting = true;
                self.refused = Some(refused.clone());
            }
        }
        if !self.rewriting {
            out.extend_from_slice(&block.raw);
            return Ok(());
        }
        let encoded = fields.encode_fixed();
        let priority: &[u8] = block.priority.as_ref().map_or(&[], |p| &p[..]);
        let first = encoded.len().min(MAX_FRAME - priority.len());
        let (head, mut rest) = encoded.split_at(first);
        let end = if rest.is_empty() { END_HEADERS } else { 0 };
        write_frame_header(
            out,
            priority.len() + head.len(),
            HEADERS,
            block.flags | end,
            block.stream,
        );
        out.extend_from_slice(priority);
        out.extend_from_slice(head);
        while !rest.is_empty() {
            let (chunk, tail) = rest.split_at(rest.len().min(MAX_FRAME));
            let end = if tail.is_empty() { END_HEADERS } else { 0 };
            write_frame_header(out, chunk.len(), CONTINUATION, end, block.stream);
            out.extend_from_slice(chunk);
            rest = tail;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATA: u8 = 0x0;
    const SETTINGS: u8 = 0x4;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        write_frame_header(&mut out, payload.len(), kind, flags, stream);
        out.extend_from_slice(payload);
        out
    }

    fn headers(authority: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        vec![
            (b":method".to_vec(), b"POST".to_vec()),
            (b":scheme".to_vec(), b"http".to_vec()),
            (
                b":path".to_vec(),
                b"/placed.v1.PlacedService/GetStatus".to_vec(),
            ),
            (b":authority".to_vec(), authority.to_vec()),
            (b"x-filler".to_vec(), vec![b'f'; 200]),
        ]
    }

    /// A client connection: preface, SETTINGS, then per request a HEADERS frame that is
    /// padded and carries a priority, split into a CONTINUATION, and a DATA frame.
    fn client(authorities: &[&[u8]]) -> Vec<u8> {
        let mut encoder = loona_hpack::Encoder::new();
        let mut out = PREFACE.to_vec();
        out.extend(frame(SETTINGS, 0, 0, &[0, 4, 0, 0, 0xff, 0xff]));
        for (i, a) in authorities.iter().enumerate() {
            let stream = 1 + 2 * u32::try_from(i).unwrap();
            let block = encoder.encode(headers(a).iter().map(|(n, v)| (&n[..], &v[..])));
            let (one, two) = block.split_at(block.len() / 2);
            let mut payload = vec![3];
            payload.extend([0, 0, 0, 0, 15]);
            payload.extend(one);
            payload.extend([0, 0, 0]);
            out.extend(frame(HEADERS, PADDED | PRIORITY, stream, &payload));
            out.extend(frame(CONTINUATION, END_HEADERS, stream, two));
            out.extend(frame(DATA, END_STREAM, stream, b"\0\0\0\0\x05hello"));
        }
        out
    }

    /// A frame as (type, flags, stream, payload).
    type Frame = (u8, u8, u32, Vec<u8>);
    type HeaderList = Vec<(Vec<u8>, Vec<u8>)>;

    /// The frames after the preface, and the header lists a fresh server decodes.
    fn server_view(bytes: &[u8]) -> (Vec<Frame>, Vec<HeaderList>) {
        assert_eq!(&bytes[..24], PREFACE);
        let mut frames = Vec::new();
        let mut lists = Vec::new();
        let mut server = loona_hpack::Decoder::new();
        let mut block = Vec::new();
        let mut rest = &bytes[24..];
        while !rest.is_empty() {
            let h = frame_header(rest);
            let payload = rest[FRAME_HEADER..FRAME_HEADER + h.len].to_vec();
            rest = &rest[FRAME_HEADER + h.len..];
            if h.kind == HEADERS || h.kind == CONTINUATION {
                let mut p = &payload[..];
                if h.flags & PADDED != 0 {
                    let pad = usize::from(p[0]);
                    p = &p[1..p.len() - pad];
                }
                if h.flags & PRIORITY != 0 {
                    p = &p[5..];
                }
                block.extend_from_slice(p);
                if h.flags & END_HEADERS != 0 {
                    lists.push(server.decode(&block).unwrap());
                    block.clear();
                }
            }
            frames.push((h.kind, h.flags, h.stream, payload));
        }
        (frames, lists)
    }

    fn run(input: &[u8], chunk: usize) -> (Vec<u8>, Option<Vec<u8>>) {
        let mut r = Rewriter::default();
        let mut out = Vec::new();
        for piece in input.chunks(chunk) {
            r.push(piece, &mut out).unwrap();
        }
        (out, r.take_refused())
    }

    #[test]
    fn acceptable_authorities_pass_byte_for_byte() {
        let input = client(&[b"localhost", b"localhost"]);
        for chunk in [1, 7, input.len()] {
            let (out, refused) = run(&input, chunk);
            assert_eq!(out, input, "chunks of {chunk}");
            assert_eq!(refused, None);
        }
    }

    #[test]
    fn a_socket_path_authority_reaches_the_server_as_localhost_with_all_else_intact() {
        // The first request is fine; the second and third carry what gRPC C-core sends
        // (the third by a reference into the client's table).
        let path = b"run%2Fplaced%2Fplaced.sock";
        let input = client(&[b"localhost", path, path]);
        for chunk in [1, 5, input.len()] {
            let (out, refused) = run(&input, chunk);
            assert_eq!(refused.as_deref(), Some(&path[..]));
            let (frames, lists) = server_view(&out);
            assert_eq!(lists.len(), 3);
            for list in &lists {
                assert_eq!(*list, headers(b"localhost"));
            }
            // SETTINGS, then per stream a header block and its DATA, in order; the
            // re-encoded blocks keep END_STREAM clear, the priority, and the stream.
            let kinds: Vec<(u8, u32)> = frames.iter().map(|f| (f.0, f.2)).collect();
            assert_eq!(
                kinds,
                [
                    (SETTINGS, 0),
                    (HEADERS, 1),
                    (CONTINUATION, 1),
                    (DATA, 1),
                    (HEADERS, 3),
                    (DATA, 3),
                    (HEADERS, 5),
                    (DATA, 5)
                ]
            );
            for f in frames.iter().filter(|f| f.0 == HEADERS && f.2 > 1) {
                assert_eq!(f.1, PRIORITY | END_HEADERS);
                assert_eq!(&f.3[..5], &[0, 0, 0, 0, 15]);
            }
            for f in frames.iter().filter(|f| f.0 == DATA) {
                assert_eq!(f.3, b"\0\0\0\0\x05hello");
            }
        }
    }

    #[test]
    fn a_block_larger_than_a_frame_is_split_into_continuations() {
        let mut encoder = loona_hpack::Encoder::new();
        let mut fields = headers(b"run%2Fplaced.sock");
        fields.push((b"x-large".to_vec(), vec![b'l'; 40_000]));
        let block = encoder.encode(fields.iter().map(|(n, v)| (&n[..], &v[..])));
        let mut input = PREFACE.to_vec();
        let (one, two) = block.split_at(MAX_FRAME);
        let (two, three) = two.split_at(MAX_FRAME);
        input.extend(frame(HEADERS, END_STREAM, 1, one));
        input.extend(frame(CONTINUATION, 0, 1, two));
        input.extend(frame(CONTINUATION, END_HEADERS, 1, three));
        let (out, _) = run(&input, 4096);
        let (frames, lists) = server_view(&out);
        assert!(frames.iter().all(|f| f.3.len() <= MAX_FRAME));
        assert_eq!(frames[0].1, END_STREAM);
        assert_eq!(frames.last().map(|f| f.1), Some(END_HEADERS));
        fields[3].1 = b"localhost".to_vec();
        assert_eq!(lists, [fields]);
    }

    #[test]
    fn protocol_violations_end_the_connection() {
        let mut input = PREFACE.to_vec();
        input.extend(frame(HEADERS, 0, 1, &[0x82]));
        input.extend(frame(DATA, 0, 1, b"x"));
        let mut out = Vec::new();
        let e = Rewriter::default().push(&input, &mut out).unwrap_err();
        assert!(matches!(e, RewriteError::Interleaved { .. }), "{e}");
        let mut input = PREFACE.to_vec();
        input.extend(frame(CONTINUATION, END_HEADERS, 1, &[0x82]));
        let e = Rewriter::default().push(&input, &mut out).unwrap_err();
        assert!(matches!(e, RewriteError::Orphan { stream: 1 }), "{e}");
        let mut input = PREFACE.to_vec();
        input.extend(frame(HEADERS, PADDED | END_HEADERS, 1, &[9, 0x82]));
        let e = Rewriter::default().push(&input, &mut out).unwrap_err();
        assert!(matches!(e, RewriteError::Malformed { stream: 1 }), "{e}");
    }

    #[test]
    fn anything_but_http2_passes_untouched() {
        let input = b"GET / HTTP/1.1\r\nHost: /run/placed.sock\r\n\r\n";
        let (out, refused) = run(input, 3);
        assert_eq!(out, input);
        assert_eq!(refused, None);
    }
}
