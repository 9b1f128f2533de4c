//! Fuzz targets for placed-training's parsers of outside input: the external-workload TOML
//! file an operator writes, and the collector's data file, which a resumed collection reads
//! back after a crash, a full disk or a hand edit. Bounded and seeded for CI; see
//! docs/testing.md for the long mode.

use crate::harness as fuzz;

use std::collections::BTreeMap;
use std::path::Path;

use placed_models::data::{
    DATA_FORMAT_VERSION, MachineHeader, PlacementInfo, Provenance, RunRecord,
};
use placed_training::collect::DataFile;
use placed_training::workloads::external;
use proptest::prelude::*;

/// The definitions shipped with the package: every field the parser knows, in real use.
const SHIPPED: &str = include_str!("../workloads/debian.toml");

/// An accepted workload file parses to the same definitions a second time, and each
/// definition's regex and placeholders were checked; a refused one says why, briefly.
fn workload_property(text: &str) -> Result<(), TestCaseError> {
    match external::parse(text) {
        Ok(defs) => {
            let again = external::parse(text)
                .map_err(|e| TestCaseError::fail(format!("accepted once, refused again: {e}")))?;
            prop_assert_eq!(&again, &defs);
            for def in &defs {
                prop_assert!(!def.name.trim().is_empty() && !def.command.is_empty());
                if let external::Metric::Output { regex, mode, .. } = &def.metric {
                    prop_assert!(
                        placed_host::observe::LinePattern::new(regex, *mode).is_ok(),
                        "unchecked regex {regex:?}"
                    );
                }
            }
        }
        Err(message) => {
            let e = std::io::Error::other(message);
            fuzz::check_error(&e)?;
        }
    }
    Ok(())
}

#[test]
fn workload_files_mutated_as_text() {
    fuzz::run(
        "workload-toml",
        300,
        fuzz::mutated_text(vec![SHIPPED.to_owned()]),
        |text| workload_property(&text),
    );
}

#[test]
fn workload_files_of_arbitrary_text() {
    fuzz::run("workload-toml-text", 300, fuzz::text(2_000), |text| {
        workload_property(&text)
    });
}

fn header() -> MachineHeader {
    MachineHeader {
        version: DATA_FORMAT_VERSION,
        fingerprint: "fuzz-machine".into(),
        v: 4,
        concerns: vec!["a".into(), "b".into()],
        placements: (0..3)
            .map(|i| PlacementInfo {
                id: format!("p{i}"),
                scores: vec![f64::from(i), 1.0],
            })
            .collect(),
    }
}

fn record(workload: &str, placement: &str, unusable: bool) -> RunRecord {
    let mut r = RunRecord::simulated("fuzz-machine", 4, "f", workload, placement, 1234.5)
        .with_spread(6.0)
        .with_counters(BTreeMap::from([("ipc".to_owned(), 1.25)]));
    // The value stays: the fuzz seed keeps a number the validator must ignore.
    r.unusable = unusable.then(|| "interval +/-40.0% after 3 tries".to_owned());
    r
}

/// A data file as the collector leaves it part-way: the header and four records.
fn collected(dir: &Path) -> Vec<u8> {
    let path = dir.join("seed.jsonl");
    let _ = std::fs::remove_file(&path);
    let mut file = DataFile::open(&path, &header(), Provenance::Simulated).expect("creatable");
    for (w, p, unusable) in [("a", "p0", false), ("a", "p1", false), ("b", "p0", true)] {
        file.append(&record(w, p, unusable)).expect("appendable");
    }
    drop(file);
    std::fs::read(&path).expect("readable")
}

/// Resuming from any file either refuses it, leaving every byte where it was, or continues
/// it: what it keeps is whole lines, and opening the result again resumes the same runs
/// with nothing more to drop.
fn resume_property(dir: &Path, bytes: &[u8]) -> Result<(), TestCaseError> {
    let path = dir.join("data.jsonl");
    let write = |b: &[u8]| std::fs::write(&path, b).map_err(|e| TestCaseError::fail(e.to_string()));
    write(bytes)?;
    match DataFile::open(&path, &header(), Provenance::Simulated) {
        Ok(file) => {
            let done = file.done();
            let dropped = file.dropped_torn_line;
            drop(file);
            let kept = std::fs::read(&path).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(kept.ends_with(b"\n"), "a torn line was kept");
            if !dropped && bytes.ends_with(b"\n") {
                prop_assert_eq!(&kept[..], bytes, "an intact file was rewritten");
            }
            let again = DataFile::open(&path, &header(), Provenance::Simulated)
                .map_err(|e| TestCaseError::fail(format!("a resumed file is refused: {e}")))?;
            prop_assert!(again.resumed && !again.dropped_torn_line);
            prop_assert_eq!(again.done(), done);
        }
        Err(e) => {
            fuzz::check_error(&e)?;
            let after = std::fs::read(&path).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&after[..], bytes, "a refused file was changed");
        }
    }
    Ok(())
}

#[test]
fn collector_data_files_mutated_as_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = collected(dir.path());
    fuzz::run(
        "collector-data-bytes",
        300,
        fuzz::mutated(vec![seed]),
        |bytes| resume_property(dir.path(), &bytes),
    );
}

/// Found by `workload_files_mutated_as_text`: the TOML parser's message quotes the
/// offending line whole, so one long value made an error message of any length.
#[test]
fn workload_file_error_quotes_a_long_line_cut() {
    let text = format!("[[workload]]\nmin_window_s = {}\n", "A".repeat(100_000));
    let err = external::parse(&text).expect_err("not TOML");
    assert!(err.len() < 800, "{} bytes", err.len());
    assert!(err.contains("line 2"), "{err}");
    assert!(!err.contains('\n'), "{err}");
    let long_name = format!(
        "[[workload]]\nname = \"{}\"\nfamily = \"f\"\nunit = \"u\"\ncommand = []\nmetric = {{ source = \"output\", regex = \"x\" }}\n",
        "n".repeat(100_000)
    );
    let err = external::parse(&long_name).expect_err("an empty command");
    assert!(err.len() < 800, "{} bytes", err.len());
    assert!(err.contains("100000 characters in all"), "{err}");
}

/// Found by `collector_data_files_mutated_as_bytes` in the long mode: a resumed file whose
/// header names another machine class quoted that class whole.
#[test]
fn collector_mismatch_quotes_a_long_class_cut() {
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = String::from_utf8(collected(dir.path())).expect("UTF-8");
    let path = dir.path().join("data.jsonl");
    let long = "A".repeat(100_000);
    std::fs::write(&path, seed.replacen("fuzz-machine", &long, 1)).expect("writable");
    let err = DataFile::open(&path, &header(), Provenance::Simulated).expect_err("another class");
    let line = fuzz::message(&err);
    assert!(line.contains("machine class"), "{}", &line[..200]);
    assert!(
        line.contains("100000 characters in all"),
        "{}",
        &line[..200]
    );
    assert!(line.len() < 800, "{} bytes", line.len());
}
