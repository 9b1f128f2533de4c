//! An operator-supplied command that prints one number: the container's current rate
//! ([`Kind::Gauge`], the default) or a running total ([`Kind::Counter`]).
//!
//! The command runs without a shell (pass `sh -c '…'` explicitly if one is wanted), with
//! stdin closed, in its own process group, and within a time bound: on timeout the whole
//! group is killed, so a hung script and the children it forked are both gone before the
//! error is returned.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};
use tokio::time::Instant;

use super::source::{Kind, MetricSource, Reading, SourceError};

/// Output kept for an error message.
const SHOWN: usize = 200;
/// Output read from each pipe: a number is a few bytes, and a runaway command must not
/// fill the daemon's memory (it blocks on the full pipe instead, and times out).
const READ_LIMIT: u64 = 64 << 10;

/// What to run.
#[derive(Debug, Clone)]
pub struct CommandConfig {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// What the printed number means.
    pub kind: Kind,
    /// Bound on one run.
    pub timeout: Duration,
    /// The unprivileged user and group it runs as; `None` keeps the daemon's (tests).
    pub run_as: Option<RunAs>,
}

/// Whether and as whom a [`SourceSpec`](super::SourceSpec) may run a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Commands {
    /// Command sources are refused (the daemon, unless the operator allows them).
    Refused,
    /// As this process's own user: for tools an operator runs on their own files.
    Own,
    /// As this user and group.
    As(RunAs),
}

/// A user and group to run a command as. The daemon runs as root, and a metric command
/// comes from an API caller: it must never run with the daemon's privileges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunAs {
    pub uid: u32,
    pub gid: u32,
}

/// Why the command gave no number.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// No program was given.
    #[error("the metric command is empty")]
    Empty,
    /// The operator has not allowed command metrics.
    #[error(
        "command metrics are off on this host (observe.allow_command_metrics): a command runs on the host"
    )]
    NotAllowed,
    /// The program is not one `observe.command_allow` names or holds.
    #[error(
        "metric command {program:?} ({resolved}) is not allowed: observe.command_allow lists {allowed}"
    )]
    ProgramNotAllowed {
        /// The program as given.
        program: String,
        /// Where it resolves to (PATH searched, links followed), or why it does not.
        resolved: String,
        /// The allowed files and directories.
        allowed: String,
    },
    /// The program could not be started.
    #[error("cannot start metric command {program:?}")]
    Spawn {
        /// The program.
        program: String,
        /// The spawn error.
        #[source]
        source: std::io::Error,
    },
    /// Waiting for or reading from the command failed.
    #[error("lost track of metric command {program:?}")]
    Wait {
        /// The program.
        program: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// It exited with a failure status.
    #[error("metric command {program:?} failed ({status}); stderr: {stderr:?}")]
    Failed {
        /// The program.
        program: String,
        /// Exit status as the OS describes it.
        status: String,
        /// The start of its standard error.
        stderr: String,
    },
    /// It ran longer than the bound and was killed.
    #[error("metric command {program:?} ran longer than {timeout:?} and was killed")]
    TimedOut {
        /// The program.
        program: String,
        /// The bound.
        timeout: Duration,
    },
    /// It printed something that is not one finite number.
    #[error("metric command {program:?} printed {output:?}, not a number")]
    NotANumber {
        /// The program.
        program: String,
        /// The start of its standard output.
        output: String,
    },
}

/// A [`MetricSource`] that runs a command at each poll.
#[derive(Debug)]
pub struct CommandSource {
    config: CommandConfig,
}

impl CommandSource {
    /// Checks that there is a program to run; the first poll shows whether it works.
    pub fn new(config: CommandConfig) -> Result<Self, CommandError> {
        if config.argv.is_empty() {
            return Err(CommandError::Empty);
        }
        Ok(Self { config })
    }

    fn program(&self) -> String {
        self.config.argv.first().cloned().unwrap_or_default()
    }

    async fn run(&self) -> Result<f64, CommandError> {
        let program = clip(&self.program());
        let mut child = spawn(&self.program(), &self.config.argv[1..], self.config.run_as)?;
        // The group id is the child's pid (process_group(0)). Saved now: once `collect`
        // has reaped the child, `child.id()` is None, yet what it forked may live on in
        // the group and hold the pipes open (`sh -c 'sleep 99 & echo 5'`).
        let group = child.id().and_then(|p| libc::pid_t::try_from(p).ok());
        match tokio::time::timeout(self.config.timeout, collect(&mut child)).await {
            Ok(Ok((status, stdout, stderr))) => {
                if !status.success() {
                    return Err(CommandError::Failed {
                        program,
                        status: status.to_string(),
                        stderr: clip(&stderr),
                    });
                }
                let text = stdout.trim();
                match text.parse::<f64>() {
                    Ok(v) if v.is_finite() => Ok(v),
                    _ => Err(CommandError::NotANumber {
                        program,
                        output: clip(text),
                    }),
                }
            }
            Ok(Err(source)) => {
                kill_group(&mut child, group).await;
                Err(CommandError::Wait { program, source })
            }
            Err(_) => {
                kill_group(&mut child, group).await;
                Err(CommandError::TimedOut {
                    program,
                    timeout: self.config.timeout,
                })
            }
        }
    }
}

/// Reads both pipes to the end and waits for the exit status.
async fn collect(child: &mut Child) -> std::io::Result<(std::process::ExitStatus, String, String)> {
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let mut out = Vec::new();
    let mut err = Vec::new();
    let read_out = async {
        if let Some(s) = stdout.as_mut() {
            s.take(READ_LIMIT).read_to_end(&mut out).await?;
        }
        Ok::<_, std::io::Error>(())
    };
    let read_err = async {
        if let Some(s) = stderr.as_mut() {
            s.take(READ_LIMIT).read_to_end(&mut err).await?;
        }
        Ok::<_, std::io::Error>(())
    };
    let (r1, r2, status) = tokio::join!(read_out, read_err, child.wait());
    r1?;
    r2?;
    Ok((
        status?,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    ))
}

/// Kills the command's process group `group` and reaps the command.
async fn kill_group(child: &mut Child, group: Option<libc::pid_t>) {
    if let Some(pgid) = group.filter(|&p| p > 0) {
        // SAFETY: kill(2) takes plain integers and touches no memory of ours. `-pgid` names
        // the group the child led (process_group(0) above). The kernel does not reuse a
        // pid while a process group of that id has a member, so if the child was reaped
        // but its group lives on, the signal reaches that group; once the group is empty
        // the call fails with ESRCH, unless the pid space wrapped around within one poll.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
    // Reap it; an error means it is already gone, which is what we want.
    let _ = child.kill().await;
}

fn clip(text: &str) -> String {
    placed_core::text::clip(text, SHOWN)
}

/// Starts an operator's or API caller's program as `run_as`, stdin closed, stdout and
/// stderr piped, in a process group of its own (so that killing the group also kills
/// what it forked) and killed when the handle is dropped. For command metrics and
/// pattern programs alike.
pub(super) fn spawn(
    program: &str,
    args: &[String],
    run_as: Option<RunAs>,
) -> Result<Child, CommandError> {
    let mut command = Command::new(program);
    if let Some(user) = run_as {
        // std drops the supplementary groups too (setgroups(0)) when it changes the uid as
        // root.
        command.uid(user.uid).gid(user.gid);
    }
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| CommandError::Spawn {
            program: clip(program),
            source,
        })
}

impl From<CommandError> for SourceError {
    fn from(e: CommandError) -> Self {
        Self::failed(e)
    }
}

impl MetricSource for CommandSource {
    fn describe(&self) -> String {
        clip(&format!("command {}", self.config.argv.join(" ")))
    }

    fn kind(&self) -> Kind {
        self.config.kind
    }

    fn is_pulled(&self) -> bool {
        true
    }

    async fn poll(&mut self) -> Result<Vec<Reading>, SourceError> {
        let value = self.run().await?;
        Ok(vec![Reading::new(Instant::now(), value)])
    }
}

/// Whether `program` (a metric command's `argv[0]`) may run under `allow`, the operator's
/// `observe.command_allow`: empty allows any program; otherwise the program, found on
/// `path` (the daemon's `PATH`, as spawning searches it) when it has no slash and with its
/// links followed, must be one of the files listed or lie under one of the directories.
/// Following links first keeps a link in an allowed directory from reaching elsewhere.
pub fn check_allowed(
    program: &str,
    allow: &[std::path::PathBuf],
    path: Option<&std::ffi::OsStr>,
) -> Result<(), CommandError> {
    use std::path::{Path, PathBuf};
    if allow.is_empty() {
        return Ok(());
    }
    let refused = |resolved: String| CommandError::ProgramNotAllowed {
        program: placed_core::text::clip(program, 200),
        resolved,
        allowed: allow
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    };
    let found: Option<PathBuf> = if program.contains('/') {
        Some(PathBuf::from(program))
    } else {
        path.into_iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file())
    };
    let Some(found) = found else {
        return Err(refused("not found on PATH".into()));
    };
    let real =
        std::fs::canonicalize(&found).map_err(|e| refused(format!("{}: {e}", found.display())))?;
    let inside = |entry: &Path| match std::fs::canonicalize(entry) {
        Ok(e) if e.is_dir() => real.starts_with(&e),
        Ok(e) => real == e,
        Err(_) => false,
    };
    if allow.iter().any(|entry| inside(entry)) {
        Ok(())
    } else {
        Err(refused(real.display().to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allow_list_holds_programs_by_their_real_path() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let tool = bin.join("tool");
        std::fs::write(&tool, "#!/bin/sh\necho 1\n").unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        // A link inside the allowed directory to a program outside it.
        std::os::unix::fs::symlink("/bin/sh", bin.join("escape")).unwrap();
        let path = std::ffi::OsString::from(bin.as_os_str());
        let check = |program: &str, allow: &[std::path::PathBuf]| {
            check_allowed(program, allow, Some(&path))
        };

        // Empty: any program, found or not (the operator allowed commands wholesale).
        check("anything", &[]).unwrap();
        // A directory allows what is in it, by name on PATH or by path.
        let in_bin = [bin.clone()];
        check("tool", &in_bin).unwrap();
        check(&tool.display().to_string(), &in_bin).unwrap();
        // Links are followed before the check: the link leads out of the directory.
        let e = check("escape", &in_bin).unwrap_err().to_string();
        assert!(e.contains("\"escape\""), "{e}");
        assert!(
            e.contains("is not allowed: observe.command_allow lists"),
            "{e}"
        );
        assert!(
            !e.contains("(/tmp"),
            "the real path is shown, not the link: {e}"
        );
        // A file allows itself only.
        check("/bin/sh", std::slice::from_ref(&tool)).unwrap_err();
        check("tool", std::slice::from_ref(&tool)).unwrap();
        let e = check("missing", &in_bin).unwrap_err().to_string();
        assert!(e.contains("not found on PATH"), "{e}");
    }

    fn source(script: &str, timeout_ms: u64) -> CommandSource {
        CommandSource::new(CommandConfig {
            argv: vec!["sh".into(), "-c".into(), script.into()],
            kind: Kind::Gauge,
            timeout: Duration::from_millis(timeout_ms),
            run_as: None,
        })
        .unwrap()
    }

    #[tokio::test]
    async fn a_printed_number_is_a_reading() {
        let got = source("echo ' 42.5 '", 5_000).poll().await.unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].value, 42.5);
    }

    #[tokio::test]
    async fn failures_are_told_apart() {
        let err = source("echo oops >&2; exit 3", 5_000)
            .run()
            .await
            .unwrap_err();
        assert!(
            matches!(&err, CommandError::Failed { stderr, .. } if stderr.contains("oops")),
            "{err:?}"
        );
        let err = source("echo fast", 5_000).run().await.unwrap_err();
        assert!(matches!(&err, CommandError::NotANumber { output, .. } if output == "fast"));
        let err = source("echo nan", 5_000).run().await.unwrap_err();
        assert!(matches!(err, CommandError::NotANumber { .. }));
        let err = CommandSource::new(CommandConfig {
            argv: vec!["/nonexistent/placed-metric".into()],
            kind: Kind::Gauge,
            timeout: Duration::from_secs(1),
            run_as: None,
        })
        .unwrap()
        .run()
        .await
        .unwrap_err();
        assert!(matches!(err, CommandError::Spawn { .. }));
        assert!(matches!(
            CommandSource::new(CommandConfig {
                argv: vec![],
                kind: Kind::Gauge,
                timeout: Duration::from_secs(1),
                run_as: None,
            }),
            Err(CommandError::Empty)
        ));
    }

    /// The shell exits at once, so `wait` reaps it, but the background `sleep` keeps the
    /// stdout pipe open: the poll times out with the command already reaped, and the group
    /// must still be killed (by the pgid saved at spawn, not the reaped child's id).
    #[tokio::test]
    async fn a_reaped_command_still_has_its_group_killed_on_timeout() {
        let pid =
            timed_out_leaving(|pidfile| format!("sleep 99 & echo $! > {pidfile}; echo 5")).await;
        crate::observe::testing::assert_gone(pid);
    }

    #[tokio::test]
    async fn a_hanging_command_is_killed_with_its_children() {
        // The shell forks a sleep that would outlive a plain kill of the shell and keep the
        // pipe open. It writes its pid first so the test can check it is gone.
        let pid =
            timed_out_leaving(|pidfile| format!("sleep 300 & echo $! > {pidfile}; wait")).await;
        crate::observe::testing::assert_gone(pid);
    }

    /// Runs the script `with_pidfile` makes, which leaves a child behind and writes its pid
    /// to the file it is given, until it times out after the pid was written, and returns
    /// the pid. Each try allows four times longer: a loaded machine may not get the shell
    /// that far before a short timeout, and how soon it does is not what these tests check.
    async fn timed_out_leaving(with_pidfile: impl Fn(&str) -> String) -> u32 {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let script = with_pidfile(&pidfile.display().to_string());
        for timeout_ms in [500, 2_000, 8_000, 32_000, 128_000] {
            let err = source(&script, timeout_ms).run().await.unwrap_err();
            assert!(matches!(err, CommandError::TimedOut { .. }), "{err:?}");
            let written = std::fs::read_to_string(&pidfile).unwrap_or_default();
            if let Ok(pid) = written.trim().parse() {
                return pid;
            }
        }
        panic!(
            "the shell never wrote its child's pid to {}",
            pidfile.display()
        );
    }

    /// The daemon is root and the command comes from an API caller: it must run as the
    /// configured user. As root the test drops to nobody (65534); otherwise it can only
    /// run as itself, which still checks that the ids are applied.
    #[tokio::test]
    async fn the_command_runs_as_the_configured_user() {
        // SAFETY: plain getters.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let user = if uid == 0 {
            RunAs {
                uid: 65534,
                gid: 65534,
            }
        } else {
            RunAs { uid, gid }
        };
        let mut s = CommandSource::new(CommandConfig {
            argv: vec!["sh".into(), "-c".into(), "echo $(id -u)$(id -g)".into()],
            kind: Kind::Gauge,
            timeout: Duration::from_secs(5),
            run_as: Some(user),
        })
        .unwrap();
        let got = s.poll().await.unwrap()[0].value;
        assert_eq!(
            got,
            format!("{}{}", user.uid, user.gid).parse::<f64>().unwrap()
        );
    }
}
