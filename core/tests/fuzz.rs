//! Fuzz targets for placed-core's parsers of outside input: cpu lists, machine files and
//! hwloc XML (the pre-parse and hwloc behind it). Bounded and seeded for CI; see
//! docs/testing.md for the long mode.

use crate::harness as fuzz;

use std::path::{Path, PathBuf};

use placed_core::cpuset::{CpuSet, MAX_ID};
use placed_core::machine::{Machine, MachineFile, TopologySource};
use proptest::prelude::*;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A parsed list prints the way the kernel does and parses back to itself.
fn cpu_list_property(text: &str) -> Result<(), TestCaseError> {
    match text.parse::<CpuSet>() {
        Ok(set) => {
            let printed = set.to_string();
            let back: CpuSet = printed
                .parse()
                .map_err(|e| TestCaseError::fail(format!("{printed:?} does not parse: {e}")))?;
            prop_assert_eq!(&back, &set);
            prop_assert_eq!(back.to_string(), printed);
        }
        Err(e) => fuzz::check_error(&e)?,
    }
    Ok(())
}

#[test]
fn cpu_lists_from_arbitrary_text() {
    fuzz::run("cpu-list-text", 2_000, fuzz::text(64), |t| {
        cpu_list_property(&t)
    });
}

#[test]
fn cpu_lists_mutated_from_kernel_output() {
    let seeds = [
        "0-3,8,10-11\n",
        "0\n",
        "\n",
        "0-63\n",
        "1,3,5-7,9-65535",
        "0-1, 4 ,6",
        "0-191\n",
    ];
    let seeds = seeds.iter().map(|s| (*s).to_owned()).collect();
    fuzz::run("cpu-list-mutated", 2_000, fuzz::mutated_text(seeds), |t| {
        cpu_list_property(&t)
    });
}

#[test]
fn cpu_lists_round_trip() {
    let sets = prop::collection::btree_set(0..=MAX_ID, 0..64);
    fuzz::run("cpu-list-round-trip", 300, sets, |ids| {
        let set: CpuSet = ids.iter().copied().collect();
        let back: CpuSet =
            set.to_string()
                .parse()
                .map_err(|e: placed_core::cpuset::ParseIdSetError| {
                    TestCaseError::fail(e.to_string())
                })?;
        prop_assert_eq!(
            back.iter().collect::<Vec<_>>(),
            ids.into_iter().collect::<Vec<_>>()
        );
        Ok(())
    });
}

/// The JSON examples of docs/machine-file.md.
fn machine_file_examples() -> Vec<String> {
    let doc = std::fs::read_to_string(repo().join("docs/machine-file.md")).expect("the doc");
    let examples: Vec<String> = doc
        .split("```json\n")
        .skip(1)
        .filter_map(|block| block.split("```").next())
        .map(str::to_owned)
        .collect();
    assert!(
        !examples.is_empty(),
        "docs/machine-file.md has JSON examples"
    );
    examples
}

/// Two packages of two cores of two PUs, one NUMA node per package: the shape the doc's
/// example describes (nodes 0 and 1, PUs 0-7).
const SYNTHETIC: &str = "pack:2 numa:1 l3:1 core:2 pu:2";

/// A machine file is refused with a bounded message naming the problem, or applied to a
/// machine without a panic.
fn machine_file_property(dir: &Path, text: &[u8]) -> Result<(), TestCaseError> {
    let path = dir.join("machine.json");
    std::fs::write(&path, text).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let parsed = std::str::from_utf8(text).map(|t| MachineFile::parse(&path, t));
    if let Ok(Err(e)) = &parsed {
        fuzz::check_error(e)?;
    }
    match Machine::load(&TopologySource::Synthetic(SYNTHETIC.into()), Some(&path)) {
        Ok(m) => {
            prop_assert!(matches!(parsed, Ok(Ok(_))), "a machine from a refused file");
            prop_assert!(!m.fingerprint().is_empty());
        }
        Err(e) => fuzz::check_error(&e)?,
    }
    Ok(())
}

#[test]
fn machine_files_mutated_as_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let seeds = machine_file_examples()
        .iter()
        .map(|t| serde_json::from_str(t).expect("the doc's examples are JSON"))
        .collect();
    fuzz::run("machine-file-json", 500, fuzz::mutated_json(seeds), |doc| {
        machine_file_property(dir.path(), doc.to_string().as_bytes())
    });
}

#[test]
fn machine_files_mutated_as_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let seeds = machine_file_examples()
        .into_iter()
        .map(String::into_bytes)
        .collect();
    fuzz::run("machine-file-bytes", 500, fuzz::mutated(seeds), |bytes| {
        machine_file_property(dir.path(), &bytes)
    });
}

/// The corpus files small enough to mutate quickly, read once.
fn xml_seeds() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for sub in [
        "hwloc-xml",
        "hwloc-xml-derived",
        "mpibind-xml",
        "sparecores-xml",
    ] {
        let dir = repo().join("tests/topologies").join(sub);
        for entry in std::fs::read_dir(&dir).expect("the corpus") {
            let path = entry.expect("a corpus entry").path();
            let small = std::fs::metadata(&path).is_ok_and(|m| m.len() <= 32 * 1024);
            if path.extension().is_some_and(|e| e == "xml") && small {
                seeds.push(std::fs::read(&path).expect("a corpus file"));
            }
        }
    }
    assert!(seeds.len() >= 5, "the XML corpus has small files");
    seeds
}

/// Whatever an XML file holds, loading it gives a machine or a bounded error, never a
/// panic or a crash inside hwloc.
fn xml_property(dir: &Path, bytes: &[u8]) -> Result<(), TestCaseError> {
    let path = dir.join("topology.xml");
    std::fs::write(&path, bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
    match Machine::load(&TopologySource::XmlFile(path), None) {
        Ok(m) => prop_assert!(!m.fingerprint().is_empty()),
        Err(e) => fuzz::check_error(&e)?,
    }
    Ok(())
}

#[test]
fn hwloc_xml_mutated_from_the_corpus() {
    let dir = tempfile::tempdir().expect("tempdir");
    fuzz::run("hwloc-xml", 300, fuzz::mutated(xml_seeds()), |bytes| {
        xml_property(dir.path(), &bytes)
    });
}

#[test]
fn hwloc_xml_arbitrary_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    fuzz::run("hwloc-xml-bytes", 200, fuzz::bytes(512), |bytes| {
        xml_property(dir.path(), &bytes)
    });
}

/// Found by `hwloc_xml_mutated_from_the_corpus`: a bitmap attribute starting with a comma
/// made hwloc's `hwloc_bitmap_sscanf` fail an assertion, aborting the process (SIGABRT).
#[test]
fn hwloc_bitmap_with_a_leading_comma_is_refused_not_aborted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let seed =
        std::fs::read_to_string(repo().join("tests/topologies/hwloc-xml/16em64t-4s2c2t.xml"))
            .expect("a corpus file");
    for (bad, shown) in [
        (",0x1", "\",0x1\""),
        ("", "\"\""),
        ("0x1,0xzz", "\"0x1,0xzz\""),
    ] {
        let xml = seed.replacen("cpuset=\"0x", &format!("cpuset=\"{bad}\" x=\"0x"), 1);
        let path = dir.path().join("bad.xml");
        std::fs::write(&path, xml).expect("writable");
        let err = Machine::load(&TopologySource::XmlFile(path), None)
            .expect_err("a malformed bitmap is refused");
        let line = fuzz::message(&err);
        assert!(
            line.contains(&format!("malformed cpuset {shown}")),
            "{line}"
        );
    }
}

/// Found by `cpu_lists_mutated_from_kernel_output`: a refused list was quoted whole, so a
/// long one (from a state or machine file) made an error message of any length.
#[test]
fn cpu_list_error_quotes_a_long_list_cut() {
    let long = format!("{}-3", "A".repeat(100_000));
    let err = long.parse::<CpuSet>().expect_err("not a list");
    let line = err.to_string();
    assert!(line.len() < 400, "{} bytes", line.len());
    assert!(line.contains("100002 characters in all"), "{line}");
}

/// Found by `hwloc_xml_mutated_from_the_corpus` in the long mode: the XML parser's
/// complaint about a mismatched closing tag quoted the tag name whole.
#[test]
fn malformed_xml_error_quotes_a_long_tag_cut() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bad.xml");
    let xml = format!(
        "<topology version=\"2.0\"><object></{}>",
        "A".repeat(100_000)
    );
    std::fs::write(&path, xml).expect("writable");
    let err = Machine::load(&TopologySource::XmlFile(path), None).expect_err("not XML");
    let line = fuzz::message(&err);
    assert!(
        line.contains("is not well-formed XML"),
        "{}",
        &line[..200.min(line.len())]
    );
    assert!(line.len() < 600, "{} bytes", line.len());
}

/// Found by `hwloc_xml_mutated_from_the_corpus` in the long mode: the pre-parse quoted an
/// object's type whole in its refusals.
#[test]
fn hwloc_object_type_is_quoted_cut() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sets = [
        "cpuset",
        "complete_cpuset",
        "allowed_cpuset",
        "nodeset",
        "complete_nodeset",
        "allowed_nodeset",
    ]
    .map(|a| format!("{a}=\"0x1\""))
    .join(" ");
    let long = "L".repeat(100_000);
    let xml = format!(
        "<topology version=\"2.0\"><object type=\"Machine\" {sets}><object type=\"{long}\" cpuset=\"0x1\"/></object></topology>"
    );
    let path = dir.path().join("bad.xml");
    std::fs::write(&path, xml).expect("writable");
    let err = Machine::load(&TopologySource::XmlFile(path), None).expect_err("no nodeset");
    let line = fuzz::message(&err);
    assert!(
        line.contains("has a cpuset but no"),
        "{}",
        &line[..200.min(line.len())]
    );
    assert!(line.len() < 600, "{} bytes", line.len());
}

/// Found by `hwloc_xml_mutated_from_the_corpus` in the long mode (case ~60,000 of seed
/// 12237743093617943786): an object with some of its sets but not the others (a v1
/// NUMANode with a nodeset and no cpuset or complete_cpuset; a Machine with no
/// complete_nodeset) made hwloc 2.9 crash with SIGSEGV, as `lstopo -i` does on the same
/// files. The pre-parse now refuses them, naming the object.
#[test]
fn hwloc_object_with_some_sets_but_not_all_is_refused_not_crashed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let corpus = |name: &str| {
        std::fs::read_to_string(repo().join("tests/topologies/hwloc-xml").join(name))
            .expect("a corpus file")
    };
    let v1 = corpus("28intel64-2p2g7c-CoDgroups.v1.xml");
    let v2 = corpus("28intel64-2p2g7c-CoDgroups.v1tov2.xml");
    let cut = |text: &str, ty: &str, attr: &str| {
        let at = text
            .find(&format!("<object type=\"{ty}\""))
            .expect("the type is in the file");
        let end = at + text[at..].find('>').expect("a whole tag");
        let tag = &text[at..end];
        let start = tag.find(&format!(" {attr}=\"")).expect("the attribute");
        let len = tag[start + 1..].find("\" ").expect("a quoted value") + 2;
        format!(
            "{}{}{}",
            &text[..at + start],
            &tag[start + len..],
            &text[end..]
        )
    };
    let cases = [
        (
            cut(
                &cut(&v1, "NUMANode", "cpuset"),
                "NUMANode",
                "complete_cpuset",
            ),
            "has a nodeset but no cpuset",
        ),
        (
            cut(&v1, "NUMANode", "complete_cpuset"),
            "no complete_cpuset",
        ),
        (cut(&v2, "Package", "complete_cpuset"), "no complete_cpuset"),
        (
            cut(&v2, "NUMANode", "complete_nodeset"),
            "no complete_nodeset",
        ),
    ];
    for (xml, want) in cases {
        let path = dir.path().join("bad.xml");
        std::fs::write(&path, &xml).expect("writable");
        let err = Machine::load(&TopologySource::XmlFile(path), None)
            .expect_err("an object with some of its sets");
        let line = fuzz::message(&err);
        assert!(line.contains(want), "{want}: {line}");
    }
}

/// Found by `hwloc_xml_mutated_from_the_corpus` in the long mode: hwloc keeps any number as
/// a distance matrix's kind, and hwlocality panics ("hwloc should not emit invalid kinds")
/// when one says both latency and bandwidth, or both from the OS and from the user.
#[test]
fn hwloc_distance_kind_that_is_impossible_is_refused_not_a_panic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = std::fs::read_to_string(
        repo().join("tests/topologies/hwloc-xml/x86+linux-64amd64-4p2n4ca2co.xml"),
    )
    .expect("a corpus file");
    assert!(seed.contains("kind=\"5\""), "the seed has a latency matrix");
    for (kind, want) in [
        ("13", "both latency and bandwidth"),
        ("7", "both from the OS and from the user"),
        ("-1", "expected a decimal number"),
        ("4096", "expected a decimal number"),
    ] {
        let path = dir.path().join("bad.xml");
        std::fs::write(
            &path,
            seed.replace("kind=\"5\"", &format!("kind=\"{kind}\"")),
        )
        .expect("writable");
        let err = Machine::load(&TopologySource::XmlFile(path), None)
            .expect_err("an impossible distance kind");
        let line = fuzz::message(&err);
        assert!(line.contains(want), "{kind}: {line}");
    }
    let path = dir.path().join("good.xml");
    std::fs::write(&path, seed.replace("kind=\"5\"", "kind=\"6\"")).expect("writable");
    Machine::load(&TopologySource::XmlFile(path), None).expect("from the user, latency");
}
