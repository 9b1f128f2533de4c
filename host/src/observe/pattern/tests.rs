//! The pattern source with real processes and files. No timed assertions: each test waits
//! for what it expects with a generous bound and fails only if it never comes.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;

/// How long a test waits for something that normally takes milliseconds.
const PATIENCE: Duration = Duration::from_secs(30);

fn config(regex: &str, mode: Mode, input: PatternInput, files: Vec<PathBuf>) -> PatternConfig {
    PatternConfig {
        name: "test".into(),
        input,
        metric: LineMetric::new(LinePattern::new(regex, mode).unwrap()),
        run_as: None,
        files,
    }
}

fn program(script: &str, stream: Stream) -> PatternInput {
    PatternInput::Program {
        argv: vec!["sh".into(), "-c".into(), script.into()],
        stream,
    }
}

fn start(config: PatternConfig) -> PatternSource {
    PatternSource::start(config, "test".into()).unwrap()
}

/// Polls until `want` values have arrived (or the source fails); returns them.
async fn values(source: &mut PatternSource, want: usize) -> Vec<f64> {
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while got.len() < want {
        let readings = source.poll().await.unwrap();
        got.extend(readings.iter().map(|r| r.value));
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {got:?} after {PATIENCE:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    got
}

/// Polls until the source fails; returns the error.
async fn failure(source: &mut PatternSource) -> Arc<PatternError> {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Err(e) = source.poll().await {
            match e.failure::<Arc<PatternError>>() {
                Some(e) => return e.clone(),
                None => panic!("another error: {e}"),
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still running after {PATIENCE:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_programs_matching_lines_are_readings() {
    let mut s = start(config(
        r"ops (\d+)",
        Mode::Total,
        program(
            "i=0; while :; do i=$((i+5)); echo ops $i; echo noise; sleep 0.02; done",
            Stream::Stdout,
        ),
        vec![],
    ));
    assert_eq!(s.kind(), Kind::Counter);
    assert!(!s.is_pulled());
    let got = values(&mut s, 3).await;
    assert_eq!(&got[..3], [5.0, 10.0, 15.0]);
    assert!(s.ended().is_none());
}

#[tokio::test]
async fn increments_from_both_streams_add_to_one_total_and_stream_choice_holds() {
    let script = "while :; do echo 'done 2'; echo 'done 3' >&2; sleep 0.02; done";
    let mut both = start(config(
        r"done (\d+)",
        Mode::Increment,
        program(script, Stream::Both),
        vec![],
    ));
    let got = values(&mut both, 4).await;
    // Each reading is the running total: every step adds 2 or 3, from either stream.
    let steps: Vec<f64> = std::iter::once(got[0])
        .chain(got.windows(2).map(|w| w[1] - w[0]))
        .collect();
    assert!(steps.iter().all(|&d| d == 2.0 || d == 3.0), "{got:?}");
    assert!(steps.contains(&2.0) && steps.contains(&3.0), "{got:?}");

    let mut stderr_only = start(config(
        r"done (\d+)",
        Mode::Rate,
        program(script, Stream::Stderr),
        vec![],
    ));
    assert_eq!(stderr_only.kind(), Kind::Gauge);
    let got = values(&mut stderr_only, 3).await;
    assert!(got.iter().all(|&v| v == 3.0), "{got:?}");
}

#[tokio::test]
async fn a_program_that_exits_fails_the_source_with_its_status_and_stderr() {
    let mut s = start(config(
        r"ops (\d+)",
        Mode::Rate,
        program(
            "echo ops 1; echo first >&2; echo 'last words' >&2; exit 3",
            Stream::Both,
        ),
        vec![],
    ));
    let e = failure(&mut s).await;
    let text = e.to_string();
    assert!(text.contains("exit status: 3"), "{text}");
    assert!(text.contains("first | last words"), "{text}");
    assert!(s.ended().is_some());
    // It stays failed.
    let again = s.poll().await.unwrap_err();
    assert!(again.failure::<Arc<PatternError>>().is_some(), "{again}");
}

#[tokio::test]
async fn dropping_the_source_kills_the_program_and_what_it_forked() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let script = format!(
        "sleep 300 & echo $! > {}; while :; do echo ops 1; sleep 0.02; done",
        pidfile.display()
    );
    let mut s = start(config(
        r"ops (\d+)",
        Mode::Rate,
        program(&script, Stream::Stdout),
        vec![],
    ));
    values(&mut s, 1).await;
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    drop(s);
    crate::observe::testing::assert_gone(pid);
}

#[tokio::test]
async fn a_program_that_cannot_start_is_an_error_now() {
    let e = PatternSource::start(
        config(
            "x",
            Mode::Rate,
            PatternInput::Program {
                argv: vec!["/nonexistent/placed-pattern".into()],
                stream: Stream::Both,
            },
            vec![],
        ),
        "test".into(),
    )
    .unwrap_err();
    assert!(
        matches!(e, PatternError::Command(CommandError::Spawn { .. })),
        "{e}"
    );
}

fn append(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

fn file_source(dir: &Path, name: &str, mode: Mode) -> PatternSource {
    start(config(
        r"ops (\d+)",
        mode,
        PatternInput::File {
            path: dir.join(name),
        },
        vec![dir.to_owned()],
    ))
}

#[tokio::test]
async fn a_file_is_tailed_from_its_end_through_truncation_and_rotation() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    // What the file holds before the source starts is the past: not read.
    append(&log, "ops 100\n");
    let mut s = file_source(dir.path(), "app.log", Mode::Rate);
    append(&log, "ops 1\nnoise\nops ");
    append(&log, "2\n");
    assert_eq!(values(&mut s, 2).await, [1.0, 2.0]);

    // copytruncate: the file shrinks and is written again from its start (to less than
    // the offset read so far, so that the shrinking shows whenever the tail looks).
    std::fs::write(&log, "").unwrap();
    append(&log, "ops 3\n");
    assert_eq!(values(&mut s, 1).await, [3.0]);

    // Rotation: renamed away (a last line appended to it first), a new file in its place.
    let old = dir.path().join("app.log.1");
    std::fs::rename(&log, &old).unwrap();
    append(&old, "ops 4\n");
    append(&log, "ops 5\n");
    assert_eq!(values(&mut s, 2).await, [4.0, 5.0]);
    append(&old, "ops 99\n");
    append(&log, "ops 6\n");
    assert_eq!(values(&mut s, 1).await, [6.0]);
}

#[tokio::test]
async fn files_outside_the_allow_list_and_odd_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let allowed = dir.path().join("logs");
    std::fs::create_dir(&allowed).unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "ops 1\n").unwrap();
    let allow = vec![allowed.clone()];
    let err = |path: &Path, allow: &[PathBuf]| {
        PatternSource::start(
            config(
                "x",
                Mode::Rate,
                PatternInput::File {
                    path: path.to_owned(),
                },
                allow.to_vec(),
            ),
            "t".into(),
        )
        .unwrap_err()
        .to_string()
    };
    let e = err(&secret, &allow);
    assert!(
        e.contains("is not allowed: observe.pattern_files lists"),
        "{e}"
    );
    let e = err(&secret, &[]);
    assert!(e.contains("observe.pattern_files is empty"), "{e}");
    let e = err(Path::new("logs/app.log"), &allow);
    assert!(e.contains("not an absolute path"), "{e}");
    let e = err(&allowed.join("../secret"), &allow);
    assert!(e.contains("`..`"), "{e}");
    // A link inside the allowed directory, to the file or to a directory outside it.
    std::os::unix::fs::symlink(&secret, allowed.join("link")).unwrap();
    let e = err(&allowed.join("link"), &allow);
    assert!(e.contains("a symbolic link"), "{e}");
    std::os::unix::fs::symlink(dir.path(), allowed.join("up")).unwrap();
    let e = err(&allowed.join("up/secret"), &allow);
    assert!(e.contains("is not allowed") && e.contains("secret)"), "{e}");
    // Not regular files.
    let e = err(&allowed, &allow);
    assert!(e.contains("a directory"), "{e}");
    let fifo = allowed.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let e = err(&fifo, &allow);
    assert!(e.contains("a FIFO"), "{e}");
    // An operator who lists /proc or /dev still gets no interface files.
    let e = err(Path::new("/proc/self/status"), &[PathBuf::from("/proc")]);
    assert!(e.contains("procfs"), "{e}");
    let e = err(Path::new("/dev/null"), &[PathBuf::from("/dev")]);
    assert!(e.contains("a device"), "{e}");
}

/// A probe that sees no noise: the test is about the source, not the host's load.
struct Quiet(std::sync::atomic::AtomicU64);

impl crate::observe::NoiseProbe for Quiet {
    async fn incarnation(&self) -> Result<crate::observe::Incarnation, crate::observe::NoiseError> {
        Ok(crate::observe::Incarnation {
            pid: 1,
            start_ticks: 1,
        })
    }

    async fn snapshot(
        &self,
    ) -> Result<crate::observe::noise::Snapshot, crate::observe::NoiseError> {
        let n = self.0.fetch_add(100, std::sync::atomic::Ordering::Relaxed) + 100;
        Ok(crate::observe::noise::Snapshot {
            at: tokio::time::Instant::now(),
            ticks: crate::observe::noise::CpuTicks {
                total: n,
                busy: 0,
                steal: 0,
                pus: 1,
            },
            interrupts: 0,
            frequencies_khz: None,
            threads: std::collections::HashMap::new(),
        })
    }
}

/// The protocol measures a pattern program as it measures a pushed counter: readings
/// between polls, the first window starting from the warm-up's last reading. Only that a
/// rate comes out is asserted, not its value: this VM's load decides how fast `sh` loops.
#[tokio::test]
async fn the_protocol_measures_a_pattern_program() {
    let mut s = start(config(
        "done",
        Mode::Increment,
        program("while :; do echo done; sleep 0.01; done", Stream::Stdout),
        vec![],
    ));
    let protocol = crate::observe::Protocol {
        warmup: Duration::from_millis(200),
        window: Duration::from_millis(500),
        windows: 6,
        extra_windows: 0,
        min_windows: 6,
        ..crate::observe::Protocol::default()
    };
    let m = crate::observe::measure(&mut s, &Quiet(0.into()), &protocol)
        .await
        .unwrap();
    assert_eq!(m.kind, Kind::Counter);
    assert_eq!(m.kept_values().len(), 6, "{m:?}");
    assert!(
        m.estimate.value.is_finite() && m.estimate.value > 0.0,
        "{m:?}"
    );
}

/// A pattern program is a command for policy: it runs as the configured user, not as the
/// daemon (root). As root the test drops to nobody (65534); otherwise it can only run as
/// itself, which still checks that the ids are applied.
#[tokio::test]
async fn the_program_runs_as_the_configured_user() {
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
    let mut c = config(
        r"ids (\d+)",
        Mode::Rate,
        program("echo ids $(id -u)0$(id -g); sleep 300", Stream::Stdout),
        vec![],
    );
    c.run_as = Some(user);
    let mut s = start(c);
    let got = values(&mut s, 1).await;
    assert_eq!(
        got[0],
        format!("{}0{}", user.uid, user.gid).parse::<f64>().unwrap()
    );
}
