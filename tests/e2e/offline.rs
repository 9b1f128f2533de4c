//! `placectl topology` and `placectl placements`: offline, no daemon.

use placed_core::exit::Exit;
use std::io::Write;

use crate::util::{placectl, topologies};

const OPTERON: &str = "hwloc-xml/x86+linux-64amd64-4p2n4ca2co.xml";
const XEON_E7: &str = "pack:4 numa:1 l3:1 core:12 pu:2";

fn topo(rel: &str) -> String {
    topologies().join(rel).display().to_string()
}

#[test]
fn placements_table_for_the_thesis_xeon() {
    let run = placectl(["placements", "--vcpus", "24", "--synthetic", XEON_E7]).ok();
    assert!(
        run.stdout.contains("24 vCPUs: 7 important placements"),
        "{run:?}"
    );
    assert!(run.stdout.contains("exact"), "{run:?}");
    let rows: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("numa"))
        .collect();
    assert_eq!(rows.len(), 7, "{run:?}");
    assert!(rows[0].starts_with("numa1-core12-ic1.000"), "{run:?}");
    assert!(rows[0].trim_end().ends_with("0-23"), "{run:?}");
}

#[test]
fn placements_json_schema() {
    let run = placectl([
        "placements",
        "--vcpus",
        "16",
        "--topology",
        &topo(OPTERON),
        "--json",
    ])
    .ok();
    let j = run.json();
    assert_eq!(j["schema"], "placed.placements/v1");
    assert_eq!(j["vcpus"], 16);
    assert_eq!(j["exact"], true);
    assert_eq!(j["bound"], serde_json::Value::Null);
    assert_eq!(
        j["concerns"],
        serde_json::json!(["numa", "package", "l2", "ic"])
    );
    let ps = j["placements"].as_array().unwrap();
    assert_eq!(ps.len(), 16);
    let first = &ps[0];
    assert_eq!(first["id"], "numa2-package1-l2x8-ic1.538");
    assert_eq!(first["nodes"], "0-1");
    assert_eq!(first["cpus"], "0-15");
    assert_eq!(first["scores"]["ic"], 1.538);
    assert_eq!(first["scores"]["numa"], 2.0);
}

#[test]
fn bounded_search_says_so() {
    let run = placectl([
        "placements",
        "--vcpus",
        "16",
        "--topology",
        &topo("hwloc-xml/192em64t-24n8c2t.xml"),
        "--json",
    ])
    .ok();
    let j = run.json();
    assert_eq!(j["exact"], false);
    assert!(j["bound"].as_str().unwrap().contains("beam"), "{run:?}");
    let table = placectl([
        "placements",
        "--vcpus",
        "16",
        "--topology",
        &topo("hwloc-xml/192em64t-24n8c2t.xml"),
    ])
    .ok();
    assert!(table.stdout.contains("Search      bounded:"), "{table:?}");
}

#[test]
fn topology_summary_and_json() {
    let run = placectl(["topology", "--topology", &topo(OPTERON)]).ok();
    for needle in [
        "AMD Opteron(TM) Processor 6272",
        "64 usable of 64",
        "8 x numa of 8 PUs",
        "NUMA+L3",
        "derived from distance matrix NUMALatency",
    ] {
        assert!(run.stdout.contains(needle), "{needle}: {run:?}");
    }
    let j = placectl(["topology", "--topology", &topo(OPTERON), "--json"])
        .ok()
        .json();
    assert_eq!(j["schema"], "placed.machine/v1");
    assert_eq!(j["allocation_unit"], "numa");
    assert_eq!(j["concerns"][3]["name"], "ic");
    assert_eq!(j["concerns"][3]["lower_cost"], false);
    assert_eq!(j["units"].as_array().unwrap().len(), 8);
    assert!(j["fingerprint"].as_str().unwrap().starts_with("mc1-"));
}

#[test]
fn this_host_works_without_arguments() {
    let run = placectl(["topology"]).ok();
    assert!(run.stdout.contains("this host"), "{run:?}");
    let run = placectl(["placements", "--vcpus", "1"]).ok();
    assert!(run.stdout.contains("1 vCPUs"), "{run:?}");
}

#[test]
fn cpu_less_and_restricted_machines_are_reported() {
    let run = placectl([
        "topology",
        "--topology",
        &topo("mpibind-xml/coral-butte-hwloc1.xml"),
    ])
    .ok();
    assert!(run.stdout.contains("Memory-only NUMA nodes"), "{run:?}");
    assert!(run.stdout.contains("CPU-less"), "{run:?}");
    let run = placectl([
        "topology",
        "--topology",
        &topo("hwloc-xml/16em64t-4s2c2t-offlines.xml"),
    ])
    .ok();
    assert!(
        run.stdout
            .contains("7 usable of 16 (offline: 2,5,7-11,13-14"),
        "{run:?}"
    );
}

#[test]
fn bad_input_gets_one_line_and_its_exit_code() {
    placectl(["placements", "--vcpus", "0", "--synthetic", XEON_E7])
        .fails_with(Exit::BadInput, "at least one vCPU");
    placectl(["placements", "--vcpus", "97", "--synthetic", XEON_E7]).fails_with(
        Exit::BadInput,
        "97 vCPUs do not fit: the machine has 96 usable PUs",
    );
    placectl(["placements", "--vcpus", "13", "--synthetic", XEON_E7])
        .fails_with(Exit::BadInput, "no balanced placement for 13 vCPUs");
    placectl(["topology", "--topology", "/nonexistent/t.xml"]).fails_with(
        Exit::NotFound,
        "cannot read topology file /nonexistent/t.xml",
    );
    placectl(["topology", "--synthetic", "pack:2 gizmo:3"]).fails_with(
        Exit::BadInput,
        "invalid synthetic topology \"pack:2 gizmo:3\"",
    );

    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::File::create(&p)
            .unwrap()
            .write_all(body.as_bytes())
            .unwrap();
        p.display().to_string()
    };
    let malformed = write("bad.xml", "<topology version=\"2.0\"><object");
    placectl(["topology", "--topology", &malformed])
        .fails_with(Exit::BadInput, "is not well-formed XML");
    let v3 = write(
        "v3.xml",
        "<?xml version=\"1.0\"?><topology version=\"3.0\"/>",
    );
    placectl(["placements", "--vcpus", "2", "--topology", &v3])
        .fails_with(Exit::BadInput, "format 3.0");
    // This one crashes hwloc 2.9 if it gets that far.
    let crash = write(
        "crash.xml",
        r#"<topology version="2.0"><object type="Machine" os_index="0" cpuset="0x1"><object type="PU" os_index="0" cpuset="0x1"/></object></topology>"#,
    );
    placectl(["topology", "--topology", &crash])
        .fails_with(Exit::BadInput, "is not an hwloc topology");
    let unreadable = dir.path().display().to_string();
    placectl(["topology", "--topology", &unreadable]).fails_with(Exit::BadInput, "Is a directory");
    let mf = write(
        "m.json",
        r#"{"version": 1, "concerns": {"remove": ["bogus"]}}"#,
    );
    placectl(["topology", "--synthetic", XEON_E7, "--machine-file", &mf])
        .fails_with(Exit::BadInput, "no level \"bogus\"");
}

/// What the command line says is checked before the daemon is dialled: a bad metric is the
/// caller's mistake (exit 2) whether or not a daemon runs, and an absent daemon is one line
/// that names each cause once.
#[test]
fn arguments_are_checked_before_connecting_and_causes_are_named_once() {
    let nowhere = "/nonexistent/placed.sock";
    placectl(["manage", "web", "--metric", "bogus", "--socket", nowhere])
        .fails_with(Exit::BadInput, "--metric \"bogus\": expected");
    placectl(["place", "web", "--policy", "sideways", "--socket", nowhere])
        .fails_with(Exit::BadInput, "sideways");
    let run = placectl(["status", "--socket", nowhere]).fails_with(
        Exit::Unavailable,
        "cannot reach placed at /nonexistent/placed.sock",
    );
    assert_eq!(
        run.stderr.matches("No such file or directory").count(),
        1,
        "{run:?}"
    );
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    let run = placectl(["placements"]);
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(run.stderr.contains("--vcpus"), "{run:?}");
    let run = placectl([
        "placements",
        "--topology",
        "a.xml",
        "--synthetic",
        "pack:2",
        "--vcpus",
        "1",
    ]);
    assert_eq!(run.code, Some(2), "{run:?}");
    let run = placectl(["--help"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("Exit status"), "{run:?}");
}

/// hwloc 2.9 trusts its XML: objects without nodesets segfault it and inconsistent cpusets
/// abort it in its consistency check. Mutated real files must still end in a clean exit.
#[test]
fn mutated_topology_files_never_crash_placectl() {
    let originals = [
        "hwloc-xml/16em64t-4s2c2t.xml",
        "hwloc-xml/32em64t-2n8c2t-pci-normalio.xml",
        "mpibind-xml/coral-lassen.xml",
        "sparecores-xml/vultr__vbm-64c-1536gb-amd.xml",
        "hwloc-xml/16amd64-4distances.v1.xml",
    ];
    let dir = tempfile::tempdir().unwrap();
    let mut seed: u64 = 0x5eed;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((seed >> 33) as usize) % n.max(1)
    };
    let replacements = [
        "0x0",
        "",
        "-1",
        "zz",
        "0xffffffff,0xffffffff",
        "NUMANode",
        "PU",
    ];
    for i in 0..60 {
        let mut text =
            std::fs::read_to_string(topologies().join(originals[i % originals.len()])).unwrap();
        for _ in 0..=next(3) {
            // Attribute values start after `="`; pick one and delete or replace it.
            let starts: Vec<usize> = text.match_indices("=\"").map(|(p, _)| p + 2).collect();
            let start = starts[next(starts.len())];
            let end = start + text[start..].find('"').unwrap();
            let with = if next(2) == 0 {
                ""
            } else {
                replacements[next(replacements.len())]
            };
            text.replace_range(start..end, with);
        }
        let path = dir.path().join(format!("m{i}.xml"));
        std::fs::write(&path, &text).unwrap();
        let run = placectl([
            "placements",
            "--vcpus",
            "2",
            "--topology",
            &path.display().to_string(),
        ]);
        match run.code {
            Some(0) => {}
            Some(2..=6) => assert_eq!(run.stderr.lines().count(), 1, "{run:?}"),
            _ => panic!("mutation {i} crashed placectl: {run:?}"),
        }
    }
}
