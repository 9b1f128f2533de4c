//! A JSON parser's complaint as error messages show it. serde quotes an unknown field, an
//! unknown variant or a mistyped string whole, so a file with a 100 KB string would make a
//! 100 KB message; this keeps the complaint and its position and cuts the rest.

use std::fmt;

/// How much of serde's message is kept.
pub const MAX_DETAIL: usize = 300;

/// serde_json's error, cut to [`MAX_DETAIL`] characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    message: String,
    eof: bool,
}

impl JsonError {
    /// Whether the text ended early (a truncated file rather than a damaged one).
    pub fn is_eof(&self) -> bool {
        self.eof
    }
}

impl From<serde_json::Error> for JsonError {
    fn from(e: serde_json::Error) -> Self {
        Self {
            message: clip(&e.to_string(), MAX_DETAIL),
            eof: e.is_eof(),
        }
    }
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for JsonError {}

/// Text from a file cut to `max` characters for a message, saying how long it was.
/// placed-core's `text::clip` does the same; this crate does not depend on the core.
pub(crate) fn clip(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let head: String = text.chars().take(max).collect();
    format!("{head}... ({count} characters in all)")
}
