//! `placectl recommend`: what a policy would choose for a container, without moving it;
//! exit 1 (a clean "no") when it would stay where it is.

use std::fmt::Write;

use placed_proto::v1 as pb;
use serde_json::{Value, json};

use super::policy::PolicyArgs;
use super::{Action, Call, Client, Failure, Format, Reply, Typed};
use crate::cli::{Exit, StatusError};

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    container: String,
    #[command(flatten)]
    policy: PolicyArgs,
}

impl Typed for Args {
    fn validate(self) -> Result<Action, Failure> {
        Action::daemon(pb::RecommendRequest {
            container: self.container,
            policy: self.policy.to_pb()?,
        })
    }
}

impl Call for pb::RecommendRequest {
    fn call<'a>(&'a self, c: &'a mut Client, format: Format) -> Reply<'a> {
        Box::pin(async move {
            let r = c
                .recommend(self.clone())
                .await
                .map_err(StatusError)?
                .into_inner();
            let code = format.print(|| recommendation_json(&r), || render_recommendation(&r))?;
            Ok(if code == Exit::Success && !r.would_move {
                Exit::No
            } else {
                code
            })
        })
    }

    fn waits_when_busy(&self) -> bool {
        true
    }
}

pub fn render_recommendation(r: &pb::RecommendResponse) -> String {
    let target = if r.placement_id.is_empty() {
        format!("unpinned (cpus {}, mems {})", r.cpus, r.mems)
    } else {
        format!("{} (cpus {}, mems {})", r.placement_id, r.cpus, r.mems)
    };
    let mut o = format!("{}: {target}\n", r.container);
    if r.predicted_relative > 0.0 {
        let _ = writeln!(o, "predicted x{:.2} of the baseline", r.predicted_relative);
    }
    let _ = writeln!(
        o,
        "{}: {}",
        if r.would_move {
            "would move"
        } else {
            "would stay"
        },
        r.reason
    );
    o
}

pub fn recommendation_json(r: &pb::RecommendResponse) -> Value {
    json!({
        "schema": "placed.recommendation/v1",
        "container": r.container,
        "placement": if r.placement_id.is_empty() { Value::Null } else { json!(r.placement_id) },
        "cpus": r.cpus, "mems": r.mems,
        "predicted_relative": if r.predicted_relative > 0.0 { json!(r.predicted_relative) } else { Value::Null },
        "would_move": r.would_move,
        "reason": r.reason,
    })
}
