//! Several NUMA nodes: runs `real.rs` inside numa-vm guests (QEMU guests with
//! virtual NUMA nodes, docs/design.md "What runs where"), where pages really move between nodes, once
//! with the guest's cgroup v2 and once with a cgroup v1 cpuset hierarchy.
//!
//! Skips with the reason when numa-vm or QEMU is not installed. Set `PLACED_NUMA_VM` to the
//! `numa-vm` script if it is not in one of the usual places.

use std::path::Path;

use crate::skip;

#[path = "../../../tests/support/guest.rs"]
mod support_guest;

/// The tests of real.rs that need several nodes, and print this when they ran.
const MULTI_NODE: [&str; 5] = [
    "memory_follows_the_cpuset_in_every_mode",
    "freezing_stops_the_tasks_and_the_guard_always_thaws",
    "a_failed_move_restores_the_previous_cpuset",
    "a_cancelled_move_finishes_fast_and_stays_on_both_nodes_throttled",
    "placectl_move_interrupted_by_a_signal_leaves_the_container_in_order",
];

/// numa-vm's kernel command line without `cgroup_no_v1=all` (the script adds it, and a
/// later `cgroup_no_v1=` can only disable more), passed as a second `-append` that QEMU
/// takes instead of the first. `loglevel=6` as `Guest` asks: its boot watchdog follows
/// the console.
const V1_CMDLINE: &str =
    "console=ttyS0 panic=-1 loglevel=6 mitigations=off random.trust_cpu=on 8250.nr_uarts=1";

/// In the guest, before the tests: take cpuset off the cgroup2 root (no cgroup below it
/// uses it yet) and mount it, with the freezer, as v1 hierarchies. `Cgroups::detect`
/// prefers a v1 cpuset mount, as on a hybrid host.
const V1_SWITCH: &str = "echo -cpuset > /sys/fs/cgroup/cgroup.subtree_control \
    && mkdir -p /run/placed-v1/cpuset /run/placed-v1/freezer \
    && mount -t cgroup -o cpuset cpuset /run/placed-v1/cpuset \
    && mount -t cgroup -o freezer freezer /run/placed-v1/freezer \
    && exec \"$0\" \"$@\"";

#[test]
fn real_tests_in_a_four_node_cgroup_v2_guest() {
    run_in_guest("v2");
}

#[test]
fn real_tests_in_a_four_node_cgroup_v1_guest() {
    run_in_guest("v1");
}

fn run_in_guest(hierarchy: &str) {
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
    let mut options = vec!["--nodes", "4", "--cpus-per-node", "2", "--smt", "2"];
    options.extend(["--mem", "2G", "--timeout", "400"]);
    if hierarchy == "v1" {
        options.extend(["--qemu-arg", "-append", "--qemu-arg", V1_CMDLINE]);
    }
    let mut command: Vec<std::ffi::OsString> = Vec::new();
    if hierarchy == "v1" {
        command.extend(["bash".into(), "-c".into(), V1_SWITCH.into()]);
    }
    command.push(exe.into());
    command.extend(["--test-threads=1", "--nocapture", "enact::real::"].map(Into::into));
    let out = support_guest::Guest::new(&vm, workspace)
        .options(options)
        .run(command);
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    println!(
        "--- {hierarchy} guest stdout ---\n{stdout}\n--- {hierarchy} guest stderr ---\n{stderr}"
    );
    println!(
        "{hierarchy} guest run took {:?} ({} boot(s))",
        started.elapsed(),
        out.boots
    );
    assert!(out.success(), "guest tests failed: {:?}", out.status);
    assert!(
        stdout.contains("test result: ok"),
        "no test summary from the guest"
    );
    for test in MULTI_NODE {
        assert!(
            stdout.contains(&format!("{test}: ran on 4 nodes")),
            "{test} did not run on 4 nodes in the {hierarchy} guest"
        );
    }
    // The hierarchy the tests really used.
    let marker = format!("real tests on cgroup {hierarchy}");
    assert!(stdout.contains(&marker), "no {marker:?}");
}
