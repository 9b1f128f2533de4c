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

use crate::guest_support;

/// What the guest's topology lets the model do for a container of 2 vCPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Two important placements, both measured: the accuracy gate refuses the model
    /// ("predicts nothing"), and the daemon given it anyway only observes.
    Gated,
    /// Three or more: the model predicts, the daemon places, moves are stopped and killed.
    Placed,
}

fn run_guest(nodes: &str, cpus_per_node: &str, smt: &str, sockets: &str, expect: Expect) {
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
    let out = guest_support::Guest::new(&vm, &workspace)
        .options([
            "--systemd",
            "--nodes",
            nodes,
            "--cpus-per-node",
            cpus_per_node,
        ])
        .options([
            "--smt",
            smt,
            "--sockets",
            sockets,
            "--mem",
            "2G",
            // A bound on a hang, not a speed check: the scenario takes 10-13 min under TCG on an
            // idle 2-core host, and a host also building or testing needs longer.
            "--timeout",
            "1500",
        ])
        .run([
            "bash".into(),
            script.into_os_string(),
            env!("CARGO_BIN_EXE_placed").into(),
            crate::bins::bin("placectl").into_os_string(),
            train.into_os_string(),
            crate::bins::bin("placed-testload").into_os_string(),
            unit.into_os_string(),
        ]);
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    println!("--- guest stdout ---\n{stdout}\n--- guest stderr ---\n{stderr}");
    println!(
        "guest run ({nodes} nodes) took {:?} ({} boot(s))",
        started.elapsed(),
        out.boots
    );
    assert!(out.success(), "guest run failed: {:?}", out.status);
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
    // Beside the binaries: the guest sees the host's root (read-only), so any host path works.
    let out_dir = crate::package::bin_dir().join("guest-package");
    let started = std::time::Instant::now();
    let deb = crate::package::build(&out_dir);
    println!("package {} built in {:?}", deb.display(), started.elapsed());

    let started = std::time::Instant::now();
    let out = guest_support::Guest::new(&vm, &workspace)
        .options([
            "--systemd",
            "--nodes",
            "2",
            "--cpus-per-node",
            "2",
            "--smt",
            "1",
        ])
        .options(["--mem", "2G", "--timeout", "900"])
        .run([
            "bash".into(),
            workspace
                .join("tests/e2e/guest-package.sh")
                .into_os_string(),
            deb.into(),
            MAX_EXPOSURE.into(),
        ]);
    let stdout = &out.stdout;
    println!(
        "--- guest stdout ---\n{stdout}\n--- guest stderr ---\n{}",
        out.stderr
    );
    println!(
        "guest package run took {:?} ({} boot(s))",
        started.elapsed(),
        out.boots
    );
    assert!(out.success(), "guest run failed: {:?}", out.status);
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

/// A stand-in for numa-vm: `body` runs as a shell script, with `$n` the number of the boot
/// (counted in a file beside it).
fn fake_vm(name: &str, body: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("fake-vm-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the fake's directory");
    let script = dir.join("numa-vm");
    let text = format!(
        "#!/bin/sh\necho boot >> \"$(dirname \"$0\")/boots\"\nn=$(wc -l < \"$(dirname \"$0\")/boots\")\n{body}\n"
    );
    std::fs::write(&script, text).expect("the fake numa-vm");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
        .expect("the fake is executable");
    script
}

#[test]
fn a_boot_that_goes_silent_is_killed_and_booted_again_three_times_at_most() {
    // Prints the kernel's first lines, then nothing: the hang seen under TCG.
    let vm = fake_vm(
        "silent",
        "echo '[console] Linux version' >&2\nexec sleep 600",
    );
    let out = guest_support::Guest::new(&vm, vm.parent().unwrap())
        .no_progress(std::time::Duration::from_secs(1))
        .run(["true"]);
    assert_eq!(out.boots, 3);
    assert!(!out.success(), "a run that never booted passed: {out:?}");
    let boots = std::fs::read_to_string(vm.with_file_name("boots")).unwrap();
    assert_eq!(boots.lines().count(), 3, "each boot was started once");
}

#[test]
fn a_vm_that_fails_before_the_command_is_booted_again_and_its_run_counts() {
    let vm = fake_vm(
        "fails-once",
        "if [ \"$n\" = 1 ]; then echo 'numa-vm: the VM failed (QEMU exit 1)' >&2; exit 125; fi\n\
         echo 'numa-vm: guest booted in 1.00 s (host wall clock); running command' >&2\n\
         echo \"ran: $*\"",
    );
    let out = guest_support::Guest::new(&vm, vm.parent().unwrap()).run(["echo", "hi"]);
    assert!(out.success(), "{out:?}");
    assert_eq!(out.boots, 2);
    assert!(out.stdout.contains("-- echo hi"), "{}", out.stdout);
}

#[test]
fn a_command_that_fails_after_the_boot_is_reported_not_retried() {
    let vm = fake_vm(
        "command-fails",
        "echo 'numa-vm: guest booted in 1.00 s (host wall clock); running command' >&2\nexit 3",
    );
    let out = guest_support::Guest::new(&vm, vm.parent().unwrap()).run(["false"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(out.boots, 1);
}
