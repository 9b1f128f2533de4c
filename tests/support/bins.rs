//! The workspace's binaries, for tests and benches that run one of another package. Cargo
//! hands a test only its own package's binaries (`CARGO_BIN_EXE_*`); the others are found
//! in the same target directory, where `cargo test --workspace` has built them, and built
//! there first when missing (a `cargo test -p` of one package).

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

/// The path of binary `name`, built first if it is not there yet.
pub fn bin(name: &str) -> PathBuf {
    static BUILDING: Mutex<()> = Mutex::new(());
    let dir = profile_dir();
    let path = dir.join(name);
    if path.exists() {
        return path;
    }
    let _one = BUILDING.lock().unwrap_or_else(|p| p.into_inner());
    if path.exists() {
        return path;
    }
    let package = PACKAGES
        .iter()
        .find(|(b, _)| *b == name)
        .map(|(_, p)| *p)
        .unwrap_or_else(|| panic!("{name} is not a binary of this workspace"));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "-p", package, "--bin", name]);
    if dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let status = cmd.status().expect("cargo runs");
    assert!(
        status.success(),
        "cargo build -p {package} --bin {name} failed"
    );
    assert!(
        path.exists(),
        "cargo built {name}, but not at {}",
        path.display()
    );
    path
}
