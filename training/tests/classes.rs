//! `placed-train classes` end to end, as an operator builds a model across machine classes:
//! a corpus simulated from real topologies, the model built from it, and a class it never
//! saw checked against it.

use std::path::{Path, PathBuf};

use placed_models::{ModelFile, Provenance};

use crate::cli::placed_train;

fn topology(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/topologies")
        .join(name)
        .display()
        .to_string()
}

fn simulate(dir: &Path, out: &str, topologies: &[&str]) {
    let mut args = vec!["classes", "simulate", "--out-dir", out, "--families", "8"];
    let paths: Vec<String> = topologies.iter().map(|t| topology(t)).collect();
    for p in &paths {
        args.extend(["--topology", p.as_str()]);
    }
    let out = placed_train(&args, dir);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.matches("wrote SIMULATED data").count(),
        topologies.len(),
        "{text}"
    );
}

#[test]
fn a_model_across_classes_is_built_by_default_to_predict_in_time_and_checked_on_a_new_class() {
    let dir = tempfile::tempdir().expect("tempdir");
    simulate(
        dir.path(),
        "corpus",
        &[
            "hwloc-xml/32em64t-2n8c2t-pci-normalio.xml",
            "hwloc-xml/16amd64-4distances.xml",
            "hwloc-xml/memorysidecaches.xml",
        ],
    );
    let build = placed_train(
        &[
            "classes",
            "build",
            "--corpus",
            "corpus",
            "--out",
            "across-classes.json",
            "--cv-trees",
            "5",
        ],
        dir.path(),
    );
    assert!(build.status.success());
    let text = String::from_utf8_lossy(&build.stdout);
    assert!(
        text.contains("say nothing about any real machine"),
        "{text}"
    );
    assert!(text.contains("all cells"), "{text}");
    assert!(
        text.contains("the trees' relative spread"),
        "says its intervals scale with the spread: {text}"
    );
    let ModelFile::AcrossClasses(model) =
        ModelFile::load(&dir.path().join("across-classes.json")).expect("the model loads")
    else {
        panic!("not a model across classes");
    };
    assert_eq!(model.provenance(), Provenance::Simulated);
    assert_eq!(model.classes().len(), 3);
    assert!(model.spread_scale().is_some());
    // The final forest is classes build's default: small enough to predict within 50 us.
    let body: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("across-classes.json")).unwrap(),
    )
    .unwrap();
    let trees = body["model"]["forest"]["trees"]
        .as_array()
        .map(Vec::len)
        .expect("the file holds the forest's trees");
    assert_eq!(trees, placed_models::classes::FINAL_TREES);

    // A class none of the corpus is from (the Opteron 6272, four packages of two nodes),
    // checked as a host the model never saw; the corpus's classes most like it were
    // predicted better than no model, so it predicts (refusing is the models crate's
    // test).
    simulate(
        dir.path(),
        "fresh",
        &["hwloc-xml/x86+linux-64amd64-4p2n4ca2co.xml"],
    );
    let fresh = std::fs::read_dir(dir.path().join("fresh"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .expect("a data file");
    let check = placed_train(
        &[
            "check",
            "--model",
            "across-classes.json",
            "--data",
            fresh.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(check.status.success());
    let out = String::from_utf8_lossy(&check.stdout);
    assert!(out.contains("SIMULATED DATA"), "{out}");
    assert!(
        out.contains(&format!("{}-classes-v16", model.id())),
        "{out}"
    );
    assert!(out.contains("interval coverage"), "{out}");
}
