//! `placectl completion`: a shell completion script.

use clap::CommandFactory;

use super::{Action, Failure, Format, Local, Typed};
use crate::cli::{self, Exit};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

impl Typed for Args {
    fn validate(self) -> Result<Action, Failure> {
        Action::local(self)
    }
}

impl Local for Args {
    fn run(self: Box<Self>, _: Format) -> Result<Exit, Failure> {
        let mut script = Vec::new();
        clap_complete::generate(
            self.shell,
            &mut crate::args::Cli::command(),
            "placectl",
            &mut script,
        );
        Ok(cli::emit(&String::from_utf8_lossy(&script)))
    }
}
