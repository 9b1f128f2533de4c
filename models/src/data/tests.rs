use std::path::Path;

use super::*;

const HEADER: &str = r#"{"kind":"machine","version":1,"fingerprint":"fp-a","v":4,"concerns":["cores","nodes"],"placements":[{"id":"n1","scores":[4,1]},{"id":"n2","scores":[4,2]}]}"#;

fn run(workload: &str, family: &str, placement: &str, value: &str) -> String {
    format!(
        r#"{{"kind":"run","fingerprint":"fp-a","v":4,"workload":"{workload}","family":"{family}","placement":"{placement}","performance":{{"value":{value},"unit":"ops/s","repetitions":5,"spread":1.5}},"counters":{{"ipc":1.2}},"provenance":"real"}}"#
    )
}

fn good() -> Vec<String> {
    vec![
        HEADER.to_owned(),
        run("a1", "a", "n1", "100"),
        run("a1", "a", "n2", "150"),
        run("b1", "b", "n1", "80"),
        run("b1", "b", "n2", "60"),
    ]
}

fn parse(lines: &[String]) -> Result<Dataset, DataError> {
    Dataset::from_jsonl(&lines.join("\n"), Path::new("test.jsonl"))
}

/// The line and problem of a refused file.
fn refused(lines: &[String]) -> (usize, Problem) {
    match parse(lines) {
        Err(DataError::Invalid { line, problem, .. }) => (line, problem),
        other => panic!("expected an invalid-line error, got {other:?}"),
    }
}

#[test]
fn a_valid_file_loads_with_its_provenance() {
    let data = parse(&good()).expect("valid");
    assert_eq!(data.records().len(), 4);
    assert_eq!(data.provenance(), Provenance::Real);
    assert_eq!(data.header().placements.len(), 2);
    assert_eq!(data.records()[0].counters.get("ipc"), Some(&1.2));
}

/// A host where every container of this size runs the same way: valid data, one column.
pub(crate) fn one_placement() -> Vec<String> {
    vec![
        HEADER.replace(r#",{"id":"n2","scores":[4,2]}"#, ""),
        run("a1", "a", "n1", "100"),
        run("b1", "b", "n1", "80"),
    ]
}

#[test]
fn a_one_placement_file_loads_but_no_placements_is_refused() {
    let d = parse(&one_placement()).expect("one placement is valid data");
    assert_eq!(d.header().placements.len(), 1);
    let mut lines = one_placement();
    lines[0] = HEADER.replace(
        r#"[{"id":"n1","scores":[4,1]},{"id":"n2","scores":[4,2]}]"#,
        "[]",
    );
    lines.truncate(1);
    assert!(matches!(refused(&lines), (1, Problem::BadHeader { .. })));
}

#[test]
fn blank_lines_are_skipped_but_counted() {
    let mut lines = good();
    lines.insert(1, String::new());
    lines[3] = run("a1", "a", "n9", "150");
    assert!(matches!(refused(&lines), (4, Problem::UnknownPlacement { id }) if id == "n9"));
}

#[test]
fn unknown_placement_names_its_line() {
    let mut lines = good();
    lines[2] = run("a1", "a", "n3", "150");
    assert!(matches!(refused(&lines), (3, Problem::UnknownPlacement { id }) if id == "n3"));
}

#[test]
fn nan_written_as_null_negative_and_zero_values_are_refused() {
    for (value, field) in [
        ("null", "performance.value"),
        ("-5", "performance.value"),
        ("0", "performance.value"),
    ] {
        let mut lines = good();
        lines[4] = run("b1", "b", "n2", value);
        match refused(&lines) {
            (5, Problem::InvalidValue { field: f, .. }) => assert_eq!(f, field, "value {value}"),
            other => panic!("value {value}: {other:?}"),
        }
    }
    let mut lines = good();
    lines[2] = lines[2].replace(r#""ipc":1.2"#, r#""ipc":-1"#);
    assert!(
        matches!(refused(&lines), (3, Problem::InvalidValue { field, .. }) if field == "counters.ipc")
    );
}

#[test]
fn a_literal_nan_is_a_parse_error_on_its_line() {
    let mut lines = good();
    lines[3] = run("b1", "b", "n1", "NaN");
    assert!(matches!(refused(&lines), (4, Problem::Parse(_))));
}

#[test]
fn a_workload_missing_a_placement_is_refused_at_its_first_line() {
    let mut lines = good();
    lines.remove(4);
    match refused(&lines) {
        (
            4,
            Problem::MissingPlacements {
                workload, missing, ..
            },
        ) => {
            assert_eq!(workload, "b1");
            assert_eq!(missing, vec!["n2".to_owned()]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn two_machine_classes_or_two_v_in_one_file_are_refused() {
    let mut lines = good();
    lines[3] = lines[3].replace("fp-a", "fp-b");
    assert!(matches!(
        refused(&lines),
        (4, Problem::MixedMachineClass { expected, found }) if expected == "fp-a" && found == "fp-b"
    ));
    let mut lines = good();
    lines[2] = lines[2].replace(r#""v":4"#, r#""v":8"#);
    assert!(matches!(
        refused(&lines),
        (
            3,
            Problem::MixedV {
                expected: 4,
                found: 8
            }
        )
    ));
}

#[test]
fn mixed_provenance_is_refused() {
    let mut lines = good();
    lines[3] = lines[3].replace(r#""provenance":"real""#, r#""provenance":"simulated""#);
    assert!(matches!(
        refused(&lines),
        (
            4,
            Problem::MixedProvenance {
                expected: Provenance::Real,
                found: Provenance::Simulated
            }
        )
    ));
}

#[test]
fn header_problems_are_refused() {
    let mut lines = good();
    lines.remove(0);
    assert!(matches!(refused(&lines), (1, Problem::MissingHeader)));

    let mut lines = good();
    lines.push(HEADER.to_owned());
    assert!(matches!(
        refused(&lines),
        (6, Problem::DuplicateHeader { first_line: 1 })
    ));

    let mut lines = good();
    lines[0] = HEADER.replace(r#""version":1"#, r#""version":2"#);
    assert!(matches!(
        refused(&lines),
        (
            1,
            Problem::UnsupportedVersion {
                found: 2,
                supported: 1
            }
        )
    ));

    let mut lines = good();
    lines[0] = HEADER.replace(r#"[4,2]"#, r#"[4]"#);
    assert!(matches!(refused(&lines), (1, Problem::BadHeader { .. })));

    assert!(matches!(
        refused(&[HEADER.to_owned()]),
        (1, Problem::NoRuns)
    ));
    assert!(matches!(refused(&[]), (0, Problem::Empty)));
}

#[test]
fn duplicates_and_family_conflicts_are_refused() {
    let mut lines = good();
    lines.push(run("a1", "a", "n1", "101"));
    assert!(matches!(
        refused(&lines),
        (6, Problem::DuplicateMeasurement { first_line: 2, .. })
    ));

    let mut lines = good();
    lines[2] = run("a1", "z", "n2", "150");
    assert!(matches!(
        refused(&lines),
        (3, Problem::FamilyConflict { .. })
    ));
}

#[test]
fn garbage_is_a_parse_error() {
    let mut lines = good();
    lines[1] = "{not json".to_owned();
    assert!(matches!(refused(&lines), (2, Problem::Parse(_))));
}

#[test]
fn save_then_load_round_trips_and_a_missing_file_names_its_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("data.jsonl");
    let data = parse(&good()).expect("valid");
    std::fs::write(&path, data.to_jsonl().expect("encodes")).expect("writable");
    let back = Dataset::load(&path).expect("readable");
    assert_eq!(back.header(), data.header());
    assert_eq!(back.records(), data.records());

    let missing = dir.path().join("nope.jsonl");
    match Dataset::load(&missing) {
        Err(DataError::Io { path, .. }) => assert_eq!(path, missing),
        other => panic!("{other:?}"),
    }
}

#[test]
fn from_parts_validates_like_a_file() {
    let data = parse(&good()).expect("valid");
    let mut records = data.records().to_vec();
    records[1].placement = "n7".into();
    match Dataset::from_parts(data.header().clone(), records) {
        Err(DataError::Invalid {
            line: 3,
            problem: Problem::UnknownPlacement { .. },
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_unusable_record_loads_without_a_number_and_its_run_is_left_out_of_fitting() {
    let mut lines = good();
    lines.push(run("c1", "c", "n1", "90"));
    lines.push(run("c1", "c", "n2", "null").replace(
        r#""provenance":"real""#,
        r#""provenance":"real","unusable":"interval +/-296% wider than +/-10%""#,
    ));
    let data = parse(&lines).expect("an unusable record is valid data");
    let unusable: Vec<&RunRecord> = data.unusable().collect();
    assert_eq!(unusable.len(), 1);
    assert!(unusable[0].performance.value.is_nan());
    assert!(!data.run_is_usable("c1", 0));
    assert!(data.run_is_usable("a1", 0));
    let table = crate::table::PerformanceTable::new(&data, 0);
    let rows: Vec<&str> = table.rows().iter().map(|r| r.workload.as_str()).collect();
    assert_eq!(rows, ["a1", "b1"], "c1 has no complete vector");
    // Written back as null with its reason, read back the same.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("d.jsonl");
    std::fs::write(&path, data.to_jsonl().expect("encodes")).expect("writable");
    let text = std::fs::read_to_string(&path).expect("readable");
    assert!(
        text.contains(r#""value":null"#) && text.contains("+/-296%"),
        "{text}"
    );
    assert_eq!(Dataset::load(&path).expect("loads").unusable().count(), 1);
    // Without the mark, a missing number is still refused.
    let mut bad = good();
    bad.push(run("c1", "c", "n1", "null"));
    assert!(matches!(refused(&bad).1, Problem::InvalidValue { .. }));
}

/// An unusable record of `workload` in `placement`.
fn unusable_run(workload: &str, family: &str, placement: &str) -> String {
    run(workload, family, placement, "null").replace(
        r#""provenance":"real""#,
        r#""provenance":"real","unusable":"interval +/-40% wider than +/-10%""#,
    )
}

#[test]
fn a_usable_measurement_after_an_unusable_one_of_the_same_key_wins() {
    let mut lines = good();
    lines.push(run("c1", "c", "n1", "90"));
    lines.push(unusable_run("c1", "c", "n2"));
    // A resumed collection measured it again: first still unusable, then usable.
    lines.push(unusable_run("c1", "c", "n2"));
    lines.push(run("c1", "c", "n2", "120"));
    let data = parse(&lines).expect("a measurement again is not a duplicate");
    assert_eq!(data.superseded(), 2);
    assert_eq!(data.unusable().count(), 0);
    assert!(data.run_is_usable("c1", 0));
    let kept: Vec<&RunRecord> = data
        .records()
        .iter()
        .filter(|r| r.workload == "c1")
        .collect();
    assert_eq!(kept.len(), 2);
    // In the place of the key's first line, with the later value.
    assert_eq!(kept[1].placement, "n2");
    assert_eq!(kept[1].performance.value, 120.0);
    let table = crate::table::PerformanceTable::new(&data, 0);
    let rows: Vec<&str> = table.rows().iter().map(|r| r.workload.as_str()).collect();
    assert_eq!(rows, ["a1", "b1", "c1"]);
}

#[test]
fn an_unusable_measurement_after_a_usable_one_is_ignored_and_two_usable_ones_are_refused() {
    let mut lines = good();
    lines.push(unusable_run("a1", "a", "n2"));
    let data = parse(&lines).expect("valid");
    assert_eq!(data.superseded(), 1);
    assert!(data.run_is_usable("a1", 0));
    assert_eq!(data.records().len(), 4);

    let mut lines = good();
    lines.push(run("a1", "a", "n2", "151"));
    match refused(&lines) {
        (6, Problem::DuplicateMeasurement { first_line: 3, .. }) => {}
        other => panic!("{other:?}"),
    }
    // Two unusable ones: the last says why, and the run stays out.
    let mut lines = good();
    lines.push(run("c1", "c", "n1", "90"));
    lines.push(unusable_run("c1", "c", "n2"));
    lines.push(unusable_run("c1", "c", "n2").replace("+/-40%", "+/-30%"));
    let data = parse(&lines).expect("valid");
    let left: Vec<&RunRecord> = data.unusable().collect();
    assert_eq!(left.len(), 1);
    assert!(left[0].unusable.as_deref().unwrap().contains("+/-30%"));
    assert!(!data.run_is_usable("c1", 0));
}

#[test]
fn a_file_that_is_not_utf8_is_refused_with_its_line_and_offset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("latin1.jsonl");
    let mut bytes = format!("{HEADER}\n").into_bytes();
    let offset = bytes.len() + run("a1", "a", "n1", "100").find("a1").expect("a1");
    let mut second = run("a1", "a", "n1", "100").into_bytes();
    // "a1" as Latin-1 "\xe41": not UTF-8.
    let at = offset - bytes.len();
    second[at] = 0xe4;
    bytes.extend(second);
    std::fs::write(&path, &bytes).expect("writable");
    match Dataset::load(&path) {
        Err(DataError::Invalid {
            line: 2,
            problem: Problem::NotUtf8 { offset: found },
            ..
        }) => assert_eq!(found, offset),
        other => panic!("expected line 2 refused as not UTF-8, got {other:?}"),
    }
}

#[test]
fn the_resources_line_reads_back_and_is_checked() {
    let data = crate::test_data::class(4);
    let text = String::from_utf8(data.to_jsonl().unwrap()).unwrap();
    let second = text.lines().nth(1).unwrap();
    assert!(second.starts_with("{\"kind\":\"resources\""), "{second}");
    let back = Dataset::from_jsonl(&text, Path::new("c.jsonl")).unwrap();
    assert_eq!(back.resources(), data.resources());
    // Twice is refused, naming both lines.
    let twice = text.replacen(second, &format!("{second}\n{second}"), 1);
    let e = Dataset::from_jsonl(&twice, Path::new("c.jsonl")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "c.jsonl:3: a second resources line (the first is on line 2)"
    );
    // Resources of other placements are refused.
    let other = crate::test_data::class(8);
    let wrong = text.replacen(
        second,
        std::str::from_utf8(&line(&LineRef::Resources(other.resources().unwrap())).unwrap())
            .unwrap()
            .trim_end(),
        1,
    );
    let e = Dataset::from_jsonl(&wrong, Path::new("c.jsonl")).unwrap_err();
    assert!(e.to_string().contains("bad resources line"), "{e}");
}

/// A production record: the run's other placements were never measured.
fn partial_run(workload: &str, placement: &str, value: &str) -> String {
    run(workload, "p", placement, value).replace(
        r#""provenance":"real""#,
        r#""provenance":"real","partial":true,"metric":"pushed","host":"h1","labels":{"placed.io/family":"p"}"#,
    )
}

#[test]
fn a_partial_run_may_miss_placements_but_a_whole_run_may_not() {
    let mut lines = good();
    lines.push(partial_run("p1", "n2", "70"));
    let data = parse(&lines).expect("a partial run is valid");
    let p = data.records().last().expect("records");
    assert!(p.partial && data.run_is_partial("p1", 0));
    assert_eq!(p.host.as_deref(), Some("h1"));
    assert_eq!(p.metric.as_deref(), Some("pushed"));
    assert_eq!(
        p.labels.get("placed.io/family").map(String::as_str),
        Some("p")
    );
    // Left out of fitting whole vectors, the complete runs kept.
    assert!(!data.run_is_usable("p1", 0));
    assert!(data.run_is_usable("a1", 0));
    // The same record unmarked is an incomplete run, refused as before.
    lines.push(run("q1", "q", "n1", "70"));
    assert!(matches!(
        refused(&lines),
        (7, Problem::MissingPlacements { .. })
    ));
}

#[test]
fn the_new_fields_round_trip_and_old_records_write_as_before() {
    let mut lines = good();
    lines.push(partial_run("p1", "n2", "70"));
    let data = parse(&lines).expect("valid");
    let text = String::from_utf8(data.to_jsonl().expect("encodes")).expect("utf8");
    let back = Dataset::from_jsonl(&text, Path::new("back.jsonl")).expect("reads back");
    assert_eq!(back.records(), data.records());
    // A record of a whole run carries none of the production fields.
    let first = text.lines().nth(1).expect("a run line");
    for field in ["partial", "metric", "labels", "host"] {
        assert!(!first.contains(field), "{first}");
    }
}
