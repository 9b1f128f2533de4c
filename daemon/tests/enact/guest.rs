//! cgroup v2 and several NUMA nodes: runs `real.rs` inside a numa-vm guest (QEMU, see
//! `numa-vm/README.md` in the shared folder), where pages really move between nodes.
//!
//! Skips with the reason when numa-vm or QEMU is not installed. Set `PLACED_NUMA_VM` to the
//! `numa-vm` script if it is not in one of the usual places.

use std::path::Path;
use std::process::Command;

use crate::skip;

#[path = "../../../tests/support/guest.rs"]
mod support_guest;

#[test]
fn real_tests_in_a_four_node_cgroup_v2_guest() {
    if let Some(why) = support_guest::unavailable() {
        skip!("{why}");
    }
    let Some(vm) = support_guest::numa_vm() else {
        skip!("numa-vm is not installed (set PLACED_NUMA_VM)");
    };
    let exe = std::env::current_exe().unwrap();
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    if !exe.starts_with(workspace) {
        skip!(
            "the test binary {} is outside the shared workspace",
            exe.display()
        );
    }
    let started = std::time::Instant::now();
    // 4 nodes x 2 CPUs (SMT 2): 512 MiB a node. The tests of real.rs run one at a time.
    let out = Command::new(&vm)
        .current_dir(workspace)
        .env("NUMA_VM_NO_INSTALL", "1")
        .args([
            "run",
            "--nodes",
            "4",
            "--cpus-per-node",
            "2",
            "--smt",
            "2",
            "--mem",
            "2G",
            "--timeout",
            "400",
        ])
        .args(["--env", "PLACED_IN_GUEST=1", "--"])
        .arg(&exe)
        .args(["--test-threads=1", "--nocapture", "real::"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("--- guest stdout ---\n{stdout}\n--- guest stderr ---\n{stderr}");
    println!("guest run took {:?}", started.elapsed());
    assert!(out.status.success(), "guest tests failed: {:?}", out.status);
    assert!(
        stdout.contains("test result: ok"),
        "no test summary from the guest"
    );
    assert!(
        stdout.contains("memory_follows_the_cpuset_in_every_mode: ran on 4 nodes"),
        "the multi-node migration test did not run in the guest"
    );
}
