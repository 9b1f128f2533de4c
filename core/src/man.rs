//! Man pages from a binary's own clap definition, so they never drift from `--help`: the
//! command's page, and one page for each subcommand its SUBCOMMANDS section lists
//! (`placectl-status(1)`, `placed-train-workload-list(1)`), so every page a page names
//! exists.

use std::io;
use std::path::{Path, PathBuf};

/// One man page: its file name (`placectl-status.1`) and its roff text.
#[derive(Debug, Clone)]
pub struct Page {
    pub file: String,
    pub roff: Vec<u8>,
}

/// The command's page first, then a page for every visible subcommand, depth first. The
/// `help` subcommand has none (its page would say nothing `--help` does not).
pub fn pages(command: clap::Command, section: &str) -> io::Result<Vec<Page>> {
    let mut command = command.disable_help_subcommand(true);
    // Building gives each subcommand its display name, `parent-sub`: the name the parent's
    // page lists and the page's file name.
    command.build();
    // Every page says which program and version it documents (a subcommand has no version
    // of its own).
    let source = format!(
        "{} {}",
        command.get_name(),
        command.get_version().unwrap_or_default()
    );
    let mut pages = Vec::new();
    add(&command, section, &source, &mut pages)?;
    Ok(pages)
}

fn add(
    command: &clap::Command,
    section: &str,
    source: &str,
    pages: &mut Vec<Page>,
) -> io::Result<()> {
    let man = clap_mangen::Man::new(command.clone())
        .section(section)
        .source(source);
    let mut roff = Vec::new();
    man.render(&mut roff)?;
    pages.push(Page {
        file: man.get_filename(),
        roff,
    });
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        add(sub, section, source, pages)?;
    }
    Ok(())
}

/// What a binary's hidden `man` command prints: the command's own page, or, given a
/// directory, every page written there and their paths, one per line.
pub fn print_or_write(
    command: clap::Command,
    section: &str,
    dir: Option<&Path>,
) -> io::Result<String> {
    let pages = pages(command, section)?;
    let Some(dir) = dir else {
        let first = pages.into_iter().next().map(|p| p.roff).unwrap_or_default();
        return Ok(String::from_utf8_lossy(&first).into_owned());
    };
    let mut written = String::new();
    for page in pages {
        let path: PathBuf = dir.join(&page.file);
        std::fs::write(&path, &page.roff)?;
        written.push_str(&format!("{}\n", path.display()));
    }
    Ok(written)
}

/// The pages a page's SUBCOMMANDS section names (`placectl-status(1)` as
/// `placectl-status.1`), for checking that each exists.
pub fn named_in(roff: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_subcommands = false;
    for line in roff.lines() {
        if let Some(heading) = line.strip_prefix(".SH ") {
            in_subcommands = heading.trim_matches('"') == "SUBCOMMANDS";
            continue;
        }
        if !in_subcommands {
            continue;
        }
        // `.TP` is followed by the entry's name, `name(section)`.
        if let Some((name, rest)) = line.split_once('(') {
            if let Some(section) = rest.strip_suffix(')') {
                if !name.starts_with('.') && !name.contains(' ') {
                    names.push(format!("{}.{section}", name.replace("\\-", "-")));
                }
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command() -> clap::Command {
        clap::Command::new("tool")
            .version("1")
            .subcommand(clap::Command::new("run").about("Runs"))
            .subcommand(
                clap::Command::new("workload")
                    .about("Workloads")
                    .subcommand(clap::Command::new("list").about("Lists")),
            )
            .subcommand(clap::Command::new("secret").hide(true))
    }

    #[test]
    fn every_page_a_page_names_is_made_and_hidden_commands_have_none() {
        let pages = pages(command(), "1").unwrap();
        let files: Vec<&str> = pages.iter().map(|p| p.file.as_str()).collect();
        assert_eq!(
            files,
            [
                "tool.1",
                "tool-run.1",
                "tool-workload.1",
                "tool-workload-list.1"
            ]
        );
        for page in &pages {
            for named in named_in(&String::from_utf8_lossy(&page.roff)) {
                assert!(
                    files.contains(&named.as_str()),
                    "{} names {named}",
                    page.file
                );
            }
        }
        let top = named_in(&String::from_utf8_lossy(&pages[0].roff));
        assert_eq!(top, ["tool-run.1", "tool-workload.1"]);
    }

    #[test]
    fn the_pages_are_written_into_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let text = print_or_write(command(), "1", Some(dir.path())).unwrap();
        assert_eq!(text.lines().count(), 4, "{text}");
        assert!(dir.path().join("tool-workload-list.1").exists());
        let page = print_or_write(command(), "1", None).unwrap();
        assert!(page.contains(".TH tool 1"), "{page}");
        let sub = std::fs::read_to_string(dir.path().join("tool-run.1")).unwrap();
        assert!(sub.contains(".TH tool-run 1  \"tool 1\""), "{sub}");
    }
}
