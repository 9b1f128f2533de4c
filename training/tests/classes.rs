//! `placed-train classes` end to end, as an operator builds a model across machine classes:
//! a corpus simulated from real topologies, the model built from it, a class it never saw
//! checked against it, and that class's host given a model of its own from the production
//! data the daemon kept while the prior decided (`fit --prior`).

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

fn simulate(dir: &Path, out: &str, families: &str, topologies: &[&str]) {
    let mut args = vec![
        "classes",
        "simulate",
        "--out-dir",
        out,
        "--families",
        families,
    ];
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

/// The model across classes built on three classes of the corpus (`across-classes.json`
/// in `dir`), and SIMULATED data of a class none of them is from (the Opteron 6272, four
/// packages of two nodes): its path.
fn built_with_a_new_class(dir: &Path) -> PathBuf {
    simulate(
        dir,
        "corpus",
        "8",
        &[
            "hwloc-xml/32em64t-2n8c2t-pci-normalio.xml",
            "hwloc-xml/16amd64-4distances.xml",
            "hwloc-xml/memorysidecaches.xml",
        ],
    );
    // More families than the corpus's, so that half of them make enough production runs
    // for a model of the host's own.
    simulate(
        dir,
        "fresh",
        "32",
        &["hwloc-xml/x86+linux-64amd64-4p2n4ca2co.xml"],
    );
    build_ran(placed_train(
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
        dir,
    ));
    std::fs::read_dir(dir.join("fresh"))
        .expect("the fresh class's directory")
        .map(|e| e.expect("a directory entry").path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .expect("a data file")
}

fn build_ran(build: std::process::Output) {
    assert!(build.status.success(), "{build:?}");
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
}

#[test]
fn a_model_across_classes_is_built_by_default_to_predict_in_time_and_checked_on_a_new_class() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fresh = built_with_a_new_class(dir.path());
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

    // The new class checked as a host the model never saw; the corpus's classes most like
    // it were predicted better than no model, so it predicts (refusing is the models
    // crate's test).
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

/// SIMULATED: a host of a class the model across classes never saw (the Opteron 6272) runs
/// half its families while the prior decides, and the daemon keeps their partial runs (the
/// prior's baseline and probe, and one other placement each, with the host's resources
/// line). `fit --prior` completes them with the prior and fits the host's own model on
/// them, in the prior's baseline and probe, SIMULATED like the prior. Its cross-validated
/// error is judged on what was measured only, so it does not claim the prior's completions
/// as its own accuracy: it stays close to what it does on the other half of the families.
/// `docs/models.md` ("From the prior to the host's own model") has the figures.
#[test]
fn a_host_the_prior_decided_on_gets_a_model_of_its_own_from_its_production_data() {
    use placed_models::check::check;
    use placed_models::{Dataset, Predictor as _};

    let dir = tempfile::tempdir().expect("tempdir");
    let fresh = built_with_a_new_class(dir.path());
    let data = Dataset::load(&fresh).expect("the new class's data");
    let ModelFile::AcrossClasses(prior) =
        ModelFile::load(&dir.path().join("across-classes.json")).expect("the model loads")
    else {
        panic!("not a model across classes");
    };
    let h = data.header();
    let prior = std::sync::Arc::<placed_models::ClassesModel>::from(prior)
        .for_host(
            &h.fingerprint,
            h.v,
            data.resources().expect("simulated data says its resources"),
            h.placements.clone(),
        )
        .expect("predicts the new class");
    // In the order the data names them, as `classes trial` takes them.
    let mut families: Vec<&str> = Vec::new();
    for r in data.records() {
        if !families.contains(&r.family.as_str()) {
            families.push(r.family.as_str());
        }
    }
    let (ran, test_families) = families.split_at(families.len() / 2);
    let production =
        placed_training::simulate::production_runs(&data, prior.baseline(), prior.probe(), |f| {
            ran.contains(&f)
        })
        .expect("valid");
    std::fs::write(
        dir.path().join("production.jsonl"),
        production.to_jsonl().expect("encodes"),
    )
    .expect("writes");

    let fit = placed_train(
        &[
            "fit",
            "--prior",
            "across-classes.json",
            "--production",
            "production.jsonl",
            "--out",
            "host.json",
            // What `classes trial` fits with: `classes build`'s final trees.
            "--trees",
            "50",
            "--cv-trees",
            "5",
            "--accept-inaccurate",
        ],
        dir.path(),
    );
    let out = String::from_utf8_lossy(&fit.stdout);
    assert!(fit.status.success(), "{fit:?}");
    assert!(
        out.contains(&format!(
            "{} partial runs completed by the model across classes",
            production.partial_runs()
        )),
        "{out}"
    );
    let ModelFile::PerSize(host) = ModelFile::load(&dir.path().join("host.json")).expect("loads")
    else {
        panic!("the host's model is a model of its class and size");
    };
    assert_eq!(
        host.provenance(),
        Provenance::Simulated,
        "trained on a simulated prior's completions"
    );
    assert_eq!(host.machine().fingerprint, h.fingerprint);
    assert_eq!(
        (host.baseline(), host.probe()),
        (prior.baseline(), prior.probe()),
        "measured where the prior measured"
    );

    let test_records = data
        .records()
        .iter()
        .filter(|r| test_families.contains(&r.family.as_str()))
        .cloned()
        .collect();
    let test = Dataset::from_parts(h.clone(), test_records)
        .and_then(|d| d.with_resources(data.resources().cloned().expect("resources")))
        .expect("valid");
    let summary = |m: &dyn placed_models::Predictor| {
        let report = check(m, &test).expect("checks");
        (report.overall().expect("cells"), report.coverage())
    };
    let (was, was_covered) = summary(&prior);
    let (is, is_covered) = summary(host.as_ref());
    eprintln!(
        "SIMULATED ({} placements, {} production runs of {} families, one cell besides the baseline and probe each; the other {} families whole): the prior {:.2}% mean / {:.2}% worst, coverage {:?}; the host's own model {:.2}% / {:.2}% (cross-validated {:.2}%), coverage {:?}",
        h.placements.len(),
        production.partial_runs(),
        ran.len(),
        test_families.len(),
        was.mean,
        was.worst,
        was_covered,
        is.mean,
        is.worst,
        host.accuracy().forest.mean,
        is_covered,
    );
    // Judged on the prior's completions too, the cross-validated error was a fraction of
    // this (2.6% against 9.7% on held-out runs in the closing note's trial).
    let cv = host.accuracy().forest;
    assert!(
        cv.mean >= 0.7 * is.mean,
        "cross-validated {cv:?}, on held-out runs {is:?}"
    );

    // The host's model challenges the prior on runs neither learned from: installed only
    // when it wins, and then beside the prior as the class's own model for the size (which
    // the daemon trusts first), the prior kept for other sizes and classes.
    std::fs::write(dir.path().join("test.jsonl"), test.to_jsonl().unwrap()).unwrap();
    let prior_text = std::fs::read(dir.path().join("across-classes.json")).unwrap();
    let challenge = |challenger: &str, champion: &str| {
        placed_train(
            &[
                "challenge",
                "--challenger",
                challenger,
                "--champion",
                champion,
                "--data",
                "test.jsonl",
                "--install",
            ],
            dir.path(),
        )
    };
    let own = dir.path().join(format!("{}-v{}.json", h.fingerprint, h.v));
    let judged = challenge("host.json", "across-classes.json");
    if is.mean < was.mean {
        assert!(judged.status.success(), "{judged:?}");
        assert!(own.exists(), "installed as the class's own model");
    } else {
        assert_eq!(judged.status.code(), Some(1), "{judged:?}");
        assert!(!own.exists());
    }
    assert_eq!(
        std::fs::read(dir.path().join("across-classes.json")).unwrap(),
        prior_text,
        "the prior is never replaced by a model of one class"
    );
    // A model across classes cannot replace a model of one class and size: refused before
    // anything is judged.
    let refused = challenge("across-classes.json", "host.json");
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("replaces only one of its kind"));
    assert!(refused.stdout.is_empty());

    // `classes trial` runs the same steps from the corpus and the class's data alone: the
    // prior built on the corpus, the first half of the families in production, the second
    // half the test. It finds the same figures.
    let fresh_arg = fresh.to_str().expect("a UTF-8 path");
    let half = test_families.len().to_string();
    let trial = placed_train(
        &[
            "classes",
            "trial",
            "--corpus",
            "corpus",
            "--data",
            fresh_arg,
            "--families",
            &half,
            "--test-families",
            &half,
            "--cv-trees",
            "5",
        ],
        dir.path(),
    );
    assert!(trial.status.success(), "{trial:?}");
    let table = String::from_utf8_lossy(&trial.stdout);
    assert!(
        table.contains("say nothing about any real machine"),
        "{table}"
    );
    let prior_row = format!("{:.2} / {:.2}", was.mean, was.worst);
    let host_row = format!(
        "{} {:>6} {:>15} {:>15}",
        half,
        production.partial_runs(),
        format!("{:.2} / {:.2}", is.mean, is.worst),
        format!("{:.2} / {:.2}", cv.mean, cv.worst)
    );
    assert!(table.contains(&prior_row), "{prior_row} in\n{table}");
    assert!(table.contains(&host_row), "{host_row} in\n{table}");
    // More families than the data has: refused by name before anything is built.
    let too_many = placed_train(
        &[
            "classes",
            "trial",
            "--corpus",
            "corpus",
            "--data",
            fresh_arg,
            "--families",
            "40",
        ],
        dir.path(),
    );
    assert_eq!(too_many.status.code(), Some(2), "{too_many:?}");
    assert!(
        String::from_utf8_lossy(&too_many.stderr).contains("has 32 workload families"),
        "{too_many:?}"
    );

    // Production data without the host's resources line (an older daemon's) cannot be
    // completed by the prior: refused by name, nothing written.
    let bare = Dataset::from_parts(h.clone(), production.records().to_vec()).expect("valid");
    std::fs::write(dir.path().join("bare.jsonl"), bare.to_jsonl().unwrap()).unwrap();
    let fit = placed_train(
        &[
            "fit",
            "--prior",
            "across-classes.json",
            "--production",
            "bare.jsonl",
            "--out",
            "bare.json",
        ],
        dir.path(),
    );
    assert_eq!(fit.status.code(), Some(2), "{fit:?}");
    let err = String::from_utf8_lossy(&fit.stderr);
    assert!(err.contains("bare.jsonl has no resources line"), "{err}");
    assert!(!dir.path().join("bare.json").exists());
}
