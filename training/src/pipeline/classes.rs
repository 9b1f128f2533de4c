//! The model across machine classes (docs/models.md, "Across classes"): a corpus of data
//! files of many classes (SIMULATED for the real topologies of the corpus, or collected),
//! measured by leaving one class out, fitted, and installed where the daemon's model
//! library finds it.
//!
//! A corpus is a directory of ordinary data files (docs/models.md, "Training data"), one
//! per machine class and size, each with its `resources` line.

use std::path::{Path, PathBuf};

use placed_core::machine::{Machine, TopologySource};
use placed_core::placement::{PlacementSet, important_placements};
use placed_models::classes::{AcrossClasses, ClassesError, Corpus};
use placed_models::data::DataError;
use placed_models::{ClassesModel, Dataset, ModelFile, TrainOptions};

use crate::save::Save as _;
use crate::simulate::{SimMachine, SimulateError, SimulationOptions, simulate};

/// The file name the model across classes is installed under in a model directory: one per
/// directory, so installing a new one replaces the old.
pub const CLASSES_MODEL_FILE: &str = "across-classes.json";

/// The real topologies of the corpus the evaluation in docs/models.md ("Across classes")
/// simulates, under `tests/topologies/`: Intel (two sockets, four nodes, sub-NUMA
/// clustering), AMD (the 8-node Opteron 6272, an 8-node Opteron, EPYC Naples, Rome and
/// Milan chiplet parts) and Arm (ThunderX2).
pub const CORPUS_TOPOLOGIES: &[&str] = &[
    "hwloc-xml/32em64t-2n8c2t-pci-normalio.xml",
    "mpibind-xml/cascade-lake-ap-snl-hwloc1.xml",
    "hwloc-xml/96em64t-4n4d3ca2co-pci.xml",
    "hwloc-xml/memorysidecaches.xml",
    "hwloc-xml/x86+linux-64amd64-4p2n4ca2co.xml",
    "hwloc-xml/16amd64-4distances.xml",
    "mpibind-xml/epyc-corona.xml",
    "mpibind-xml/epyc-corona-p2.xml",
    "sparecores-xml/vultr__vbm-24c-256gb-amd.xml",
    "mpibind-xml/arm64-ulna-hwloc1.xml",
];

/// Fewest important placements a class's size must have: a baseline, a probe, and at least
/// two to predict, so that a class says something about the placements it is predicted on.
pub const MIN_PLACEMENTS: usize = 4;

/// Most important placements a corpus size may have, so a class of many placements does
/// not outweigh the others and the own model's probe search stays short.
pub const MAX_PLACEMENTS: usize = 24;

/// Why a corpus could not be made, read or used.
#[derive(Debug, thiserror::Error)]
pub enum ClassesPipelineError {
    /// A topology that did not load.
    #[error("topology {path}")]
    Machine {
        path: PathBuf,
        #[source]
        source: Box<placed_core::machine::MachineError>,
    },
    /// No size of the topology has a useful number of placements.
    #[error(
        "topology {path} has no container size with {MIN_PLACEMENTS} to {MAX_PLACEMENTS} important placements among {tried}: it adds nothing to the corpus; leave it out"
    )]
    NoSize { path: PathBuf, tried: String },
    /// Simulating failed.
    #[error("simulating {path}")]
    Simulate {
        path: PathBuf,
        #[source]
        source: Box<SimulateError>,
    },
    /// A data file of the corpus.
    #[error(transparent)]
    Data(#[from] DataError),
    /// The corpus directory.
    #[error("cannot read the corpus directory {path}")]
    Dir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A corpus without data files.
    #[error("the corpus directory {path} holds no data files (*.jsonl)")]
    Empty { path: PathBuf },
    /// Measuring or fitting the model across classes.
    #[error(transparent)]
    Classes(#[from] ClassesError),
    /// Writing or reading back the model.
    #[error(transparent)]
    ModelFile(#[from] placed_models::ModelFileError),
}

/// One data file written into a corpus.
#[derive(Debug, Clone, PartialEq)]
pub struct CorpusFile {
    /// Where.
    pub path: PathBuf,
    /// The topology it was simulated for.
    pub source: PathBuf,
    /// Its machine's topology, as its resources say.
    pub topology: String,
    /// vCPUs.
    pub v: u32,
    /// Important placements.
    pub placements: usize,
}

/// The container size a corpus simulates for `machine`: the largest of a quarter, an
/// eighth, a half and a sixteenth of its PUs (in that order) with a useful number of
/// important placements. A quarter leaves room for every kind of placement (packed and
/// spread, one node and several) on most machines.
pub fn corpus_size(machine: &Machine, path: &Path) -> Result<PlacementSet, ClassesPipelineError> {
    let pus = machine.pus.usable.len();
    let mut tried = Vec::new();
    for divisor in [4, 8, 2, 16] {
        let v = pus / divisor;
        if v < 2 || tried.contains(&v) {
            continue;
        }
        tried.push(v);
        if let Ok(set) = important_placements(machine, v) {
            if (MIN_PLACEMENTS..=MAX_PLACEMENTS).contains(&set.placements.len()) {
                return Ok(set);
            }
        }
    }
    Err(ClassesPipelineError::NoSize {
        path: path.to_owned(),
        tried: tried
            .iter()
            .map(|v| format!("v = {v}"))
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// SIMULATED data for each topology file at its corpus size, written into `dir` as
/// `<fingerprint>-v<N>.jsonl`. Every class gets the same families (the same seed), as
/// the same workloads would be run on every machine.
pub fn simulate_corpus(
    topologies: &[PathBuf],
    options: &SimulationOptions,
    dir: &Path,
) -> Result<Vec<CorpusFile>, ClassesPipelineError> {
    std::fs::create_dir_all(dir).map_err(|source| ClassesPipelineError::Dir {
        path: dir.to_owned(),
        source,
    })?;
    let mut written = Vec::new();
    for path in topologies {
        let machine =
            Machine::load(&TopologySource::XmlFile(path.clone()), None).map_err(|source| {
                ClassesPipelineError::Machine {
                    path: path.clone(),
                    source: Box::new(source),
                }
            })?;
        let set = corpus_size(&machine, path)?;
        let simulated = SimMachine::from_placed(&machine, &set)
            .and_then(|sim| simulate(&sim, options))
            .map_err(|source| ClassesPipelineError::Simulate {
                path: path.clone(),
                source: Box::new(source),
            })?;
        let h = simulated.header();
        let out = dir.join(format!("{}-v{}.jsonl", h.fingerprint, h.v));
        simulated.save(&out)?;
        written.push(CorpusFile {
            path: out,
            source: path.clone(),
            topology: simulated
                .resources()
                .map(|r| r.machine.topology.clone())
                .unwrap_or_default(),
            v: h.v,
            placements: h.placements.len(),
        });
    }
    Ok(written)
}

/// Every data file (`*.jsonl`) of a corpus directory, in file-name order.
pub fn load_corpus(dir: &Path) -> Result<Vec<Dataset>, ClassesPipelineError> {
    let entries = std::fs::read_dir(dir).map_err(|source| ClassesPipelineError::Dir {
        path: dir.to_owned(),
        source,
    })?;
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(ClassesPipelineError::Empty {
            path: dir.to_owned(),
        });
    }
    Ok(files
        .iter()
        .map(|f| Dataset::load(f))
        .collect::<Result<Vec<_>, _>>()?)
}

/// Leave-one-class-out over the corpus, and with `ablation` once more without each
/// resource group.
pub fn evaluate(
    data: &[Dataset],
    options: &TrainOptions,
    ablation: bool,
) -> Result<
    Vec<(
        Option<placed_models::resources::FeatureGroup>,
        AcrossClasses,
    )>,
    ClassesPipelineError,
> {
    let corpus = Corpus::new(data, options)?;
    if ablation {
        Ok(corpus.ablation(options)?)
    } else {
        let full = corpus.leave_one_class_out(
            &placed_models::resources::ResourceDescriber::default(),
            options,
        )?;
        Ok(vec![(None, full)])
    }
}

/// The model across classes fitted on the corpus, with its leave-one-class-out figures.
pub fn build(
    data: &[Dataset],
    options: &TrainOptions,
) -> Result<(ClassesModel, AcrossClasses), ClassesPipelineError> {
    let corpus = Corpus::new(data, options)?;
    Ok(ClassesModel::fit(&corpus, options)?)
}

/// Writes the model to `path` (written 0640, atomically) and reads it back as the daemon
/// will.
pub fn write(model: &ClassesModel, path: &Path) -> Result<(), ClassesPipelineError> {
    model.save(path)?;
    match ModelFile::load(path)? {
        ModelFile::AcrossClasses(back) => debug_assert_eq!(back.id(), model.id()),
        _ => debug_assert!(false, "written as another kind"),
    }
    Ok(())
}

/// Installs the model into a model directory as [`CLASSES_MODEL_FILE`].
pub fn install(model: &ClassesModel, dir: &Path) -> Result<PathBuf, ClassesPipelineError> {
    std::fs::create_dir_all(dir).map_err(|source| ClassesPipelineError::Dir {
        path: dir.to_owned(),
        source,
    })?;
    let path = dir.join(CLASSES_MODEL_FILE);
    write(model, &path)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three real topologies of the corpus: a 2-socket Intel, the 8-node Opteron and a
    /// 2-socket ThunderX2 (Arm), few families: fast and deterministic.
    pub(crate) fn small_corpus(dir: &Path) -> Vec<CorpusFile> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/topologies");
        let topologies = [
            "hwloc-xml/32em64t-2n8c2t-pci-normalio.xml",
            "hwloc-xml/x86+linux-64amd64-4p2n4ca2co.xml",
            "mpibind-xml/arm64-ulna-hwloc1.xml",
        ]
        .map(|t| root.join(t));
        let options = SimulationOptions {
            families: 16,
            workloads_per_family: 2,
            ..SimulationOptions::default()
        };
        simulate_corpus(&topologies, &options, dir).unwrap()
    }

    fn quick() -> TrainOptions {
        TrainOptions {
            forest: placed_models::forest::ForestParams::new().n_trees(10),
            ..TrainOptions::default()
        }
    }

    #[test]
    fn a_simulated_corpus_is_evaluated_built_and_installed() {
        let dir = tempfile::tempdir().unwrap();
        let corpus = dir.path().join("corpus");
        let written = small_corpus(&corpus);
        assert_eq!(written.len(), 3);
        for f in &written {
            assert!(
                (MIN_PLACEMENTS..=MAX_PLACEMENTS).contains(&f.placements),
                "{f:?}"
            );
            assert!(!f.topology.is_empty());
        }
        let data = load_corpus(&corpus).unwrap();
        assert_eq!(data.len(), 3);
        for d in &data {
            assert_eq!(d.provenance(), placed_models::Provenance::Simulated);
            assert!(d.resources().is_some(), "written with its resources");
        }
        let (model, report) = build(&data, &quick()).unwrap();
        assert_eq!(report.classes.len(), 3);
        assert!(report.overall().cells > 0);
        let models = dir.path().join("models");
        let path = install(&model, &models).unwrap();
        assert_eq!(path, models.join(CLASSES_MODEL_FILE));
        assert!(matches!(
            ModelFile::load(&path).unwrap(),
            ModelFile::AcrossClasses(_)
        ));
    }

    #[test]
    fn an_empty_corpus_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let e = load_corpus(dir.path()).unwrap_err();
        assert!(matches!(e, ClassesPipelineError::Empty { .. }), "{e}");
    }
}
