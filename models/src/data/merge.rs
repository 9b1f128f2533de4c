//! Data files of several hosts of one machine class made one (a fleet's production data):
//! the headers must agree (machine class, `v`, placements) and so must the provenance; a
//! record seen twice (the same file merged again, or a copy of one) is dropped; each
//! record keeps the host that measured it. Runs are numbered per host: where two hosts used
//! the same (workload, run), the later host's run is given a free number.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use super::{DataError, Dataset, RunRecord};

/// Why files could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// Nothing to merge.
    #[error("no data files to merge")]
    Nothing,
    /// A file of another machine class, size or placements.
    #[error(
        "{path} is for machine class {found} with v = {found_v} ({found_placements} placements), the first file for {expected} with v = {expected_v} ({expected_placements} placements): one class and size per merged file"
    )]
    OtherClass {
        /// The file that differs.
        path: PathBuf,
        /// The first file's fingerprint, v and placement count.
        expected: String,
        expected_v: u32,
        expected_placements: usize,
        /// This file's.
        found: String,
        found_v: u32,
        found_placements: usize,
    },
    /// A file of another provenance.
    #[error("{path} is {found} data, the first file {expected}: data of one provenance per file")]
    OtherProvenance {
        /// The file that differs.
        path: PathBuf,
        expected: super::Provenance,
        found: super::Provenance,
    },
    /// The merged records did not validate.
    #[error(transparent)]
    Data(#[from] DataError),
}

/// What a merge did besides concatenating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MergeCounts {
    /// Records kept.
    pub kept: usize,
    /// Records dropped as seen before.
    pub duplicates: usize,
    /// Runs given another number because another host used theirs.
    pub renumbered: usize,
}

/// Merges `files` (each with the path it was read from, for messages), in order.
pub fn merge(files: &[(PathBuf, Dataset)]) -> Result<(Dataset, MergeCounts), MergeError> {
    let Some((_, first)) = files.first() else {
        return Err(MergeError::Nothing);
    };
    let header = first.header().clone();
    let mut counts = MergeCounts::default();
    let mut records: Vec<RunRecord> = Vec::new();
    let mut numbers = RunNumbers::default();
    let mut seen: HashSet<(String, u32, String)> = HashSet::new();
    for (path, data) in files {
        let h = data.header();
        if h.fingerprint != header.fingerprint
            || h.v != header.v
            || h.placements != header.placements
        {
            return Err(MergeError::OtherClass {
                path: path.clone(),
                expected: header.fingerprint.clone(),
                expected_v: header.v,
                expected_placements: header.placements.len(),
                found: h.fingerprint.clone(),
                found_v: h.v,
                found_placements: h.placements.len(),
            });
        }
        if data.provenance() != first.provenance() {
            return Err(MergeError::OtherProvenance {
                path: path.clone(),
                expected: first.provenance(),
                found: data.provenance(),
            });
        }
        for r in data.records() {
            let (run, renumbered) = numbers.claim(&r.host, &r.workload, r.run);
            counts.renumbered += usize::from(renumbered);
            if !seen.insert((r.workload.clone(), run, r.placement.clone())) {
                counts.duplicates += 1;
                continue;
            }
            let mut r = r.clone();
            r.run = run;
            records.push(r);
        }
    }
    counts.kept = records.len();
    let mut merged = Dataset::from_parts(header, records)?;
    if let Some(resources) = files.iter().find_map(|(_, d)| d.resources().cloned()) {
        merged = merged.with_resources(resources)?;
    }
    Ok((merged, counts))
}

/// Run numbers made unique across sources (hosts, files) that number their runs each on
/// its own: a source keeps its number for a workload while no other source uses it, else
/// its run gets the next number no one uses, the same one for each of its records.
#[derive(Debug)]
pub struct RunNumbers<K> {
    /// (workload, run) -> the source that uses it.
    owner: BTreeMap<(String, u32), K>,
    /// (source, workload, its run) -> the run given.
    given: BTreeMap<(K, String, u32), u32>,
}

impl<K> Default for RunNumbers<K> {
    fn default() -> Self {
        Self {
            owner: BTreeMap::new(),
            given: BTreeMap::new(),
        }
    }
}

impl<K: Ord + Clone> RunNumbers<K> {
    /// The number of `source`'s `run` of `workload`, with whether this call changed it
    /// (true once per run renumbered, at its first record).
    pub fn claim(&mut self, source: &K, workload: &str, run: u32) -> (u32, bool) {
        let key = (source.clone(), workload.to_owned(), run);
        if let Some(&given) = self.given.get(&key) {
            return (given, false);
        }
        let taken = |n: u32| {
            self.owner
                .get(&(workload.to_owned(), n))
                .is_some_and(|s| s != source)
        };
        let mut given = run;
        if taken(run) {
            given = run.wrapping_add(1);
            while self.owner.contains_key(&(workload.to_owned(), given)) {
                given = given.wrapping_add(1);
            }
        }
        self.owner
            .insert((workload.to_owned(), given), source.clone());
        self.given.insert(key, given);
        (given, given != run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{DATA_FORMAT_VERSION, MachineHeader, PlacementInfo, Provenance};

    fn header() -> MachineHeader {
        MachineHeader {
            version: DATA_FORMAT_VERSION,
            fingerprint: "fp".into(),
            v: 4,
            concerns: vec!["nodes".into()],
            placements: ["a", "b", "c"]
                .map(|id| PlacementInfo {
                    id: id.into(),
                    scores: vec![1.0],
                })
                .to_vec(),
        }
    }

    /// A production file of `host`: workload `w` run 7 measured in `a` and `b`.
    fn production(host: &str, value: f64) -> (PathBuf, Dataset) {
        let records = ["a", "b"]
            .map(|p| {
                let mut r = RunRecord::simulated("fp", 4, "w", "w", p, value).with_run(7);
                r.partial = true;
                r.host = Some(host.into());
                r
            })
            .to_vec();
        (
            PathBuf::from(format!("{host}.jsonl")),
            Dataset::from_parts(header(), records).expect("valid"),
        )
    }

    #[test]
    fn hosts_keep_their_runs_apart_and_a_file_merged_twice_adds_nothing() {
        let files = [
            production("h1", 100.0),
            production("h2", 200.0),
            production("h1", 100.0),
        ];
        let (merged, counts) = merge(&files).expect("merges");
        assert_eq!(
            counts,
            MergeCounts {
                kept: 4,
                duplicates: 2,
                renumbered: 1
            }
        );
        assert_eq!(merged.provenance(), Provenance::Simulated);
        let h2: Vec<&RunRecord> = merged
            .records()
            .iter()
            .filter(|r| r.host.as_deref() == Some("h2"))
            .collect();
        assert_eq!(h2.len(), 2);
        assert!(
            h2.iter()
                .all(|r| r.run == 8 && r.performance.value == 200.0)
        );
        assert!(merged.run_is_partial("w", 7) && merged.run_is_partial("w", 8));
    }

    #[test]
    fn another_class_or_provenance_is_refused_naming_the_file() {
        let (path, data) = production("h2", 1.0);
        let mut other = header();
        other.v = 8;
        let records = data
            .records()
            .iter()
            .cloned()
            .map(|mut r| {
                r.v = 8;
                r
            })
            .collect();
        let eight = Dataset::from_parts(other, records).expect("valid");
        let err = merge(&[production("h1", 1.0), (path.clone(), eight)]).unwrap_err();
        assert!(matches!(err, MergeError::OtherClass { .. }), "{err}");
        assert!(err.to_string().contains("h2.jsonl"), "{err}");

        let real = data
            .records()
            .iter()
            .cloned()
            .map(|mut r| {
                r.provenance = Provenance::Real;
                r
            })
            .collect();
        let real = Dataset::from_parts(header(), real).expect("valid");
        let err = merge(&[production("h1", 1.0), (path, real)]).unwrap_err();
        assert!(matches!(err, MergeError::OtherProvenance { .. }), "{err}");
    }
}
