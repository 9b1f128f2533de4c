//! `placed-train` end to end: simulate, fit, evaluate, and the errors people will meet.

use std::path::Path;
use std::process::{Command, Output};

use placed_models::{Model, Provenance};

const TOPOLOGY: &str = "pack:2 numa:2 l3:1 core:4 pu:2";

pub(crate) fn placed_train(args: &[&str], dir: &Path) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_placed-train"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("placed-train runs");
    eprintln!(
        "placed-train {args:?}: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn simulate_fit_evaluate_and_every_output_says_simulated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = placed_train(
        &[
            "simulate",
            "--synthetic",
            TOPOLOGY,
            "--vcpus",
            "8",
            "--families",
            "8",
            "--workloads-per-family",
            "3",
            "--out",
            "data.jsonl",
        ],
        dir.path(),
    );
    assert!(sim.status.success());
    assert!(stdout(&sim).contains("SIMULATED"));

    let fit = placed_train(
        &[
            "fit",
            "--data",
            "data.jsonl",
            "--out",
            "model.json",
            "--trees",
            "10",
            "--cv-trees",
            "5",
            // Eight small families leave the forest about 21% off: above the default gate,
            // and not what this test is about.
            "--max-error",
            "50",
        ],
        dir.path(),
    );
    assert!(fit.status.success());
    let summary = stdout(&fit);
    assert!(summary.contains("SIMULATED DATA"));
    assert!(summary.contains("probe candidates") && summary.contains("<- chosen"));
    assert!(
        summary.contains("prediction intervals: nominal 90%"),
        "{summary}"
    );
    let model = Model::load(&dir.path().join("model.json")).expect("a model file");
    assert_eq!(model.provenance(), Provenance::Simulated);
    assert_eq!(model.machine().v, 8);

    let eval = placed_train(
        &[
            "evaluate",
            "--data",
            "data.jsonl",
            "--trees",
            "10",
            "--plots",
            "plots",
        ],
        dir.path(),
    );
    assert!(eval.status.success());
    let text = stdout(&eval);
    assert!(text.contains("SIMULATED DATA"));
    assert!(text.contains("per workload") && text.contains("per placement"));
    assert!(
        text.contains("prediction intervals (nominal 90%") && text.contains("coverage"),
        "{text}"
    );
    assert!(
        text.contains("categories assigned by the tree (linfa-trees) and by interval rules"),
        "{text}"
    );
    // Progress on stderr, plain text when stderr is not a terminal.
    let err = String::from_utf8_lossy(&eval.stderr);
    assert!(err.contains("probe candidate 1 of "), "{err}");
    assert!(!err.contains('\x1b'), "{err}");
    let plots: Vec<_> = std::fs::read_dir(dir.path().join("plots"))
        .expect("plots written")
        .filter_map(Result::ok)
        .collect();
    assert_eq!(plots.len(), 8 * 3, "one plot per workload run");
    let svg = std::fs::read_to_string(plots[0].path()).expect("readable");
    assert!(svg.starts_with("<svg") && svg.contains("(SIMULATED)"));
}

#[test]
fn evaluate_holds_a_behaviour_out_and_reports_the_novelty_warning_on_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    simulate(dir.path(), TOPOLOGY, "8", "0.01");
    let mut args = vec![
        "evaluate",
        "--data",
        "data.jsonl",
        "--hold-out",
        "sim-cache-fit",
    ];
    args.extend(FAST);
    let out = placed_train(&args, dir.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    // The evaluation is of the other families only; the held-out ones are checked.
    assert!(text.contains("over 21 workload runs"), "{text}");
    assert!(
        text.contains("the model on the held-out families:"),
        "{text}"
    );
    assert!(
        text.contains("leave one behaviour out (SIMULATED data): held out sim-cache-fit (1 families, 3 runs); model trained on the other 21 runs"),
        "{text}"
    );
    let row = |label: &str| {
        text.lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label} row in {text}"))
            .to_owned()
    };
    assert!(
        row("held out ").split_whitespace().nth(2) == Some("3"),
        "{text}"
    );
    assert!(
        row("in distribution (out of fold)").contains(" 21 "),
        "{text}"
    );
    assert!(text.contains("novelty warning, out of fold: "), "{text}");

    let mut args = vec![
        "evaluate",
        "--data",
        "data.jsonl",
        "--hold-out",
        "sim-nothing",
    ];
    args.extend(FAST);
    let out = placed_train(&args, dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "no family of the data is in group \"sim-nothing\"; the groups are sim-bandwidth, "
        ),
        "{err}"
    );
}

#[test]
fn a_bad_data_file_exits_2_naming_the_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("bad.jsonl"), "{\"kind\":\"run\"}\n").expect("writable");
    let out = placed_train(&["evaluate", "--data", "bad.jsonl"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.jsonl:1"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
}

#[test]
fn a_missing_data_file_exits_3_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = placed_train(
        &["fit", "--data", "absent.jsonl", "--out", "m.json"],
        dir.path(),
    );
    // Not found, from the exit-code table shared with placed and placectl.
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("absent.jsonl"));
}

/// The daemon tells operators without a model to run `placed_models::train_command`:
/// that command must name a subcommand and flags `placed-train` has. `--help` at the end
/// makes clap check every argument before it without running the collection.
#[test]
fn the_command_the_daemon_suggests_is_one_placed_train_accepts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let suggested = placed_models::train_command(4, "/var/lib/placed/models");
    let mut args: Vec<&str> = suggested.split_whitespace().collect();
    assert_eq!(args.first(), Some(&"placed-train"), "{suggested}");
    args.remove(0);
    args.push("--help");
    let out = placed_train(&args, dir.path());
    assert!(out.status.success(), "`{suggested}` is refused");

    // And the check can fail: a flag placed-train lacks is refused before `--help`.
    let out = placed_train(&["train", "--install", "x", "--help"], dir.path());
    assert_eq!(out.status.code(), Some(2));
}

fn simulate(dir: &Path, topology: &str, vcpus: &str, noise: &str) {
    let sim = placed_train(
        &[
            "simulate",
            "--synthetic",
            topology,
            "--vcpus",
            vcpus,
            "--families",
            "8",
            "--workloads-per-family",
            "3",
            "--noise",
            noise,
            "--out",
            "data.jsonl",
        ],
        dir,
    );
    assert!(sim.status.success());
}

const FAST: &[&str] = &["--trees", "10", "--cv-trees", "5"];

fn fit(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["fit", "--data", "data.jsonl", "--out", "model.json"];
    args.extend(FAST);
    args.extend(extra);
    placed_train(&args, dir)
}

#[test]
fn a_model_below_the_gate_is_refused_unless_accepted_and_then_marked() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Measurement noise of +/-300%: nothing can be learned from it.
    simulate(dir.path(), TOPOLOGY, "8", "3.0");
    let refused = fit(dir.path(), &[]);
    assert_eq!(
        refused.status.code(),
        Some(4),
        "refused: the operator decides"
    );
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("model not installed"), "{err}");
    assert!(
        err.contains("--accept-inaccurate"),
        "says what to do: {err}"
    );
    assert!(
        stdout(&refused).contains("cross-validated error"),
        "the figures behind the refusal are shown"
    );
    assert!(!dir.path().join("model.json").exists(), "nothing written");

    let forced = fit(dir.path(), &["--accept-inaccurate"]);
    assert!(forced.status.success());
    assert!(stdout(&forced).contains("BELOW THE ACCURACY GATE"));
    let model = Model::load(&dir.path().join("model.json")).expect("written");
    assert!(model.below_gate().is_some());
}

#[test]
fn data_too_noisy_to_fit_is_refused_with_the_figures() {
    let dir = tempfile::tempdir().expect("tempdir");
    simulate(dir.path(), TOPOLOGY, "8", "0.01");
    // Every family but one measured too noisily, as on the emulated guest: one record of
    // each of their runs marked unusable, its value not a number.
    let path = dir.path().join("data.jsonl");
    let text = std::fs::read_to_string(&path).expect("readable");
    let mut marked = std::collections::HashSet::new();
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).expect("JSON");
            let family = v["family"].as_str().unwrap_or("").to_owned();
            let key = v["workload"].as_str().unwrap_or("").to_owned();
            if v["kind"] == "run" && family != "sim-compute-0" && marked.insert(key) {
                v["unusable"] = "95% interval wider than the bound".into();
                v["performance"]["value"] = serde_json::Value::Null;
            }
            v.to_string()
        })
        .collect();
    std::fs::write(&path, lines.join("\n") + "\n").expect("writable");
    let out = fit(dir.path(), &[]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("model not fitted: 3 of 24 workload runs are usable (21 measurement(s) recorded unusable"),
        "{err}"
    );
    assert!(err.contains("spanning 1 famil(ies)"), "{err}");
    assert!(!dir.path().join("model.json").exists());
}

#[test]
fn two_placements_are_nothing_to_predict_never_zero_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Two nodes of two cores, v = 2: one node, or one core on each.
    simulate(dir.path(), "pack:1 numa:2 l3:1 core:2 pu:1", "2", "0.01");
    let data = placed_models::Dataset::load(&dir.path().join("data.jsonl")).expect("data");
    assert_eq!(data.header().placements.len(), 2, "the case under test");
    let out = fit(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(4));
    let text = format!("{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("predicts nothing"), "{text}");
    for zero in [" 0.00 ", "0.00 / 0.00", "0.00%"] {
        assert!(
            !text.contains(zero),
            "no error figure over zero cells: {text}"
        );
    }
}

#[test]
fn check_applies_a_model_to_data_it_was_not_trained_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    simulate(dir.path(), TOPOLOGY, "8", "0.01");
    assert!(fit(dir.path(), &["--accept-inaccurate"]).status.success());
    // Another collection: other workloads of the same machine class and v.
    let other = placed_train(
        &[
            "simulate",
            "--synthetic",
            TOPOLOGY,
            "--vcpus",
            "8",
            "--families",
            "3",
            "--workloads-per-family",
            "2",
            "--seed",
            "7",
            "--out",
            "other.jsonl",
        ],
        dir.path(),
    );
    assert!(other.status.success());
    let out = placed_train(
        &["check", "--model", "model.json", "--data", "other.jsonl"],
        dir.path(),
    );
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert!(text.contains("SIMULATED DATA"), "{text}");
    assert!(text.contains("on 6 workload runs"), "{text}");
    assert!(
        text.contains("% mean, ") && text.contains("interval coverage"),
        "{text}"
    );
    assert!(
        text.contains("novelty: ") && text.contains("per workload"),
        "{text}"
    );
    assert_eq!(text.matches("(measured)").count(), 2, "{text}");

    // Data of another v is refused, naming both.
    simulate(dir.path(), TOPOLOGY, "4", "0.01");
    let out = placed_train(
        &["check", "--model", "model.json", "--data", "data.jsonl"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("v = 4") && err.contains("v = 8"), "{err}");
}

#[test]
fn a_model_that_passes_the_gate_is_written_unmarked() {
    let dir = tempfile::tempdir().expect("tempdir");
    simulate(dir.path(), TOPOLOGY, "8", "0.01");
    let out = fit(dir.path(), &["--max-error", "50"]);
    assert!(out.status.success());
    let model = Model::load(&dir.path().join("model.json")).expect("written");
    assert_eq!(model.below_gate(), None);
    assert!(!stdout(&out).contains("BELOW THE ACCURACY GATE"));
}

/// The placement with the most units: the data header lists fewest units first.
fn whole_machine_placement(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("data.jsonl")).expect("data written");
    let header: serde_json::Value =
        serde_json::from_str(text.lines().next().expect("a header")).expect("JSON header");
    header["placements"]
        .as_array()
        .and_then(|p| p.last())
        .and_then(|p| p["id"].as_str())
        .expect("placement ids")
        .to_owned()
}

#[test]
fn policies_prints_a_table_json_and_plots_all_marked_simulated() {
    let dir = tempfile::tempdir().expect("tempdir");
    simulate(dir.path(), TOPOLOGY, "8", "0.01");
    let whole = whole_machine_placement(dir.path());
    let mut args = vec![
        "policies",
        "--data",
        "data.jsonl",
        "--synthetic",
        TOPOLOGY,
        "--baseline",
        &whole,
        "--plots",
        "plots",
    ];
    args.extend(FAST);
    let out = placed_train(&args, dir.path());
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.contains("SIMULATED DATA"));
    assert!(text.contains(&format!("baseline placement {whole}")));
    let summary: Vec<&str> = text
        .lines()
        .filter(|l| l.contains('%') && !l.contains("sim-"))
        .filter(|l| l.starts_with("90%") || l.starts_with("100%") || l.starts_with("110%"))
        .collect();
    assert_eq!(summary.len(), 3 * 6, "one summary line per goal and policy");
    for policy in [
        "model",
        "model-lower-bound",
        "model-third-measurement",
        "smart-aggressive",
        "conservative",
        "one-placement",
    ] {
        assert_eq!(
            summary
                .iter()
                .filter(|l| l.contains(&format!(" {policy} ")))
                .count(),
            3,
            "{policy} at every goal"
        );
    }
    let workload_lines = text.lines().filter(|l| l.contains(" sim-")).count();
    assert_eq!(workload_lines, 3 * 24, "one line per goal and workload");
    let plots: Vec<_> = std::fs::read_dir(dir.path().join("plots"))
        .expect("plots written")
        .filter_map(Result::ok)
        .collect();
    assert_eq!(plots.len(), 3, "one plot per goal");
    for plot in &plots {
        let svg = std::fs::read_to_string(plot.path()).expect("readable");
        assert!(svg.starts_with("<svg") && svg.contains("(SIMULATED)"));
    }

    let mut args = vec![
        "policies",
        "--data",
        "data.jsonl",
        "--synthetic",
        TOPOLOGY,
        "--goals",
        "95",
        "--json",
    ];
    args.extend(FAST);
    let out = placed_train(&args, dir.path());
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is JSON"))
        .collect();
    assert!(lines.iter().all(|l| l["provenance"] == "simulated"));
    let kinds = |kind: &str| lines.iter().filter(|l| l["kind"] == kind).count();
    assert_eq!(kinds("summary"), 6, "one per policy at the one goal");
    assert_eq!(kinds("workload"), 6 * 24);
    // Only the third-measurement replay measures a third placement.
    for l in lines.iter().filter(|l| l["kind"] == "summary") {
        if l["policy"] != "model-third-measurement" {
            assert_eq!(l["third_measurements"], 0, "{l}");
        }
    }
    let conservative = lines
        .iter()
        .find(|l| l["kind"] == "summary" && l["policy"] == "conservative")
        .expect("conservative summary");
    assert_eq!(conservative["containers"], 1.0);
    assert!(
        conservative["shortfall_mean_percent"].is_null(),
        "not measured"
    );
    assert!(lines.iter().all(|l| l["goal"] == 0.95));
}

#[test]
fn policies_refuses_data_from_another_machine() {
    let dir = tempfile::tempdir().expect("tempdir");
    simulate(dir.path(), TOPOLOGY, "8", "0.01");
    let mut args = vec![
        "policies",
        "--data",
        "data.jsonl",
        "--synthetic",
        "pack:4 numa:2 l3:1 core:4 pu:2",
    ];
    args.extend(FAST);
    let out = placed_train(&args, dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the machine the data was collected on"));
}

/// SIMULATED data of `TOPOLOGY` for each size, in `data-<v>.jsonl`.
fn simulate_sizes(dir: &Path, sizes: &[&str]) {
    for v in sizes {
        let sim = placed_train(
            &[
                "simulate",
                "--synthetic",
                TOPOLOGY,
                "--vcpus",
                v,
                "--families",
                "6",
                "--workloads-per-family",
                "3",
                "--out",
                &format!("data-{v}.jsonl"),
            ],
            dir,
        );
        assert!(sim.status.success());
    }
}

#[test]
fn sizes_holds_each_size_out_and_writes_the_model_across_sizes() {
    let dir = tempfile::tempdir().unwrap();
    simulate_sizes(dir.path(), &["4", "8", "12"]);
    let mut args = vec![
        "sizes",
        "--data",
        "data-4.jsonl",
        "--data",
        "data-8.jsonl",
        "--out",
        "sizes.json",
    ];
    args.extend(FAST);
    let out = placed_train(&args, dir.path());
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.contains("SIMULATED"), "{text}");
    assert!(text.contains("wrote model across sizes"), "{text}");
    let model = placed_models::SizesModel::load(&dir.path().join("sizes.json")).unwrap();
    assert_eq!(model.sizes(), [4, 8]);
    assert_eq!(model.provenance(), Provenance::Simulated);
    assert!(text.contains(model.id()), "{text}");

    // Applied to a size it never saw, as the daemon applies it.
    let checked = placed_train(
        &["check", "--model", "sizes.json", "--data", "data-12.jsonl"],
        dir.path(),
    );
    assert!(checked.status.success());
    let text = stdout(&checked);
    assert!(
        text.contains(&format!("model {}-v12", model.id())),
        "{text}"
    );
    assert!(text.contains("interval coverage"), "{text}");

    // One size is nothing to leave out: refused as bad input, nothing written.
    let one = placed_train(
        &["sizes", "--data", "data-4.jsonl", "--out", "one.json"],
        dir.path(),
    );
    assert_eq!(one.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&one.stderr).contains("at least 2 sizes"),
        "{one:?}"
    );
    assert!(!dir.path().join("one.json").exists());
}

/// `sizes --fewest` replays the search `train --vcpus a,b,...` makes: the ends first, then
/// the middle, and what a size left to the model across sizes saves; a target nothing meets
/// collects every size.
#[test]
fn sizes_fewest_replays_which_sizes_train_would_collect() {
    let dir = tempfile::tempdir().unwrap();
    simulate_sizes(dir.path(), &["2", "4", "6", "8"]);
    let replay = |max_error: &str| {
        let mut args = vec!["sizes", "--fewest", "--max-error", max_error];
        // Given in any order.
        for file in [
            "data-8.jsonl",
            "data-2.jsonl",
            "data-6.jsonl",
            "data-4.jsonl",
        ] {
            args.extend(["--data", file]);
        }
        args.extend(FAST);
        placed_train(&args, dir.path())
    };

    let generous = replay("1000");
    assert!(generous.status.success(), "{generous:?}");
    let text = stdout(&generous);
    assert!(text.contains("SIMULATED"), "{text}");
    // 2..8: the middle as a ratio is 4.
    assert!(
        text.contains("collected, in order: v = 2, 8, 4\n"),
        "{text}"
    );
    assert!(text.contains("with v = 2, 4, 8: held out"), "{text}");
    assert!(text.contains("within the target"), "{text}");
    assert!(
        text.contains("left to the model across sizes: v = 6\n"),
        "{text}"
    );
    assert!(text.contains(" saved ("), "{text}");

    let strict = replay("0.0001");
    assert!(strict.status.success(), "{strict:?}");
    let text = stdout(&strict);
    assert!(
        text.contains("collected, in order: v = 2, 8, 4, 6\n"),
        "{text}"
    );
    assert!(
        text.contains("not within the target, collecting more"),
        "{text}"
    );
    assert!(
        text.contains("every size collected: the model across sizes never met the target"),
        "{text}"
    );

    // The same size twice is bad input, before anything is fitted.
    let mut args = vec!["sizes", "--fewest"];
    args.extend(["--data", "data-2.jsonl", "--data", "data-2.jsonl"]);
    let twice = placed_train(&args, dir.path());
    assert_eq!(twice.status.code(), Some(2), "{twice:?}");
    assert!(
        String::from_utf8_lossy(&twice.stderr).contains("two data files are for v = 2"),
        "{twice:?}"
    );
}

/// `train` with several sizes refuses, before collecting anything, what it cannot do: no
/// size this host tells placements apart for (exit 4), one `--out` for several sizes and a
/// size of 0 vCPUs (exit 2).
#[test]
fn train_of_several_sizes_refuses_before_collecting() {
    let few = |v: usize| {
        placed_training::collect::host_placements(None, v)
            .map_or(true, |(_, set)| set.placements.len() < 3)
    };
    if !(few(1) && few(2)) {
        eprintln!("skipped, because this host has three or more placements for v = 1 or 2");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let train = |extra: &[&str]| {
        let mut args = vec![
            "train",
            "--workloads",
            "selftest-spin",
            "--model-dir",
            "models",
        ];
        args.extend(extra);
        placed_train(&args, dir.path())
    };
    let none = train(&["--vcpus", "1,2"]);
    assert_eq!(none.status.code(), Some(4), "{none:?}");
    let text = stdout(&none);
    assert!(text.contains("v = 1: this host has"), "{text}");
    assert!(text.contains("not collected"), "{text}");
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("none of v = 1, 2 has three or more"),
        "{none:?}"
    );
    assert!(!dir.path().join("models").exists(), "nothing collected");

    let out = train(&["--vcpus", "1,2", "--out", "data.jsonl"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--out names one data file"));

    let zero = train(&["--vcpus", "0,2"]);
    assert_eq!(zero.status.code(), Some(2), "{zero:?}");
    assert!(
        String::from_utf8_lossy(&zero.stderr).contains("'0'"),
        "{zero:?}"
    );
}

#[test]
fn a_data_file_that_is_not_utf8_exits_2_naming_it_and_where() {
    let dir = tempfile::tempdir().expect("tempdir");
    simulate(dir.path(), TOPOLOGY, "4", "0.01");
    // One byte of the data made Latin-1 ("é" as 0xe9), as an editor in another encoding
    // would write it.
    let mut bytes = std::fs::read(dir.path().join("data.jsonl")).expect("simulated");
    let second_line = bytes
        .iter()
        .position(|&b| b == b'\n')
        .expect("a header line")
        + 1;
    bytes[second_line + 1] = 0xe9;
    std::fs::write(dir.path().join("latin1.jsonl"), &bytes).expect("writable");
    for args in [
        &["evaluate", "--data", "latin1.jsonl"][..],
        &["fit", "--data", "latin1.jsonl", "--out", "m.json"],
    ] {
        let out = placed_train(args, dir.path());
        // Malformed, like any other bad data file (it was 6, a failure, before).
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(
            err.contains(&format!(
                "latin1.jsonl:2: not UTF-8 text (invalid byte at offset {}",
                second_line + 1
            )),
            "{err}"
        );
    }
}

fn simulate_to(dir: &Path, out: &str, vcpus: &str, noise: &str, seed: &str) {
    let sim = placed_train(
        &[
            "simulate",
            "--synthetic",
            TOPOLOGY,
            "--vcpus",
            vcpus,
            "--families",
            "8",
            "--workloads-per-family",
            "3",
            "--noise",
            noise,
            "--seed",
            seed,
            "--out",
            out,
        ],
        dir,
    );
    assert!(sim.status.success());
}

#[test]
fn a_challenger_replaces_the_installed_model_only_when_it_is_better() {
    let dir = tempfile::tempdir().expect("tempdir");
    simulate_to(dir.path(), "data.jsonl", "8", "0.01", "0");
    assert!(fit(dir.path(), &["--accept-inaccurate"]).status.success());
    // A model of data too noisy to learn from, and held-out data neither was trained on.
    simulate_to(dir.path(), "noisy.jsonl", "8", "3.0", "3");
    let mut args = vec!["fit", "--data", "noisy.jsonl", "--out", "noisy.json"];
    args.extend(FAST);
    args.push("--accept-inaccurate");
    assert!(placed_train(&args, dir.path()).status.success());
    simulate_to(dir.path(), "held.jsonl", "8", "0.01", "7");
    let installed = std::fs::read(dir.path().join("model.json")).expect("the model");

    let refused = placed_train(
        &[
            "challenge",
            "--challenger",
            "noisy.json",
            "--champion",
            "model.json",
            "--data",
            "held.jsonl",
            "--install",
        ],
        dir.path(),
    );
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let text = stdout(&refused);
    assert!(
        text.contains("challenger") && text.contains("% mean"),
        "{text}"
    );
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("does not beat the installed"), "{err}");
    assert_eq!(
        std::fs::read(dir.path().join("model.json")).expect("the model"),
        installed,
        "a worse challenger must not be installed"
    );

    let better = placed_train(
        &[
            "challenge",
            "--challenger",
            "model.json",
            "--champion",
            "noisy.json",
            "--data",
            "held.jsonl",
            "--install",
        ],
        dir.path(),
    );
    assert!(better.status.success(), "{better:?}");
    assert_eq!(
        std::fs::read(dir.path().join("noisy.json")).expect("replaced"),
        installed
    );
}

#[test]
fn merge_drops_what_it_has_seen_and_refuses_another_size() {
    let dir = tempfile::tempdir().expect("tempdir");
    simulate_to(dir.path(), "a.jsonl", "8", "0.01", "0");
    simulate_to(dir.path(), "four.jsonl", "4", "0.01", "0");
    let out = placed_train(
        &[
            "merge", "--data", "a.jsonl", "--data", "a.jsonl", "--out", "m.jsonl",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{out:?}");
    let a = placed_models::Dataset::load(&dir.path().join("a.jsonl")).expect("a");
    let m = placed_models::Dataset::load(&dir.path().join("m.jsonl")).expect("merged");
    assert_eq!(m.records(), a.records());
    assert!(
        stdout(&out).contains(&format!("{} seen before dropped", a.records().len())),
        "{}",
        stdout(&out)
    );
    let other = placed_train(
        &[
            "merge",
            "--data",
            "a.jsonl",
            "--data",
            "four.jsonl",
            "--out",
            "m.jsonl",
        ],
        dir.path(),
    );
    assert_eq!(other.status.code(), Some(2), "{other:?}");
    let err = String::from_utf8_lossy(&other.stderr);
    assert!(err.contains("four.jsonl"), "{err}");
}

#[test]
fn fit_learns_from_production_data_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    simulate_to(dir.path(), "data.jsonl", "8", "0.01", "0");
    simulate_to(dir.path(), "other.jsonl", "8", "0.01", "7");
    // The other collection as the daemon would keep it: every run marked partial.
    let other = placed_models::Dataset::load(&dir.path().join("other.jsonl")).expect("other");
    let runs = {
        let mut w: Vec<(&str, u32)> = other
            .records()
            .iter()
            .map(|r| (r.workload.as_str(), r.run))
            .collect();
        w.sort_unstable();
        w.dedup();
        w.len()
    };
    let records = other
        .records()
        .iter()
        .cloned()
        .map(|mut r| {
            r.partial = true;
            r
        })
        .collect();
    let production =
        placed_models::Dataset::from_parts(other.header().clone(), records).expect("valid");
    std::fs::write(
        dir.path().join("production.jsonl"),
        production.to_jsonl().expect("encodes"),
    )
    .expect("writable");
    let out = fit(
        dir.path(),
        &["--accept-inaccurate", "--production", "production.jsonl"],
    );
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert!(
        text.contains(&format!("{runs} partial runs completed")),
        "{text}"
    );
}
