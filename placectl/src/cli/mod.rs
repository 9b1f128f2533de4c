//! What `placectl` prints: tables for people, JSON for programs (schemas in
//! `docs/cli-json.md`), one-line errors (a TLS failure named with what to change), and exit codes that mean one thing each.

pub mod daemon;
pub mod enact;
pub mod exit;
mod placements;
pub mod reader;
pub mod table;
pub mod tls;
mod topology;

pub use enact::{
    MoveArgs, containers_json, inspect_json, move_json, render_containers, render_inspect,
    render_move,
};
pub use placements::{placements_json, render_placements};
pub use topology::render_topology;

use std::io::Write;

pub use exit::{Exit, StatusError, UsageError, exit_of};
pub use placed_core::text::{error_line, human_bytes};

/// Writes to stdout; a closed pipe (`placectl ... | head`) is success, not an error.
pub fn emit(text: &str) -> Exit {
    match write_out(text) {
        Output::Open | Output::Closed => Exit::Success,
        Output::Failed => Exit::Failed,
    }
}

/// What became of a write to stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Written; more may follow.
    Open,
    /// The reader went away (`| head -1`): a streaming command stops, successfully.
    Closed,
    /// Another error, already reported.
    Failed,
}

/// Writes `text` to stdout and says whether the reader is still there.
pub fn write_out(text: &str) -> Output {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Output::Open,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Output::Closed,
        Err(e) => {
            eprintln!("placectl: error: cannot write output: {e}");
            Output::Failed
        }
    }
}
