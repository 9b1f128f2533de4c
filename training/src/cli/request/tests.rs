use clap::Parser;
use linfa::ParamGuard;

use super::*;

fn final_trees(args: &[&str]) -> usize {
    let cli = Cli::try_parse_from(std::iter::once("placed-train").chain(args.iter().copied()))
        .expect("the flags parse");
    let options = match cli.validate().expect("the request is valid") {
        Request::Classes(ClassesRequest::Build { options, .. }) => options,
        Request::Fit { fitting, .. } => fitting.options,
        other => panic!("not a build or a fit: {other:?}"),
    };
    options.forest.check_ref().expect("valid forest").n_trees()
}

#[test]
fn the_model_across_classes_is_built_small_enough_to_predict_in_time_unless_told() {
    let build = ["classes", "build", "--corpus", "c", "--out", "m.json"];
    assert_eq!(final_trees(&build), placed_models::classes::FINAL_TREES);
    assert_eq!(final_trees(&[&build[..], &["--trees", "80"]].concat()), 80);
    // Every other model keeps the forest's default.
    assert_eq!(
        final_trees(&["fit", "--data", "d.jsonl", "--out", "m.json"]),
        DEFAULT_TREES
    );
}
