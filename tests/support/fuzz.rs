//! The fuzzing harness shared by every crate's `tests/fuzz.rs`: a reproducible runner,
//! strategies for arbitrary input and for real examples mutated byte by byte or value by
//! value, and the properties every parser of outside input must keep.
//!
//! CI runs each target for a fixed number of cases from a fixed seed, so a failure is the
//! same failure on every machine. `PLACED_FUZZ_CASES=200000` runs every target longer and
//! `PLACED_FUZZ_SEED=n` explores from another seed (docs/testing.md).

// Each crate's targets use a different subset.
#![allow(dead_code)]

use std::error::Error;
use std::fmt::Write as _;
use std::time::Instant;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngAlgorithm, RngSeed, TestCaseError, TestError, TestRunner};
use serde_json::Value;

/// The longest error message a parser may produce, whatever its input: past this, a
/// message echoes input instead of naming what is wrong in it (a 100 KB value must not
/// make a 100 KB log line or gRPC status).
pub const MAX_MESSAGE: usize = 2_048;

/// The longest input a strategy makes. Large enough for every seed used as a start and for
/// the long tokens below, small enough that a case takes milliseconds.
pub const MAX_INPUT: usize = 64 * 1024;

/// Runs `property` on `cases` inputs from `strategy` (or `PLACED_FUZZ_CASES`), from a seed
/// derived from the target's name (or `PLACED_FUZZ_SEED`), and fails with the smallest
/// input proptest shrinks the failure to. Prints the cases and their rate to stderr.
pub fn run<S: Strategy>(
    target: &str,
    ci_cases: u32,
    strategy: S,
    property: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    let cases =
        env_number("PLACED_FUZZ_CASES").map_or(ci_cases, |n| u32::try_from(n).unwrap_or(u32::MAX));
    let seed = env_number("PLACED_FUZZ_SEED").unwrap_or(0) ^ name_seed(target);
    let config = Config {
        cases,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(seed),
        // No regression files: a failure is reproduced by the seed, and its fix gets a test
        // named after the defect.
        failure_persistence: None,
        max_shrink_iters: 4_096,
        max_global_rejects: cases.saturating_mul(4),
        ..Config::default()
    };
    let started = Instant::now();
    let result = TestRunner::new(config).run(&strategy, property);
    match result {
        Ok(()) => {
            let seconds = started.elapsed().as_secs_f64();
            eprintln!(
                "fuzz {target}: {cases} cases in {seconds:.2} s ({:.0} cases/s), seed {seed}",
                f64::from(cases) / seconds.max(1e-9)
            );
        }
        Err(TestError::Fail(why, input)) => {
            let shown = clip(&format!("{input:?}"), 1_000);
            panic!("fuzz {target} (seed {seed}): {why}\nminimal input: {shown}");
        }
        Err(TestError::Abort(why)) => panic!("fuzz {target} (seed {seed}) aborted: {why}"),
    }
}

fn env_number(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    match text.trim().parse() {
        Ok(n) => Some(n),
        Err(_) => panic!("{name}={text:?} is not a number"),
    }
}

/// FNV-1a of the name: each target explores its own sequence, the same on every run.
fn name_seed(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn clip(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let head: String = text.chars().take(max).collect();
    format!("{head}... ({count} characters in all)")
}

/// An error and its causes on one line, as the binaries print it.
pub fn message(err: &(dyn Error + 'static)) -> String {
    let mut line = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let _ = write!(line, ": {s}");
        source = s.source();
    }
    line
}

/// An error says what is wrong, in a bounded message.
pub fn check_error(err: &(dyn Error + 'static)) -> Result<(), TestCaseError> {
    let line = message(err);
    prop_assert!(!line.trim().is_empty(), "empty error message: {err:?}");
    let count = line.chars().count();
    prop_assert!(
        count <= MAX_MESSAGE,
        "error message of {count} characters (max {MAX_MESSAGE}): {}",
        clip(&line, 300)
    );
    Ok(())
}

/// Text made of the characters parsers treat specially, with any character now and then.
pub fn text(max: usize) -> impl Strategy<Value = String> {
    let special = prop::sample::select(
        &[
            '0', '1', '9', '-', ',', ':', '=', '"', '\\', '{', '}', '[', ']', '#', '.', ' ', '\t',
            '\n', '\r', '\0', 'a', 'N', 'x', '_', '+', 'e', 'é', '\u{feff}',
        ][..],
    );
    prop::collection::vec(prop_oneof![4 => special, 1 => any::<char>()], 0..max)
        .prop_map(|chars| chars.into_iter().collect())
}

/// Any bytes.
pub fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..max)
}

/// Tokens that make parsers take their edge paths: limits of integer types, special
/// floats, syntax characters, a byte-order mark, invalid UTF-8, deep nesting and long runs.
const TOKENS: &[&str] = &[
    "0",
    "-1",
    "-0",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "1e309",
    "-1e309",
    "NaN",
    "inf",
    "0x10",
    "\"",
    "\\",
    "\\u0000",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "=",
    "-",
    "\n",
    "\r\n",
    " ",
    "\0",
    "\u{feff}",
    "\u{10ffff}",
    "\u{7f}",
    "../..",
    "0-65535",
    "0-4000000000",
];

/// A token from [`TOKENS`], or a long one built on demand (kept out of `TOKENS` so that a
/// shrunk failure prints short).
#[derive(Debug, Clone)]
pub enum Token {
    Listed(&'static str),
    /// `len` copies of `text`.
    Repeated {
        text: &'static str,
        len: usize,
    },
    /// Bytes that are not UTF-8.
    Invalid,
}

impl Token {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Self::Listed(t) => t.as_bytes().to_vec(),
            Self::Repeated { text, len } => text.repeat(*len).into_bytes(),
            Self::Invalid => vec![0xff, 0xfe, 0xc3],
        }
    }
}

fn token() -> impl Strategy<Value = Token> {
    prop_oneof![
        6 => prop::sample::select(TOKENS).prop_map(Token::Listed),
        1 => (prop::sample::select(&["A", "9", "[", "{", "[[", "\"a\":[", "x,"][..]), 1_000..6_000usize)
            .prop_map(|(text, len)| Token::Repeated { text, len }),
        1 => Just(Token::Invalid),
    ]
}

/// One byte-level edit of a seed.
#[derive(Debug, Clone)]
pub enum Mutation {
    FlipBit {
        at: Index,
        bit: u8,
    },
    SetByte {
        at: Index,
        byte: u8,
    },
    Insert {
        at: Index,
        token: Token,
    },
    /// Replaces the `nth` number in the text with a token.
    Number {
        nth: Index,
        token: Token,
    },
    Delete {
        at: Index,
        len: usize,
    },
    /// Copies a piece to another place (duplicated keys, repeated lines).
    Duplicate {
        from: Index,
        len: usize,
        to: Index,
    },
    Truncate {
        at: Index,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        2 => (any::<Index>(), 0..8u8).prop_map(|(at, bit)| Mutation::FlipBit { at, bit }),
        1 => (any::<Index>(), any::<u8>()).prop_map(|(at, byte)| Mutation::SetByte { at, byte }),
        3 => (any::<Index>(), token()).prop_map(|(at, token)| Mutation::Insert { at, token }),
        4 => (any::<Index>(), token()).prop_map(|(nth, token)| Mutation::Number { nth, token }),
        2 => (any::<Index>(), 1..64usize).prop_map(|(at, len)| Mutation::Delete { at, len }),
        1 => (any::<Index>(), 1..256usize, any::<Index>())
            .prop_map(|(from, len, to)| Mutation::Duplicate { from, len, to }),
        1 => any::<Index>().prop_map(|at| Mutation::Truncate { at }),
    ]
}

impl Mutation {
    pub fn apply(&self, data: &mut Vec<u8>) {
        let pos = |at: &Index, len: usize| if len == 0 { 0 } else { at.index(len + 1) };
        match self {
            Self::FlipBit { at, bit } if !data.is_empty() => {
                let i = at.index(data.len());
                data[i] ^= 1 << bit;
            }
            Self::SetByte { at, byte } if !data.is_empty() => {
                let i = at.index(data.len());
                data[i] = *byte;
            }
            Self::Insert { at, token } => {
                let i = pos(at, data.len());
                data.splice(i..i, token.bytes());
            }
            Self::Number { nth, token } => {
                let numbers = number_spans(data);
                if numbers.is_empty() {
                    return;
                }
                let (start, end) = numbers[nth.index(numbers.len())];
                data.splice(start..end, token.bytes());
            }
            Self::Delete { at, len } if !data.is_empty() => {
                let i = at.index(data.len());
                let end = (i + len).min(data.len());
                data.drain(i..end);
            }
            Self::Duplicate { from, len, to } if !data.is_empty() => {
                let i = from.index(data.len());
                let piece = data[i..(i + len).min(data.len())].to_vec();
                let j = pos(to, data.len());
                data.splice(j..j, piece);
            }
            Self::Truncate { at } => {
                let i = pos(at, data.len());
                data.truncate(i);
            }
            _ => {}
        }
        data.truncate(MAX_INPUT);
    }
}

/// Byte ranges of the runs of ASCII digits (with a leading minus sign).
fn number_spans(data: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut i = 0;
    while i < data.len() {
        if data[i].is_ascii_digit() {
            let start = if i > 0 && data[i - 1] == b'-' {
                i - 1
            } else {
                i
            };
            while i < data.len() && data[i].is_ascii_digit() {
                i += 1;
            }
            spans.push((start, i));
        } else {
            i += 1;
        }
    }
    spans
}

/// A seed from `seeds` (real examples of the format) with 1 to 8 byte-level edits.
pub fn mutated(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    assert!(!seeds.is_empty(), "a mutation target needs seeds");
    (any::<Index>(), prop::collection::vec(mutation(), 1..8)).prop_map(move |(seed, edits)| {
        let mut data = seed.get(&seeds).clone();
        for edit in &edits {
            edit.apply(&mut data);
        }
        data
    })
}

/// Mutated seeds as text (invalid UTF-8 replaced), for parsers that take `&str`.
pub fn mutated_text(seeds: Vec<String>) -> impl Strategy<Value = String> {
    mutated(seeds.into_iter().map(String::into_bytes).collect())
        .prop_map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// Values to put where a document had another: the limits of the types its fields have,
/// the wrong types, and long strings.
fn json_value() -> impl Strategy<Value = Value> {
    let listed = prop::sample::select(
        &[
            "null",
            "true",
            "false",
            "0",
            "-1",
            "1",
            "0.5",
            "-0.0",
            "65535",
            "65536",
            "2147483648",
            "4294967295",
            "4294967296",
            "9223372036854775807",
            "18446744073709551615",
            "-9223372036854775808",
            "1e308",
            "-1e308",
            "1e-320",
            "\"\"",
            "\"x\"",
            "\"0-3\"",
            "\"0-65535\"",
            "\"0-4000000000\"",
            "\"../..\"",
            "\"/\"",
            "\"1 2\"",
            "\"\\u0000\"",
            "[]",
            "{}",
            "[1]",
            "[[]]",
            "{\"\":null}",
        ][..],
    )
    .prop_map(|t| serde_json::from_str::<Value>(t).unwrap_or(Value::Null));
    prop_oneof![
        8 => listed,
        1 => (1_000..6_000usize).prop_map(|n| Value::String("x".repeat(n))),
        1 => (1_000..6_000usize).prop_map(|n| Value::Array(vec![Value::from(1); n])),
    ]
}

/// One edit of a JSON document at the level of its values, which keeps it well-formed so
/// that the edit reaches the checks behind the syntax.
#[derive(Debug, Clone)]
pub enum JsonMutation {
    /// Replaces a value.
    Replace { at: Index, with: Value },
    /// Copies one value over another (right shapes in wrong places).
    Copy { from: Index, to: Index },
    /// Removes a value from its object or array.
    Remove { at: Index },
    /// Repeats an array element.
    Repeat { at: Index, times: usize },
    /// Adds a key to an object.
    AddKey {
        at: Index,
        key: &'static str,
        with: Value,
    },
    /// Renames a key.
    Rename { at: Index, key: &'static str },
    /// Changes a number a little or a lot.
    Nudge { at: Index, by: i64 },
}

const KEYS: &[&str] = &["", "x", "version", "id", "name", "unknown_field", "nodes"];

fn json_mutation() -> impl Strategy<Value = JsonMutation> {
    let key = prop::sample::select(KEYS);
    prop_oneof![
        4 => (any::<Index>(), json_value()).prop_map(|(at, with)| JsonMutation::Replace { at, with }),
        2 => (any::<Index>(), any::<Index>()).prop_map(|(from, to)| JsonMutation::Copy { from, to }),
        2 => any::<Index>().prop_map(|at| JsonMutation::Remove { at }),
        1 => (any::<Index>(), 1..4usize).prop_map(|(at, times)| JsonMutation::Repeat { at, times }),
        1 => (any::<Index>(), key.clone(), json_value())
            .prop_map(|(at, key, with)| JsonMutation::AddKey { at, key, with }),
        1 => (any::<Index>(), key).prop_map(|(at, key)| JsonMutation::Rename { at, key }),
        2 => (any::<Index>(), prop::sample::select(&[-1i64, 1, -2, 2, -1_000_000_000, 1_000_000_000, i64::MAX][..]))
            .prop_map(|(at, by)| JsonMutation::Nudge { at, by }),
    ]
}

/// Paths of every value, root first, as the steps that reach them.
#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Item(usize),
}

fn paths(v: &Value, here: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    out.push(here.clone());
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                here.push(Step::Key(k.clone()));
                paths(child, here, out);
                here.pop();
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                here.push(Step::Item(i));
                paths(child, here, out);
                here.pop();
            }
        }
        _ => {}
    }
}

fn at_path<'a>(v: &'a mut Value, path: &[Step]) -> Option<&'a mut Value> {
    path.iter().try_fold(v, |v, step| match step {
        Step::Key(k) => v.get_mut(k.as_str()),
        Step::Item(i) => v.get_mut(*i),
    })
}

impl JsonMutation {
    pub fn apply(&self, doc: &mut Value) {
        let mut all = Vec::new();
        paths(doc, &mut Vec::new(), &mut all);
        let pick = |at: &Index| at.get(&all).clone();
        match self {
            Self::Replace { at, with } => {
                if let Some(v) = at_path(doc, &pick(at)) {
                    *v = with.clone();
                }
            }
            Self::Copy { from, to } => {
                let value = at_path(doc, &pick(from)).map(|v| v.clone());
                if let (Some(value), Some(v)) = (value, at_path(doc, &pick(to))) {
                    *v = value;
                }
            }
            Self::Remove { at } => {
                let mut path = pick(at);
                let Some(last) = path.pop() else { return };
                match (at_path(doc, &path), last) {
                    (Some(Value::Object(m)), Step::Key(k)) => {
                        m.remove(&k);
                    }
                    (Some(Value::Array(a)), Step::Item(i)) if i < a.len() => {
                        a.remove(i);
                    }
                    _ => {}
                }
            }
            Self::Repeat { at, times } => {
                let mut path = pick(at);
                let Some(Step::Item(i)) = path.pop() else {
                    return;
                };
                if let Some(Value::Array(a)) = at_path(doc, &path) {
                    let item = a[i].clone();
                    for _ in 0..*times {
                        a.insert(i, item.clone());
                    }
                }
            }
            Self::AddKey { at, key, with } => {
                if let Some(Value::Object(m)) = at_path(doc, &pick(at)) {
                    m.insert((*key).to_owned(), with.clone());
                }
            }
            Self::Rename { at, key } => {
                let mut path = pick(at);
                let Some(Step::Key(old)) = path.pop() else {
                    return;
                };
                if let Some(Value::Object(m)) = at_path(doc, &path) {
                    if let Some(v) = m.remove(&old) {
                        m.insert((*key).to_owned(), v);
                    }
                }
            }
            Self::Nudge { at, by } => {
                let Some(v) = at_path(doc, &pick(at)) else {
                    return;
                };
                if let Some(i) = v.as_i64() {
                    *v = Value::from(i.saturating_add(*by));
                } else if let Some(u) = v.as_u64() {
                    *v = Value::from(u.saturating_add_signed(*by));
                } else if let Some(n) = v
                    .as_f64()
                    .and_then(|x| serde_json::Number::from_f64(x * *by as f64))
                {
                    *v = Value::Number(n);
                }
            }
        }
    }
}

/// A seed document with 1 to 6 value-level edits.
pub fn mutated_json(seeds: Vec<Value>) -> impl Strategy<Value = Value> {
    assert!(!seeds.is_empty(), "a mutation target needs seeds");
    (any::<Index>(), prop::collection::vec(json_mutation(), 1..6)).prop_map(move |(seed, edits)| {
        let mut doc = seed.get(&seeds).clone();
        for edit in &edits {
            edit.apply(&mut doc);
        }
        doc
    })
}
