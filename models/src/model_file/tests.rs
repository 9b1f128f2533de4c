use std::path::Path;

use super::*;
use crate::features::Observation;
use crate::forest::ForestParams;
use crate::test_data::{self, FINGERPRINT, V};
use crate::train::{TrainOptions, fit};

fn model() -> Model {
    let options = TrainOptions {
        forest: ForestParams::new().n_trees(10),
        ..TrainOptions::default()
    };
    fit(&test_data::standard(), &options).expect("fits").0
}

fn saved(dir: &Path) -> (Model, PathBuf) {
    let model = model();
    let path = dir.join("model.json");
    std::fs::write(&path, model.file_text().expect("encodes")).expect("writable");
    (model, path)
}

fn this_machine() -> MachineClass {
    MachineClass {
        fingerprint: FINGERPRINT.into(),
        v: V,
    }
}

#[test]
fn a_saved_model_loads_identical_and_predicts_the_same() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (model, path) = saved(dir.path());
    let back = Model::load_for(&path, &this_machine()).expect("same machine");
    assert_eq!(back, model);
    assert_eq!(back.id(), model.id());
    let (b, p) = (
        Observation {
            value: 100.0,
            counters: [("ipc".to_owned(), 1.1)].into(),
            ..Observation::default()
        },
        Observation {
            value: 150.0,
            counters: [("ipc".to_owned(), 1.15)].into(),
            ..Observation::default()
        },
    );
    assert_eq!(
        back.predict(&b, &p).expect("ok"),
        model.predict(&b, &p).expect("ok")
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .expect("listable")
        .filter_map(Result::ok)
        .filter(|e| e.file_name() != "model.json")
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn another_machine_class_or_v_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, path) = saved(dir.path());
    let other = MachineClass {
        fingerprint: "other".into(),
        v: V,
    };
    assert!(matches!(
        Model::load_for(&path, &other),
        Err(ModelFileError::WrongMachine { expected, found, .. }) if expected == "other" && found == FINGERPRINT
    ));
    let bigger = MachineClass {
        v: V * 2,
        ..this_machine()
    };
    assert!(matches!(
        Model::load_for(&path, &bigger),
        Err(ModelFileError::WrongV { expected, found, .. }) if expected == V * 2 && found == V
    ));
}

fn rewrite(path: &Path, edit: impl FnOnce(String) -> String) {
    let text = std::fs::read_to_string(path).expect("readable");
    std::fs::write(path, edit(text)).expect("writable");
}

#[test]
fn a_truncated_file_is_refused_as_truncated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, path) = saved(dir.path());
    rewrite(&path, |t| t[..t.len() / 2].to_owned());
    assert!(matches!(
        Model::load(&path),
        Err(ModelFileError::Truncated { .. })
    ));
}

#[test]
fn garbage_is_refused_as_corrupt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, path) = saved(dir.path());
    rewrite(&path, |t| t.replacen('{', "<", 1));
    assert!(matches!(
        Model::load(&path),
        Err(ModelFileError::Corrupt { .. })
    ));
}

#[test]
fn a_changed_byte_that_still_parses_fails_the_checksum() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, path) = saved(dir.path());
    rewrite(&path, |t| t.replacen("\"v\":4", "\"v\":5", 1));
    assert!(matches!(
        Model::load(&path),
        Err(ModelFileError::ChecksumMismatch { .. })
    ));
}

#[test]
fn another_version_or_format_is_refused_as_such() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, path) = saved(dir.path());
    rewrite(&path, |t| t.replacen("\"version\":1", "\"version\":2", 1));
    assert!(matches!(
        Model::load(&path),
        Err(ModelFileError::UnsupportedVersion {
            found: 2,
            supported: 1,
            ..
        })
    ));
    rewrite(&path, |t| t.replacen("placed-model", "something-else", 1));
    assert!(
        matches!(Model::load(&path), Err(ModelFileError::NotAModel { found, .. }) if found == "something-else")
    );
}

#[test]
fn a_consistent_checksum_over_an_inconsistent_body_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (model, path) = saved(dir.path());
    let mut body = model.body.clone();
    body.probe = "no-such-placement".into();
    let raw = RawValue::from_string(serde_json::to_string(&body).expect("encodes")).expect("json");
    let envelope = Envelope {
        format: MODEL_FORMAT.into(),
        version: MODEL_VERSION,
        sha256: sha256_hex(raw.get().as_bytes()),
        model: &raw,
    };
    std::fs::write(&path, serde_json::to_string(&envelope).expect("encodes")).expect("writable");
    assert!(matches!(
        Model::load(&path),
        Err(ModelFileError::Inconsistent { .. })
    ));
}

#[test]
fn a_missing_file_names_its_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("absent.json");
    assert!(
        matches!(Model::load(&path), Err(ModelFileError::Io { action: "read", path: p, .. }) if p == path)
    );
}

#[test]
fn a_model_accepted_below_the_gate_says_so_after_a_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let passed = model();
    assert_eq!(passed.below_gate(), None);
    let failure = crate::gate::GateFailure::TooInaccurate {
        mean: 217.0,
        worst: 2134.0,
        max: 10.0,
    };
    let forced = passed
        .clone()
        .accepted_below_gate(failure.clone())
        .expect("consistent");
    assert_ne!(forced.id(), passed.id(), "the mark is part of the body");
    let path = dir.path().join("forced.json");
    std::fs::write(&path, forced.file_text().expect("encodes")).expect("writable");
    let back = Model::load_for(&path, &this_machine()).expect("loads");
    assert_eq!(back.below_gate(), Some(&failure));
    assert_eq!(back.id(), forced.id());
    // A model that passed writes no mark, so files from before the gate keep their ids.
    let plain = dir.path().join("plain.json");
    std::fs::write(&plain, passed.file_text().expect("encodes")).expect("writable");
    let text = std::fs::read_to_string(&plain).expect("readable");
    assert!(!text.contains("below_gate"), "{text}");
}

/// Writes `body` as a model file with a checksum that matches it.
fn write_body(path: &Path, body: &ModelBody) -> String {
    let raw = RawValue::from_string(serde_json::to_string(body).expect("encodes")).expect("json");
    let envelope = Envelope {
        format: MODEL_FORMAT.into(),
        version: MODEL_VERSION,
        sha256: sha256_hex(raw.get().as_bytes()),
        model: &raw,
    };
    std::fs::write(path, serde_json::to_string(&envelope).expect("encodes")).expect("writable");
    id_of(raw.get().as_bytes())
}

fn observations() -> (Observation, Observation) {
    let with_ipc = |value: f64| Observation {
        value,
        counters: [("ipc".to_owned(), 1.1)].into(),
        ..Observation::default()
    };
    (with_ipc(100.0), with_ipc(150.0))
}

#[test]
fn predicted_cells_carry_the_stored_calibrated_interval() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (model, path) = saved(dir.path());
    let back = Model::load(&path).expect("loads");
    let calibration = back.calibration().expect("a fitted model is calibrated");
    assert_eq!(Some(calibration), model.calibration());
    assert_eq!(calibration.level, crate::interval::DEFAULT_LEVEL);
    let (b, p) = observations();
    let prediction = back.predict(&b, &p).expect("ok");
    for cell in &prediction.placements {
        match cell.interval {
            None => assert!(cell.measured, "{cell:?}"),
            Some(i) => {
                assert!(!cell.measured);
                assert!(
                    i.low <= cell.relative && cell.relative <= i.high,
                    "{cell:?}"
                );
                assert!(i.high > i.low, "{cell:?}");
            }
        }
    }
    assert!(prediction.placements.iter().any(|c| c.interval.is_some()));
}

#[test]
fn a_model_file_from_before_intervals_loads_with_its_id_and_predicts_without_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut body = model().body;
    body.calibration = None;
    let path = dir.path().join("old.json");
    let id = write_body(&path, &body);
    let text = std::fs::read_to_string(&path).expect("readable");
    assert!(!text.contains("calibration"), "nothing written for it");
    let old = Model::load(&path).expect("an old file loads");
    assert_eq!(old.id(), id);
    assert!(old.calibration().is_none());
    let (b, p) = observations();
    let prediction = old.predict(&b, &p).expect("ok");
    assert!(prediction.placements.iter().all(|c| c.interval.is_none()));
}

#[test]
fn a_calibration_of_another_layout_is_set_aside_not_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut body = model().body;
    if let Some(c) = body.calibration.as_mut() {
        c.version = crate::interval::CALIBRATION_VERSION + 1;
    }
    let path = dir.path().join("future.json");
    let id = write_body(&path, &body);
    let loaded = Model::load(&path).expect("loads");
    assert_eq!(loaded.id(), id);
    assert!(loaded.calibration().is_none());
    // A current-layout calibration for other placements is damage, though.
    let mut body = model().body;
    if let Some(c) = body.calibration.as_mut() {
        c.placements.pop();
    }
    write_body(&path, &body);
    assert!(matches!(
        Model::load(&path),
        Err(ModelFileError::Inconsistent { .. })
    ));
}
