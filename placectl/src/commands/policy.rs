//! A policy as typed (`--policy NAME [--goal G]`), for manage, recommend and place.

use placed_core::policy::{Policy, PolicyError};
use placed_proto::v1 as pb;

#[derive(clap::Args, Debug, Clone)]
pub struct PolicyArgs {
    /// observe, model, conservative, aggressive, smart-aggressive, or pinned:<placement id>.
    #[arg(long, value_name = "POLICY")]
    pub policy: Option<String>,
    /// The model policy's goal: fraction of baseline performance to keep, in (0, 2].
    #[arg(long, value_name = "G", requires = "policy")]
    pub goal: Option<f64>,
}

impl PolicyArgs {
    /// The policy on the wire; none when none was typed.
    pub fn to_pb(&self) -> Result<Option<pb::Policy>, PolicyError> {
        let Some(name) = &self.policy else {
            return Ok(None);
        };
        // The daemon fills in its configured goal when none is given (goal 0).
        let goal = self.goal.unwrap_or(0.9);
        let policy = Policy::parse(name, goal)?;
        let mut pb = placed_proto::convert::policy_to_pb(&policy);
        if self.goal.is_none() {
            pb.goal = 0.0;
        }
        Ok(Some(pb))
    }
}
