//! The state file on disk.
//!
//! Format: a header line, then the payload.
//!
//! ```text
//! {"format":"placed-state","version":1,"checksum":"sha256:<hex of the payload bytes>"}
//! { ...the State as pretty JSON... }
//! ```
//!
//! The checksum covers the payload's exact bytes, not a re-serialisation, so a torn or
//! hand-edited file is caught. The payload's format is the version's own module's
//! (`schema/`), not the in-memory types' serde; each version keeps its reader
//! ([`read_payload`]), and a committed golden file per version pins what it reads and
//! what the writer writes (`golden.rs`). Writes go to a temporary file in the same directory, which
//! is fsynced, renamed over the old file, and followed by an fsync of the directory: a crash
//! leaves either the old file or the new one, never half of one.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::State;

/// The mode the state file (and its lock) is created with.
pub const FILE_MODE: u32 = 0o600;
/// The mode of a state directory the daemon creates; one that exists is left as it is (the
/// package and the unit's `StateDirectoryMode=` set `/var/lib/placed`).
pub const DIR_MODE: u32 = 0o700;

/// Creates `dir` and any missing parents with [`DIR_MODE`].
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
}

/// The format version this build writes. Older versions are read by their own readers.
///
/// A change of what the file holds (a field, a name, a variant) is a new version. A field
/// added absent-when-empty keeps the schema (`schema/`) readable for the versions before
/// it (version 2 added `labels` and `reservations` so); any other change gets a schema
/// module of its own for the new version, and the old one stays as the old versions'
/// reader. Either way: make [`save`](StateStore::save) write it, give [`read_payload`] its
/// arm, bump this, and commit the writer's output as `golden/vN.state` beside the old golden
/// files, which must still load. The golden test fails on any change to the written bytes
/// until then.
pub const STATE_VERSION: u32 = 2;
const FORMAT: &str = "placed-state";

#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    format: String,
    version: u32,
    checksum: String,
}

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot read state file {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write state file {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "state file {path} is corrupt ({detail}); placed will not guess what it said. Inspect it, then move it aside to start afresh (containers are then adopted where they are)"
    )]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "state file {path} is format version {found}; this placed reads versions up to {STATE_VERSION}. Run the placed that wrote it, or move the file aside"
    )]
    Version { path: PathBuf, found: u32 },
    #[error(
        "state file {path} was written on machine class {stored}, but this host is {live}: its placements do not apply here. If the hardware or the machine file changed on purpose, drain the host's containers and delete the file"
    )]
    Fingerprint {
        path: PathBuf,
        stored: String,
        live: String,
    },
    #[error("state file {path} is not a regular file; placed reads only regular files")]
    NotRegular { path: PathBuf },
    #[error(
        "state file {path} is in use by another placed{}; stop it first, or give this one another state file",
        .holder.map(|p| format!(" (pid {p})")).unwrap_or_default()
    )]
    Locked { path: PathBuf, holder: Option<u32> },
    #[error("cannot lock the state file with {path}")]
    Lock {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("state file {path}: container {container:?}: {field}: {problem}")]
    Invalid {
        path: PathBuf,
        container: String,
        field: &'static str,
        problem: String,
    },
}

impl StateError {
    /// Who has to act: another daemon holding the file may go away (retry); the rest needs
    /// the operator.
    pub fn fault(&self) -> placed_core::fault::Fault {
        match self {
            Self::Locked { .. } => placed_core::fault::Fault::Transient,
            _ => placed_core::fault::Fault::HostConfig,
        }
    }
}

/// The state file at one path.
#[derive(Debug, Clone)]
pub struct StateStore {
    path: PathBuf,
}

fn checksum(payload: &[u8]) -> String {
    let d = Sha256::digest(payload);
    let hex: String = d.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

impl StateStore {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the state; `Ok(None)` when there is no file yet. `live_fingerprint` is the
    /// running machine's class: a file from another class is refused.
    pub fn load(&self, live_fingerprint: &str) -> Result<Option<State>, StateError> {
        let bytes = match placed_models::regular_file::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) if placed_models::regular_file::is_not_regular(&e) => {
                return Err(StateError::NotRegular {
                    path: self.path.clone(),
                });
            }
            Err(source) => {
                return Err(StateError::Read {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        let state = self.decode(&bytes)?;
        if state.fingerprint != live_fingerprint {
            return Err(StateError::Fingerprint {
                path: self.path.clone(),
                stored: placed_core::text::clip(&state.fingerprint, 80),
                live: live_fingerprint.to_owned(),
            });
        }
        Ok(Some(state))
    }

    fn decode(&self, bytes: &[u8]) -> Result<State, StateError> {
        // serde quotes a mistyped string or an unknown field whole, and the header's fields
        // are the file's: the detail is cut so that the message stays a line.
        let corrupt = |detail: String| StateError::Corrupt {
            path: self.path.clone(),
            detail: placed_core::text::clip(&detail, 400),
        };
        let split = bytes
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(|| corrupt("no header line".into()))?;
        let (head, payload) = (&bytes[..split], &bytes[split + 1..]);
        let header: Header =
            serde_json::from_slice(head).map_err(|e| corrupt(format!("unreadable header: {e}")))?;
        if header.format != FORMAT {
            return Err(corrupt(format!(
                "header says format {:?}, not {FORMAT:?}",
                placed_core::text::clip(&header.format, 40)
            )));
        }
        if header.version > STATE_VERSION || header.version == 0 {
            return Err(StateError::Version {
                path: self.path.clone(),
                found: header.version,
            });
        }
        let actual = checksum(payload);
        if header.checksum != actual {
            return Err(corrupt(format!(
                "checksum mismatch: header {}, content {actual}",
                placed_core::text::clip(&header.checksum, 80)
            )));
        }
        read_payload(header.version, payload).map_err(corrupt)
    }

    /// Writes the state atomically (temporary file, fsync, rename, fsync of the directory).
    pub fn save(&self, state: &State) -> Result<(), StateError> {
        let write_err = |source: std::io::Error| StateError::Write {
            path: self.path.clone(),
            source,
        };
        let mut payload = serde_json::to_vec_pretty(&super::schema::File::from(state))
            .map_err(|e| write_err(std::io::Error::other(e)))?;
        payload.push(b'\n');
        let header = serde_json::to_vec(&Header {
            format: FORMAT.into(),
            version: STATE_VERSION,
            checksum: checksum(&payload),
        })
        .map_err(|e| write_err(std::io::Error::other(e)))?;
        if let Some(dir) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            create_private_dir(dir).map_err(write_err)?;
        }
        // The records hold every container's metric source (URLs, command lines): root's
        // alone, like the directory.
        placed_host::atomic_file::write_with_mode(
            &self.path,
            &[&header, b"\n", &payload],
            FILE_MODE,
        )
        .map_err(write_err)
    }
}

impl StateStore {
    /// Takes the state file's lock ([`super::lock`]), then removes the temporary files that
    /// writers killed mid-write left beside it: with the lock held, none is anyone's live
    /// write.
    pub fn lock(&self) -> Result<super::lock::StateLock, StateError> {
        let lock = super::lock::acquire(&self.path)?;
        match placed_host::atomic_file::remove_stale(&self.path) {
            Ok(removed) if !removed.is_empty() => tracing::info!(
                count = removed.len(),
                "removed temporary state files left by writes that were interrupted"
            ),
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "cannot remove stale temporary state files")
            }
        }
        Ok(lock)
    }
}

/// The payload of a file of format `version`, as the in-memory state: each version read by
/// its own module, whatever the current one is.
fn read_payload(version: u32, payload: &[u8]) -> Result<State, String> {
    match version {
        // Version 2 only added fields absent when empty: one schema reads both.
        1 | 2 => serde_json::from_slice::<super::schema::File>(payload)
            .map(State::from)
            .map_err(|e| format!("payload: {e}")),
        other => Err(format!("no reader for format version {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{Assigned, ContainerRecord, Lifecycle};
    use placed_core::policy::Policy;

    fn sample() -> State {
        State {
            written_unix_ms: 1_700_000_000_000,
            unmanaged: Vec::new(),
            reservations: Vec::new(),
            stopped_models: Vec::new(),
            fingerprint: "mc1-0011223344556677".into(),
            containers: vec![ContainerRecord {
                runtime: "docker".into(),
                runtime_id: "abc".into(),
                state: Lifecycle::Watched,
                assigned: Some(Assigned {
                    placement: Some("numa1-core4".into()),
                    units: vec![1],
                    cpus: "8-11".parse().unwrap(),
                    mems: "1".parse().unwrap(),
                }),
                metric: Some(placed_host::observe::SourceSpec::Pushed { counter: false }),
                updated_unix_ms: 1_700_000_000_000,
                ..ContainerRecord::new("/docker/abc", "web", 4, Policy::Model { goal: 0.9 })
            }],
        }
    }

    #[test]
    fn round_trip_and_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path().join("sub/state.json"));
        assert!(store.load("mc1-0011223344556677").unwrap().is_none());
        store.save(&sample()).unwrap();
        assert_eq!(store.load("mc1-0011223344556677").unwrap(), Some(sample()));
        // No temporary file left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path().join("sub"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["state.json"]);
        // The file is readable: sets in cpulist syntax.
        let text = std::fs::read_to_string(store.path()).unwrap();
        assert!(text.contains("\"cpus\": \"8-11\""), "{text}");
    }

    #[test]
    fn the_state_file_and_a_directory_made_for_it_are_roots_alone() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path().join("new/state.json"));
        store.save(&sample()).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(store.path()), 0o600, "{:o}", mode(store.path()));
        assert_eq!(mode(&dir.path().join("new")), 0o700);
        // A file an older version wrote world-readable is replaced by a private one.
        std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
        store.save(&sample()).unwrap();
        assert_eq!(mode(store.path()), 0o600);
        let _lock = store.lock().unwrap();
        assert_eq!(mode(&super::super::lock::lock_path(store.path())), 0o600);
    }

    fn literal(dir: &tempfile::TempDir, text: &str) -> StateStore {
        let p = dir.path().join("state.json");
        std::fs::write(&p, text).unwrap();
        StateStore::new(p)
    }

    fn with_header(version: u32, payload: &str, sum: Option<&str>) -> String {
        let sum = sum.map_or_else(|| checksum(payload.as_bytes()), str::to_owned);
        format!(
            "{{\"format\":\"placed-state\",\"version\":{version},\"checksum\":\"{sum}\"}}\n{payload}"
        )
    }

    #[test]
    fn literal_files_fail_with_the_right_errors() {
        let dir = tempfile::tempdir().unwrap();
        let fp = "mc1-0011223344556677";
        let good =
            serde_json::to_string_pretty(&crate::state::schema::File::from(&sample())).unwrap();

        let s = literal(&dir, &with_header(1, &good, Some("sha256:00")));
        assert!(
            matches!(s.load(fp), Err(StateError::Corrupt { detail, .. }) if detail.contains("checksum"))
        );

        let s = literal(&dir, &with_header(9, &good, None));
        assert!(matches!(
            s.load(fp),
            Err(StateError::Version { found: 9, .. })
        ));

        let s = literal(&dir, "not json at all");
        assert!(matches!(s.load(fp), Err(StateError::Corrupt { .. })));

        let bad_set = good.replace("\"8-11\"", "\"8-x\"");
        let s = literal(&dir, &with_header(1, &bad_set, None));
        assert!(
            matches!(s.load(fp), Err(StateError::Corrupt { detail, .. }) if detail.contains("8-x"))
        );

        let s = literal(&dir, &with_header(1, &good, None));
        let err = s.load("mc1-ffffffffffffffff").unwrap_err();
        assert!(matches!(err, StateError::Fingerprint { .. }));
        assert!(err.to_string().contains("delete the file"));

        // A torn write (truncated payload) is caught by the checksum.
        let full = with_header(1, &good, None);
        let s = literal(&dir, &full[..full.len() - 20]);
        assert!(matches!(s.load(fp), Err(StateError::Corrupt { .. })));

        // A hand-written v1 file with the current checksum loads.
        let s = literal(&dir, &with_header(1, &good, None));
        assert_eq!(s.load(fp).unwrap(), Some(sample()));
    }

    #[test]
    fn unwritable_directory_is_a_write_error_naming_the_path() {
        let store = StateStore::new("/proc/placed-test/state.json");
        match store.save(&sample()) {
            Err(StateError::Write { path, .. }) => {
                assert_eq!(path, Path::new("/proc/placed-test/state.json"))
            }
            other => panic!("{other:?}"),
        }
    }
}
