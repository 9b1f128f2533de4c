//! `placectl release`: a reservation ended before its time; its units are free again.

use placed_proto::v1 as pb;
use serde_json::json;

use super::reservations::reservation_json;
use super::{Action, Call, Client, Failure, Format, Reply, Typed};
use crate::cli::StatusError;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The reservation's id (placectl reservations lists them).
    id: String,
}

impl Typed for Args {
    fn validate(self) -> Result<Action, Failure> {
        Action::daemon(pb::ReleaseReservationRequest { id: self.id })
    }
}

impl Call for pb::ReleaseReservationRequest {
    fn call<'a>(&'a self, c: &'a mut Client, format: Format) -> Reply<'a> {
        Box::pin(async move {
            let r = c
                .release_reservation(self.clone())
                .await
                .map_err(StatusError)?
                .into_inner()
                .reservation
                .ok_or("the daemon answered ReleaseReservation without the reservation")?;
            format.print(
                || json!({"schema": "placed.release/v1", "reservation": reservation_json(&r)}),
                || {
                    format!(
                        "released {}: cpus {}, mems {} are free again\n",
                        r.id, r.cpus, r.mems
                    )
                },
            )
        })
    }
}
