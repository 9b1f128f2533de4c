//! Running placed as an operator does: under journald, reloaded with SIGHUP, scraped and
//! linted by Prometheus' own tools.

use placed_core::cpuset::{CpuSet, NodeSet};
use placed_host::enact::Host;

use crate::cgroup_support::TestCgroup;
use crate::cgroup_support::host_or_say as host;
use crate::daemon_util::{Setup, TestDaemon, TestLoad};

fn machine(host: &Host) -> (CpuSet, NodeSet) {
    (
        host.online_cpus().expect("online CPUs"),
        host.memory_nodes().expect("memory nodes"),
    )
}

/// With stderr connected as systemd connects a service's (`JOURNAL_STREAM` naming it),
/// every line starts with its syslog priority; a stray SIGUSR1 is a warning, not a death.
#[test]
fn under_journald_lines_carry_their_priority() {
    let Some(_host) = host() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut d = TestDaemon::start(
        dir.path(),
        &Setup {
            journal: true,
            ..Setup::default()
        },
    );
    let serving = d.wait_log_line(0, "the serving line", |l| l.contains("serving on"));
    assert!(serving.starts_with("<6>serving on "), "{serving}");
    d.signal(libc::SIGUSR1);
    let ignored = d.wait_log_line(0, "SIGUSR1 ignored", |l| l.contains("SIGUSR1"));
    assert!(ignored.starts_with("<4>signal ignored"), "{ignored}");
    assert!(d.running(), "SIGUSR1 ended the daemon:\n{}", d.log());
    let log = d.log();
    assert!(
        log.lines().all(|l| l.starts_with('<')),
        "a line without its priority:\n{log}"
    );
    let status = d.stop().expect("placed ran");
    assert!(status.success(), "exit {status}:\n{}", d.log());
}

/// SIGHUP applies what may change live (a new default policy reaches the next container),
/// refuses with a warning what needs a restart, and keeps running on the old
/// configuration when the new file is invalid.
#[test]
fn sighup_reloads_the_live_settings_and_survives_a_bad_file() {
    let Some(host) = host() else { return };
    let (cpus, mems) = machine(&host);
    let dir = tempfile::tempdir().unwrap();
    let mut cg: TestCgroup<TestLoad> = TestCgroup::new(&host, &cpus, &mems);
    let mut d = TestDaemon::start(dir.path(), &Setup::watching(&cg.path));
    let original = std::fs::read_to_string(d.config_path()).unwrap();
    let edited = original
        .replace("default = \"observe\"", "default = \"conservative\"")
        .replacen("[grpc]\n", "[grpc]\nwatch_history = 7\n", 1);
    assert_ne!(edited, original);
    std::fs::write(d.config_path(), &edited).unwrap();

    let from = d.log().len();
    d.signal(libc::SIGHUP);
    let applied = d.wait_log_line(from, "the reload", |l| l.contains("configuration reloaded"));
    assert!(applied.contains("policy.default"), "{applied}");
    assert!(!applied.contains("watch_history"), "{applied}");
    let refused = d.wait_log_line(from, "the refusal", |l| l.contains("need a restart"));
    assert!(refused.contains("WARN"), "{refused}");
    assert!(refused.contains("grpc.watch_history"), "{refused}");

    // A container appearing now gets the new default.
    let c2 = cg.child("c2", &cpus, &mems);
    let load = TestLoad::start("cpu");
    let pid = load.pid();
    cg.adopt(&c2, pid, load);
    d.wait_for("c2 under the new default", |j| {
        j["containers"][0]["name"] == "c2" && j["containers"][0]["policy"] == "conservative"
    });

    // An invalid file: refused, named, the daemon goes on.
    std::fs::write(
        d.config_path(),
        edited.replace("default = \"conservative\"", "default = \"greedy\""),
    )
    .unwrap();
    let from = d.log().len();
    d.signal(libc::SIGHUP);
    let bad = d.wait_log_line(from, "the refused reload", |l| {
        l.contains("configuration not reloaded")
    });
    assert!(bad.contains("ERROR") && bad.contains("greedy"), "{bad}");
    assert!(d.running(), "a bad file ended the daemon:\n{}", d.log());
    d.placectl(["status"]).ok();
    let status = d.stop().expect("placed ran");
    assert!(status.success(), "exit {status}:\n{}", d.log());
}

/// The next `sd_notify` message on `socket` that has `field`; every message is a datagram of
/// `KEY=VALUE` lines. The socket's read timeout only bounds a hang.
fn notice_with(socket: &std::os::unix::net::UnixDatagram, field: &str) -> String {
    let mut buf = vec![0u8; 4096];
    loop {
        let n = socket
            .recv(&mut buf)
            .unwrap_or_else(|e| panic!("no sd_notify message with {field}: {e}"));
        let message = String::from_utf8_lossy(&buf[..n]).into_owned();
        if message.lines().any(|l| l.starts_with(field)) {
            return message;
        }
    }
}

fn monotonic_usec() -> u128 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the struct we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    assert_eq!(rc, 0, "clock_gettime");
    let part = |v: i64| u128::try_from(v).expect("the monotonic clock is never negative");
    part(t.tv_sec) * 1_000_000 + part(t.tv_nsec) / 1_000
}

/// Under `Type=notify` a reload is announced as systemd >= 253 requires of
/// `Type=notify-reload`: `RELOADING=1` with `MONOTONIC_USEC` taken after the SIGHUP, then
/// `READY=1` once the file is applied, and also after a file that is refused.
#[test]
fn a_reload_tells_systemd_reloading_then_ready() {
    let Some(_host) = host() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notify.sock");
    let notify = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
    notify
        .set_read_timeout(Some(std::time::Duration::from_secs(120)))
        .unwrap();
    let mut d = TestDaemon::start(
        dir.path(),
        &Setup {
            notify_socket: Some(path),
            ..Setup::default()
        },
    );
    notice_with(&notify, "READY=1");
    for edit in [
        ("default = \"observe\"", "default = \"conservative\""),
        ("default = \"conservative\"", "default = \"greedy\""),
    ] {
        let config = std::fs::read_to_string(d.config_path()).unwrap();
        assert!(config.contains(edit.0));
        std::fs::write(d.config_path(), config.replace(edit.0, edit.1)).unwrap();
        let before = monotonic_usec();
        d.signal(libc::SIGHUP);
        let reloading = notice_with(&notify, "RELOADING=1");
        let usec: u128 = reloading
            .lines()
            .find_map(|l| l.strip_prefix("MONOTONIC_USEC="))
            .unwrap_or_else(|| panic!("RELOADING=1 without MONOTONIC_USEC: {reloading:?}"))
            .parse()
            .unwrap();
        assert!(
            usec >= before && usec <= monotonic_usec(),
            "MONOTONIC_USEC={usec} is not the time of this reload (sent after {before})"
        );
        let ready = notice_with(&notify, "READY=1");
        assert!(!ready.contains("RELOADING=1"), "{ready}");
    }
    assert!(
        d.log().contains("configuration not reloaded"),
        "{}",
        d.log()
    );
    let status = d.stop().expect("placed ran");
    assert!(status.success(), "exit {status}:\n{}", d.log());
}

/// `GET /metrics` with `accept` (if any): the response's content type and body.
fn scrape(port: u16, accept: Option<&str>) -> (String, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to /metrics");
    let accept = accept
        .map(|a| format!("Accept: {a}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "GET /metrics HTTP/1.0\r\nHost: localhost\r\n{accept}\r\n"
    )
    .expect("send the request");
    let mut response = String::new();
    s.read_to_string(&mut response).expect("read the response");
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    let content_type = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-type:")
                .map(|v| v.trim().to_owned())
        })
        .unwrap_or_default();
    (content_type, body.to_owned())
}

/// promtool from PATH or from scripts/setup-debian's `.tools/bin`.
fn promtool() -> Option<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let local = root.join(".tools/bin/promtool");
    if local.exists() {
        return Some(local);
    }
    let on_path = std::process::Command::new("promtool")
        .arg("--version")
        .output();
    if on_path.is_ok_and(|o| o.status.success()) {
        return Some("promtool".into());
    }
    assert!(
        root.join(".tools/promtool-failed").exists(),
        "promtool is missing: run scripts/setup-debian (it unpacks Debian's prometheus package into .tools/)"
    );
    None
}

/// The live endpoint passes `promtool check metrics`, with a managed container's series in
/// it; OpenMetrics only when asked for; the container's series go when it goes.
#[test]
fn metrics_pass_promtool_and_follow_the_containers() {
    let Some(host) = host() else { return };
    let Some(promtool) = promtool() else {
        eprintln!(
            "SKIPPED LOUDLY: promtool is absent and scripts/setup-debian could not install it"
        );
        return;
    };
    let (cpus, mems) = machine(&host);
    let dir = tempfile::tempdir().unwrap();
    let mut cg: TestCgroup<TestLoad> = TestCgroup::new(&host, &cpus, &mems);
    let c1 = cg.child("c1", &cpus, &mems);
    let load = TestLoad::start("cpu");
    let pid = load.pid();
    cg.adopt(&c1, pid, load);
    let d = TestDaemon::start(dir.path(), &Setup::watching(&cg.path));
    d.wait_for("c1", |j| j["containers"][0]["name"] == "c1");

    let (content_type, text) = scrape(d.metrics_port, None);
    assert_eq!(content_type, "text/plain; version=0.0.4; charset=utf-8");
    // Series are keyed by the container's unique id; its name is an extra label.
    let labels = format!(r#"id="{c1}",container="c1",runtime="cgroup",policy="observe""#);
    let series = format!("placed_container_units{{{labels}}}");
    assert!(text.contains(&series), "{text}");
    let overrides = format!("placed_container_overrides_total{{{labels}}} 0");
    for family in [
        "placed_build_info{",
        "process_open_fds ",
        "placed_errors_total{kind=\"enact\"} 0",
        "placed_placement_overrides_total{action=\"gave_up\"} 0",
        &overrides,
    ] {
        assert!(text.contains(family), "{family} missing:\n{text}");
    }
    let mut check = std::process::Command::new(&promtool)
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run promtool");
    {
        use std::io::Write;
        check
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    let out = check.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool: {said}\n{text}"
    );

    let prometheus_accept = "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
    let (content_type, om) = scrape(d.metrics_port, Some(prometheus_accept));
    assert!(
        content_type.starts_with("application/openmetrics-text; version=1.0.0"),
        "{content_type}"
    );
    assert!(om.ends_with("# EOF\n"), "{om}");
    // Both pages as Prometheus' own client library reads them: its OpenMetrics parser is
    // strict (a duplicate series or a family out of order fails the whole page).
    if let Some(python) = crate::python::python_with("prometheus_client") {
        for (page, parser) in [
            (&text, "prometheus_client.parser"),
            (&om, "prometheus_client.openmetrics.parser"),
        ] {
            let read = format!(
                "import sys\nfrom {parser} import text_string_to_metric_families as read\nprint(len(list(read(sys.stdin.read()))))"
            );
            let mut child = std::process::Command::new(&python)
                .args(["-c", &read])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("run python");
            {
                use std::io::Write;
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(page.as_bytes())
                    .unwrap();
            }
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{parser} refuses the page: {}\n{page}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    drop(cg);
    d.wait_for("c1 gone", |j| {
        j["containers"].as_array().is_none_or(|a| a.is_empty())
    });
    let (_, after) = scrape(d.metrics_port, None);
    assert!(!after.contains("container=\"c1\""), "{after}");
    assert!(
        after.contains("# TYPE placed_container_units gauge"),
        "{after}"
    );
}

/// `placectl watch | head -1`: one line, RFC 3339 time, and placectl ends (exit 0) once
/// the reader has gone, instead of streaming into a closed pipe forever.
#[test]
fn watch_ends_when_its_reader_goes_and_prints_rfc3339_times() {
    use std::io::BufRead;
    let Some(host) = host() else { return };
    let (cpus, mems) = machine(&host);
    let dir = tempfile::tempdir().unwrap();
    let mut cg: TestCgroup<TestLoad> = TestCgroup::new(&host, &cpus, &mems);
    let d = TestDaemon::start(dir.path(), &Setup::watching(&cg.path));
    let mut watch = std::process::Command::new(crate::bins::bin("placectl"))
        .args(["watch", "--socket", &d.socket.display().to_string()])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("placectl watch");
    let stdout = watch.stdout.take().unwrap();
    let c1 = cg.child("c1", &cpus, &mems);
    let load = TestLoad::start("cpu");
    let pid = load.pid();
    cg.adopt(&c1, pid, load);
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .unwrap();
    // The reader (head -1) is gone once the BufReader is dropped above.
    let time = line.split_whitespace().next().unwrap_or_default();
    assert!(
        time.len() == 24 && time.as_bytes()[10] == b'T' && time.ends_with('Z'),
        "not an RFC 3339 time: {line}"
    );
    // More events, so that watch writes into the closed pipe.
    let c2 = cg.child("c2", &cpus, &mems);
    let load = TestLoad::start("cpu");
    let pid = load.pid();
    cg.adopt(&c2, pid, load);
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = watch.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > std::time::Duration::from_secs(120) {
            let _ = watch.kill();
            panic!("placectl watch went on after its reader left");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(status.code(), Some(0), "{status}");
}

#[test]
fn completions_are_printed_for_each_shell() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef placectl"),
        ("fish", "complete -c placectl"),
    ] {
        let run = crate::util::placectl(["completion", shell]).ok();
        assert!(run.stdout.contains(marker), "{shell}: {run:?}");
        assert!(run.stdout.contains("placements"), "{shell}: {run:?}");
    }
    usage_error(&["completion", "tcsh"], "tcsh");
}

/// A usage error: clap's message naming `needle`, exit 2 (bad input).
fn usage_error(args: &[&str], needle: &str) {
    let run = crate::util::placectl(args.iter().copied());
    assert_eq!(
        run.code,
        Some(i32::from(placed_core::exit::Exit::BadInput.code())),
        "{run:?}"
    );
    assert!(run.stderr.contains(needle), "{run:?}");
}

/// Connection flags belong to the daemon's commands; `-v` no longer means `--vcpus`.
#[test]
fn offline_commands_take_no_connection_flags() {
    usage_error(&["topology", "--socket", "/x.sock"], "--socket");
    usage_error(&["placements", "-v", "1"], "-v");
    let help = crate::util::placectl(["topology", "--help"]).ok();
    assert!(!help.stdout.contains("--socket"), "{help:?}");
    let help = crate::util::placectl(["status", "--help"]).ok();
    assert!(
        help.stdout.contains("--socket") && help.stdout.contains("--timeout"),
        "{help:?}"
    );
}

/// A daemon that accepts and never answers: placectl gives up after --timeout with the
/// "try again" code, instead of hanging.
#[test]
fn requests_give_up_after_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("silent.sock");
    // Bound and listening, never accepted: the kernel completes connections into the
    // backlog, and nobody ever speaks.
    let _silent = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    crate::util::placectl([
        "status",
        "--socket",
        &socket.display().to_string(),
        "--timeout",
        "1s",
    ])
    .fails_with(
        placed_core::exit::Exit::Unavailable,
        "no answer from placed within 1s",
    );
}

/// `placectl unmanage` on a real cgroup the daemon discovered: handed back where it is
/// (placed never moved it, so there is nothing to restore), listed no more, left alone by
/// discovery while a neighbour appearing is adopted; an unknown name is exit 3.
#[test]
fn placectl_unmanage_hands_a_discovered_container_back_for_good() {
    let Some(host) = host() else { return };
    let (cpus, mems) = machine(&host);
    let dir = tempfile::tempdir().unwrap();
    let cg: TestCgroup<TestLoad> = TestCgroup::new(&host, &cpus, &mems);
    let _c1 = cg.child("c1", &cpus, &mems);
    let d = TestDaemon::start(dir.path(), &Setup::watching(&cg.path));
    d.wait_for("c1", |j| j["containers"][0]["name"] == "c1");

    let out = d.placectl(["unmanage", "c1", "--restore", "--json"]).ok();
    let j = out.json();
    assert_eq!(j["schema"], "placed.unmanage/v1", "{j}");
    assert_eq!(j["name"], "c1", "{j}");
    assert_eq!(j["restored"], false, "{j}");
    assert_eq!(j["cpus"], cpus.to_string(), "{j}");
    assert!(
        j["detail"]
            .as_str()
            .is_some_and(|d| d.contains("nothing to restore")),
        "{j}"
    );

    let _c2 = cg.child("c2", &cpus, &mems);
    d.wait_for("c2 adopted", |j| {
        j["containers"]
            .as_array()
            .is_some_and(|a| a.iter().any(|c| c["name"] == "c2"))
    });
    let list = d.placectl(["containers", "--json"]).ok().json();
    let names: Vec<&str> = list["containers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["c2"], "{list}");
    d.placectl(["unmanage", "nothing"]).fails_with(
        placed_core::exit::Exit::NotFound,
        "placed manages no container nothing",
    );
}
