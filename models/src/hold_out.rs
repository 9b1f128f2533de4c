//! Leaving a kind of behaviour out: the families of named groups are kept out of training
//! altogether, so that the model meets them the way it meets a container unlike anything it
//! was trained on. This is how the novelty warning is tested (docs/models.md, "Novelty").
//!
//! A family's group is its name without a trailing `-<number>`: the simulator names its
//! families `sim-<behaviour>-<n>`, so `sim-cache-fit` is every cache-fitting family.

use crate::data::{DataError, Dataset};

/// The group a family belongs to: its name less a trailing `-<digits>`.
pub fn family_group(family: &str) -> &str {
    match family.rsplit_once('-') {
        Some((group, n))
            if !group.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) =>
        {
            group
        }
        _ => family,
    }
}

/// Whether `family` is named by `group`: as its group, or by its full name.
fn in_group(group: &str, family: &str) -> bool {
    group == family || group == family_group(family)
}

/// A dataset split into the families kept for training and those held out.
#[derive(Debug)]
pub struct Split {
    /// Every family not held out.
    pub kept: Dataset,
    /// The families of the named groups.
    pub held: Dataset,
    /// The held-out family names, sorted.
    pub families: Vec<String>,
}

/// Why a dataset cannot be split.
#[derive(Debug, thiserror::Error)]
pub enum HoldOutError {
    /// A group no family belongs to.
    #[error("no family of the data is in group {group:?}; the groups are {groups}")]
    NoSuchGroup {
        /// The group asked for.
        group: String,
        /// The data's groups, comma-separated.
        groups: String,
    },
    /// Nothing would be left to train on.
    #[error("holding out {groups} leaves no family to train on")]
    Everything {
        /// The groups asked for.
        groups: String,
    },
    /// A part did not validate as a dataset.
    #[error(transparent)]
    Data(#[from] DataError),
}

/// Splits `data` into the families of `groups` (a group, or a family's full name) and the
/// rest.
pub fn hold_out(data: &Dataset, groups: &[String]) -> Result<Split, HoldOutError> {
    let held = |family: &str| groups.iter().any(|g| in_group(g, family));
    let mut all_groups: Vec<&str> = data
        .records()
        .iter()
        .map(|r| family_group(&r.family))
        .collect();
    all_groups.sort_unstable();
    all_groups.dedup();
    for g in groups {
        let any = data.records().iter().any(|r| in_group(g, &r.family));
        if !any {
            return Err(HoldOutError::NoSuchGroup {
                group: g.clone(),
                groups: all_groups.join(", "),
            });
        }
    }
    let (held_records, kept_records): (Vec<_>, Vec<_>) = data
        .records()
        .iter()
        .cloned()
        .partition(|r| held(&r.family));
    if kept_records.is_empty() {
        return Err(HoldOutError::Everything {
            groups: groups.join(", "),
        });
    }
    let mut families: Vec<String> = held_records.iter().map(|r| r.family.clone()).collect();
    families.sort_unstable();
    families.dedup();
    Ok(Split {
        kept: Dataset::from_parts(data.header().clone(), kept_records)?,
        held: Dataset::from_parts(data.header().clone(), held_records)?,
        families,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_data;

    #[test]
    fn a_group_is_the_family_name_less_its_number() {
        assert_eq!(family_group("sim-cache-fit-3"), "sim-cache-fit");
        assert_eq!(family_group("sim-latency-cache-12"), "sim-latency-cache");
        assert_eq!(family_group("redis"), "redis");
        assert_eq!(family_group("stream-"), "stream-");
        assert_eq!(family_group("-7"), "-7");
        assert_eq!(family_group("spark-pr-lj"), "spark-pr-lj");
    }

    fn data() -> Dataset {
        test_data::dataset(
            &[
                "flat-1", "flat-2", "scales-1", "scales-2", "hates-1", "hates-2",
            ],
            4,
        )
    }

    #[test]
    fn a_held_out_group_is_kept_out_of_training_and_met_as_novel() {
        let data = data();
        let split = hold_out(&data, &["hates".into()]).unwrap();
        assert_eq!(split.families, ["hates-1", "hates-2"]);
        assert!(
            split
                .kept
                .records()
                .iter()
                .all(|r| !r.family.starts_with("hates"))
        );
        assert_eq!(
            split.kept.records().len() + split.held.records().len(),
            data.records().len()
        );
        // A model that never saw the behaviour meets it as something new.
        let options = crate::test_data::quick_options();
        let (model, _) = crate::fit(&split.kept, &options).unwrap();
        let novelty = crate::check::check(&model, &split.held).unwrap().novelty();
        assert_eq!(novelty.runs, 8);
        assert_eq!(novelty.flagged, 8, "{novelty:?}");
        // A full family name holds out that family alone.
        let one = hold_out(&data, &["flat-2".into()]).unwrap();
        assert_eq!(one.families, ["flat-2"]);
    }

    #[test]
    fn unknown_groups_and_holding_out_everything_are_refused() {
        let data = data();
        let e = hold_out(&data, &["cache".into()]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "no family of the data is in group \"cache\"; the groups are flat, hates, scales"
        );
        let all: Vec<String> = ["flat", "scales", "hates"].map(String::from).to_vec();
        assert!(matches!(
            hold_out(&data, &all),
            Err(HoldOutError::Everything { .. })
        ));
    }
}
