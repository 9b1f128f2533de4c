//! The plugin's side of the protocol: the calls the runtime makes, answered through the
//! [`Placer`] within the budget, failing open.
//!
//! A handler never returns an error to the runtime: containerd fails the pod's container
//! on a plugin's error, and drops the plugin on a timeout. Whatever goes wrong here (the
//! Placer errs, panics, is late, or returns an empty cpuset) is logged and answered "no
//! change".

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use protobuf::MessageField;
use tokio::sync::mpsc;
use ttrpc::r#async::TtrpcContext;

use placed_core::text::Chain;

use crate::answers;
use crate::api::nri as pb;
use crate::api::nri_ttrpc;
use crate::convert;
use crate::events::EventMask;
use crate::objects::{Container, Pod};
use crate::placer::{Placer, Update};
use crate::updater::Updater;

/// What the service tells the connection it runs on.
#[derive(Debug)]
pub(crate) enum Signal {
    Configured { runtime: String, version: String },
    Synchronized,
    Shutdown,
}

pub(crate) struct Service<P> {
    pub placer: Arc<P>,
    pub budget: Duration,
    pub events: EventMask,
    pub updater: Updater,
    pub signals: mpsc::UnboundedSender<Signal>,
}

/// Runs `work` in a task of its own and waits for it at most `budget`. A late result is
/// handed to `late` when it comes; a panic is logged. Either way the caller gets `None`
/// and answers without a change.
async fn within<T, W, L, F>(
    budget: Duration,
    call: &'static str,
    subject: &str,
    work: W,
    late: L,
) -> Option<T>
where
    T: Send + 'static,
    W: Future<Output = T> + Send + 'static,
    L: FnOnce(T) -> F + Send + 'static,
    F: Future<Output = ()> + Send,
{
    let mut task = tokio::spawn(work);
    match tokio::time::timeout(budget, &mut task).await {
        Ok(Ok(answer)) => Some(answer),
        Ok(Err(e)) => {
            tracing::error!(
                call,
                subject,
                "the placer failed: {e}; answered without a change"
            );
            None
        }
        Err(_) => {
            tracing::warn!(
                call,
                subject,
                "no decision within {budget:?}; answered without a change, the decision follows as an update"
            );
            tokio::spawn(async move {
                if let Ok(answer) = task.await {
                    late(answer).await;
                }
            });
            None
        }
    }
}

/// The pod and container a call is about; a runtime that left one out gets an answer
/// about an empty one (which the Placer leaves alone) rather than an error.
fn subjects(
    pod: &MessageField<pb::PodSandbox>,
    container: &MessageField<pb::Container>,
) -> (Pod, Container) {
    (
        pod.as_ref().map(convert::pod).unwrap_or_default(),
        container
            .as_ref()
            .map(convert::container)
            .unwrap_or_default(),
    )
}

/// Sends what a late call decided, once it has.
async fn send_late(updater: Updater, updates: Vec<Update>) {
    if updates.is_empty() {
        return;
    }
    match updater.update(&updates).await {
        Ok(()) => tracing::info!(
            count = updates.len(),
            "late placement decisions sent as updates"
        ),
        Err(e) => tracing::warn!(error = %Chain(&e), "late placement decisions could not be sent"),
    }
}

/// The cpuset a create or update call decided, if any, logging its error.
fn decided<E: std::error::Error + 'static>(
    call: &str,
    container: &str,
    answer: Option<Result<Option<placed_core::reconcile::Sets>, E>>,
) -> Option<placed_core::reconcile::Sets> {
    match answer? {
        Ok(sets) => sets,
        Err(e) => {
            tracing::warn!(call, container, error = %Chain(&e), "the placer failed; answered without a change");
            None
        }
    }
}

fn late_update<E: Send + 'static>(
    updater: Updater,
    id: String,
) -> impl FnOnce(
    Result<Option<placed_core::reconcile::Sets>, E>,
) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> {
    move |answer| {
        Box::pin(async move {
            if let Ok(Some(sets)) = answer {
                send_late(
                    updater,
                    vec![Update {
                        container_id: id,
                        sets,
                    }],
                )
                .await;
            }
        })
    }
}

#[async_trait]
impl<P: Placer> nri_ttrpc::Plugin for Service<P> {
    async fn configure(
        &self,
        _: &TtrpcContext,
        req: pb::ConfigureRequest,
    ) -> ttrpc::Result<pb::ConfigureResponse> {
        tracing::info!(
            runtime = req.runtime_name,
            version = req.runtime_version,
            events = %self.events,
            "NRI runtime configures placed"
        );
        let _ = self.signals.send(Signal::Configured {
            runtime: req.runtime_name,
            version: req.runtime_version,
        });
        Ok(pb::ConfigureResponse {
            // Config::validate refused an empty mask; were it empty anyway, 0 would
            // subscribe to everything, which placed answers harmlessly.
            events: self.events.wire().unwrap_or(0),
            ..Default::default()
        })
    }

    async fn synchronize(
        &self,
        _: &TtrpcContext,
        req: pb::SynchronizeRequest,
    ) -> ttrpc::Result<pb::SynchronizeResponse> {
        let pods: Vec<_> = req.pods.iter().map(convert::pod).collect();
        let containers: Vec<_> = req.containers.iter().map(convert::container).collect();
        tracing::info!(
            pods = pods.len(),
            containers = containers.len(),
            "NRI synchronize"
        );
        let placer = self.placer.clone();
        let updater = self.updater.clone();
        let updates = within(
            self.budget,
            "Synchronize",
            "",
            async move { placer.synchronize(pods, containers).await },
            move |late| send_late(updater, late),
        )
        .await
        .unwrap_or_default();
        let update = updates
            .iter()
            .filter_map(|u| match answers::update(&u.container_id, &u.sets) {
                Ok(u) => Some(u),
                Err(e) => {
                    tracing::error!(error = %e, "synchronize: update left out");
                    None
                }
            })
            .collect();
        let _ = self.signals.send(Signal::Synchronized);
        Ok(pb::SynchronizeResponse {
            update,
            ..Default::default()
        })
    }

    async fn shutdown(&self, _: &TtrpcContext, _: pb::Empty) -> ttrpc::Result<pb::Empty> {
        tracing::info!("the NRI runtime is shutting down");
        let _ = self.signals.send(Signal::Shutdown);
        Ok(pb::Empty::default())
    }

    async fn create_container(
        &self,
        _: &TtrpcContext,
        req: pb::CreateContainerRequest,
    ) -> ttrpc::Result<pb::CreateContainerResponse> {
        let (pod, container) = subjects(&req.pod, &req.container);
        let id = container.id.clone();
        let placer = self.placer.clone();
        let answer = within(
            self.budget,
            "CreateContainer",
            &id,
            async move { placer.create_container(pod, container).await },
            late_update(self.updater.clone(), id.clone()),
        )
        .await;
        let mut reply = pb::CreateContainerResponse::default();
        if let Some(sets) = decided("CreateContainer", &id, answer) {
            match answers::adjustment(&id, &sets) {
                Ok(adjust) => {
                    tracing::info!(container = id, %sets, "created pinned");
                    reply.adjust = MessageField::some(adjust);
                }
                Err(e) => tracing::error!(error = %e, "created without a change"),
            }
        }
        Ok(reply)
    }

    async fn update_container(
        &self,
        _: &TtrpcContext,
        req: pb::UpdateContainerRequest,
    ) -> ttrpc::Result<pb::UpdateContainerResponse> {
        let (pod, container) = subjects(&req.pod, &req.container);
        let id = container.id.clone();
        let requested = req
            .linux_resources
            .as_ref()
            .map(|r| convert::resources(r, &id))
            .unwrap_or_default();
        let placer = self.placer.clone();
        let asked = requested.clone();
        let answer = within(
            self.budget,
            "UpdateContainer",
            &id,
            async move { placer.update_container(pod, container, asked).await },
            late_update(self.updater.clone(), id.clone()),
        )
        .await;
        let mut reply = pb::UpdateContainerResponse::default();
        if let Some(keep) = decided("UpdateContainer", &id, answer) {
            match answers::hold(&id, &requested, &keep) {
                Ok(Some(hold)) => {
                    tracing::info!(container = id, %keep, "update held to placed's cpuset");
                    reply.update.push(hold);
                }
                Ok(None) => {}
                Err(e) => tracing::error!(error = %e, "update let through"),
            }
        }
        Ok(reply)
    }

    async fn stop_container(
        &self,
        _: &TtrpcContext,
        req: pb::StopContainerRequest,
    ) -> ttrpc::Result<pb::StopContainerResponse> {
        let (pod, container) = subjects(&req.pod, &req.container);
        let id = container.id.clone();
        let placer = self.placer.clone();
        within(
            self.budget,
            "StopContainer",
            &id,
            async move { placer.stop_container(pod, container).await },
            |()| async {},
        )
        .await;
        Ok(pb::StopContainerResponse::default())
    }

    async fn state_change(
        &self,
        _: &TtrpcContext,
        req: pb::StateChangeEvent,
    ) -> ttrpc::Result<pb::Empty> {
        let Some(change) = convert::state_change(&req) else {
            tracing::debug!(event = req.event.value(), "unknown NRI event, ignored");
            return Ok(pb::Empty::default());
        };
        let subject = change
            .container
            .as_ref()
            .map_or_else(|| change.pod.id.clone(), |c| c.id.clone());
        let placer = self.placer.clone();
        within(
            self.budget,
            change.event.name(),
            &subject,
            async move { placer.state_change(change).await },
            |()| async {},
        )
        .await;
        Ok(pb::Empty::default())
    }
}
