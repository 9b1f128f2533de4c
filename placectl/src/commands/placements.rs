//! `placectl placements`: the important placements for a container of N vCPUs.

use placed_core::placement;

use super::topology::MachineArgs;
use super::{Action, Failure, Format, Local, Typed};
use crate::cli::{self, Exit};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// vCPUs of the container.
    #[arg(long)]
    vcpus: usize,
    #[command(flatten)]
    machine: MachineArgs,
}

impl Typed for Args {
    fn validate(self) -> Result<Action, Failure> {
        Action::local(self)
    }
}

impl Local for Args {
    fn run(self: Box<Self>, format: Format) -> Result<Exit, Failure> {
        let m = self.machine.load()?;
        let set = placement::important_placements(&m, self.vcpus)?;
        format.print(
            || cli::placements_json(&m, &set),
            || cli::render_placements(&m, &set),
        )
    }
}
