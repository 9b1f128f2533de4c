//! What the model across sizes and the model across machine classes share as files: a
//! forest over described placements ([`crate::across`]), the description of where a host is
//! probed, and the relative error its intervals allow for, inside the checksummed envelope
//! every model file has ([`crate::model_file`]). Each kind adds its own fields and checks.

use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::across::input_width;
use crate::forest::Forest;
use crate::model::id_of;
use crate::model_file::{
    Head, ModelFileError, envelope_text, open_envelope, parse_error, read_head, read_text,
};

/// The body of a model file holding one forest over described placements.
pub(crate) trait ForestBody: Serialize + DeserializeOwned {
    /// The file's `format` field.
    const FORMAT: &'static str;
    /// The version this build reads and writes.
    const VERSION: u32;
    /// How many values describe one placement.
    fn description_width(&self) -> usize;
    /// Where a host is probed: its placement described nearest this.
    fn probe_description(&self) -> &[f64];
    /// The forest.
    fn forest(&self) -> &Forest;
    /// The relative error its intervals allow for (a fraction).
    fn error_quantile(&self) -> f64;
    /// What else must hold for this kind of file: the reason when it does not.
    fn check(&self) -> Result<(), String>;
}

/// A body's id: the start of the SHA-256 of its bytes, as the file will hold them.
pub(crate) fn body_id(body: &impl Serialize) -> Result<String, serde_json::Error> {
    Ok(id_of(&serde_json::to_vec(body)?))
}

/// Reads and checks a file of `B`: its body and id.
pub(crate) fn load<B: ForestBody>(path: &Path) -> Result<(B, String), ModelFileError> {
    let text = read_text(path)?;
    read(&text, path, &read_head(&text, path)?)
}

/// A file of `B` already read, its head parsed: its body and id.
pub(crate) fn read<B: ForestBody>(
    text: &str,
    path: &Path,
    head: &Head,
) -> Result<(B, String), ModelFileError> {
    let bytes = open_envelope(text, path, head, B::FORMAT, B::VERSION)?;
    let body: B = serde_json::from_str(bytes).map_err(parse_error(path))?;
    let inconsistent = |reason: String| ModelFileError::Inconsistent {
        path: path.to_owned(),
        reason,
    };
    let width = body.description_width();
    if width == 0 || body.probe_description().len() != width {
        return Err(inconsistent(
            "its probe's description does not match how it describes placements".into(),
        ));
    }
    body.forest()
        .check(input_width(width), 1)
        .map_err(|e| inconsistent(e.to_string()))?;
    let q = body.error_quantile();
    if !q.is_finite() || q < 0.0 {
        return Err(inconsistent(format!(
            "its error quantile {q} is not a fraction"
        )));
    }
    body.check().map_err(inconsistent)?;
    Ok((body, id_of(bytes.as_bytes())))
}

/// The file's content, written as model files are.
pub(crate) fn text<B: ForestBody>(body: &B) -> Result<String, serde_json::Error> {
    envelope_text(B::FORMAT, B::VERSION, body)
}
