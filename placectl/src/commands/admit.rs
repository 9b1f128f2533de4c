//! `placectl admit`: where a container that does not exist yet should start, and with
//! `--reserve` a hold on those units until a container claims them (`placectl manage
//! CONTAINER --reservation ID`) or the hold ends.

use std::time::Duration;

use placed_proto::v1 as pb;
use serde_json::{Value, json};

use super::labels::LabelArgs;
use super::policy::PolicyArgs;
use super::reservations::reservation_json;
use super::{Action, Call, Client, Failure, Format, Reply, Typed};
use crate::cli::daemon::{policy_name, rfc3339};
use crate::cli::{StatusError, UsageError};

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// vCPUs of the new container.
    #[arg(long)]
    vcpus: u32,
    /// The orchestrator's name for it, echoed in the answer.
    #[arg(long, default_value = "")]
    name: String,
    #[command(flatten)]
    policy: PolicyArgs,
    #[command(flatten)]
    labels: LabelArgs,
    /// What may tell how it behaves: `container:REF` (a managed container whose prediction
    /// applies) or `image:IMAGE` (a managed container labelled `image=IMAGE`).
    #[arg(long, value_name = "KIND:VALUE")]
    hint: Option<String>,
    /// Hold the units until a container claims them or --ttl passes; without it the
    /// answer is advice only and nothing is held (a dry run).
    #[arg(long)]
    reserve: bool,
    /// How long the hold lasts unclaimed (at most 1h).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "5m", requires = "reserve")]
    ttl: Duration,
    /// The runtime's id of the container that claims the hold when it appears, without a
    /// Manage.
    #[arg(long, value_name = "ID", requires = "reserve")]
    for_container: Option<String>,
}

impl Typed for Args {
    fn validate(self) -> Result<Action, Failure> {
        if self.vcpus == 0 {
            return Err(UsageError("--vcpus must be at least 1".into()).into());
        }
        let hint = self.hint.as_deref().map(hint_of).transpose()?;
        Action::daemon(pb::AdmitRequest {
            name: self.name,
            vcpus: self.vcpus,
            policy: self.policy.to_pb()?,
            labels: self.labels.to_map()?,
            hint: hint.map(|h| pb::AdmissionHint { hint: Some(h) }),
            reserve: if self.reserve {
                Some(prost_types::Duration::try_from(self.ttl).map_err(|e| {
                    UsageError(format!(
                        "--ttl {}: {e}",
                        humantime::format_duration(self.ttl)
                    ))
                })?)
            } else {
                None
            },
            for_container: self.for_container.unwrap_or_default(),
        })
    }
}

/// `--hint container:REF` or `--hint image:IMAGE` (an image's own colons are kept).
fn hint_of(h: &str) -> Result<pb::admission_hint::Hint, UsageError> {
    use pb::admission_hint::Hint;
    match h.split_once(':') {
        Some(("container", c)) if !c.is_empty() => Ok(Hint::Container(c.into())),
        Some(("image", i)) if !i.is_empty() => Ok(Hint::Image(i.into())),
        _ => Err(UsageError(format!(
            "--hint {h}: expected container:REF or image:IMAGE"
        ))),
    }
}

impl Call for pb::AdmitRequest {
    fn call<'a>(&'a self, c: &'a mut Client, format: Format) -> Reply<'a> {
        Box::pin(async move {
            let a = c
                .admit(self.clone())
                .await
                .map_err(StatusError)?
                .into_inner()
                .admission
                .ok_or("the daemon answered Admit without the admission")?;
            format.print(|| admission_json(&a), || render_admission(&a))
        })
    }
}

/// What the prediction rests on, in words.
fn prior_words(p: Option<&pb::Prior>) -> String {
    match p.map(|p| (pb::PriorKind::try_from(p.kind), p)) {
        Some((Ok(pb::PriorKind::Container), p)) => {
            format!("container {} ({})", p.container_name, p.container)
        }
        _ => "nothing".into(),
    }
}

fn prior_json(p: Option<&pb::Prior>) -> Value {
    match p.map(|p| (pb::PriorKind::try_from(p.kind), p)) {
        Some((Ok(pb::PriorKind::Container), p)) => {
            json!({"kind": "container", "container": p.container, "container_name": p.container_name})
        }
        _ => json!({"kind": "nothing"}),
    }
}

fn has_prediction(a: &pb::Admission) -> bool {
    a.predicted_relative > 0.0
}

pub fn render_admission(a: &pb::Admission) -> String {
    let who = if a.name.is_empty() {
        format!("a new container of {} vCPUs", a.vcpus)
    } else {
        format!("{} ({} vCPUs)", a.name, a.vcpus)
    };
    let target = if a.placement_id.is_empty() {
        "unpinned".to_owned()
    } else {
        format!("placement {}", a.placement_id)
    };
    let mut text = format!(
        "{who} starts in {target}: cpus {}, mems {} (policy {})\n{}\n",
        a.cpus,
        a.mems,
        policy_name(a.policy.as_ref()),
        a.reason
    );
    let prior = prior_words(a.prior.as_ref());
    if has_prediction(a) {
        let interval = if a.predicted_high > 0.0 {
            format!(" [{:.3}, {:.3}]", a.predicted_low, a.predicted_high)
        } else {
            String::new()
        };
        text.push_str(&format!(
            "predicted {:.3}{interval} of the baseline, resting on {prior}\n",
            a.predicted_relative
        ));
    } else {
        text.push_str(&format!("no prediction: it rests on {prior}\n"));
    }
    match &a.reservation {
        Some(r) => text.push_str(&format!(
            "reservation {} holds units {} until {}: `placectl manage CONTAINER --reservation {}` claims it\n",
            r.id,
            units(&r.units),
            rfc3339(r.expire_time.as_ref()),
            r.id
        )),
        None => text.push_str("nothing is held (--reserve holds the units)\n"),
    }
    text
}

fn units(u: &[u32]) -> String {
    u.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

pub fn admission_json(a: &pb::Admission) -> Value {
    let predicted = has_prediction(a);
    json!({
        "schema": "placed.admission/v1",
        "name": a.name, "vcpus": a.vcpus,
        "policy": policy_name(a.policy.as_ref()),
        "placement": if a.placement_id.is_empty() { Value::Null } else { json!(a.placement_id) },
        "units": a.units, "cpus": a.cpus, "mems": a.mems, "reason": a.reason,
        "predicted_relative": if predicted { json!(a.predicted_relative) } else { Value::Null },
        "predicted_interval": if predicted && a.predicted_high > 0.0 {
            json!([a.predicted_low, a.predicted_high])
        } else {
            Value::Null
        },
        "prior": prior_json(a.prior.as_ref()),
        "reservation": a.reservation.as_ref().map_or(Value::Null, reservation_json),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission() -> pb::Admission {
        pb::Admission {
            name: "job-7".into(),
            placement_id: "n1".into(),
            units: vec![2, 3],
            cpus: "4-7".into(),
            mems: "1".into(),
            reason: "the policy's choice on the free units".into(),
            predicted_relative: 0.92,
            predicted_low: 0.88,
            predicted_high: 0.95,
            prior: Some(pb::Prior {
                kind: pb::PriorKind::Container as i32,
                container: "/batch/web".into(),
                container_name: "web".into(),
            }),
            reservation: Some(pb::Reservation {
                id: "r-9".into(),
                units: vec![2, 3],
                ..Default::default()
            }),
            vcpus: 4,
            ..Default::default()
        }
    }

    #[test]
    fn an_admission_says_where_why_what_is_predicted_on_what_and_what_is_held() {
        let text = render_admission(&admission());
        for words in [
            "job-7 (4 vCPUs) starts in placement n1: cpus 4-7, mems 1",
            "the policy's choice on the free units",
            "predicted 0.920 [0.880, 0.950] of the baseline, resting on container web (/batch/web)",
            "reservation r-9 holds units 2,3",
            "placectl manage CONTAINER --reservation r-9",
        ] {
            assert!(text.contains(words), "{words:?} in {text}");
        }
        let j = admission_json(&admission());
        assert_eq!(j["schema"], "placed.admission/v1");
        assert_eq!(j["predicted_interval"], json!([0.88, 0.95]));
        assert_eq!(j["prior"]["kind"], "container");
        assert_eq!(j["reservation"]["id"], "r-9");

        let bare = pb::Admission {
            prior: Some(pb::Prior {
                kind: pb::PriorKind::Nothing as i32,
                ..Default::default()
            }),
            vcpus: 2,
            ..Default::default()
        };
        let text = render_admission(&bare);
        assert!(
            text.contains("no prediction: it rests on nothing"),
            "{text}"
        );
        assert!(text.contains("nothing is held"), "{text}");
        let j = admission_json(&bare);
        assert!(j["predicted_relative"].is_null() && j["reservation"].is_null());
    }

    #[test]
    fn a_hint_names_its_kind_and_an_image_keeps_its_colons() {
        use pb::admission_hint::Hint;
        assert_eq!(
            hint_of("image:nginx:1.27").unwrap(),
            Hint::Image("nginx:1.27".into())
        );
        assert_eq!(
            hint_of("container:web").unwrap(),
            Hint::Container("web".into())
        );
        for bad in ["web", "image:", "pod:x"] {
            assert!(
                hint_of(bad)
                    .unwrap_err()
                    .0
                    .contains("container:REF or image:IMAGE")
            );
        }
    }
}
