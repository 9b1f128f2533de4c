//! `placectl man` (hidden, for packaging): placectl(1), or every page it lists.

use std::path::PathBuf;

use clap::CommandFactory;

use super::{Action, Failure, Format, Local, Typed};
use crate::cli::{self, Exit};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Write placectl.1 and one page per command (placectl-status.1, ...) into DIR, and
    /// print their paths.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

impl Typed for Args {
    fn validate(self) -> Result<Action, Failure> {
        Action::local(self)
    }
}

impl Local for Args {
    fn run(self: Box<Self>, _: Format) -> Result<Exit, Failure> {
        let text = placed_core::man::print_or_write(
            crate::args::Cli::command(),
            "1",
            self.dir.as_deref(),
        )?;
        Ok(cli::emit(&text))
    }
}
