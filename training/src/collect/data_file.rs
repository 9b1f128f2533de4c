//! The data file as the collector writes it: the machine header, then one run record per
//! measurement, each appended and synced before the next starts, so that a collection
//! killed at any point resumes from what the file holds.
//!
//! A key whose only records are unusable is not done: a resumed collection may measure it
//! again and append another record, and the loader keeps the usable one
//! (`placed_models::Dataset`, docs/models.md "Measured again").

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use placed_models::Provenance;
use placed_models::data::{Line, LineRef, MachineHeader, RunRecord};
use placed_models::resources::ClassResources;

/// Why the data file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DataFileError {
    #[error("cannot {doing} {path}")]
    Io {
        doing: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{path} was collected for another setting ({what}); use another --out file, or delete it to start over"
    )]
    Mismatch { path: PathBuf, what: String },
    #[error("{path}:{line}: not a training-data record ({detail}); only the last line may be torn")]
    Corrupt {
        path: PathBuf,
        line: usize,
        detail: String,
    },
}

/// One measurement's key: workload, run, placement.
pub type Key = (String, u32, String);

/// What the file holds for one measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyState {
    /// No record.
    Missing,
    /// Only unusable records: measuring it again may give a usable one.
    Unusable,
    /// A usable record.
    Done,
}

/// An open data file, positioned at its end.
#[derive(Debug)]
pub struct DataFile {
    path: PathBuf,
    file: File,
    /// Keys with a usable record.
    done: HashSet<Key>,
    /// Keys with only unusable records.
    unusable: HashSet<Key>,
    /// Whether an existing file was continued.
    pub resumed: bool,
    /// Whether a torn last line was dropped.
    pub dropped_torn_line: bool,
    /// The machine's resources as the file holds them.
    resources: Option<ClassResources>,
}

impl DataFile {
    /// Opens `path` for `header` and `provenance`: creates it with the header, or continues
    /// it when its header is the same, dropping a torn last line.
    pub fn open(
        path: &Path,
        header: &MachineHeader,
        provenance: Provenance,
    ) -> Result<Self, DataFileError> {
        let io = |doing: &'static str| {
            let path = path.to_owned();
            move |source| DataFileError::Io {
                doing,
                path,
                source,
            }
        };
        let existing = match std::fs::read(path) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io("read")(e)),
        };
        let existing = match existing.as_deref() {
            Some(bytes) => read_existing(path, bytes, header, provenance)?,
            None => Existing::default(),
        };
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(false)
            .open(path)
            .map_err(io("open"))?;
        file.set_len(u64::try_from(existing.keep_bytes).unwrap_or(u64::MAX))
            .map_err(io("truncate"))?;
        let resumed = existing.resumed;
        let mut this = Self {
            path: path.to_owned(),
            file,
            done: existing.done,
            unusable: existing.unusable,
            resumed,
            dropped_torn_line: existing.dropped_torn_line,
            resources: existing.resources,
        };
        use std::io::Seek as _;
        this.file
            .seek(std::io::SeekFrom::End(0))
            .map_err(io("seek in"))?;
        if !resumed {
            this.write_line(&LineRef::Machine(header))?;
            placed_host::atomic_file::sync_parent(path).map_err(io("sync the directory of"))?;
        }
        Ok(this)
    }

    /// What the file holds for this measurement.
    pub fn state(&self, key: &Key) -> KeyState {
        if self.done.contains(key) {
            KeyState::Done
        } else if self.unusable.contains(key) {
            KeyState::Unusable
        } else {
            KeyState::Missing
        }
    }

    /// Writes the machine's resources (what it has and each placement uses of it), so the
    /// data can join a corpus for the model across machine classes (docs/models.md, "Across
    /// classes"). A file that already holds them keeps them if they are the same and is
    /// refused if they differ; one collected before resources were written gets them
    /// appended (the loader takes the line anywhere after the header).
    pub fn note_resources(&mut self, resources: &ClassResources) -> Result<(), DataFileError> {
        match &self.resources {
            Some(found) if found == resources => Ok(()),
            Some(found) => Err(DataFileError::Mismatch {
                path: self.path.clone(),
                what: placed_core::text::clip(
                    &format!(
                        "its resources line differs from this host's: {} with {} nodes and interconnect {} against {} with {} and {}",
                        found.machine.topology,
                        found.machine.nodes,
                        found.machine.interconnect,
                        resources.machine.topology,
                        resources.machine.nodes,
                        resources.machine.interconnect,
                    ),
                    300,
                ),
            }),
            None => {
                self.write_line(&LineRef::Resources(resources))?;
                self.resources = Some(resources.clone());
                Ok(())
            }
        }
    }

    /// How many measurements the file holds, usable or not.
    pub fn done(&self) -> usize {
        self.done.len() + self.unusable.len()
    }

    /// Appends a record and syncs it to disk before returning.
    pub fn append(&mut self, record: &RunRecord) -> Result<(), DataFileError> {
        self.write_line(&LineRef::Run(record))?;
        note(
            &mut self.done,
            &mut self.unusable,
            (
                record.workload.clone(),
                record.run,
                record.placement.clone(),
            ),
            record.unusable.is_none(),
        );
        Ok(())
    }

    fn write_line(&mut self, line: &LineRef<'_>) -> Result<(), DataFileError> {
        let io = |doing| {
            let path = self.path.clone();
            move |source| DataFileError::Io {
                doing,
                path,
                source,
            }
        };
        let bytes = placed_models::data::line(line)
            .map_err(|e| io("serialize a record for")(std::io::Error::other(e)))?;
        // One write per line: a crash leaves at most this line torn, which `open` drops.
        self.file.write_all(&bytes).map_err(io("append to"))?;
        self.file.sync_data().map_err(io("sync"))
    }
}

/// What an existing data file holds, read to be continued.
#[derive(Debug, Default)]
struct Existing {
    done: HashSet<Key>,
    unusable: HashSet<Key>,
    resources: Option<ClassResources>,
    /// Bytes up to the end of its last whole line.
    keep_bytes: usize,
    dropped_torn_line: bool,
    /// Whether it had a header to continue after.
    resumed: bool,
}

/// Reads an existing file's `bytes`: its header must be `header`, its runs measured with
/// `provenance`.
fn read_existing(
    path: &Path,
    bytes: &[u8],
    header: &MachineHeader,
    provenance: Provenance,
) -> Result<Existing, DataFileError> {
    let mut out = Existing::default();
    // Everything up to the last newline was written whole; a tail after it is the
    // record a crash interrupted.
    let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    out.dropped_torn_line = whole < bytes.len();
    let text = String::from_utf8_lossy(&bytes[..whole]);
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    if let Some((_, first)) = lines.next() {
        let parsed: Line = serde_json::from_str(first).map_err(|e| DataFileError::Corrupt {
            path: path.to_owned(),
            line: 1,
            detail: placed_models::json_error::JsonError::from(e).to_string(),
        })?;
        let Line::Machine(found) = parsed else {
            return Err(DataFileError::Corrupt {
                path: path.to_owned(),
                line: 1,
                detail: "the first line is not the machine header".into(),
            });
        };
        if let Some(what) = header_difference(&found, header) {
            return Err(DataFileError::Mismatch {
                path: path.to_owned(),
                what,
            });
        }
        for (index, raw) in lines {
            let corrupt = |detail: String| DataFileError::Corrupt {
                path: path.to_owned(),
                line: index + 1,
                detail,
            };
            let record = match serde_json::from_str::<Line>(raw) {
                Ok(Line::Run(r)) => r,
                Ok(Line::Machine(_)) => return Err(corrupt("a second header".into())),
                // Kept to compare with this host's: nothing to resume.
                Ok(Line::Resources(r)) => {
                    out.resources = Some(r);
                    continue;
                }
                Err(e) => {
                    return Err(corrupt(
                        placed_models::json_error::JsonError::from(e).to_string(),
                    ));
                }
            };
            if record.provenance != provenance {
                return Err(DataFileError::Mismatch {
                    path: path.to_owned(),
                    what: format!(
                        "its runs were measured on {}, this host is {}",
                        record.provenance, provenance
                    ),
                });
            }
            let usable = record.unusable.is_none();
            note(
                &mut out.done,
                &mut out.unusable,
                (record.workload, record.run, record.placement),
                usable,
            );
        }
        out.keep_bytes = whole;
        out.resumed = true;
    }
    Ok(out)
}

/// Files a record's key as done (usable) or unusable; a usable record settles the key for
/// good, as it does for the loader.
fn note(done: &mut HashSet<Key>, unusable: &mut HashSet<Key>, key: Key, usable: bool) {
    if usable {
        unusable.remove(&key);
        done.insert(key);
    } else if !done.contains(&key) {
        unusable.insert(key);
    }
}

/// What differs between the file's header and this collection's, in words.
fn header_difference(found: &MachineHeader, want: &MachineHeader) -> Option<String> {
    // The file's side is whatever the file holds: quoted cut, like every refusal.
    let cut = |text: String| placed_core::text::clip(&text, 200);
    if found.version != want.version {
        return Some(format!(
            "data format version {} instead of {}",
            found.version, want.version
        ));
    }
    if found.fingerprint != want.fingerprint {
        return Some(format!(
            "machine class {} instead of this host's {}",
            cut(found.fingerprint.clone()),
            want.fingerprint
        ));
    }
    if found.v != want.v {
        return Some(format!("v = {} instead of {}", found.v, want.v));
    }
    if found.concerns != want.concerns {
        return Some(format!(
            "concerns {} instead of {:?}",
            cut(format!("{:?}", found.concerns)),
            want.concerns
        ));
    }
    let ids = |h: &MachineHeader| {
        h.placements
            .iter()
            .map(|p| p.id.clone())
            .collect::<Vec<_>>()
    };
    let same_scores = found.placements.len() == want.placements.len()
        && found.placements.iter().zip(&want.placements).all(|(a, b)| {
            a.id == b.id
                && a.scores.len() == b.scores.len()
                && a.scores
                    .iter()
                    .zip(&b.scores)
                    .all(|(x, y)| (x - y).abs() < 1e-9)
        });
    if !same_scores {
        return Some(format!(
            "placements {} instead of {}",
            cut(format!("{:?}", ids(found))),
            cut(format!("{:?}", ids(want)))
        ));
    }
    None
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use placed_models::data::{DATA_FORMAT_VERSION, Measurement, PlacementInfo};

    pub(crate) fn header(v: u32) -> MachineHeader {
        MachineHeader {
            version: DATA_FORMAT_VERSION,
            fingerprint: "mc1-test".into(),
            v,
            concerns: vec!["numa".into()],
            placements: vec![
                PlacementInfo {
                    id: "a".into(),
                    scores: vec![1.0],
                },
                PlacementInfo {
                    id: "b".into(),
                    scores: vec![2.0],
                },
            ],
        }
    }

    pub(crate) fn record(workload: &str, placement: &str) -> RunRecord {
        let performance = Measurement {
            value: 10.0,
            unit: "ops/s".into(),
            repetitions: 6,
            spread: 0.5,
        };
        RunRecord::new(
            "mc1-test",
            1,
            "f",
            workload,
            placement,
            performance,
            Provenance::VirtualMachine,
        )
    }

    /// A data file of this host's header holding runs `a` and `b` of workload `w`, closed;
    /// with the directory that keeps it.
    fn two_runs_collected() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.jsonl");
        let mut f = DataFile::open(&path, &header(1), Provenance::VirtualMachine).unwrap();
        f.append(&record("w", "a")).unwrap();
        f.append(&record("w", "b")).unwrap();
        (dir, path)
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_the_rest_resumes() {
        let (_dir, path) = two_runs_collected();
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"kind\":\"run\",\"finger");
        std::fs::write(&path, &text).unwrap();

        let f = DataFile::open(&path, &header(1), Provenance::VirtualMachine).unwrap();
        assert!(f.resumed && f.dropped_torn_line);
        assert_eq!(f.done(), 2);
        assert_eq!(f.state(&("w".into(), 0, "b".into())), KeyState::Done);
        drop(f);
        let data = placed_models::Dataset::load(&path).unwrap();
        assert_eq!(data.records().len(), 2);
    }

    #[test]
    fn another_setting_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.jsonl");
        drop(DataFile::open(&path, &header(1), Provenance::VirtualMachine).unwrap());
        let err = DataFile::open(&path, &header(2), Provenance::VirtualMachine).unwrap_err();
        assert!(matches!(err, DataFileError::Mismatch { .. }), "{err}");
        assert!(err.to_string().contains("v = 1 instead of 2"), "{err}");
    }

    fn resources(interconnect: f64) -> ClassResources {
        use placed_models::resources::{MachineResources, PlacementResources};
        let placement = |id: &str, nodes: f64| PlacementResources {
            id: id.into(),
            nodes,
            packages: 1.0,
            l3: nodes,
            cores: 2.0,
            interconnect: nodes * interconnect,
        };
        ClassResources {
            machine: MachineResources {
                nodes: 2.0,
                packages: 1.0,
                l3: 2.0,
                cores: 8.0,
                threads_per_core: 2.0,
                interconnect: 2.0 * interconnect,
                measured_bandwidth: false,
                topology: "numa:2 core:8 pu:2".into(),
            },
            placements: vec![placement("a", 1.0), placement("b", 2.0)],
        }
    }

    #[test]
    fn real_data_carries_the_hosts_resources_and_joins_a_corpus_across_classes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.jsonl");
        let mut f = DataFile::open(&path, &header(1), Provenance::VirtualMachine).unwrap();
        f.note_resources(&resources(1.0)).unwrap();
        f.append(&record("w", "a")).unwrap();
        drop(f);
        // Resumed: the same resources are not written twice (the loader refuses a second).
        let mut f = DataFile::open(&path, &header(1), Provenance::VirtualMachine).unwrap();
        f.note_resources(&resources(1.0)).unwrap();
        f.append(&record("w", "b")).unwrap();
        drop(f);
        let data = placed_models::Dataset::load(&path).unwrap();
        assert_eq!(data.resources(), Some(&resources(1.0)));
        assert_eq!(data.records().len(), 2);
        // Other resources (another machine file's bandwidth) are another setting.
        let mut f = DataFile::open(&path, &header(1), Provenance::VirtualMachine).unwrap();
        let err = f.note_resources(&resources(0.5)).unwrap_err();
        assert!(matches!(err, DataFileError::Mismatch { .. }), "{err}");
        assert!(err.to_string().contains("resources line differs"), "{err}");
    }

    #[test]
    fn a_file_collected_before_resources_were_written_gets_them_on_resume() {
        let (_dir, path) = two_runs_collected();
        assert_eq!(
            placed_models::Dataset::load(&path).unwrap().resources(),
            None
        );
        let mut f = DataFile::open(&path, &header(1), Provenance::VirtualMachine).unwrap();
        f.note_resources(&resources(1.0)).unwrap();
        drop(f);
        let data = placed_models::Dataset::load(&path).unwrap();
        assert_eq!(data.resources(), Some(&resources(1.0)));
        assert_eq!(data.records().len(), 2);
    }

    pub(crate) fn unusable_record(workload: &str, placement: &str) -> RunRecord {
        record(workload, placement).unusable_because("interval +/-40% wider than +/-10%")
    }

    #[test]
    fn an_unusable_key_stays_to_measure_until_a_usable_record_settles_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.jsonl");
        let mut f = DataFile::open(&path, &header(1), Provenance::VirtualMachine).unwrap();
        f.append(&record("w", "a")).unwrap();
        f.append(&unusable_record("w", "b")).unwrap();
        drop(f);

        let b: Key = ("w".into(), 0, "b".into());
        let mut f = DataFile::open(&path, &header(1), Provenance::VirtualMachine).unwrap();
        assert_eq!(f.state(&("w".into(), 0, "a".into())), KeyState::Done);
        assert_eq!(f.state(&b), KeyState::Unusable);
        assert_eq!(f.state(&("w".into(), 1, "a".into())), KeyState::Missing);
        assert_eq!(f.done(), 2);
        // Measured again: still unusable, then usable.
        f.append(&unusable_record("w", "b")).unwrap();
        assert_eq!(f.state(&b), KeyState::Unusable);
        f.append(&record("w", "b")).unwrap();
        assert_eq!(f.state(&b), KeyState::Done);
        assert_eq!(f.done(), 2);
        drop(f);

        let f = DataFile::open(&path, &header(1), Provenance::VirtualMachine).unwrap();
        assert_eq!(f.state(&b), KeyState::Done);
        drop(f);
        // The loader keeps the usable record of b.
        let data = placed_models::Dataset::load(&path).unwrap();
        assert_eq!(data.records().len(), 2);
        assert_eq!(data.superseded(), 2);
        assert_eq!(data.unusable().count(), 0);
        assert!(data.run_is_usable("w", 0));
        // What fit, evaluate and train print about it.
        let said = crate::report::left_out(&data);
        assert!(said.starts_with("measured again: 2 record(s)"), "{said}");
        assert!(!said.contains("left out of fitting"), "{said}");
    }
}
