//! Machine-model tests on the real topologies of `tests/topologies/` (provenance in its
//! README) and on synthetic descriptions.

use std::path::PathBuf;

use super::*;

pub(crate) fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/topologies")
}

pub(crate) fn corpus() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in std::fs::read_dir(corpus_dir()).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "xml") {
                files.push(f);
            }
        }
    }
    files.sort();
    files
}

pub(crate) fn xml(rel: &str) -> Machine {
    Machine::load(&TopologySource::XmlFile(corpus_dir().join(rel)), None).unwrap()
}

pub(crate) fn synthetic(s: &str) -> Machine {
    Machine::load(&TopologySource::Synthetic(s.into()), None).unwrap()
}

fn concern_names(m: &Machine) -> Vec<&str> {
    m.concerns.iter().map(|c| c.name.as_str()).collect()
}

#[test]
fn every_corpus_topology_loads_with_consistent_units() {
    let files = corpus();
    assert!(files.len() >= 50, "corpus has only {} files", files.len());
    for f in files {
        let m = Machine::load(&TopologySource::XmlFile(f.clone()), None)
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let name = f.display();
        // Units partition the usable PUs.
        let mut seen = CpuSet::new();
        for u in &m.units {
            assert!(!u.cpus.is_empty(), "{name}: empty unit");
            assert!(!seen.intersects(&u.cpus), "{name}: units overlap");
            seen = seen.union(&u.cpus);
            assert!(!u.mems.is_empty(), "{name}: unit without memory");
        }
        assert_eq!(seen, m.pus.usable, "{name}: units do not cover usable PUs");
        // Offline and disallowed PUs are never usable.
        assert!(!m.pus.usable.intersects(&m.pus.offline), "{name}");
        assert!(!m.pus.usable.intersects(&m.pus.disallowed), "{name}");
        // CPU-less nodes never hold CPUs.
        for t in &m.memory_targets {
            assert!(
                !m.units.iter().any(|u| u.mems.contains(t.os_index)),
                "{name}: memory target {} is a unit's memory",
                t.os_index
            );
        }
        // Every level nests in the one above.
        for w in m.hierarchy.levels.windows(2) {
            for child in &w[1].instances {
                assert!(
                    child.cpus.is_subset(&w[0].instances[child.parent].cpus),
                    "{name}: {} does not nest in {}",
                    w[1].name,
                    w[0].name
                );
            }
        }
        assert!(m.fingerprint().starts_with("mc1-"), "{name}");
    }
}

#[test]
fn opteron_6272_concerns_match_table_2_1_plus_package() {
    let m = xml("hwloc-xml/x86+linux-64amd64-4p2n4ca2co.xml");
    assert_eq!(concern_names(&m), ["numa", "package", "l2", "ic"]);
    let numa = &m.concerns[0];
    assert_eq!(numa.title, "NUMA + L3");
    assert_eq!((numa.count, numa.capacity), (8, Some((8, 8))));
    assert!(numa.lower_cost && numa.lower_can_raise_perf);
    let l2 = &m.concerns[2];
    assert_eq!((l2.count, l2.capacity), (32, Some((2, 2))));
    assert!(l2.lower_cost && l2.lower_can_raise_perf);
    let pkg = &m.concerns[1];
    assert!(!pkg.lower_cost && pkg.lower_can_raise_perf);
    assert!(m.concerns[3].filterable());
    assert_eq!(
        m.interconnect.source,
        InterconnectSource::Distances {
            matrix: "NUMALatency".into()
        }
    );
}

#[test]
fn thesis_intel_synthetic_has_core_and_numa_concerns() {
    let m = synthetic("pack:4 numa:1 l3:1 core:12 pu:2");
    assert_eq!(concern_names(&m), ["numa", "core", "ic"]);
    assert_eq!(m.concerns[0].title, "NUMA + Package + L3");
    assert_eq!(m.interconnect.source, InterconnectSource::Uniform);
    assert_eq!(m.units.len(), 4);
}

#[test]
fn offline_and_restricted_pus_are_excluded() {
    let m = xml("hwloc-xml/16em64t-4s2c2t-offlines.xml");
    assert_eq!(m.pus.usable.to_string(), "0-1,3-4,6,12,15");
    assert_eq!(m.pus.offline.len(), 9);
    let m = xml("hwloc-xml/16amd64-8n2c-cpusets.xml");
    // Nodes 4 and 5 have no allowed PU: memory only. PUs 0-1 and 12-15 have no node.
    assert_eq!(m.units.len(), 3);
    assert_eq!(m.pus.without_node.to_string(), "0-1,12-15");
    let targets: Vec<u32> = m.memory_targets.iter().map(|t| t.os_index).collect();
    assert_eq!(targets, [5, 4]);
}

#[test]
fn cpu_less_memory_is_never_a_unit() {
    // KNL SNC4 flat: each quadrant has DDR and MCDRAM with the same PUs.
    let m = xml("hwloc-xml/64intel64-fakeKNL-SNC4-hybrid.xml");
    assert_eq!(m.units.len(), 4);
    let mems: Vec<String> = m.units.iter().map(|u| u.mems.to_string()).collect();
    assert_eq!(mems, ["0", "1", "2", "3"]);
    assert_eq!(m.numa_attached[0].to_string(), "7");
    // POWER9 with four GPU memory nodes that have no PU at all.
    let m = xml("mpibind-xml/coral-butte-hwloc1.xml");
    assert_eq!(m.units.len(), 2);
    assert_eq!(m.memory_targets.len(), 4);
    // This export lost the NVLink affinity: every GPU node is at 80 from both CPU nodes.
    assert!(m.memory_targets.iter().all(|t| t.near.to_string() == "0,8"));
}

#[test]
fn hybrid_cores_load_with_heterogeneous_capacities() {
    let m = xml("hwloc-xml/x86-Intel-RaptorLake-Corei7-1370P.xml");
    let core = m.concerns.iter().find(|c| c.name == "core").unwrap();
    assert_eq!(core.capacity, Some((1, 2)));
    assert_eq!(m.cpu_kinds.len(), 2);
    assert!(m.pu_efficiency(0) > m.pu_efficiency(19));
}

#[test]
fn formats_v1_and_v2_of_one_machine_share_a_fingerprint() {
    let v1 = xml("hwloc-xml/16amd64-4distances.v1.xml");
    let v2 = xml("hwloc-xml/16amd64-4distances.xml");
    assert_eq!(v1.fingerprint(), v2.fingerprint());
    let a = xml("hwloc-xml/28intel64-2p2g7c-CoDgroups.v1.xml");
    let b = xml("hwloc-xml/28intel64-2p2g7c-CoDgroups.v1tov2.xml");
    assert_eq!(a.fingerprint(), b.fingerprint());
    // And different machines differ.
    assert_ne!(v1.fingerprint(), a.fingerprint());
}

#[test]
fn fingerprint_ignores_os_numbering_but_not_structure() {
    let a = synthetic("pack:2 numa:1 core:4 pu:2");
    let b = synthetic("pack:2 numa:1 core:4 pu:2(indexes=0,8,1,9,2,10,3,11,4,12,5,13,6,14,7,15)");
    assert_ne!(a.units[0].cpus, b.units[0].cpus);
    assert_eq!(a.fingerprint(), b.fingerprint());
    let c = synthetic("pack:2 numa:1 core:4 pu:1");
    assert_ne!(a.fingerprint(), c.fingerprint());
}

fn with_file(source: &str, json: &str) -> Result<Machine, MachineError> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("machine.json");
    std::fs::write(&p, json).unwrap();
    Machine::load(&TopologySource::Synthetic(source.into()), Some(&p))
}

#[test]
fn machine_file_overrides_concerns_and_changes_the_fingerprint() {
    let base = synthetic("pack:2 numa:2 l3:1 core:4 pu:2");
    assert_eq!(concern_names(&base), ["numa", "package", "core", "ic"]);
    let m = with_file(
        "pack:2 numa:2 l3:1 core:4 pu:2",
        r#"{"version": 1, "concerns": {"remove": ["package"],
            "set": {"core": {"lower_cost": true, "lower_can_raise_perf": false}},
            "add": [{"name": "nic", "node_weights": {"0": 1}, "lower_cost": false, "lower_can_raise_perf": false}]}}"#,
    )
    .unwrap();
    assert_eq!(concern_names(&m), ["numa", "core", "ic", "nic"]);
    assert!(!m.concerns[1].lower_can_raise_perf);
    assert_ne!(m.fingerprint(), base.fingerprint());
}

#[test]
fn machine_file_measured_interconnect() {
    let m = with_file(
        "pack:2 numa:1 core:2 pu:1",
        r#"{"version": 1, "interconnect": {"unit": "GB/s",
            "matrix": {"nodes": [1, 0], "values": [[20.0, 5.0], [4.0, 10.0]]},
            "notes": ["measured in a virtual machine"]}}"#,
    )
    .unwrap();
    assert_eq!(m.interconnect.pair(0, 1), Some(4.0));
    assert_eq!(m.interconnect.pair(1, 1), Some(20.0));
    assert!(matches!(
        m.interconnect.source,
        InterconnectSource::Measured { .. }
    ));
    assert!(
        m.notes
            .contains(&"interconnect: measured in a virtual machine".to_owned()),
        "{:?}",
        m.notes
    );
}

#[test]
fn machine_file_mismatches_are_named() {
    let err = with_file(
        "pack:2 numa:1 core:2 pu:1",
        r#"{"version": 1, "interconnect": {"unit": "GB/s", "matrix": {"nodes": [0, 7], "values": [[1.0, 1.0], [1.0, 1.0]]}}}"#,
    )
    .unwrap_err();
    assert!(
        matches!(&err, MachineError::Mismatch { detail, .. } if detail.contains("node 7")),
        "{err}"
    );
    let err = with_file(
        "pack:2 numa:1 core:2 pu:1",
        r#"{"version": 1, "concerns": {"set": {"l9": {"lower_cost": true, "lower_can_raise_perf": true}}}}"#,
    )
    .unwrap_err();
    assert!(matches!(&err, MachineError::Mismatch { detail, .. } if detail.contains("l9")));
    let err = with_file(
        "pack:2 numa:1 core:2 pu:1",
        r#"{"version": 1, "concerns": {"remove": ["numa"]}}"#,
    )
    .unwrap_err();
    assert!(matches!(
        err,
        MachineError::Hierarchy {
            error: HierarchyError::Essential { .. },
            ..
        }
    ));
}

#[test]
fn allocation_unit_override_splits_a_single_node_machine() {
    // EPYC 7443P in NPS1: one NUMA node, four CCDs with their own L3.
    let path = corpus_dir().join("sparecores-xml/vultr__vbm-24c-256gb-amd.xml");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.json");
    std::fs::write(&file, r#"{"version": 1, "allocation_unit": "l3"}"#).unwrap();
    let m = Machine::load(&TopologySource::XmlFile(path), Some(&file)).unwrap();
    assert_eq!(m.units.len(), 4);
    assert!(m.units.iter().all(|u| u.mems.to_string() == "0"));
    assert_eq!(m.concerns[0].name, "l3");
}
