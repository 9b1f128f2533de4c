//! Two tiny shell workloads (`selftest-spin`: arithmetic; `selftest-fork`: process
//! creation) that exercise the collector without the training kernels. Each of `threads`
//! loops publishes its iteration count in a file; a command source sums them.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use placed_host::observe::{AnySource, CommandConfig, CommandSource, Kind};

use super::job::{Job, Started};
use crate::workloads::{Error, Launch};

/// The self-test workloads' names.
pub const NAMES: &[&str] = &["selftest-spin", "selftest-fork"];

#[derive(Debug, Clone)]
pub struct SelfTest {
    name: String,
}

impl SelfTest {
    pub fn named(name: &str) -> Option<Self> {
        NAMES.contains(&name).then(|| Self { name: name.into() })
    }
}

#[derive(Debug)]
struct Spinning {
    child: Child,
    source: AnySource,
}

impl Job for SelfTest {
    fn name(&self) -> &str {
        &self.name
    }
    fn family(&self) -> &str {
        &self.name
    }
    fn unit(&self) -> &str {
        "iterations/s"
    }
    fn start(&self, launch: &Launch<'_>) -> Result<Box<dyn Started>, Error> {
        let fail = |detail: String| Error::Start {
            name: self.name.clone(),
            detail,
        };
        let step = if self.name == "selftest-fork" {
            "/bin/true; "
        } else {
            ""
        };
        let every = if self.name == "selftest-fork" {
            20
        } else {
            2000
        };
        // Each loop writes its count to a temporary file and renames it, so the source
        // never reads a half-written number.
        let body = format!(
            "cd \"$1\" || exit 1; echo $$ > \"$2/cgroup.procs\" || exit 1; \
             for t in $(seq 1 \"$3\"); do ( i=0; while :; do {step}i=$((i+1)); \
             if [ $((i % {every})) -eq 0 ]; then echo $i > c$t.tmp; mv c$t.tmp c$t; fi; \
             done ) & done; wait"
        );
        let child = Command::new("sh")
            .arg("-c")
            .arg(body)
            .arg("selftest")
            .arg(launch.scratch)
            .arg(launch.cgroup_dir)
            .arg(launch.threads.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| fail(format!("cannot run sh: {e}")))?;
        // The shell joins the cgroup itself; the measurement may start only once it has.
        let procs = launch.cgroup_dir.join("cgroup.procs");
        let joined = (0..200).any(|_| {
            let inside = std::fs::read_to_string(&procs)
                .is_ok_and(|t| t.lines().any(|l| l.trim() == child.id().to_string()));
            if !inside {
                std::thread::sleep(Duration::from_millis(10));
            }
            inside
        });
        if !joined {
            let mut child = child;
            let _ = child.kill();
            let _ = child.wait();
            return Err(fail("the shell did not join its cgroup within 2 s".into()));
        }
        let sum = format!(
            "cd '{}' && cat c* 2>/dev/null | awk '{{s+=$1}} END {{print s+0}}'",
            launch.scratch.display()
        );
        let source = CommandSource::new(CommandConfig {
            argv: vec!["sh".into(), "-c".into(), sum],
            kind: Kind::Counter,
            timeout: Duration::from_secs(2),
            run_as: None,
        })
        .map_err(|e| fail(e.to_string()))?;
        Ok(Box::new(Spinning {
            child,
            source: AnySource::Command(source),
        }))
    }
}

impl Started for Spinning {
    fn source(&mut self) -> &mut AnySource {
        &mut self.source
    }
    fn stop(mut self: Box<Self>) -> Result<(), Error> {
        // The loops are in the run's cgroup, which the collector empties with SIGKILL; the
        // shell is reaped here so it does not linger as a zombie.
        let _ = self.child.kill();
        let _ = self.child.wait();
        Ok(())
    }
}
