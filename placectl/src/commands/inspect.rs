//! `placectl inspect`: a container's cpuset, tasks and memory per NUMA node.

use placed_host::enact::Host;

use super::{Action, Failure, Format, Local, Typed};
use crate::cli::{self, Exit};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The container (same forms as for `move`).
    container: String,
}

impl Typed for Args {
    fn validate(self) -> Result<Action, Failure> {
        Action::local(self)
    }
}

impl Local for Args {
    fn run(self: Box<Self>, format: Format) -> Result<Exit, Failure> {
        let host = Host::detect()?;
        let inspection = host.inspect(&host.resolve(&self.container)?)?;
        format.print(
            || cli::inspect_json(&inspection),
            || cli::render_inspect(&inspection),
        )
    }
}
