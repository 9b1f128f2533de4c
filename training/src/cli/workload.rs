//! `placed-train workload list` and `workload run`, `placed-train calibrate`, and the man
//! pages: the commands that are neither collection nor modelling.

use std::path::{Path, PathBuf};

use super::CliError;
use crate::workloads::{self, kernels};
use crate::{calibrate, report};

/// `placed-train workload run`: a built-in kernel in this process, its running total on
/// stdout until `seconds` or until killed.
pub fn run(kernel: &kernels::Spec, threads: usize, seconds: Option<f64>) -> Result<(), CliError> {
    let built = (kernel.build)(threads);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match kernels::runner::run(built.as_ref(), threads, seconds, &mut out) {
        Ok(()) => Ok(()),
        // The reader is gone (the collector stopped listening): a normal end.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(CliError::step("running the kernel", e)),
    }
}

/// `placed-train workload list`: built-in and external workloads, and whether each runs here.
pub fn list(files: &[PathBuf], json: bool) -> Result<(), CliError> {
    let mut all = workloads::builtin();
    for file in files {
        all.extend(workloads::load(file)?);
    }
    if json {
        for w in &all {
            let line = serde_json::json!({
                "name": w.name,
                "family": w.family,
                "unit": w.unit,
                "builtin": w.builtin,
                "available": w.available(),
                "unavailable_because": w.unavailable(),
            });
            println!("{line}");
        }
    } else {
        print!("{}", table(&all));
    }
    Ok(())
}

fn table(all: &[workloads::Workload]) -> String {
    let rows: Vec<[String; 5]> = all
        .iter()
        .map(|w| {
            [
                w.name.clone(),
                w.family.clone(),
                w.unit.clone(),
                if w.builtin { "builtin" } else { "external" }.into(),
                w.unavailable()
                    .map_or_else(|| "yes".into(), |why| format!("no ({why})")),
            ]
        })
        .collect();
    report::aligned(["NAME", "FAMILY", "UNIT", "KIND", "AVAILABLE"], &rows)
}

/// `placed-train calibrate`: the bandwidth of node sets, as a machine file.
pub fn calibrate(options: &calibrate::Options) -> Result<(), CliError> {
    let c = calibrate::calibrate(options)?;
    if c.nodes == 1 {
        println!(
            "one NUMA node: the interconnect has nothing to order; the file records its bandwidth ({:.4e} {}) and loads",
            c.file.pair(0, 0).unwrap_or(f64::NAN),
            c.file.unit()
        );
    }
    println!(
        "wrote {} ({} node(s), {} node set(s)); with it this host is machine class {}",
        options.out.display(),
        c.nodes,
        c.file.sets().len(),
        c.fingerprint
    );
    for problem in &c.forced {
        println!("forced past: {problem}");
    }
    for note in c.file.notes() {
        println!("warning: {note}");
    }
    Ok(())
}

/// `placed-train man`: placed-train(1) on stdout, or with a directory every page it lists
/// (one per subcommand) written there.
pub fn man(command: clap::Command, dir: Option<&Path>) -> Result<(), CliError> {
    let written = placed_core::man::print_or_write(command, "1", dir)
        .map_err(|e| CliError::step("writing the man page", e))?;
    print!("{written}");
    Ok(())
}
