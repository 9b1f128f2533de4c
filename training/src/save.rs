//! Writing what placed-train makes: model files and data sets, each replaced atomically
//! through [`placed_host::atomic_file`] (temporary file, fsync, rename, fsync of the
//! directory), so that a crash leaves the old file or the new one, never a part.
//! placed-models makes the bytes ([`Model::file_text`], [`Dataset::to_jsonl`]); the
//! durability is placed-host's, the one implementation the daemon's state file uses too.

use std::path::Path;

use placed_host::atomic_file;
use placed_models::data::{DataError, Dataset};
use placed_models::model_file::{MODEL_FILE_GROUP, MODEL_FILE_MODE, ModelFileError};
use placed_models::{ClassesModel, Model, SizesModel};

/// Something placed-train writes to a file.
pub trait Save {
    type Error;

    /// Replaces `path` with it, atomically.
    fn save(&self, path: &Path) -> Result<(), Self::Error>;
}

impl Save for Model {
    type Error = ModelFileError;

    /// Writes the model with the model file's mode and group ([`MODEL_FILE_MODE`],
    /// [`MODEL_FILE_GROUP`]), given before the file appears.
    fn save(&self, path: &Path) -> Result<(), ModelFileError> {
        write_model_file(path, self.file_text())
    }
}

impl Save for SizesModel {
    type Error = ModelFileError;

    /// Writes the model as per-size models are written.
    fn save(&self, path: &Path) -> Result<(), ModelFileError> {
        write_model_file(path, self.file_text())
    }
}

impl Save for ClassesModel {
    type Error = ModelFileError;

    /// Writes the model as per-size models are written.
    fn save(&self, path: &Path) -> Result<(), ModelFileError> {
        write_model_file(path, self.file_text())
    }
}

impl Save for Dataset {
    type Error = DataError;

    /// Writes the data set as JSON lines, header first.
    fn save(&self, path: &Path) -> Result<(), DataError> {
        let io = |source| DataError::Io {
            path: path.to_owned(),
            source,
        };
        let bytes = self.to_jsonl().map_err(|e| io(std::io::Error::other(e)))?;
        atomic_file::write(path, &[&bytes]).map_err(io)
    }
}

pub(crate) fn write_model_file(
    path: &Path,
    text: Result<String, serde_json::Error>,
) -> Result<(), ModelFileError> {
    let text = text.map_err(|source| ModelFileError::Encode {
        path: path.to_owned(),
        source,
    })?;
    atomic_file::write_owned(
        path,
        &[text.as_bytes()],
        MODEL_FILE_MODE,
        atomic_file::group_id(MODEL_FILE_GROUP),
    )
    .map_err(|source| ModelFileError::Io {
        action: "write",
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate::{SimMachine, SimulationOptions, simulate};
    use placed_core::machine::{Machine, TopologySource};
    use placed_core::placement::important_placements;
    use placed_models::{MachineClass, TrainOptions};

    fn simulated() -> Dataset {
        let machine = Machine::load(
            &TopologySource::Synthetic("pack:2 numa:2 l3:1 core:2 pu:2".into()),
            None,
        )
        .unwrap();
        let set = important_placements(&machine, 4).unwrap();
        let sim = SimMachine::from_placed(&machine, &set).unwrap();
        let options = SimulationOptions {
            families: 6,
            workloads_per_family: 2,
            ..SimulationOptions::default()
        };
        simulate(&sim, &options).unwrap()
    }

    /// What placed-train writes, the daemon's reader reads back: the same model, the same
    /// records, with the model file's mode.
    #[test]
    fn saved_files_load_back_and_a_model_file_is_readable_by_owner_and_group_only() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let data = simulated();
        let path = dir.path().join("data.jsonl");
        data.save(&path).unwrap();
        let back = Dataset::load(&path).unwrap();
        assert_eq!(back.records().len(), data.records().len());
        let options = TrainOptions {
            forest: placed_models::forest::ForestParams::new().n_trees(5),
            ..TrainOptions::default()
        };
        let (model, _) = placed_models::train::fit(&data, &options).unwrap();
        let file = dir.path().join("model.json");
        // An older, world-readable file is replaced by one with the model file's mode.
        std::fs::write(&file, "old").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        model.save(&file).unwrap();
        let class = MachineClass {
            fingerprint: data.header().fingerprint.clone(),
            v: data.header().v,
        };
        assert_eq!(Model::load_for(&file, &class).unwrap().id(), model.id());
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        // Neither others nor group writers: at most rw-r-----.
        assert_eq!(mode & !MODEL_FILE_MODE, 0, "{mode:o}");
        assert_eq!(mode & 0o600, 0o600, "{mode:o}");
        let err = model
            .save(&dir.path().join("missing/model.json"))
            .unwrap_err();
        assert!(
            matches!(
                err,
                ModelFileError::Io {
                    action: "write",
                    ..
                }
            ),
            "{err}"
        );
    }
}
