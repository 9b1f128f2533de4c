//! `placectl move`: a container put on CPUs and memory nodes of this host, its memory
//! brought along, stopped in good order by a signal.

use placed_core::cpuset::{CpuSet, NodeSet};
use placed_host::enact::Host;
use placed_host::migrate::Mode;

use super::{Action, Failure, Format, Local, Typed};
use crate::cli::{self, Exit, UsageError};

pub type Args = cli::MoveArgs;

/// A move with its mode checked.
#[derive(Debug)]
struct Move {
    container: String,
    cpus: CpuSet,
    mems: NodeSet,
    mode: Mode,
}

impl Typed for Args {
    fn validate(self) -> Result<Action, Failure> {
        let mode = self.mode().map_err(UsageError)?;
        Action::local(Move {
            container: self.container,
            cpus: self.cpus,
            mems: self.mems,
            mode,
        })
    }
}

impl Local for Move {
    fn run(self: Box<Self>, format: Format) -> Result<Exit, Failure> {
        let host = Host::detect()?;
        let container = host.resolve(&self.container)?;
        // Ctrl-C stops the move in good order (thawed, cpuset settled), never halfway.
        let report =
            cli::enact::apply_interruptibly(&host, &container, &self.cpus, &self.mems, &self.mode)?;
        format.print(|| cli::move_json(&report), || cli::render_move(&report))
    }
}
