//! Checking that a cpuset took effect on every task, from `/proc/<tid>/status`.

use crate::cgroup::{CgroupPath, Cgroups};
use crate::migrate::Proc;
use placed_core::cpuset::{CpuSet, NodeSet};

/// The `Cpus_allowed_list` and `Mems_allowed_list` lines of `/proc/<tid>/status` text.
pub fn parse_status(text: &str) -> Option<(CpuSet, NodeSet)> {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    let cpus = field("Cpus_allowed_list")?.parse().ok()?;
    let mems = field("Mems_allowed_list")?.parse().ok()?;
    Some((cpus, mems))
}

/// What the check found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TaskCheck {
    /// Tasks whose status was read and compared.
    pub checked: usize,
    /// Tasks that exited before we read them (not a failure).
    pub gone: usize,
    /// One line per disagreeing task (at most `MAX_PROBLEMS`).
    pub problems: Vec<String>,
    /// How many disagreed in all.
    pub bad: usize,
}

/// Problems listed in full; the rest are only counted.
pub const MAX_PROBLEMS: usize = 8;

/// Checks every thread in `tree`: its allowed CPUs must be a non-empty subset of its
/// cgroup's effective CPUs (a task may have narrowed its own affinity, which kernels since
/// 6.2 keep within the new cpuset), and its allowed nodes exactly the effective nodes.
pub fn check_tasks(
    cgroups: &Cgroups,
    proc: &Proc,
    tree: &[CgroupPath],
) -> Result<TaskCheck, crate::cgroup::Error> {
    let mut out = TaskCheck::default();
    for cg in tree {
        let state = match crate::cgroup::effective(cgroups.backend().as_ref(), cg) {
            Ok(s) => s,
            Err(crate::cgroup::Error::Vanished { .. }) if cg != &tree[0] => continue,
            Err(e) => return Err(e),
        };
        let threads = match cgroups.threads(cg) {
            Ok(t) => t,
            Err(crate::cgroup::Error::Vanished { .. }) if cg != &tree[0] => continue,
            Err(e) => return Err(e),
        };
        for tid in threads {
            let text = match proc.read(tid, "status") {
                Ok(Some(t)) => t,
                Ok(None) => {
                    out.gone += 1;
                    continue;
                }
                Err(e) => {
                    out.bad += 1;
                    push(&mut out, format!("task {tid}: {e}"));
                    continue;
                }
            };
            out.checked += 1;
            let Some((cpus, mems)) = parse_status(&text) else {
                out.bad += 1;
                push(
                    &mut out,
                    format!("task {tid}: no allowed lists in its status"),
                );
                continue;
            };
            if cpus.is_empty() || !cpus.is_subset(&state.effective_cpus) {
                out.bad += 1;
                push(
                    &mut out,
                    format!(
                        "task {tid} in {cg} may run on CPUs {cpus}, the cpuset has {}",
                        state.effective_cpus
                    ),
                );
            }
            if mems != state.effective_mems {
                out.bad += 1;
                push(
                    &mut out,
                    format!(
                        "task {tid} in {cg} may use nodes {mems}, the cpuset has {}",
                        state.effective_mems
                    ),
                );
            }
        }
    }
    Ok(out)
}

fn push(out: &mut TaskCheck, line: String) {
    if out.problems.len() < MAX_PROBLEMS {
        out.problems.push(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_allowed_lists() {
        let status = "Name:\tsleep\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\nMems_allowed:\t00000001\nMems_allowed_list:\t0\n";
        let (c, m) = parse_status(status).unwrap();
        assert_eq!((c.to_string(), m.to_string()), ("0-1".into(), "0".into()));
        assert!(parse_status("Name:\tx\n").is_none());
    }
}
