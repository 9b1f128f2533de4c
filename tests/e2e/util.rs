//! Running the real binaries and showing everything when a check fails.

use std::path::PathBuf;
use std::process::{Command, Output};

/// The repository's topology corpus.
pub fn topologies() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/topologies")
}

/// What a command did, printed in full by `Debug` so that assertion failures explain
/// themselves.
pub struct Run {
    pub args: Vec<String>,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "\n$ placectl {}\nexit: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.args.join(" "),
            self.code,
            self.stdout,
            self.stderr
        )
    }
}

pub fn placectl<I, S>(args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    placectl_with(args, &[])
}

/// `placectl` with extra environment variables.
pub fn placectl_with<I, S>(args: I, env: &[(&str, &str)]) -> Run
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let args: Vec<String> = args.into_iter().map(Into::into).collect();
    let Output {
        status,
        stdout,
        stderr,
    } = Command::new(crate::bins::bin("placectl"))
        .args(&args)
        .envs(env.iter().copied())
        .output()
        .expect("placectl runs");
    Run {
        args,
        code: status.code(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

impl Run {
    /// Exit 0, nothing on stderr.
    pub fn ok(self) -> Self {
        assert_eq!(self.code, Some(0), "{self:?}");
        assert!(self.stderr.is_empty(), "{self:?}");
        self
    }

    /// Exit `code` (from the shared table) with exactly one line on stderr, prefixed,
    /// containing `needle`; no panic, no backtrace. (A command may have printed a summary
    /// on stdout first.)
    pub fn fails_with(self, code: placed_core::exit::Exit, needle: &str) -> Self {
        assert_eq!(self.code, Some(i32::from(code.code())), "{self:?}");
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{self:?}");
        assert!(lines[0].starts_with("placectl: error: "), "{self:?}");
        assert!(lines[0].contains(needle), "{self:?}");
        assert!(!self.stderr.contains("panicked"), "{self:?}");
        self
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }
}
