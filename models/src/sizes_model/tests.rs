use super::*;
use crate::model::Model;
use crate::test_data::{quick_options as options, sized, standard};

fn fitted() -> Arc<SizesModel> {
    let (model, report) = SizesModel::fit(&[sized(8), sized(4)], &options()).unwrap();
    assert_eq!(report.sizes.len(), 2);
    Arc::new(model)
}

fn observation(value: f64) -> Observation {
    Observation {
        value,
        spread: value * 0.01,
        ..Default::default()
    }
}

#[test]
fn a_size_it_never_saw_is_predicted_with_intervals_from_the_held_out_sizes() {
    let model = fitted();
    assert_eq!(model.sizes(), [4, 8]);
    let q = model.error_quantile();
    assert!(q.is_finite() && q >= 0.0, "{q}");
    // v = 6: the same machine's placements, a size absent from training.
    let placements = standard().header().placements.clone();
    let sized = model.for_size(6, placements).unwrap();
    assert_eq!(sized.machine().v, 6);
    assert_eq!(sized.baseline(), "p0");
    assert_ne!(sized.probe(), "p0");
    assert_eq!(sized.trained_sizes(), Some(&[4, 8][..]));
    assert!(sized.id().starts_with(model.id()) && sized.id().ends_with("-v6"));

    // A workload that scales: its probe ratio is well above 1, and so are the predictions
    // where the data's "scales" behaviour is above 1.
    let probe = standard()
        .header()
        .placements
        .iter()
        .position(|p| p.id == sized.probe())
        .unwrap();
    let scales = [1.0, 1.5, 2.0, 1.2];
    let p = sized
        .predict(&observation(1000.0), &observation(1000.0 * scales[probe]))
        .unwrap();
    assert_eq!(p.placements.len(), 4);
    assert!(p.category.is_none() && p.novelty.is_none());
    for (i, c) in p.placements.iter().enumerate() {
        if i == 0 || i == probe {
            assert!(c.measured && c.interval.is_none(), "{c:?}");
            continue;
        }
        assert!(!c.measured, "{c:?}");
        let interval = c.interval.expect("an interval on every predicted cell");
        assert!(interval.contains(c.relative), "{c:?}");
        assert_eq!(interval.level, ACROSS_LEVEL);
        // The training data's own behaviour, learnt at two other sizes.
        let off = (c.relative - scales[i]).abs() / scales[i];
        assert!(off < 0.15, "{c:?} against {}", scales[i]);
    }
}

#[test]
fn the_file_reads_back_and_damage_or_another_kind_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sizes.json");
    let model = fitted();
    std::fs::write(&path, model.file_text().unwrap()).unwrap();
    let back = SizesModel::load(&path).unwrap();
    assert_eq!(back.id(), model.id());
    assert_eq!(back, *model);

    // One byte of the body changed: the checksum no longer matches.
    let text = std::fs::read_to_string(&path).unwrap();
    let damaged = text.replacen("\"sizes\":[4,8]", "\"sizes\":[4,9]", 1);
    assert_ne!(damaged, text);
    std::fs::write(&path, damaged).unwrap();
    assert!(matches!(
        SizesModel::load(&path),
        Err(ModelFileError::ChecksumMismatch { .. })
    ));

    // A per-size model file is not a model across sizes, and the other way round.
    let per_size = crate::fit(&standard(), &options()).unwrap().0;
    std::fs::write(&path, per_size.file_text().unwrap()).unwrap();
    let e = SizesModel::load(&path).unwrap_err();
    assert!(
        matches!(
            e,
            ModelFileError::NotAModel {
                expected: SIZES_MODEL_FORMAT,
                ..
            }
        ),
        "{e}"
    );
    std::fs::write(&path, model.file_text().unwrap()).unwrap();
    let e = Model::load(&path).unwrap_err();
    assert!(e.to_string().contains("placed-sizes-model"), "{e}");
}

#[test]
fn placements_that_do_not_fit_the_machine_class_are_refused() {
    let model = fitted();
    let mut placements = standard().header().placements.clone();
    placements[2].scores.push(1.0);
    assert!(matches!(
        model.for_size(6, placements),
        Err(ForSizeError::Scores {
            found: 3,
            expected: 2,
            ..
        })
    ));
    let one = standard().header().placements[..1].to_vec();
    assert!(matches!(
        model.for_size(2, one),
        Err(ForSizeError::TooFewPlacements { v: 2, found: 1 })
    ));
}
