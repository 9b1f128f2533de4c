//! What `placectl` prints: tables for people, JSON for programs (schemas in
//! `docs/cli-json.md`), one-line errors, and exit codes that mean one thing each.

pub mod daemon;
pub mod enact;
pub mod exit;
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

pub use exit::{Exit, StatusError, UsageError, exit_of};
pub use placed_core::text::{error_line, human_bytes};

/// Writes to stdout; a closed pipe (`placectl ... | head`) is success, not an error.
pub fn emit(text: &str) -> Exit {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Exit::Success,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Exit::Success,
        Err(e) => {
            eprintln!("placectl: error: cannot write output: {e}");
            Exit::Failed
        }
    }
}
