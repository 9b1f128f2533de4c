//! The states of a managed container's lifecycle (docs/design.md, "The daemon"), named
//! once: the daemon's state file, its API (through `placed_proto::convert`), its metrics and
//! `placectl` all spell them from here.

use serde::{Deserialize, Serialize};

/// The lifecycle states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lifecycle {
    Discovered,
    Baseline,
    Probe,
    Predicted,
    Placed,
    Watched,
    /// Left where it is; the record's detail says why (no model, no metric, no room).
    Waiting,
    Migrating,
    Failed,
}

impl Lifecycle {
    pub const ALL: [Lifecycle; 9] = [
        Self::Discovered,
        Self::Baseline,
        Self::Probe,
        Self::Predicted,
        Self::Placed,
        Self::Watched,
        Self::Waiting,
        Self::Migrating,
        Self::Failed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Discovered => "discovered",
            Self::Baseline => "baseline",
            Self::Probe => "probe",
            Self::Predicted => "predicted",
            Self::Placed => "placed",
            Self::Watched => "watched",
            Self::Waiting => "waiting",
            Self::Migrating => "migrating",
            Self::Failed => "failed",
        }
    }
}
