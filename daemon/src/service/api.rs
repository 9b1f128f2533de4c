//! The placed.v1 handlers: each converts its request into a daemon command and the
//! result back, and every error into the one status code its class uses.

use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use placed_core::fault::Fault;
use placed_proto::v1 as pb;
use placed_proto::v1::placed_server::Placed;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};

use crate::lifecycle::{
    ContainerView, Daemon, DaemonError, Event, EventKind, ManageRequest, PlaceTarget,
};
use crate::state::{Lifecycle, PredictionRecord};
use placed_host::migrate::Mode;
use placed_host::observe::SourceSpec;

use super::convert;

/// The service; answers UNAVAILABLE until the daemon has restored its state.
#[derive(Debug, Clone, Default)]
pub struct Api {
    daemon: Arc<OnceLock<Daemon>>,
}

impl Api {
    /// Called once the daemon has started.
    pub fn ready(&self, daemon: Daemon) {
        let _ = self.daemon.set(daemon);
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

    fn daemon(&self) -> Result<&Daemon, Status> {
        self.daemon
            .get()
            .ok_or_else(|| Status::unavailable("placed is starting: restoring its state"))
    }
}

/// The one place daemon errors become gRPC codes: from who has to act ([`Fault`]), with
/// the error and its causes on one line as the message.
pub fn status_of(e: DaemonError) -> Status {
    status_for(e.fault(), e.line())
}

/// The gRPC status of an error of this fault.
pub fn status_for(fault: Fault, message: String) -> Status {
    match fault {
        Fault::InvalidInput => Status::invalid_argument(message),
        Fault::NotFound => Status::not_found(message),
        Fault::HostConfig => Status::failed_precondition(message),
        Fault::Transient => Status::unavailable(message),
        Fault::Conflict => Status::aborted(message),
        Fault::Internal => Status::internal(message),
    }
}

fn container_pb(v: &ContainerView) -> pb::Container {
    let r = &v.record;
    let (placement_id, cpus, mems, units) = match &r.assigned {
        Some(a) => (
            a.placement.clone().unwrap_or_default(),
            a.cpus.to_string(),
            a.mems.to_string(),
            a.units
                .iter()
                .map(|&u| u32::try_from(u).unwrap_or(u32::MAX))
                .collect(),
        ),
        None => (String::new(), String::new(), String::new(), Vec::new()),
    };
    let detail = match &v.doing {
        Some(d) if r.detail.is_empty() => d.clone(),
        Some(d) => format!("{d}; {}", r.detail),
        None => r.detail.clone(),
    };
    pb::Container {
        id: r.id.clone(),
        name: r.name.clone(),
        runtime: r.runtime.clone(),
        cgroup: r.id.clone(),
        vcpus: u32::try_from(r.vcpus).unwrap_or(u32::MAX),
        vcpus_source: format!("{:?}", r.vcpus_source).to_lowercase(),
        policy: Some(placed_proto::convert::policy_to_pb(&r.policy)),
        state: convert::state(r.state) as i32,
        detail,
        placement_id,
        cpus,
        mems,
        units,
        model_id: r
            .prediction
            .as_ref()
            .map(|p| p.model_id.clone())
            .unwrap_or_default(),
        updated_unix_ms: r.updated_unix_ms,
    }
}

fn provenance(p: placed_models::Provenance) -> pb::Provenance {
    match p {
        placed_models::Provenance::Real => pb::Provenance::Real,
        placed_models::Provenance::VirtualMachine => pb::Provenance::VirtualMachine,
        placed_models::Provenance::Simulated => pb::Provenance::Simulated,
    }
}

fn prediction_pb(container: &str, p: &PredictionRecord) -> pb::Prediction {
    pb::Prediction {
        container: container.to_owned(),
        model_id: p.model_id.clone(),
        provenance: provenance(p.provenance) as i32,
        baseline_id: p.baseline.clone(),
        probe_id: p.probe.clone(),
        observations: p
            .observations
            .iter()
            .map(|o| pb::Observation {
                placement_id: o.placement.clone(),
                value: o.value,
                low: o.low,
                high: o.high,
                unit: o.source.clone(),
                windows: u32::try_from(o.windows).unwrap_or(u32::MAX),
                dropped_windows: u32::try_from(o.dropped).unwrap_or(u32::MAX),
            })
            .collect(),
        placements: p
            .placements
            .iter()
            .map(|x| pb::PredictedPlacement {
                placement_id: x.placement.clone(),
                relative: x.relative,
                spread: x.spread,
            })
            .collect(),
        warnings: p.warnings.clone(),
        vcpus: u32::try_from(p.vcpus).unwrap_or(u32::MAX),
    }
}

fn event_pb(e: &Event) -> pb::Event {
    pb::Event {
        unix_ms: e.unix_ms,
        container: e.container.clone(),
        kind: match e.kind {
            EventKind::Discovered => pb::EventKind::Discovered,
            EventKind::State => pb::EventKind::State,
            EventKind::Predicted => pb::EventKind::Predicted,
            EventKind::MigrationStarted => pb::EventKind::MigrationStarted,
            EventKind::MigrationFinished => pb::EventKind::MigrationFinished,
            EventKind::Vanished => pb::EventKind::Vanished,
            EventKind::Error => pb::EventKind::Error,
        } as i32,
        state: convert::state(e.state) as i32,
        placement_id: e.placement.clone().unwrap_or_default(),
        message: e.message.clone(),
    }
}

fn metric_spec(m: &pb::MetricSpec) -> Result<Option<SourceSpec>, Status> {
    use pb::metric_spec::Source;
    Ok(match &m.source {
        None => None,
        Some(Source::PushedUnit(_)) => Some(SourceSpec::Pushed { counter: false }),
        Some(Source::Prometheus(p)) => {
            if p.url.is_empty() || p.selector.is_empty() {
                return Err(Status::invalid_argument(
                    "a Prometheus metric needs a url and a selector",
                ));
            }
            Some(SourceSpec::Prometheus {
                url: p.url.clone(),
                selector: p.selector.clone(),
            })
        }
        Some(Source::Command(c)) => {
            let argv: Vec<String> = c.split_whitespace().map(String::from).collect();
            if argv.is_empty() {
                return Err(Status::invalid_argument("the metric command is empty"));
            }
            Some(SourceSpec::Command {
                argv,
                counter: false,
            })
        }
        Some(Source::Perf(p)) => match p.as_str() {
            "instructions" | "" => Some(SourceSpec::Perf { ipc: false }),
            "ipc" => Some(SourceSpec::Perf { ipc: true }),
            other => {
                return Err(Status::invalid_argument(format!(
                    "perf metric {other:?}: expected instructions or ipc"
                )));
            }
        },
    })
}

fn mode_of(daemon: &Daemon, m: i32) -> Result<Option<Mode>, Status> {
    match pb::MigrationMode::try_from(m) {
        Ok(pb::MigrationMode::Unspecified) => Ok(None),
        Ok(pb::MigrationMode::Kernel) => Ok(Some(Mode::Kernel)),
        Ok(pb::MigrationMode::Fast) => Ok(Some(Mode::fast())),
        Ok(pb::MigrationMode::Throttled) => Ok(Some(daemon.throttled_mode())),
        Err(_) => Err(Status::invalid_argument(format!(
            "unknown migration mode {m}"
        ))),
    }
}

fn need_container(c: &str) -> Result<(), Status> {
    if c.is_empty() {
        Err(Status::invalid_argument("the request names no container"))
    } else {
        Ok(())
    }
}

type EventStream = Pin<Box<dyn Stream<Item = Result<pb::Event, Status>> + Send + 'static>>;

/// The handlers; the [`Placed`] implementation below counts their failures.
impl Api {
    async fn do_get_machine(
        &self,
        _request: Request<pb::GetMachineRequest>,
    ) -> Result<Response<pb::Machine>, Status> {
        Ok(Response::new(placed_proto::convert::machine(
            self.daemon()?.machine(),
        )))
    }

    async fn do_list_placements(
        &self,
        request: Request<pb::ListPlacementsRequest>,
    ) -> Result<Response<pb::ListPlacementsResponse>, Status> {
        let v = request.into_inner().vcpus;
        if v == 0 {
            return Err(Status::invalid_argument("vcpus must be at least 1"));
        }
        let set = self.daemon()?.placements(v as usize).map_err(status_of)?;
        Ok(Response::new(placed_proto::convert::placements(&set)))
    }

    async fn do_list_containers(
        &self,
        _request: Request<pb::ListContainersRequest>,
    ) -> Result<Response<pb::ListContainersResponse>, Status> {
        Ok(Response::new(pb::ListContainersResponse {
            containers: self
                .daemon()?
                .containers()
                .iter()
                .map(container_pb)
                .collect(),
        }))
    }

    async fn do_get_container(
        &self,
        request: Request<pb::GetContainerRequest>,
    ) -> Result<Response<pb::Container>, Status> {
        let c = request.into_inner().container;
        need_container(&c)?;
        let view = self.daemon()?.container(&c).map_err(status_of)?;
        Ok(Response::new(container_pb(&view)))
    }

    async fn do_manage(
        &self,
        request: Request<pb::ManageRequest>,
    ) -> Result<Response<pb::Container>, Status> {
        let r = request.into_inner();
        need_container(&r.container)?;
        let daemon = self.daemon()?;
        let goal = daemon_goal(daemon);
        let policy = placed_proto::convert::policy_from_pb(r.policy.as_ref(), goal)
            .map_err(Status::invalid_argument)?;
        let metric = match &r.metric {
            Some(m) => metric_spec(m)?,
            None => None,
        };
        let view = daemon
            .manage(ManageRequest {
                container: r.container,
                vcpus: (r.vcpus > 0).then_some(r.vcpus as usize),
                policy,
                metric,
            })
            .await
            .map_err(status_of)?;
        Ok(Response::new(container_pb(&view)))
    }

    async fn do_predict(
        &self,
        request: Request<pb::PredictRequest>,
    ) -> Result<Response<pb::Prediction>, Status> {
        let c = request.into_inner().container;
        need_container(&c)?;
        let daemon = self.daemon()?;
        let p = daemon.predict(&c).await.map_err(status_of)?;
        let name = daemon.container(&c).map(|v| v.record.name).unwrap_or(c);
        Ok(Response::new(prediction_pb(&name, &p)))
    }

    async fn do_recommend(
        &self,
        request: Request<pb::RecommendRequest>,
    ) -> Result<Response<pb::Recommendation>, Status> {
        let r = request.into_inner();
        need_container(&r.container)?;
        let daemon = self.daemon()?;
        let policy = placed_proto::convert::policy_from_pb(r.policy.as_ref(), daemon_goal(daemon))
            .map_err(Status::invalid_argument)?;
        let rec = daemon
            .recommend(&r.container, policy)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::Recommendation {
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
        let target = if !r.placement_id.is_empty() {
            if r.policy.is_some() {
                return Err(Status::invalid_argument(
                    "give either a placement_id or a policy, not both",
                ));
            }
            PlaceTarget::Policy(placed_core::policy::Policy::Pinned {
                placement: r.placement_id,
            })
        } else {
            match placed_proto::convert::policy_from_pb(r.policy.as_ref(), daemon_goal(daemon))
                .map_err(Status::invalid_argument)?
            {
                Some(p) => PlaceTarget::Policy(p),
                None => PlaceTarget::OwnPolicy,
            }
        };
        let out = daemon
            .place(&r.container, target, mode)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::PlaceResponse {
            container: out.container,
            placement_id: out.placement.unwrap_or_default(),
            cpus: out.cpus.to_string(),
            mems: out.mems.to_string(),
            moved: out.moved,
            bytes_moved: out.bytes_moved,
            duration_ms: u64::try_from(out.duration.as_millis()).unwrap_or(u64::MAX),
            reason: out.reason,
        }))
    }

    async fn do_report_metric(
        &self,
        request: Request<Streaming<pb::MetricSample>>,
    ) -> Result<Response<pb::ReportMetricResponse>, Status> {
        let daemon = self.daemon()?.clone();
        let mut stream = request.into_inner();
        let mut accepted = 0u64;
        let mut rejected = 0u64;
        let mut last_error = String::new();
        loop {
            match stream.next().await {
                None => break,
                Some(Ok(sample)) => match daemon.report(&sample.container, sample.value) {
                    Ok(()) => accepted += 1,
                    // A container placed does not manage: the stream is aimed at the wrong
                    // daemon or an old name, and every sample would be lost, so it fails
                    // as a whole instead of counting rejections.
                    Err(e) if e.fault() == Fault::NotFound => {
                        return Err(Status::not_found(format!(
                            "{} ({accepted} earlier samples of this stream were accepted)",
                            e.line()
                        )));
                    }
                    // One bad sample (NaN, a container not taking pushed metrics) is
                    // rejected alone: the stream goes on.
                    Err(e) => {
                        rejected += 1;
                        last_error = e.line();
                    }
                },
                // The client went away mid-stream: what arrived counts, nothing is waiting
                // for an answer.
                Some(Err(status)) => {
                    tracing::debug!(%status, accepted, "metric stream ended by the client");
                    return Err(status);
                }
            }
        }
        Ok(Response::new(pb::ReportMetricResponse {
            accepted,
            rejected,
            last_error,
        }))
    }

    async fn do_watch(
        &self,
        request: Request<pb::WatchRequest>,
    ) -> Result<Response<EventStream>, Status> {
        let daemon = self.daemon()?.clone();
        let filter = request.into_inner().container;
        let filter_id = if filter.is_empty() {
            None
        } else {
            Some(daemon.container(&filter).map_err(status_of)?.record.id)
        };
        let rx = daemon.subscribe();
        let stream =
            tokio_stream::wrappers::BroadcastStream::new(rx).filter_map(move |item| match item {
                Ok(e) => {
                    if filter_id.as_ref().is_none_or(|id| *id == e.container) {
                        Some(Ok(event_pb(&e)))
                    } else {
                        None
                    }
                }
                Err(tokio_stream::wrappers::errors::BroadcastStreamRecvError::Lagged(n)) => {
                    Some(Ok(pb::Event {
                        unix_ms: crate::lifecycle::events::now_ms(),
                        container: String::new(),
                        kind: pb::EventKind::Error as i32,
                        state: convert::state(Lifecycle::Discovered) as i32,
                        placement_id: String::new(),
                        message: format!("this watcher fell behind: {n} events were dropped"),
                    }))
                }
            });
        Ok(Response::new(Box::pin(stream)))
    }

    async fn do_get_status(
        &self,
        _request: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::Status>, Status> {
        let s = self.daemon()?.status();
        Ok(Response::new(pb::Status {
            version: env!("CARGO_PKG_VERSION").into(),
            fingerprint: s.fingerprint,
            uptime_s: s.uptime.as_secs(),
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
                    provenance: provenance(m.model.provenance()) as i32,
                    path: m.path.display().to_string(),
                })
                .collect(),
            state_file: s.state_file,
            cgroup: s.cgroup,
            warnings: s.warnings,
        }))
    }
}

#[tonic::async_trait]
impl Placed for Api {
    type WatchStream = EventStream;

    async fn get_machine(
        &self,
        request: Request<pb::GetMachineRequest>,
    ) -> Result<Response<pb::Machine>, Status> {
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
    ) -> Result<Response<pb::Container>, Status> {
        self.counted(self.do_get_container(request).await)
    }

    async fn manage(
        &self,
        request: Request<pb::ManageRequest>,
    ) -> Result<Response<pb::Container>, Status> {
        self.counted(self.do_manage(request).await)
    }

    async fn predict(
        &self,
        request: Request<pb::PredictRequest>,
    ) -> Result<Response<pb::Prediction>, Status> {
        self.counted(self.do_predict(request).await)
    }

    async fn recommend(
        &self,
        request: Request<pb::RecommendRequest>,
    ) -> Result<Response<pb::Recommendation>, Status> {
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
        request: Request<Streaming<pb::MetricSample>>,
    ) -> Result<Response<pb::ReportMetricResponse>, Status> {
        self.counted(self.do_report_metric(request).await)
    }

    async fn watch(
        &self,
        request: Request<pb::WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        self.counted(self.do_watch(request).await)
    }

    async fn get_status(
        &self,
        request: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::Status>, Status> {
        self.counted(self.do_get_status(request).await)
    }
}

fn daemon_goal(d: &Daemon) -> f64 {
    d.config_goal()
}
