//! `placed-train`'s exit code for an error: the table shared by the three binaries
//! (`placed_core::exit`), chosen from the error's type, never from its text. The one
//! mapping of the binary: [`exit_of`].

use std::error::Error;

use placed_core::exit::Exit;

use crate::calibrate::CalibrateError;
use crate::cli::CliError;
use crate::collect::CollectError;
use crate::collect::data_file::DataFileError;
use crate::pipeline::PipelineError;
use crate::policies::ReplayError;

/// The exit code of a failed command.
pub fn exit_of(err: &CliError) -> Exit {
    match err {
        CliError::Usage(_) => Exit::BadInput,
        // The same command again measures what was skipped (docs/training.md), as for
        // `train` (PipelineError::Incomplete).
        CliError::Incomplete { .. } => Exit::Unavailable,
        CliError::Failed(cause) | CliError::Step { source: cause, .. } => of_error(cause.as_ref()),
    }
}

/// The exit code of a library's error, from the first error in its chain whose type says.
pub fn of_error(err: &(dyn Error + 'static)) -> Exit {
    placed_core::exit::from_chain(err, known)
}

/// The exit code of the pipelines', the collector's, calibration's and the replay's errors;
/// then [`of_models`].
fn known(e: &(dyn Error + 'static)) -> Option<Exit> {
    // Transparent variants hand `source()` straight to their inner error's cause, so the
    // wrappers are opened here rather than found further down the chain.
    if let Some(p) = e.downcast_ref::<PipelineError>() {
        return match p {
            PipelineError::Collect(c) => collect(c),
            // One placement: nothing can be predicted on this host; train on another.
            PipelineError::NothingToPredict { .. } => Some(Exit::Refused),
            // Skipped measurements: the same command again retries them.
            PipelineError::Incomplete { .. } => Some(Exit::Unavailable),
            PipelineError::Data(d) => data(d),
            // The data does not make a model good enough to act on: the operator decides.
            PipelineError::BelowGate { .. } => Some(Exit::Refused),
            // Too noisy to fit: the same, measured again somewhere quieter.
            PipelineError::TooLittleUsable { .. } => Some(Exit::Refused),
            // No size this host can tell placements apart for: train on another.
            PipelineError::NoSizeToTrain { .. } => Some(Exit::Refused),
            PipelineError::OneOutForSeveralSizes => Some(Exit::BadInput),
            _ => None,
        };
    }
    if let Some(c) = e.downcast_ref::<CollectError>() {
        return collect(c);
    }
    if let Some(t) = e.downcast_ref::<crate::pipeline::trial::TrialError>() {
        use crate::pipeline::trial::TrialError as T;
        return match t {
            // A class's data that cannot stand for a host: the request is wrong.
            T::TooFewFamilies { .. } | T::NoResources => Some(Exit::BadInput),
            T::Classes(c) => of_models(c),
            T::ForHost(f) => of_models(f),
            T::Check(c) => of_models(c),
            T::Data(d) => data(d),
            T::Impute(_) | T::Train(_) | T::NothingChecked => None,
        };
    }
    match e.downcast_ref::<CalibrateError>() {
        Some(CalibrateError::Interrupted { .. }) => return Some(Exit::Interrupted),
        // Figures this host cannot vouch for: the operator quiets it or forces them.
        Some(CalibrateError::Refused { .. }) => return Some(Exit::Refused),
        _ => {}
    }
    if let Some(r) = e.downcast_ref::<ReplayError>() {
        // Data and machine that do not belong together, or a goal no policy accepts.
        if matches!(
            r,
            ReplayError::OtherMachine { .. }
                | ReplayError::UnknownPlacement { .. }
                | ReplayError::Goal { .. }
        ) {
            return Some(Exit::BadInput);
        }
    }
    of_models(e)
}

/// The exit codes of the model library's errors and of the commands over it: production
/// data, checks, sizes, corpora, hold-outs, data and model files.
fn of_models(e: &(dyn Error + 'static)) -> Option<Exit> {
    // A challenger no better than the installed model: a clean "no", with the figures.
    if e.is::<crate::cli::production::NotBetter>() {
        return Some(Exit::No);
    }
    if let Some(placed_models::impute::ImputeError::OtherMachine { .. }) =
        e.downcast_ref::<placed_models::impute::ImputeError>()
    {
        // Production data of another class or size than --data: the request is wrong.
        return Some(Exit::BadInput);
    }
    if let Some(m) = e.downcast_ref::<placed_models::data::merge::MergeError>() {
        return match m {
            placed_models::data::merge::MergeError::Data(d) => data(d),
            // Files that do not belong together: the request is wrong.
            _ => Some(Exit::BadInput),
        };
    }
    if let Some(c) = e.downcast_ref::<placed_models::check::CheckError>() {
        // Data of another machine, or without the model's placements.
        if !matches!(c, placed_models::check::CheckError::Predict { .. }) {
            return Some(Exit::BadInput);
        }
    }
    if let Some(
        placed_models::sizes::SizesError::TooFewSizes { .. }
        | placed_models::sizes::SizesError::OtherMachine { .. }
        | placed_models::sizes::SizesError::DuplicateSize { .. },
    ) = e.downcast_ref::<placed_models::sizes::SizesError>()
    {
        // Files that do not belong together: the request is wrong.
        return Some(Exit::BadInput);
    }
    match e.downcast_ref::<crate::pipeline::classes::ClassesPipelineError>() {
        // A corpus that is no corpus, or a topology that adds nothing: the request is wrong.
        Some(
            crate::pipeline::classes::ClassesPipelineError::Empty { .. }
            | crate::pipeline::classes::ClassesPipelineError::NoSize { .. },
        ) => return Some(Exit::BadInput),
        Some(crate::pipeline::classes::ClassesPipelineError::Data(d)) => return data(d),
        Some(crate::pipeline::classes::ClassesPipelineError::ModelFile(m)) => {
            return model_file(m);
        }
        _ => {}
    }
    if let Some(
        placed_models::classes::ClassesError::TooFewClasses { .. }
        | placed_models::classes::ClassesError::NoResources { .. }
        | placed_models::classes::ClassesError::Duplicate { .. },
    ) = e.downcast_ref::<placed_models::classes::ClassesError>()
    {
        // Files that do not make a corpus: the request is wrong.
        return Some(Exit::BadInput);
    }
    match e.downcast_ref::<placed_models::classes_model::ForHostError>() {
        // The model says it must not predict here.
        Some(placed_models::classes_model::ForHostError::WorseThanNoModel { .. }) => {
            return Some(Exit::Refused);
        }
        Some(_) => return Some(Exit::BadInput),
        None => {}
    }
    match e.downcast_ref::<placed_models::hold_out::HoldOutError>() {
        // A group the data lacks, or every family held out: the request is wrong.
        Some(
            placed_models::hold_out::HoldOutError::NoSuchGroup { .. }
            | placed_models::hold_out::HoldOutError::Everything { .. },
        ) => return Some(Exit::BadInput),
        Some(placed_models::hold_out::HoldOutError::Data(d)) => return data(d),
        None => {}
    }
    if let Some(d) = e.downcast_ref::<DataFileError>() {
        return data_file(d);
    }
    if let Some(d) = e.downcast_ref::<placed_models::data::DataError>() {
        return data(d);
    }
    if let Some(m) = e.downcast_ref::<placed_models::ModelFileError>() {
        return model_file(m);
    }
    e.downcast_ref::<std::io::Error>().map(io)
}

fn collect(c: &CollectError) -> Option<Exit> {
    match c {
        CollectError::Interrupted { .. } => Some(Exit::Interrupted),
        CollectError::NoWorkloads | CollectError::DuplicateWorkload(_) => Some(Exit::BadInput),
        CollectError::Data(d) => data_file(d),
        _ => None,
    }
}

fn data_file(d: &DataFileError) -> Option<Exit> {
    match d {
        // The file is there but says something else: another --out, or delete it.
        DataFileError::Io { source, .. } => Some(io(source)),
        _ => Some(Exit::BadInput),
    }
}

fn data(d: &placed_models::data::DataError) -> Option<Exit> {
    match d {
        placed_models::data::DataError::Io { source, .. } => Some(io(source)),
        _ => Some(Exit::BadInput),
    }
}

fn model_file(m: &placed_models::ModelFileError) -> Option<Exit> {
    use placed_models::ModelFileError as M;
    match m {
        M::Io { source, .. } => Some(io(source)),
        // Not a model this build reads, or a damaged one: the file given is wrong.
        M::Truncated { .. }
        | M::Corrupt { .. }
        | M::NotAModel { .. }
        | M::UnsupportedVersion { .. }
        | M::ChecksumMismatch { .. }
        | M::Inconsistent { .. }
        | M::WrongMachine { .. }
        | M::WrongV { .. } => Some(Exit::BadInput),
        M::Encode { .. } => None,
    }
}

fn io(e: &std::io::Error) -> Exit {
    match e.kind() {
        std::io::ErrorKind::NotFound => Exit::NotFound,
        // What a text file that is not UTF-8 reads as: a malformed file, like any other.
        std::io::ErrorKind::InvalidData => Exit::BadInput,
        std::io::ErrorKind::PermissionDenied => Exit::Refused,
        _ => Exit::Failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_of_another_setting_is_bad_input_even_behind_transparent_wrappers() {
        let mismatch = CollectError::Data(DataFileError::Mismatch {
            path: "data.jsonl".into(),
            what: "v = 1 instead of 2".into(),
        });
        assert_eq!(of_error(&mismatch), Exit::BadInput);
        assert_eq!(of_error(&PipelineError::Collect(mismatch)), Exit::BadInput);
    }

    #[test]
    fn a_missing_file_is_not_found_and_an_interruption_is_130() {
        let missing = placed_models::data::DataError::Io {
            path: "absent.jsonl".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        assert_eq!(of_error(&missing), Exit::NotFound);
        let stopped = CollectError::Interrupted { signal: 2 };
        assert_eq!(of_error(&stopped).code(), 130);
    }

    #[test]
    fn an_interruption_while_collecting_one_of_several_sizes_is_130() {
        let stopped =
            PipelineError::Search(Box::new(placed_models::size_search::SearchError::Collect {
                v: 4,
                source: PipelineError::Collect(CollectError::Interrupted { signal: 2 }),
            }));
        assert_eq!(of_error(&stopped).code(), 130);
        assert!(
            placed_core::text::error_line(&stopped).starts_with("collecting the data for v = 4: "),
            "{}",
            placed_core::text::error_line(&stopped)
        );
    }

    #[test]
    fn a_command_error_has_its_own_code_or_its_cause_s() {
        assert_eq!(
            exit_of(&CliError::Usage("--seconds".into())),
            Exit::BadInput
        );
        assert_eq!(
            exit_of(&CliError::Incomplete { skipped: 1 }),
            Exit::Unavailable
        );
        let missing = || placed_models::data::DataError::Io {
            path: "absent.jsonl".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        assert_eq!(exit_of(&CliError::from(missing())), Exit::NotFound);
        // Said after what the command was doing, the cause still decides.
        assert_eq!(
            exit_of(&CliError::step("fitting the model", missing())),
            Exit::NotFound
        );
        let corrupt = placed_models::ModelFileError::Truncated {
            path: "m.json".into(),
        };
        assert_eq!(exit_of(&CliError::from(corrupt)), Exit::BadInput);
    }

    #[test]
    fn a_refused_calibration_is_refused() {
        let refused = CalibrateError::Refused {
            problems: vec![crate::calibrate::judge::Problem::NotPositive {
                what: "node 0".into(),
                value: 0.0,
            }],
        };
        assert_eq!(of_error(&refused), Exit::Refused);
        assert!(
            refused.to_string().contains("node 0: 0 is not a bandwidth"),
            "{refused}"
        );
    }
}
