//! The models the daemon predicts with: every model file in the model directory, indexed
//! by machine class and vCPU count. A lookup that misses rescans the directory, so a model
//! installed by `placed-train` while the daemon runs is picked up without a restart.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use placed_models::{Model, ModelFileError};

use crate::placement::PlacementSet;

/// A loaded model and where it came from.
#[derive(Debug, Clone)]
pub struct LoadedModel {
    pub model: Arc<Model>,
    pub path: PathBuf,
}

#[derive(Debug, Default)]
struct Index {
    /// (fingerprint, v) -> model.
    by_class: HashMap<(String, usize), LoadedModel>,
    /// Files already read, with their modification time, so a rescan reads only new ones.
    seen: HashMap<PathBuf, SystemTime>,
}

#[derive(Debug)]
pub struct ModelLibrary {
    dir: PathBuf,
    index: Mutex<Index>,
}

/// Why a model file in the directory was skipped (logged, not fatal: one bad file must not
/// stop the daemon from using the others).
fn skip(path: &Path, e: &ModelFileError) {
    tracing::warn!(path = %path.display(), error = %e, "skipping model file");
}

impl ModelLibrary {
    pub fn new(dir: PathBuf) -> Self {
        let lib = Self {
            dir,
            index: Mutex::new(Index::default()),
        };
        lib.rescan();
        lib
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Reads model files that are new or changed since the last scan.
    pub fn rescan(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut files: Vec<(PathBuf, SystemTime)> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .filter_map(|p| {
                let t = std::fs::metadata(&p).and_then(|m| m.modified()).ok()?;
                Some((p, t))
            })
            .collect();
        files.sort();
        let fresh: Vec<(PathBuf, SystemTime)> = {
            let index = self.lock();
            files
                .into_iter()
                .filter(|(p, t)| index.seen.get(p) != Some(t))
                .collect()
        };
        // Loading (hashing, parsing megabytes) happens outside the lock.
        for (path, mtime) in fresh {
            let loaded = Model::load(&path);
            let mut index = self.lock();
            index.seen.insert(path.clone(), mtime);
            match loaded {
                Ok(model) => {
                    let key = (
                        model.machine().fingerprint.clone(),
                        model.machine().v as usize,
                    );
                    tracing::info!(path = %path.display(), model = model.id(), fingerprint = %key.0, vcpus = key.1, "model loaded");
                    index.by_class.insert(
                        key,
                        LoadedModel {
                            model: Arc::new(model),
                            path,
                        },
                    );
                }
                Err(e) => skip(&path, &e),
            }
        }
    }

    /// The model for a machine class and `v`, if its placements are this machine's.
    pub fn find(&self, fingerprint: &str, placements: &PlacementSet) -> Option<LoadedModel> {
        let key = (fingerprint.to_owned(), placements.vcpus);
        let hit = self.lock().by_class.get(&key).cloned();
        let found = match hit {
            Some(m) => Some(m),
            None => {
                self.rescan();
                self.lock().by_class.get(&key).cloned()
            }
        }?;
        // The fingerprint covers what the concerns see, but a change to the placement
        // algorithm could change ids without changing it.
        let unknown: Vec<&str> = found
            .model
            .placements()
            .iter()
            .map(|p| p.id.as_str())
            .filter(|id| placements.get(id).is_none())
            .collect();
        if unknown.is_empty() {
            Some(found)
        } else {
            tracing::warn!(path = %found.path.display(), ?unknown, "model names placements this machine does not have; retrain it");
            None
        }
    }

    /// Every model loaded, for status.
    pub fn all(&self) -> Vec<LoadedModel> {
        let mut v: Vec<LoadedModel> = self.lock().by_class.values().cloned().collect();
        v.sort_by(|a, b| a.path.cmp(&b.path));
        v
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Index> {
        // A panic while holding this lock cannot leave the index inconsistent (inserts
        // only), so a poisoned lock is still usable.
        self.index.lock().unwrap_or_else(|p| p.into_inner())
    }
}
