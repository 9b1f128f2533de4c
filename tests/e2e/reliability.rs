//! The release binary's defences, as an operator meets them: one daemon per state file, a
//! non-socket at the socket path kept and refused, a FIFO as the state file refused without
//! hanging start-up, and a huge PU index refused by placectl without a panic.

use std::path::Path;
use std::process::{Command, Output};

use placed_core::exit::Exit;

use crate::daemon_util::{Setup, TestDaemon};

fn placed(config: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_placed"))
        .arg("--config")
        .arg(config)
        .output()
        .expect("run placed")
}

fn config(dir: &Path, state: &Path, socket: &Path) -> std::path::PathBuf {
    let p = dir.join("second.toml");
    std::fs::write(
        &p,
        format!(
            "[daemon]\nstate_file = {state:?}\n[grpc]\nsocket = {socket:?}\n[metrics]\nenabled = false\n"
        ),
    )
    .expect("write the config");
    p
}

#[test]
fn a_second_daemon_on_the_same_state_file_is_refused_naming_the_first() {
    if crate::cgroup_support::host().is_err() {
        eprintln!("skipped: needs root and a cpuset hierarchy");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut first = TestDaemon::start(dir.path(), &Setup::default());
    let second = config(
        dir.path(),
        &dir.path().join("state.json"),
        &dir.path().join("other.sock"),
    );
    let out = placed(&second);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(Exit::Unavailable as i32), "{err}");
    assert!(err.contains("in use by another placed (pid "), "{err}");
    assert!(!dir.path().join("other.sock").exists());
    assert!(first.stop().is_some_and(|s| s.success()), "{}", first.log());
}

#[test]
fn a_regular_file_at_the_socket_path_is_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let precious = dir.path().join("state.json");
    std::fs::write(&precious, "precious").unwrap();
    // The issue's mix-up: the state file named as the socket.
    let cfg = config(dir.path(), &dir.path().join("s.sock"), &precious);
    let out = placed(&cfg);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(Exit::BadInput as i32), "{err}");
    assert!(err.contains("is not a socket"), "{err}");
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious");
}

#[test]
fn a_fifo_as_the_state_file_is_refused_without_hanging() {
    if crate::cgroup_support::host().is_err() {
        eprintln!("skipped: needs root and a cpuset hierarchy");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("state.json");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let cfg = config(dir.path(), &fifo, &dir.path().join("s.sock"));
    // Before the fix this never returned: open(2) of a FIFO waits for a writer.
    let out = placed(&cfg);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(Exit::Refused as i32), "{err}");
    assert!(err.contains("not a regular file"), "{err}");
}

#[test]
fn placectl_refuses_a_huge_pu_index_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let xml = dir.path().join("huge.xml");
    std::fs::write(
        &xml,
        r#"<topology version="2.0"><object type="Machine" os_index="0" cpuset="0x1" complete_cpuset="0x1" allowed_cpuset="0x1" nodeset="0x1" complete_nodeset="0x1" allowed_nodeset="0x1"><object type="NUMANode" os_index="0" cpuset="0x1" complete_cpuset="0x1" nodeset="0x1" complete_nodeset="0x1" local_memory="1073741824"/><object type="PU" os_index="2147483648" cpuset="0x1" complete_cpuset="0x1" nodeset="0x1" complete_nodeset="0x1"/></object></topology>"#,
    )
    .unwrap();
    let out = Command::new(crate::bins::bin("placectl"))
        .args(["topology", "--topology"])
        .arg(&xml)
        .output()
        .expect("run placectl");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(101), "panicked: {err}");
    assert!(err.contains("os_index"), "{err}");
}
