//! The whole loop in a numa-vm guest (QEMU, 2 NUMA nodes x 2 PUs, cgroup v2): collect for
//! v = 2 with a tiny protocol, fit, install, and the model loads for the guest's machine
//! class; then calibrate writes a 2-node machine file that loads. Timings in the guest
//! (software emulation where KVM is absent) say nothing about real hardware.
//!
//! Skips with the reason where numa-vm, QEMU or root is missing, or inside the guest.

// Test helpers fail the test on anything unexpected, as the tests themselves do.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::path::{Path, PathBuf};

use placed_models::{Model, Provenance};

#[path = "../../tests/support/guest.rs"]
mod guest_support;

/// The interval bound is off: the guest's timings are noise (docs/training.md), and this
/// test checks the loop, not the data.
const TINY: &str =
    "--warmup 0.3 --window 0.25 --windows 6 --max-foreign 1 --retries 3 --max-interval 100000";

/// The guest most tests use: 2 nodes of 2 PUs.
const TWO_NODES: [&str; 6] = ["--nodes", "2", "--cpus-per-node", "2", "--smt", "1"];

/// Runs `script` in a 2-node guest, in `dir` (shared read-write at the same path).
fn in_guest(dir: &Path, script: &str) -> Option<(bool, String, String)> {
    in_guest_of(&TWO_NODES, dir, script)
}

/// Runs `script` in a guest of the `topology` given (numa-vm options), in `dir`.
fn in_guest_of(topology: &[&str], dir: &Path, script: &str) -> Option<(bool, String, String)> {
    if let Some(why) = guest_support::unavailable() {
        eprintln!("skipped, because {why}");
        return None;
    }
    let vm = guest_support::numa_vm()?;
    let started = std::time::Instant::now();
    let out = guest_support::Guest::new(&vm, dir)
        .options(topology.iter().copied())
        .options(["--mem", "2G", "--timeout", "600"])
        .run(["bash", "-c", script]);
    println!(
        "--- guest stdout ---\n{}\n--- guest stderr ---\n{}",
        out.stdout, out.stderr
    );
    println!(
        "guest run took {:?} ({} boot(s))",
        started.elapsed(),
        out.boots
    );
    Some((out.success(), out.stdout, out.stderr))
}

/// A private copy of `placed-train` in `dir`: the target directory may be shared with other
/// builds, which can replace the binary while a guest boots.
fn private_exe(dir: &Path) -> String {
    let exe = dir.join("placed-train");
    std::fs::copy(env!("CARGO_BIN_EXE_placed-train"), &exe).unwrap();
    exe.display().to_string()
}

fn workdir(name: &str) -> PathBuf {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("guest-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_whole_loop_trains_and_installs_a_model_in_a_two_node_guest() {
    let dir = workdir("train");
    let exe = private_exe(&dir);
    let script = format!(
        "set -e; {exe} train --vcpus 2 --workloads {w} --runs 2 {TINY} --model-dir models \
         --trees 20 --accept-inaccurate && echo GUEST TRAIN OK; ls /sys/fs/cgroup | grep placed-train- || echo NO CGROUP LEFT",
        w = support::workloads(3)
    );
    let Some((ok, stdout, _)) = in_guest(&dir, &script) else {
        return;
    };
    assert!(ok, "the guest run failed");
    assert!(stdout.contains("GUEST TRAIN OK"));
    assert!(stdout.contains("NO CGROUP LEFT"));
    let data = placed_models::Dataset::load(&dir.join("models/data-v2.jsonl")).unwrap();
    assert_eq!(data.provenance(), Provenance::VirtualMachine);
    assert!(data.header().placements.len() >= 2);
    let fingerprint = &data.header().fingerprint;
    let model_path = dir.join(format!("models/{fingerprint}-v2.json"));
    // What the daemon's model library does: load by machine class, then check the ids.
    let model = Model::load_for(
        &model_path,
        &placed_models::MachineClass {
            fingerprint: fingerprint.clone(),
            v: 2,
        },
    )
    .unwrap();
    assert_eq!(model.provenance(), Provenance::VirtualMachine);
    // Two placements for v = 2 (both measured) or noisy guest timings: the gate fails, and
    // the forced model says so, so the daemon only observes with it.
    assert!(model.below_gate().is_some(), "{:?}", model.accuracy());
    assert!(stdout.contains("BELOW THE ACCURACY GATE"), "{stdout}");
    let ids: Vec<&str> = model.placements().iter().map(|p| p.id.as_str()).collect();
    let want: Vec<&str> = data
        .header()
        .placements
        .iter()
        .map(|p| p.id.as_str())
        .collect();
    assert_eq!(ids, want);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Several sizes in a 4-node guest (2 sockets, 2 PUs per node, SMT 2), whose important
/// placements are 1 for v = 1 and 8, 3 for v = 2 and 4, and none for v = 3 (it does not
/// divide over the nodes): the sizes with nothing to predict are said and passed over, and
/// the two left are collected into their own data files and get their own models. Which
/// sizes a search leaves to the model across sizes is tested on simulated collections
/// (`pipeline::sizes`); two sizes are both ends, so this run collects both.
#[test]
fn several_sizes_collect_each_size_the_host_can_place_and_train_it() {
    let dir = workdir("sizes");
    let exe = private_exe(&dir);
    let script = format!(
        "set -e; {exe} train --vcpus 1,2,3,4,8 --workloads {w} --runs 1 {TINY} --model-dir models \
         --trees 20 --accept-inaccurate && echo GUEST SIZES OK; ls /sys/fs/cgroup | grep placed-train- || echo NO CGROUP LEFT",
        w = support::workloads(3)
    );
    let topology = [
        "--nodes",
        "4",
        "--sockets",
        "2",
        "--cpus-per-node",
        "2",
        "--smt",
        "2",
    ];
    let Some((ok, stdout, _)) = in_guest_of(&topology, &dir, &script) else {
        return;
    };
    assert!(ok, "the guest run failed");
    assert!(stdout.contains("GUEST SIZES OK"));
    assert!(stdout.contains("NO CGROUP LEFT"));
    for skipped in [
        "v = 1: this host has 1 important placement",
        "v = 3: ",
        "v = 8: this host has 1",
    ] {
        assert!(stdout.contains(skipped), "{skipped}: {stdout}");
    }
    assert!(
        stdout.contains("collected, in order: v = 2, 4\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("every size asked for is an end of the range"),
        "{stdout}"
    );
    for v in [2, 4] {
        let data =
            placed_models::Dataset::load(&dir.join(format!("models/data-v{v}.jsonl"))).unwrap();
        assert_eq!(data.provenance(), Provenance::VirtualMachine);
        assert_eq!(data.header().placements.len(), 3);
        let fingerprint = &data.header().fingerprint;
        let model = Model::load_for(
            &dir.join(format!("models/{fingerprint}-v{v}.json")),
            &placed_models::MachineClass {
                fingerprint: fingerprint.clone(),
                v,
            },
        )
        .unwrap();
        assert_eq!(model.machine().v, v);
        assert!(
            stdout.contains(&format!("installed model {} for v = {v}", model.id())),
            "{stdout}"
        );
    }
    for v in [1, 3, 8] {
        assert!(
            !dir.join(format!("models/data-v{v}.jsonl")).exists(),
            "v = {v} not collected"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn calibrate_writes_a_two_node_machine_file_that_loads() {
    let has_stream = placed_training::workloads::builtin()
        .iter()
        .any(|w| w.name == placed_training::calibrate::WORKLOAD);
    if !has_stream {
        eprintln!("skipped, because this build has no stream-triad workload yet");
        return;
    }
    let dir = workdir("calibrate");
    let exe = private_exe(&dir);
    // --force: software-emulated timings may well fail the repeatability check, which would
    // refuse the calibration; this test checks that a file is written and loads, and that
    // the file says what its figures are (a virtual machine's, possibly forced).
    let script = format!(
        "set -e; {exe} calibrate --out machine.json --seconds 3 --force && echo GUEST CALIBRATE OK"
    );
    let Some((ok, stdout, _)) = in_guest(&dir, &script) else {
        return;
    };
    assert!(ok && stdout.contains("GUEST CALIBRATE OK"));
    let text = std::fs::read_to_string(dir.join("machine.json")).unwrap();
    let file: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        file["interconnect"]["matrix"]["nodes"],
        serde_json::json!([0, 1])
    );
    assert_eq!(
        file["interconnect"]["matrix"]["values"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // The guest is a virtual machine (the training test above finds it so too).
    let notes = file["interconnect"]["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("virtual machine")),
        "{notes:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
