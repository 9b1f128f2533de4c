//! Finding numa-vm (a tool that boots a QEMU guest with several NUMA nodes and cgroup v2 on
//! the host's own root filesystem), shared by the test binaries that boot one.

// Each binary uses a different subset.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The numa-vm script: `PLACED_NUMA_VM`, else `numa-vm` on `PATH`, else a `numa-vm/numa-vm`
/// checkout in a directory beside the workspace (where development machines keep it).
pub fn numa_vm() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PLACED_NUMA_VM") {
        return Some(PathBuf::from(path)).filter(|p| p.exists());
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join("numa-vm"));
    let beside = workspace()
        .parent()
        .and_then(|parent| std::fs::read_dir(parent).ok())
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("numa-vm/numa-vm"));
    on_path.chain(beside).find(|p| p.is_file())
}

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_owned)
        .unwrap_or_default()
}

pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).exists()))
}

/// Why a guest cannot be booted here, if it cannot.
pub fn unavailable() -> Option<String> {
    if std::env::var_os("PLACED_IN_GUEST").is_some() {
        return Some("already inside the guest".into());
    }
    if numa_vm().is_none() {
        return Some("numa-vm is not installed (set PLACED_NUMA_VM)".into());
    }
    if !on_path("qemu-system-x86_64") {
        return Some("qemu-system-x86_64 is not installed (numa-vm setup installs it)".into());
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some("numa-vm runs as root only".into());
    }
    None
}

/// The line numa-vm (`-v`) prints once the guest has started the command.
const BOOTED: &str = "guest booted in";

/// How long a boot may go without printing a console line before it counts as hung. A
/// healthy boot prints kernel lines every fraction of a second (a few seconds apart when
/// the host is loaded) until the command starts; a hung one prints nothing more.
const NO_PROGRESS: std::time::Duration = std::time::Duration::from_secs(120);

/// The longest boot, printing or not (15 times the slowest healthy boot seen here).
const BOOT_CAP: std::time::Duration = std::time::Duration::from_secs(900);

/// How many boots a run may take before it is reported as failed.
const BOOTS: u32 = 3;

/// One guest at a time in a test binary: two emulated guests on a 2-core host each run at
/// half speed and miss their deadlines.
static ONE_GUEST: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A numa-vm run with a watchdog on the boot alone.
///
/// Under software emulation (QEMU 7.2, multi-threaded TCG) a guest with several vCPUs
/// sometimes never finishes booting on a loaded 2-core host: the kernel stops right after
/// `sched_clock: Marking stable`, its vCPUs spin, no guest timer is armed, and nothing more
/// happens until the whole run's `--timeout` (2 boots in 15 did so here beside a parallel
/// build; CI lost a run to it). Such a boot says nothing about placed. The guest's console
/// is therefore followed live (numa-vm `-vv`, kernel `loglevel=6`, systemd's status lines),
/// a boot that prints nothing for [`NO_PROGRESS`] before reaching the command is killed,
/// and the guest is booted again, up to [`BOOTS`] boots; so is one whose VM failed before
/// the command started (numa-vm's exit 125: 2 boots in 40 here). How long a boot takes does not
/// matter as long as it makes progress; the command's own run is bounded only by
/// `--timeout`.
#[derive(Debug)]
pub struct Guest {
    vm: PathBuf,
    dir: PathBuf,
    options: Vec<std::ffi::OsString>,
    no_progress: std::time::Duration,
}

/// What a guest run printed, and how many boots it took.
#[derive(Debug)]
pub struct Finished {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    /// numa-vm's notes and the guest's console, then the command's stderr.
    pub stderr: String,
    pub boots: u32,
}

impl Finished {
    pub fn success(&self) -> bool {
        self.status.success()
    }
}

/// How a boot ended.
#[derive(Debug, PartialEq, Eq)]
enum Boot {
    Booted,
    /// No console line for [`NO_PROGRESS`], or longer than [`BOOT_CAP`].
    Hung,
    /// numa-vm ended before the command started.
    Ended,
}

/// What the stderr reader saw.
enum Seen {
    Line,
    Booted,
}

impl Guest {
    /// A guest started in `dir` (shared read-write at the same path), told it is one.
    /// Callers that replace the kernel command line (`--qemu-arg -append`) keep
    /// `loglevel=6` in theirs, or the watchdog sees no progress.
    pub fn new(vm: &Path, dir: &Path) -> Self {
        Guest {
            vm: vm.to_owned(),
            dir: dir.to_owned(),
            options: Vec::new(),
            no_progress: NO_PROGRESS,
        }
    }

    /// Another silence after which a boot counts as hung (the watchdog's own tests).
    pub fn no_progress(mut self, silence: std::time::Duration) -> Self {
        self.no_progress = silence;
        self
    }

    /// numa-vm `run` options (`--nodes`, `--timeout`, ...).
    pub fn options<I, S>(mut self, options: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.options
            .extend(options.into_iter().map(|o| o.as_ref().to_owned()));
        self
    }

    /// Boots the guest, runs `command` in it, and waits for the guest to power off.
    pub fn run<I, S>(&self, command: I) -> Finished
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let command: Vec<_> = command.into_iter().map(|c| c.as_ref().to_owned()).collect();
        let _one = ONE_GUEST
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut boots = 0;
        loop {
            boots += 1;
            let (hung, finished) = self.boot_once(&command, boots);
            if !hung || boots >= BOOTS {
                if hung {
                    println!("--- boot {boots} of {BOOTS} hung too; giving up ---");
                }
                return finished;
            }
            println!(
                "--- boot {boots} hung or failed before the command started; booting again ---\n{}",
                finished.stderr
            );
        }
    }

    fn boot_once(&self, command: &[std::ffi::OsString], boots: u32) -> (bool, Finished) {
        use std::io::{BufRead, Read};
        use std::process::{Command, Stdio};
        use std::sync::mpsc::RecvTimeoutError;

        let mut append = String::from("loglevel=6");
        if self.options.iter().any(|o| o == "--systemd") {
            append.push_str(" systemd.show_status=1");
        }
        let mut child = Command::new(&self.vm)
            .current_dir(&self.dir)
            .env("NUMA_VM_NO_INSTALL", "1")
            .args(["run", "-vv", "--append", &append])
            .args(&self.options)
            .args(["--env", "PLACED_IN_GUEST=1", "--"])
            .args(command)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("numa-vm starts");
        let mut out = child.stdout.take().expect("piped stdout");
        let err = child.stderr.take().expect("piped stderr");
        let stdout = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = out.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        });
        let (seen_tx, seen) = std::sync::mpsc::channel();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let mut lines = std::io::BufReader::new(err);
            let mut line = Vec::new();
            while matches!(lines.read_until(b'\n', &mut line), Ok(n) if n > 0) {
                let piece = String::from_utf8_lossy(&line);
                let what = if piece.contains(BOOTED) {
                    Seen::Booted
                } else {
                    Seen::Line
                };
                // The receiver is gone once the guest has booted.
                let _ = seen_tx.send(what);
                text.push_str(&piece);
                line.clear();
            }
            text
        });
        let cap = std::time::Instant::now() + BOOT_CAP;
        let boot = loop {
            let left = cap.saturating_duration_since(std::time::Instant::now());
            match seen.recv_timeout(self.no_progress.min(left)) {
                Ok(Seen::Line) => continue,
                Ok(Seen::Booted) => break Boot::Booted,
                Err(RecvTimeoutError::Disconnected) => break Boot::Ended,
                Err(RecvTimeoutError::Timeout) => break Boot::Hung,
            }
        };
        drop(seen);
        if boot == Boot::Hung {
            // numa-vm kills the QEMU it started and removes its run directory on TERM.
            let pid = libc::pid_t::try_from(child.id()).expect("pid fits");
            // SAFETY: kill has no memory preconditions; the pid is our own unwaited child.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        let status = child.wait().expect("numa-vm is waited for");
        // numa-vm's 125: the VM failed (the guest kernel died, QEMU exited) before the
        // command reported a status. Before the command started, that is the boot's fault.
        let hung = boot == Boot::Hung || (boot == Boot::Ended && status.code() == Some(125));
        let finished = Finished {
            status,
            stdout: stdout.join().unwrap_or_default(),
            stderr: stderr.join().unwrap_or_default(),
            boots,
        };
        (hung, finished)
    }
}
