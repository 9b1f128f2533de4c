use linfa::prelude::*;
use ndarray::{Array2, array};

use super::*;

/// x = 0..100, y = 1 below 50 and 2 from 50: one split explains everything.
fn step() -> (Array2<f64>, Array2<f64>) {
    let x = Array2::from_shape_fn((100, 1), |(i, _)| i as f64);
    let y = x.mapv(|v| if v < 50.0 { 1.0 } else { 2.0 });
    (x, y)
}

fn train(params: ForestParams, x: &Array2<f64>, y: &Array2<f64>) -> Forest {
    params
        .fit(&DatasetBase::new(x.clone(), y.clone()))
        .expect("valid data")
}

#[test]
fn step_function_is_learnt_exactly_away_from_the_step() {
    let (x, y) = step();
    let forest = train(ForestParams::new().n_trees(20), &x, &y);
    for (at, expected) in [
        (0.0, 1.0),
        (20.0, 1.0),
        (45.0, 1.0),
        (55.0, 2.0),
        (99.0, 2.0),
    ] {
        let p = forest
            .predict_with_spread(array![at].view())
            .expect("1 feature");
        assert_eq!(p.mean[0], expected, "at x = {at}");
        assert_eq!(p.spread[0], 0.0, "every tree agrees at x = {at}");
    }
}

#[test]
fn two_outputs_follow_their_own_feature() {
    // y0 steps on x0 at 5, y1 steps on x1 at 3; the features are independent (a grid).
    let x = Array2::from_shape_fn((100, 2), |(i, f)| {
        if f == 0 {
            (i / 10) as f64
        } else {
            (i % 10) as f64
        }
    });
    let y = Array2::from_shape_fn((100, 2), |(i, o)| {
        if o == 0 {
            if x[[i, 0]] < 5.0 { 10.0 } else { 20.0 }
        } else if x[[i, 1]] < 3.0 {
            -1.0
        } else {
            1.0
        }
    });
    let forest = train(ForestParams::new().n_trees(30).bootstrap(false), &x, &y);
    for (x0, x1, y0, y1) in [
        (1.0, 1.0, 10.0, -1.0),
        (8.0, 1.0, 20.0, -1.0),
        (1.0, 8.0, 10.0, 1.0),
        (8.0, 8.0, 20.0, 1.0),
    ] {
        let p = forest
            .predict_with_spread(array![x0, x1].view())
            .expect("2 features");
        assert_eq!(p.mean.to_vec(), vec![y0, y1], "at ({x0}, {x1})");
    }
}

#[test]
fn constant_targets_give_a_single_leaf_with_their_value() {
    let x = Array2::from_shape_fn((30, 3), |(i, f)| (i * (f + 1)) as f64);
    let y = Array2::from_shape_fn((30, 2), |(_, o)| if o == 0 { 3.0 } else { 5.0 });
    let forest = train(ForestParams::new().n_trees(5), &x, &y);
    assert!(
        forest.trees.iter().all(|t| t.nodes.len() == 1),
        "nothing to split"
    );
    let p = forest
        .predict_with_spread(array![100.0, -3.0, 7.0].view())
        .expect("3 features");
    assert_eq!(p.mean.to_vec(), vec![3.0, 5.0]);
    assert_eq!(p.spread.to_vec(), vec![0.0, 0.0]);
}

fn noisy() -> (Array2<f64>, Array2<f64>) {
    // A deterministic pseudo-noise so the data needs many splits.
    let x = Array2::from_shape_fn((200, 3), |(i, f)| {
        ((i * 7919 + f * 104_729) % 1000) as f64 / 100.0
    });
    let y = Array2::from_shape_fn((200, 4), |(i, o)| {
        x[[i, 0]].sin() * (o as f64 + 1.0) + x[[i, 1]] * 0.1 + ((i * 31 + o) % 7) as f64 * 0.05
    });
    (x, y)
}

#[test]
fn same_seed_gives_the_same_forest_and_another_seed_another() {
    let (x, y) = noisy();
    let params = ForestParams::new().n_trees(10).max_features(0.5);
    let a = train(params.clone().seed(7), &x, &y);
    let b = train(params.clone().seed(7), &x, &y);
    let c = train(params.seed(8), &x, &y);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn thread_count_does_not_change_the_forest() {
    let (x, y) = noisy();
    let params = ForestParams::new().n_trees(12).max_features(0.5).seed(3);
    let on = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("thread pool")
            .install(|| train(params.clone(), &x, &y))
    };
    assert_eq!(on(1), on(3));
}

#[test]
fn depth_and_leaf_limits_hold() {
    let (x, y) = noisy();
    let shallow = train(ForestParams::new().n_trees(5).max_depth(Some(1)), &x, &y);
    assert!(
        shallow.trees.iter().all(|t| t.nodes.len() <= 3),
        "one split at most"
    );

    // A leaf of more than half the samples cannot be split off: the root stays a leaf and
    // predicts the mean.
    let (x, y) = step();
    let stump = train(
        ForestParams::new()
            .n_trees(1)
            .bootstrap(false)
            .min_samples_leaf(51),
        &x,
        &y,
    );
    let p = stump
        .predict_with_spread(array![0.0].view())
        .expect("1 feature");
    assert_eq!(p.mean[0], 1.5);
}

#[test]
fn every_leaf_holds_at_least_min_samples_leaf() {
    let (x, y) = noisy();
    let forest = train(
        ForestParams::new()
            .n_trees(3)
            .bootstrap(false)
            .min_samples_leaf(9),
        &x,
        &y,
    );
    for tree in &forest.trees {
        let mut counts = std::collections::HashMap::new();
        for row in x.rows() {
            let leaf = tree.leaf(row, y.ncols()).as_ptr();
            *counts.entry(leaf).or_insert(0) += 1;
        }
        assert!(counts.values().all(|&n| n >= 9), "{counts:?}");
    }
}

#[test]
fn out_of_bag_error_only_with_bootstrap_and_small_on_a_clean_step() {
    let (x, y) = step();
    let bagged = train(ForestParams::new().n_trees(30), &x, &y);
    let oob = bagged
        .out_of_bag()
        .expect("bootstrap measures out-of-bag error");
    assert_eq!(
        oob.samples, 100,
        "30 trees leave every sample out at least once"
    );
    assert!(oob.mean_absolute_error < 0.02, "{oob:?}");
    let whole = train(ForestParams::new().n_trees(3).bootstrap(false), &x, &y);
    assert_eq!(whole.out_of_bag(), None);
}

#[test]
fn spread_is_positive_where_trees_disagree() {
    let (x, y) = noisy();
    let forest = train(ForestParams::new().n_trees(20), &x, &y);
    let p = forest.predict_with_spread(x.row(17)).expect("3 features");
    assert!(p.spread.iter().any(|s| *s > 0.0), "{p:?}");
}

#[test]
fn linfa_predict_matches_the_mean_of_predict_with_spread() {
    let (x, y) = noisy();
    let forest = train(ForestParams::new().n_trees(8), &x, &y);
    let all: Array2<f64> = forest.predict(&x);
    assert_eq!(all.dim(), (200, 4));
    for r in [0, 99, 199] {
        let one = forest.predict_with_spread(x.row(r)).expect("3 features");
        for o in 0..4 {
            assert!((all[[r, o]] - one.mean[o]).abs() < 1e-12);
        }
    }
}

#[test]
fn bad_parameters_and_data_are_refused_with_their_reason() {
    let (x, y) = step();
    let fit = |p: ForestParams, x: Array2<f64>, y: Array2<f64>| p.fit(&DatasetBase::new(x, y));
    assert!(matches!(
        fit(ForestParams::new().n_trees(0), x.clone(), y.clone()),
        Err(ForestError::InvalidParam {
            name: "n_trees",
            ..
        })
    ));
    assert!(matches!(
        fit(ForestParams::new().max_features(0.0), x.clone(), y.clone()),
        Err(ForestError::InvalidParam {
            name: "max_features",
            ..
        })
    ));
    assert!(matches!(
        fit(
            ForestParams::new().min_samples_leaf(0),
            x.clone(),
            y.clone()
        ),
        Err(ForestError::InvalidParam {
            name: "min_samples_leaf",
            ..
        })
    ));
    let mut bad_y = y.clone();
    bad_y[[42, 0]] = f64::NAN;
    assert!(matches!(
        fit(ForestParams::new(), x.clone(), bad_y),
        Err(ForestError::NonFinite {
            what: "targets",
            row: 42
        })
    ));
    assert!(matches!(
        fit(
            ForestParams::new(),
            x.clone(),
            y.slice(ndarray::s![..10, ..]).to_owned()
        ),
        Err(ForestError::ShapeMismatch {
            records: 100,
            targets: 10
        })
    ));
    assert!(matches!(
        fit(
            ForestParams::new(),
            Array2::zeros((0, 1)),
            Array2::zeros((0, 1))
        ),
        Err(ForestError::Empty)
    ));
    let forest = train(ForestParams::new().n_trees(2), &x, &y);
    assert!(matches!(
        forest.predict_with_spread(array![1.0, 2.0].view()),
        Err(ForestError::FeatureCount {
            expected: 1,
            found: 2
        })
    ));
}

#[test]
fn a_damaged_tree_is_caught_by_check() {
    let (x, y) = step();
    let mut forest = train(ForestParams::new().n_trees(2), &x, &y);
    assert!(matches!(forest.check(1, 1), Ok(())));
    if let Some(tree::Node::Split { left, .. }) = forest.trees[0].nodes.first_mut() {
        *left = 0; // a loop back to the root
    }
    assert!(matches!(
        forest.check(1, 1),
        Err(ForestError::Inconsistent { .. })
    ));
    assert!(matches!(
        forest.check(2, 1),
        Err(ForestError::Inconsistent { .. })
    ));
}

#[test]
fn a_leaf_offset_that_would_overflow_is_caught_by_check() {
    let (x, y) = step();
    let mut forest = train(ForestParams::new().n_trees(1), &x, &y);
    let leaf = forest.trees[0]
        .nodes
        .iter_mut()
        .find(|n| matches!(n, tree::Node::Leaf { .. }));
    if let Some(tree::Node::Leaf { offset }) = leaf {
        *offset = usize::MAX;
    }
    assert!(matches!(
        forest.check(1, 1),
        Err(ForestError::Inconsistent { .. })
    ));
}
