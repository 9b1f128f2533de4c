//! The handlers for containers not started yet: Admit, AdmitBatch, the reservations and
//! the node's capacity. Each converts its request into the daemon's terms and back.

use std::collections::BTreeMap;
use std::time::Duration;

use placed_proto::v1 as pb;
use tonic::{Request, Response, Status};

use crate::lifecycle::{Admission, AdmitRequest, BatchMode, Capacity, Hint, Prior};
use crate::state::ReservationRecord;

use super::api::{Api, bad_request, status_of};
use super::convert;
use super::status::code_of;

/// Most containers one batch may ask for.
const MAX_BATCH: usize = 1000;

impl Api {
    pub(super) async fn do_admit(
        &self,
        request: Request<pb::AdmitRequest>,
    ) -> Result<Response<pb::AdmitResponse>, Status> {
        let daemon = self.daemon()?;
        let req = admit_request(request.into_inner(), daemon.config_goal())?;
        let a = daemon.admit(req).await.map_err(status_of)?;
        Ok(Response::new(pb::AdmitResponse {
            admission: Some(admission(&a)),
        }))
    }

    pub(super) async fn do_admit_batch(
        &self,
        request: Request<pb::AdmitBatchRequest>,
    ) -> Result<Response<pb::AdmitBatchResponse>, Status> {
        let daemon = self.daemon()?;
        let r = request.into_inner();
        if r.requests.len() > MAX_BATCH {
            return Err(bad_request(
                "requests",
                format!(
                    "requests: {} containers in one batch; at most {MAX_BATCH}",
                    r.requests.len()
                ),
            ));
        }
        let mode = match pb::BatchMode::try_from(r.mode) {
            Ok(pb::BatchMode::Unspecified | pb::BatchMode::AllOrNothing) => BatchMode::AllOrNothing,
            Ok(pb::BatchMode::BestEffort) => BatchMode::BestEffort,
            Err(_) => {
                return Err(bad_request(
                    "mode",
                    format!("mode: unknown batch mode {}", r.mode),
                ));
            }
        };
        let goal = daemon.config_goal();
        let requests = r
            .requests
            .into_iter()
            .enumerate()
            .map(|(i, q)| admit_request(q, goal).map_err(|s| in_batch(i, &s)))
            .collect::<Result<Vec<_>, Status>>()?;
        let answers = daemon
            .admit_batch(requests, mode)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::AdmitBatchResponse {
            answers: answers
                .into_iter()
                .map(|a| match a {
                    Ok(a) => pb::BatchAnswer {
                        admission: Some(admission(&a)),
                        error: None,
                    },
                    Err(e) => pb::BatchAnswer {
                        admission: None,
                        error: Some(pb::BatchError {
                            reason: e.reason().to_owned(),
                            code: code_of(e.fault()) as i32,
                            message: e.line(),
                        }),
                    },
                })
                .collect(),
        }))
    }

    pub(super) async fn do_list_reservations(
        &self,
        _request: Request<pb::ListReservationsRequest>,
    ) -> Result<Response<pb::ListReservationsResponse>, Status> {
        let daemon = self.daemon()?;
        Ok(Response::new(pb::ListReservationsResponse {
            reservations: daemon.reservations().iter().map(reservation).collect(),
        }))
    }

    pub(super) async fn do_release_reservation(
        &self,
        request: Request<pb::ReleaseReservationRequest>,
    ) -> Result<Response<pb::ReleaseReservationResponse>, Status> {
        let id = request.into_inner().id;
        if id.is_empty() {
            return Err(status_of(crate::lifecycle::DaemonError::bad(
                "id",
                "empty: name the reservation to release",
            )));
        }
        let r = self.daemon()?.release(&id).await.map_err(status_of)?;
        Ok(Response::new(pb::ReleaseReservationResponse {
            reservation: Some(reservation(&r)),
        }))
    }

    pub(super) async fn do_get_capacity(
        &self,
        request: Request<pb::GetCapacityRequest>,
    ) -> Result<Response<pb::GetCapacityResponse>, Status> {
        let sizes: Vec<usize> = request
            .into_inner()
            .vcpus
            .into_iter()
            .map(|v| v as usize)
            .collect();
        if let Some(bad) = sizes.iter().find(|&&v| v == 0) {
            return Err(status_of(crate::lifecycle::DaemonError::bad(
                "vcpus",
                format!("{bad}: every size is at least 1"),
            )));
        }
        Ok(Response::new(capacity(&self.daemon()?.capacity(&sizes))))
    }
}

/// A refused request of a batch, its field named by its place in the batch
/// (`requests[3].vcpus`).
fn in_batch(i: usize, s: &Status) -> Status {
    use tonic_types::StatusExt;
    let field = s
        .get_error_details()
        .bad_request()
        .and_then(|b| b.field_violations.first().map(|v| v.field.clone()))
        .map_or_else(
            || format!("requests[{i}]"),
            |f| format!("requests[{i}].{f}"),
        );
    bad_request(field, format!("requests[{i}]: {}", s.message()))
}

/// An `AdmitRequest` in the daemon's terms.
fn admit_request(r: pb::AdmitRequest, goal: f64) -> Result<AdmitRequest, Status> {
    let policy = placed_proto::convert::policy_from_pb(r.policy.as_ref(), goal)
        .map_err(|e| bad_request("policy", e))?;
    // The daemon refuses a hold past its limit, naming the limit.
    let reserve =
        convert::duration_from_pb(r.reserve.as_ref(), "reserve", Duration::from_millis(1))?;
    let hint = match r.hint.and_then(|h| h.hint) {
        None => Hint::Nothing,
        Some(pb::admission_hint::Hint::Container(c)) => Hint::Container(c),
        Some(pb::admission_hint::Hint::Image(i)) => Hint::Image(i),
    };
    Ok(AdmitRequest {
        name: r.name,
        vcpus: r.vcpus as usize,
        policy,
        labels: r.labels.into_iter().collect::<BTreeMap<_, _>>(),
        hint,
        reserve,
        for_container: (!r.for_container.is_empty()).then_some(r.for_container),
    })
}

fn admission(a: &Admission) -> pb::Admission {
    let t = &a.target;
    let (low, high) = a.interval.unwrap_or((0.0, 0.0));
    pb::Admission {
        name: a.name.clone(),
        placement_id: t.placement.clone().unwrap_or_default(),
        units: t.units.iter().map(|&u| convert::count(u)).collect(),
        cpus: t.cpus.to_string(),
        mems: t.mems.to_string(),
        reason: t.reason.clone(),
        predicted_relative: t.predicted.unwrap_or(0.0),
        predicted_low: low,
        predicted_high: high,
        prior: Some(match &a.prior {
            Prior::Nothing => pb::Prior {
                kind: pb::PriorKind::Nothing as i32,
                ..pb::Prior::default()
            },
            Prior::Container { id, name } => pb::Prior {
                kind: pb::PriorKind::Container as i32,
                container: id.clone(),
                container_name: name.clone(),
            },
        }),
        reservation: a.reservation.as_ref().map(reservation),
        policy: Some(placed_proto::convert::policy_to_pb(&a.policy)),
        vcpus: convert::count(a.vcpus),
    }
}

pub(super) fn reservation(r: &ReservationRecord) -> pb::Reservation {
    pb::Reservation {
        id: r.id.clone(),
        placement_id: r.assigned.placement.clone().unwrap_or_default(),
        units: r
            .assigned
            .units
            .iter()
            .map(|&u| convert::count(u))
            .collect(),
        cpus: r.assigned.cpus.to_string(),
        mems: r.assigned.mems.to_string(),
        vcpus: convert::count(r.vcpus),
        policy: Some(placed_proto::convert::policy_to_pb(&r.policy)),
        labels: r.labels.clone().into_iter().collect(),
        for_container: r.for_container.clone().unwrap_or_default(),
        create_time: Some(convert::timestamp(r.created_unix_ms)),
        expire_time: Some(convert::timestamp(r.expires_unix_ms)),
    }
}

fn capacity(c: &Capacity) -> pb::GetCapacityResponse {
    let tally = |t: &crate::lifecycle::Tally| pb::CapacityTally {
        index: convert::count(t.index),
        free_pus: convert::count(t.free),
        held_pus: convert::count(t.held),
        reserved_pus: convert::count(t.reserved),
    };
    pb::GetCapacityResponse {
        units: c
            .units
            .iter()
            .map(|u| pb::UnitUse {
                unit: convert::count(u.unit),
                cpus: u.cpus.to_string(),
                mems: u.mems.to_string(),
                package: convert::count(u.package),
                held_by: u.held_by.clone(),
                reserved_by: u.reserved_by.clone().unwrap_or_default(),
            })
            .collect(),
        nodes: c.nodes.iter().map(tally).collect(),
        packages: c.packages.iter().map(tally).collect(),
        fits: c
            .fits
            .iter()
            .map(|f| pb::PlacementsThatFit {
                vcpus: convert::count(f.vcpus),
                placement_ids: f.placements.clone(),
                note: f.note.clone().unwrap_or_default(),
            })
            .collect(),
    }
}
