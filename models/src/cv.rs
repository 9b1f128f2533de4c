//! Leave-one-family-out cross-validation: all runs of a family are held out together, so a
//! model is never tested on a sibling of a workload it was trained on (no spark-pr in
//! training while testing spark-cc, thesis §2.4.3).

use std::collections::BTreeMap;

use ndarray::{Array2, Axis};

use crate::table::RowInfo;

/// One fold: the held-out family and the row indices on each side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fold {
    /// The family held out.
    pub family: String,
    /// Rows of every other family.
    pub train: Vec<usize>,
    /// Rows of this family.
    pub test: Vec<usize>,
}

/// Why cross-validation cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CvError {
    /// Leaving a family out needs another one to train on.
    #[error("cross-validation by family needs at least 2 families, the data has {families}")]
    TooFewFamilies {
        /// Families in the data.
        families: usize,
    },
}

/// One fold per family, in family-name order.
pub fn leave_one_family_out(rows: &[RowInfo]) -> Result<Vec<Fold>, CvError> {
    let mut by_family: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        by_family.entry(r.family.as_str()).or_default().push(i);
    }
    if by_family.len() < 2 {
        return Err(CvError::TooFewFamilies {
            families: by_family.len(),
        });
    }
    Ok(by_family
        .iter()
        .map(|(&family, test)| Fold {
            family: family.to_owned(),
            train: (0..rows.len())
                .filter(|&i| rows[i].family != family)
                .collect(),
            test: test.clone(),
        })
        .collect())
}

/// Out-of-fold predictions: every row predicted by a model that never saw its family.
/// `fit_predict(train, test)` returns one prediction row per test row.
pub(crate) fn out_of_fold<E>(
    folds: &[Fold],
    n_rows: usize,
    n_outputs: usize,
    mut fit_predict: impl FnMut(&[usize], &[usize]) -> Result<Array2<f64>, E>,
) -> Result<Array2<f64>, E> {
    let mut predicted = Array2::from_elem((n_rows, n_outputs), f64::NAN);
    for fold in folds {
        let p = fit_predict(&fold.train, &fold.test)?;
        for (row, values) in fold.test.iter().zip(p.axis_iter(Axis(0))) {
            predicted.row_mut(*row).assign(&values);
        }
    }
    Ok(predicted)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn rows(families: &[&str]) -> Vec<RowInfo> {
        families
            .iter()
            .enumerate()
            .map(|(i, f)| RowInfo {
                workload: format!("w{i}"),
                family: (*f).to_owned(),
                run: 0,
            })
            .collect()
    }

    #[test]
    fn no_family_is_ever_on_both_sides_and_every_row_is_tested_once() {
        let rows = rows(&["spark", "pg", "spark", "nas", "pg", "nas", "spark", "blast"]);
        let folds = leave_one_family_out(&rows).expect("4 families");
        assert_eq!(folds.len(), 4);
        let mut tested = vec![0; rows.len()];
        // Drive the folds through out_of_fold, as evaluation does, and look at what each
        // model would have been trained and tested on.
        let predicted = out_of_fold(&folds, rows.len(), 1, |train, test| {
            let train_families: BTreeSet<&str> =
                train.iter().map(|&r| rows[r].family.as_str()).collect();
            for &r in test {
                assert!(
                    !train_families.contains(rows[r].family.as_str()),
                    "family {} leaked into its own training fold",
                    rows[r].family
                );
                tested[r] += 1;
            }
            assert_eq!(
                train.len() + test.len(),
                rows.len(),
                "every other row trains"
            );
            Ok::<_, ()>(Array2::from_elem((test.len(), 1), 1.0))
        })
        .expect("no error");
        assert_eq!(tested, vec![1; rows.len()]);
        assert!(predicted.iter().all(|v| *v == 1.0), "every row predicted");
    }

    #[test]
    fn one_family_cannot_be_cross_validated() {
        assert_eq!(
            leave_one_family_out(&rows(&["a", "a"])),
            Err(CvError::TooFewFamilies { families: 1 })
        );
    }
}
