//! `placectl reservations`: the units held for containers not started yet (`placectl admit
//! --reserve`), until a container claims them or their time ends.

use placed_proto::v1 as pb;
use serde_json::{Value, json};

use super::labels;
use super::{Action, Call, Client, Failure, Format, Reply, Typed};
use crate::cli::StatusError;
use crate::cli::daemon::{policy_name, rfc3339, unix_ms};
use crate::cli::table::Table;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {}

impl Typed for Args {
    fn validate(self) -> Result<Action, Failure> {
        Action::daemon(pb::ListReservationsRequest {})
    }
}

impl Call for pb::ListReservationsRequest {
    fn call<'a>(&'a self, c: &'a mut Client, format: Format) -> Reply<'a> {
        Box::pin(async move {
            let r = c
                .list_reservations(pb::ListReservationsRequest {})
                .await
                .map_err(StatusError)?
                .into_inner();
            format.print(
                || {
                    json!({
                        "schema": "placed.reservations/v1",
                        "reservations": r.reservations.iter().map(reservation_json).collect::<Vec<_>>(),
                    })
                },
                || render_reservations(&r.reservations),
            )
        })
    }
}

pub fn render_reservations(rs: &[pb::Reservation]) -> String {
    if rs.is_empty() {
        return "no reservation is held (placectl admit --reserve makes one)\n".into();
    }
    let mut t = Table::new([
        "ID",
        "VCPUS",
        "PLACEMENT",
        "CPUS",
        "MEMS",
        "EXPIRES",
        "FOR",
        "LABELS",
    ])
    .right(1);
    for r in rs {
        t.row([
            r.id.clone(),
            r.vcpus.to_string(),
            dash(&r.placement_id),
            r.cpus.clone(),
            r.mems.clone(),
            rfc3339(r.expire_time.as_ref()),
            dash(&r.for_container),
            labels::render(&r.labels),
        ]);
    }
    t.render("")
}

fn dash(s: &str) -> String {
    if s.is_empty() { "-".into() } else { s.into() }
}

/// A reservation as JSON (docs/cli-json.md, the reservation object).
pub fn reservation_json(r: &pb::Reservation) -> Value {
    json!({
        "id": r.id,
        "placement": if r.placement_id.is_empty() { Value::Null } else { json!(r.placement_id) },
        "units": r.units, "cpus": r.cpus, "mems": r.mems, "vcpus": r.vcpus,
        "policy": policy_name(r.policy.as_ref()),
        "labels": r.labels,
        "for_container": if r.for_container.is_empty() { Value::Null } else { json!(r.for_container) },
        "created_unix_ms": unix_ms(r.create_time.as_ref()),
        "expires_unix_ms": unix_ms(r.expire_time.as_ref()),
        "expires": rfc3339(r.expire_time.as_ref()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reservation_shows_where_and_until_when() {
        let r = pb::Reservation {
            id: "r-1".into(),
            placement_id: "n0".into(),
            units: vec![0, 1],
            cpus: "0-3".into(),
            mems: "0".into(),
            vcpus: 4,
            labels: [("team".to_owned(), "db".to_owned())].into(),
            expire_time: Some(prost_types::Timestamp {
                seconds: 1_795_508_243,
                nanos: 0,
            }),
            ..Default::default()
        };
        let text = render_reservations(std::slice::from_ref(&r));
        let row = text.lines().nth(1).unwrap();
        for word in [
            "r-1",
            "4",
            "n0",
            "0-3",
            "2026-11-24T08:17:23.000Z",
            "team=db",
        ] {
            assert!(row.contains(word), "{word} in {text}");
        }
        let j = reservation_json(&r);
        assert_eq!(j["expires_unix_ms"], 1_795_508_243_000_i64);
        assert_eq!(j["labels"]["team"], "db");
        assert!(j["for_container"].is_null());
        assert!(render_reservations(&[]).contains("no reservation"));
    }
}
