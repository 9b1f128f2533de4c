//! `placectl topology`: a machine's topology summary and scheduling concerns.

use std::path::PathBuf;

use placed_core::machine::{Machine, MachineError, TopologySource};

use super::{Action, Failure, Format, Local, Typed};
use crate::cli::{self, Exit};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    machine: MachineArgs,
}

/// Which machine: this host by default.
#[derive(clap::Args, Debug, Clone)]
pub struct MachineArgs {
    /// An hwloc XML topology file (format v1 or v2) instead of this host.
    #[arg(long, value_name = "FILE", conflicts_with = "synthetic")]
    topology: Option<PathBuf>,
    /// An hwloc synthetic description, e.g. "pack:4 numa:1 l3:1 core:12 pu:2".
    #[arg(long, value_name = "DESCRIPTION")]
    synthetic: Option<String>,
    /// A machine file (JSON) adding measured interconnect bandwidth or concern overrides.
    #[arg(long, value_name = "FILE")]
    machine_file: Option<PathBuf>,
}

impl MachineArgs {
    pub fn load(&self) -> Result<Machine, MachineError> {
        let source = match (&self.topology, &self.synthetic) {
            (Some(p), _) => TopologySource::XmlFile(p.clone()),
            (None, Some(s)) => TopologySource::Synthetic(s.clone()),
            (None, None) => TopologySource::Host,
        };
        Machine::load(&source, self.machine_file.as_deref())
    }
}

impl Typed for Args {
    fn validate(self) -> Result<Action, Failure> {
        Action::local(self)
    }
}

impl Local for Args {
    fn run(self: Box<Self>, format: Format) -> Result<Exit, Failure> {
        let summary = self.machine.load()?.summary();
        format.print(|| &summary, || cli::render_topology(&summary))
    }
}
