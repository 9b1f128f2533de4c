//! The workspace's binaries, for tests and benches that run one of another package. Cargo
//! hands a test only its own package's binaries (`CARGO_BIN_EXE_*`); the others are found
//! in the same target directory, brought up to date there first.

// Each binary uses a different subset.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The package each binary belongs to, for building it on demand.
const PACKAGES: &[(&str, &str)] = &[
    ("placed", "placed"),
    ("placectl", "placectl"),
    ("placed-train", "placed-training"),
    ("placed-testload", "placed-testload"),
];

/// The target directory's profile folder (`target/debug`), from this executable's path
/// (`target/debug/deps/<test>-<hash>`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its own path");
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_owned)
        .expect("test executables live in <target>/<profile>/deps")
}

/// The path of binary `name`, brought up to date first: once per test process and binary,
/// `cargo build` of its package, so that `cargo test -p` of one package never runs another
/// package's stale binary.
///
/// Not under scripts/test, which builds every binary with the tests beforehand and says so
/// with `PLACED_BINS_BUILT`: `cargo build -p <package>` resolves features for that package
/// alone, not as `cargo test --workspace` does (over every package and the
/// dev-dependencies: tokio's `test-util`, placed-host's `fake`, ...), so it rebuilt most
/// of the dependency tree in the middle of the suite, once for each package.
pub fn bin(name: &str) -> PathBuf {
    static BUILT: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let path = profile_dir().join(name);
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    if built.iter().any(|b| b == name) {
        return path;
    }
    let package = PACKAGES
        .iter()
        .find(|(b, _)| *b == name)
        .map(|(_, p)| *p)
        .unwrap_or_else(|| panic!("{name} is not a binary of this workspace"));
    // Inside the numa-vm guest the workspace is read-only for cargo's purposes, and under
    // scripts/test the binaries were built with the tests: use what is there.
    let built_before = std::env::var_os("PLACED_IN_GUEST").is_some()
        || std::env::var_os("PLACED_BINS_BUILT").is_some() && path.exists();
    if !built_before {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "--quiet", "-p", package, "--bin", name]);
        if profile_dir().file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("cargo runs");
        assert!(
            status.success(),
            "cargo build -p {package} --bin {name} failed"
        );
    }
    assert!(path.exists(), "{name} is not built at {}", path.display());
    built.push(name.to_owned());
    path
}
