//! A number taken by regex from the lines of a program's output or of a file as it grows:
//! the source for common programs that print their rate (sysbench, stress-ng, pgbench, a
//! server's access log) without an exporter.
//!
//! - `lines`: bytes to lines, and [`LineMetric`], a line to a reading (rate, total or
//!   increment). `placed-train`'s output metrics use the same two pieces.
//! - `program`: a long-running program, its stdout and stderr read as they come; run like
//!   a [`command`](super::command) metric (as the command user, in its own process group,
//!   killed with its group when the source is dropped).
//! - `file`: a regular file tailed from its end, following truncation and rotation, under
//!   the directories the operator allows.
//!
//! Either way readings are stamped as lines arrive and kept in a [`pushed`]
//! buffer, bounded, until the protocol polls: the source is not pulled. A program that exits
//! ends the source: every poll then fails with its status and the end of its stderr, and
//! [`PatternSource::ended`] tells an owner to build it again.

mod file;
mod lines;
mod program;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

pub use self::file::{FileError, check_form, check_path};
pub use self::lines::{LineMetric, LinePattern, Lines, MAX_LINE, MAX_REGEX, Mode, Stream};

use super::command::{CommandError, RunAs};
use super::pushed::{self, PushedSource};
use super::source::{Kind, MetricSource, Reading, SourceError};

/// Where a pattern source reads its lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum PatternInput {
    /// A program started with the source and read until it is dropped.
    Program {
        argv: Vec<String>,
        #[serde(default)]
        stream: Stream,
    },
    /// A regular file, tailed from its end.
    File { path: PathBuf },
}

impl PatternInput {
    /// In words, for status output.
    pub fn describe(&self) -> String {
        match self {
            Self::Program { argv, stream } => {
                let from = match stream {
                    Stream::Both => "",
                    Stream::Stdout => " (stdout)",
                    Stream::Stderr => " (stderr)",
                };
                format!("-- {}{from}", argv.join(" "))
            }
            Self::File { path } => format!("--file {}", path.display()),
        }
    }
}

/// Why a pattern source could not start, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum PatternError {
    /// The regex does not compile or is too large.
    #[error("invalid pattern regex {regex:?}: {reason}")]
    Regex {
        /// The regex, clipped.
        regex: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A program input is a command for policy: not allowed, empty, or not startable.
    #[error(transparent)]
    Command(#[from] CommandError),
    /// A file input that cannot be tailed.
    #[error(transparent)]
    File(#[from] FileError),
    /// The program exited: a pattern program must run as long as it is measured.
    #[error("pattern program {program:?} exited ({status}); stderr ends: {stderr:?}")]
    Exited {
        /// The program.
        program: String,
        /// The exit status as the OS describes it.
        status: String,
        /// Its last lines of standard error, joined with ` | `.
        stderr: String,
    },
}

impl PatternError {
    /// True when the description itself is wrong (regex, empty command, relative path).
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            Self::Regex { .. }
                | Self::Command(CommandError::Empty)
                | Self::File(FileError::Path { .. })
        )
    }
}

/// What a source needs to start: the line parser, and who may read what.
#[derive(Debug, Clone)]
pub struct PatternConfig {
    /// The metric's name, for logs.
    pub name: String,
    pub input: PatternInput,
    pub metric: LineMetric,
    /// The user a program runs as; `None` keeps this process's (tests, `placed-train`).
    pub run_as: Option<RunAs>,
    /// Files and directories a file input may lie under (`observe.pattern_files`).
    pub files: Vec<PathBuf>,
}

/// Why the feeding side stopped, shared with the source; set once.
type Ended = Arc<Mutex<Option<Arc<PatternError>>>>;

fn end(ended: &Ended, error: PatternError) {
    let mut slot = ended.lock().unwrap_or_else(PoisonError::into_inner);
    if slot.is_none() {
        *slot = Some(Arc::new(error));
    }
}

/// A [`MetricSource`] fed by a program's output or a file's new lines.
#[derive(Debug)]
pub struct PatternSource {
    describe: String,
    readings: PushedSource,
    ended: Ended,
    /// Held for its Drop, which stops the feeding side: kills the program, or stops
    /// the tailing thread.
    _feeder: Feeder,
}

#[derive(Debug)]
enum Feeder {
    Program(#[allow(dead_code)] program::Running),
    File(#[allow(dead_code)] file::Tailing),
}

impl PatternSource {
    /// Starts the program or opens the file. Must run inside a Tokio runtime (the program
    /// is read by a task).
    pub fn start(config: PatternConfig, describe: String) -> Result<Self, PatternError> {
        let (reporter, readings) = pushed::channel(config.name.clone(), config.metric.kind());
        let ended: Ended = Arc::default();
        let feeder = match &config.input {
            PatternInput::Program { argv, stream } => Feeder::Program(program::start(
                argv,
                *stream,
                config.run_as,
                config.metric,
                reporter,
                Arc::clone(&ended),
            )?),
            PatternInput::File { path } => Feeder::File(file::start(
                path,
                &config.files,
                config.metric,
                reporter,
                Arc::clone(&ended),
            )?),
        };
        Ok(Self {
            describe,
            readings,
            ended,
            _feeder: feeder,
        })
    }

    /// Why the source stopped for good (its program exited, its file became unreadable);
    /// `None` while it runs. An ended source must be built again to measure anything.
    pub fn ended(&self) -> Option<Arc<PatternError>> {
        self.ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl MetricSource for PatternSource {
    fn describe(&self) -> String {
        self.describe.clone()
    }

    fn kind(&self) -> Kind {
        self.readings.kind()
    }

    fn is_pulled(&self) -> bool {
        false
    }

    async fn poll(&mut self) -> Result<Vec<Reading>, SourceError> {
        if let Some(e) = self.ended() {
            // Every poll after the end returns the same error.
            return Err(SourceError::failed(e));
        }
        self.readings.poll().await
    }
}

#[cfg(test)]
mod tests;
