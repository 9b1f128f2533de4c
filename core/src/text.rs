//! How errors and sizes are written for people, the same in the daemon's logs and API
//! answers, `placectl`'s output and `placed-train`'s reports.

use std::fmt;

/// An error and its causes on one line, `outer: cause: root cause`. Every error type of
/// the project prints only its own part and returns its cause from `source()`, so each
/// cause appears exactly once. Some dependencies' wrappers print their cause in their own
/// message and return it from `source()` as well (hyper-util's connect error around an
/// `io::Error`): a cause whose text ends what was just printed is not printed again.
pub fn error_line(err: &(dyn std::error::Error + 'static)) -> String {
    Chain(err).to_string()
}

/// [`error_line`] as a `Display`, for log fields (`error = %Chain(&e)`) and `format!`.
#[derive(Debug, Clone, Copy)]
pub struct Chain<'a>(pub &'a (dyn std::error::Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut last = self.0.to_string();
        f.write_str(&last)?;
        let mut source = self.0.source();
        while let Some(s) = source {
            let text = s.to_string();
            if !last.ends_with(&text) {
                write!(f, ": {text}")?;
            }
            last = text;
            source = s.source();
        }
        Ok(())
    }
}

/// Cuts text that came from outside (a container name, a placement id in a request) to at
/// most `max` characters for an error message or a log line, saying how long it was,
/// so that a 100 KB id cannot make a 100 KB answer.
pub fn clip(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let head: String = text.chars().take(max).collect();
    format!("{head}... ({count} characters in all)")
}

/// A parser's message on one line, clipped: TOML and JSON parsers quote the offending line
/// of the input, which may be of any length.
pub fn parser_message(message: &str) -> String {
    clip(&message.trim().replace('\n', " "), 600)
}

/// Bytes as people read them.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 || v >= 100.0 || (v - v.round()).abs() < 0.05 {
        format!("{v:.0} {}", UNITS[i])
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read {path}")]
    struct Outer {
        path: String,
        #[source]
        source: std::io::Error,
    }

    #[test]
    fn each_cause_is_printed_once_in_order() {
        let e = Outer {
            path: "/etc/x".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        assert_eq!(error_line(&e), "cannot read /etc/x: entity not found");
    }

    /// A wrapper that prints its cause itself and also returns it as its source.
    #[derive(Debug, thiserror::Error)]
    #[error("{0}")]
    struct Repeats(#[source] std::io::Error);

    #[test]
    fn a_cause_its_wrapper_already_printed_is_not_repeated() {
        let e = Outer {
            path: "/run/x.sock".into(),
            source: std::io::Error::other(Repeats(std::io::Error::from(
                std::io::ErrorKind::NotFound,
            ))),
        };
        assert_eq!(error_line(&e), "cannot read /run/x.sock: entity not found");
    }

    #[test]
    fn long_input_is_clipped_on_a_character_boundary() {
        assert_eq!(clip("short", 10), "short");
        let long = "é".repeat(100);
        let c = clip(&long, 8);
        assert!(c.starts_with(&"é".repeat(8)), "{c}");
        assert!(c.ends_with("é... (100 characters in all)"), "{c}");
    }
}
