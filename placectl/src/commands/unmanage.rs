//! `placectl unmanage`: a container handed back by the daemon.

use placed_proto::v1 as pb;
use serde_json::{Value, json};

use super::{Action, Call, Client, Failure, Format, Reply, Typed};
use crate::cli::StatusError;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    container: String,
    /// Put back the CPUs and memory nodes it had before the daemon first moved it
    /// (when it never moved it, the cpuset is left as it is).
    #[arg(long)]
    restore: bool,
}

impl Typed for Args {
    fn validate(self) -> Result<Action, Failure> {
        Action::daemon(pb::UnmanageRequest {
            container: self.container,
            restore: self.restore,
        })
    }
}

impl Call for pb::UnmanageRequest {
    fn call<'a>(&'a self, c: &'a mut Client, format: Format) -> Reply<'a> {
        Box::pin(async move {
            let r = c
                .unmanage(self.clone())
                .await
                .map_err(StatusError)?
                .into_inner();
            format.print(|| unmanaged_json(&r), || render_unmanaged(&r))
        })
    }
}

pub fn render_unmanaged(r: &pb::UnmanageResponse) -> String {
    let name = if r.name.is_empty() {
        &r.container
    } else {
        &r.name
    };
    format!(
        "{name} handed back{}: cpus {}, mems {}\n{}\n",
        if r.restored {
            ", its original cpuset restored"
        } else {
            ""
        },
        r.cpus,
        r.mems,
        r.detail
    )
}

pub fn unmanaged_json(r: &pb::UnmanageResponse) -> Value {
    json!({
        "schema": "placed.unmanage/v1",
        "container": r.container, "name": r.name, "restored": r.restored,
        "cpus": r.cpus, "mems": r.mems, "detail": r.detail,
    })
}
