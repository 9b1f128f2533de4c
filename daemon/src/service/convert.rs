//! The daemon's own values to placed.v1 messages. Core values (machine, placements,
//! policies) are converted by [`placed_proto::convert`], which `placectl` shares.

use placed_proto::v1 as pb;

use crate::state::Lifecycle;

pub fn state(s: Lifecycle) -> pb::ContainerState {
    match s {
        Lifecycle::Discovered => pb::ContainerState::Discovered,
        Lifecycle::Baseline => pb::ContainerState::Baseline,
        Lifecycle::Probe => pb::ContainerState::Probe,
        Lifecycle::Predicted => pb::ContainerState::Predicted,
        Lifecycle::Placed => pb::ContainerState::Placed,
        Lifecycle::Watched => pb::ContainerState::Watched,
        Lifecycle::Waiting => pb::ContainerState::Waiting,
        Lifecycle::Migrating => pb::ContainerState::Migrating,
        Lifecycle::Failed => pb::ContainerState::Failed,
    }
}
