//! `placectl model enable ID`: lets a model the live gate stopped move containers again.

use placed_proto::v1 as pb;
use serde_json::{Value, json};

use super::status::live_json;
use super::{Action, Call, Client, Failure, Format, Reply, Typed};
use crate::cli::StatusError;

/// What to do with the model.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    /// Let a model the live gate stopped move containers again; its live window starts
    /// afresh.
    Enable,
}

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// What to do.
    #[arg(value_enum)]
    what: What,
    /// The model's id, as `placectl status` lists it under "Live accuracy".
    model: String,
}

impl Typed for Args {
    fn validate(self) -> Result<Action, Failure> {
        match self.what {
            What::Enable => Action::daemon(pb::EnableModelRequest {
                model_id: self.model,
            }),
        }
    }
}

impl Call for pb::EnableModelRequest {
    fn call<'a>(&'a self, c: &'a mut Client, format: Format) -> Reply<'a> {
        Box::pin(async move {
            let r = c
                .enable_model(self.clone())
                .await
                .map_err(StatusError)?
                .into_inner();
            format.print(|| enabled_json(&r), || render_enabled(self, &r))
        })
    }
}

fn render_enabled(req: &pb::EnableModelRequest, _r: &pb::EnableModelResponse) -> String {
    format!(
        "model {} enabled: it moves containers again, and the live gate judges it afresh from its next decisions\n",
        req.model_id
    )
}

fn enabled_json(r: &pb::EnableModelResponse) -> Value {
    json!({
        "schema": "placed.model-enable/v1",
        "live": r.live.as_ref().map_or(Value::Null, live_json),
    })
}
