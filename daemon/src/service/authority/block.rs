//! One HTTP/2 header block (RFC 7541, HPACK) from a client: decoded with the connection's
//! decoder, which follows the client's dynamic table; its `:authority` checked the way the
//! server's HTTP/2 layer checks it; and, when the connection needs it, encoded again.
//!
//! The new encoding uses literals without indexing only, so it never touches the server's
//! dynamic table: once a connection's blocks are re-encoded, what the client inserted into
//! its table before is simply never referred to again.

use std::borrow::Cow;

/// The dynamic table size the server allows its clients: hyper does not advertise
/// SETTINGS_HEADER_TABLE_SIZE, so the protocol's default holds.
const TABLE_SIZE: usize = 4096;
/// Decoded bytes one header list may hold before the connection is refused. Far above the
/// 16 KiB hyper accepts per request: past this, nothing the server would take is lost.
pub(super) const MAX_LIST: usize = 1 << 20;
/// Fields one header block may hold: the server (hyper) takes at most 16 KiB of header
/// list, each field counting 32 bytes besides its name and value (RFC 7541 §4.1), so no
/// request it would serve has more.
pub(super) const MAX_FIELDS: usize = (16 << 10) / 32;
/// Huffman-coded strings one header block may hold. The decoder builds its code table
/// for each one (about 60 us): a 250 KiB block of one-byte strings took 6 s of a worker
/// thread. A request has a few dozen at most.
pub(super) const MAX_HUFFMAN: usize = 256;

/// The authority put in place of one the HTTP/2 layer refuses: what grpc-go and recent
/// gRPC C-core send on Unix sockets.
pub(super) const LOCALHOST: &[u8] = b"localhost";

/// Why a header block could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BlockError {
    #[error("undecodable header block (HPACK)")]
    Hpack(#[source] loona_hpack::decoder::DecoderError),
    #[error("header list above {MAX_LIST} bytes")]
    TooLarge,
    #[error(
        "header block of {fields} fields, {huffman} of its strings Huffman-coded; a request holds at most {MAX_FIELDS} fields and {MAX_HUFFMAN} such strings"
    )]
    TooMany { fields: usize, huffman: usize },
}

/// A decoded header list.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Fields {
    pub fields: Vec<(Vec<u8>, Vec<u8>)>,
    /// The `:authority` the HTTP/2 layer would refuse, if the block has one.
    pub refused_authority: Option<Vec<u8>>,
}

impl Fields {
    /// The block again, every `:authority` the HTTP/2 layer refuses replaced.
    pub fn encode_fixed(&self) -> Vec<u8> {
        let mut out =
            Vec::with_capacity(self.fields.iter().map(|(n, v)| n.len() + v.len() + 4).sum());
        for (name, value) in &self.fields {
            let value: &[u8] = if is_authority(name) && !acceptable(value) {
                LOCALHOST
            } else {
                value
            };
            // Literal header field without indexing, new name (RFC 7541 §6.2.2).
            out.push(0x00);
            string(&mut out, name);
            string(&mut out, value);
        }
        out
    }
}

fn is_authority(name: &[u8]) -> bool {
    name == b":authority"
}

/// Whether the server's HTTP/2 layer (h2, through `http::uri::Authority`) takes it.
/// A socket path fails: `/` ends an authority, and `%`-escapes (which gRPC C-core turns the
/// path's slashes into) are refused in a host name.
pub(super) fn acceptable(authority: &[u8]) -> bool {
    http::uri::Authority::try_from(authority).is_ok()
}

/// A string literal, not Huffman-coded (RFC 7541 §5.2).
fn string(out: &mut Vec<u8>, s: &[u8]) {
    integer(out, s.len(), 7, 0x00);
    out.extend_from_slice(s);
}

/// An integer with an N-bit prefix (RFC 7541 §5.1), N in 1..=8.
// Every cast below is of a value already masked or compared below 256.
#[allow(clippy::cast_possible_truncation)]
fn integer(out: &mut Vec<u8>, mut value: usize, prefix: u8, flags: u8) {
    let max = (1usize << prefix) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    value -= max;
    while value >= 0x80 {
        out.push((value & 0x7f) as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// The client-to-server HPACK context of one connection.
pub(super) struct Decoder {
    hpack: loona_hpack::Decoder<'static>,
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Decoder")
    }
}

impl Default for Decoder {
    fn default() -> Self {
        let mut hpack = loona_hpack::Decoder::new();
        hpack.set_max_allowed_table_size(TABLE_SIZE);
        Self { hpack }
    }
}

impl Decoder {
    /// Decodes one complete block (HEADERS and CONTINUATION fragments joined). Every block
    /// of the connection must come through here, in order: the table is shared.
    pub fn decode(&mut self, block: &[u8]) -> Result<Fields, BlockError> {
        let shape = Shape::of(block);
        if shape.fields > MAX_FIELDS || shape.huffman > MAX_HUFFMAN {
            return Err(BlockError::TooMany {
                fields: shape.fields,
                huffman: shape.huffman,
            });
        }
        let mut out = Fields::default();
        let mut size = 0usize;
        self.hpack
            .decode_with_cb(block, |name: Cow<'_, [u8]>, value: Cow<'_, [u8]>| {
                // RFC 7541 §4.1's accounting: indexed fields cost one byte to send but may
                // decode to kilobytes, so the bound is on what they decode to.
                size = size.saturating_add(name.len() + value.len() + 32);
                if size > MAX_LIST {
                    return;
                }
                if is_authority(&name) && !acceptable(&value) {
                    out.refused_authority = Some(value.to_vec());
                }
                out.fields.push((name.into_owned(), value.into_owned()));
            })
            .map_err(BlockError::Hpack)?;
        if size > MAX_LIST {
            return Err(BlockError::TooLarge);
        }
        Ok(out)
    }
}

/// What a block holds, counted without decoding it: its field representations and its
/// Huffman-coded strings (RFC 7541 §6). A block cut short is counted as far as it goes;
/// the decoder then says what is wrong with it.
#[derive(Debug, Default, PartialEq, Eq)]
struct Shape {
    fields: usize,
    huffman: usize,
}

impl Shape {
    fn of(block: &[u8]) -> Self {
        let mut shape = Self::default();
        let mut rest = block;
        while let Some(&first) = rest.first() {
            // (prefix bits of the index or size, whether strings follow)
            let (prefix, literal) = match first {
                b if b & 0x80 != 0 => (7, false),
                b if b & 0xc0 == 0x40 => (6, true),
                b if b & 0xe0 == 0x20 => (5, false),
                _ => (4, true),
            };
            let Some((index, used)) = integer_at(rest, prefix) else {
                break;
            };
            rest = &rest[used..];
            if prefix == 5 {
                // A table size update is not a field.
                continue;
            }
            shape.fields += 1;
            if !literal {
                continue;
            }
            let strings = if index == 0 { 2 } else { 1 };
            for _ in 0..strings {
                let Some(&head) = rest.first() else {
                    return shape;
                };
                let Some((len, used)) = integer_at(rest, 7) else {
                    return shape;
                };
                if head & 0x80 != 0 {
                    shape.huffman += 1;
                }
                let Some(after) = rest.get(used.saturating_add(len)..) else {
                    return shape;
                };
                rest = after;
            }
        }
        shape
    }
}

/// An integer with an N-bit prefix at the start of `bytes`, and the bytes it took; None
/// when cut short or larger than any length a block could hold.
fn integer_at(bytes: &[u8], prefix: u8) -> Option<(usize, usize)> {
    let max = (1usize << prefix) - 1;
    let first = usize::from(*bytes.first()?) & max;
    if first < max {
        return Some((first, 1));
    }
    let mut value = max;
    for (i, &b) in bytes.iter().enumerate().skip(1).take(4) {
        value += usize::from(b & 0x7f) << (7 * (i - 1));
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_counted_without_decoding() {
        let mut client = loona_hpack::Encoder::new();
        let fields: Vec<(Vec<u8>, Vec<u8>)> = (0..20)
            .map(|i| (format!("x-field-{i}").into_bytes(), vec![b'v'; 300]))
            .collect();
        let block = client.encode(fields.iter().map(|(n, v)| (&n[..], &v[..])));
        assert_eq!(
            Shape::of(&block),
            Shape {
                fields: 20,
                huffman: 0
            }
        );
        // Indexed fields, a size update, a Huffman-coded literal (RFC 7541 C.4.1).
        let block = [
            0x82, 0x86, 0x3f, 0xe1, 0x1f, 0x41, 0x8c, 0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b,
            0xa0, 0xab, 0x90, 0xf4, 0xff,
        ];
        assert_eq!(
            Shape::of(&block),
            Shape {
                fields: 3,
                huffman: 1
            }
        );
        // Cut short: counted as far as it goes.
        assert_eq!(Shape::of(&block[..8]).fields, 3);
        assert_eq!(Shape::of(&[0x40, 0x85]).fields, 1);
    }

    #[test]
    fn the_authorities_unix_socket_clients_send_are_told_apart() {
        // What gRPC C-core (Python) sends for unix:/run/placed/placed.sock, and what
        // clients that pass the path through send.
        for refused in [
            &b"run%2Fplaced%2Fplaced.sock"[..],
            b"/run/placed/placed.sock",
        ] {
            assert!(!acceptable(refused), "{}", String::from_utf8_lossy(refused));
        }
        for taken in [
            &b"localhost"[..],
            b"placed.sock",
            b"127.0.0.1:7443",
            b"[::1]:7443",
        ] {
            assert!(acceptable(taken), "{}", String::from_utf8_lossy(taken));
        }
    }

    #[test]
    fn refused_authorities_are_replaced_and_everything_else_kept_in_order() {
        // As gRPC C-core sends them: the first block adds :path and :authority to the
        // client's dynamic table (literals with incremental indexing), the second refers to
        // them by index only (63: :path, 62: :authority).
        let path = b"/grpc.health.v1.Health/Check";
        let authority = b"run%2Fplaced%2Fplaced.sock";
        let mut first = vec![0x83, 0x86, 0x44];
        string(&mut first, path);
        first.push(0x41);
        string(&mut first, authority);
        let second = [0x83, 0x86, 0x80 | 63, 0x80 | 62];
        let expected = |a: &[u8]| {
            vec![
                (b":method".to_vec(), b"POST".to_vec()),
                (b":scheme".to_vec(), b"http".to_vec()),
                (b":path".to_vec(), path.to_vec()),
                (b":authority".to_vec(), a.to_vec()),
            ]
        };
        let mut decoder = Decoder::default();
        for block in [&first[..], &second[..]] {
            let fields = decoder.decode(block).unwrap();
            assert_eq!(fields.fields, expected(authority));
            assert_eq!(fields.refused_authority.as_deref(), Some(&authority[..]));
            // What the server decodes from the new encoding, with a fresh table of its own.
            let mut server = loona_hpack::Decoder::new();
            let seen = server.decode(&fields.encode_fixed()).unwrap();
            assert_eq!(seen, expected(LOCALHOST));
        }
    }

    #[test]
    fn huffman_coded_and_acceptable_authorities_pass_unchanged() {
        // Literal with incremental indexing, indexed name :authority (1), Huffman value
        // "www.example.com" (RFC 7541 C.4.1).
        let block = [
            0x41, 0x8c, 0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
        ];
        let fields = Decoder::default().decode(&block).unwrap();
        assert_eq!(fields.refused_authority, None);
        assert_eq!(
            fields.fields,
            vec![(b":authority".to_vec(), b"www.example.com".to_vec())]
        );
    }

    #[test]
    fn bombs_and_garbage_are_errors_not_allocations() {
        let mut client = loona_hpack::Encoder::new();
        let big = vec![b'x'; 3000];
        let first = client.encode([(&b"x-big"[..], &big[..])]);
        let mut decoder = Decoder::default();
        decoder.decode(&first).unwrap();
        // One byte per reference to a 3 kB entry: 400 kB encoded decode to over 1 GB. Refused
        // for its count of fields, before anything is decoded.
        let bomb = vec![0x80 | 62; 400 << 10];
        assert!(matches!(
            decoder.decode(&bomb),
            Err(BlockError::TooMany {
                fields: 409_600,
                ..
            })
        ));
        // Within the count of fields, by what it decodes to.
        let bomb = vec![0x80 | 62; MAX_FIELDS];
        assert!(matches!(decoder.decode(&bomb), Err(BlockError::TooLarge)));
        assert!(matches!(
            Decoder::default().decode(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
            Err(BlockError::Hpack(_))
        ));
        // A size update above what the server allows.
        let mut too_big = Vec::new();
        integer(&mut too_big, 1 << 20, 5, 0x20);
        assert!(matches!(
            Decoder::default().decode(&too_big),
            Err(BlockError::Hpack(_))
        ));
    }

    #[test]
    fn integers_follow_the_rfc_examples() {
        // RFC 7541 C.1.1-C.1.3.
        let mut out = Vec::new();
        integer(&mut out, 10, 5, 0);
        integer(&mut out, 1337, 5, 0);
        integer(&mut out, 42, 8, 0);
        assert_eq!(out, [10, 31, 154, 10, 42]);
    }
}
