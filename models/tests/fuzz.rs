//! Fuzz targets for placed-models' parsers of outside input: training data (JSON lines) and
//! model files. Bounded and seeded for CI; see docs/testing.md for the long mode.

use crate::harness as fuzz;

use std::collections::BTreeMap;
use std::path::Path;

use placed_models::data::{DATA_FORMAT_VERSION, Dataset, MachineHeader, PlacementInfo, RunRecord};
use placed_models::features::Observation;
use placed_models::forest::ForestParams;
use placed_models::model::Model;
use placed_models::train::{TrainOptions, fit};
use proptest::prelude::*;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Four placements and two families of three workloads that behave alike within a family:
/// enough for the validator's every rule and for a forest to be fitted.
fn dataset() -> Dataset {
    let placements: Vec<PlacementInfo> = (0..4)
        .map(|i| PlacementInfo {
            id: format!("p{i}"),
            scores: vec![f64::from(i), 1.0],
        })
        .collect();
    let header = MachineHeader {
        version: DATA_FORMAT_VERSION,
        fingerprint: "fuzz-machine".into(),
        v: 4,
        concerns: vec!["a".into(), "b".into()],
        placements: placements.clone(),
    };
    let shapes = [
        ("flat-a", [1.0, 1.0, 0.98, 1.0]),
        ("flat-b", [1.0, 1.02, 1.0, 0.99]),
        ("scales-a", [1.0, 1.5, 2.0, 1.2]),
        ("scales-b", [1.0, 1.55, 2.1, 1.25]),
    ];
    let mut records = Vec::new();
    for (family, shape) in shapes {
        for w in 0..3u32 {
            let base = 1000.0 + 37.0 * f64::from(w);
            for (p, rel) in placements.iter().zip(shape) {
                let jitter = 1.0 + 0.01 * f64::from(w);
                let mut record = RunRecord::simulated(
                    "fuzz-machine",
                    4,
                    family,
                    &format!("{family}-{w}"),
                    &p.id,
                    base * rel * jitter,
                )
                .with_spread(base * 0.005)
                .with_counters(BTreeMap::from([("ipc".to_owned(), rel)]));
                record.unusable = (family == "flat-b" && w == 2).then(|| "too noisy".to_owned());
                records.push(record);
            }
        }
    }
    Dataset::from_parts(header, records).expect("the seed data set is valid")
}

fn saved(data: &Dataset, path: &Path) -> String {
    std::fs::write(path, data.to_jsonl().expect("encodes")).expect("writable");
    std::fs::read_to_string(path).expect("readable")
}

/// Accepted data saves to text that loads to the same data.
fn data_property(dir: &Path, text: &str) -> Result<(), TestCaseError> {
    match Dataset::from_jsonl(text, Path::new("data.jsonl")) {
        Ok(data) => {
            let first = saved(&data, &dir.join("a.jsonl"));
            let back = Dataset::from_jsonl(&first, Path::new("a.jsonl"))
                .map_err(|e| TestCaseError::fail(format!("saved data does not load: {e}")))?;
            prop_assert_eq!(saved(&back, &dir.join("b.jsonl")), first);
        }
        Err(e) => fuzz::check_error(&e)?,
    }
    Ok(())
}

#[test]
fn training_data_mutated_by_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = saved(&dataset(), &dir.path().join("seed.jsonl"));
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON lines"))
        .collect();
    // The file as one JSON array, so that a value-level edit can reach any line.
    let seed = Value::Array(lines);
    fuzz::run(
        "training-data-json",
        300,
        fuzz::mutated_json(vec![seed]),
        |doc| {
            let text = match doc {
                Value::Array(lines) => lines.iter().map(|l| format!("{l}\n")).collect(),
                other => other.to_string(),
            };
            data_property(dir.path(), &text)
        },
    );
}

#[test]
fn training_data_mutated_as_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = saved(&dataset(), &dir.path().join("seed.jsonl"));
    fuzz::run(
        "training-data-bytes",
        300,
        fuzz::mutated_text(vec![seed]),
        |text| data_property(dir.path(), &text),
    );
}

fn model() -> Model {
    let options = TrainOptions {
        forest: ForestParams::new().n_trees(4),
        ..TrainOptions::default()
    };
    fit(&dataset(), &options).expect("the seed model fits").0
}

/// A model file around `body`, with its checksum right, so that edits of the body reach
/// the checks behind the checksum.
fn signed(body: &Value) -> String {
    let body = body.to_string();
    let sha: String = Sha256::digest(body.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!(r#"{{"format":"placed-model","version":1,"sha256":"{sha}","model":{body}}}"#)
}

/// An accepted model predicts without a panic and saves to a file that loads as itself.
fn model_property(dir: &Path, bytes: &[u8]) -> Result<(), TestCaseError> {
    let path = dir.join("model.json");
    std::fs::write(&path, bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
    match Model::load(&path) {
        Ok(model) => {
            let observation = |value| Observation {
                value,
                spread: 1.0,
                counters: BTreeMap::from([("ipc".to_owned(), 1.1)]),
            };
            if let Err(e) = model.predict(&observation(100.0), &observation(150.0)) {
                fuzz::check_error(&e)?;
            }
            // The id is a hash of the body's bytes, which this crate writes in its own
            // order: the first save may change it, the second must change nothing.
            let back = resaved(dir, &model)?;
            prop_assert_eq!(back.placements(), model.placements());
            prop_assert_eq!(
                (back.baseline(), back.probe()),
                (model.baseline(), model.probe())
            );
            prop_assert_eq!(resaved(dir, &back)?, back);
        }
        Err(e) => fuzz::check_error(&e)?,
    }
    Ok(())
}

fn resaved(dir: &Path, model: &Model) -> Result<Model, TestCaseError> {
    let again = dir.join("again.json");
    let text = model
        .file_text()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    std::fs::write(&again, text).map_err(|e| TestCaseError::fail(e.to_string()))?;
    Model::load(&again)
        .map_err(|e| TestCaseError::fail(format!("a saved model does not load: {e}")))
}

fn model_file(dir: &Path) -> String {
    let path = dir.join("seed.json");
    std::fs::write(&path, model().file_text().expect("encodes")).expect("writable");
    std::fs::read_to_string(path).expect("readable")
}

#[test]
fn model_files_with_mutated_bodies_signed_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file: Value = serde_json::from_str(&model_file(dir.path())).expect("JSON");
    let body = file["model"].clone();
    fuzz::run(
        "model-file-body",
        300,
        fuzz::mutated_json(vec![body]),
        |body| model_property(dir.path(), signed(&body).as_bytes()),
    );
}

#[test]
fn model_files_mutated_as_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = model_file(dir.path()).into_bytes();
    fuzz::run(
        "model-file-bytes",
        300,
        fuzz::mutated(vec![seed]),
        |bytes| model_property(dir.path(), &bytes),
    );
}

/// Found by `model_files_with_mutated_bodies_signed_again`: serde's complaint about a
/// mistyped string quoted it whole, so the message was as long as the string.
#[test]
fn model_file_error_quotes_a_long_string_cut() {
    let dir = tempfile::tempdir().expect("tempdir");
    let body = Value::String("x".repeat(100_000));
    let path = dir.path().join("model.json");
    std::fs::write(&path, signed(&body)).expect("writable");
    let err = Model::load(&path).expect_err("not a model body");
    let line = fuzz::message(&err);
    assert!(line.contains("is corrupt"), "{line}");
    assert!(line.len() < 600, "{} bytes", line.len());
}

/// Found by `training_data_mutated_by_line` and `training_data_mutated_as_bytes`: a long
/// placement id or family was quoted whole by every later problem ("unknown placement id",
/// "is in family ... here but ... earlier").
#[test]
fn training_data_with_a_long_name_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = saved(&dataset(), &dir.path().join("seed.jsonl"));
    let long = "A".repeat(100_000);
    let edited = text.replacen(
        "\"family\":\"flat-a\"",
        &format!("\"family\":\"{long}\""),
        1,
    );
    let err = Dataset::from_jsonl(&edited, Path::new("data.jsonl")).expect_err("too long");
    let line = fuzz::message(&err);
    assert!(
        line.contains("family \"AAAA"),
        "{}",
        &line[..200.min(line.len())]
    );
    assert!(
        line.contains("is 100000 characters long"),
        "{}",
        &line[..200.min(line.len())]
    );
    assert!(line.len() < 400, "{} bytes", line.len());
}

/// Found by `model_files_with_mutated_bodies_signed_again` in the long mode: a model
/// file's counter name, longer than training data allows, was quoted whole by every
/// prediction ("the model needs counter ...").
#[test]
fn model_file_with_a_long_counter_name_is_inconsistent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut body: Value =
        serde_json::from_str::<Value>(&model_file(dir.path())).expect("JSON")["model"].clone();
    let features = body["features"].as_array_mut().expect("features");
    features.push(
        serde_json::json!({"counter": {"observed_in": "baseline", "name": "x".repeat(100_000)}}),
    );
    let path = dir.path().join("model.json");
    std::fs::write(&path, signed(&body)).expect("writable");
    let err = Model::load(&path).expect_err("a name past the bound");
    let line = fuzz::message(&err);
    assert!(
        line.contains("inconsistent: a name of 100000 characters"),
        "{}",
        &line[..200.min(line.len())]
    );
    assert!(line.len() < 400, "{} bytes", line.len());
}
