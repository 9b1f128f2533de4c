//! `placectl place`: a container moved now, to a placement or where a policy says; either
//! becomes its policy unless `--keep-policy`, and the output says so.

use placed_host::migrate::ModeKind;
use placed_proto::v1 as pb;
use serde_json::{Value, json};

use super::policy::PolicyArgs;
use super::{Action, Call, Client, Failure, Format, Reply, Typed};
use crate::cli::StatusError;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    container: String,
    /// An important placement id (placectl placements --vcpus N lists them).
    #[arg(long, conflicts_with = "policy")]
    placement: Option<String>,
    #[command(flatten)]
    policy: PolicyArgs,
    /// Move this once and keep the container's own policy (which may move it again at
    /// its next evaluation).
    #[arg(long)]
    keep_policy: bool,
    /// How memory follows (default: the daemon's config).
    #[arg(long, value_name = "MODE", value_enum)]
    migrate: Option<ModeKind>,
    /// Answer where the move would go, moving nothing.
    #[arg(long)]
    dry_run: bool,
}

impl Typed for Args {
    fn validate(self) -> Result<Action, Failure> {
        let migration = match self.migrate {
            None => pb::MigrationMode::Unspecified,
            Some(ModeKind::Kernel) => pb::MigrationMode::Kernel,
            Some(ModeKind::Fast) => pb::MigrationMode::Fast,
            Some(ModeKind::Throttled) => pb::MigrationMode::Throttled,
        };
        // A placement or a policy given to `place` becomes the container's policy (a
        // placement pins it there) unless kept: said in the output, never done silently.
        let new_policy = self
            .placement
            .as_ref()
            .map(|id| format!("pinned:{id}"))
            .or_else(|| self.policy.policy.clone())
            .filter(|_| !self.keep_policy);
        Action::daemon(Place {
            request: pb::PlaceRequest {
                policy: self.policy.to_pb()?,
                container: self.container,
                placement_id: self.placement.unwrap_or_default(),
                migration: migration as i32,
                keep_policy: self.keep_policy,
                dry_run: self.dry_run,
            },
            new_policy: new_policy.filter(|_| !self.dry_run),
            dry_run: self.dry_run,
        })
    }
}

#[derive(Debug)]
struct Place {
    request: pb::PlaceRequest,
    /// The policy the request makes the container's own, to be said.
    new_policy: Option<String>,
    dry_run: bool,
}

impl Call for Place {
    fn call<'a>(&'a self, c: &'a mut Client, format: Format) -> Reply<'a> {
        Box::pin(async move {
            let r = c
                .place(self.request.clone())
                .await
                .map_err(StatusError)?
                .into_inner();
            let policy = self.new_policy.as_deref();
            let dry_run = self.dry_run;
            format.print(
                || {
                    let mut j = place_json(&r, policy);
                    j["dry_run"] = dry_run.into();
                    j
                },
                || {
                    let text = render_place(&r, policy);
                    if dry_run {
                        format!("{text}dry run: nothing was moved\n")
                    } else {
                        text
                    }
                },
            )
        })
    }

    fn waits_when_busy(&self) -> bool {
        true
    }

    /// An accepted move outlives its caller's timeout (issue 28): say so, and that the
    /// same request again joins it rather than ordering a second move.
    fn after_timeout(&self) -> Option<String> {
        (!self.dry_run).then(|| {
            let c = &self.request.container;
            format!(
                "a move the daemon accepted goes on without this command: `placectl watch {c}` follows it, and `placectl place` with the same arguments joins it instead of starting another"
            )
        })
    }
}

fn millis(d: Option<&prost_types::Duration>) -> i64 {
    d.map_or(0, |d| {
        d.seconds.saturating_mul(1000) + i64::from(d.nanos / 1_000_000)
    })
}

/// `new_policy`: the policy the request made the container's own (`pinned:<id>` for a
/// placement), to be said rather than changed silently.
pub fn render_place(r: &pb::PlaceResponse, new_policy: Option<&str>) -> String {
    let target = if r.placement_id.is_empty() {
        "unpinned".to_owned()
    } else {
        r.placement_id.clone()
    };
    let mut text = if r.moved {
        format!(
            "{} moved to {target}: cpus {}, mems {} ({} bytes migrated in {} ms)\n{}\n",
            r.container,
            r.cpus,
            r.mems,
            r.bytes_moved,
            millis(r.duration.as_ref()),
            r.reason
        )
    } else {
        format!("{} not moved: {}\n", r.container, r.reason)
    };
    if let Some(policy) = new_policy {
        text.push_str(&format!(
            "policy of {} is now {policy}: the daemon keeps it there; `placectl manage {} --policy ...` changes it\n",
            r.container, r.container
        ));
    }
    text
}

pub fn place_json(r: &pb::PlaceResponse, new_policy: Option<&str>) -> Value {
    json!({
        "schema": "placed.place/v1",
        "container": r.container,
        "placement": if r.placement_id.is_empty() { Value::Null } else { json!(r.placement_id) },
        "cpus": r.cpus, "mems": r.mems, "moved": r.moved,
        "bytes_moved": r.bytes_moved, "duration_ms": millis(r.duration.as_ref()), "reason": r.reason,
        "policy": new_policy,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response() -> pb::PlaceResponse {
        pb::PlaceResponse {
            container: "web".into(),
            placement_id: "numa1-a".into(),
            cpus: "0-3".into(),
            mems: "0".into(),
            moved: true,
            reason: "ordered".into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_timed_out_place_says_the_move_goes_on_and_how_to_follow_it() {
        let Ok(Action::Daemon(call)) = Args {
            container: "web".into(),
            placement: Some("n1".into()),
            policy: PolicyArgs {
                policy: None,
                goal: None,
            },
            keep_policy: false,
            migrate: None,
            dry_run: false,
        }
        .validate() else {
            panic!("place validates");
        };
        let more = call.after_timeout().expect("a place says what goes on");
        assert!(more.contains("placectl watch web"), "{more}");
        assert!(more.contains("joins it"), "{more}");
    }

    #[test]
    fn a_placement_says_it_pins_the_container() {
        let text = render_place(&response(), Some("pinned:numa1-a"));
        assert!(
            text.contains("policy of web is now pinned:numa1-a"),
            "{text}"
        );
        assert_eq!(
            place_json(&response(), Some("pinned:numa1-a"))["policy"],
            "pinned:numa1-a"
        );
        // Its own policy applied: nothing changes, nothing to say.
        assert!(!render_place(&response(), None).contains("policy"));
        assert!(place_json(&response(), None)["policy"].is_null());
    }
}
