//! The daemon as its systemd unit in numa-vm guests (QEMU, cgroup v2) with 2 and 4 NUMA
//! nodes: a model trained on simulated data for the guest; on 2 nodes (two placements for 2
//! vCPUs, nothing to predict) the accuracy gate refuses it and the daemon given it anyway
//! only observes; on 4 nodes in 2 sockets containers are placed by the model policy and
//! checked in /proc, and a daemon is stopped and one killed mid-migration, restarted by
//! systemd. The work happens in `guest-daemon.sh`; this checks what it printed. The Debian
//! package is installed, run and removed the same way (`guest-package.sh`).
//!
//! Skips with the reason where numa-vm, QEMU, root or `placed-train` is missing. Timings in
//! the guest (software emulation) say nothing about real hardware.

use std::path::Path;
use std::process::Command;

use crate::guest_support;

/// One guest at a time: two emulated guests on a 2-core host each run at half speed and
/// both miss their deadlines.
static ONE_GUEST: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// What the guest's topology lets the model do for a container of 2 vCPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Two important placements, both measured: the accuracy gate refuses the model
    /// ("predicts nothing"), and the daemon given it anyway only observes.
    Gated,
    /// Three or more: the model predicts, the daemon places, moves are stopped and killed.
    Placed,
}

/// Boots a guest under systemd with numa-vm's `topology` flags and 2 GiB, and runs the bash
/// `script` there with `args`. An emulated guest that never reached the script (empty
/// stdout: boot hung under TCG on a loaded 2-core host) says nothing about placed, so it is
/// booted once more.
fn boot(
    vm: &Path,
    topology: &[&str],
    script: &Path,
    args: &[std::ffi::OsString],
) -> std::process::Output {
    let once = || {
        Command::new(vm)
            .current_dir(guest_support::workspace())
            .env("NUMA_VM_NO_INSTALL", "1")
            .args(["run", "--systemd"])
            .args(topology)
            .args(["--mem", "2G", "--timeout", "900"])
            .args(["--env", "PLACED_IN_GUEST=1", "--"])
            .arg("bash")
            .arg(script)
            .args(args)
            .output()
            .expect("numa-vm runs")
    };
    let out = once();
    if !out.status.success() && out.stdout.is_empty() {
        println!(
            "--- first boot produced nothing; retrying ---\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return once();
    }
    out
}

fn run_guest(nodes: &str, cpus_per_node: &str, smt: &str, sockets: &str, expect: Expect) {
    let _one = ONE_GUEST.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(why) = guest_support::unavailable() {
        eprintln!("skipped, because {why}");
        return;
    }
    let train = crate::bins::bin("placed-train");
    let Some(vm) = guest_support::numa_vm() else {
        return;
    };
    let workspace = guest_support::workspace();
    let script = workspace.join("tests/e2e/guest-daemon.sh");
    let unit = workspace.join("dist/placed.service");
    let started = std::time::Instant::now();
    let out = boot(
        &vm,
        &[
            "--nodes",
            nodes,
            "--cpus-per-node",
            cpus_per_node,
            "--smt",
            smt,
            "--sockets",
            sockets,
        ],
        &script,
        &[
            env!("CARGO_BIN_EXE_placed").into(),
            crate::bins::bin("placectl").into(),
            train.into(),
            crate::bins::bin("placed-testload").into(),
            unit.into(),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("--- guest stdout ---\n{stdout}\n--- guest stderr ---\n{stderr}");
    println!("guest run ({nodes} nodes) took {:?}", started.elapsed());
    assert!(out.status.success(), "guest run failed: {:?}", out.status);
    assert!(
        stdout.contains("GUEST DAEMON TESTS PASSED"),
        "the guest script did not finish"
    );
    let checks: &[&str] = match expect {
        Expect::Gated => &["model", "unit", "gate-refuses", "gated"],
        Expect::Placed => &["model", "unit", "model-policy", "predict", "stop"],
    };
    for check in checks {
        assert!(
            stdout.contains(&format!("CHECK {check} ok")),
            "check {check} missing"
        );
    }
    if expect == Expect::Placed {
        assert!(stdout.contains("CHECK stop-during-migration ok"));
        assert!(stdout.contains("CHECK kill-during-migration ok"));
    }
}

#[test]
fn daemon_unit_in_a_two_node_guest() {
    // Two sockets of one node each: 2 vCPUs fit one node or two, nothing else.
    run_guest("2", "2", "1", "2", Expect::Gated);
}

#[test]
fn daemon_unit_in_a_four_node_smt_guest() {
    // Two nodes per socket: one node, two of one socket, or two of two sockets.
    run_guest("4", "2", "2", "2", Expect::Placed);
}

/// The highest `systemd-analyze security` exposure `dist/placed.service` may have, the score
/// docs/daemon.md records ("Hardening"): a directive dropped from the unit fails the test.
const MAX_EXPOSURE: &str = "2.9";

/// The Debian package as an operator uses it, in a guest under systemd (one boot for all):
/// built here from the binaries cargo built for this test, `dpkg -i`, the unit's exposure,
/// started as shipped and `placectl status` on the installed socket, a container of another
/// user placed through the hardened unit, journald priorities, three `systemctl reload`s,
/// then `dpkg -r` and `dpkg -P` leaving no unit, socket or state behind. The work happens in
/// `guest-package.sh`; this builds the package and checks what the script printed.
#[test]
fn debian_package_installed_run_and_removed_in_a_guest() {
    let _one = ONE_GUEST.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(why) = guest_support::unavailable() {
        eprintln!("skipped, because {why}");
        return;
    }
    if !guest_support::on_path("dpkg-deb") {
        eprintln!("skipped, because dpkg-deb is not installed (not a Debian host)");
        return;
    }
    let Some(vm) = guest_support::numa_vm() else {
        return;
    };
    let workspace = guest_support::workspace();
    let placed = Path::new(env!("CARGO_BIN_EXE_placed"));
    // The same profile directory holds the other two, once brought up to date.
    let bin_dir = placed.parent().expect("placed lives in a target directory");
    for other in ["placectl", "placed-train"] {
        assert_eq!(crate::bins::bin(other).parent(), Some(bin_dir));
    }
    // Beside the binaries: the guest sees the host's root (read-only), so any host path works.
    let out_dir = bin_dir.join("guest-package");
    let started = std::time::Instant::now();
    let built = Command::new(workspace.join("scripts/package-deb"))
        .current_dir(&workspace)
        .env("PLACED_BIN_DIR", bin_dir)
        .env("PLACED_DEB_OUT", &out_dir)
        .env("PLACED_DEB_COMPRESSION", "none")
        .output()
        .expect("scripts/package-deb runs");
    assert!(
        built.status.success(),
        "scripts/package-deb failed: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let deb = String::from_utf8_lossy(&built.stdout)
        .lines()
        .last()
        .map(str::to_owned)
        .expect("package-deb names the package");
    println!("package {deb} built in {:?}", started.elapsed());

    let started = std::time::Instant::now();
    let out = boot(
        &vm,
        &["--nodes", "2", "--cpus-per-node", "2", "--smt", "1"],
        &workspace.join("tests/e2e/guest-package.sh"),
        &[deb.into(), MAX_EXPOSURE.into()],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!(
        "--- guest stdout ---\n{stdout}\n--- guest stderr ---\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("guest package run took {:?}", started.elapsed());
    assert!(out.status.success(), "guest run failed: {:?}", out.status);
    assert!(
        stdout.contains("GUEST PACKAGE TESTS PASSED"),
        "the guest script did not finish"
    );
    for check in [
        "install",
        "security",
        "start-as-shipped",
        "journal-priorities",
        "manage",
        "reload",
        "remove",
        "purge",
    ] {
        assert!(
            stdout.contains(&format!("CHECK {check} ok")),
            "check {check} missing"
        );
    }
}
