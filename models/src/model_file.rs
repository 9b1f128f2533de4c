//! Model files: `{"format":"placed-model","version":1,"sha256":"…","model":{…}}`. The
//! checksum covers the exact bytes of `model`, so a damaged file that still parses is caught;
//! the version is the format's own, independent of the crate's. Writes are atomic.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::model::{MachineClass, Model, ModelBody, id_of, sha256_hex};

/// The `format` field of every model file.
pub const MODEL_FORMAT: &str = "placed-model";
/// The model file version this build reads and writes.
pub const MODEL_VERSION: u32 = 1;

/// Why a model file could not be read, used or written.
#[derive(Debug, thiserror::Error)]
pub enum ModelFileError {
    /// Reading, writing or renaming failed.
    #[error("cannot {action} model file {path}")]
    Io {
        /// What was being done: `read`, `write`, `rename`, `sync`.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The file ends early: an interrupted copy or a full disk.
    #[error("model file {path} is truncated; train again or copy it again")]
    Truncated {
        /// The file.
        path: PathBuf,
    },
    /// Not JSON, or JSON of the wrong shape.
    #[error("model file {path} is corrupt")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The parser's complaint.
        source: crate::json_error::JsonError,
    },
    /// JSON, but not a placed model.
    #[error("{path} is not a placed model file (format {found:?}, expected {expected:?})")]
    NotAModel {
        /// The file.
        path: PathBuf,
        /// The `format` it has.
        found: String,
        /// The format that was expected.
        expected: &'static str,
    },
    /// A format version this build does not read.
    #[error(
        "model file {path} has version {found}; this build reads version {supported}: retrain with this placed-train"
    )]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// Its version.
        found: u32,
        /// The version this build reads.
        supported: u32,
    },
    /// The body's bytes do not match the stored checksum.
    #[error("model file {path} is damaged: its checksum does not match its contents")]
    ChecksumMismatch {
        /// The file.
        path: PathBuf,
    },
    /// The model could not be encoded (a bug, not a file problem).
    #[error("cannot encode the model for {path}")]
    Encode {
        /// The file being written.
        path: PathBuf,
        /// The encoder's complaint.
        source: serde_json::Error,
    },
    /// The body parsed but contradicts itself.
    #[error("model file {path} is inconsistent: {reason}")]
    Inconsistent {
        /// The file.
        path: PathBuf,
        /// What contradicts what.
        reason: String,
    },
    /// Trained for another machine class.
    #[error(
        "model file {path} is for machine class {found:?}, this machine is {expected:?}: train a model on this machine class"
    )]
    WrongMachine {
        /// The file.
        path: PathBuf,
        /// This machine's fingerprint.
        expected: String,
        /// The model's fingerprint.
        found: String,
    },
    /// Trained for another container size.
    #[error("model file {path} is for containers of {found} vCPUs, not {expected}")]
    WrongV {
        /// The file.
        path: PathBuf,
        /// The v asked for.
        expected: u32,
        /// The model's v.
        found: u32,
    },
}

#[derive(Deserialize)]
pub(crate) struct Head {
    format: String,
    version: u32,
}

#[derive(Serialize, Deserialize)]
struct Envelope<'a> {
    format: String,
    version: u32,
    sha256: String,
    #[serde(borrow)]
    model: &'a RawValue,
}

impl Model {
    /// Reads and checks a model file.
    pub fn load(path: &Path) -> Result<Self, ModelFileError> {
        let text = read_text(path)?;
        Self::from_file_text(&text, path, &read_head(&text, path)?)
    }

    /// Reads a model file and refuses it unless it is for `machine`.
    pub fn load_for(path: &Path, machine: &MachineClass) -> Result<Self, ModelFileError> {
        let model = Self::load(path)?;
        let found = model.machine();
        if found.fingerprint != machine.fingerprint {
            return Err(ModelFileError::WrongMachine {
                path: path.to_owned(),
                expected: machine.fingerprint.clone(),
                found: crate::json_error::clip(&found.fingerprint, 80),
            });
        }
        if found.v != machine.v {
            return Err(ModelFileError::WrongV {
                path: path.to_owned(),
                expected: machine.v,
                found: found.v,
            });
        }
        Ok(model)
    }

    fn from_file_text(text: &str, path: &Path, head: &Head) -> Result<Self, ModelFileError> {
        let bytes = open_envelope(text, path, head, MODEL_FORMAT, MODEL_VERSION)?;
        let body: ModelBody = serde_json::from_str(bytes).map_err(parse_error(path))?;
        Self::from_body(body, id_of(bytes.as_bytes())).map_err(|reason| {
            ModelFileError::Inconsistent {
                path: path.to_owned(),
                reason,
            }
        })
    }

    /// The model file's content, to be written as a whole (placed-train writes it
    /// atomically, with [`MODEL_FILE_MODE`] and [`MODEL_FILE_GROUP`]); [`Model::load`]
    /// reads it back. An error is a bug in the encoder's input, not a file problem.
    pub fn file_text(&self) -> Result<String, serde_json::Error> {
        envelope_text(MODEL_FORMAT, MODEL_VERSION, &self.body)
    }
}

/// Any model file the daemon reads from its model directory.
#[derive(Debug)]
pub enum ModelFile {
    /// A model for one container size.
    PerSize(Box<Model>),
    /// A model across container sizes.
    AcrossSizes(Box<crate::sizes_model::SizesModel>),
    /// A model across machine classes.
    AcrossClasses(Box<crate::classes_model::ClassesModel>),
}

impl ModelFile {
    /// Reads a model file of any kind, telling them apart by their `format`.
    pub fn load(path: &Path) -> Result<Self, ModelFileError> {
        let text = read_text(path)?;
        let head = read_head(&text, path)?;
        if head.format == crate::sizes_model::SIZES_MODEL_FORMAT {
            crate::sizes_model::SizesModel::from_file_text(&text, path, &head)
                .map(|m| Self::AcrossSizes(Box::new(m)))
        } else if head.format == crate::classes_model::CLASSES_MODEL_FORMAT {
            crate::classes_model::ClassesModel::from_file_text(&text, path, &head)
                .map(|m| Self::AcrossClasses(Box::new(m)))
        } else {
            Model::from_file_text(&text, path, &head).map(|m| Self::PerSize(Box::new(m)))
        }
    }
}

/// A model file's text.
pub(crate) fn read_text(path: &Path) -> Result<String, ModelFileError> {
    crate::regular_file::read_to_string(path).map_err(|source| ModelFileError::Io {
        action: "read",
        path: path.to_owned(),
        source,
    })
}

/// A model file's format and version, read before anything else: a future layout is
/// refused as such, not as corrupt, and each kind of model file goes to its own reader.
pub(crate) fn read_head(text: &str, path: &Path) -> Result<Head, ModelFileError> {
    serde_json::from_str(text).map_err(parse_error(path))
}

pub(crate) fn parse_error(path: &Path) -> impl Fn(serde_json::Error) -> ModelFileError + '_ {
    move |source| {
        let source = crate::json_error::JsonError::from(source);
        if source.is_eof() {
            ModelFileError::Truncated {
                path: path.to_owned(),
            }
        } else {
            ModelFileError::Corrupt {
                path: path.to_owned(),
                source,
            }
        }
    }
}

/// The body of a model file of `format` and `version`, its checksum verified.
pub(crate) fn open_envelope<'a>(
    text: &'a str,
    path: &Path,
    head: &Head,
    format: &'static str,
    version: u32,
) -> Result<&'a str, ModelFileError> {
    if head.format != format {
        return Err(ModelFileError::NotAModel {
            path: path.to_owned(),
            found: crate::json_error::clip(&head.format, 80),
            expected: format,
        });
    }
    if head.version != version {
        return Err(ModelFileError::UnsupportedVersion {
            path: path.to_owned(),
            found: head.version,
            supported: version,
        });
    }
    let envelope: Envelope<'_> = serde_json::from_str(text).map_err(parse_error(path))?;
    let bytes = envelope.model.get();
    if sha256_hex(bytes.as_bytes()) != envelope.sha256 {
        return Err(ModelFileError::ChecksumMismatch {
            path: path.to_owned(),
        });
    }
    Ok(bytes)
}

/// The text of a model file of `format` and `version` holding `body`: one line, with the
/// checksum of the body's exact bytes.
pub(crate) fn envelope_text(
    format: &str,
    version: u32,
    body: &impl Serialize,
) -> Result<String, serde_json::Error> {
    let raw = RawValue::from_string(serde_json::to_string(body)?)?;
    let envelope = Envelope {
        format: format.to_owned(),
        version,
        sha256: sha256_hex(raw.get().as_bytes()),
        model: &raw,
    };
    let mut text = serde_json::to_string(&envelope)?;
    text.push('\n');
    Ok(text)
}

/// A model file's mode: the daemon reads it through the `placed` group; nobody else needs
/// to read what the training data made of this host. Whoever writes a model file
/// ([`Model::file_text`]) gives it this mode and [`MODEL_FILE_GROUP`] before it appears.
pub const MODEL_FILE_MODE: u32 = 0o640;

/// The group model files are given where the host has it (the package creates it).
pub const MODEL_FILE_GROUP: &str = "placed";

/// The command that trains a model for `vcpus` vCPUs on this host and installs it where the
/// daemon looks (`dir`, its `daemon.model_dir`). The no-model error, `placectl status` and
/// `placed-train`'s own test all take it from here, so the advice cannot drift from `placed-train`'s flags
/// (training/src/bin/placed-train.rs: `train` with `--vcpus`, `--workloads`, `--model-dir`).
pub fn train_command(vcpus: impl std::fmt::Display, dir: impl std::fmt::Display) -> String {
    format!("placed-train train --vcpus {vcpus} --workloads builtin --model-dir {dir}")
}

#[cfg(test)]
mod tests;
