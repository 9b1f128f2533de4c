//! A pattern source's program: started with the source, read until it is dropped.
//!
//! It is a command metric for policy and runs as one does (see [`super::super::command`]):
//! without a shell, stdin closed, as the command user, in this process's cgroup (it
//! observes the container; it must not take the container's CPUs), and in its own process
//! group, so that dropping the source kills whatever it forked too.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Child;
use tokio::task::AbortHandle;

use super::super::command::{CommandError, RunAs};
use super::super::pushed::Reporter;
use super::lines::{LineMetric, Lines, Stream};
use super::{Ended, PatternError, end};

/// Lines of standard error kept for the error when the program exits.
const STDERR_LINES: usize = 5;
/// Characters kept of each of those lines.
const STDERR_LINE: usize = 200;
/// How long output is still read after the program exits: what it forked is killed then,
/// but a member that left the process group could hold the pipes open for ever.
const DRAIN: Duration = Duration::from_secs(1);
/// One read from a pipe.
const CHUNK: usize = 8 << 10;

/// The running program: killed with its group when dropped.
#[derive(Debug)]
pub(super) struct Running {
    group: Option<libc::pid_t>,
    /// Set once the task has reaped the program and killed its group itself.
    done: Arc<AtomicBool>,
    task: AbortHandle,
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.done.load(Ordering::Acquire) {
            if let Some(pgid) = self.group.filter(|&p| p > 0) {
                // SAFETY: kill(2) takes plain integers and touches no memory of ours. The
                // group is the one the program leads (process_group(0)) and the program is
                // not reaped yet, or only just: the kernel does not reuse its id while the
                // group has members.
                unsafe {
                    libc::kill(-pgid, libc::SIGKILL);
                }
            }
        }
        // The task owns the Child (kill_on_drop), so aborting it also reaps the program.
        self.task.abort();
    }
}

/// Spawns `argv` and the task that reads it.
pub(super) fn start(
    argv: &[String],
    stream: Stream,
    run_as: Option<RunAs>,
    metric: LineMetric,
    reporter: Reporter,
    ended: Ended,
) -> Result<Running, PatternError> {
    let (program, args) = argv
        .split_first()
        .filter(|(p, _)| !p.is_empty())
        .ok_or(CommandError::Empty)?;
    let mut child = super::super::command::spawn(program, args, run_as)?;
    let group = child.id().and_then(|p| libc::pid_t::try_from(p).ok());
    let done = Arc::new(AtomicBool::new(false));
    let reader = Reader {
        program: clip(program),
        stream,
        metric,
        reporter,
        stderr_tail: VecDeque::new(),
    };
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let task = tokio::spawn(reader.run(child, stdout, stderr, group, Arc::clone(&done), ended))
        .abort_handle();
    Ok(Running { group, done, task })
}

struct Reader {
    program: String,
    stream: Stream,
    metric: LineMetric,
    reporter: Reporter,
    stderr_tail: VecDeque<String>,
}

impl Reader {
    async fn run(
        mut self,
        mut child: Child,
        mut stdout: Option<tokio::process::ChildStdout>,
        mut stderr: Option<tokio::process::ChildStderr>,
        group: Option<libc::pid_t>,
        done: Arc<AtomicBool>,
        ended: Ended,
    ) {
        let (mut out_lines, mut err_lines) = (Lines::default(), Lines::default());
        let (mut out_buf, mut err_buf) = (vec![0u8; CHUNK], vec![0u8; CHUNK]);
        let mut status = None;
        let drain = tokio::time::sleep(Duration::MAX);
        tokio::pin!(drain);
        while stdout.is_some() || stderr.is_some() || status.is_none() {
            tokio::select! {
                read = read_some(&mut stdout, &mut out_buf) => match read {
                    Some(n) => out_lines.push(&out_buf[..n], |l| self.stdout_line(l)),
                    None => {
                        out_lines.finish(|l| self.stdout_line(l));
                        stdout = None;
                    }
                },
                read = read_some(&mut stderr, &mut err_buf) => match read {
                    Some(n) => err_lines.push(&err_buf[..n], |l| self.stderr_line(l)),
                    None => {
                        err_lines.finish(|l| self.stderr_line(l));
                        stderr = None;
                    }
                },
                exit = child.wait(), if status.is_none() => {
                    status = Some(exit.map_or_else(|e| format!("lost track of it: {e}"), |s| s.to_string()));
                    if let Some(pgid) = group.filter(|&p| p > 0) {
                        // SAFETY: as in `Running::drop`: the group this program led; its
                        // id is not reused while members that hold the pipes live on.
                        unsafe {
                            libc::kill(-pgid, libc::SIGKILL);
                        }
                    }
                    done.store(true, Ordering::Release);
                    drain.as_mut().reset(tokio::time::Instant::now() + DRAIN);
                },
                () = &mut drain => break,
            }
        }
        let stderr = self
            .stderr_tail
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join(" | ");
        tracing::warn!(program = %self.program, status = status.as_deref().unwrap_or("?"), %stderr, "pattern metric program exited");
        end(
            &ended,
            PatternError::Exited {
                program: self.program,
                status: status.unwrap_or_default(),
                stderr,
            },
        );
    }

    fn stdout_line(&mut self, line: &str) {
        if self.stream.stdout() {
            self.parse(line);
        }
    }

    fn stderr_line(&mut self, line: &str) {
        if self.stderr_tail.len() == STDERR_LINES {
            self.stderr_tail.pop_front();
        }
        self.stderr_tail
            .push_back(placed_core::text::clip(line, STDERR_LINE));
        if self.stream.stderr() {
            self.parse(line);
        }
    }

    fn parse(&mut self, line: &str) {
        if let Some(value) = self.metric.line(line) {
            // An error means the source is gone; the task is being aborted.
            let _ = self.reporter.report(value);
        }
    }
}

/// Reads some bytes from `pipe`: `Some(n)` with `n > 0`, or `None` at the end (or on an
/// error, which ends the pipe as well). A pipe already ended never completes.
async fn read_some<R: AsyncRead + Unpin>(pipe: &mut Option<R>, buf: &mut [u8]) -> Option<usize> {
    match pipe {
        Some(p) => match p.read(buf).await {
            Ok(0) | Err(_) => None,
            Ok(n) => Some(n),
        },
        None => std::future::pending().await,
    }
}

fn clip(text: &str) -> String {
    placed_core::text::clip(text, 200)
}
