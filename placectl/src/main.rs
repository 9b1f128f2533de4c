//! `placectl`: the operator's command line for placed.
//!
//! Parses the command line and hands it to the library (`placectl::run`), which validates
//! it, runs it, and says why it failed with its exit code (`placed_core::exit`'s table).

fn main() -> std::process::ExitCode {
    // SAFETY: first statement of main, before any thread exists.
    unsafe { placed_core::machine::quiet_hwloc() };
    match placed_core::exit::parse_args::<placectl::args::Cli>() {
        Ok(cli) => placectl::run::run(cli).into(),
        Err(code) => code.into(),
    }
}
