//! Why a `placed-train` command failed: a flag that makes no sense, or a library's error
//! (with what the command was doing, when that says more). `crate::exit` maps it to the
//! exit code.

use std::error::Error;

/// A library's error, kept whole so that the exit code is read from its type.
pub type Cause = Box<dyn Error + Send + Sync + 'static>;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A flag's value that parsed but makes no sense.
    #[error("{0}")]
    Usage(String),
    /// A library's error, as it says itself.
    #[error(transparent)]
    Failed(Cause),
    /// A library's error, after what the command was doing.
    #[error("{doing}")]
    Step {
        doing: String,
        #[source]
        source: Cause,
    },
    /// A collection ended with measurements skipped.
    #[error("{skipped} measurement(s) skipped; run the same command again to retry them")]
    Incomplete { skipped: usize },
}

impl CliError {
    /// `source`, said after what the command was doing.
    pub fn step(doing: impl Into<String>, source: impl Into<Cause>) -> Self {
        Self::Step {
            doing: doing.into(),
            source: source.into(),
        }
    }

    /// A library's error, as it says itself.
    pub fn failed(e: impl Into<Cause>) -> Self {
        Self::Failed(e.into())
    }

    /// The library's error inside, if any.
    pub fn cause(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            Self::Failed(source) | Self::Step { source, .. } => Some(source.as_ref()),
            Self::Usage(_) | Self::Incomplete { .. } => None,
        }
    }
}

/// The library errors a command passes on as they are (`?`).
macro_rules! passed_on {
    ($($error:ty),* $(,)?) => {
        $(impl From<$error> for CliError {
            fn from(e: $error) -> Self {
                Self::Failed(Box::new(e))
            }
        })*
    };
}

passed_on!(
    crate::collect::CollectError,
    crate::pipeline::PipelineError,
    crate::pipeline::classes::ClassesPipelineError,
    crate::pipeline::trial::TrialError,
    placed_models::classes_model::ForHostError,
    crate::calibrate::CalibrateError,
    crate::policies::ReplayError,
    crate::workloads::Error,
    crate::plot::PlotError,
    crate::simulate::SimulateError,
    placed_models::data::DataError,
    placed_models::ModelFileError,
    placed_models::check::CheckError,
    placed_models::data::merge::MergeError,
    placed_models::impute::ImputeError,
    placed_models::hold_out::HoldOutError,
    placed_models::sizes::SizesError,
    placed_models::sizes_model::ForSizeError,
    placed_models::size_search::SearchError<std::io::Error>,
    placed_core::machine::MachineError,
    placed_core::placement::PlacementError,
    std::io::Error,
);
