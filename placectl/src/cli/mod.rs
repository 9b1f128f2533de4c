//! What `placectl` prints: tables for people, JSON for programs (schemas in
//! `docs/cli-json.md`), one-line errors, and exit codes that mean one thing each.

pub mod daemon;
pub mod enact;
mod placements;
pub mod table;
mod topology;

pub use enact::{
    MoveArgs, containers_json, inspect_json, move_json, render_containers, render_inspect,
    render_move,
};
pub use placements::{placements_json, render_placements};
pub use topology::render_topology;

use std::io::Write;

/// placectl's exit codes, documented in `placectl --help` and the README.
pub use placed_core::text::{error_line, human_bytes};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The command did what was asked.
    Success = 0,
    /// A clean "no": the question had an answer and it was negative.
    No = 1,
    /// Bad input or a failure; the message says which.
    Error = 2,
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> Self {
        std::process::ExitCode::from(e as u8)
    }
}

/// Writes to stdout; a closed pipe (`placectl ... | head`) is success, not an error.
pub fn emit(text: &str) -> Exit {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Exit::Success,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Exit::Success,
        Err(e) => {
            eprintln!("placectl: error: cannot write output: {e}");
            Exit::Error
        }
    }
}
