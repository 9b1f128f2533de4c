//! The models the daemon predicts with: every model file in the model directory, indexed
//! by machine class and vCPU count. The order of trust: the size's own model, else the
//! machine class's model across sizes (docs/models.md, "Across sizes"), else the model
//! across machine classes, made ready for this host from what it has ("Across classes"):
//! a host of a class nobody trained still gets labelled predictions. A lookup that misses rescans the directory, so a model
//! installed by `placed-train` while the daemon runs is picked up without a restart; a hit
//! checks that its file is still the one it was read from (modification time, size, inode),
//! so a retrained model that replaced the file, or a removed file, is noticed too.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use placed_models::data::PlacementInfo;
use placed_models::{ClassesModel, ModelFile, ModelFileError, Predictor, SizesModel};

use placed_core::machine::Machine;
use placed_core::placement::PlacementSet;

/// A loaded model and where it came from.
#[derive(Debug, Clone)]
pub struct LoadedModel {
    pub model: Arc<dyn Predictor>,
    pub path: PathBuf,
}

/// A model across sizes and where it came from.
#[derive(Debug, Clone)]
pub struct LoadedSizesModel {
    pub model: Arc<SizesModel>,
    pub path: PathBuf,
}

/// What identifies one version of a file. `placed-train` installs by renaming a new file
/// over the old (a new inode); a copy over it in place changes the size or the time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
    inode: u64,
}

fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    Some(Stamp {
        modified: m.modified().ok(),
        len: m.len(),
        inode: m.ino(),
    })
}

/// The model across machine classes and where it came from.
#[derive(Debug, Clone)]
pub struct LoadedClassesModel {
    pub model: Arc<ClassesModel>,
    pub path: PathBuf,
}

#[derive(Debug, Default)]
struct Index {
    /// (fingerprint, v) -> model.
    by_class: HashMap<(String, usize), LoadedModel>,
    /// fingerprint -> model across sizes.
    across: HashMap<String, LoadedSizesModel>,
    /// The model across machine classes (one per directory: the later file name wins).
    classes: Option<LoadedClassesModel>,
    /// Files already read, with the version read, so a rescan reads only new or changed
    /// ones.
    seen: HashMap<PathBuf, Stamp>,
    /// Model files read but refused for this host, with why.
    refused: HashMap<PathBuf, String>,
}

impl Index {
    /// Forgets whatever was loaded from `path`.
    fn drop_path(&mut self, path: &Path) {
        self.by_class.retain(|_, m| m.path != path);
        self.across.retain(|_, m| m.path != path);
        if self.classes.as_ref().is_some_and(|m| m.path == path) {
            self.classes = None;
        }
        self.refused.remove(path);
    }
}

#[derive(Debug)]
pub struct ModelLibrary {
    dir: PathBuf,
    /// Whether this host has hardware counters: a model that takes counters as inputs is
    /// refused where there are none, before any container is moved for it.
    counters: bool,
    /// This host's machine model, to describe its placements to the model across classes;
    /// without it that model is not used.
    host: Option<Machine>,
    index: Mutex<Index>,
}

/// The hardware counters a model takes as inputs, by name.
fn needs(model: &placed_models::Model) -> Vec<String> {
    let mut names: Vec<String> = model
        .features()
        .iter()
        .filter_map(|f| match f {
            placed_models::features::Feature::Counter { name, .. } => Some(name.clone()),
            placed_models::features::Feature::ProbeRatio => None,
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Why a model file in the directory was skipped (logged, not fatal: one bad file must not
/// stop the daemon from using the others).
fn skip(path: &Path, e: &ModelFileError) {
    tracing::warn!(path = %path.display(), error = %e, "skipping model file");
}

impl ModelLibrary {
    pub fn new(dir: PathBuf, counters: bool) -> Self {
        let lib = Self {
            dir,
            counters,
            host: None,
            index: Mutex::new(Index::default()),
        };
        lib.rescan();
        lib
    }

    /// The library on `machine`, which the model across classes is made ready for.
    pub fn on_host(mut self, machine: Machine) -> Self {
        self.host = Some(machine);
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Reads model files that are new or changed since the last scan, and forgets those
    /// that are gone.
    pub fn rescan(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut files: Vec<(PathBuf, Stamp)> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .filter_map(|p| {
                let s = stamp(&p)?;
                Some((p, s))
            })
            .collect();
        files.sort_by(|a, b| a.0.cmp(&b.0));
        let fresh: Vec<(PathBuf, Stamp)> = {
            let mut index = self.lock();
            let gone: Vec<PathBuf> = index
                .seen
                .keys()
                .filter(|p| !files.iter().any(|(f, _)| f == *p))
                .cloned()
                .collect();
            for path in gone {
                tracing::info!(path = %path.display(), "model file removed; model unloaded");
                index.seen.remove(&path);
                index.drop_path(&path);
            }
            files
                .into_iter()
                .filter(|(p, s)| index.seen.get(p) != Some(s))
                .collect()
        };
        // Loading (hashing, parsing megabytes) happens outside the lock.
        for (path, version) in fresh {
            let loaded = ModelFile::load(&path);
            let mut index = self.lock();
            index.seen.insert(path.clone(), version);
            // Whatever the file held before is not what it holds now.
            index.drop_path(&path);
            match loaded {
                Ok(ModelFile::PerSize(model)) if !self.counters && !needs(&model).is_empty() => {
                    let why = format!(
                        "model {} ({}) takes hardware counters as inputs ({}), which this host cannot measure (no PMU): it is not used; fit it again without them (placed-train fit --no-counters ...)",
                        model.id(),
                        path.display(),
                        needs(&model).join(", ")
                    );
                    tracing::warn!("{why}");
                    index.refused.insert(path, why);
                }
                Ok(ModelFile::PerSize(model)) => {
                    let key = (
                        model.machine().fingerprint.clone(),
                        model.machine().v as usize,
                    );
                    tracing::info!(path = %path.display(), model = model.id(), fingerprint = %key.0, vcpus = key.1, "model loaded");
                    index.by_class.insert(
                        key,
                        LoadedModel {
                            model: Arc::<placed_models::Model>::from(model),
                            path,
                        },
                    );
                }
                Ok(ModelFile::AcrossSizes(model)) => {
                    let fingerprint = model.fingerprint().to_owned();
                    tracing::info!(path = %path.display(), model = model.id(), fingerprint = %fingerprint, sizes = ?model.sizes(), "model across sizes loaded");
                    if let Some(old) = index.across.get(&fingerprint) {
                        tracing::warn!(path = %path.display(), replaces = %old.path.display(), "two models across sizes for one machine class: the later file name is used");
                    }
                    index.across.insert(
                        fingerprint,
                        LoadedSizesModel {
                            model: Arc::from(model),
                            path,
                        },
                    );
                }
                Ok(ModelFile::AcrossClasses(model)) => {
                    tracing::info!(path = %path.display(), model = model.id(), classes = model.classes().len(), "model across machine classes loaded");
                    if let Some(old) = &index.classes {
                        tracing::warn!(path = %path.display(), replaces = %old.path.display(), "two models across classes: the later file name is used");
                    }
                    index.classes = Some(LoadedClassesModel {
                        model: Arc::from(model),
                        path,
                    });
                }
                Err(e) => skip(&path, &e),
            }
        }
    }

    /// The model for a machine class and `v`, read again if its file changed.
    fn lookup(&self, fingerprint: &str, vcpus: usize) -> Option<LoadedModel> {
        let key = (fingerprint.to_owned(), vcpus);
        {
            let index = self.lock();
            if let Some(m) = index.by_class.get(&key) {
                let current = stamp(&m.path);
                if current.is_some() && index.seen.get(&m.path) == current.as_ref() {
                    return Some(m.clone());
                }
            }
        }
        // A miss, or the hit's file was replaced or removed: read the directory again.
        self.rescan();
        self.lock().by_class.get(&key).cloned()
    }

    /// The model for a machine class and `v`, if its placements are this machine's: the
    /// size's own model, else the class's model across sizes made ready for `v`.
    pub fn find(&self, fingerprint: &str, placements: &PlacementSet) -> Option<LoadedModel> {
        match self.lookup(fingerprint, placements.vcpus) {
            Some(found) => {
                // The fingerprint covers what the concerns see, but a change to the
                // placement algorithm could change ids without changing it.
                let unknown: Vec<&str> = found
                    .model
                    .placements()
                    .iter()
                    .map(|p| p.id.as_str())
                    .filter(|id| placements.get(id).is_none())
                    .collect();
                if unknown.is_empty() {
                    return Some(found);
                }
                tracing::warn!(path = %found.path.display(), ?unknown, "model names placements this machine does not have; retrain it");
                None
            }
            None => self
                .across_sizes(fingerprint, placements)
                .or_else(|| self.across_classes(fingerprint, placements)),
        }
    }

    /// The model across machine classes made ready for this host and the set's size, unless
    /// it refuses the host (leaving a class like it out, it did worse than no model).
    fn across_classes(&self, fingerprint: &str, set: &PlacementSet) -> Option<LoadedModel> {
        let machine = self.host.as_ref()?;
        let loaded = self.lock().classes.clone()?;
        let v = u32::try_from(set.vcpus).ok()?;
        let resources = match placed_models::resources::of_machine(machine, set) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "this host's resources cannot be counted: the model across classes is not used");
                return None;
            }
        };
        match loaded
            .model
            .for_host(fingerprint, v, &resources, placement_infos(set))
        {
            Ok(ready) => Some(LoadedModel {
                model: Arc::new(ready),
                path: loaded.path,
            }),
            Err(e) => {
                tracing::warn!(path = %loaded.path.display(), vcpus = v, error = %e, "the model across classes does not predict here");
                None
            }
        }
    }

    /// The file of the model across classes when it is what predicts `set`'s size here:
    /// the class has no model of the size, none across sizes, and the prior does not
    /// refuse the host.
    pub fn prior_for(&self, fingerprint: &str, set: &PlacementSet) -> Option<PathBuf> {
        let prior = self.lock().classes.as_ref()?.path.clone();
        let used = self.find(fingerprint, set)?;
        (used.path == prior).then_some(prior)
    }

    /// The model across classes, for status.
    pub fn classes_model(&self) -> Option<LoadedClassesModel> {
        self.lock().classes.clone()
    }

    /// The class's model across sizes made ready for the set's size. It is made again at
    /// each lookup (describing a few dozen placements), so a per-size model installed
    /// later takes over at the next one.
    fn across_sizes(&self, fingerprint: &str, set: &PlacementSet) -> Option<LoadedModel> {
        let loaded = self.lock().across.get(fingerprint).cloned()?;
        let v = u32::try_from(set.vcpus).ok()?;
        match loaded.model.for_size(v, placement_infos(set)) {
            Ok(sized) => Some(LoadedModel {
                model: Arc::new(sized),
                path: loaded.path,
            }),
            Err(e) => {
                tracing::warn!(path = %loaded.path.display(), vcpus = v, error = %e, "the model across sizes cannot predict for this size");
                None
            }
        }
    }

    /// Every model across sizes loaded, for status: the directory is read again first, so
    /// that status shows the models the daemon would use now, not the last ones a
    /// container's lookup happened to load.
    pub fn all_across(&self) -> Vec<LoadedSizesModel> {
        self.rescan();
        let mut v: Vec<LoadedSizesModel> = self.lock().across.values().cloned().collect();
        v.sort_by(|a, b| a.path.cmp(&b.path));
        v
    }

    /// Model files refused for this host, each with why, for status.
    pub fn refused(&self) -> Vec<String> {
        let index = self.lock();
        let mut v: Vec<(&PathBuf, &String)> = index.refused.iter().collect();
        v.sort();
        v.into_iter().map(|(_, why)| why.clone()).collect()
    }

    /// Every model loaded, for status (the directory read again first, as for
    /// [`ModelLibrary::all_across`]).
    pub fn all(&self) -> Vec<LoadedModel> {
        self.rescan();
        let mut v: Vec<LoadedModel> = self.lock().by_class.values().cloned().collect();
        v.sort_by(|a, b| a.path.cmp(&b.path));
        v
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Index> {
        // A panic while holding this lock cannot leave the index inconsistent (each change
        // is one insert or removal), so a poisoned lock is still usable.
        self.index.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The set's placements as models know them.
fn placement_infos(set: &PlacementSet) -> Vec<PlacementInfo> {
    set.placements
        .iter()
        .map(|p| PlacementInfo {
            id: p.id.clone(),
            scores: p.scores_in_units(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use placed_models::data::{DATA_FORMAT_VERSION, MachineHeader, PlacementInfo, RunRecord};
    use placed_models::forest::ForestParams;
    use placed_models::{ClassesModel, Dataset, Model, TrainOptions};

    const FINGERPRINT: &str = "mc1-test";
    const V: u32 = 4;

    /// A small model whose predictions depend on `scale` (so two scales give two models
    /// with different ids): three placements, two behaviours in four families.
    fn model(scale: f64) -> Model {
        model_with(scale, false)
    }

    /// [`model`], taking an `ipc` counter as an input when `counters`.
    fn model_with(scale: f64, counters: bool) -> Model {
        let placements: Vec<PlacementInfo> = (0..3)
            .map(|i| PlacementInfo {
                id: format!("p{i}"),
                scores: vec![f64::from(i)],
            })
            .collect();
        let header = MachineHeader {
            version: DATA_FORMAT_VERSION,
            fingerprint: FINGERPRINT.into(),
            v: V,
            concerns: vec!["a".into()],
            placements: placements.clone(),
        };
        let mut records = Vec::new();
        for family in ["up-a", "up-b", "down-a", "down-b"] {
            for w in 0..4 {
                let j = 0.01 * f64::from(w);
                let rel = if family.starts_with("up") {
                    [1.0, 1.0 + scale + j, 1.0 + 2.0 * scale + j]
                } else {
                    [1.0, 1.0 - scale / 2.0 - j, 1.0 - scale - j]
                };
                for (p, r) in placements.iter().zip(rel) {
                    let workload = format!("{family}-{w}");
                    let record =
                        RunRecord::simulated(FINGERPRINT, V, family, &workload, &p.id, 1000.0 * r);
                    records.push(if counters {
                        record.with_counters([("ipc".to_owned(), r)].into_iter().collect())
                    } else {
                        record
                    });
                }
            }
        }
        let data = Dataset::from_parts(header, records).expect("valid test data");
        let options = TrainOptions {
            forest: ForestParams::new().n_trees(5),
            counters_as_inputs: counters,
            ..TrainOptions::default()
        };
        placed_models::fit(&data, &options).expect("fits").0
    }

    #[test]
    fn a_model_taking_counters_is_refused_on_a_host_without_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("{FINGERPRINT}-v{V}.json"));
        let counting = model_with(0.3, true);
        assert!(
            !needs(&counting).is_empty(),
            "the test model takes counters"
        );
        install(&counting, &path);
        let without = ModelLibrary::new(dir.path().to_owned(), false);
        assert!(without.lookup(FINGERPRINT, 4).is_none());
        assert!(without.all().is_empty());
        let refused = without.refused();
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(refused[0].contains("ipc"), "{refused:?}");
        assert!(refused[0].contains("--no-counters"), "{refused:?}");
        // Where there are counters it serves.
        let with = ModelLibrary::new(dir.path().to_owned(), true);
        assert!(with.lookup(FINGERPRINT, 4).is_some());
        assert!(with.refused().is_empty());
        // Refitted without counters and installed over it: used, and no longer refused.
        install(&model(0.3), &path);
        assert!(without.lookup(FINGERPRINT, 4).is_some());
        assert!(without.refused().is_empty());
    }

    #[test]
    fn status_lists_a_model_installed_since_the_last_lookup() {
        let dir = tempfile::tempdir().unwrap();
        let lib = ModelLibrary::new(dir.path().to_owned(), true);
        assert!(lib.all().is_empty());
        install(
            &model(0.3),
            &dir.path().join(format!("{FINGERPRINT}-v{V}.json")),
        );
        // No container looked a model up meanwhile.
        assert_eq!(lib.all().len(), 1);
    }

    /// SIMULATED-like data of a synthetic machine class, with its resources
    /// (`placed_models::fake`).
    fn class_data(topology: &str, v: usize) -> Dataset {
        use placed_core::machine::TopologySource;
        let machine = Machine::load(&TopologySource::Synthetic(topology.into()), None).unwrap();
        let set = placed_core::placement::important_placements(&machine, v).unwrap();
        placed_models::fake::class_data(&machine, &set)
    }

    #[test]
    fn a_host_of_a_class_nobody_trained_is_predicted_by_the_model_across_classes() {
        let options = TrainOptions {
            forest: ForestParams::new().n_trees(20),
            counters_as_inputs: false,
            ..TrainOptions::default()
        };
        let data = [
            class_data("pack:2 numa:2 core:4 pu:2", 8),
            class_data("pack:4 numa:2 core:4 pu:2", 8),
            class_data("pack:2 numa:3 core:4 pu:2", 8),
        ];
        let corpus = placed_models::classes::Corpus::new(&data, &options).unwrap();
        let (model, _) = ClassesModel::fit(&corpus, &options).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("across-classes.json"),
            model.file_text().unwrap(),
        )
        .unwrap();
        // A three-package machine: a class none of the data is from.
        let host = Machine::load(
            &placed_core::machine::TopologySource::Synthetic("pack:3 numa:2 core:4 pu:2".into()),
            None,
        )
        .unwrap();
        let set = placed_core::placement::important_placements(&host, 8).unwrap();
        let without_host = ModelLibrary::new(dir.path().to_owned(), true);
        assert!(
            without_host.find(host.fingerprint(), &set).is_none(),
            "no machine model, no description of this host"
        );
        let lib = ModelLibrary::new(dir.path().to_owned(), true).on_host(host.clone());
        assert!(lib.classes_model().is_some());
        // The data is made for a model better than none on the class shaped most like this
        // host (six nodes over two packages), so it predicts here; refusing is the models
        // crate's test.
        let found = lib.find(host.fingerprint(), &set).unwrap_or_else(|| {
            panic!(
                "not predicted by the model across classes: {:?}",
                model.classes()
            )
        });
        assert_eq!(found.model.machine().fingerprint, host.fingerprint());
        assert!(found.model.id().contains("-classes-v8"));
        assert_eq!(
            lib.prior_for(host.fingerprint(), &set),
            Some(dir.path().join("across-classes.json"))
        );
        let note = found.model.across_classes().expect("says so");
        assert!(
            note.starts_with("across classes, not trained on this host"),
            "{note}"
        );
        let observed = |value| placed_models::Observation {
            value,
            ..Default::default()
        };
        let p = found
            .model
            .predict(&observed(1000.0), &observed(1300.0))
            .unwrap();
        assert_eq!(p.provenance, placed_models::Provenance::Simulated);
        assert_eq!(p.placements.len(), set.placements.len());
        for cell in p.placements.iter().filter(|c| !c.measured) {
            let i = cell.interval.expect("every predicted cell has an interval");
            assert!(i.low < cell.relative && cell.relative < i.high, "{cell:?}");
        }
        // A model of its own for the size takes over.
        install(
            &model_for(host.fingerprint(), &set),
            &dir.path().join("own.json"),
        );
        let own = lib.find(host.fingerprint(), &set).expect("its own model");
        assert!(own.model.across_classes().is_none());
        assert_eq!(lib.prior_for(host.fingerprint(), &set), None);
    }

    /// A per-size model of the host's own class and size.
    fn model_for(fingerprint: &str, set: &PlacementSet) -> Model {
        let data = class_data("pack:3 numa:2 core:4 pu:2", set.vcpus);
        assert_eq!(data.header().fingerprint, fingerprint);
        let options = TrainOptions {
            forest: ForestParams::new().n_trees(5),
            counters_as_inputs: false,
            ..TrainOptions::default()
        };
        placed_models::fit(&data, &options).expect("fits").0
    }

    /// Installs `model` as `path` the way placed-train does: a new file renamed over it.
    fn install(model: &Model, path: &Path) {
        let tmp = path.with_extension("json.new");
        std::fs::write(&tmp, model.file_text().expect("encodes")).expect("writable");
        std::fs::rename(&tmp, path).expect("rename");
    }

    #[test]
    fn a_replaced_or_removed_model_file_is_noticed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("{FINGERPRINT}-v{V}.json"));
        let (first, second) = (model(0.3), model(0.6));
        assert_ne!(
            first.id(),
            second.id(),
            "the test needs two different models"
        );

        install(&first, &path);
        let lib = ModelLibrary::new(dir.path().to_owned(), true);
        let found = lib.lookup(FINGERPRINT, 4).expect("loaded at start");
        assert_eq!(found.model.id(), first.id());

        // Retrained while the daemon runs: the next lookup serves the new model.
        install(&second, &path);
        let found = lib.lookup(FINGERPRINT, 4).expect("reloaded");
        assert_eq!(found.model.id(), second.id());
        assert_eq!(lib.all().len(), 1);

        // Copied over in place (same inode): noticed as well.
        let copy = dir.path().join("elsewhere.bin");
        std::fs::write(&copy, first.file_text().unwrap()).unwrap();
        std::fs::write(&path, std::fs::read(&copy).unwrap()).unwrap();
        std::fs::remove_file(&copy).unwrap();
        // As `cp` would leave it, on a file system whose clock may be too coarse to tell
        // two writes a few milliseconds apart.
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(SystemTime::now() + std::time::Duration::from_secs(5))
            .unwrap();
        let found = lib.lookup(FINGERPRINT, 4).expect("reloaded in place");
        assert_eq!(found.model.id(), first.id());

        // Removed: no model any more, in lookups and in status.
        std::fs::remove_file(&path).unwrap();
        assert!(lib.lookup(FINGERPRINT, 4).is_none());
        assert!(lib.all().is_empty());
    }
}
