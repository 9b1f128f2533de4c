use super::*;
use crate::test_data::{class, quick_options as options, sized};

fn corpus() -> Corpus {
    Corpus::new(&[class(2), class(4), class(8)], &options()).unwrap()
}

#[test]
fn every_class_is_predicted_by_the_others_beside_its_own_model() {
    let c = corpus();
    let a = c
        .leave_one_class_out(&ResourceDescriber::default(), &options())
        .unwrap();
    assert_eq!(a.classes.len(), 3);
    assert_eq!(a.groups, FeatureGroup::ALL);
    for h in &a.classes {
        // Every predicted placement of every run: all but the baseline and the probe.
        assert_eq!(h.across.cells, h.runs * (h.placements - 2), "{h:?}");
        assert!(h.own.cells > 0 && h.category_mean.cells > 0, "{h:?}");
        assert!((0.0..=1.0).contains(&h.coverage), "{h:?}");
        assert_ne!(h.probe, "n1-c4", "never the baseline");
    }
    // The behaviours depend on the share of the machine used: a class the forest never
    // saw is predicted from the others' shares. The middle machine is inside their range.
    assert!(a.classes[1].across.mean < 10.0, "{:#?}", a.classes);
    let all = a.overall();
    assert_eq!(
        all.cells,
        a.classes.iter().map(|h| h.across.cells).sum::<usize>()
    );
}

#[test]
fn the_ablation_leaves_each_group_out_once() {
    let c = corpus();
    let ablation = c.ablation(&options()).unwrap();
    assert_eq!(ablation.len(), 1 + FeatureGroup::ALL.len());
    assert_eq!(ablation[0].0, None);
    for (left_out, a) in &ablation[1..] {
        let g = left_out.expect("a group left out");
        assert!(!a.groups.contains(&g), "{g:?}");
    }
    // The behaviours turn on SMT sharing, which the smt group and the span group (its
    // sharing against the size's most) both describe: without either the forest cannot
    // tell packed from spread placements apart.
    let with = ablation[0].1.overall().mean;
    let blind = ResourceDescriber {
        groups: FeatureGroup::ALL
            .into_iter()
            .filter(|g| !matches!(g, FeatureGroup::Smt | FeatureGroup::Span))
            .collect(),
    };
    let without_smt = c
        .leave_one_class_out(&blind, &options())
        .unwrap()
        .overall()
        .mean;
    assert!(without_smt > with + 2.0, "{with} vs {without_smt}");
}

#[test]
fn a_corpus_that_cannot_be_left_one_class_out_is_refused() {
    let o = options();
    assert!(matches!(
        Corpus::new(&[class(4)], &o),
        Err(ClassesError::TooFewClasses { found: 1 })
    ));
    assert!(matches!(
        Corpus::new(&[class(4), class(4)], &o),
        Err(ClassesError::Duplicate { v: 8, .. })
    ));
    let e = Corpus::new(&[class(4), sized(8)], &o).err().unwrap();
    assert!(matches!(e, ClassesError::NoResources { .. }), "{e}");
    assert!(e.to_string().contains("no resources line"), "{e}");
}
