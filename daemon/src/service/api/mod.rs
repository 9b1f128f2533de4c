//! The placed.v1 handlers: each converts its request into a daemon command and the
//! result back, and every error into the one status code its class uses. Who may call
//! which handler is decided before any of them runs ([`super::access`]).

use std::sync::{Arc, OnceLock};

use placed_core::fault::Fault;
use placed_proto::v1 as pb;
use placed_proto::v1::placed_service_server::PlacedService;
use tonic::{Request, Response, Status, Streaming};

use crate::lifecycle::labels::Selector;
use crate::lifecycle::{Daemon, DaemonError, ManageRequest, PlaceTarget};
use placed_host::migrate::{Mode, ModeKind};

use super::convert;
use super::paging::{self, Pager};
pub use super::status::{Refusal, bad_request, status_for, status_of};
use super::watch::{self, EventStream, Watchers};

mod report_metric;

/// The service; answers UNAVAILABLE until the daemon has restored its state.
#[derive(Debug, Clone)]
pub struct Api {
    daemon: Arc<OnceLock<Daemon>>,
    pager: Arc<Pager>,
    watchers: Arc<Watchers>,
}

impl Api {
    /// The service, not yet ready; its page tokens are signed with a fresh random key, and
    /// it serves at most `max_watchers` `Watch` streams at once (counted in `open_watchers`).
    pub fn new(
        max_watchers: usize,
        open_watchers: prometheus_client::metrics::gauge::Gauge,
    ) -> Result<Self, ring::error::Unspecified> {
        Ok(Self {
            daemon: Arc::default(),
            pager: Arc::new(Pager::new()?),
            watchers: Arc::new(Watchers::new(max_watchers, open_watchers)),
        })
    }

    /// Called once the daemon has started.
    pub fn ready(&self, daemon: Daemon) {
        let _ = self.daemon.set(daemon);
    }

    /// Ends every `Watch` stream: the daemon is stopping.
    pub fn stopping(&self) {
        self.watchers.close();
    }

    /// Counts a request answered with an error in `placed_errors_total{kind="api"}` (once
    /// the daemon is up: before, everything is UNAVAILABLE and there is nothing to count in).
    fn counted<T>(&self, result: Result<T, Status>) -> Result<T, Status> {
        if let (Err(status), Some(d)) = (&result, self.daemon.get()) {
            tracing::debug!(code = ?status.code(), message = status.message(), "API request failed");
            d.metrics().error("api");
        }
        result
    }

    pub(super) fn daemon(&self) -> Result<&Daemon, Status> {
        self.daemon.get().ok_or_else(|| {
            Refusal::new(
                tonic::Code::Unavailable,
                "STARTING",
                "placed is starting: restoring its state",
            )
            .status()
        })
    }
}

fn mode_of(daemon: &Daemon, m: i32) -> Result<Option<Mode>, Status> {
    let kind = match pb::MigrationMode::try_from(m) {
        Ok(pb::MigrationMode::Unspecified) => return Ok(None),
        Ok(pb::MigrationMode::Kernel) => ModeKind::Kernel,
        Ok(pb::MigrationMode::Fast) => ModeKind::Fast,
        Ok(pb::MigrationMode::Throttled) => ModeKind::Throttled,
        Err(_) => {
            return Err(bad_request(
                "migration",
                format!("unknown migration mode {m}"),
            ));
        }
    };
    Ok(Some(daemon.mode_of(kind)))
}

fn need_container(c: &str) -> Result<(), Status> {
    if c.is_empty() {
        Err(bad_request("container", "the request names no container"))
    } else {
        Ok(())
    }
}

/// How a client-streaming call failed: with the daemon's answer (counted as an API error),
/// or by the client's own stream (a message that does not decode, the client gone), which
/// is not the daemon's error.
pub(super) enum StreamEnd {
    Answer(Status),
    Client(Status),
}

/// The handlers; the [`Placed`] implementation below counts their failures.
impl Api {
    async fn do_get_machine(
        &self,
        _request: Request<pb::GetMachineRequest>,
    ) -> Result<Response<pb::GetMachineResponse>, Status> {
        Ok(Response::new(pb::GetMachineResponse {
            machine: Some(placed_proto::convert::machine(self.daemon()?.machine())),
        }))
    }

    async fn do_list_placements(
        &self,
        request: Request<pb::ListPlacementsRequest>,
    ) -> Result<Response<pb::ListPlacementsResponse>, Status> {
        let r = request.into_inner();
        if r.vcpus == 0 {
            return Err(bad_request("vcpus", "vcpus must be at least 1"));
        }
        let size = paging::page_size(r.page_size)?;
        // Placements are computed once per v and never change: an offset is a stable
        // position, and the token is bound to v.
        let list = format!("placements/{}", r.vcpus);
        let start = if r.page_token.is_empty() {
            0
        } else {
            self.pager
                .open(&list, &r.page_token)?
                .parse::<usize>()
                .map_err(|_| {
                    status_for(
                        Fault::Internal,
                        "a signed page token holds no offset".into(),
                    )
                })?
        };
        let set = self
            .daemon()?
            .placements(r.vcpus as usize)
            .map_err(status_of)?;
        let end = start.saturating_add(size);
        let next = if end < set.placements.len() {
            self.pager.token(&list, &end.to_string())
        } else {
            String::new()
        };
        Ok(Response::new(placed_proto::convert::placements_page(
            &set,
            start..end,
            next,
        )))
    }

    async fn do_list_containers(
        &self,
        request: Request<pb::ListContainersRequest>,
    ) -> Result<Response<pb::ListContainersResponse>, Status> {
        const LIST: &str = "containers";
        let r = request.into_inner();
        let size = paging::page_size(r.page_size)?;
        let selector = Selector::parse(&r.label_selector).map_err(status_of)?;
        let after = if r.page_token.is_empty() {
            None
        } else {
            Some(self.pager.open(LIST, &r.page_token)?)
        };
        let daemon = self.daemon()?;
        // Read before the listing: a watcher resuming after it sees every change the
        // listing might have missed (and perhaps some it already shows).
        let event_sequence = daemon.last_event();
        // Keyset pagination by id: containers appearing or vanishing between pages neither
        // repeat nor hide the others.
        let mut views: Vec<_> = daemon
            .containers()
            .into_iter()
            .filter(|v| after.as_ref().is_none_or(|a| v.record.id > *a))
            .filter(|v| selector.matches(&v.record.labels))
            .collect();
        views.sort_by(|a, b| a.record.id.cmp(&b.record.id));
        let more = views.len() > size;
        views.truncate(size);
        let next_page_token = match views.last() {
            Some(last) if more => self.pager.token(LIST, &last.record.id),
            _ => String::new(),
        };
        Ok(Response::new(pb::ListContainersResponse {
            containers: views.iter().map(convert::container).collect(),
            next_page_token,
            event_sequence,
        }))
    }

    async fn do_get_container(
        &self,
        request: Request<pb::GetContainerRequest>,
    ) -> Result<Response<pb::GetContainerResponse>, Status> {
        let c = request.into_inner().container;
        need_container(&c)?;
        let view = self.daemon()?.container(&c).map_err(status_of)?;
        Ok(Response::new(pb::GetContainerResponse {
            container: Some(convert::container(&view)),
        }))
    }

    async fn do_manage(
        &self,
        request: Request<pb::ManageRequest>,
    ) -> Result<Response<pb::ManageResponse>, Status> {
        let r = request.into_inner();
        need_container(&r.container)?;
        let daemon = self.daemon()?;
        let policy = placed_proto::convert::policy_from_pb(r.policy.as_ref(), daemon.config_goal())
            .map_err(|e| bad_request("policy", e))?;
        let metric = match &r.metric {
            Some(m) => convert::metric_from_pb(m)?,
            None => None,
        };
        let on_override = placed_proto::convert::on_override_from_pb(r.on_override)
            .map_err(|e| bad_request("on_override", e))?;
        let view = daemon
            .manage(ManageRequest {
                container: r.container,
                vcpus: (r.vcpus > 0).then_some(r.vcpus as usize),
                policy,
                metric,
                on_override,
                labels: r.labels.into_iter().collect(),
                reservation: (!r.reservation.is_empty()).then_some(r.reservation),
                dry_run: r.dry_run,
                name: None,
            })
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::ManageResponse {
            container: Some(convert::container(&view)),
        }))
    }

    async fn do_unmanage(
        &self,
        request: Request<pb::UnmanageRequest>,
    ) -> Result<Response<pb::UnmanageResponse>, Status> {
        let r = request.into_inner();
        need_container(&r.container)?;
        let out = self
            .daemon()?
            .unmanage(&r.container, r.restore)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::UnmanageResponse {
            container: out.id,
            name: out.name,
            restored: out.restored,
            cpus: out.cpus.to_string(),
            mems: out.mems.to_string(),
            detail: out.detail,
        }))
    }

    async fn do_predict(
        &self,
        request: Request<pb::PredictRequest>,
    ) -> Result<Response<pb::PredictResponse>, Status> {
        let c = request.into_inner().container;
        need_container(&c)?;
        let daemon = self.daemon()?;
        let p = daemon.predict(&c).await.map_err(status_of)?;
        let name = daemon.container(&c).map(|v| v.record.name).unwrap_or(c);
        Ok(Response::new(convert::prediction(&name, &p)))
    }

    async fn do_recommend(
        &self,
        request: Request<pb::RecommendRequest>,
    ) -> Result<Response<pb::RecommendResponse>, Status> {
        let r = request.into_inner();
        need_container(&r.container)?;
        let daemon = self.daemon()?;
        let policy = placed_proto::convert::policy_from_pb(r.policy.as_ref(), daemon.config_goal())
            .map_err(|e| bad_request("policy", e))?;
        let rec = daemon
            .recommend(&r.container, policy)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::RecommendResponse {
            container: rec.container,
            placement_id: rec.target.placement.clone().unwrap_or_default(),
            predicted_relative: rec.target.predicted.unwrap_or(0.0),
            cpus: rec.target.cpus.to_string(),
            mems: rec.target.mems.to_string(),
            reason: rec.reason,
            would_move: rec.would_move,
        }))
    }

    async fn do_place(
        &self,
        request: Request<pb::PlaceRequest>,
    ) -> Result<Response<pb::PlaceResponse>, Status> {
        let r = request.into_inner();
        need_container(&r.container)?;
        let daemon = self.daemon()?;
        let mode = mode_of(daemon, r.migration)?;
        let given = if !r.placement_id.is_empty() {
            if r.policy.is_some() {
                return Err(bad_request(
                    "policy",
                    "give either a placement_id or a policy, not both",
                ));
            }
            Some(placed_core::policy::Policy::Pinned {
                placement: r.placement_id,
            })
        } else {
            placed_proto::convert::policy_from_pb(r.policy.as_ref(), daemon.config_goal())
                .map_err(|e| bad_request("policy", e))?
        };
        let target = match given {
            Some(p) if r.keep_policy => PlaceTarget::Once(p),
            Some(p) => PlaceTarget::Policy(p),
            None if r.keep_policy => {
                return Err(bad_request(
                    "keep_policy",
                    "keep_policy needs a placement_id or a policy: without either the move is by the container's own policy",
                ));
            }
            None => PlaceTarget::OwnPolicy,
        };
        let out = if r.dry_run {
            daemon.place_dry_run(&r.container, target).await
        } else {
            daemon.place(&r.container, target, mode).await
        }
        .map_err(status_of)?;
        Ok(Response::new(pb::PlaceResponse {
            container: out.container,
            placement_id: out.placement.unwrap_or_default(),
            cpus: out.cpus.to_string(),
            mems: out.mems.to_string(),
            moved: out.moved,
            bytes_moved: out.bytes_moved,
            duration: Some(convert::duration(out.duration)),
            reason: out.reason,
        }))
    }

    async fn do_watch(
        &self,
        request: Request<pb::WatchRequest>,
    ) -> Result<Response<EventStream>, Status> {
        let daemon = self.daemon()?;
        let slot = self.watchers.claim()?;
        Ok(Response::new(watch::stream(
            daemon,
            request.into_inner(),
            slot,
        )?))
    }

    async fn do_enable_model(
        &self,
        request: Request<pb::EnableModelRequest>,
    ) -> Result<Response<pb::EnableModelResponse>, Status> {
        let model_id = request.into_inner().model_id;
        if model_id.is_empty() {
            return Err(status_of(DaemonError::bad(
                "model_id",
                "name the model to enable (placectl status lists the stopped ones)",
            )));
        }
        let live = self
            .daemon()?
            .enable_model(&model_id)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::EnableModelResponse {
            live: Some(convert::live(&live)),
        }))
    }

    async fn do_get_status(
        &self,
        _request: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        let s = self.daemon()?.status();
        Ok(Response::new(pb::GetStatusResponse {
            version: env!("CARGO_PKG_VERSION").into(),
            fingerprint: s.fingerprint,
            uptime: Some(convert::duration(s.uptime)),
            containers: s
                .counts
                .iter()
                .map(|&(state, n)| pb::StateCount {
                    state: convert::state(state) as i32,
                    count: u32::try_from(n).unwrap_or(u32::MAX),
                })
                .collect(),
            models: s
                .models
                .iter()
                .map(|m| pb::ModelInfo {
                    id: m.model.id().to_owned(),
                    vcpus: m.model.machine().v,
                    provenance: convert::provenance(m.model.provenance()) as i32,
                    path: m.path.display().to_string(),
                    trained_vcpus: Vec::new(),
                    across_classes: false,
                })
                .chain(s.across.iter().map(|m| pb::ModelInfo {
                    id: m.model.id().to_owned(),
                    vcpus: 0,
                    provenance: convert::provenance(m.model.provenance()) as i32,
                    path: m.path.display().to_string(),
                    trained_vcpus: m.model.sizes().to_vec(),
                    across_classes: false,
                }))
                .chain(s.classes.iter().map(|m| pb::ModelInfo {
                    id: m.model.id().to_owned(),
                    vcpus: 0,
                    provenance: convert::provenance(m.model.provenance()) as i32,
                    path: m.path.display().to_string(),
                    trained_vcpus: Vec::new(),
                    across_classes: true,
                }))
                .collect(),
            state_file: s.state_file,
            cgroup: s.cgroup,
            warnings: s.warnings,
            live: s.live.iter().map(convert::live).collect(),
        }))
    }
}

#[tonic::async_trait]
impl PlacedService for Api {
    type WatchStream = EventStream;

    async fn get_machine(
        &self,
        request: Request<pb::GetMachineRequest>,
    ) -> Result<Response<pb::GetMachineResponse>, Status> {
        self.counted(self.do_get_machine(request).await)
    }

    async fn list_placements(
        &self,
        request: Request<pb::ListPlacementsRequest>,
    ) -> Result<Response<pb::ListPlacementsResponse>, Status> {
        self.counted(self.do_list_placements(request).await)
    }

    async fn list_containers(
        &self,
        request: Request<pb::ListContainersRequest>,
    ) -> Result<Response<pb::ListContainersResponse>, Status> {
        self.counted(self.do_list_containers(request).await)
    }

    async fn get_container(
        &self,
        request: Request<pb::GetContainerRequest>,
    ) -> Result<Response<pb::GetContainerResponse>, Status> {
        self.counted(self.do_get_container(request).await)
    }

    async fn manage(
        &self,
        request: Request<pb::ManageRequest>,
    ) -> Result<Response<pb::ManageResponse>, Status> {
        self.counted(self.do_manage(request).await)
    }

    async fn unmanage(
        &self,
        request: Request<pb::UnmanageRequest>,
    ) -> Result<Response<pb::UnmanageResponse>, Status> {
        self.counted(self.do_unmanage(request).await)
    }

    async fn predict(
        &self,
        request: Request<pb::PredictRequest>,
    ) -> Result<Response<pb::PredictResponse>, Status> {
        self.counted(self.do_predict(request).await)
    }

    async fn recommend(
        &self,
        request: Request<pb::RecommendRequest>,
    ) -> Result<Response<pb::RecommendResponse>, Status> {
        self.counted(self.do_recommend(request).await)
    }

    async fn place(
        &self,
        request: Request<pb::PlaceRequest>,
    ) -> Result<Response<pb::PlaceResponse>, Status> {
        self.counted(self.do_place(request).await)
    }

    async fn report_metric(
        &self,
        request: Request<Streaming<pb::ReportMetricRequest>>,
    ) -> Result<Response<pb::ReportMetricResponse>, Status> {
        match self.do_report_metric(request).await {
            Ok(r) => Ok(r),
            Err(StreamEnd::Answer(status)) => self.counted(Err(status)),
            Err(StreamEnd::Client(status)) => Err(status),
        }
    }

    async fn watch(
        &self,
        request: Request<pb::WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        self.counted(self.do_watch(request).await)
    }

    async fn admit(
        &self,
        request: Request<pb::AdmitRequest>,
    ) -> Result<Response<pb::AdmitResponse>, Status> {
        self.counted(self.do_admit(request).await)
    }

    async fn admit_batch(
        &self,
        request: Request<pb::AdmitBatchRequest>,
    ) -> Result<Response<pb::AdmitBatchResponse>, Status> {
        self.counted(self.do_admit_batch(request).await)
    }

    async fn list_reservations(
        &self,
        request: Request<pb::ListReservationsRequest>,
    ) -> Result<Response<pb::ListReservationsResponse>, Status> {
        self.counted(self.do_list_reservations(request).await)
    }

    async fn release_reservation(
        &self,
        request: Request<pb::ReleaseReservationRequest>,
    ) -> Result<Response<pb::ReleaseReservationResponse>, Status> {
        self.counted(self.do_release_reservation(request).await)
    }

    async fn get_capacity(
        &self,
        request: Request<pb::GetCapacityRequest>,
    ) -> Result<Response<pb::GetCapacityResponse>, Status> {
        self.counted(self.do_get_capacity(request).await)
    }

    async fn get_status(
        &self,
        request: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        self.counted(self.do_get_status(request).await)
    }

    async fn enable_model(
        &self,
        request: Request<pb::EnableModelRequest>,
    ) -> Result<Response<pb::EnableModelResponse>, Status> {
        self.counted(self.do_enable_model(request).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_clipped_saying_how_long_they_were() {
        let st = status_for(Fault::InvalidInput, "x".repeat(100_000));
        assert_eq!(st.code(), tonic::Code::InvalidArgument);
        assert!(st.message().len() < 1100, "{}", st.message().len());
        assert!(st.message().ends_with("(100000 characters in all)"));
        let st = status_of(DaemonError::UnknownContainer {
            reference: "y".repeat(100_000),
        });
        assert_eq!(st.code(), tonic::Code::NotFound);
        assert!(st.message().len() < 600, "{}", st.message().len());
    }
}
