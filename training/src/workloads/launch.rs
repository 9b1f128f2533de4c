//! Starting workload processes inside their cgroups and stopping them again.
//!
//! Every process is started in its own process group (so that `stop` reaches whatever it
//! forks) and joins the workload's cgroups between fork and exec, so that not one
//! instruction of it runs outside the placement being measured.

use std::ffi::CString;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use placed_host::observe::Lines;

/// How long `stop` waits for the members of a killed process group to disappear.
const GONE_WAIT: Duration = Duration::from_secs(5);

/// A process we started, leading its own process group.
#[derive(Debug)]
pub(crate) struct Process {
    pub(crate) what: String,
    pub(crate) child: Child,
    reaped: bool,
}

/// Output streams to capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Capture {
    /// Stdout piped, stderr inherited: the built-in kernels.
    Stdout,
    /// Both piped, for a metric that matches lines of either.
    Both,
    /// Neither captured (servers, setup commands).
    Neither,
}

/// Spawns `argv` in `cwd`, in its own process group, joined to every cgroup of `cgroups`
/// before exec.
pub(crate) fn spawn(
    argv: &[String],
    cgroups: &[PathBuf],
    cwd: &Path,
    capture: Capture,
) -> std::io::Result<Process> {
    let (program, args) = argv.split_first().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty command line")
    })?;
    // Built before the fork: the child of a multi-threaded parent may not allocate.
    let procs: Vec<CString> = cgroups
        .iter()
        .map(|dir| CString::new(dir.join("cgroup.procs").as_os_str().as_bytes()))
        .collect::<Result<_, _>>()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .process_group(0);
    match capture {
        Capture::Stdout => {
            command.stdout(Stdio::piped()).stderr(Stdio::inherit());
        }
        Capture::Both => {
            command.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        Capture::Neither => {
            command.stdout(Stdio::null()).stderr(Stdio::null());
        }
    }
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed: it calls open(2), write(2) and close(2) on
    // NUL-terminated paths built before the fork, and allocates nothing.
    unsafe {
        command.pre_exec(move || {
            for path in &procs {
                join_cgroup(path)?;
            }
            Ok(())
        });
    }
    let child = command.spawn()?;
    Ok(Process {
        what: argv.join(" "),
        child,
        reaped: false,
    })
}

/// Writes "0" (this process) into a `cgroup.procs` file; runs between fork and exec.
fn join_cgroup(procs: &CString) -> std::io::Result<()> {
    // SAFETY: `procs` is a valid NUL-terminated string that outlives the call; open(2) is
    // async-signal-safe.
    let fd = unsafe { libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: writes one byte from a static buffer to the descriptor opened above.
    let written = unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) };
    let result = if written == 1 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    };
    // SAFETY: closes the descriptor opened above, once.
    unsafe {
        libc::close(fd);
    }
    result
}

/// Reads `stream` line by line (split as [`Lines`] splits: at `\n` or `\r`, since
/// progress meters redraw with `\r`) on a thread of its own until it ends, calling
/// `on_line` with each non-empty line. Reading goes on even when nobody wants the lines any
/// more, so that the process never blocks on a full pipe.
pub(crate) fn read_lines<R, F>(
    name: String,
    mut stream: R,
    mut on_line: F,
) -> std::io::Result<JoinHandle<()>>
where
    R: Read + Send + 'static,
    F: FnMut(&str) + Send + 'static,
{
    std::thread::Builder::new()
        .name(format!("wl-{name}"))
        .spawn(move || {
            let mut lines = Lines::default();
            let mut buf = vec![0u8; 8 << 10];
            loop {
                match stream.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => lines.push(&buf[..n], &mut on_line),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            lines.finish(&mut on_line);
        })
}

/// Runs `argv` to completion in `cgroups`, killing it after `timeout`; the error holds
/// the end of its output.
pub(crate) fn run_to_end(
    argv: &[String],
    cgroups: &[PathBuf],
    cwd: &Path,
    timeout: Duration,
) -> Result<(), String> {
    let mut process = spawn(argv, cgroups, cwd, Capture::Both)
        .map_err(|e| format!("cannot start {}: {e}", argv.join(" ")))?;
    let output = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let mut readers = Vec::new();
    let streams: [Option<Box<dyn Read + Send>>; 2] = [
        process.child.stdout.take().map(|s| Box::new(s) as _),
        process.child.stderr.take().map(|s| Box::new(s) as _),
    ];
    for stream in streams.into_iter().flatten() {
        let output = std::sync::Arc::clone(&output);
        let reader = read_lines("setup".into(), stream, move |line| {
            let mut text = output
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            text.push_str(line);
            text.push('\n');
            // Only the end is shown.
            if text.len() > 8 * SHOWN {
                let cut = text.len() - 4 * SHOWN;
                let cut = (cut..text.len())
                    .find(|&i| text.is_char_boundary(i))
                    .unwrap_or(0);
                text.drain(..cut);
            }
        });
        if let Ok(r) = reader {
            readers.push(r);
        }
    }
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = process.exited() {
            break Some(status);
        }
        if Instant::now() >= deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let what = process.what.clone();
    let killed = process.kill();
    for r in readers {
        let _ = r.join();
    }
    let text = output
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let tail: String = {
        let start = text.len().saturating_sub(SHOWN);
        let start = (start..text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        text[start..].trim().to_owned()
    };
    match status {
        None => Err(format!(
            "{what} ran longer than {timeout:?}; output ends: {tail}"
        )),
        Some(s) if !s.success() => Err(format!("{what} failed ({s}); output ends: {tail}")),
        Some(_) => killed,
    }
}

/// Output shown in an error message.
const SHOWN: usize = 600;

impl Process {
    /// The process group id (the leader's pid).
    fn group(&self) -> Option<libc::pid_t> {
        libc::pid_t::try_from(self.child.id()).ok()
    }

    /// Kills the whole process group, reaps the leader, and waits (bounded) until no
    /// member of the group is left. Returns what is still alive after the wait.
    pub(crate) fn kill(mut self) -> Result<(), String> {
        let group = self.group();
        if let Some(pgid) = group {
            // A reaped leader's pid may be reused, but not while its group still has
            // members: only signal a group that is known to exist.
            if !self.reaped || group_alive(pgid) {
                // SAFETY: kill(2) takes plain integers. The group id names our child's
                // group: the leader is unreaped, or the group still has members.
                unsafe {
                    libc::kill(-pgid, libc::SIGKILL);
                }
            }
        }
        if let Err(e) = self.child.wait() {
            return Err(format!("cannot reap {}: {e}", self.what));
        }
        let Some(pgid) = group else { return Ok(()) };
        // Members the leader forked are reparented on its death; they die of the SIGKILL
        // above but are reaped by someone else, so wait until the group is empty.
        let deadline = Instant::now() + GONE_WAIT;
        while group_alive(pgid) {
            if Instant::now() >= deadline {
                return Err(format!(
                    "process group {pgid} of {} still has live members after SIGKILL",
                    self.what
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }

    /// Whether the leader has exited (and its status, reaped).
    pub(crate) fn exited(&mut self) -> Option<std::process::ExitStatus> {
        let status = self.child.try_wait().ok().flatten();
        self.reaped |= status.is_some();
        status
    }
}

/// Kills every process in cgroup `dir` until it is empty (bounded by [`GONE_WAIT`]).
pub(crate) fn empty_cgroup(dir: &Path) -> Result<(), String> {
    let procs = dir.join("cgroup.procs");
    let deadline = Instant::now() + GONE_WAIT;
    loop {
        let pids: Vec<libc::pid_t> = match std::fs::read_to_string(&procs) {
            Ok(text) => text
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect(),
            // A cgroup already removed holds nothing.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(format!("cannot read {}: {e}", procs.display())),
        };
        let live: Vec<libc::pid_t> = pids.into_iter().filter(|&p| p > 0 && !zombie(p)).collect();
        if live.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!("processes {live:?} are still in {}", dir.display()));
        }
        for pid in live {
            // SAFETY: kill(2) takes plain integers and touches no memory of ours. The pid
            // was in the workload's own cgroup a moment ago; it could only name another
            // process if it exited and its pid was reused in between, which the kernel
            // makes unlikely by allocating pids cyclically.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// True for a process that has exited but is not reaped (or is gone already).
fn zombie(pid: libc::pid_t) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rfind(')')
                .and_then(|i| stat[i + 1..].split_whitespace().next());
            matches!(state, Some("Z" | "X"))
        }
        Err(_) => true,
    }
}

/// Whether any process other than a zombie is in group `pgid`. Zombies hold nothing and
/// are reaped by whoever adopted them, which need not be us.
fn group_alive(pgid: libc::pid_t) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.as_bytes().iter().all(u8::is_ascii_digit) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after the command name, which may hold spaces and parentheses.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let _ppid = fields.next();
        let group = fields.next().and_then(|g| g.parse::<libc::pid_t>().ok());
        if group == Some(pgid) && state != Some("Z") && state != Some("X") {
            return true;
        }
    }
    false
}
