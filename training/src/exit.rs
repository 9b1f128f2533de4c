//! `placed-train`'s exit code for an error: the table shared by the three binaries
//! (`placed_core::exit`), chosen from the error's type, never from its text.

use std::error::Error;

use placed_core::exit::Exit;

use crate::calibrate::CalibrateError;
use crate::collect::CollectError;
use crate::collect::data_file::DataFileError;
use crate::pipeline::PipelineError;

/// The exit code of an error, from the first error in its chain whose type says.
pub fn exit_of(err: &(dyn Error + 'static)) -> Exit {
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(code) = known(e) {
            return code;
        }
        next = e.source();
    }
    Exit::Failed
}

fn known(e: &(dyn Error + 'static)) -> Option<Exit> {
    if let Some(c) = e.downcast_ref::<CollectError>() {
        if matches!(c, CollectError::Interrupted { .. }) {
            return Some(Exit::Interrupted);
        }
    }
    if let Some(CalibrateError::Interrupted { .. }) = e.downcast_ref::<CalibrateError>() {
        return Some(Exit::Interrupted);
    }
    match e.downcast_ref::<PipelineError>() {
        // One placement: nothing can be predicted on this host; train on another.
        Some(PipelineError::NothingToPredict { .. }) => return Some(Exit::Refused),
        // Skipped measurements: the same command again retries them.
        Some(PipelineError::Incomplete { .. }) => return Some(Exit::Unavailable),
        _ => {}
    }
    if let Some(d) = e.downcast_ref::<DataFileError>() {
        if !matches!(d, DataFileError::Io { .. }) {
            return Some(Exit::BadInput);
        }
    }
    if let Some(placed_models::data::DataError::Invalid { .. }) =
        e.downcast_ref::<placed_models::data::DataError>()
    {
        return Some(Exit::BadInput);
    }
    if let Some(io) = e.downcast_ref::<std::io::Error>() {
        return Some(match io.kind() {
            std::io::ErrorKind::NotFound => Exit::NotFound,
            std::io::ErrorKind::PermissionDenied => Exit::Refused,
            _ => Exit::Failed,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_not_found_and_an_interruption_is_130() {
        let missing = placed_models::data::DataError::Io {
            path: "absent.jsonl".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        assert_eq!(exit_of(&missing), Exit::NotFound);
        let stopped = CollectError::Interrupted { signal: 2 };
        assert_eq!(exit_of(&stopped).code(), 130);
    }
}
